//! `frontier-load`: drives many games through a running gateway and reports moves per
//! second and the move round trip (send → ack), for docs/benchmarks.md.
//!
//! ```text
//! make run &                                   # release services on 127.0.0.1
//! cargo run --release -p frontier-integration-tests --bin frontier-load -- \
//!     --addr 127.0.0.1:8080 --pairs 40 --seconds 20
//! ```
//!
//! With `--flags N`, N timed games (1 "minute", so start game-session with a short
//! `FRONTIER_TEST_CLOCK_MINUTE`) make their first moves and are left to run out of time
//! while the pairs play; it reports how late each flag fell after its deadline, from the
//! server's own clock readings.
//!
//! With `--login-flood N`, N keep-alive connections send wrong-password logins for one
//! registered account back to back while the pairs play, and it reports how many were
//! answered and how (401 checked, 429 rate-limited, 503 hashing saturated);
//! `--flood-rate R` paces the flood to R attempts a second in all (default: as fast as
//! the answers come). The pairs
//! create many guests and boards from one address: start the gateway with generous
//! `FRONTIER_GUEST_LIMIT` / `FRONTIER_BOARD_LIMIT` (see docs/benchmarks.md).
//!
//! With `--matchmaking R`, instead of pairs, guests arrive at R a second (alternating over
//! the gateways of a comma-separated `--addr`, e.g. two gateways each calling its own
//! matchmaking instance) and seek the casual standard 3+0 pool; each waits for its
//! `matched` and it reports the time to pair (`seek` sent → `matched` received) at p50 and
//! p99, and how many of the matches were against a bot (start matchmaking with
//! `--bot-after 0` to measure people only).
//!
//! Each pair is two guests playing casual standard games of random legal moves (at most 80
//! plies, then a new game), each move sent only after the previous one was acknowledged.
//! Sends only to the address given; stops by itself after `--seconds`.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use frontier_rules::{Game, Variant};
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_tungstenite::tungstenite::Message;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

struct Args {
    addr: String,
    pairs: usize,
    seconds: u64,
    flags: usize,
    login_flood: usize,
    flood_rate: Option<f64>,
    matchmaking: Option<f64>,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        addr: "127.0.0.1:8080".into(),
        pairs: 20,
        seconds: 15,
        flags: 0,
        login_flood: 0,
        flood_rate: None,
        matchmaking: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--addr" => a.addr = value,
            "--pairs" => a.pairs = value.parse()?,
            "--seconds" => a.seconds = value.parse()?,
            "--flags" => a.flags = value.parse()?,
            "--login-flood" => a.login_flood = value.parse()?,
            "--flood-rate" => a.flood_rate = Some(value.parse()?),
            "--matchmaking" => a.matchmaking = Some(value.parse()?),
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    anyhow::ensure!(
        a.addr.split(',').all(|addr| addr.starts_with("127.")
            || addr.starts_with("localhost")
            || addr.starts_with("[::1]")),
        "the load tool only targets loopback addresses"
    );
    Ok(a)
}

async fn guest_token(addr: &str) -> anyhow::Result<String> {
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(format!("POST /api/guest HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes())
        .await?;
    let mut out = String::new();
    s.read_to_string(&mut out).await?;
    let body = &out[out.find('{').context("body")?..=out.rfind('}').context("body")?];
    let v: Value = serde_json::from_str(body)?;
    Ok(v["token"].as_str().context("token")?.to_owned())
}

/// One HTTP/1.1 request on a kept-alive connection: the status.
async fn keep_alive_post(
    stream: &mut tokio::io::BufReader<tokio::net::TcpStream>,
    addr: &str,
    path: &str,
    body: &str,
) -> anyhow::Result<u16> {
    use tokio::io::AsyncBufReadExt as _;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.get_mut().write_all(request.as_bytes()).await?;
    let mut status = 0;
    let mut length = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        anyhow::ensure!(stream.read_line(&mut line).await? > 0, "closed");
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if status == 0 {
            status = l.split_whitespace().nth(1).context("status")?.parse()?;
        } else if let Some((name, value)) = l.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse()?;
        }
    }
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await?;
    Ok(status)
}

/// Wrong-password logins for `username` until `deadline`, on one kept-alive connection:
/// how many got each status.
async fn login_flood(
    addr: String,
    username: String,
    deadline: Instant,
    every: Option<Duration>,
) -> anyhow::Result<std::collections::BTreeMap<u16, u64>> {
    let mut statuses = std::collections::BTreeMap::new();
    let mut stream = tokio::io::BufReader::new(tokio::net::TcpStream::connect(&addr).await?);
    let body = json!({"username": username, "password": "not the password"}).to_string();
    let mut pace = every.map(tokio::time::interval);
    while Instant::now() < deadline {
        if let Some(pace) = &mut pace {
            pace.tick().await;
        }
        let status = match keep_alive_post(&mut stream, &addr, "/api/login", &body).await {
            Ok(s) => s,
            Err(_) => {
                // The server may close a kept-alive connection: open another.
                stream = tokio::io::BufReader::new(tokio::net::TcpStream::connect(&addr).await?);
                continue;
            }
        };
        *statuses.entry(status).or_insert(0) += 1;
    }
    Ok(statuses)
}

