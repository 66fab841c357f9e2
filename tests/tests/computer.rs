//! Games against the computer end to end with real bot-workers: two gateways, two
//! game-sessions, two bot-workers (the engine, each decision capped by a test hook at a few
//! thousand nodes so whole games stay quick), real Redis, NATS and Postgres. The person's
//! side is a random mover; every game must reach its end.

mod common;

use anyhow::Context as _;
use common::bots::Rng;
use common::{Client, Platform};
use frontier_rules::{Position, Variant};
use serde_json::{Value, json};

/// The cap on each bot decision in these tests.
const NODES: u64 = 3_000;

/// Starts a game against the computer; its id and the person's colour.
async fn play_computer(
    c: &mut Client,
    variant: &str,
    level: &str,
    color: &str,
) -> anyhow::Result<(String, String)> {
    c.send(json!({"type": "play_computer", "id": "pc", "variant": variant, "level": level, "color": color}))
        .await?;
    let created = c
        .until("game_created", |v| {
            v["type"] == "game_created" || v["type"] == "error"
        })
        .await?;
    anyhow::ensure!(created["type"] == "game_created", "{created}");
    Ok((
        created["game_id"].as_str().context("game_id")?.to_owned(),
        created["color"].as_str().context("color")?.to_owned(),
    ))
}

/// Plays random legal moves for the person until the game ends; the last frame (with the
/// outcome) and the bot's player info.
async fn play_out(
    c: &mut Client,
    game: &str,
    color: &str,
    variant: Variant,
    seed: u64,
) -> anyhow::Result<(Value, Value)> {
    let mut rng = Rng::seeded(seed);
    let view = c
        .until("the game", |v| v["type"] == "game" && v["game_id"] == game)
        .await?;
    let bot = if color == "white" {
        view["game"]["black"].clone()
    } else {
        view["game"]["white"].clone()
    };
    let mut fen = view["game"]["fen"].as_str().unwrap_or_default().to_owned();
    let mut turn = view["game"]["turn"].as_str().unwrap_or_default().to_owned();
    let mut pending = !view["game"]["pending_promotion"].is_null();
    let mut n = 0u32;
    loop {
        if turn == color {
            n += 1;
            let id = format!("h{n}");
            if pending {
                c.send(json!({"type": "promote", "id": id, "game_id": game, "role": "q"}))
                    .await?;
            } else {
                let position =
                    Position::from_fen(variant, &fen).map_err(|e| anyhow::anyhow!("{fen}: {e}"))?;
                let moves = position.legal_move_list();
                anyhow::ensure!(!moves.is_empty(), "no move in {fen} and no outcome");
                let m = moves[(rng.next() % moves.len() as u64) as usize];
                c.send(json!({"type": "move", "id": id, "game_id": game, "uci": m.to_string()}))
                    .await?;
            }
        }
        let frame = c
            .until("the next event", |v| {
                v["type"] == "error" || (v["type"] == "event" && v["game_id"] == game)
            })
            .await?;
        // Faster than a person (the bot answers in milliseconds), the client may outrun the
        // connection's message rate: as a client should, it waits as told and sends again
        // (the refused message changed nothing).
        if frame["type"] == "error" && frame["code"] == "rate_limited" {
            let wait = frame["retry_after_ms"].as_u64().unwrap_or(50);
            tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
            continue;
        }
        anyhow::ensure!(frame["type"] == "event", "refused: {frame}");
        if !frame["outcome"].is_null() {
            return Ok((frame, bot));
        }
        let e = &frame["event"];
        if let Some(f) = e["fen"].as_str() {
            fen = f.to_owned();
            turn = e["turn"].as_str().unwrap_or_default().to_owned();
            pending = e["promotion_pending"] == true;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_level_plays_every_variant_to_its_end() -> anyhow::Result<()> {
    let mut p = Platform::start(2, 2, None).await?;
    p.start_bot_workers(2, NODES).await?;
    let mut games = Vec::new();
    let mut i = 0u64;
    for variant in ["standard", "hidden", "atomic"] {
        for level in ["easy", "medium", "hard"] {
            i += 1;
            let color = if i.is_multiple_of(2) {
                "white"
            } else {
                "black"
            };
            let gateway = p.gateways[(i % 2) as usize];
            games.push(tokio::spawn(async move {
                let mut c = Client::guest(gateway, "person").await?;
                let (game, color) = play_computer(&mut c, variant, level, color).await?;
                let v: Variant = variant.parse().map_err(anyhow::Error::msg)?;
                let (end, bot) = play_out(&mut c, &game, &color, v, i).await?;
                anyhow::Ok((variant, level, end, bot))
            }));
        }
    }
    for g in games {
        let (variant, level, end, bot) = g.await??;
        let result = end["outcome"]["result"].as_str().unwrap_or_default();
        assert!(
            ["white", "black", "draw"].contains(&result),
            "{variant} {level}: {end}"
        );
        assert_eq!(bot["bot"], true, "{bot}");
        let label = format!(
            "Frontier Bot · {}{}",
            level[..1].to_uppercase(),
            &level[1..]
        );
        assert_eq!(bot["name"], label.as_str());
    }
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_games_against_the_computer_all_finish() -> anyhow::Result<()> {
    let mut p = Platform::start(2, 2, None).await?;
    p.start_bot_workers(2, 500).await?;
    let mut games = Vec::new();
    for i in 0..100u64 {
        let gateway = p.gateways[(i % 2) as usize];
        let variant = ["standard", "atomic", "hidden"][(i % 3) as usize];
        games.push(tokio::spawn(async move {
            let mut c = Client::guest(gateway, "person").await?;
            let color = if i.is_multiple_of(2) {
                "white"
            } else {
                "black"
            };
            let (game, color) = play_computer(&mut c, variant, "easy", color).await?;
            let v: Variant = variant.parse().map_err(anyhow::Error::msg)?;
            let (end, _) = play_out(&mut c, &game, &color, v, 1000 + i).await?;
            anyhow::Ok(end)
        }));
    }
    let mut finished = 0;
    for g in games {
        let end = g.await??;
        assert!(!end["outcome"]["result"].is_null(), "{end}");
        finished += 1;
    }
    assert_eq!(finished, 100);
    p.stop().await;
    Ok(())
}

/// A computer player's id, as its games show it, answers a profile at
/// `GET /api/players/{id}`: its name, that it is a bot, its level, and no ratings. Before,
/// it was `404 player_not_found` (it has no account).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bots_player_id_answers_its_profile() -> anyhow::Result<()> {
    let platform = Platform::start(1, 1, None).await?;
    let mut c = Client::guest(platform.gateways[0], "human").await?;
    let (game, color) = play_computer(&mut c, "standard", "medium", "white").await?;
    let view = c
        .until("the game", |v| v["type"] == "game" && v["game_id"] == game)
        .await?;
    let bot = if color == "white" {
        &view["game"]["black"]
    } else {
        &view["game"]["white"]
    };
    let id = bot["id"].as_str().context("the bot's id")?;
    let (status, body) = common::get(platform.gateways[0], &format!("/api/players/{id}")).await?;
    assert_eq!(status, 200, "{body}");
    let profile: Value = serde_json::from_str(body.trim())?;
    assert_eq!(profile["id"], id);
    assert_eq!(profile["bot"], true);
    assert_eq!(profile["level"], "medium");
    assert_eq!(profile["name"], bot["name"]);
    assert_eq!(profile["ratings"], json!({}));
    platform.stop().await;
    Ok(())
}
