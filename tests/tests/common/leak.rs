//! The leak check: every frame a client received is checked against the server's true
//! state (the test knows the layout). No frame may name an identity its receiver had not
//! been shown: hidden squares show their apparent role; a captured hidden piece's identity
//! reaches only its capturer (and is the true one); the shuffle appears only once the game
//! is over, and neither the layout nor the salt appears in any frame before that.

use anyhow::{Context as _, ensure};
use frontier_rules::{Color, Role, Setup, Square, hidden_start_squares, start_role};
use serde_json::Value;

/// The true role at `sq` in a canonical layout string.
pub fn true_role(layout: &str, sq: Square) -> Option<Role> {
    let (white, black) = layout.split_once('/')?;
    for (color, part) in [(Color::White, white), (Color::Black, black)] {
        if let Some(i) = hidden_start_squares(color).iter().position(|&s| s == sq) {
            return part.chars().nth(i).and_then(Role::from_char);
        }
    }
    None
}

fn role_named(name: &str) -> Option<Role> {
    Role::ALL.into_iter().find(|r| r.name() == name)
}

/// Hidden squares of a view FEN must show the role that starts there, in its colour.
fn check_view_fen(fen: &str) -> anyhow::Result<()> {
    let setup = Setup::parse(fen, true).with_context(|| format!("view FEN `{fen}`"))?;
    for sq in setup.hidden {
        let piece = setup
            .board
            .piece_at(sq)
            .context("hidden square is occupied")?;
        ensure!(
            Some(piece.role) == start_role(sq),
            "view FEN `{fen}` shows {sq} as a {}, not its apparent role",
            piece.role.name()
        );
        let expected_color = if sq.rank().index() < 2 {
            Color::White
        } else {
            Color::Black
        };
        ensure!(
            piece.color == expected_color,
            "hidden {sq} has the wrong colour in `{fen}`"
        );
    }
    Ok(())
}

/// Checks one client's frames of hidden games all played with `layout`.
pub fn check_client(frames: &[Value], layout: &str) -> anyhow::Result<usize> {
    check_client_with(frames, &|_| Some(layout.to_owned()))
}

/// Checks one client's frames; `layout_of` gives each hidden game's true layout.
pub fn check_client_with(
    frames: &[Value],
    layout_of: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<usize> {
    let mut seat: std::collections::HashMap<String, String> = Default::default();
    let mut ended: std::collections::HashMap<String, usize> = Default::default();
    let mut salts: Vec<(String, String)> = Vec::new();
    let mut checked = 0;
    for (i, frame) in frames.iter().enumerate() {
        let raw = frame.to_string();
        let ty = frame["type"].as_str().unwrap_or_default();
        let game = frame["game_id"].as_str().unwrap_or_default().to_owned();
        let layout_string = layout_of(&game).unwrap_or_default();
        let layout = layout_string.as_str();
        match ty {
            "board_created" | "board_joined" => {
                seat.insert(
                    game.clone(),
                    frame["color"].as_str().unwrap_or_default().to_owned(),
                );
            }
            "game" => {
                let s = frame["seat"].as_str().unwrap_or_default().to_owned();
                seat.insert(game.clone(), s.clone());
                let g = &frame["game"];
                if g["variant"] != "hidden" {
                    continue;
                }
                ensure!(!layout.is_empty(), "no known layout for hidden game {game}");
                checked += 1;
                check_view_fen(g["fen"].as_str().context("fen")?)?;
                let ids = g["captured_identities"]
                    .as_array()
                    .context("captured_identities")?;
                if s == "spectator" {
                    ensure!(
                        ids.is_empty(),
                        "a spectator view lists captured identities: {raw}"
                    );
                }
                for id in ids {
                    let sq = Square::parse(id["square"].as_str().unwrap_or_default())
                        .context("square")?;
                    ensure!(
                        role_named(id["role"].as_str().unwrap_or_default())
                            == true_role(layout, sq),
                        "a captured identity is not the true one: {raw}"
                    );
                    let opponent = if s == "white" {
                        Color::Black
                    } else {
                        Color::White
                    };
                    ensure!(
                        hidden_start_squares(opponent).contains(&sq),
                        "{s} lists an identity on {sq}, not an opponent's start square: {raw}"
                    );
                }
                let finished = g["status"] == "finished";
                ensure!(
                    g["shuffle"].is_null() || finished,
                    "shuffle before the end: {raw}"
                );
                if finished {
                    ended.entry(game.clone()).or_insert(i);
                    if let Some(salt) = g["shuffle"]["salt"].as_str() {
                        salts.push((game.clone(), salt.to_owned()));
                    }
                } else {
                    ensure!(
                        !raw.contains(layout),
                        "the layout appears before the end: {raw}"
                    );
                }
            }
            "event" => {
                let e = &frame["event"];
                let receiver = seat.get(&game).cloned().unwrap_or_default();
                if let Some(fen) = e["fen"].as_str() {
                    checked += 1;
                    check_view_fen(fen)?;
                }
                if let Some(identity) = e["captured_identity"].as_str() {
                    ensure!(
                        e["color"].as_str() == Some(receiver.as_str()),
                        "{receiver} received the identity of a piece {} captured: {raw}",
                        e["color"]
                    );
                    ensure!(
                        e["captured"]["hidden"] == true,
                        "identity of a revealed piece: {raw}"
                    );
                    let sq = Square::parse(e["captured"]["square"].as_str().unwrap_or_default())
                        .context("square")?;
                    ensure!(
                        role_named(identity) == true_role(layout, sq),
                        "the identity told is not the true one: {raw}"
                    );
                }
                let over = !frame["outcome"].is_null();
                ensure!(
                    frame["shuffle"].is_null() || over,
                    "shuffle before the end: {raw}"
                );
                if over {
                    ended.entry(game.clone()).or_insert(i);
                    if let Some(salt) = frame["shuffle"]["salt"].as_str() {
                        salts.push((game.clone(), salt.to_owned()));
                    }
                } else {
                    ensure!(
                        !raw.contains(layout),
                        "the layout appears before the end: {raw}"
                    );
                }
            }
            "error" => {
                ensure!(!raw.contains(layout), "an error names the layout: {raw}");
            }
            _ => {}
        }
    }
    // No frame before a game's end carried its salt.
    for (game, salt) in &salts {
        let end = ended.get(game).copied().unwrap_or(usize::MAX);
        for frame in &frames[..end.min(frames.len())] {
            ensure!(
                !frame.to_string().contains(salt.as_str()),
                "the salt of {game} appeared before its end"
            );
        }
    }
    Ok(checked)
}
