//! Games against the computer through the gateways, on the real services (two gateways,
//! two game-sessions, rating), with the test acting as the bot (`common::bots`: it reads the
//! bot-job work queue and plays from each job alone): `play_computer`, the bot's moves,
//! `undo` seen by the player and by spectators, every refusal typed; and the fairness
//! check — no bot job of 200 random hidden games carries anything its seat may not know.

mod common;

use std::collections::HashMap;

use anyhow::Context as _;
use common::bots::{BotDriver, Rng, as_game_frame};
use common::{Client, Platform, leak, start_game};
use frontier_rules::{Position, Variant};
use serde_json::{Value, json};

/// Sends `play_computer`; returns the game id and the person's colour (from
/// `game_created`, which answers the request's id).
async fn play_computer(
    c: &mut Client,
    id: &str,
    variant: &str,
    level: &str,
    color: &str,
) -> anyhow::Result<(String, String)> {
    c.send(json!({"type": "play_computer", "id": id, "variant": variant, "level": level, "color": color}))
        .await?;
    let created = c
        .until("game_created", |v| {
            v["type"] == "game_created" || v["type"] == "error"
        })
        .await?;
    anyhow::ensure!(created["type"] == "game_created", "{created}");
    anyhow::ensure!(created["id"] == id, "{created}");
    Ok((
        created["game_id"].as_str().context("game_id")?.to_owned(),
        created["color"].as_str().context("color")?.to_owned(),
    ))
}

