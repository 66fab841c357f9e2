//! The key protocol scenarios, run against both wirings of the platform from one suite:
//! the distributed services (two gateways, two game-sessions, a clock, a bot-worker, two
//! matchmaking instances and the rating service on real Redis, NATS and Postgres) and `frontier dev` (every service in one
//! process, nothing installed). Each scenario is written once, against gateway addresses.

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser as _;
use common::{Client, Platform, get, post, start_game};
use frontier_glicko2::{INITIAL, Score, rate_game};
use frontier_platform::Shutdown;
use serde_json::{Value, json};

/// White: a1 pawn, b1 queen, c1 bishop, d1 rook, f1 bishop, g1 rook, h1 knight, a2 knight,
/// b2–h2 pawns. Black: a8 rook, b8 knight, c8 bishop, d8 queen, f8 bishop, g8 rook, h8 pawn,
/// a7 knight, b7–h7 pawns.
const LAYOUT: &str = "PQBRBRNNPPPPPPP/rnbqbrpnppppppp";
/// One clock "minute" in these tests.
const MINUTE: &str = "400ms";
/// Quick match in both wirings: no bot, except after a short wait in the one pool the
/// bot fallback is tested in (so two people seeking elsewhere are never given a bot).
const MATCHMAKING: &[&str] = &[
    "--bot-after",
    "0",
    "--bot-after-pool",
    "atomic:30+0:casual=300ms",
];

/// One wiring of the platform.
enum Wiring {
    Distributed(Platform),
    Dev {
        addr: SocketAddr,
        shutdown: Shutdown,
        task: tokio::task::JoinHandle<anyhow::Result<()>>,
    },
}

#[derive(clap::Parser)]
struct DevArgs {
    #[command(flatten)]
    config: frontier::dev::DevConfig,
}

impl Wiring {
    async fn distributed() -> anyhow::Result<Wiring> {
        let mut p = Platform::start_with_matchmaking(
            2,
            2,
            Some(LAYOUT),
            &["--test-clock-minute", MINUTE],
            (2, MATCHMAKING),
        )
        .await?;
        p.start_clock().await?;
        p.start_bot_workers(1, 2_000).await?;
        Ok(Wiring::Distributed(p))
    }

    /// `frontier dev` in this process, keeping nothing on disk (or in `data`).
    async fn dev(data: Option<&PathBuf>) -> anyhow::Result<Wiring> {
        let mut args = vec![
            "dev".to_owned(),
            "--test-fixed-layout".into(),
            LAYOUT.into(),
            "--test-clock-minute".into(),
            MINUTE.into(),
            "--hash-threads".into(),
            "2".into(),
        ];
        args.extend(MATCHMAKING.iter().map(|f| (*f).to_owned()));
        match data {
            Some(dir) => args.extend(["--data".to_owned(), dir.display().to_string()]),
            None => args.push("--memory".into()),
        }
        let config = DevArgs::try_parse_from(args)?.config;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let shutdown = Shutdown::new();
        let running = frontier::dev::start(config, listener, shutdown.clone()).await?;
        let addr = running.addr;
        Ok(Wiring::Dev {
            addr,
            shutdown,
            task: tokio::spawn(running.wait()),
        })
    }

    /// Gateway `i` (`frontier dev` has one address for all).
    fn gateway(&self, i: usize) -> SocketAddr {
        match self {
            Wiring::Distributed(p) => p.gateways[i % p.gateways.len()],
            Wiring::Dev { addr, .. } => *addr,
        }
    }

    async fn stop(self) -> anyhow::Result<()> {
        match self {
            Wiring::Distributed(p) => {
                p.stop().await;
                Ok(())
            }
            Wiring::Dev { shutdown, task, .. } => {
                shutdown.trigger();
                tokio::time::timeout(common::WAIT, task).await??
            }
        }
    }
}

