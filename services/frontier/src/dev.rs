//! `frontier dev`: the whole platform in one process, with nothing else installed.
//!
//! Every service runs here on its in-process adapters: game-session on the in-memory store
//! and bus, the clock on the in-memory deadline sets, the bot-worker taking the computer's
//! jobs from game-session's in-memory queue, the rating service and the fair-play service
//! fed by game-session's bus (each its own copy of every finished game), matchmaking on in-memory tickets (ratings from the rating service, games through
//! game-session's `StartMatch`, `matched` notices on an in-process bus that the gateway
//! follows as it follows `<ns>.player.<id>` on NATS), the gateway relaying from the
//! in-process event bus. The services
//! still call each other over gRPC — the same clients and servers as across machines — but
//! through in-memory pipes (`frontier_platform::inproc`), so the process opens one port:
//! the address it prints, serving the WebSocket, the HTTP API (and the web client).
//!
//! Accounts, finished games and ratings are kept in an embedded SQLite database in
//! `--data` (default `./frontier-data`), so a restart keeps players, results and ratings;
//! `--memory` keeps nothing on disk. Fair play's reports, marks and decisions are kept in
//! memory in either mode (lost on restart; Postgres keeps them in production). Live games in progress are held in memory and are lost
//! on restart in this mode (so is a finished game in the instant between its end and its
//! recording). Abuse limits that the distributed gateways share through Redis are off
//! (the per-connection message rate still applies), and guests are never expired.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use frontier_clock::Scheduler;
use frontier_game_session::bus::MemoryBus;
use frontier_game_session::service::GameService;
use frontier_game_session::store::MemoryStore;
use frontier_gateway::accounts::Accounts;
use frontier_gateway::hashing::{HashPool, PoolLimits};
use frontier_gateway::hub::{Hub, LocalSource};
use frontier_gateway::limits::{HashArgs, LimitArgs, Limits};
use frontier_platform::deadlines::MemoryDeadlines;
use frontier_platform::local_bus::LocalBus;
use frontier_platform::time::{Clock, SystemClock};
use frontier_platform::trace::traced;
use frontier_platform::{JwtKeys, Namespace, Shutdown, inproc};
use frontier_proto::gamesession::v1::game_session_client::GameSessionClient;
use frontier_proto::matchmaking::v1::matchmaking_client::MatchmakingClient;
use frontier_proto::rating::v1::ratings_client::RatingsClient;
use frontier_rating::store::RatingStore;
use tokio::net::TcpListener;

/// `frontier dev`: every service in one process.
#[derive(Debug, Clone, clap::Args)]
pub struct DevConfig {
    /// The one address: WebSocket (`/ws/v1`), HTTP API (`/api/…`) and the web client.
    #[arg(long, env = "FRONTIER_DEV_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Where accounts, finished games and ratings are kept between runs (an SQLite
    /// database, `frontier.db`, and the token-signing secret, `jwt-secret`).
    #[arg(long, env = "FRONTIER_DATA", default_value = "./frontier-data")]
    pub data: PathBuf,
    /// Keep nothing on disk: accounts, results and ratings last as long as the process.
    #[arg(long, env = "FRONTIER_DEV_MEMORY")]
    pub memory: bool,
    /// The public base URL for invite links (default: `http://` and the listen address).
    #[arg(long, env = "FRONTIER_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// How long issued tokens stay valid.
    #[arg(long, env = "FRONTIER_JWT_TTL", default_value = "12h", value_parser = frontier_platform::config::parse_duration)]
    pub jwt_ttl: Duration,
    /// Messages per second a connection may send, on average.
    #[arg(long, env = "FRONTIER_WS_RATE", default_value_t = 20.0)]
    pub ws_rate: f64,
    /// Messages a connection may send in a burst.
    #[arg(long, env = "FRONTIER_WS_BURST", default_value_t = 40)]
    pub ws_burst: u32,
    /// How games are played (as game-session's flags).
    #[command(flatten)]
    pub play: frontier_game_session::config::PlayArgs,
    /// Password hashing. The abuse limits that gateways share through Redis (guests,
    /// logins, connections and boards per address or player) are off here, and not offered.
    #[command(flatten)]
    pub hashing: HashArgs,
    /// Quick match: as `frontier matchmaking`'s flags (e.g. `--bot-after 5s` offers a bot
    /// sooner).
    #[command(flatten, next_help_heading = "Quick match")]
    pub matchmaking: frontier_matchmaking::PairingArgs,
}

