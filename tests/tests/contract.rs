//! Defects found by driving the platform as a client would, each tested through the
//! gateway against the real services: boards aborted while waiting must never stall the
//! rating service; `check` is set on a checking move that also ends the game; and the
//! answers docs/protocol.md promises (ids echoed, close code 1009, JSON HTTP errors, clocks
//! of a waiting board, increments, the last page of games, a claim against a connected
//! opponent).

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use common::{Client, Platform, get, post, start_game, start_timed_game};
use frontier_platform::time::ManualClock;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

async fn register(p: &Platform, name: &str) -> anyhow::Result<Client> {
    let (status, body) = post(
        p.gateways[0],
        "/api/register",
        &json!({"username": name, "password": "a long passphrase"}).to_string(),
    )
    .await?;
    anyhow::ensure!(status == 201, "{body}");
    let token = body["token"].as_str().context("token")?;
    let id = body["player"]["id"].as_str().context("id")?;
    Client::with_token(p.gateways[0], name, token, id).await
}

/// A raw HTTP/1.1 request: status, head (lower-cased) and body.
async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> anyhow::Result<(u16, String, Value)> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .context("status line")?
        .parse()?;
    let value = serde_json::from_str(body.trim()).unwrap_or(Value::String(body.to_owned()));
    Ok((status, head.to_ascii_lowercase(), value))
}

async fn recorded_subscription(p: &Platform) -> anyhow::Result<async_nats::Subscriber> {
    let nats = async_nats::connect(frontier_testkit::nats_url()).await?;
    let ns = frontier_platform::Namespace::new(&p.namespace).map_err(anyhow::Error::msg)?;
    let sub = nats.subscribe(ns.recorded_games_subject()).await?;
    nats.flush().await?;
    frontier_testkit::nats_round_trip(&nats).await;
    Ok(sub)
}