/// Runs a scenario against both wirings.
macro_rules! both_wirings {
    ($scenario:ident) => {
        mod $scenario {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn distributed() -> anyhow::Result<()> {
                let w = super::Wiring::distributed().await?;
                super::$scenario(&w).await?;
                w.stop().await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn dev() -> anyhow::Result<()> {
                let w = super::Wiring::dev(None).await?;
                super::$scenario(&w).await?;
                w.stop().await
            }
        }
    };
}

both_wirings!(hidden_game_to_checkmate_with_reveals);
both_wirings!(a_captured_hidden_identity_reaches_the_capturer_only);
both_wirings!(a_reconnect_resumes_without_loss_or_doubling);
both_wirings!(a_flag_falls_without_a_message);
both_wirings!(a_rated_game_shows_in_the_dashboard_with_its_rating_change);
both_wirings!(the_computer_answers_a_move_and_undo_takes_both_back);
both_wirings!(quick_match_pairs_two_people_and_gives_a_lone_one_a_labelled_bot);

fn pool(variant: &str, minutes: u32, increment: u32, rated: bool) -> Value {
    json!({"variant": variant, "clock": {"minutes": minutes, "increment": increment}, "rated": rated})
}

async fn quick_match_pairs_two_people_and_gives_a_lone_one_a_labelled_bot(
    w: &Wiring,
) -> anyhow::Result<()> {
    // Alice has two connections (on both gateways of the distributed wiring).
    let (token, alice_id) = common::guest_token(w.gateway(0)).await?;
    let mut alice = Client::with_token(w.gateway(0), "alice", &token, &alice_id).await?;
    let mut alice_too = Client::with_token(w.gateway(1), "alice-too", &token, &alice_id).await?;
    let mut bob = Client::guest(w.gateway(1), "bob").await?;
    let people = pool("standard", 30, 0, false);
    for (client, id) in [(&mut alice, "s1"), (&mut bob, "s2")] {
        client
            .send(json!({"type": "seek", "id": id, "pools": [people.clone()]}))
            .await?;
        let seeking = client.until(id, |v| v["id"] == id).await?;
        assert_eq!(seeking["type"], "seeking", "{seeking}");
        assert_eq!(seeking["pools"], json!([people.clone()]));
    }
    let mut told = Vec::new();
    for client in [&mut alice, &mut alice_too, &mut bob] {
        told.push(client.until("matched", |v| v["type"] == "matched").await?);
    }
    assert_eq!(
        told[0], told[1],
        "every connection of alice is told the same"
    );
    let (to_alice, to_bob) = (&told[0], &told[2]);
    assert_eq!(to_alice["game_id"], to_bob["game_id"]);
    assert_eq!(to_alice["opponent"]["id"], bob.player_id.as_str());
    assert_eq!(to_bob["opponent"]["id"], alice_id.as_str());
    assert_eq!(to_alice["opponent"]["bot"], false);
    assert_eq!(
        (to_alice["rated"].clone(), to_alice["pool"].clone()),
        (json!(false), people)
    );
    assert_ne!(to_alice["color"], to_bob["color"]);
    let game = to_alice["game_id"].as_str().unwrap_or_default().to_owned();
    // The game opens on every connection, started.
    for client in [&mut alice, &mut alice_too, &mut bob] {
        let view = client
            .until("the game", |v| {
                v["type"] == "game" && v["game_id"] == game.as_str()
            })
            .await?;
        assert_eq!(view["game"]["status"], "playing", "{view}");
    }
    let alice_white = to_alice["color"] == "white";
    let (white, black) = if alice_white {
        (&mut alice, &mut bob)
    } else {
        (&mut bob, &mut alice)
    };
    let first = white.play(&game, "e2e4").await?;
    black.event(&game, first).await?;
    let second = black.play(&game, "e7e5").await?;
    let seen = alice_too.event(&game, second).await?;
    assert_eq!(seen["event"]["uci"], "e7e5", "{seen}");

    // A lone player in the pool with a bot fallback: a labelled, casual bot that moves.
    let mut carol = Client::guest(w.gateway(0), "carol").await?;
    let lone = pool("atomic", 30, 0, false);
    carol
        .send(json!({"type": "seek", "id": "s3", "pools": [lone.clone()]}))
        .await?;
    assert_eq!(
        carol.until("s3", |v| v["id"] == "s3").await?["type"],
        "seeking"
    );
    let m = carol.until("matched", |v| v["type"] == "matched").await?;
    assert_eq!(m["opponent"]["bot"], true, "{m}");
    assert_eq!(m["rated"], false, "bot games are casual");
    assert_eq!(m["pool"], lone);
    assert!(
        m["opponent"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("Frontier Bot")),
        "{m}"
    );
    let game = m["game_id"].as_str().unwrap_or_default().to_owned();
    let view = carol
        .until("the game", |v| {
            v["type"] == "game" && v["game_id"] == game.as_str()
        })
        .await?;
    let bot_side = if m["color"] == "white" {
        "black"
    } else {
        "white"
    };
    assert_eq!(
        view["game"][bot_side]["bot"], true,
        "labelled in the game too: {view}"
    );
    if bot_side == "black" {
        carol.play(&game, "g1f3").await?;
    }
    // A bot with White owes the first move, and its job is queued when the game is created:
    // it can move before the game opens on carol's connection, and the view then already
    // holds its move (the events after the view start at the view's version).
    let in_view = match view["game"]["moves"].as_array() {
        Some(moves) if bot_side == "white" => moves.first().cloned(),
        _ => None,
    };
    let uci = match in_view {
        Some(first) => first["uci"].clone(),
        None => carol
            .until("the bot's move", |v| {
                v["type"] == "event"
                    && v["game_id"] == game.as_str()
                    && v["event"]["kind"] == "move"
                    && v["event"]["color"] == bot_side
            })
            .await?["event"]["uci"]
            .clone(),
    };
    assert!(uci.is_string(), "the bot moved: {uci}");
    Ok(())
}

async fn the_computer_answers_a_move_and_undo_takes_both_back(w: &Wiring) -> anyhow::Result<()> {
    let mut me = Client::guest(w.gateway(0), "player").await?;
    me.send(json!({"type": "play_computer", "id": "pc", "variant": "atomic", "level": "easy", "color": "white"}))
        .await?;
    let created = me
        .until("game_created", |v| v["type"] == "game_created")
        .await?;
    let game = created["game_id"].as_str().unwrap_or_default().to_owned();
    let view = me
        .until("the game", |v| {
            v["type"] == "game" && v["game_id"] == game.as_str()
        })
        .await?;
    assert_eq!(view["game"]["black"]["bot"], true, "{view}");
    assert_eq!(view["game"]["rated"], false);
    let start_fen = view["game"]["fen"].clone();
    let v = me.play(&game, "g1f3").await?;
    let reply = me.event(&game, v + 1).await?;
    assert_eq!(
        reply["event"]["color"], "black",
        "the computer moved: {reply}"
    );
    me.send(json!({"type": "undo", "id": "u", "game_id": game}))
        .await?;
    let undone = me.ack("u").await?["version"].as_u64().unwrap_or_default();
    let e = me.event(&game, undone).await?;
    assert_eq!(e["event"]["kind"], "undo", "{e}");
    assert_eq!(e["event"]["fen"], start_fen);
    assert_eq!(
        (e["event"]["ply"].clone(), e["event"]["turn"].clone()),
        (json!(0), json!("white"))
    );
    Ok(())
}

async fn hidden_game_to_checkmate_with_reveals(w: &Wiring) -> anyhow::Result<()> {
    let mut white = Client::guest(w.gateway(0), "white").await?;
    let mut black = Client::guest(w.gateway(1), "black").await?;
    let game = start_game(&mut white, &mut black, "hidden", "white").await?;
    let mut watcher = Client::guest(w.gateway(1), "watcher").await?;
    watcher
        .send(json!({"type": "open", "game_id": game}))
        .await?;
    let view = watcher.until("view", |v| v["type"] == "game").await?;
    assert_eq!(view["seat"], "spectator");
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
            assert_eq!(e["event"]["reveal"]["role"], *role, "{uci}");
        }
    }
    let last = watcher.frames().last().cloned().unwrap_or_default();
    assert_eq!(
        last["outcome"],
        json!({"result": "black", "reason": "checkmate"})
    );
    assert_eq!(last["shuffle"]["layout"], LAYOUT);
    for c in [&white, &black, &watcher] {
        common::leak::check_client(&c.frames(), LAYOUT)?;
    }
    Ok(())
}

