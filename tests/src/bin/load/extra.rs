//! The scenarios besides played games: idle connections, quick-match arrivals, games
//! left to flag, and a login flood.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use serde_json::json;

use crate::Run;
use crate::cli::source_addr;
use crate::client;

/// Opens `--idle` authenticated connections at `--idle-rate` and holds them until the
/// run stops, answering the server's pings. The gateway's RSS is read before the first
/// and once every connection was attempted.
pub(crate) async fn idle(run: Arc<Run>) {
    tokio::time::sleep(Duration::from_secs(run.args.idle_after)).await;
    if run.stopping() {
        return;
    }
    let pid = run.args.gateway_pid;
    *run.idle.rss_before.lock().expect("not poisoned") = pid.and_then(crate::stats::rss_kib);
    // Guests arrive at rate/K a second; each makes its K connections one after another
    // (so tokens are fetched concurrently, and no faster than the rate on average).
    let per_guest = run.args.idle_per_guest.max(1) as usize;
    let mut pace = tokio::time::interval(Duration::from_secs_f64(
        per_guest as f64 / run.args.idle_rate.max(0.001),
    ));
    let mut tasks = tokio::task::JoinSet::new();
    for first in (0..run.args.idle).step_by(per_guest) {
        pace.tick().await;
        if run.stopping() {
            break;
        }
        let count = per_guest.min(run.args.idle - first);
        tasks.spawn(idle_guest(run.clone(), first, count));
    }
    // Every attempt answered (open or failed): the settled figure.
    let attempted = run.args.idle as u64;
    let mut check = tokio::time::interval(Duration::from_millis(100));
    while !run.stopping()
        && run.idle.open.load(Ordering::Relaxed) + run.idle.failed.load(Ordering::Relaxed)
            < attempted
    {
        check.tick().await;
    }
    *run.idle.cpu_opened.lock().expect("not poisoned") = run
        .args
        .cpu_pids
        .iter()
        .filter_map(|(name, pid)| Some((name.clone(), *pid, crate::stats::cpu_seconds(*pid)?)))
        .collect();
    run.idle.all_open_at.get_or_init(|| run.started.elapsed());
    *run.idle.rss_opened.lock().expect("not poisoned") = pid.and_then(crate::stats::rss_kib);
    while tasks.join_next().await.is_some() {}
}

/// `attempt` until it succeeds, up to 10 times: a busy server may refuse (503, 429), and
/// a client tries again a little later. Each refusal counts as `idle_retried_…`, the last
/// as `idle_…`.
async fn retried<T, F: Future<Output = anyhow::Result<T>>>(
    run: &Run,
    attempt: impl Fn() -> F,
) -> Option<T> {
    for n in 1..=10u64 {
        match attempt().await {
            Ok(v) => return Some(v),
            Err(e) if n < 10 && !run.stopping() => {
                run.fail("idle_retried_", &e);
                tokio::time::sleep(Duration::from_millis(250 * n)).await;
            }
            Err(e) => {
                run.fail("idle_", &e);
                return None;
            }
        }
    }
    None
}

/// One guest's `count` idle connections, numbered from `first`.
async fn idle_guest(run: Arc<Run>, first: usize, count: usize) {
    let Some(token) = retried(&run, || client::guest_token(run.target(first), None)).await else {
        run.idle.failed.fetch_add(count as u64, Ordering::Relaxed);
        return;
    };
    let token: Arc<str> = Arc::from(token);
    let mut held = tokio::task::JoinSet::new();
    for i in first..first + count {
        let source = Some(source_addr(i, run.args.source_addrs));
        let target = run.target(i);
        match retried(&run, || client::authenticated(target, source, &token)).await {
            Some(ws) => {
                run.idle.open.fetch_add(1, Ordering::Relaxed);
                held.spawn(hold(run.clone(), ws));
            }
            None => {
                run.idle.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    while held.join_next().await.is_some() {}
}

/// Holds an open connection until the run stops, reading (and so answering pings).
async fn hold(run: Arc<Run>, mut ws: client::Ws) {
    let mut stop = run.stop.subscribe();
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            frame = ws.next() => match frame {
                Some(Ok(_)) => {}
                _ => {
                    run.idle.open.fetch_sub(1, Ordering::Relaxed);
                    run.idle.dropped.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            },
        }
    }
}

/// One quick-match seeker: seeks the standard 3+0 pool and waits for its match.
async fn seeker(run: Arc<Run>, addr: SocketAddr) {
    let result = async {
        let mut ws = client::guest(addr, None).await?;
        let pool = json!({"variant": "standard", "clock": {"minutes": 3, "increment": 0}});
        let sent = Instant::now();
        client::send(
            &mut ws,
            &json!({"type": "seek", "id": "q", "pools": [pool]}),
        )
        .await?;
        let matched = client::until(&mut ws, |v| v["type"] == "matched").await?;
        let waited = sent.elapsed().as_micros() as u64;
        let _ = ws.close(None).await;
        anyhow::Ok((waited, matched["opponent"]["bot"] == true))
    }
    .await;
    match result {
        Ok((waited, bot)) => {
            let mut rec = run.rec();
            rec.pairing.record(waited);
            rec.matched_with_bot += u64::from(bot);
        }
        Err(e) => run.fail("seek_", &e),
    }
}

/// `--matchmaking R`: seekers arriving at R a second (alternating over the gateways)
/// until the run stops; then each is waited for.
pub(crate) async fn matchmaking(run: Arc<Run>, rate: f64) -> u64 {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate.max(0.001)));
    let mut set = tokio::task::JoinSet::new();
    let mut n = 0usize;
    while !run.stopping() {
        tick.tick().await;
        set.spawn(seeker(run.clone(), run.target(n)));
        n += 1;
    }
    while set.join_next().await.is_some() {}
    n as u64
}

