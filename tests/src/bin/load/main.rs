//! `frontier-load`: drives games through running gateways on this machine and reports
//! moves per second and the move round trip (send → `ack`), live on stderr and as a final
//! table, JSON (`--json`) and an SVG plot (`--svg`), for docs/benchmarks.md.
//!
//! ```text
//! make run &                                   # release services on 127.0.0.1
//! cargo run --release -p frontier-integration-tests --bin frontier-load -- \
//!     --addr 127.0.0.1:8080 --pairs 40 --seconds 20
//! frontier-load --help                         # every flag and scenario
//! ```
//!
//! Sends only to loopback addresses; stops by itself after `--seconds` (or `--moves`).

mod cli;
mod client;
mod extra;
mod games;
mod stats;
mod svg;

use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Write as _};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{CommandFactory as _, FromArgMatches as _, parser::ValueSource};
use serde_json::{Value, json};
use tokio::sync::watch;

/// The same allocator as the services (its CPU per move is reported next to theirs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use cli::Args;
use stats::{Recorder, ms};

/// What every task of a run shares.
pub(crate) struct Run {
    pub(crate) args: Args,
    pub(crate) targets: Vec<SocketAddr>,
    pub(crate) started: Instant,
    pub(crate) deadline: Instant,
    /// Acknowledged moves so far.
    pub(crate) moves: AtomicU64,
    rec: Mutex<Recorder>,
    /// Set once the run ends (time or `--moves` reached).
    pub(crate) stop: watch::Sender<bool>,
    pub(crate) idle: IdleCounts,
}

#[derive(Default)]
pub(crate) struct IdleCounts {
    pub(crate) open: AtomicU64,
    pub(crate) failed: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) rss_before: Mutex<Option<u64>>,
    pub(crate) rss_opened: Mutex<Option<u64>>,
    pub(crate) all_open_at: OnceLock<Duration>,
    /// CPU seconds of each `--cpu-pid` process once every idle connection was attempted.
    pub(crate) cpu_opened: Mutex<Vec<(String, u32, f64)>>,
}

impl Run {
    pub(crate) fn stopping(&self) -> bool {
        *self.stop.borrow() || Instant::now() >= self.deadline
    }

    /// Gateway `i` of the targets, round robin.
    pub(crate) fn target(&self, i: usize) -> SocketAddr {
        self.targets[i % self.targets.len()]
    }

    pub(crate) fn rec(&self) -> MutexGuard<'_, Recorder> {
        self.rec.lock().expect("no task panics while recording")
    }

    /// A failure: counted by its code, the first of each code kept in full.
    pub(crate) fn fail(&self, prefix: &str, e: &anyhow::Error) {
        let code = format!("{prefix}{}", client::error_code(e));
        self.rec().error_with(&code, || format!("{e:#}"));
    }

    /// An acknowledged move and its round trip; ends the run at `--moves`.
    pub(crate) fn move_done(&self, round_trip: Duration) {
        self.rec().move_done(round_trip.as_micros() as u64);
        let n = self.moves.fetch_add(1, Ordering::Relaxed) + 1;
        if self.args.moves.is_some_and(|limit| n >= limit) {
            self.stop.send_replace(true);
        }
    }
}

/// Lifts this process's open-files limit to its hard limit (idle connections need one
/// descriptor each).
fn raise_fd_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    limit.current = limit.maximum;
    let _ = setrlimit(Resource::Nofile, limit);
    getrlimit(Resource::Nofile).current
}