/// Waits for the dashboard to serve a game's PGN.
async fn pgn(p: &Platform, game: &str) -> anyhow::Result<String> {
    let mut sub = recorded_subscription(p).await?;
    loop {
        let (status, body) = get(p.gateways[0], &format!("/api/games/{game}/pgn")).await?;
        if status == 200 {
            return Ok(body);
        }
        tokio::time::timeout(common::WAIT, sub.next())
            .await
            .context("the game is recorded")?;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boards_aborted_while_waiting_never_stall_the_rating_service() -> anyhow::Result<()> {
    // The per-connection message limit is raised: this test is about the rating service.
    let p = Platform::start_with(
        1,
        1,
        None,
        &[],
        &[("--ws-rate", "100000"), ("--ws-burst", "100000")],
    )
    .await?;
    const BOARDS: usize = 1_500;
    const CLIENTS: usize = 3;
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let mut client = Client::guest(p.gateways[0], &format!("aborter{c}")).await?;
        tasks.push(tokio::spawn(async move {
            for i in 0..BOARDS / CLIENTS {
                client
                    .send(json!({"type": "create_board", "id": format!("c{i}"), "variant": "standard", "color": "white"}))
                    .await?;
                let created = client
                    .until("board_created", |v| v["type"] == "board_created")
                    .await?;
                let game = created["game_id"].as_str().context("game")?.to_owned();
                client
                    .send(json!({"type": "abort", "id": format!("a{i}"), "game_id": game}))
                    .await?;
                client.ack(&format!("a{i}")).await?;
                client.discard_unread();
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    // A rated game now is recorded and rated at once.
    let mut recorded = recorded_subscription(&p).await?;
    let mut alice = register(&p, "alice").await?;
    let mut bob = register(&p, "bob").await?;
    alice
        .send(json!({"type": "create_board", "id": "c", "variant": "standard", "color": "white", "rated": true}))
        .await?;
    let created = alice
        .until("board_created", |v| v["type"] == "board_created")
        .await?;
    let code = created["code"].as_str().context("code")?;
    let game = created["game_id"].as_str().context("game")?.to_owned();
    bob.send(json!({"type": "join_board", "id": "j", "code": code}))
        .await?;
    bob.until("board_joined", |v| v["type"] == "board_joined")
        .await?;
    alice.play(&game, "e2e4").await?;
    bob.play(&game, "e7e5").await?;
    alice
        .send(json!({"type": "resign", "id": "r", "game_id": game}))
        .await?;
    alice.ack("r").await?;
    let ended = Instant::now();
    let notice = tokio::time::timeout(common::WAIT, recorded.next())
        .await?
        .context("recorded")?;
    let notice: Value = serde_json::from_slice(&notice.payload)?;
    eprintln!(
        "the rated game was recorded {:?} after it ended, behind {BOARDS} aborted boards",
        ended.elapsed()
    );
    assert_eq!(notice["game_id"], game.as_str());
    assert_eq!(notice["rated"], true);
    // Nothing was published for the boards, so nothing was refused or redelivered: the
    // stream holds the one game, and the consumer has nothing pending.
    let nats = async_nats::connect(frontier_testkit::nats_url()).await?;
    let js = async_nats::jetstream::new(nats);
    let ns = frontier_platform::Namespace::new(&p.namespace).map_err(anyhow::Error::msg)?;
    let mut stream = js.get_stream(ns.finished_games_stream()).await?;
    assert_eq!(stream.info().await?.state.messages, 1);
    let mut consumer: async_nats::jetstream::consumer::PullConsumer = js
        .get_consumer_from_stream("rating", ns.finished_games_stream())
        .await?;
    let info = consumer.info().await?;
    assert_eq!(
        (info.num_ack_pending, info.num_redelivered, info.num_pending),
        (0, 0, 0)
    );
    assert_eq!(p.rating.snapshot(), [1, 0, 0, 0, 0]);
    // The dashboard lists the game and no board.
    let (status, body) = get(
        p.gateways[0],
        &format!("/api/players/{}/games", alice.player_id),
    )
    .await?;
    assert_eq!(status, 200);
    let page: Value = serde_json::from_str(&body)?;
    assert_eq!(page["games"].as_array().map(Vec::len), Some(1));
    p.stop().await;
    Ok(())
}

const STANDARD_CHECK_ENDS_BY_MATERIAL: &str = "8/8/7K/8/3k4/2p5/3B4/8 w - - 4 155";
const ATOMIC_CHECK_ENDS_BY_FIFTY_MOVES: &str = "8/8/p4R2/Pb1K1p2/1k3P2/8/8/8 b - - 99 121";

/// Plays `uci` by `mover` in a fresh game of `variant` and returns the move event.
async fn checking_move(
    p: &Platform,
    variant: &str,
    mover_color: &str,
    uci: &str,
) -> anyhow::Result<(String, Value)> {
    let mut white = Client::guest(p.gateways[0], "white").await?;
    let mut black = Client::guest(p.gateways[0], "black").await?;
    let game = start_game(&mut white, &mut black, variant, "white").await?;
    let mover = if mover_color == "white" {
        &mut white
    } else {
        &mut black
    };
    let version = mover.play(&game, uci).await?;
    let event = mover.event(&game, version).await?;
    Ok((game, event))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checking_move_that_ends_the_game_says_check() -> anyhow::Result<()> {
    let p = Platform::start_with(
        1,
        1,
        None,
        &[
            "--test-start-fen",
            &format!("standard:{STANDARD_CHECK_ENDS_BY_MATERIAL}"),
            "--test-start-fen",
            &format!("atomic:{ATOMIC_CHECK_ENDS_BY_FIFTY_MOVES}"),
        ],
        &[],
    )
    .await?;
    // Standard: the bishop takes the last pawn with check; only the bishop is left.
    let (standard, event) = checking_move(&p, "standard", "white", "d2c3").await?;
    assert_eq!(event["event"]["check"], true, "{event}");
    assert_eq!(
        event["outcome"]["reason"], "insufficient-material",
        "{event}"
    );
    // Atomic: the hundredth half-move without capture or pawn move gives check.
    let (atomic, event) = checking_move(&p, "atomic", "black", "b5c6").await?;
    assert_eq!(event["event"]["check"], true, "{event}");
    assert_eq!(event["outcome"]["reason"], "fifty-moves", "{event}");
    // The PGN's SAN carries the `+` too.
    let text = pgn(&p, &standard).await?;
    assert!(text.contains("Bxc3+"), "{text}");
    let text = pgn(&p, &atomic).await?;
    assert!(text.contains("Bc6+"), "{text}");
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_echoes_the_id_and_game_id_it_could_read() -> anyhow::Result<()> {
    let p = Platform::start_with(
        1,
        1,
        None,
        &[],
        &[("--ws-rate", "0.001"), ("--ws-burst", "12")],
    )
    .await?;
    let gw = p.gateways[0];
    let (status, body) = post(gw, "/api/guest", "").await?;
    anyhow::ensure!(status == 201, "{body}");
    let token = body["token"].as_str().context("token")?;
    let mut c = Client::connect(gw, "tagger").await?;
    // A bad token first: the error names the auth message.
    c.send(json!({"type": "auth", "token": "nonsense", "id": "a0"}))
        .await?;
    let e = c.error_for("a0").await?;
    assert_eq!(e["code"], "token_malformed");
    // `auth` may carry an id like every message; `authenticated` echoes it.
    c.send(json!({"type": "auth", "token": token, "id": "a1"}))
        .await?;
    let ok = c
        .until("authenticated", |v| v["type"] == "authenticated")
        .await?;
    assert_eq!(ok["id"], "a1", "{ok}");
    let game = "00000000-0000-7000-8000-000000000000";
    for (frame, id, code) in [
        (
            json!({"type": "teleport", "id": "x7"}).to_string(),
            "x7",
            "unknown_type",
        ),
        (
            json!({"type": "move", "id": "m1", "game_id": game}).to_string(),
            "m1",
            "bad_field",
        ),
        (
            json!({"type": "move", "id": "m2", "game_id": game, "uci": 5}).to_string(),
            "m2",
            "bad_field",
        ),
        (
            json!({"type": "claim_victory", "id": "v1", "game_id": game, "extra": 1}).to_string(),
            "v1",
            "bad_field",
        ),
        (
            json!({"type": "ping", "id": "big", "game_id": game, "pad": "x".repeat(3000)})
                .to_string(),
            "big",
            "too_large",
        ),
    ] {
        c.send_raw(frame).await?;
        let e = c.error_for(id).await?;
        assert_eq!(e["code"], code, "{e}");
        if id != "x7" {
            assert_eq!(e["game_id"], game, "{e}");
        }
    }
    // Past the burst (12 frames, barely refilled): dropped, and said so with its id.
    for i in 0..10 {
        c.send(json!({"type": "ping", "id": format!("p{i}"), "game_id": game}))
            .await?;
    }
    let limited = c
        .until("rate_limited", |v| v["code"] == "rate_limited")
        .await?;
    assert!(
        limited["id"].as_str().is_some_and(|id| id.starts_with('p')),
        "{limited}"
    );
    assert_eq!(limited["game_id"], game);
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frame_over_64_kib_closes_with_1009_cleanly() -> anyhow::Result<()> {
    let p = Platform::start(1, 1, None).await?;
    let mut c = Client::guest(p.gateways[0], "big").await?;
    c.send_raw(format!(
        r#"{{"type":"ping","id":"{}"}}"#,
        "x".repeat(100 * 1024)
    ))
    .await?;
    let close = loop {
        match c.next_raw().await?.context("a close frame first")? {
            Ok(Message::Close(frame)) => break frame,
            Ok(_) => continue,
            Err(e) => anyhow::bail!("the connection broke before a close frame: {e}"),
        }
    };
    let close = close.context("the close frame has a status code")?;
    assert_eq!(u16::from(close.code), 1009, "{close:?}");
    // Then the connection ends cleanly: no reset, no error.
    match c.next_raw().await? {
        None | Some(Err(tokio_tungstenite::tungstenite::Error::ConnectionClosed)) => {}
        other => anyhow::bail!("expected a clean end, got {other:?}"),
    }
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_http_error_has_the_documented_json_shape() -> anyhow::Result<()> {
    let p = Platform::start(1, 1, None).await?;
    let gw = p.gateways[0];
    let json_type = "Content-Type: application/json\r\n";
    let big = json!({"username": "x".repeat(5000), "password": "y"}).to_string();
    let cases = [
        (
            "POST",
            "/api/login",
            json_type,
            big.as_str(),
            413,
            "too_large",
        ),
        ("DELETE", "/api/guest", "", "", 405, "method_not_allowed"),
        ("GET", "/api/login", "", "", 405, "method_not_allowed"),
        ("GET", "/api/nowhere", "", "", 404, "not_found"),
        ("POST", "/api/login", json_type, "{", 400, "bad_json"),
        (
            "GET",
            "/api/players/00000000-0000-7000-8000-000000000000/games?limit=abc",
            "",
            "",
            400,
            "bad_field",
        ),
    ];
    for (method, path, headers, body, status, code) in cases {
        let (got, head, value) = request(gw, method, path, headers, body).await?;
        assert_eq!(got, status, "{method} {path}: {value}");
        assert!(
            head.contains("content-type: application/json"),
            "{method} {path}: {head}"
        );
        assert_eq!(value["error"]["code"], code, "{method} {path}: {value}");
        assert!(value["error"]["message"].is_string(), "{value}");
        if status == 405 {
            assert!(head.contains("allow:"), "405 keeps Allow: {head}");
        }
    }
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_board_shows_full_clocks_while_it_waits() -> anyhow::Result<()> {
    let p = Platform::start(1, 1, None).await?;
    let mut creator = Client::guest(p.gateways[0], "creator").await?;
    creator
        .send(json!({"type": "create_board", "id": "c", "variant": "standard", "color": "white", "clock": {"minutes": 5, "increment": 3}}))
        .await?;
    let created = creator
        .until("board_created", |v| v["type"] == "board_created")
        .await?;
    let game = created["game_id"].as_str().context("game")?.to_owned();
    let full = |clocks: &Value| {
        clocks["white_ms"] == 300_000
            && clocks["black_ms"] == 300_000
            && clocks["running"].is_null()
            && clocks["at"].is_u64()
    };
    let view = creator
        .until("game frame", |v| {
            v["type"] == "game" && v["game_id"] == game.as_str()
        })
        .await?;
    assert_eq!(view["game"]["status"], "waiting");
    assert!(full(&view["game"]["clocks"]), "{view}");
    // The `created` event (version 1), as a client resuming from 0 gets it.
    let mut watcher = Client::guest(p.gateways[0], "watcher").await?;
    watcher
        .send(json!({"type": "open", "game_id": game, "after_version": 0}))
        .await?;
    let event = watcher.event(&game, 1).await?;
    assert_eq!(event["event"]["kind"], "created");
    assert!(full(&event["clocks"]), "{event}");
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn increments_start_with_the_clocks_after_each_sides_first_move() -> anyhow::Result<()> {
    // game-session reads a clock that stands still until the test moves it: each side
    // thinks exactly as long as the test says, however slowly the machine runs the test
    // (on a loaded machine the real time between two moves exceeded the lag quota).
    let clock = Arc::new(ManualClock::at(1_800_000_000_000));
    let p = Platform::start_with_session_clock(1, 1, clock.clone()).await?;
    let mut white = Client::guest(p.gateways[0], "white").await?;
    let mut black = Client::guest(p.gateways[0], "black").await?;
    let clock_spec = json!({"minutes": 5, "increment": 3});
    let game = start_timed_game(&mut white, &mut black, "standard", "white", clock_spec).await?;
    // Each side thinks for 2 s before each move and says so (`move_time_ms`), so no lag is
    // given back: a running clock loses exactly the 2 s.
    let mut readings = Vec::new();
    for (i, (side, uci)) in [
        ("white", "e2e4"),
        ("black", "e7e5"),
        ("white", "g1f3"),
        ("black", "b8c6"),
    ]
    .into_iter()
    .enumerate()
    {
        let mover = if side == "white" {
            &mut white
        } else {
            &mut black
        };
        clock.advance(2_000);
        let id = format!("m{i}");
        mover
            .send(json!({"type": "move", "id": id, "game_id": game, "uci": uci, "move_time_ms": 2_000}))
            .await?;
        let version = mover.ack(&id).await?["version"]
            .as_u64()
            .context("version")?;
        let event = mover.event(&game, version).await?;
        readings.push((
            event["clocks"]["white_ms"].as_u64().context("white")?,
            event["clocks"]["black_ms"].as_u64().context("black")?,
        ));
    }
    // Each side's first move costs no time and earns no increment (the clocks were not
    // running yet, as on lichess); from then on, each move costs its 2 s and adds 3 s.
    assert_eq!(
        readings,
        [
            (300_000, 300_000),
            (300_000, 300_000),
            (301_000, 300_000),
            (301_000, 301_000)
        ]
    );
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_against_a_connected_opponent_says_it_is_connected() -> anyhow::Result<()> {
    let p = Platform::start(1, 1, None).await?;
    let mut white = Client::guest(p.gateways[0], "white").await?;
    let mut black = Client::guest(p.gateways[0], "black").await?;
    let game = start_game(&mut white, &mut black, "standard", "white").await?;
    white.play(&game, "e2e4").await?;
    // Black follows the game, so its gateway reports it present: wait until game-session
    // has that report.
    let redis = redis::Client::open(frontier_testkit::redis_url())?;
    let mut conn = redis.get_multiplexed_async_connection().await?;
    let ns = frontier_platform::Namespace::new(&p.namespace).map_err(anyhow::Error::msg)?;
    let key = ns.presence_key(&game.parse()?);
    let deadline = Instant::now() + common::WAIT;
    loop {
        let seen: Option<i64> = redis::cmd("HGET")
            .arg(&key)
            .arg("black")
            .query_async(&mut conn)
            .await?;
        if seen.is_some() {
            break;
        }
        anyhow::ensure!(Instant::now() < deadline, "black's presence never arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    white
        .send(json!({"type": "claim_victory", "id": "v", "game_id": game}))
        .await?;
    let e = white.error_for("v").await?;
    assert_eq!(e["code"], "cannot_claim");
    let message = e["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("your opponent is connected"),
        "{message}"
    );
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_serves_the_web_client_with_types_and_revalidation() -> anyhow::Result<()> {
    let p = Platform::start(1, 1, None).await?;
    let gw = p.gateways[0];
    // The page, at `/` and at an invite link.
    for path in ["/", "/join/K7QX2M"] {
        let (status, head, body) = request(gw, "GET", path, "", "").await?;
        assert_eq!(status, 200, "{path}");
        assert!(
            head.contains("content-type: text/html; charset=utf-8"),
            "{head}"
        );
        assert!(head.contains("cache-control: no-cache"), "{head}");
        assert!(
            body.as_str().is_some_and(|b| b.contains("/app/js/main.js")),
            "{path}: {body}"
        );
    }
    // A module, with its type and an ETag; revalidating with it answers 304, empty.
    let (status, head, _) = request(gw, "GET", "/app/js/main.js", "", "").await?;
    assert_eq!(status, 200);
    assert!(
        head.contains("content-type: text/javascript; charset=utf-8"),
        "{head}"
    );
    let etag = head
        .lines()
        .find_map(|l| l.strip_prefix("etag: "))
        .context("an etag")?
        .trim()
        .to_owned();
    let (status, head, body) = request(
        gw,
        "GET",
        "/app/js/main.js",
        &format!("If-None-Match: {etag}\r\n"),
        "",
    )
    .await?;
    assert_eq!(status, 304, "{head}");
    assert_eq!(body, Value::String(String::new()));
    let (status, head, _) = request(gw, "GET", "/app/app.css", "", "").await?;
    assert_eq!(status, 200);
    assert!(
        head.contains("content-type: text/css; charset=utf-8"),
        "{head}"
    );
    // What the client does not have, and the API's unknown paths, stay JSON 404s.
    for path in [
        "/app/nothing.js",
        "/app/../Cargo.toml",
        "/api/nowhere",
        "/nowhere",
    ] {
        let (status, head, body) = request(gw, "GET", path, "", "").await?;
        assert_eq!(status, 404, "{path}");
        assert!(
            head.contains("content-type: application/json"),
            "{path}: {head}"
        );
        assert_eq!(body["error"]["code"], "not_found", "{path}");
    }
    p.stop().await;
    Ok(())
}