async fn client(addr: &str) -> anyhow::Result<Ws> {
    let token = guest_token(addr).await?;
    let (mut ws, _) =
        tokio_tungstenite::connect_async_with_config(format!("ws://{addr}/ws/v1"), None, true)
            .await?;
    ws.send(Message::Text(
        json!({"type": "auth", "token": token}).to_string().into(),
    ))
    .await?;
    until(&mut ws, |v| v["type"] == "authenticated").await?;
    Ok(ws)
}

async fn until(ws: &mut Ws, pred: impl Fn(&Value) -> bool) -> anyhow::Result<Value> {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .context("no answer within 30 s")?
            .context("closed")??;
        if let Message::Text(t) = msg {
            let v: Value = serde_json::from_str(&t)?;
            if v["type"] == "error" && v["code"] != "rate_limited" {
                anyhow::bail!("error: {v}");
            }
            if pred(&v) {
                return Ok(v);
            }
        }
    }
}

/// White creates a standard board (with a clock of `minutes`, if any), Black joins it.
async fn new_game(white: &mut Ws, black: &mut Ws, minutes: Option<u32>) -> anyhow::Result<String> {
    let mut create = json!({"type": "create_board", "variant": "standard", "color": "white"});
    if let Some(m) = minutes {
        create["clock"] = json!({"minutes": m});
    }
    white.send(Message::Text(create.to_string().into())).await?;
    let created = until(white, |v| v["type"] == "board_created").await?;
    let game_id = created["game_id"].as_str().context("game")?.to_owned();
    let join = json!({"type": "join_board", "code": created["code"]});
    black.send(Message::Text(join.to_string().into())).await?;
    until(black, |v| v["type"] == "board_joined").await?;
    Ok(game_id)
}

