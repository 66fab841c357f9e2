//! Abuse limits (issue #16): each limit refuses the request past its budget with the
//! documented answer and admits again once the window has moved on; limits kept in Redis
//! hold across gateways; forwarding headers count only from trusted proxies; a login flood
//! is refused while other players log in and play; guest expiry removes only what it should.
//!
//! Windows are ~1 s, set per test; a test that must see a window move on waits exactly the
//! `retry_after_ms` the refusal announced (the server's own promise), never a guess.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use common::{Client, Platform, Response, post_with, start_game};
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// Checks a refusal is the documented one: 429 `rate_limited`, `Retry-After` in whole
/// seconds, `retry_after_ms` in the body; returns the wait it announced.
fn assert_limited(r: &Response, what: &str) -> Duration {
    assert_eq!(r.status, 429, "{what}: {r:?}");
    assert_eq!(r.body["error"]["code"], "rate_limited", "{what}: {r:?}");
    assert!(r.body["error"]["message"].is_string(), "{what}: {r:?}");
    let ms = r.body["error"]["retry_after_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("{what}: retry_after_ms in {r:?}"));
    assert!(ms >= 1, "{what}: {r:?}");
    let header: u64 = r
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{what}: Retry-After in {r:?}"));
    assert_eq!(header, ms.div_ceil(1000), "{what}: header rounds up");
    Duration::from_millis(ms)
}

async fn guest(p: &Platform, gw: usize, headers: &[(&str, &str)]) -> anyhow::Result<Response> {
    post_with(p.gateways[gw], "/api/guest", headers, "").await
}

fn credentials(username: &str, password: &str) -> String {
    json!({"username": username, "password": password}).to_string()
}

async fn login(
    p: &Platform,
    gw: usize,
    headers: &[(&str, &str)],
    username: &str,
    password: &str,
) -> anyhow::Result<Response> {
    post_with(
        p.gateways[gw],
        "/api/login",
        headers,
        &credentials(username, password),
    )
    .await
}

async fn register(
    p: &Platform,
    gw: usize,
    headers: &[(&str, &str)],
    username: &str,
) -> anyhow::Result<Response> {
    post_with(
        p.gateways[gw],
        "/api/register",
        headers,
        &credentials(username, "correct horse battery"),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_creation_is_limited_per_address_across_gateways() -> anyhow::Result<()> {
    let p = Platform::start_with(2, 1, None, &[], &[("--guest-limit", "3/1s")]).await?;
    // Two on one gateway, one on the other: one budget.
    for gw in [0, 0, 1] {
        assert_eq!(guest(&p, gw, &[]).await?.status, 201);
    }
    let wait = assert_limited(&guest(&p, 1, &[]).await?, "fourth guest");
    assert!(
        wait <= Duration::from_secs(1),
        "within the window: {wait:?}"
    );
    assert_limited(&guest(&p, 0, &[]).await?, "fourth guest, other gateway");
    tokio::time::sleep(wait).await;
    assert_eq!(
        guest(&p, 0, &[]).await?.status,
        201,
        "admitted again after the window"
    );
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_is_limited_per_address() -> anyhow::Result<()> {
    let p = Platform::start_with(2, 1, None, &[], &[("--register-limit", "2/1s")]).await?;
    // Every attempt counts, valid or not (refused ones cost no hashing, so the window is
    // filled faster than a debug-build Argon2id hash).
    let weak = |name: &str| credentials(name, "short");
    for gw in [0, 1] {
        let r = post_with(p.gateways[gw], "/api/register", &[], &weak("ann")).await?;
        assert_eq!(r.status, 422, "{r:?}");
    }
    let wait = assert_limited(&register(&p, 0, &[], "cat").await?, "third registration");
    tokio::time::sleep(wait).await;
    assert_eq!(register(&p, 1, &[], "cat").await?.status, 201);
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logins_are_limited_per_address() -> anyhow::Result<()> {
    let p = Platform::start_with(2, 1, None, &[], &[("--login-limit", "3/1s")]).await?;
    assert_eq!(register(&p, 0, &[], "dora").await?.status, 201);
    // Every attempt counts, across gateways (unknown names cost no hashing, so the
    // window is filled faster than a debug-build Argon2id hash).
    for (gw, name) in [(0, "nobody"), (1, "noone"), (0, "nemo")] {
        assert_eq!(
            login(&p, gw, &[], name, "wrong password!").await?.status,
            401
        );
    }
    let wait = assert_limited(
        &login(&p, 1, &[], "dora", "correct horse battery").await?,
        "fourth login",
    );
    tokio::time::sleep(wait).await;
    assert_eq!(
        login(&p, 1, &[], "dora", "correct horse battery")
            .await?
            .status,
        200
    );
    p.stop().await;
    Ok(())
}

/// One raw HTTP/1.1 request from `source` (a loopback address of its own): the status
/// line and whatever followed, as the gateway wrote it before closing.
async fn raw_request(
    source: std::net::IpAddr,
    gateway: std::net::SocketAddr,
    request: &str,
) -> anyhow::Result<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(std::net::SocketAddr::new(source, 0))?;
    let mut tcp = socket.connect(gateway).await?;
    // The refusal may come before the request is sent; a reset then is part of it.
    let _ = tcp.write_all(request.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(common::WAIT, tcp.read_to_end(&mut answer)).await;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

/// An address whose login window is full is refused at accept on the gateway that saw
/// it full — any request, a WebSocket upgrade included, answered 429 before it is read —
/// while another address is served; once the window frees, the address is served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_over_its_limit_is_refused_at_accept_until_its_window_frees()
-> anyhow::Result<()> {
    let p = Platform::start_with(1, 1, None, &[], &[("--login-limit", "2/2s")]).await?;
    let gw = p.gateways[0];
    let flooder: std::net::IpAddr = "127.0.0.1".parse()?;
    let other: std::net::IpAddr = "127.0.0.2".parse()?;
    let health = format!(
        "GET /api/leaderboard?variant=standard HTTP/1.1\r\nHost: {gw}\r\nConnection: close\r\n\r\n"
    );
    for _ in 0..2 {
        assert_eq!(
            login(&p, 0, &[], "nobody", "wrong password!").await?.status,
            401
        );
    }
    let wait = assert_limited(
        &login(&p, 0, &[], "nobody", "wrong password!").await?,
        "third login",
    );
    // Now every new connection from that address: refused before its request is read.
    let upgrade = format!(
        "GET /ws/v1 HTTP/1.1\r\nHost: {gw}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    for request in [&health, &upgrade] {
        let answer = raw_request(flooder, gw, request).await?;
        assert!(answer.starts_with("HTTP/1.1 429 "), "{answer}");
        assert!(answer.contains(r#""code":"rate_limited""#), "{answer}");
        let body = answer.split("\r\n\r\n").nth(1).context("a body")?;
        let length: usize = answer
            .lines()
            .find_map(|l| l.strip_prefix("Content-Length: "))
            .context("a length")?
            .parse()?;
        assert_eq!(body.len(), length, "{answer}");
        serde_json::from_str::<Value>(body)?;
    }
    // Another address is served.
    let answer = raw_request(other, gw, &health).await?;
    assert!(
        answer.starts_with("HTTP/1.1 503 ") || answer.starts_with("HTTP/1.1 200 "),
        "{answer}"
    );
    // Once the window frees, the address is served again.
    tokio::time::sleep(wait).await;
    let answer = raw_request(flooder, gw, &health).await?;
    assert!(!answer.starts_with("HTTP/1.1 429 "), "{answer}");
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_logins_slow_down_one_username_with_growing_delays() -> anyhow::Result<()> {
    let p = Platform::start_with(
        2,
        1,
        None,
        &[],
        &[
            ("--login-free-failures", "2"),
            ("--login-failure-delay", "400ms"),
            ("--login-failure-max-delay", "5s"),
        ],
    )
    .await?;
    assert_eq!(register(&p, 0, &[], "erin").await?.status, 201);
    assert_eq!(register(&p, 0, &[], "fred").await?.status, 201);
    // Two free failures, then the third attempt is let through and fails.
    for gw in [0, 1, 0] {
        assert_eq!(
            login(&p, gw, &[], "ERIN", "wrong password!").await?.status,
            401
        );
    }
    // Now each attempt waits: even the right password (the owner waits, briefly).
    let first = assert_limited(
        &login(&p, 1, &[], "erin", "correct horse battery").await?,
        "after the third failure",
    );
    assert!(first <= Duration::from_millis(400), "{first:?}");
    // Another username is not affected.
    assert_eq!(
        login(&p, 1, &[], "fred", "correct horse battery")
            .await?
            .status,
        200
    );
    tokio::time::sleep(first).await;
    assert_eq!(
        login(&p, 0, &[], "erin", "wrong password!").await?.status,
        401
    );
    let second = assert_limited(
        &login(&p, 0, &[], "erin", "wrong password!").await?,
        "after the fourth failure",
    );
    assert!(
        second > Duration::from_millis(400) && second <= Duration::from_millis(800),
        "the delay doubles: {second:?}"
    );
    tokio::time::sleep(second).await;
    // The owner gets in, which forgets the failures: a typo is answered at once.
    assert_eq!(
        login(&p, 1, &[], "erin", "correct horse battery")
            .await?
            .status,
        200
    );
    assert_eq!(
        login(&p, 1, &[], "erin", "wrong password!").await?.status,
        401
    );
    assert_eq!(
        login(&p, 0, &[], "erin", "correct horse battery")
            .await?
            .status,
        200
    );
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarding_headers_are_honoured_only_from_trusted_proxies() -> anyhow::Result<()> {
    let flags = [("--guest-limit", "2/1m")];
    // Not trusted: the header is ignored, every request counts as 127.0.0.1.
    let p = Platform::start_with(1, 1, None, &[], &flags).await?;
    for ip in ["203.0.113.1", "203.0.113.2"] {
        assert_eq!(guest(&p, 0, &[("X-Forwarded-For", ip)]).await?.status, 201);
    }
    assert_limited(
        &guest(&p, 0, &[("X-Forwarded-For", "203.0.113.3")]).await?,
        "untrusted peer, new forwarded address",
    );
    p.stop().await;

    // 127.0.0.1 trusted: each forwarded address has its own budget.
    let p = Platform::start_with(
        1,
        1,
        None,
        &[],
        &[flags[0], ("--trusted-proxies", "10.0.0.0/8,127.0.0.1/32")],
    )
    .await?;
    for ip in ["203.0.113.1", "203.0.113.2", "203.0.113.3"] {
        assert_eq!(guest(&p, 0, &[("X-Forwarded-For", ip)]).await?.status, 201);
    }
    // RFC 7239 too; a forged leftmost entry does not help (the proxy's own entry counts).
    assert_eq!(
        guest(&p, 0, &[("Forwarded", "for=203.0.113.1")])
            .await?
            .status,
        201
    );
    assert_limited(
        &guest(&p, 0, &[("X-Forwarded-For", "198.51.100.9, 203.0.113.1")]).await?,
        "third from 203.0.113.1",
    );
    // And the proxy's own requests without a header count as the proxy.
    for _ in 0..2 {
        assert_eq!(guest(&p, 0, &[]).await?.status, 201);
    }
    assert_limited(&guest(&p, 0, &[]).await?, "the proxy itself");
    p.stop().await;
    Ok(())
}

/// Connects without the harness's welcome check: the first frame and, if the server
/// closed, its close code.
async fn raw_connect(addr: std::net::SocketAddr) -> anyhow::Result<(Value, Option<u16>)> {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws/v1")).await?;
    let mut first = Value::Null;
    loop {
        let frame = tokio::time::timeout(common::WAIT, ws.next())
            .await
            .context("a frame")?;
        match frame {
            Some(Ok(Message::Text(t))) => {
                if first.is_null() {
                    first = serde_json::from_str(&t)?;
                    if first["type"] == "welcome" {
                        return Ok((first, None));
                    }
                }
            }
            Some(Ok(Message::Close(c))) => return Ok((first, c.map(|c| u16::from(c.code)))),
            Some(Ok(_)) => {}
            Some(Err(_)) | None => return Ok((first, None)),
        }
    }
}

fn assert_limited_frame(frame: &Value, what: &str) -> Duration {
    assert_eq!(frame["type"], "error", "{what}: {frame}");
    assert_eq!(frame["code"], "rate_limited", "{what}: {frame}");
    let ms = frame["retry_after_ms"]
        .as_u64()
        .unwrap_or_else(|| panic!("{what}: retry_after_ms in {frame}"));
    Duration::from_millis(ms)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_connections_are_limited_per_address_across_gateways() -> anyhow::Result<()> {
    let p = Platform::start_with(2, 1, None, &[], &[("--ws-per-address", "3")]).await?;
    let a = Client::connect(p.gateways[0], "a").await?;
    let _b = Client::connect(p.gateways[1], "b").await?;
    let _c = Client::connect(p.gateways[0], "c").await?;
    let (frame, close) = raw_connect(p.gateways[1]).await?;
    assert_limited_frame(&frame, "fourth connection");
    assert_eq!(close, Some(4029));
    // Closing one frees its slot (once its gateway has seen the close).
    a.close().await;
    let deadline = tokio::time::Instant::now() + common::WAIT;
    loop {
        let (frame, close) = raw_connect(p.gateways[1]).await?;
        if frame["type"] == "welcome" {
            break;
        }
        assert_eq!(close, Some(4029));
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the slot was not freed"
        );
        tokio::time::sleep(assert_limited_frame(&frame, "retry")).await;
    }
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_connections_are_limited_per_player_across_gateways() -> anyhow::Result<()> {
    let p = Platform::start_with(2, 1, None, &[], &[("--ws-per-player", "2")]).await?;
    let (token, id) = common::guest_token(p.gateways[0]).await?;
    let _one = Client::with_token(p.gateways[0], "one", &token, &id).await?;
    let _two = Client::with_token(p.gateways[1], "two", &token, &id).await?;
    let mut three = Client::connect(p.gateways[0], "three").await?;
    three.send(json!({"type": "auth", "token": token})).await?;
    let frame = three.next().await?;
    assert_limited_frame(&frame, "third connection of one player");
    let closed = three.next().await.expect_err("closed");
    assert!(closed.to_string().contains("4029"), "{closed:#}");
    // Another player from the same address is not affected.
    Client::guest(p.gateways[1], "other").await?;
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_gateways_connection_slots_expire_with_their_lease() -> anyhow::Result<()> {
    let p = Platform::start_with(
        1,
        1,
        None,
        &[],
        &[("--ws-per-player", "1"), ("--ws-lease", "1s")],
    )
    .await?;
    let (token, id) = common::guest_token(p.gateways[0]).await?;
    // A connection held by a gateway that crashed: its lease is never refreshed.
    let redis = redis::Client::open(frontier_testkit::redis_url())?;
    let mut conn = redis.get_multiplexed_async_connection().await?;
    let ns = frontier_platform::Namespace::new(&p.namespace).map_err(anyhow::Error::msg)?;
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut conn).await?;
    let now_ms = secs * 1000 + micros / 1000;
    let _: i64 = redis::cmd("ZADD")
        .arg(ns.connections_key("player", &id))
        .arg(now_ms + 1000)
        .arg("crashed-gateway-connection")
        .query_async(&mut conn)
        .await?;
    let mut refused = Client::connect(p.gateways[0], "refused").await?;
    refused
        .send(json!({"type": "auth", "token": token}))
        .await?;
    let wait = assert_limited_frame(&refused.next().await?, "slot held by the dead connection");
    let deadline = tokio::time::Instant::now() + common::WAIT;
    let mut wait = wait;
    let _live = loop {
        tokio::time::sleep(wait).await;
        match Client::with_token(p.gateways[0], "after", &token, &id).await {
            Ok(client) => break client,
            Err(e) => {
                anyhow::ensure!(
                    tokio::time::Instant::now() < deadline,
                    "the dead slot never expired: {e:#}"
                );
                wait = Duration::from_millis(200);
            }
        }
    };
    // A live connection's lease is refreshed: after twice the lease (nothing to await
    // here but time) its slot is still taken.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut second = Client::connect(p.gateways[0], "second").await?;
    second.send(json!({"type": "auth", "token": token})).await?;
    assert_limited_frame(&second.next().await?, "the live connection keeps its slot");
    p.stop().await;
    Ok(())
}

async fn create(client: &mut Client, id: &str) -> anyhow::Result<Value> {
    client
        .send(json!({"type": "create_board", "id": id, "variant": "standard", "color": "white"}))
        .await?;
    client
        .until(&format!("answer to {id}"), |v| {
            v["id"] == id && (v["type"] == "board_created" || v["type"] == "error")
        })
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boards_created_per_player_are_limited() -> anyhow::Result<()> {
    let p = Platform::start_with(2, 1, None, &[], &[("--board-limit", "3/1s")]).await?;
    let (token, id) = common::guest_token(p.gateways[0]).await?;
    let mut a = Client::with_token(p.gateways[0], "a", &token, &id).await?;
    let mut b = Client::with_token(p.gateways[1], "b", &token, &id).await?;
    assert_eq!(create(&mut a, "1").await?["type"], "board_created");
    assert_eq!(create(&mut b, "2").await?["type"], "board_created");
    assert_eq!(create(&mut a, "3").await?["type"], "board_created");
    let refused = create(&mut b, "4").await?;
    let wait = assert_limited_frame(&refused, "fourth board within the window");
    tokio::time::sleep(wait).await;
    assert_eq!(create(&mut b, "5").await?["type"], "board_created");
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_boards_per_player_are_capped_until_one_starts_or_ends() -> anyhow::Result<()> {
    let p = Platform::start_with(2, 1, None, &[], &[("--waiting-boards", "2")]).await?;
    let (token, id) = common::guest_token(p.gateways[0]).await?;
    let mut a = Client::with_token(p.gateways[0], "a", &token, &id).await?;
    let mut b = Client::with_token(p.gateways[1], "b", &token, &id).await?;
    let first = create(&mut a, "1").await?;
    let second = create(&mut b, "2").await?;
    assert_eq!(second["type"], "board_created");
    // A third is refused, on either gateway: refuse-new, nothing is cancelled.
    for (client, n) in [(&mut a, "3"), (&mut b, "3b")] {
        let refused = create(client, n).await?;
        assert_eq!(refused["type"], "error", "{refused}");
        assert_eq!(refused["code"], "too_many_boards", "{refused}");
    }
    // Someone joins the first board: it no longer waits.
    let mut joiner = Client::guest(p.gateways[1], "joiner").await?;
    joiner
        .send(json!({"type": "join_board", "id": "j", "code": first["code"]}))
        .await?;
    joiner
        .until("board_joined", |v| v["type"] == "board_joined")
        .await?;
    let third = create(&mut a, "4").await?;
    assert_eq!(third["type"], "board_created", "{third}");
    assert_eq!(create(&mut b, "5").await?["code"], "too_many_boards");
    // Aborting a waiting board frees its slot too.
    b.send(json!({"type": "abort", "id": "x", "game_id": second["game_id"]}))
        .await?;
    b.ack("x").await?;
    assert_eq!(create(&mut b, "6").await?["type"], "board_created");
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_following_its_most_games_is_refused_a_new_board_and_none_is_made()
-> anyhow::Result<()> {
    let most = frontier_gateway::ws::MAX_FOLLOWS;
    let waiting = (most + 1).to_string();
    let p = Platform::start_with(
        1,
        1,
        None,
        &[],
        &[
            ("--waiting-boards", waiting.as_str()),
            ("--board-limit", "100/1m"),
            ("--ws-rate", "1000"),
        ],
    )
    .await?;
    let mut a = Client::guest(p.gateways[0], "a").await?;
    let mut boards = Vec::new();
    for n in 0..most {
        let created = create(&mut a, &format!("b{n}")).await?;
        assert_eq!(created["type"], "board_created", "board {n}: {created}");
        boards.push(created["game_id"].as_str().unwrap_or_default().to_owned());
    }
    // The connection follows `most` waiting boards: one more is refused before it is made.
    let refused = create(&mut a, "over").await?;
    assert_eq!(refused["type"], "error", "{refused}");
    assert_eq!(refused["code"], "too_many_games", "{refused}");
    a.send(json!({"type": "play_computer", "id": "pc", "variant": "standard", "level": "easy", "color": "white"}))
        .await?;
    assert_eq!(a.error_for("pc").await?["code"], "too_many_games");
    // Closing one frees a place. Had the refused board been made, the player would now
    // have `most + 1` boards waiting, the cap: the next one would be `too_many_boards`.
    a.send(json!({"type": "close", "id": "x", "game_id": boards[0]}))
        .await?;
    a.until("closed", |v| v["type"] == "closed" && v["id"] == "x")
        .await?;
    let next = create(&mut a, "next").await?;
    assert_eq!(next["type"], "board_created", "{next}");
    p.stop().await;
    Ok(())
}

/// A short legal opening, twelve plies.
const OPENING: [&str; 12] = [
    "e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "d2d3", "f8c5", "c2c3", "d7d6", "b1d2", "a7a6",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_flood_is_refused_while_others_log_in_and_play() -> anyhow::Result<()> {
    // Production defaults for logins and hashing; the harness's proxy is trusted so that
    // the attacker and the honest player have different addresses.
    let p = Platform::start_with(
        1,
        1,
        None,
        &[],
        &[
            ("--trusted-proxies", "127.0.0.1/32"),
            ("--login-limit", "20/1m"),
            ("--login-free-failures", "5"),
            ("--hash-threads", "1"),
            ("--hash-queue", "4"),
        ],
    )
    .await?;
    let gw = p.gateways[0];
    let honest = [("X-Forwarded-For", "198.51.100.2")];
    let attacker = [("X-Forwarded-For", "203.0.113.66")];
    assert_eq!(register(&p, 0, &honest, "victim").await?.status, 201);
    assert_eq!(register(&p, 0, &honest, "alice").await?.status, 201);
    let mut white = Client::guest(gw, "white").await?;
    let mut black = Client::guest(gw, "black").await?;
    let game = start_game(&mut white, &mut black, "standard", "white").await?;

    // 64 connections guessing the victim's password back to back until told to stop (at
    // most 60 guesses each: every guess is a new TCP connection).
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let under_way = Arc::new(tokio::sync::Notify::new());
    let mut flood = Vec::new();
    for i in 0..64 {
        let (stop, sent, under_way) = (stop.clone(), sent.clone(), under_way.clone());
        flood.push(tokio::spawn(async move {
            let mut statuses = Vec::new();
            while statuses.is_empty() || (!stop.load(Ordering::Relaxed) && statuses.len() < 60) {
                let r = post_with(
                    gw,
                    "/api/login",
                    &attacker,
                    &credentials("victim", &format!("guess number {i}")),
                )
                .await?;
                if sent.fetch_add(1, Ordering::Relaxed) + 1 == 200 {
                    under_way.notify_one();
                }
                statuses.push(r.status);
                if r.status == 429 {
                    assert_limited(&r, "flood");
                }
                if r.status == 503 {
                    assert_eq!(r.body["error"]["code"], "unavailable", "{r:?}");
                    assert_eq!(r.header("retry-after"), Some("1"), "{r:?}");
                }
            }
            anyhow::Ok(statuses)
        }));
    }
    // The flood is under way...
    under_way.notified().await;
    // ...a pair keeps playing...
    for (ply, uci) in OPENING.iter().enumerate() {
        let mover = if ply % 2 == 0 { &mut white } else { &mut black };
        mover.play(&game, uci).await?;
    }
    // ...and another account logs in (a client honours 503's Retry-After).
    let mut tries = 0;
    let ok = loop {
        let r = login(&p, 0, &honest, "alice", "correct horse battery").await?;
        tries += 1;
        if r.status != 503 || tries == 20 {
            break r;
        }
        let ms = r.body["error"]["retry_after_ms"].as_u64().unwrap_or(1000);
        tokio::time::sleep(Duration::from_millis(ms)).await;
    };
    assert_eq!(ok.status, 200, "{ok:?}");
    stop.store(true, Ordering::Relaxed);
    let mut statuses = Vec::new();
    for task in flood {
        statuses.extend(task.await??);
    }
    let limited = statuses.iter().filter(|s| **s == 429).count();
    let checked = statuses.iter().filter(|s| **s == 401).count();
    assert!(
        statuses.iter().all(|s| [401, 429, 503].contains(s)),
        "no guess succeeds: {statuses:?}"
    );
    // At most the address's 20 attempts a minute reach a password check; the rest are
    // refused by the limits (429) or, while hashing is saturated, before any look-up (503).
    assert!(
        checked <= 20 && limited > 0,
        "401s {checked}, 429s {limited} of {}",
        statuses.len()
    );
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_expiry_removes_only_old_guests_without_finished_games() -> anyhow::Result<()> {
    let p = Platform::start(1, 1, None).await?;
    let gw = p.gateways[0];
    let nats = async_nats::connect(frontier_testkit::nats_url()).await?;
    let ns = frontier_platform::Namespace::new(&p.namespace).map_err(anyhow::Error::msg)?;
    let mut recorded = nats.subscribe(ns.recorded_games_subject()).await?;
    nats.flush().await?;
    frontier_testkit::nats_round_trip(&nats).await;

    let (_, idle_old) = common::guest_token(gw).await?;
    let (_, idle_new) = common::guest_token(gw).await?;
    let mut player = Client::guest(gw, "player").await?;
    let mut opponent = Client::guest(gw, "opponent").await?;
    let game = start_game(&mut player, &mut opponent, "standard", "white").await?;
    player
        .send(json!({"type": "resign", "id": "r", "game_id": game}))
        .await?;
    player.ack("r").await?;
    tokio::time::timeout(common::WAIT, recorded.next())
        .await?
        .context("the game was recorded")?;
    let registered = register(&p, 0, &[], "gina").await?;
    let registered = registered.body["player"]["id"]
        .as_str()
        .context("id")?
        .to_owned();

    let pool = sqlx::PgPool::connect(&p.database_url).await?;
    // Ten more idle old guests, to see batches and two sweepers at once.
    let mut many = Vec::new();
    for _ in 0..10 {
        many.push(common::guest_token(gw).await?.1);
    }
    let old: Vec<uuid::Uuid> = [
        &idle_old,
        &player.player_id,
        &opponent.player_id,
        &registered,
    ]
    .into_iter()
    .chain(&many)
    .map(|id| id.parse())
    .collect::<Result<_, _>>()?;
    sqlx::query("UPDATE players SET created_at = now() - interval '8 days' WHERE id = ANY($1)")
        .bind(&old)
        .execute(&pool)
        .await?;

    let week = Duration::from_secs(7 * 86_400);
    let ratings = frontier_gateway::records::connect(&p.rating_url).map_err(anyhow::Error::msg)?;
    let (a, b) = tokio::join!(
        frontier_gateway::accounts::expire_guests(&pool, &ratings, week, 3),
        frontier_gateway::accounts::expire_guests(&pool, &ratings, week, 3),
    );
    assert_eq!(a? + b?, 11, "the eleven idle old guests, each once");
    let remaining: Vec<(uuid::Uuid,)> = sqlx::query_as("SELECT id FROM players")
        .fetch_all(&pool)
        .await?;
    let remaining: Vec<String> = remaining.into_iter().map(|(id,)| id.to_string()).collect();
    for kept in [
        &idle_new,
        &player.player_id,
        &opponent.player_id,
        &registered,
    ] {
        assert!(remaining.contains(kept), "{kept} is kept");
    }
    assert!(!remaining.contains(&idle_old), "the idle old guest is gone");
    assert_eq!(remaining.len(), 4);
    // The finished game still names its players.
    let (white_name,): (String,) = sqlx::query_as("SELECT white_name FROM games WHERE id = $1")
        .bind(game.parse::<uuid::Uuid>()?)
        .fetch_one(&pool)
        .await?;
    assert!(white_name.starts_with("Guest"));
    assert_eq!(
        frontier_gateway::accounts::expire_guests(&pool, &ratings, week, 3).await?,
        0
    );
    p.stop().await;
    Ok(())
}

/// Redis's own time, in ms.
async fn redis_ms(conn: &mut redis::aio::MultiplexedConnection) -> anyhow::Result<i64> {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(secs * 1000 + micros / 1000)
}

/// Issue #30: a gateway refreshes its connections' leases and reports its players'
/// presence in batches. When it is killed (SIGKILL: no goodbye), both lapse as documented:
/// its connection's slot frees itself when the last lease it wrote runs out (the next
/// connection of that player is admitted then, not before, and soon after), and the
/// player's presence record stops where the gateway left it while the other gateway's
/// player is still reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_gateways_leases_and_presence_lapse_as_documented() -> anyhow::Result<()> {
    use frontier_integration_tests::rig::{Rig, RigConfig, Service};
    const LEASE_MS: i64 = 3_000;
    let namespace = frontier_testkit::unique_namespace();
    let mut rig = Rig::start(RigConfig {
        bin: frontier_testkit::frontier_bin(),
        instances: 2,
        redis_url: frontier_testkit::redis_url(),
        nats_url: frontier_testkit::nats_url(),
        database_url: frontier_testkit::fresh_database().await?,
        namespace: namespace.clone(),
        jwt_secret: "lapse-test-secret-0123456789abcdefghij".into(),
        flags: vec![(
            Service::Gateway,
            [
                "--ws-lease",
                "3s",
                "--ws-per-player",
                "1",
                "--presence-interval",
                "300ms",
            ]
            .iter()
            .map(|f| (*f).to_owned())
            .collect(),
        )],
        instance_flags: Vec::new(),
        logs: None,
    })
    .await?;
    let gateways = rig.gateways();
    let (white_token, white_id) = common::guest_token(gateways[0]).await?;
    let mut white = Client::with_token(gateways[0], "white", &white_token, &white_id).await?;
    let mut black = Client::guest(gateways[1], "black").await?;
    let game: frontier_platform::GameId = start_game(&mut white, &mut black, "standard", "white")
        .await?
        .parse()
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    let ns = frontier_platform::Namespace::new(&namespace).map_err(anyhow::Error::msg)?;
    let redis = redis::Client::open(frontier_testkit::redis_url())?;
    let mut conn = redis.get_multiplexed_async_connection().await?;
    let presence = ns.presence_key(&game);
    let seen = |conn: &mut redis::aio::MultiplexedConnection, seat: &'static str| {
        let mut conn = conn.clone();
        let key = presence.clone();
        async move {
            let at: Option<i64> = redis::cmd("HGET")
                .arg(key)
                .arg(seat)
                .query_async(&mut conn)
                .await?;
            anyhow::Ok(at.unwrap_or(0))
        }
    };
    // Both gateways' ticks report their player, interval after interval.
    let first = seen(&mut conn, "white").await?;
    let deadline = tokio::time::Instant::now() + common::WAIT;
    while seen(&mut conn, "white").await? <= first || seen(&mut conn, "black").await? <= first {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "presence is not reported by the ticks"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The connection's lease as its gateway last wrote it; then the gateway dies.
    let slot = ns.connections_key("player", &white_id);
    let gateway0 = rig
        .of(Service::Gateway)
        .next()
        .context("a gateway instance")?;
    rig.kill(gateway0)?;
    let killed_at = redis_ms(&mut conn).await?;
    let leases: Vec<(String, i64)> = redis::cmd("ZRANGE")
        .arg(&slot)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await?;
    let [(_, lease_end)] = leases.as_slice() else {
        anyhow::bail!("one lease for white's one connection: {leases:?}");
    };
    anyhow::ensure!(
        *lease_end <= killed_at + LEASE_MS,
        "the last lease written ends within one lease of the kill"
    );
    // The other gateway refuses white while that lease runs (every attempt over before its
    // end is refused) and admits white once it has run out.
    let mut refused_while_held = 0;
    loop {
        let before = redis_ms(&mut conn).await?;
        let attempt = Client::with_token(gateways[1], "white again", &white_token, &white_id).await;
        let after = redis_ms(&mut conn).await?;
        match attempt {
            Ok(_client) => {
                anyhow::ensure!(
                    after >= *lease_end,
                    "admitted by {after}, before the dead lease's end {lease_end}"
                );
                break;
            }
            Err(e) => {
                if after < *lease_end {
                    refused_while_held += 1;
                }
                anyhow::ensure!(
                    before < lease_end + 10_000,
                    "white's dead slot outlived its lease by 10 s: {e:#}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    anyhow::ensure!(
        refused_while_held > 0,
        "the slot was seen held after the kill"
    );
    // White's presence stopped with its gateway; black's goes on.
    let deadline = tokio::time::Instant::now() + common::WAIT;
    while seen(&mut conn, "black").await? <= killed_at {
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "black's presence is no longer reported"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let white_seen = seen(&mut conn, "white").await?;
    anyhow::ensure!(
        white_seen <= killed_at,
        "white's presence was reported at {white_seen}, after its gateway died at {killed_at}"
    );
    rig.stop();
    Ok(())
}