/// One timed game left to flag: milliseconds between White's deadline and the end.
pub(crate) async fn flag_game(addr: SocketAddr, partner: SocketAddr) -> anyhow::Result<i64> {
    let mut white = client::guest(addr, None).await?;
    let mut black = client::guest(partner, None).await?;
    let create = json!({"type": "create_board", "variant": "standard", "color": "white", "clock": {"minutes": 1}});
    client::send(&mut white, &create).await?;
    let created = client::until(&mut white, |v| v["type"] == "board_created").await?;
    let game_id = created["game_id"].clone();
    client::send(
        &mut black,
        &json!({"type": "join_board", "code": created["code"]}),
    )
    .await?;
    client::until(&mut black, |v| v["type"] == "board_joined").await?;
    for (ws, uci) in [(&mut white, "e2e4"), (&mut black, "e7e5")] {
        client::send(
            ws,
            &json!({"type": "move", "id": uci, "game_id": game_id, "uci": uci}),
        )
        .await?;
        client::until(ws, |v| v["type"] == "ack" && v["id"] == uci).await?;
    }
    // The event that started White's clock, then the end (this may take a clock minute).
    let started = client::until(&mut white, |v| {
        v["type"] == "event" && v["clocks"]["running"] == "white"
    })
    .await?;
    let deadline = started["clocks"]["at"].as_i64().unwrap_or(0)
        + started["clocks"]["white_ms"].as_i64().unwrap_or(0);
    let end = loop {
        match client::until(&mut white, |v| {
            v["type"] == "event" && !v["outcome"].is_null()
        })
        .await
        {
            Ok(end) => break end,
            // A quiet minute is no failure: ping to keep waiting.
            Err(e) if client::error_code(&e) == "timeout" => {
                client::send(&mut white, &json!({"type": "ping"})).await?;
            }
            Err(e) => return Err(e),
        }
    };
    anyhow::ensure!(end["outcome"]["reason"] == "timeout", "{end}");
    Ok(end["clocks"]["at"].as_i64().unwrap_or(0) - deadline)
}

/// Wrong-password logins for `username` until the run stops, on one kept-alive
/// connection: how many got each status.
pub(crate) async fn login_flood(
    run: Arc<Run>,
    addr: SocketAddr,
    username: String,
    every: Option<Duration>,
) -> anyhow::Result<BTreeMap<u16, u64>> {
    let mut statuses = BTreeMap::new();
    let connect =
        || async { anyhow::Ok(tokio::io::BufReader::new(client::tcp(addr, None).await?)) };
    let mut stream = connect().await?;
    let body = json!({"username": username, "password": "not the password"}).to_string();
    let mut pace = every.map(tokio::time::interval);
    while !run.stopping() {
        if let Some(pace) = &mut pace {
            pace.tick().await;
        }
        match client::keep_alive_post(&mut stream, addr, "/api/login", &body).await {
            Ok(status) => *statuses.entry(status).or_insert(0) += 1,
            // The server may close a kept-alive connection: open another.
            Err(_) => stream = connect().await?,
        }
    }
    Ok(statuses)
}

/// Registers the flood's target account (a fresh name per run).
pub(crate) async fn register_victim(addr: SocketAddr) -> anyhow::Result<String> {
    let username = format!("victim{}", std::process::id());
    let mut s = tokio::io::BufReader::new(client::tcp(addr, None).await?);
    let body = json!({"username": username, "password": "correct horse battery"});
    let status = client::keep_alive_post(&mut s, addr, "/api/register", &body.to_string()).await?;
    anyhow::ensure!(status == 201, "registering the flood's target: {status}");
    Ok(username)
}