async fn a_captured_hidden_identity_reaches_the_capturer_only(w: &Wiring) -> anyhow::Result<()> {
    let mut white = Client::guest(w.gateway(0), "white").await?;
    let mut black = Client::guest(w.gateway(1), "black").await?;
    let game = start_game(&mut white, &mut black, "hidden", "white").await?;
    let mut watcher = Client::guest(w.gateway(0), "watcher").await?;
    watcher
        .send(json!({"type": "open", "game_id": game}))
        .await?;
    watcher.until("view", |v| v["type"] == "game").await?;
    // The d1 "queen" is a rook: it reaches h5 and takes the hidden h7 piece (a pawn).
    let mut version = 0;
    for (i, uci) in ["e2e4", "a7a6", "d1h5", "b7b6", "h5h7"].iter().enumerate() {
        let mover = if i % 2 == 0 { &mut white } else { &mut black };
        version = mover.play(&game, uci).await?;
    }
    let mine = white.event(&game, version).await?;
    let theirs = black.event(&game, version).await?;
    let public = watcher.event(&game, version).await?;
    assert_eq!(mine["event"]["captured_identity"], "pawn", "{mine}");
    for e in [&theirs, &public] {
        assert!(e["event"]["captured_identity"].is_null(), "{e}");
        assert_eq!(e["event"]["captured"]["hidden"], true);
    }
    // A later view of the game carries it for White alone.
    white.send(json!({"type": "open", "game_id": game})).await?;
    let view = white
        .until("view", |v| v["type"] == "game" && v["version"] == version)
        .await?;
    assert_eq!(
        view["game"]["captured_identities"][0]["role"], "pawn",
        "{view}"
    );
    for c in [&white, &black, &watcher] {
        common::leak::check_client(&c.frames(), LAYOUT)?;
    }
    Ok(())
}