/// The platform, running: where it listens, and what its rating service has recorded.
pub struct Running {
    /// The address it serves.
    pub addr: SocketAddr,
    /// The recording of finished games, for tests that wait for it.
    pub recorded: Arc<frontier_rating::ConsumerStats>,
    tasks: tokio::task::JoinSet<anyhow::Result<()>>,
    shutdown: Shutdown,
}

impl Running {
    /// Waits until `shutdown` is tripped and every service has stopped (or one failed).
    pub async fn wait(mut self) -> anyhow::Result<()> {
        let mut result = Ok(());
        while let Some(done) = self.tasks.join_next().await {
            // The first service to stop, for whatever reason, stops the others.
            self.shutdown.trigger();
            let outcome = done.context("a service task panicked").and_then(|r| r);
            if result.is_ok() {
                result = outcome;
            }
        }
        result
    }
}

/// Refuses a test hook variable that this build or this mode would not honour, as every
/// service does: game-session's when the build has no test hooks (a `test-hooks` build
/// honours them here too, through `--test-…`); rating's and bot-worker's always (the
/// single-process mode has no such hook).
fn refuse_test_variables() -> anyhow::Result<()> {
    frontier_platform::config::refuse_unbuilt_test_hooks(
        frontier_game_session::config::TEST_HOOKS_BUILT,
        frontier_game_session::config::TEST_HOOK_VARIABLES,
    )?;
    frontier_platform::config::refuse_unbuilt_test_hooks(
        false,
        frontier_rating::TEST_HOOK_VARIABLES,
    )?;
    frontier_platform::config::refuse_unbuilt_test_hooks(
        false,
        frontier_bot_worker::TEST_HOOK_VARIABLES,
    )
}

/// Runs `frontier dev` until `shutdown`.
pub async fn run(config: DevConfig, shutdown: Shutdown) -> anyhow::Result<()> {
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    let running = start(config, listener, shutdown).await?;
    println!("Frontier is running at http://{}/", running.addr);
    running.wait().await
}

/// Starts every service on `listener` (tests pass an ephemeral one).
pub async fn start(
    config: DevConfig,
    listener: TcpListener,
    shutdown: Shutdown,
) -> anyhow::Result<Running> {
    refuse_test_variables()?;
    let hasher = HashPool::with_limits(PoolLimits {
        threads: config.hashing.hash_threads,
        queue: config.hashing.hash_queue,
        per_second: config.hashing.hash_rate,
        nice: config.hashing.hash_nice,
    })
    .context("starting the password-hashing threads")?;
    if config.memory {
        let secret = random_secret()?;
        start_on(
            config,
            listener,
            shutdown,
            frontier_gateway::accounts::MemoryAccounts::new(hasher),
            frontier_rating::memory::MemoryStore::new(),
            secret,
        )
        .await
    } else {
        std::fs::create_dir_all(&config.data)
            .with_context(|| format!("creating {}", config.data.display()))?;
        let secret = kept_secret(&config.data.join("jwt-secret"))?;
        let db = config.data.join("frontier.db");
        let pool = frontier_platform::sqlite::open(&db)
            .await
            .with_context(|| format!("opening {}", db.display()))?;
        let accounts = frontier_gateway::sqlite::SqliteAccounts::open(pool.clone(), hasher)
            .await
            .context("accounts database")?;
        let store = frontier_rating::sqlite::SqliteStore::open(pool)
            .await
            .context("games and ratings database")?;
        start_on(config, listener, shutdown, accounts, store, secret).await
    }
}

