//! The leak check over many random hidden games played through the gateways: real random
//! shuffles, random legal moves chosen from the public view, two players on different
//! gateways and a spectator. Each game's layout is learned only from the shuffle published
//! at its end; then every frame every client received is checked against it.

mod common;

use std::collections::HashMap;

use common::{Client, Platform, leak, start_game};
use frontier_rules::{Position, Variant};
use serde_json::{Value, json};

const GAMES: usize = 200;
const PARALLEL: usize = 8;
const MAX_PLIES: u64 = 40;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Plays one random game; returns the three clients and the published layout.
async fn random_game(p: &Platform, seed: u64) -> anyhow::Result<(Vec<Client>, String, String)> {
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut white = Client::guest(p.gateways[0], &format!("w{seed}")).await?;
    let mut black = Client::guest(p.gateways[1], &format!("b{seed}")).await?;
    let game = start_game(&mut white, &mut black, "hidden", "white").await?;
    let mut watcher = Client::guest(p.gateways[(seed % 2) as usize], &format!("s{seed}")).await?;
    watcher
        .send(json!({"type": "open", "game_id": game}))
        .await?;
    let view = watcher.until("view", |v| v["type"] == "game").await?;
    let mut fen = view["game"]["fen"].as_str().unwrap_or_default().to_owned();
    let mut turn = "white".to_owned();
    let mut pending = false;
    let mut version = view["version"].as_u64().unwrap_or(2);
    let mut last: Value = Value::Null;
    for _ in 0..MAX_PLIES * 2 {
        if !last["outcome"].is_null() {
            break;
        }
        if version >= MAX_PLIES + 2 && !pending {
            let resigner = if turn == "white" {
                &mut white
            } else {
                &mut black
            };
            resigner
                .send(json!({"type": "resign", "id": "resign", "game_id": game}))
                .await?;
            version = resigner.ack("resign").await?["version"]
                .as_u64()
                .unwrap_or_default();
        } else {
            let mover = if turn == "white" {
                &mut white
            } else {
                &mut black
            };
            if pending {
                let role = ["q", "r", "b", "n"][(rng.next() % 4) as usize];
                mover.send(json!({"type": "promote", "id": format!("p{version}"), "game_id": game, "role": role})).await?;
                version = mover.ack(&format!("p{version}")).await?["version"]
                    .as_u64()
                    .unwrap_or_default();
            } else {
                let pos = Position::from_fen(Variant::Hidden, &fen)
                    .map_err(|e| anyhow::anyhow!("{fen}: {e}"))?;
                let moves = pos.legal_move_list();
                anyhow::ensure!(!moves.is_empty(), "no legal move but no outcome: {fen}");
                let m = moves[(rng.next() % moves.len() as u64) as usize];
                version = mover.play(&game, &m.to_string()).await?;
            }
        }
        for c in [&mut white, &mut black, &mut watcher] {
            last = c.event(&game, version).await?;
        }
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
        .ok_or_else(|| anyhow::anyhow!("game {game} ended without publishing its shuffle: {last}"))?
        .to_owned();
    Ok((vec![white, black, watcher], game, layout))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_frame_of_200_random_hidden_games_leaks_an_identity() -> anyhow::Result<()> {
    let p = std::sync::Arc::new(Platform::start(2, 2, None).await?);
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
    let layouts: HashMap<String, String> = results
        .iter()
        .map(|(_, g, l)| (g.clone(), l.clone()))
        .collect();
    let mut checked = 0;
    let mut identities_seen = 0;
    for (clients, _, _) in &results {
        for c in clients {
            checked += leak::check_client_with(&c.frames(), &|g| layouts.get(g).cloned())
                .unwrap_or_else(|e| panic!("{}: {e:#}", c.name));
            identities_seen += c
                .frames()
                .iter()
                .filter(|f| f["event"]["captured_identity"].is_string())
                .count();
        }
    }
    // The check must have had something to bite on.
    assert!(checked > GAMES * 20, "{checked} frames checked");
    assert!(
        identities_seen > 0,
        "some random game captured a hidden piece"
    );
    if let Ok(p) = std::sync::Arc::try_unwrap(p) {
        p.stop().await;
    }
    Ok(())
}