/// The error answering `id`, after sending `message`.
async fn refused(c: &mut Client, id: &str, message: Value) -> anyhow::Result<String> {
    c.send(message).await?;
    let e = c.error_for(id).await?;
    Ok(e["code"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_plays_the_computer_and_takes_a_move_back() -> anyhow::Result<()> {
    let p = Platform::start(2, 2, None).await?;
    let bot = BotDriver::start(&p, 7).await?;
    let mut me = Client::guest(p.gateways[0], "me").await?;
    let (game, color) = play_computer(&mut me, "pc", "standard", "easy", "white").await?;
    assert_eq!(color, "white");
    // The game opens as after joining: its view, started, with a labelled bot.
    let view = me.until("view", |v| v["type"] == "game").await?;
    assert_eq!(view["game_id"], game.as_str());
    assert_eq!(view["seat"], "white");
    assert_eq!(view["game"]["status"], "playing");
    assert_eq!(view["game"]["rated"], false);
    assert_eq!(view["game"]["black"]["bot"], true);
    assert_eq!(view["game"]["black"]["name"], "Frontier Bot · Easy");
    assert_eq!(view["game"]["white"]["bot"], false);
    let start_fen = view["game"]["fen"].as_str().context("fen")?.to_owned();
    // A spectator on the other gateway.
    let mut watcher = Client::guest(p.gateways[1], "watcher").await?;
    watcher
        .send(json!({"type": "open", "game_id": game}))
        .await?;
    watcher.until("view", |v| v["type"] == "game").await?;

    assert_eq!(me.play(&game, "e2e4").await?, 3);
    // The bot answers (the test's stand-in worker, from its job).
    let reply = me.event(&game, 4).await?;
    assert_eq!(reply["event"]["color"], "black");
    let bot_uci = reply["event"]["uci"].as_str().context("uci")?.to_owned();

    me.send(json!({"type": "undo", "id": "u1", "game_id": game, "expected_version": 4}))
        .await?;
    let ack = me.ack("u1").await?;
    assert_eq!(
        (ack["version"].as_u64(), ack["duplicate"].as_bool()),
        (Some(5), Some(false))
    );
    for c in [&mut me, &mut watcher] {
        let e = c.event(&game, 5).await?;
        let undo = &e["event"];
        assert_eq!(undo["kind"], "undo", "{e}");
        assert_eq!(undo["ply"], 0);
        assert_eq!(undo["fen"], start_fen.as_str());
        assert_eq!(undo["turn"], "white");
        assert_eq!(undo["check"], false);
        assert_eq!(undo["taken_back"], json!(["e2e4", bot_uci]));
    }
    // The same undo again is a duplicate; another is refused (nothing to take back).
    me.send(json!({"type": "undo", "id": "u1", "game_id": game}))
        .await?;
    assert_eq!(me.ack("u1").await?["duplicate"], true);
    let code = refused(
        &mut me,
        "u2",
        json!({"type": "undo", "id": "u2", "game_id": game}),
    )
    .await?;
    assert_eq!(code, "undo_not_allowed");
    // Play goes on from the start position.
    assert_eq!(me.play(&game, "d2d4").await?, 6);
    me.event(&game, 7).await?;
    bot.stop().await?;
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_computer_playing_white_moves_first_and_every_refusal_is_typed() -> anyhow::Result<()> {
    let p = Platform::start(2, 2, None).await?;
    let bot = BotDriver::start(&p, 11).await?;
    let mut me = Client::guest(p.gateways[1], "me").await?;
    let (game, color) = play_computer(&mut me, "pc", "atomic", "hard", "black").await?;
    assert_eq!(color, "black");
    // The bot's first move arrives without the person doing anything.
    let first = me.reached(&game, 3).await?;
    if first["type"] == "event" {
        assert_eq!(first["event"]["color"], "white", "{first}");
    } else {
        assert_eq!(
            first["game"]["moves"].as_array().map(Vec::len),
            Some(1),
            "{first}"
        );
    }
    // Undo with only the bot's move on the board: nothing of the person's to take back.
    let code = refused(
        &mut me,
        "u",
        json!({"type": "undo", "id": "u", "game_id": game}),
    )
    .await?;
    assert_eq!(code, "undo_not_allowed");

    for (id, message, expected) in [
        (
            "level",
            json!({"type": "play_computer", "id": "level", "variant": "standard", "level": "grandmaster", "color": "white"}),
            "bad_field",
        ),
        (
            "color",
            json!({"type": "play_computer", "id": "color", "variant": "standard", "level": "easy", "color": "purple"}),
            "bad_field",
        ),
        (
            "variant",
            json!({"type": "play_computer", "id": "variant", "variant": "chess960", "level": "easy", "color": "white"}),
            "bad_field",
        ),
        (
            "clock",
            json!({"type": "play_computer", "id": "clock", "variant": "standard", "level": "easy", "color": "white", "clock": {"minutes": 0}}),
            "bad_time_control",
        ),
        (
            "bad-game",
            json!({"type": "undo", "id": "bad-game", "game_id": "nope"}),
            "game_not_found",
        ),
    ] {
        assert_eq!(refused(&mut me, id, message).await?, expected, "{id}");
    }
    // Hidden chess has no undo, even with a move and its reply on the board.
    let (hidden, _) = play_computer(&mut me, "h", "hidden", "medium", "white").await?;
    me.until("hidden view", |v| {
        v["type"] == "game" && v["game_id"] == hidden.as_str()
    })
    .await?;
    me.play(&hidden, "e2e4").await?;
    me.event(&hidden, 4).await?;
    let code = refused(
        &mut me,
        "hu",
        json!({"type": "undo", "id": "hu", "game_id": hidden}),
    )
    .await?;
    assert_eq!(code, "undo_not_allowed");
    // Nor a game between two people.
    let mut other = Client::guest(p.gateways[0], "other").await?;
    let human = start_game(&mut me, &mut other, "standard", "white").await?;
    me.play(&human, "e2e4").await?;
    other.play(&human, "e7e5").await?;
    me.event(&human, 4).await?;
    let code = refused(
        &mut me,
        "pu",
        json!({"type": "undo", "id": "pu", "game_id": human}),
    )
    .await?;
    assert_eq!(code, "undo_not_allowed");
    // A spectator of the bot game cannot undo it.
    let code = refused(
        &mut other,
        "su",
        json!({"type": "undo", "id": "su", "game_id": game}),
    )
    .await?;
    assert_eq!(code, "not_in_game");
    // Before authenticating, nothing.
    let mut anonymous = Client::connect(p.gateways[0], "anonymous").await?;
    let code = refused(
        &mut anonymous,
        "a",
        json!({"type": "play_computer", "id": "a", "variant": "standard", "level": "easy", "color": "white"}),
    )
    .await?;
    assert_eq!(code, "unauthenticated");
    bot.stop().await?;
    p.stop().await;
    Ok(())
}

const GAMES: usize = 200;
const PARALLEL: usize = 8;
const MAX_VERSION: u64 = 90;

/// One random hidden game against the computer, played to its end (a resignation after
/// many moves); returns the person's client, the game and its published layout.
async fn random_game(p: &Platform, seed: u64) -> anyhow::Result<(Client, String, String)> {
    let mut rng = Rng::seeded(seed);
    let mut me = Client::guest(p.gateways[(seed % 2) as usize], &format!("p{seed}")).await?;
    let color = if seed.is_multiple_of(2) {
        "white"
    } else {
        "black"
    };
    let (game, _) = play_computer(&mut me, "pc", "hidden", "easy", color).await?;
    let view = me.until("view", |v| v["type"] == "game").await?;
    let g = &view["game"];
    let mut fen = g["fen"].as_str().unwrap_or_default().to_owned();
    let mut turn = g["turn"].as_str().unwrap_or_default().to_owned();
    let mut pending = !g["pending_promotion"].is_null();
    let mut version = view["version"].as_u64().context("version")?;
    let mut last = view.clone();
    let over = |v: &Value| !v["outcome"].is_null() || !v["game"]["outcome"].is_null();
    while !over(&last) {
        if turn == color {
            let id = format!("a{version}");
            if version >= MAX_VERSION && !pending {
                me.send(json!({"type": "resign", "id": id, "game_id": game}))
                    .await?;
            } else if pending {
                let role = ["q", "r", "b", "n"][(rng.next() % 4) as usize];
                me.send(json!({"type": "promote", "id": id, "game_id": game, "role": role}))
                    .await?;
            } else {
                let pos = Position::from_fen(Variant::Hidden, &fen)
                    .map_err(|e| anyhow::anyhow!("{fen}: {e}"))?;
                let moves = pos.legal_move_list();
                let m = moves[(rng.next() % moves.len() as u64) as usize];
                me.send(json!({"type": "move", "id": id, "game_id": game, "uci": m.to_string()}))
                    .await?;
            }
            me.ack(&id).await?;
        }
        // The next change, whoever made it.
        last = me.event(&game, version + 1).await?;
        version += 1;
        let e = &last["event"];
        if let Some(f) = e["fen"].as_str() {
            fen = f.to_owned();
        }
        if let Some(t) = e["turn"].as_str() {
            turn = t.to_owned();
        }
        pending = e["promotion_pending"] == true;
    }
    let layout = last["shuffle"]["layout"]
        .as_str()
        .with_context(|| format!("game {game} ended without publishing its shuffle: {last}"))?
        .to_owned();
    Ok((me, game, layout))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_bot_job_of_200_random_hidden_games_carries_a_secret() -> anyhow::Result<()> {
    let p = std::sync::Arc::new(Platform::start(2, 2, None).await?);
    let bot = BotDriver::start(&p, 3).await?;
    let mut results = Vec::new();
    for batch in 0..GAMES.div_ceil(PARALLEL) {
        let mut set = tokio::task::JoinSet::new();
        for i in 0..PARALLEL {
            let seed = (batch * PARALLEL + i) as u64 + 1;
            if seed as usize > GAMES {
                break;
            }
            let p = p.clone();
            set.spawn(async move { random_game(&p, seed).await });
        }
        while let Some(r) = set.join_next().await {
            results.push(r??);
        }
    }
    assert_eq!(results.len(), GAMES);
    let jobs = bot.jobs();
    bot.stop().await?;
    let layouts: HashMap<String, String> = results
        .iter()
        .map(|(_, g, l)| (g.clone(), l.clone()))
        .collect();
    // Every job belongs to one of the games, each game had jobs.
    let mut per_game: HashMap<&str, usize> = HashMap::new();
    for job in &jobs {
        assert!(
            layouts.contains_key(&job.game_id),
            "a job of an unknown game"
        );
        *per_game.entry(job.game_id.as_str()).or_default() += 1;
    }
    assert_eq!(per_game.len(), GAMES, "every game had bot jobs");
    // The leak check over every job, as the frame its seat would receive.
    let frames: Vec<Value> = jobs.iter().map(as_game_frame).collect();
    let checked = leak::check_client_with(&frames, &|g| layouts.get(g).cloned())
        .unwrap_or_else(|e| panic!("a bot job leaks: {e:#}"));
    assert_eq!(checked, jobs.len(), "every job checked");
    let identities = jobs
        .iter()
        .filter(|j| !j.view.captured_identities.is_empty())
        .count();
    assert!(
        identities > 0,
        "some bot captured a hidden piece: the check bit"
    );
    let promotions = jobs
        .iter()
        .filter(|j| j.view.pending_promotion.is_some())
        .count();
    // The people's own frames too.
    for (client, _, _) in &results {
        leak::check_client_with(&client.frames(), &|g| layouts.get(g).cloned())
            .unwrap_or_else(|e| panic!("{}: {e:#}", client.name));
    }
    eprintln!(
        "{} bot jobs checked over {GAMES} games ({identities} with captured identities, {promotions} promotion choices)",
        jobs.len()
    );
    if let Ok(p) = std::sync::Arc::try_unwrap(p) {
        p.stop().await;
    }
    Ok(())
}