async fn start_on<A: Accounts, S: RatingStore>(
    config: DevConfig,
    listener: TcpListener,
    shutdown: Shutdown,
    accounts: A,
    store: S,
    jwt_secret: String,
) -> anyhow::Result<Running> {
    let addr = listener.local_addr()?;
    let ns = Namespace::new("dev").map_err(anyhow::Error::msg)?;
    let time: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut tasks = tokio::task::JoinSet::new();

    // game-session, on the in-memory store and bus; finished games go to rating.
    let events = LocalBus::new(4096);
    let deadlines = MemoryDeadlines::new();
    let (finished_tx, finished_games) = tokio::sync::mpsc::unbounded_channel();
    let (layouts, settings) = frontier_game_session::rules_of_play(&config.play)?;
    let bus = MemoryBus::on(ns.clone(), events.clone()).with_finished_sink(finished_tx);
    let bot_jobs = bus.jobs();
    let core = Arc::new(GameService::new(
        MemoryStore::with_deadlines(deadlines.clone()),
        bus,
        time.clone(),
        layouts,
        settings,
    ));
    let (sessions_connector, sessions_listener) = inproc::pair();
    tasks.spawn(
        frontier_game_session::Service::from_parts(core, Duration::from_secs(1))
            .serve(sessions_listener, shutdown.clone()),
    );
    let sessions = || {
        GameSessionClient::new(traced(
            sessions_connector.channel("http://game-session.in-process"),
        ))
    };

    // The clock.
    let nudge = deadlines.nudge();
    let scheduler = Scheduler::new(
        deadlines,
        sessions(),
        time.clone(),
        frontier_clock::Settings::default(),
    )
    .with_nudge(nudge);
    tasks.spawn(frontier_clock::Service::from_parts(scheduler).serve(shutdown.clone()));

    // The bot-worker: the computer's moves, from game-session's in-memory job queue.
    tasks.spawn(
        frontier_bot_worker::Service::from_parts(
            frontier_bot_worker::source::LocalSource::new(bot_jobs),
            sessions(),
            frontier_bot_worker::Settings::default(),
        )
        .serve(shutdown.clone()),
    );

    // Finished games go to rating and to fair play, each its own copy.
    let (rating_tx, finished_rx) = tokio::sync::mpsc::unbounded_channel();
    let (screen_tx, screen_rx) = tokio::sync::mpsc::unbounded_channel();
    tasks.spawn(async move {
        let mut finished = finished_games;
        while let Some(record) = finished.recv().await {
            let _ = rating_tx.send(record.clone());
            let _ = screen_tx.send(record);
        }
        Ok(())
    });

    // Rating: records what game-session finishes, serves the dashboard reads.
    let recorded = Arc::new(frontier_rating::ConsumerStats::default());
    {
        let store = store.clone();
        let recorded = recorded.clone();
        let shutdown = shutdown.clone();
        tasks.spawn(async move {
            frontier_rating::consume_local(
                store,
                finished_rx,
                frontier_rating::ConsumerSettings::named("dev"),
                recorded,
                shutdown,
            )
            .await;
            Ok(())
        });
    }
    let (rating_connector, rating_listener) = inproc::pair();
    tasks.spawn(frontier_rating::serve_api(
        rating_listener,
        frontier_rating::grpc::RatingsService::new(store, time.clone()),
        shutdown.clone(),
    ));
    let ratings = frontier_gateway::records::RatingClient::new(traced(
        rating_connector.channel("http://rating.in-process"),
    ));

    // Fair play: screens the rated games in memory (reports, marks and decisions last as
    // long as the process), with ratings from the rating service; its API behind the
    // gateway's moderator endpoints.
    let screening = frontier_fairplay_service::MemoryStore::new(Default::default());
    let screen = frontier_fairplay_service::consume_local(
        screening.clone(),
        screen_rx,
        frontier_fairplay_service::ConsumerSettings::named("dev"),
        frontier_fairplay_service::Analyser {
            settings: Default::default(),
            ratings: frontier_fairplay_service::RatingSource::over(
                rating_connector.channel("http://rating.in-process"),
            ),
            clock: time.clone(),
        },
        Arc::default(),
        shutdown.clone(),
    );
    tasks.spawn(async move {
        screen.await;
        Ok(())
    });
    let (fairplay_connector, fairplay_listener) = inproc::pair();
    tasks.spawn(frontier_fairplay_service::serve_api(
        fairplay_listener,
        frontier_fairplay_service::grpc::FairPlayService::new(screening, time.clone()),
        shutdown.clone(),
    ));
    let fairplay = frontier_gateway::moderation::FairPlayClient::new(traced(
        fairplay_connector.channel("http://fairplay.in-process"),
    ));

    // Matchmaking: tickets in memory, ratings from the rating service, games through
    // game-session, notices on their own in-process bus.
    let notices = LocalBus::new(1024);
    let matchmaker = frontier_matchmaking::Matchmaker::new(
        frontier_matchmaking::MemoryTickets::new(time.clone()),
        frontier_matchmaking::GameSessionMaker::over(sessions()),
        frontier_matchmaking::LocalNotifier::new(notices.clone(), ns.clone()),
        frontier_matchmaking::RatingServiceSource::new(RatingsClient::new(
            rating_connector.channel("http://rating.in-process"),
        )),
        config.matchmaking.pairing(),
        time.clone(),
        config.matchmaking.settings(),
    );
    let (matchmaking_connector, matchmaking_listener) = inproc::pair();
    tasks.spawn(
        frontier_matchmaking::Service::from_parts(matchmaker)
            .serve(matchmaking_listener, shutdown.clone()),
    );
    let matchmaking = frontier_gateway::matchmaking::MatchmakingLink::over(MatchmakingClient::new(
        traced(matchmaking_connector.channel("http://matchmaking.in-process")),
    ));
    // Player notices: game-session's rematch frames travel with the game events,
    // matchmaking's `matched` notices on their own bus.
    let player_notices = frontier_gateway::notices::PlayerNotices::new(&ns);
    player_notices.local(&events, frontier_gateway::notices::LocalKind::Frames);
    player_notices.local(&notices, frontier_gateway::notices::LocalKind::Matched);

    // The gateway: the one port.
    let state = Arc::new(frontier_gateway::AppState {
        accounts,
        ratings: Some(ratings),
        // Fair play in memory (above): marks and the moderation API as in production.
        fairplay: Some(fairplay),
        matchmaking: Some(matchmaking),
        jwt: JwtKeys::new(jwt_secret.as_bytes(), config.jwt_ttl).map_err(anyhow::Error::msg)?,
        sessions: sessions(),
        hub: Hub::new(Box::new(LocalSource(events))),
        followers: Default::default(),
        notices: player_notices,
        limits: Limits::disabled(ns.clone(), LimitArgs::defaults_with(config.hashing.clone())),
        readiness: frontier_platform::admin::Readiness::new(),
        ns,
        settings: frontier_gateway::Settings {
            public_url: config
                .public_url
                .clone()
                .unwrap_or_else(|| format!("http://{addr}")),
            rate_per_second: config.ws_rate,
            rate_burst: config.ws_burst,
            auth_timeout: Duration::from_secs(10),
            outbound_queue: 512,
            presence_interval: Duration::from_secs(10),
            rematch_grace: Duration::from_secs(10),
        },
        shutdown: Shutdown::new(),
        connections: tokio_util::task::TaskTracker::new(),
    });
    tasks.spawn(frontier_gateway::Service::from_state(state).serve(listener, shutdown.clone()));
    Ok(Running {
        addr,
        recorded,
        tasks,
        shutdown,
    })
}

/// A fresh signing secret (tokens last as long as the process).
fn random_secret() -> anyhow::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("random source: {e}"))?;
    Ok(hex::encode(bytes))
}

/// The signing secret kept in `path` (made on first start, readable by its owner only), so
/// that tokens stay valid across restarts.
fn kept_secret(path: &Path) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(s) if s.trim().len() >= 32 => return Ok(s.trim().to_owned()),
        Ok(_) => anyhow::bail!("{} holds no usable secret; remove it", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    }
    let secret = random_secret()?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    use std::io::Write as _;
    options
        .open(path)
        .and_then(|mut f| f.write_all(secret.as_bytes()))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(secret)
}