/// Plays games until `deadline`; returns move round trips in microseconds.
async fn pair(addr: String, deadline: Instant, seed: u64) -> anyhow::Result<Vec<u32>> {
    let mut white = client(&addr).await?;
    let mut black = client(&addr).await?;
    let mut rng = seed | 1;
    let mut latencies = Vec::new();
    let mut n = 0u64;
    while Instant::now() < deadline {
        let game_id = new_game(&mut white, &mut black, None).await?;
        let mut game = Game::new(Variant::Standard).map_err(|e| anyhow::anyhow!("{e}"))?;
        for ply in 0..80 {
            if game.outcome().is_some() || Instant::now() >= deadline {
                break;
            }
            let moves = game.legal_moves();
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let m = moves[(rng % moves.len() as u64) as usize];
            let mover = if ply % 2 == 0 { &mut white } else { &mut black };
            n += 1;
            let id = format!("m{n}");
            let started = Instant::now();
            mover
                .send(Message::Text(
                    json!({"type": "move", "id": id, "game_id": game_id, "uci": m.to_string()})
                        .to_string()
                        .into(),
                ))
                .await?;
            until(mover, |v| v["type"] == "ack" && v["id"] == id.as_str()).await?;
            latencies.push(started.elapsed().as_micros() as u32);
            game.play(&m).map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        if game.outcome().is_none() {
            white
                .send(Message::Text(
                    json!({"type": "resign", "game_id": game_id})
                        .to_string()
                        .into(),
                ))
                .await?;
            until(&mut white, |v| v["type"] == "ack").await?;
        }
    }
    Ok(latencies)
}

/// One timed game left to flag: milliseconds between White's deadline and the end.
async fn flag_game(addr: String) -> anyhow::Result<i64> {
    let mut white = client(&addr).await?;
    let mut black = client(&addr).await?;
    let game_id = new_game(&mut white, &mut black, Some(1)).await?;
    for (ws, uci) in [(&mut white, "e2e4"), (&mut black, "e7e5")] {
        ws.send(Message::Text(
            json!({"type": "move", "id": uci, "game_id": game_id, "uci": uci})
                .to_string()
                .into(),
        ))
        .await?;
        until(ws, |v| v["type"] == "ack" && v["id"] == uci).await?;
    }
    // The event that started White's clock, then the end.
    let started = until(&mut white, |v| {
        v["type"] == "event" && v["clocks"]["running"] == "white"
    })
    .await?;
    let deadline = started["clocks"]["at"].as_i64().unwrap_or(0)
        + started["clocks"]["white_ms"].as_i64().unwrap_or(0);
    let end = until(&mut white, |v| {
        v["type"] == "event" && !v["outcome"].is_null()
    })
    .await?;
    anyhow::ensure!(end["outcome"]["reason"] == "timeout", "{end}");
    Ok(end["clocks"]["at"].as_i64().unwrap_or(0) - deadline)
}

/// One quick-match seeker: connects as a guest, seeks the standard 3+0 pool, waits for its
/// match. The time from `seek` to `matched` (µs), and whether the opponent was a bot.
async fn seeker(addr: String) -> anyhow::Result<(u64, bool)> {
    let mut ws = client(&addr).await?;
    let pool = json!({"variant": "standard", "clock": {"minutes": 3, "increment": 0}});
    let sent = Instant::now();
    ws.send(Message::Text(
        json!({"type": "seek", "pools": [pool]}).to_string().into(),
    ))
    .await?;
    let matched = until(&mut ws, |v| v["type"] == "matched").await?;
    let waited = sent.elapsed().as_micros() as u64;
    let _ = ws.close(None).await;
    Ok((waited, matched["opponent"]["bot"] == true))
}

/// `--matchmaking R`: seekers arriving at R a second for the run's length.
async fn matchmaking(args: &Args, rate: f64) -> anyhow::Result<()> {
    let addrs: Vec<String> = args.addr.split(',').map(str::to_owned).collect();
    let started = Instant::now();
    let every = Duration::from_secs_f64(1.0 / rate.max(0.001));
    let mut tick = tokio::time::interval(every);
    let mut set = tokio::task::JoinSet::new();
    let mut n = 0usize;
    while started.elapsed() < Duration::from_secs(args.seconds) {
        tick.tick().await;
        set.spawn(seeker(addrs[n % addrs.len()].clone()));
        n += 1;
    }
    let mut waits = Vec::new();
    let mut bots = 0;
    while let Some(r) = set.join_next().await {
        match r? {
            Ok((waited, bot)) => {
                waits.push(waited);
                bots += usize::from(bot);
            }
            Err(e) => eprintln!("a seeker stopped: {e:#}"),
        }
    }
    waits.sort_unstable();
    let at = |p: f64| {
        waits
            .get(((waits.len() as f64 * p) as usize).min(waits.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0) as f64
            / 1000.0
    };
    println!(
        "{} seekers at {rate}/s over {} gateway(s): {} matched ({bots} with a bot); time to pair p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        n,
        addrs.len(),
        waits.len(),
        at(0.5),
        at(0.99),
        waits.last().copied().unwrap_or(0) as f64 / 1000.0
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    if let Some(rate) = args.matchmaking {
        return matchmaking(&args, rate).await;
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.seconds);
    let mut set = tokio::task::JoinSet::new();
    for i in 0..args.pairs {
        set.spawn(pair(args.addr.clone(), deadline, i as u64 + 1));
    }
    let mut flags = tokio::task::JoinSet::new();
    for _ in 0..args.flags {
        flags.spawn(flag_game(args.addr.clone()));
    }
    let mut flood = tokio::task::JoinSet::new();
    if args.login_flood > 0 {
        // The target: a registered account (a fresh name per run).
        let username = format!("victim{}", std::process::id());
        let mut s = tokio::io::BufReader::new(tokio::net::TcpStream::connect(&args.addr).await?);
        let body = json!({"username": username, "password": "correct horse battery"});
        let status =
            keep_alive_post(&mut s, &args.addr, "/api/register", &body.to_string()).await?;
        anyhow::ensure!(status == 201, "registering the flood's target: {status}");
        let every = args
            .flood_rate
            .map(|r| Duration::from_secs_f64(args.login_flood as f64 / r.max(0.001)));
        for _ in 0..args.login_flood {
            flood.spawn(login_flood(
                args.addr.clone(),
                username.clone(),
                deadline,
                every,
            ));
        }
    }
    let mut all = Vec::new();
    while let Some(r) = set.join_next().await {
        match r? {
            Ok(l) => all.extend(l),
            Err(e) => eprintln!("a pair stopped: {e:#}"),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    all.sort_unstable();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    println!(
        "{} moves in {:.1} s: {:.0} moves/s; round trip p50 {:.2} ms, p99 {:.2} ms ({} pairs)",
        all.len(),
        elapsed,
        all.len() as f64 / elapsed,
        f64::from(pct(0.5)) / 1000.0,
        f64::from(pct(0.99)) / 1000.0,
        args.pairs
    );
    if args.login_flood > 0 {
        let mut statuses = std::collections::BTreeMap::new();
        while let Some(r) = flood.join_next().await {
            match r? {
                Ok(s) => {
                    for (status, n) in s {
                        *statuses.entry(status).or_insert(0u64) += n;
                    }
                }
                Err(e) => eprintln!("a flood connection stopped: {e:#}"),
            }
        }
        let total: u64 = statuses.values().sum();
        println!(
            "login flood ({} connections): {total} attempts, {:.0}/s; by status {statuses:?}",
            args.login_flood,
            total as f64 / args.seconds.max(1) as f64
        );
    }
    if args.flags > 0 {
        let mut lags = Vec::new();
        while let Some(r) = flags.join_next().await {
            match r? {
                Ok(lag) => lags.push(lag),
                Err(e) => eprintln!("a timed game failed: {e:#}"),
            }
        }
        lags.sort_unstable();
        let at = |p: f64| {
            lags.get(((lags.len() as f64 * p) as usize).min(lags.len().saturating_sub(1)))
                .copied()
                .unwrap_or(0)
        };
        println!(
            "{} flags fell {} ms after their deadline at p50, {} ms at p99, {} ms at most",
            lags.len(),
            at(0.5),
            at(0.99),
            lags.last().copied().unwrap_or(0)
        );
    }
    Ok(())
}
