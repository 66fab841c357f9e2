//! A finished game as PGN: the seven-tag roster, `WhiteType`/`BlackType` `program` for a
//! computer player, `GameId`, `Variant`, `TimeControl`,
//! `Termination`, the start FEN when it is not the usual one, and for hidden chess
//! `Layout`, `Salt` and `Commitment`; moves in SAN (a hidden piece as the piece it looked
//! like) with comments for reveals and captured identities.

use frontier_proto::games::v1::FinishedGame;
use frontier_rules::{Color, Game, Layout, Position, Shuffle, Variant};
use time::OffsetDateTime;

use frontier_platform::convert::variant_from_proto;

use crate::model::at;

fn tag(out: &mut String, name: &str, value: &str) {
    let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
    out.push_str(&format!("[{name} \"{escaped}\"]\n"));
}

/// Renders a record; an error says why it does not replay (a corrupt record).
pub fn render(r: &FinishedGame) -> Result<String, String> {
    let variant = variant_from_proto(r.variant).ok_or("unknown variant")?;
    let mut game = match variant {
        Variant::Hidden => {
            let layout = Layout::from_canonical(&r.initial_layout).map_err(|e| e.to_string())?;
            let mut salt = [0u8; 32];
            hex::decode_to_slice(&r.salt, &mut salt).map_err(|e| e.to_string())?;
            Game::new_hidden(Shuffle::new(layout, salt))
        }
        v => Game::from_position(Position::from_fen(v, &r.start_fen).map_err(|e| e.to_string())?),
    };
    let result = match r.result.as_str() {
        "white" => "1-0",
        "black" => "0-1",
        "draw" => "1/2-1/2",
        _ => "*",
    };
    let ended: OffsetDateTime = at(r.ended_at_ms);
    let name = |p: &Option<frontier_proto::games::v1::Player>| {
        p.as_ref()
            .map_or_else(|| "?".to_owned(), |p| p.name.clone())
    };
    let mut out = String::new();
    tag(
        &mut out,
        "Event",
        if r.rated { "Rated game" } else { "Casual game" },
    );
    tag(&mut out, "Site", "Frontier");
    tag(
        &mut out,
        "Date",
        &format!(
            "{:04}.{:02}.{:02}",
            ended.year(),
            u8::from(ended.month()),
            ended.day()
        ),
    );
    tag(&mut out, "Round", "-");
    tag(&mut out, "White", &name(&r.white));
    tag(&mut out, "Black", &name(&r.black));
    tag(&mut out, "Result", result);
    // A computer player is labelled as one (PGN's player-type tags).
    for (name, player) in [("WhiteType", &r.white), ("BlackType", &r.black)] {
        if player.as_ref().is_some_and(|p| p.bot) {
            tag(&mut out, name, "program");
        }
    }
    tag(&mut out, "GameId", &r.game_id);
    tag(
        &mut out,
        "Variant",
        match variant {
            Variant::Standard => "Standard",
            Variant::Hidden => "Hidden",
            Variant::Atomic => "Atomic",
        },
    );
    // Whole minutes, as the record's clock is shown.
    let tc = match r.time_control {
        Some(c) => format!("{}+{}", c.initial_seconds / 60 * 60, c.increment_seconds),
        None => "-".to_owned(),
    };
    tag(&mut out, "TimeControl", &tc);
    tag(&mut out, "Termination", &r.outcome);
    if variant != Variant::Hidden && r.start_fen != Position::new(variant).fen() {
        tag(&mut out, "SetUp", "1");
        tag(&mut out, "FEN", &r.start_fen);
    }
    if variant == Variant::Hidden {
        tag(&mut out, "Layout", &r.initial_layout);
        tag(&mut out, "Salt", &r.salt);
        tag(&mut out, "Commitment", &r.commitment);
    }
    out.push('\n');
    let mut movetext = Vec::new();
    for (i, m) in r.moves.iter().enumerate() {
        let before = *game.position();
        let mv = before
            .parse_uci(&m.uci)
            .map_err(|e| format!("move {}: {e}", i + 1))?;
        let san = frontier_rules::san(&before, &mv);
        game.play(&mv).map_err(|e| format!("move {}: {e}", i + 1))?;
        let suffix = frontier_rules::san_suffix(game.position());
        if before.turn() == Color::White {
            movetext.push(format!("{}.", before.fullmoves()));
        } else if i == 0 {
            movetext.push(format!("{}...", before.fullmoves()));
        }
        movetext.push(format!("{san}{suffix}"));
        let mut notes = Vec::new();
        if !m.reveal_role.is_empty() {
            let square = if m.reveal_square.is_empty() {
                "?"
            } else {
                &m.reveal_square
            };
            notes.push(format!("reveals {} on {square}", m.reveal_role));
        }
        if !m.captured_identity.is_empty() {
            notes.push(format!("captured a hidden {}", m.captured_identity));
        }
        if !notes.is_empty() {
            movetext.push(format!("{{{}}}", notes.join("; ")));
        }
    }
    movetext.push(result.to_owned());
    // Lines of at most 80 characters.
    let mut line = String::new();
    for token in movetext {
        if !line.is_empty() && line.len() + 1 + token.len() > 80 {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&token);
    }
    out.push_str(&line);
    out.push('\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use frontier_proto::games::v1::{MoveRecord, Player, Variant as PbVariant};

    use super::*;

    fn player(name: &str, bot: bool) -> Option<Player> {
        Some(Player {
            id: uuid::Uuid::now_v7().to_string(),
            name: name.to_owned(),
            guest: false,
            bot,
            bot_level: 0,
        })
    }

    #[test]
    fn a_computer_player_is_labelled_a_program() {
        let mut record = FinishedGame {
            game_id: uuid::Uuid::now_v7().to_string(),
            variant: PbVariant::Standard as i32,
            white: player("ann", false),
            black: player("Frontier Bot · Easy", true),
            result: "white".into(),
            outcome: "white-resignation".into(),
            moves: vec![MoveRecord {
                ply: 1,
                uci: "e2e4".into(),
                ..Default::default()
            }],
            start_fen: Position::new(Variant::Standard).fen(),
            ..Default::default()
        };
        let pgn = render(&record).expect("renders");
        assert!(pgn.contains("[Black \"Frontier Bot · Easy\"]"), "{pgn}");
        assert!(pgn.contains("[BlackType \"program\"]"), "{pgn}");
        assert!(!pgn.contains("WhiteType"), "{pgn}");
        record.black = player("bob", false);
        assert!(!render(&record).expect("renders").contains("Type"));
    }
}
