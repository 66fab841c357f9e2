//! The one Frontier binary: `frontier <service> [flags]`. Each service takes the same
//! flags and `FRONTIER_*` variables as its own binary (`frontier <service> --help`).
//!
//! Shutdown is two-stage: the first SIGTERM or Ctrl-C stops the service taking new work and
//! lets it drain (the gateway closes client sockets with 1001 so they resume elsewhere;
//! game-session finishes calls in flight; bot-worker stops pulling and finishes the jobs it
//! holds), within `--drain-timeout`; a second signal, or the deadline, exits at once.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use frontier_platform::Shutdown;

/// Frontier: hidden, atomic and standard chess online.
#[derive(Debug, Parser)]
#[command(name = "frontier", version, propagate_version = true)]
struct Cli {
    /// How long a service may drain after the first shutdown signal before it is stopped.
    #[arg(long, global = true, env = "FRONTIER_DRAIN_TIMEOUT", default_value = "20s", value_parser = frontier_platform::config::parse_duration)]
    drain_timeout: Duration,
    /// Worker threads of the async runtime (default: one per CPU this process may use).
    /// Where several services share a few cores, one each avoids most of the cost of
    /// waking threads (docs/benchmarks.md).
    #[arg(long, global = true, env = "FRONTIER_WORKER_THREADS", value_parser = clap::value_parser!(u16).range(1..=1024))]
    worker_threads: Option<u16>,
    #[command(subcommand)]
    service: Service,
}

// Parsed once at start: the size difference between the configurations does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Service {
    /// The edge: WebSocket clients and the HTTP API.
    Gateway(frontier_gateway::Config),
    /// The authority over live games (gRPC).
    GameSession(frontier_game_session::Config),
    /// Fires flag falls and first-move limits.
    Clock(frontier_clock::Config),
    /// Matchmaking: quick-match seeks in pools, a person first, then a labelled bot.
    Matchmaking(frontier_matchmaking::Config),
    /// Records finished games and rates them; serves the dashboard reads (gRPC).
    Rating(frontier_rating::Config),
    /// Screens finished rated games for engine use; the moderation queue (gRPC).
    Fairplay(frontier_fairplay_service::Config),
    /// Everything in one process, nothing to install: one address to open, accounts,
    /// results and ratings kept in an embedded SQLite file (`--data`) or in memory.
    Dev(frontier::dev::DevConfig),
    /// Thinks for the computer's seats: bot jobs from the JetStream work queue.
    BotWorker(frontier_bot_worker::Config),
    /// Not a service: plays one move through a running gateway and exits (0: it was
    /// played). The chart's `helm test`.
    Smoke(frontier::smoke::SmokeArgs),
    /// Not a service: operator commands (`frontier admin grant-moderator NAME`, …).
    #[command(subcommand)]
    Admin(frontier::admin::AdminCommand),
}

impl Service {
    fn name(&self) -> &'static str {
        match self {
            Service::Gateway(_) => "gateway",
            Service::GameSession(_) => "game-session",
            Service::Clock(_) => "clock",
            Service::Matchmaking(_) => "matchmaking",
            Service::Rating(_) => "rating",
            Service::Fairplay(_) => "fairplay",
            Service::Dev(_) => "dev",
            Service::BotWorker(_) => "bot-worker",
            Service::Smoke(_) => "smoke",
            Service::Admin(_) => "admin",
        }
    }

    async fn run(self, shutdown: Shutdown) -> anyhow::Result<()> {
        match self {
            Service::Gateway(c) => frontier_gateway::run(c, shutdown).await,
            Service::GameSession(c) => frontier_game_session::run(c, shutdown).await,
            Service::Clock(c) => frontier_clock::run(c, shutdown).await,
            Service::Matchmaking(c) => frontier_matchmaking::run(c, shutdown).await,
            Service::Rating(c) => frontier_rating::run(c, shutdown).await,
            Service::Fairplay(c) => frontier_fairplay_service::run(c, shutdown).await,
            Service::Dev(c) => frontier::dev::run(c, shutdown).await,
            Service::BotWorker(c) => frontier_bot_worker::run(c, shutdown).await,
            Service::Smoke(args) => frontier::smoke::run(args).await,
            Service::Admin(command) => frontier::admin::run(command).await,
        }
    }
}

/// mimalloc instead of the system allocator: at saturation glibc's malloc and free were a
/// fifth to a third of game-session's and the gateway's CPU (docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Transparent huge pages off for this process, unless `MIMALLOC_ALLOW_THP` is set (then
/// mimalloc's own choice stands). mimalloc asks for huge pages on its memory and gives what
/// stayed free for a second back to the kernel; touched again, such memory is faulted in a
/// 2 MiB page at a time, zeroed whole on the thread that allocated. A periodic batch (the
/// presence ticks) then stalled a runtime thread for milliseconds at a time, and a move
/// waiting on it with it: with 4 KiB pages only what is touched is zeroed (issue 29,
/// docs/benchmarks.md, "Huge pages off").
fn no_transparent_huge_pages() {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return;
    }
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        eprintln!("frontier: transparent huge pages stay on: {e}");
    }
}

fn main() -> ExitCode {
    no_transparent_huge_pages();
    let cli = Cli::parse();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.enable_all();
    if let Some(n) = cli.worker_threads {
        builder.worker_threads(usize::from(n));
    }
    let runtime = match builder.build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("frontier: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let _telemetry = frontier_platform::telemetry::init(cli.service.name())?;
        let shutdown = Shutdown::new();
        frontier_platform::shutdown::two_stage(shutdown.clone(), cli.drain_timeout);
        cli.service.run(shutdown).await
    });
    // Tasks still running after the service returned (detached work) are not waited for.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("frontier: {e:#}");
            ExitCode::FAILURE
        }
    }
}
