//! The live path end to end: two gateways, two game-sessions, real Redis, NATS and
//! Postgres, WebSocket clients. Every hidden game's frames go through the leak check.

mod common;

use std::sync::Arc;

use anyhow::Context as _;
use common::{Client, Platform, leak, open_board, start_game};
use serde_json::json;

/// White: a1 pawn, b1 queen, c1 bishop, d1 rook, f1 bishop, g1 rook, h1 knight, a2 knight,
/// b2–h2 pawns. Black: a8 rook, b8 knight, c8 bishop, d8 queen, f8 bishop, g8 rook, h8 pawn,
/// a7 knight, b7–h7 pawns.
const LAYOUT: &str = "PQBRBRNNPPPPPPP/rnbqbrpnppppppp";

fn assert_no_leaks(clients: &[&Client]) {
    for c in clients {
        let checked =
            leak::check_client(&c.frames(), LAYOUT).unwrap_or_else(|e| panic!("{}: {e:#}", c.name));
        assert!(checked > 0, "{} saw hidden-game frames to check", c.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_game_to_checkmate_with_reveals_across_gateways() -> anyhow::Result<()> {
    let p = Platform::start(2, 2, Some(LAYOUT)).await?;
    let mut white = Client::guest(p.gateways[0], "white").await?;
    let mut black = Client::guest(p.gateways[1], "black").await?;
    let game = start_game(&mut white, &mut black, "hidden", "white").await?;
    let mut watcher = Client::guest(p.gateways[1], "watcher").await?;
    watcher
        .send(json!({"type": "open", "game_id": game}))
        .await?;
    let view = watcher.until("view", |v| v["type"] == "game").await?;
    assert_eq!(view["seat"], "spectator");
    assert_eq!(view["game"]["commitment"].as_str().map(str::len), Some(64));
    // Fool's mate: every first move reveals its piece.
    let moves = [
        ("f2f3", "pawn"),
        ("e7e5", "pawn"),
        ("g2g4", "pawn"),
        ("d8h4", "queen"),
    ];
    for (i, (uci, role)) in moves.iter().enumerate() {
        let version = 3 + i as u64;
        let mover = if i % 2 == 0 { &mut white } else { &mut black };
        assert_eq!(mover.play(&game, uci).await?, version);
        for c in [&mut white, &mut black, &mut watcher] {
            let e = c.event(&game, version).await?;
            assert_eq!(e["event"]["uci"], *uci);
            assert_eq!(
                e["event"]["reveal"]["role"], *role,
                "{uci} reveals a {role}"
            );
        }
    }
    let last = watcher.frames().last().cloned().unwrap_or_default();
    assert_eq!(
        last["outcome"],
        json!({"result": "black", "reason": "checkmate"})
    );
    let shuffle = &last["shuffle"];
    assert_eq!(shuffle["layout"], LAYOUT);
    assert_eq!(
        frontier_rules::verify_shuffle(
            shuffle["commitment"].as_str().unwrap_or_default(),
            shuffle["salt"].as_str().unwrap_or_default(),
            LAYOUT
        ),
        Ok(())
    );
    assert_eq!(
        shuffle["commitment"], view["game"]["commitment"],
        "the commitment shown at the start"
    );
    assert_no_leaks(&[&white, &black, &watcher]);
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn castling_with_a_knight_in_the_corner_reveals_it() -> anyhow::Result<()> {
    let p = Platform::start(2, 2, Some(LAYOUT)).await?;
    let mut white = Client::guest(p.gateways[0], "white").await?;
    let mut black = Client::guest(p.gateways[1], "black").await?;
    let game = start_game(&mut white, &mut black, "hidden", "white").await?;
    let moves = ["e2e4", "a7a6", "g1f3", "b7b6", "f1e2", "c7c6", "e1g1"];
    let mut version = 2;
    for (i, uci) in moves.iter().enumerate() {
        let mover = if i % 2 == 0 { &mut white } else { &mut black };
        version = mover.play(&game, uci).await?;
    }
    let e = black.event(&game, version).await?;
    assert_eq!(e["event"]["uci"], "e1g1");
    assert_eq!(
        e["event"]["reveal"],
        json!({"square": "f1", "role": "knight"})
    );
    let fen = e["event"]["fen"].as_str().unwrap_or_default();
    assert!(fen.contains("NK1"), "knight on f1, king on g1: {fen}");
    white.event(&game, version).await?;
    assert_no_leaks(&[&white, &black]);
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promotion_on_reveal_waits_and_a_captured_identity_goes_to_the_capturer_only()
-> anyhow::Result<()> {
    let p = Platform::start(2, 2, Some(LAYOUT)).await?;
    let mut white = Client::guest(p.gateways[0], "white").await?;
    let mut black = Client::guest(p.gateways[1], "black").await?;
    let game = start_game(&mut white, &mut black, "hidden", "white").await?;
    let mut watcher = Client::guest(p.gateways[0], "watcher").await?;
    watcher
        .send(json!({"type": "open", "game_id": game}))
        .await?;
    watcher.until("view", |v| v["type"] == "game").await?;
    for (i, uci) in ["a2a3", "a7a6", "a3b5", "a6c5"].iter().enumerate() {
        let mover = if i % 2 == 0 { &mut white } else { &mut black };
        mover.play(&game, uci).await?;
    }
    // The a1 "rook" takes the hidden a8 piece (truly a rook) and turns out to be a pawn.
    let v = white.play(&game, "a1a8").await?;
    let mine = white.event(&game, v).await?;
    let theirs = black.event(&game, v).await?;
    let public = watcher.event(&game, v).await?;
    assert_eq!(mine["event"]["captured_identity"], "rook");
    assert!(theirs["event"]["captured_identity"].is_null());
    assert!(public["event"]["captured_identity"].is_null());
    for e in [&mine, &theirs, &public] {
        assert_eq!(e["event"]["promotion_pending"], true);
        assert_eq!(
            e["event"]["reveal"],
            json!({"square": "a8", "role": "pawn"})
        );
        assert_eq!(e["event"]["turn"], "white");
    }
    // The move is not complete: Black cannot move.
    black
        .send(json!({"type": "move", "id": "early", "game_id": game, "uci": "h7h6"}))
        .await?;
    assert_eq!(black.error_for("early").await?["code"], "not_your_turn");
    white
        .send(json!({"type": "promote", "id": "pq", "game_id": game, "role": "q"}))
        .await?;
    let done = white.ack("pq").await?["version"]
        .as_u64()
        .unwrap_or_default();
    let promo = black.event(&game, done).await?;
    assert_eq!(promo["event"]["kind"], "promotion");
    assert_eq!(promo["event"]["uci"], "a1a8q");
    assert_eq!(promo["event"]["turn"], "black");
    // Reopening shows each seat its own knowledge.
    white.send(json!({"type": "open", "game_id": game})).await?;
    let wv = white
        .until("view", |v| v["type"] == "game" && v["version"] == done)
        .await?;
    assert_eq!(wv["game"]["captured_identities"][0]["role"], "rook");
    black.send(json!({"type": "open", "game_id": game})).await?;
    let bv = black
        .until("view", |v| v["type"] == "game" && v["version"] == done)
        .await?;
    assert_eq!(bv["game"]["captured_identities"], json!([]));
    watcher.event(&game, done).await?;
    assert_no_leaks(&[&white, &black, &watcher]);
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn atomic_win_by_explosion_and_standard_draw_by_repetition() -> anyhow::Result<()> {
    let p = Platform::start(2, 2, None).await?;
    let mut white = Client::guest(p.gateways[0], "white").await?;
    let mut black = Client::guest(p.gateways[1], "black").await?;
    let game = start_game(&mut white, &mut black, "atomic", "white").await?;
    let mut v = 0;
    for (i, uci) in ["g1f3", "a7a6", "f3g5", "a6a5", "g5f7"].iter().enumerate() {
        let mover = if i % 2 == 0 { &mut white } else { &mut black };
        v = mover.play(&game, uci).await?;
    }
    let end = black.event(&game, v).await?;
    assert_eq!(
        end["outcome"],
        json!({"result": "white", "reason": "king-exploded"})
    );
    assert!(
        end["event"]["exploded"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("e8")))
    );

    let game = start_game(&mut white, &mut black, "standard", "white").await?;
    let cycle = ["g1f3", "g8f6", "f3g1", "f6g8"];
    for (i, uci) in cycle.iter().chain(&cycle).enumerate() {
        let mover = if i % 2 == 0 { &mut white } else { &mut black };
        v = mover.play(&game, uci).await?;
    }
    let end = white.event(&game, v).await?;
    assert_eq!(
        end["outcome"],
        json!({"result": "draw", "reason": "repetition"})
    );
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resign_draw_agreement_and_abort() -> anyhow::Result<()> {
    let p = Platform::start(2, 2, None).await?;
    let mut white = Client::guest(p.gateways[0], "white").await?;
    let mut black = Client::guest(p.gateways[1], "black").await?;

    let game = start_game(&mut white, &mut black, "standard", "white").await?;
    white.play(&game, "e2e4").await?;
    black
        .send(json!({"type": "resign", "id": "r", "game_id": game}))
        .await?;
    let v = black.ack("r").await?["version"]
        .as_u64()
        .unwrap_or_default();
    let end = white.event(&game, v).await?;
    assert_eq!(
        end["outcome"],
        json!({"result": "white", "reason": "resignation"})
    );
    assert_eq!(end["event"]["kind"], "ended");

    let game = start_game(&mut white, &mut black, "atomic", "black").await?;
    // The creator chose black: the joiner is white.
    black.play(&game, "e2e4").await?;
    white
        .send(json!({"type": "offer_draw", "id": "o", "game_id": game}))
        .await?;
    let v = white.ack("o").await?["version"]
        .as_u64()
        .unwrap_or_default();
    assert_eq!(
        black.event(&game, v).await?["event"],
        json!({"kind": "draw_offered", "by": "black"})
    );
    black
        .send(json!({"type": "accept_draw", "id": "a", "game_id": game}))
        .await?;
    let v = black.ack("a").await?["version"]
        .as_u64()
        .unwrap_or_default();
    assert_eq!(
        white.event(&game, v).await?["outcome"],
        json!({"result": "draw", "reason": "agreement"})
    );

    let game = start_game(&mut white, &mut black, "standard", "white").await?;
    white.play(&game, "d2d4").await?;
    black
        .send(json!({"type": "abort", "id": "x", "game_id": game}))
        .await?;
    let v = black.ack("x").await?["version"]
        .as_u64()
        .unwrap_or_default();
    assert_eq!(
        white.event(&game, v).await?["outcome"],
        json!({"result": "aborted", "reason": "aborted"})
    );

    let game = start_game(&mut white, &mut black, "standard", "white").await?;
    white.play(&game, "d2d4").await?;
    black.play(&game, "d7d5").await?;
    white
        .send(json!({"type": "abort", "id": "late", "game_id": game}))
        .await?;
    assert_eq!(white.error_for("late").await?["code"], "cannot_abort");
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnecting_to_another_gateway_resumes_without_loss_or_doubling() -> anyhow::Result<()> {
    let p = Platform::start(2, 2, None).await?;
    let (token, id) = common::guest_token(p.gateways[1]).await?;
    let mut white = Client::guest(p.gateways[0], "white").await?;
    let mut black = Client::with_token(p.gateways[1], "black", &token, &id).await?;
    let game = start_game(&mut white, &mut black, "standard", "white").await?;
    white.play(&game, "e2e4").await?;
    let v4 = black.play(&game, "e7e5").await?;
    black.event(&game, v4).await?;
    black.close().await;
    // While Black is away: a move and a draw offer.
    let v5 = white.play(&game, "g1f3").await?;
    white
        .send(json!({"type": "offer_draw", "id": "o", "game_id": game}))
        .await?;
    let v6 = white.ack("o").await?["version"]
        .as_u64()
        .unwrap_or_default();
    assert_eq!((v5, v6), (v4 + 1, v4 + 2));
    // Black comes back on the other gateway and resumes after the last version it saw.
    let mut black = Client::with_token(p.gateways[0], "black-again", &token, &id).await?;
    black
        .send(json!({"type": "open", "game_id": game, "after_version": v4}))
        .await?;
    let first = black.next().await?;
    let second = black.next().await?;
    assert_eq!(
        (first["version"].as_u64(), second["version"].as_u64()),
        (Some(v5), Some(v6))
    );
    assert_eq!(first["event"]["uci"], "g1f3");
    assert_eq!(second["event"]["kind"], "draw_offered");
    // A move sent twice with one id is applied once; a stale expected version is refused.
    black
        .send(json!({"type": "move", "id": "same", "game_id": game, "uci": "b8c6"}))
        .await?;
    let a1 = black.ack("same").await?;
    black
        .send(json!({"type": "move", "id": "same", "game_id": game, "uci": "b8c6"}))
        .await?;
    let a2 = black.ack("same").await?;
    assert_eq!(
        (a1["duplicate"].clone(), a2["duplicate"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(a1["version"], a2["version"]);
    white.send(json!({"type": "move", "id": "old", "game_id": game, "uci": "f1c4", "expected_version": v6})).await?;
    assert_eq!(white.error_for("old").await?["code"], "stale_version");
    // Every version reached Black exactly once, in order.
    let versions: Vec<u64> = black
        .frames()
        .iter()
        .filter(|f| f["type"] == "event" && f["game_id"] == game)
        .filter_map(|f| f["version"].as_u64())
        .collect();
    let expected: Vec<u64> = (v5..=a1["version"].as_u64().unwrap_or_default()).collect();
    let mut seen = versions.clone();
    // The ack can overtake the event on the wire; wait for it, then compare.
    while seen.last() != expected.last() {
        let f = black.next().await?;
        if f["type"] == "event" {
            seen.push(f["version"].as_u64().unwrap_or_default());
        }
    }
    assert_eq!(seen, expected);
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_comes_back_to_its_mover_with_its_ack_each_version_once() -> anyhow::Result<()> {
    let p = Platform::start(2, 2, None).await?;
    let mut white = Client::guest(p.gateways[0], "white").await?;
    let mut black = Client::guest(p.gateways[1], "black").await?;
    let game = start_game(&mut white, &mut black, "standard", "white").await?;
    let moves = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"];
    for (i, uci) in moves.iter().enumerate() {
        let version = 3 + i as u64;
        let (mover, other) = if i % 2 == 0 {
            (&mut white, &mut black)
        } else {
            (&mut black, &mut white)
        };
        assert_eq!(mover.play(&game, uci).await?, version);
        // The mover had every version before this one, so the event it caused came back
        // with the ack, just before it (one write, not two).
        let frames = mover.frames();
        let at = frames
            .iter()
            .rposition(|f| f["type"] == "ack" && f["version"] == version)
            .expect("the ack was read");
        let before = &frames[at.checked_sub(1).expect("a frame before the ack")];
        assert_eq!(
            (&before["type"], &before["version"], &before["event"]["uci"]),
            (&json!("event"), &json!(version), &json!(uci)),
            "{}: the frame before the ack of v{version}",
            mover.name
        );
        other.event(&game, version).await?;
    }
    // However it came, each version reached each player once, in order.
    for c in [&white, &black] {
        let versions: Vec<u64> = c
            .frames()
            .iter()
            .filter(|f| f["type"] == "event" && f["game_id"] == game.as_str())
            .filter_map(|f| f["version"].as_u64())
            .collect();
        // (From 2, or from 3 where the start came in the first view.)
        let from = versions.first().copied().unwrap_or(0);
        assert!(from == 2 || from == 3, "{}: {versions:?}", c.name);
        assert_eq!(versions, (from..=8).collect::<Vec<u64>>(), "{}", c.name);
    }
    p.stop().await;
    Ok(())
}

/// One board of [`a_move_made_while_its_movers_follow_starts_comes_back_without_the_tick`]:
/// black moves as soon as white's ack comes, before its own follow of the game (started
/// when it joined) has necessarily caught up; each player's own event must still come.
async fn move_while_the_follow_starts(p: &Platform, n: usize) -> anyhow::Result<()> {
    let mut white = Client::guest(p.gateways[0], &format!("white{n}")).await?;
    let mut black = Client::guest(p.gateways[0], &format!("black{n}")).await?;
    // Not `start_game`: waiting for both views of the start would narrow the race.
    let create =
        json!({"type": "create_board", "id": "c", "variant": "standard", "color": "white"});
    let game = open_board(&mut white, &mut black, create).await?;
    for (mover, uci) in [(&mut white, "e2e4"), (&mut black, "e7e5")] {
        let version = mover.play(&game, uci).await?;
        // Within the harness's wait (30 s): the presence tick, which would also find the
        // version missing, is an hour away here. (Or in the follow's first view, when
        // that was read after the move.)
        mover.reached(&game, version).await?;
    }
    // Each version after black's first view once, in order, through black's own move.
    let frames = black.frames();
    let first_view = frames
        .iter()
        .find(|f| f["type"] == "game" && f["game_id"] == game.as_str())
        .and_then(|f| f["version"].as_u64())
        .context("black's first view")?;
    let versions: Vec<u64> = frames
        .iter()
        .filter(|f| f["type"] == "event" && f["game_id"] == game.as_str())
        .filter_map(|f| f["version"].as_u64())
        .collect();
    anyhow::ensure!(
        versions == (first_view + 1..=4).collect::<Vec<u64>>(),
        "black saw events {versions:?} after its view of v{first_view}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_made_while_its_movers_follow_starts_comes_back_without_the_tick()
-> anyhow::Result<()> {
    // A mover whose follow was still catching up (white's move on its way in a read of the
    // log) had its own event dropped with its answer and waited for the presence tick's
    // check of quiet games, 10–20 s. Boards in parallel make the race likely: before the
    // fix, 40 at once hit it in four rounds of six.
    let p =
        Arc::new(Platform::start_with(1, 1, None, &[], &[("--presence-interval", "1h")]).await?);
    for round in 0..3 {
        let boards: Vec<_> = (0..40)
            .map(|i| {
                let p = p.clone();
                tokio::spawn(async move { move_while_the_follow_starts(&p, round * 40 + i).await })
            })
            .collect();
        for board in boards {
            board.await??;
        }
    }
    if let Ok(p) = Arc::try_unwrap(p) {
        p.stop().await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_its_player_ended_stops_counting_as_followed() -> anyhow::Result<()> {
    // The ending event of a player's own resignation goes out with the ack, not live: the
    // follow must end all the same, or a connection that finished MAX_FOLLOWS games could
    // open no more (its next board's view would never come).
    let games = frontier_gateway::ws::MAX_FOLLOWS + 3;
    let p = Platform::start_with(
        1,
        1,
        None,
        &[],
        &[("--board-limit", "100/1m"), ("--ws-rate", "1000")],
    )
    .await?;
    let mut white = Client::guest(p.gateways[0], "white").await?;
    let mut black = Client::guest(p.gateways[0], "black").await?;
    for n in 0..games {
        let game = start_game(&mut white, &mut black, "standard", "white").await?;
        let id = format!("r{n}");
        white
            .send(json!({"type": "resign", "id": id, "game_id": game}))
            .await?;
        let v = white.ack(&id).await?["version"]
            .as_u64()
            .unwrap_or_default();
        let end = black.event(&game, v).await?;
        assert_eq!(end["outcome"]["reason"], "resignation", "game {n}");
        // The resigning side had its ending event too, just before the ack.
        let frames = white.frames();
        assert!(
            frames.iter().any(|f| f["type"] == "event"
                && f["game_id"] == game.as_str()
                && f["version"] == v),
            "game {n}: the resigning side's ending event"
        );
        white.discard_unread();
        black.discard_unread();
    }
    p.stop().await;
    Ok(())
}