async fn a_reconnect_resumes_without_loss_or_doubling(w: &Wiring) -> anyhow::Result<()> {
    let (token, id) = common::guest_token(w.gateway(1)).await?;
    let mut white = Client::guest(w.gateway(0), "white").await?;
    let mut black = Client::with_token(w.gateway(1), "black", &token, &id).await?;
    let game = start_game(&mut white, &mut black, "standard", "white").await?;
    white.play(&game, "e2e4").await?;
    let v4 = black.play(&game, "e7e5").await?;
    black.event(&game, v4).await?;
    black.close().await;
    let v5 = white.play(&game, "g1f3").await?;
    white
        .send(json!({"type": "offer_draw", "id": "o", "game_id": game}))
        .await?;
    let v6 = white.ack("o").await?["version"]
        .as_u64()
        .unwrap_or_default();
    let mut black = Client::with_token(w.gateway(0), "black-again", &token, &id).await?;
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
    let v7 = black.play(&game, "b8c6").await?;
    let e = white.event(&game, v7).await?;
    assert_eq!(e["event"]["uci"], "b8c6");
    Ok(())
}

async fn a_flag_falls_without_a_message(w: &Wiring) -> anyhow::Result<()> {
    let end = common::play_to_the_flag(w.gateway(0), w.gateway(1)).await?;
    assert_eq!(
        end["outcome"],
        json!({"result": "black", "reason": "timeout"})
    );
    assert_eq!(end["clocks"]["white_ms"], 0);
    Ok(())
}

async fn register(addr: SocketAddr, name: &str) -> anyhow::Result<(String, String)> {
    let (status, body) = post(
        addr,
        "/api/register",
        &json!({"username": name, "password": "a long passphrase"}).to_string(),
    )
    .await?;
    anyhow::ensure!(status == 201, "{body}");
    Ok((
        body["token"].as_str().unwrap_or_default().to_owned(),
        body["player"]["id"].as_str().unwrap_or_default().to_owned(),
    ))
}