fn main() -> std::process::ExitCode {
    let matches = Args::command().get_matches();
    let threads = matches.get_one::<u16>("threads").copied().unwrap_or(1);
    let runtime = if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(usize::from(threads))
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("frontier-load: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // An error is one line (with its causes), never a backtrace.
    match runtime.block_on(load(matches)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("frontier-load: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn load(matches: clap::ArgMatches) -> anyhow::Result<()> {
    let args = Args::from_arg_matches(&matches)?;
    let pairs_explicit = matches.value_source("pairs") == Some(ValueSource::CommandLine);
    let targets = cli::loopback_targets(&args.addrs)?;
    let fd_limit = raise_fd_limit();
    if let Some(limit) = fd_limit
        && args.idle as u64 + 64 > limit
    {
        anyhow::bail!(
            "--idle {} needs more open files than this process may have ({limit}); run \
             several frontier-load processes, or raise the hard limit",
            args.idle
        );
    }
    let started = Instant::now();
    let run = Arc::new(Run {
        deadline: started + Duration::from_secs(args.seconds),
        args,
        targets,
        started,
        moves: AtomicU64::new(0),
        rec: Mutex::new(Recorder::default()),
        stop: watch::channel(false).0,
        idle: IdleCounts::default(),
    });
    let cpu_before = stats::own_cpu();
    let args = &run.args;

    let mut tasks = tokio::task::JoinSet::new();
    let plays_pairs = args.plays_pairs(pairs_explicit);
    let games = if !plays_pairs {
        0
    } else if let Some(rate) = args.rate {
        let games = args.games.max(1);
        // Each game's moves are due every games/rate seconds, the games' phases spread.
        let every = Duration::from_secs_f64(games as f64 / rate.max(0.001));
        for g in 0..games {
            let phase = every.mul_f64(g as f64 / games as f64);
            tasks.spawn(games::pair(run.clone(), g, Some(every), phase));
        }
        games
    } else {
        for i in 0..args.pairs {
            tasks.spawn(games::pair(run.clone(), i, None, Duration::ZERO));
        }
        args.pairs
    };
    for i in 0..args.bots {
        tasks.spawn(games::bot_games(run.clone(), i));
    }
    if args.idle > 0 {
        tasks.spawn(extra::idle(run.clone()));
    }
    let seekers = args
        .matchmaking
        .map(|rate| tokio::spawn(extra::matchmaking(run.clone(), rate)));
    let mut flags = tokio::task::JoinSet::new();
    for i in 0..args.flags {
        flags.spawn(extra::flag_game(run.target(i), run.target(i + 1)));
    }
    let mut flood = tokio::task::JoinSet::new();
    if args.login_flood > 0 {
        let username = extra::register_victim(run.target(0)).await?;
        let every = args
            .flood_rate
            .map(|r| Duration::from_secs_f64(args.login_flood as f64 / r.max(0.001)));
        for i in 0..args.login_flood {
            flood.spawn(extra::login_flood(
                run.clone(),
                run.target(i),
                username.clone(),
                every,
            ));
        }
    }

    // Live progress, one line a second, until the run ends.
    let live = !args.quiet;
    let tty = std::io::stderr().is_terminal();
    let mut tick = tokio::time::interval_at(
        (started + Duration::from_secs(1)).into(),
        Duration::from_secs(1),
    );
    let mut stop = run.stop.subscribe();
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => break,
        }
        let t = started.elapsed().as_secs();
        let idle_open = run.idle.open.load(Ordering::Relaxed);
        let line = {
            let mut rec = run.rec();
            let s = rec.tick(t, idle_open);
            let mut line = format!(
                "{t:>5} s {:>7} moves/s  p50 {:>6.2} ms  p99 {:>6.2} ms  errors {}",
                s.moves,
                ms(rec.total.quantile(0.5)),
                ms(rec.total.quantile(0.99)),
                rec.error_total()
            );
            if args.idle > 0 {
                line += &format!("  idle {idle_open}/{}", args.idle);
            }
            if args.matchmaking.is_some() {
                line += &format!("  matched {}", rec.pairing.count());
            }
            line
        };
        if live {
            let mut err = std::io::stderr().lock();
            let _ = if tty {
                write!(err, "\r{line}\x1b[K")
            } else {
                writeln!(err, "{line}")
            };
            let _ = err.flush();
        }
        if run.stopping() {
            break;
        }
    }
    run.stop.send_replace(true);
    let elapsed = started.elapsed().as_secs_f64();
    let moves_at_stop = run.moves.load(Ordering::Relaxed);
    let cpu_after = stats::own_cpu();
    let rss_end = args.gateway_pid.and_then(stats::rss_kib);
    let cpu_end: Vec<Option<f64>> = run
        .idle
        .cpu_opened
        .lock()
        .expect("not poisoned")
        .iter()
        .map(|(_, pid, _)| stats::cpu_seconds(*pid))
        .collect();
    let ended_at = run.started.elapsed();
    let idle_open_at_stop = run.idle.open.load(Ordering::Relaxed);
    if live && tty {
        eprintln!();
    }

    // In-flight moves finish (each answer is awaited 30 s at most), then the rest.
    let drained = tokio::time::timeout(Duration::from_secs(40), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        eprintln!("some tasks did not finish within 40 s of the end; stopped them");
        tasks.abort_all();
    }
    let seekers = match seekers {
        Some(s) => Some(s.await.context("the seekers' task")?),
        None => None,
    };
    let mut flag_lags = Vec::new();
    while let Some(r) = flags.join_next().await {
        match r? {
            Ok(lag) => flag_lags.push(lag),
            Err(e) => eprintln!("a timed game failed: {e:#}"),
        }
    }
    flag_lags.sort_unstable();
    let mut statuses: BTreeMap<u16, u64> = BTreeMap::new();
    while let Some(r) = flood.join_next().await {
        match r? {
            Ok(s) => s
                .into_iter()
                .for_each(|(status, n)| *statuses.entry(status).or_insert(0) += n),
            Err(e) => eprintln!("a flood connection stopped: {e:#}"),
        }
    }

    let rec = run.rec();
    let h = &rec.total;
    let rate = moves_at_stop as f64 / elapsed;
    let cpu = match (cpu_before, cpu_after) {
        (Some((u0, s0)), Some((u1, s1))) => Some((u1 - u0, s1 - s0)),
        _ => None,
    };
    let mut report = json!({
        "tool": "frontier-load",
        "config": {
            "addrs": run.targets.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "seconds": args.seconds,
            "moves_limit": args.moves,
            "loop": if args.rate.is_some() { "open" } else { "closed" },
            "pairs": if args.rate.is_none() { games } else { 0 },
            "rate": args.rate,
            "games": if args.rate.is_some() { games } else { 0 },
            "variant": format!("{:?}", args.variant).to_lowercase(),
            "max_plies": args.max_plies,
            "spectators_per_game": args.spectators,
            "bots": args.bots,
            "idle": args.idle,
            "idle_per_guest": args.idle_per_guest,
            "source_addrs": args.source_addrs,
            "matchmaking_rate": args.matchmaking,
        },
        "elapsed_s": round(elapsed, 3),
        "moves": moves_at_stop,
        "moves_per_s": round(rate, 1),
        "round_trip_ms": {
            "p50": ms(h.quantile(0.5)), "p95": ms(h.quantile(0.95)),
            "p99": ms(h.quantile(0.99)), "max": ms(h.max()), "mean": round(h.mean() / 1000.0, 3),
            "count": h.count(),
        },
        "errors": rec.errors,
        "reconnects": rec.reconnects,
        "series": rec.series.iter().map(|s| json!({
            "t": s.t, "moves": s.moves, "p50_ms": s.p50_ms, "p99_ms": s.p99_ms,
            "max_ms": s.max_ms, "errors": s.errors, "idle_open": s.idle_open,
        })).collect::<Vec<_>>(),
    });
    let mut table: Vec<(String, String)> = vec![
        (
            "moves".into(),
            format!("{moves_at_stop} in {elapsed:.1} s: {rate:.0} moves/s"),
        ),
        (
            "round trip".into(),
            format!(
                "p50 {:.2} ms  p95 {:.2} ms  p99 {:.2} ms  max {:.2} ms{}",
                ms(h.quantile(0.5)),
                ms(h.quantile(0.95)),
                ms(h.quantile(0.99)),
                ms(h.max()),
                if args.rate.is_some() {
                    "  (from each move's scheduled time)"
                } else {
                    ""
                }
            ),
        ),
        (
            "errors".into(),
            if rec.errors.is_empty() {
                "none".into()
            } else {
                rec.errors
                    .iter()
                    .map(|(c, n)| format!("{c} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ),
        ("reconnects".into(), rec.reconnects.to_string()),
    ];
    if let Some((user, system)) = cpu {
        let total = user + system;
        let per_move = if moves_at_stop > 0 {
            total * 1e6 / moves_at_stop as f64
        } else {
            0.0
        };
        table.push((
            "load tool CPU".into(),
            format!(
                "{total:.2} s ({user:.2} user, {system:.2} system): {:.0}% of one core, {per_move:.0} µs per move",
                total / elapsed * 100.0
            ),
        ));
        report["cpu"] = json!({
            "user_s": round(user, 2), "system_s": round(system, 2),
            "share_of_one_core": round(total / elapsed, 3), "us_per_move": round(per_move, 1),
        });
    }
    if args.spectators > 0 {
        table.push((
            "spectators".into(),
            format!(
                "{} per game, {} events received",
                args.spectators, rec.spectator_events
            ),
        ));
        report["spectators"] = json!({"per_game": args.spectators, "events": rec.spectator_events});
    }
    if args.bots > 0 {
        let b = &rec.bot_replies;
        table.push((
            "computer replies".into(),
            format!(
                "{} (ack → the computer's move) p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms",
                b.count(),
                ms(b.quantile(0.5)),
                ms(b.quantile(0.99)),
                ms(b.max())
            ),
        ));
        report["bots"] = json!({
            "games": args.bots, "replies": b.count(),
            "reply_ms": {"p50": ms(b.quantile(0.5)), "p99": ms(b.quantile(0.99)), "max": ms(b.max())},
        });
    }
    if args.idle > 0 {
        let before = *run.idle.rss_before.lock().expect("not poisoned");
        let opened = *run.idle.rss_opened.lock().expect("not poisoned");
        let open = idle_open_at_stop;
        let mut line = format!(
            "{open} of {} open at the end ({} failed, {} dropped)",
            args.idle,
            run.idle.failed.load(Ordering::Relaxed),
            run.idle.dropped.load(Ordering::Relaxed),
        );
        if let Some(at) = run.idle.all_open_at.get() {
            line += &format!(", all attempted after {:.1} s", at.as_secs_f64());
        }
        let per_conn = |after: Option<u64>| match (before, after) {
            (Some(b), Some(a)) if open > 0 => Some((a as f64 - b as f64) / open as f64),
            _ => None,
        };
        table.push(("idle connections".into(), line));
        if let Some(b) = before {
            table.push((
                "gateway RSS".into(),
                format!(
                    "{:.1} MiB before, {} once open, {} at the end: {} KiB per idle connection",
                    b as f64 / 1024.0,
                    opened.map_or("?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
                    rss_end.map_or("?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0)),
                    per_conn(rss_end).map_or("?".into(), |k| format!("{k:.2}")),
                ),
            ));
        }
        // What an idle connection costs each named process, per second, once all are open.
        let opened_cpu = run.idle.cpu_opened.lock().expect("not poisoned").clone();
        let mut idle_cpu = serde_json::Map::new();
        if let (Some(at), false) = (run.idle.all_open_at.get(), opened_cpu.is_empty()) {
            let window = ended_at.saturating_sub(*at).as_secs_f64();
            let mut total = 0.0;
            let mut cells = Vec::new();
            for ((name, _, start), end) in opened_cpu.iter().zip(&cpu_end) {
                let Some(end) = end else { continue };
                let per_s = (end - start) / window.max(0.001);
                total += per_s;
                let per_conn = per_s * 1e6 / open.max(1) as f64;
                cells.push(format!("{name} {:.2} ms/s ({per_conn:.2})", per_s * 1e3));
                idle_cpu.insert(name.clone(), json!(round(per_conn, 3)));
            }
            let per_conn = total * 1e6 / open.max(1) as f64;
            idle_cpu.insert("all".into(), json!(round(per_conn, 3)));
            table.push((
                "idle cost".into(),
                format!(
                    "{per_conn:.2} µs CPU per second per idle connection in all over the last {window:.0} s: {}",
                    cells.join(", ")
                ),
            ));
        }
        report["idle"] = json!({
            "cpu_us_per_s_per_connection": idle_cpu,
            "asked": args.idle, "open_at_end": open,
            "failed": run.idle.failed.load(Ordering::Relaxed),
            "dropped": run.idle.dropped.load(Ordering::Relaxed),
            "all_attempted_after_s": run.idle.all_open_at.get().map(Duration::as_secs_f64),
            "gateway_rss_kib": {"before": before, "all_open": opened, "end": rss_end},
            "kib_per_connection": per_conn(rss_end).map(|k| round(k, 2)),
        });
    }
    if let Some(n) = seekers {
        let p = &rec.pairing;
        table.push((
            "quick match".into(),
            format!(
                "{n} seekers at {}/s over {} gateway(s): {} matched ({} with a bot); time to pair p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
                args.matchmaking.unwrap_or_default(),
                run.targets.len(),
                p.count(),
                rec.matched_with_bot,
                ms(p.quantile(0.5)),
                ms(p.quantile(0.99)),
                ms(p.max())
            ),
        ));
        report["matchmaking"] = json!({
            "seekers": n, "matched": p.count(), "with_bot": rec.matched_with_bot,
            "time_to_pair_ms": {"p50": ms(p.quantile(0.5)), "p99": ms(p.quantile(0.99)), "max": ms(p.max())},
        });
    }
    if args.login_flood > 0 {
        let total: u64 = statuses.values().sum();
        table.push((
            "login flood".into(),
            format!(
                "{} connections: {total} attempts, {:.0}/s; by status {statuses:?}",
                args.login_flood,
                total as f64 / elapsed
            ),
        ));
        report["login_flood"] = json!({"attempts": total, "by_status": statuses});
    }
    if args.flags > 0 {
        let at = |q: f64| {
            flag_lags
                .get(((flag_lags.len() as f64 * q) as usize).min(flag_lags.len().saturating_sub(1)))
                .copied()
                .unwrap_or(0)
        };
        table.push((
            "flags".into(),
            format!(
                "{} fell {} ms after their deadline at p50, {} ms at p99, {} ms at most",
                flag_lags.len(),
                at(0.5),
                at(0.99),
                flag_lags.last().copied().unwrap_or(0)
            ),
        ));
        report["flags"] = json!({"lags_ms": flag_lags});
    }

    // The first line keeps the old one-line summary (scripts read it).
    println!(
        "{moves_at_stop} moves in {elapsed:.1} s: {rate:.0} moves/s; round trip p50 {:.2} ms, p99 {:.2} ms ({})",
        ms(h.quantile(0.5)),
        ms(h.quantile(0.99)),
        if args.rate.is_some() {
            format!(
                "open loop at {} moves/s over {games} games",
                args.rate.unwrap_or_default()
            )
        } else {
            format!("{games} pairs")
        }
    );
    for (code, detail) in &rec.first_errors {
        eprintln!("first {code}: {detail}");
    }
    let width = table
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    for (k, v) in &table {
        println!("  {k:<width$}  {v}");
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.svg {
        let title = format!(
            "frontier-load: {}, {} s",
            report["config"]["loop"].as_str().unwrap_or_default(),
            args.seconds
        );
        std::fs::write(path, svg::plot(&title, &rec.series))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn round(v: f64, places: i32) -> Value {
    let f = 10f64.powi(places);
    json!((v * f).round() / f)
}