/// The player's dashboard entry once its standard rating is there (the game is recorded
/// asynchronously after it ends).
async fn rated_player(addr: SocketAddr, id: &str) -> anyhow::Result<Value> {
    let deadline = tokio::time::Instant::now() + common::WAIT;
    loop {
        let (status, body) = get(addr, &format!("/api/players/{id}")).await?;
        let player: Value = serde_json::from_str(&body).unwrap_or_default();
        // Every variant has an entry (1500, RD 350, provisional) until a rated game.
        if status == 200 && player["ratings"]["standard"]["rd"].as_f64() < Some(350.0) {
            return Ok(player);
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "no rating for {id}: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Alice (White) and Bob play a rated standard game to Bob's win by fool's mate; returns
/// their tokens and ids.
async fn play_rated_game(
    addr: SocketAddr,
    other: SocketAddr,
) -> anyhow::Result<[(String, String); 2]> {
    let alice = register(addr, "alice").await?;
    let bob = register(other, "bob").await?;
    let mut white = Client::with_token(addr, "alice", &alice.0, &alice.1).await?;
    let mut black = Client::with_token(other, "bob", &bob.0, &bob.1).await?;
    white.send(json!({"type": "create_board", "id": "c", "variant": "standard", "color": "white", "rated": true})).await?;
    let created = white
        .until("created", |v| v["type"] == "board_created")
        .await?;
    let game = created["game_id"].as_str().unwrap_or_default().to_owned();
    black
        .send(json!({"type": "join_board", "id": "j", "code": created["code"]}))
        .await?;
    black
        .until("joined", |v| v["type"] == "board_joined")
        .await?;
    for (i, uci) in ["f2f3", "e7e5", "g2g4", "d8h4"].iter().enumerate() {
        let mover = if i % 2 == 0 { &mut white } else { &mut black };
        mover.play(&game, uci).await?;
    }
    Ok([alice, bob])
}

fn assert_rated_as_the_maths_says(bob: &Value) {
    let won = rate_game(INITIAL, 0.0, INITIAL, Score::Win);
    let standard = &bob["ratings"]["standard"];
    assert!(
        (standard["rating"].as_f64().unwrap_or_default() - won.rating).abs() < 0.01,
        "{standard}"
    );
}

async fn a_rated_game_shows_in_the_dashboard_with_its_rating_change(
    w: &Wiring,
) -> anyhow::Result<()> {
    let [_, bob] = play_rated_game(w.gateway(0), w.gateway(1)).await?;
    let player = rated_player(w.gateway(1), &bob.1).await?;
    assert_rated_as_the_maths_says(&player);
    let (status, body) = get(w.gateway(0), &format!("/api/players/{}/games", bob.1)).await?;
    assert_eq!(status, 200, "{body}");
    let games: Value = serde_json::from_str(&body)?;
    assert_eq!(games["games"].as_array().map(Vec::len), Some(1), "{games}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_keeps_accounts_results_and_ratings_across_a_restart() -> anyhow::Result<()> {
    let data = std::env::temp_dir().join(format!("frontier-dev-{}", uuid::Uuid::new_v4()));
    let w = Wiring::dev(Some(&data)).await?;
    let [_, bob] = play_rated_game(w.gateway(0), w.gateway(0)).await?;
    let before = rated_player(w.gateway(0), &bob.1).await?;
    w.stop().await?;

    let w = Wiring::dev(Some(&data)).await?;
    let (status, login) = post(
        w.gateway(0),
        "/api/login",
        &json!({"username": "bob", "password": "a long passphrase"}).to_string(),
    )
    .await?;
    assert_eq!(status, 200, "{login}");
    assert_eq!(login["player"]["id"], bob.1.as_str());
    let (status, body) = get(w.gateway(0), &format!("/api/players/{}", bob.1)).await?;
    assert_eq!(status, 200, "{body}");
    let after: Value = serde_json::from_str(&body)?;
    assert_eq!(after["ratings"], before["ratings"]);
    assert_rated_as_the_maths_says(&after);
    // The token issued before the restart is still good (the signing secret is kept).
    Client::with_token(w.gateway(0), "bob-again", &bob.0, &bob.1).await?;
    w.stop().await?;
    let _ = std::fs::remove_dir_all(&data);
    Ok(())
}
