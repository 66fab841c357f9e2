//! The bot-worker: computes the computer's moves. game-session enqueues a job whenever a
//! bot seat owes an action in a live game (its move, or its pending promotion choice);
//! workers pull the jobs from a JetStream work queue, think with the engine on the bot
//! seat's view alone, and act through game-session like any player.
//!
//! - **Queue.** The work-queue stream `<NS>_BOT_JOBS` (subjects `<ns>.bot.jobs.<variant>`,
//!   message id = job id `<game id>:<version>`), one durable pull consumer
//!   `bot-workers` (`frontier_platform::names::BOT_WORKERS_CONSUMER`) shared by every
//!   worker: explicit ack, `--ack-wait`, `--max-deliver`. Each worker pulls one job at a
//!   time and only when it has a free thinking slot (`--concurrency`, default: the
//!   machine's cores), so waiting jobs stay with the server for whichever worker is free.
//! - **Once.** A job is acted on with `expected_version` = its version and the job id as
//!   the action id: a job done twice (published twice, redelivered after a worker died)
//!   applies at most one move. It is acknowledged only after game-session answered; a
//!   final refusal (`stale_version`, `game_over`, `not_your_turn`, …) is an answer too.
//! - **Never stuck.** A job that can never be done (undecodable; an impossible view: bad
//!   FEN, unknown level, seat or variant, another player in the bot's seat, identities
//!   that cannot be accounted for) is
//!   terminated, logged once with its stream sequence and counted
//!   (`frontier_bot_jobs_rejected_total{reason}`). A transient failure (game-session
//!   unreachable or failing, a timeout) is returned with a delay that doubles per
//!   delivery; after `--max-deliver` deliveries it is set aside and counted
//!   (`frontier_bot_jobs_set_aside_total`).
//! - **Long thinks.** While a job is being worked on the worker tells the server so
//!   (in-progress acks every third of `ack_wait`), so a long search is not handed to
//!   another worker; a worker that dies stops doing that, and its job goes to another
//!   worker `ack_wait` later.
//! - **Shutdown.** The first signal stops pulling (a job the last pull request brings is
//!   released at once, for another worker) and lets the jobs in hand finish; the second
//!   stops at once, and those jobs go to other workers after `ack_wait`.
//! - **Fair.** The engine's input is the job's view only (`view.rs`): for hidden chess the
//!   public position, the public reveals and the identities this seat captured.
//!
//! **Scaling (KEDA).** The `nats-jetstream` trigger reads the consumer's lag from the NATS
//! server's monitoring endpoint (`/jsz`, port 8222): its metadata are
//! `natsServerMonitoringEndpoint`, `account` (`$G` on a server without accounts),
//! `stream: <NS>_BOT_JOBS` (`FRONTIER_BOT_JOBS` in the default namespace), `consumer:
//! bot-workers` and a `lagThreshold` (jobs per worker). The consumer's own figures there
//! are `num_pending` (jobs not yet delivered) and `num_ack_pending` (delivered, not yet
//! settled); each worker exports their sum as `frontier_bot_jobs_backlog` (read every 5 s)
//! for dashboards or a Prometheus trigger.
//!
//! Metrics: `frontier_bot_jobs_total{variant,level,outcome}` (outcome `moved`,
//! `duplicate`, `refused`, `rejected`, `retried`, `set_aside`),
//! `frontier_bot_jobs_refused_total{reason}`, `frontier_bot_jobs_rejected_total{reason}`,
//! `frontier_bot_jobs_failures_total{kind}`, `frontier_bot_jobs_set_aside_total`,
//! `frontier_bot_think_seconds{level}`, `frontier_bot_job_queue_seconds` (enqueued →
//! started), `frontier_bot_jobs_in_progress`, `frontier_bot_jobs_backlog`.
//!
//! Modules: `view` (the job's view into the engine's input, pure), `source` (the
//! [`JobSource`] trait and the JetStream consumer), `act` (the [`Sessions`] trait and the
//! gRPC client of game-session); the worker loop and `run` are here.

pub mod act;
pub mod source;
pub mod view;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use frontier_platform::config::{AdminArgs, NamespaceArgs, NatsArgs, parse_duration};
use frontier_platform::time::{Clock, SystemClock};
use frontier_platform::trace::Traced;
use frontier_platform::{Namespace, Shutdown};
use frontier_proto::gamesession::v1::game_session_client::GameSessionClient;
use frontier_protocol::BotJob;
use futures_util::FutureExt as _;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

pub use act::{ActCall, ActError, Acted, Sessions, sessions};
pub use source::{BacklogProbe, Delivery, JetStreamSource, JobSource, SourceError};
pub use view::{BotAction, JobError, Prepared};

/// bot-worker: thinks for the computer's seats.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "bot-worker", version)]
pub struct Config {
    /// game-session gRPC URLs, comma-separated (calls are balanced across them).
    #[arg(
        long,
        alias = "game-session-url",
        env = "FRONTIER_GAME_SESSION_URLS",
        value_delimiter = ',',
        default_value = "http://127.0.0.1:50051"
    )]
    pub game_session_urls: Vec<String>,
    /// NATS.
    #[command(flatten)]
    pub nats: NatsArgs,
    /// Namespace.
    #[command(flatten)]
    pub namespace: NamespaceArgs,
    /// Jobs thought about at once (each on a blocking thread). Default: the machine's
    /// cores.
    #[arg(long, env = "FRONTIER_BOT_CONCURRENCY")]
    pub concurrency: Option<usize>,
    /// How long a delivered job may go without an acknowledgement (or an in-progress
    /// signal, sent every third of it) before the server hands it to another worker: the
    /// delay a bot's move suffers when its worker dies mid-think. Short, because a live
    /// worker signals progress; not shorter than a few round trips to NATS. It is a setting
    /// of the shared consumer: a worker that starts sets it (create or update).
    #[arg(long, env = "FRONTIER_BOT_ACK_WAIT", default_value = "3s", value_parser = parse_duration)]
    pub ack_wait: Duration,
    /// Most deliveries of one job (the first included); a job still failing transiently
    /// after them is set aside and counted.
    #[arg(long, env = "FRONTIER_BOT_MAX_DELIVER", default_value_t = 30)]
    pub max_deliver: i64,
    /// First retry delay after a transient failure; doubles per delivery up to
    /// `--retry-cap`.
    #[arg(long, env = "FRONTIER_BOT_RETRY_BASE", default_value = "500ms", value_parser = parse_duration)]
    pub retry_base: Duration,
    /// Longest retry delay.
    #[arg(long, env = "FRONTIER_BOT_RETRY_CAP", default_value = "10s", value_parser = parse_duration)]
    pub retry_cap: Duration,
    /// Longest wait for game-session's answer to one action.
    #[arg(long, env = "FRONTIER_BOT_ACT_TIMEOUT", default_value = "5s", value_parser = parse_duration)]
    pub act_timeout: Duration,
    /// Admin endpoints: `/metrics`, `/healthz`, `/readyz`.
    #[command(flatten)]
    pub admin: AdminArgs,
    /// TEST ONLY (`test-hooks` builds): before each think, print `THINKING <job id>` on
    /// standard output and wait this long (in-progress acks continue), so a test can kill
    /// the process while it holds a job.
    #[cfg(feature = "test-hooks")]
    #[arg(long, env = "FRONTIER_TEST_THINK_DELAY", hide = true, value_parser = parse_duration)]
    pub test_think_delay: Option<Duration>,
    /// TEST ONLY (`test-hooks` builds): search at most this many nodes per decision, at
    /// every level (the levels keep their imprecision), so tests play whole games fast.
    #[cfg(feature = "test-hooks")]
    #[arg(long, env = "FRONTIER_TEST_MAX_NODES", hide = true)]
    pub test_max_nodes: Option<u64>,
}

/// The environment variables of the test hooks: a build without `test-hooks` refuses to
/// start when one is set.
pub const TEST_HOOK_VARIABLES: &[&str] = &["FRONTIER_TEST_THINK_DELAY", "FRONTIER_TEST_MAX_NODES"];

/// How the worker works.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Jobs thought about at once.
    pub concurrency: usize,
    /// The consumer's `ack_wait`; in-progress acks go every third of it.
    pub ack_wait: Duration,
    /// The consumer's `max_deliver`.
    pub max_deliver: i64,
    /// First retry delay after a transient failure; doubles per delivery.
    pub retry_base: Duration,
    /// Longest retry delay.
    pub retry_cap: Duration,
    /// Longest wait for game-session's answer.
    pub act_timeout: Duration,
    /// TEST ONLY (`test-hooks` builds): announce and wait this long before each think.
    #[cfg(feature = "test-hooks")]
    pub think_delay: Option<Duration>,
    /// TEST ONLY (`test-hooks` builds): a node cap on every decision.
    #[cfg(feature = "test-hooks")]
    pub max_nodes: Option<u64>,
}

impl Default for Settings {
    /// The production defaults, on the machine's cores.
    fn default() -> Settings {
        Settings {
            concurrency: default_concurrency(),
            ack_wait: Duration::from_secs(3),
            max_deliver: 30,
            retry_base: Duration::from_millis(500),
            retry_cap: Duration::from_secs(10),
            act_timeout: Duration::from_secs(5),
            #[cfg(feature = "test-hooks")]
            think_delay: None,
            #[cfg(feature = "test-hooks")]
            max_nodes: None,
        }
    }
}

impl Settings {
    /// From configuration.
    pub fn from_config(config: &Config) -> Settings {
        Settings {
            concurrency: config
                .concurrency
                .filter(|n| *n > 0)
                .unwrap_or_else(default_concurrency),
            ack_wait: config.ack_wait,
            max_deliver: config.max_deliver,
            retry_base: config.retry_base,
            retry_cap: config.retry_cap,
            act_timeout: config.act_timeout,
            #[cfg(feature = "test-hooks")]
            think_delay: config.test_think_delay,
            #[cfg(feature = "test-hooks")]
            max_nodes: config.test_max_nodes,
        }
    }

    /// The delay before delivery number `delivered + 1`, after delivery `delivered` (from
    /// 1) failed transiently: `retry_base × 2^(delivered − 1)`, at most `retry_cap`.
    pub fn retry_delay(&self, delivered: i64) -> Duration {
        let doublings = u32::try_from(delivered.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
        self.retry_base
            .saturating_mul(1u32 << doublings)
            .min(self.retry_cap)
    }

    /// How often a job being worked on is reported in progress.
    fn progress_every(&self) -> Duration {
        (self.ack_wait / 3).max(Duration::from_millis(50))
    }
}

fn default_concurrency() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// What the worker did with its jobs, counted since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Jobs taken to the engine (a redelivered job counts again).
    pub thinking: u64,
    /// Actions applied.
    pub moved: u64,
    /// Actions game-session had applied before (same job id): nothing changed.
    pub duplicates: u64,
    /// Final refusals (`stale_version`, `game_over`, …): acknowledged, nothing changed.
    pub refused: u64,
    /// Jobs that can never be done, terminated.
    pub rejected: u64,
    /// Transient failures, each followed by a delayed redelivery.
    pub retries: u64,
    /// Jobs given up on after their last delivery.
    pub set_aside: u64,
}

/// The counts, observable as they change (tests await them; metrics export them too). A
/// job is counted once it is settled with the queue (acked, terminated or returned).
#[derive(Debug)]
pub struct Stats(watch::Sender<Counts>);

impl Default for Stats {
    fn default() -> Stats {
        Stats(watch::channel(Counts::default()).0)
    }
}

impl Stats {
    /// The counts now.
    pub fn counts(&self) -> Counts {
        *self.0.borrow()
    }

    /// A receiver that sees every change.
    pub fn subscribe(&self) -> watch::Receiver<Counts> {
        self.0.subscribe()
    }

    fn bump(&self, f: impl FnOnce(&mut Counts)) {
        self.0.send_modify(f);
    }
}

/// The labels of a job's metrics.
#[derive(Debug, Clone, Copy)]
struct Labels {
    variant: &'static str,
    level: &'static str,
}

impl Labels {
    const UNKNOWN: Labels = Labels {
        variant: "unknown",
        level: "unknown",
    };

    fn of(job: &BotJob) -> Labels {
        Labels {
            variant: job
                .view
                .variant
                .parse::<frontier_rules::Variant>()
                .map_or("unknown", |v| v.name()),
            level: job
                .level
                .parse::<frontier_engine::Level>()
                .map_or("unknown", |l| l.name()),
        }
    }

    fn count(self, outcome: &'static str) {
        metrics::counter!("frontier_bot_jobs_total",
            "variant" => self.variant, "level" => self.level, "outcome" => outcome)
        .increment(1);
    }
}

/// Works jobs from `source` until `shutdown`, acting through `sessions`. On shutdown it
/// stops pulling (a job its last pull request brings is released at once) and finishes
/// the jobs it holds (each bounded by its think and the act timeout); a job it cannot
/// finish (the process stopped hard) goes to another worker after `ack_wait`.
pub async fn work<S: JobSource, A: Sessions>(
    mut source: S,
    sessions: A,
    settings: Settings,
    stats: Arc<Stats>,
    clock: Arc<dyn Clock>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let settings = Arc::new(settings);
    let slots = Arc::new(Semaphore::new(settings.concurrency.max(1)));
    let mut jobs = JoinSet::new();
    let backlog = tokio::spawn(watch_backlog(source.probe(), shutdown.clone()));
    loop {
        while let Some(done) = jobs.try_join_next() {
            log_job_task(done);
        }
        let slot = tokio::select! {
            _ = shutdown.wait() => break,
            slot = slots.clone().acquire_owned() => slot.context("the slots are never closed")?,
        };
        // Not raced against the shutdown signal: the source ends its request itself.
        let delivery = match source.next(&shutdown).await {
            None => break,
            Some(Ok(d)) if shutdown.wait().now_or_never().is_some() => {
                // Came in as the worker stops: released at once for another worker.
                if let Err(e) = d.nak(Duration::ZERO).await {
                    tracing::warn!(error = %e, "releasing a bot job failed; it comes back after ack_wait");
                }
                break;
            }
            Some(Ok(d)) => d,
            Some(Err(e)) => {
                tracing::warn!(error = %e, "pulling a bot job failed; trying again shortly");
                tokio::select! {
                    _ = shutdown.wait() => break,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                }
            }
        };
        let (sessions, settings, stats, clock) = (
            sessions.clone(),
            settings.clone(),
            stats.clone(),
            clock.clone(),
        );
        jobs.spawn(async move {
            metrics::gauge!("frontier_bot_jobs_in_progress").increment(1.0);
            handle(delivery, &sessions, &settings, &stats, clock.as_ref()).await;
            metrics::gauge!("frontier_bot_jobs_in_progress").decrement(1.0);
            drop(slot);
        });
    }
    if !jobs.is_empty() {
        tracing::info!(
            jobs = jobs.len(),
            "stopped pulling bot jobs; finishing those in hand"
        );
    }
    while let Some(done) = jobs.join_next().await {
        log_job_task(done);
    }
    backlog.abort();
    Ok(())
}

/// A job's task panicked (a bug): its job was not settled and comes back after
/// `ack_wait`, until `max_deliver`.
fn log_job_task(done: Result<(), tokio::task::JoinError>) {
    if let Err(e) = done {
        tracing::error!(error = %e, "a bot job's task failed; the job will be delivered again");
        metrics::counter!("frontier_bot_jobs_failures_total", "kind" => "task").increment(1);
    }
}

/// Keeps `frontier_bot_jobs_backlog` (pending + awaiting ack on the shared consumer: the
/// figure KEDA scales on) fresh, every five seconds.
async fn watch_backlog<P: BacklogProbe>(mut probe: P, shutdown: Shutdown) {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.wait() => return,
            _ = tick.tick() => {}
        }
        match probe.backlog().await {
            Ok(n) => metrics::gauge!("frontier_bot_jobs_backlog").set(n as f64),
            Err(e) => tracing::debug!(error = %e, "reading the bot-job backlog failed"),
        }
    }
}

/// Runs `work` while telling the source, every `every`, that the job is in progress.
async fn in_progress<D: Delivery, F: Future>(delivery: &D, every: Duration, work: F) -> F::Output {
    tokio::pin!(work);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tokio::select! {
            out = &mut work => return out,
            _ = tick.tick() => {
                if let Err(e) = delivery.in_progress().await {
                    tracing::warn!(error = %e, "in-progress ack failed");
                }
            }
        }
    }
}

/// One job, settled once.
#[tracing::instrument(name = "bot.job", skip_all, fields(sequence = delivery.sequence(), delivered = delivery.delivered(), job = tracing::field::Empty))]
async fn handle<D: Delivery, A: Sessions>(
    delivery: D,
    sessions: &A,
    settings: &Settings,
    stats: &Stats,
    clock: &dyn Clock,
) {
    let sequence = delivery.sequence();
    let job = match view::decode(delivery.payload()) {
        Ok(job) => job,
        Err(e) => return reject(&delivery, stats, Labels::UNKNOWN, sequence, &e).await,
    };
    tracing::Span::current().record("job", job.job.as_str());
    let labels = Labels::of(&job);
    let prepared = match view::prepare(&job) {
        Ok(p) => p,
        Err(e) => return reject(&delivery, stats, labels, sequence, &e).await,
    };
    let now_ms = clock.now_ms();
    metrics::histogram!("frontier_bot_job_queue_seconds")
        .record(now_ms.saturating_sub(job.enqueued_at_ms).max(0) as f64 / 1000.0);
    let every = settings.progress_every();
    let clock_info = view::clock_info(&job.view, prepared.view.seat, now_ms);
    let seed = view::seed(&job.job);
    let level = prepared.level;
    let started = std::time::Instant::now();
    stats.bump(|c| c.thinking += 1);
    let think = async {
        #[cfg(feature = "test-hooks")]
        if let Some(delay) = settings.think_delay {
            announce_thinking(&job.job);
            tokio::time::sleep(delay).await;
        }
        #[cfg(feature = "test-hooks")]
        let limits = settings.max_nodes.map(|n| frontier_engine::Limits {
            nodes: Some(n),
            deadline: None,
        });
        #[cfg(not(feature = "test-hooks"))]
        let limits = None;
        tokio::task::spawn_blocking(move || {
            frontier_engine::think(&frontier_engine::Request {
                view: &prepared.view,
                level,
                clock: clock_info,
                seed,
                limits,
            })
        })
        .await
    };
    let thought = in_progress(&delivery, every, think).await;
    metrics::histogram!("frontier_bot_think_seconds", "level" => level.name())
        .record(started.elapsed().as_secs_f64());
    let thought = match thought {
        Ok(Ok(thought)) => thought,
        Ok(Err(e)) => {
            // The view said the seat is to act in a game in play; the engine disagrees:
            // thinking again on the same view cannot change that.
            let reason = match e {
                frontier_engine::ThinkError::NotToAct => "not_to_act",
                frontier_engine::ThinkError::NoLegalMove => "no_legal_move",
            };
            tracing::error!(sequence, reason, error = %e, "terminating a bot job the engine cannot answer");
            return settle_rejected(&delivery, stats, labels, reason).await;
        }
        Err(e) => {
            // The search panicked: a bug, and the same seed would panic again.
            tracing::error!(sequence, error = %e, "the engine failed on a bot job; terminating it");
            metrics::counter!("frontier_bot_jobs_failures_total", "kind" => "engine").increment(1);
            return settle_rejected(&delivery, stats, labels, "engine_failed").await;
        }
    };
    let call = ActCall {
        game_id: job.game_id.clone(),
        player_id: job.player_id.clone(),
        action_id: job.job.clone(),
        expected_version: job.version,
        action: BotAction::from(thought.decision),
    };
    let answer = in_progress(
        &delivery,
        every,
        tokio::time::timeout(settings.act_timeout, sessions.act(call)),
    )
    .await
    .unwrap_or_else(|_| Err(ActError::Transient("no answer in time".to_owned())));
    match answer {
        Ok(acted) => {
            let (outcome, version) = match acted {
                Acted::Applied(v) => ("moved", v),
                Acted::Duplicate(v) => ("duplicate", v),
            };
            tracing::info!(
                outcome,
                version,
                nodes = thought.nodes,
                depth = thought.depth,
                "bot acted"
            );
            labels.count(outcome);
            settle(delivery.ack().await);
            stats.bump(|c| match acted {
                Acted::Applied(_) => c.moved += 1,
                Acted::Duplicate(_) => c.duplicates += 1,
            });
        }
        Err(ActError::Refused(code)) => {
            // Final: the game moved on (or ended) without this action, or the action was
            // wrong; acting again cannot change that.
            tracing::info!(
                reason = code.as_str(),
                "game-session refused the bot's action"
            );
            metrics::counter!("frontier_bot_jobs_refused_total", "reason" => code.as_str())
                .increment(1);
            labels.count("refused");
            settle(delivery.ack().await);
            stats.bump(|c| c.refused += 1);
        }
        Err(ActError::Transient(why)) => {
            metrics::counter!("frontier_bot_jobs_failures_total", "kind" => "act").increment(1);
            let delivered = delivery.delivered();
            if delivered >= settings.max_deliver {
                tracing::error!(sequence, delivered, %why,
                    "giving up on a bot job after its last delivery; set aside");
                metrics::counter!("frontier_bot_jobs_set_aside_total").increment(1);
                labels.count("set_aside");
                settle(delivery.term().await);
                stats.bump(|c| c.set_aside += 1);
                return;
            }
            let delay = settings.retry_delay(delivered);
            tracing::warn!(sequence, delivered, ?delay, %why, "acting failed; retrying later");
            labels.count("retried");
            settle(delivery.nak(delay).await);
            stats.bump(|c| c.retries += 1);
        }
    }
}

/// Terminates a job that can never be done, logged once (a terminated job never comes
/// back). The reason names what was wrong, never a piece's identity.
async fn reject<D: Delivery>(
    delivery: &D,
    stats: &Stats,
    labels: Labels,
    sequence: u64,
    error: &JobError,
) {
    tracing::error!(sequence, reason = error.reason(), %error, "terminating a bot job that can never be done");
    settle_rejected(delivery, stats, labels, error.reason()).await;
}

async fn settle_rejected<D: Delivery>(
    delivery: &D,
    stats: &Stats,
    labels: Labels,
    reason: &'static str,
) {
    metrics::counter!("frontier_bot_jobs_rejected_total", "reason" => reason).increment(1);
    labels.count("rejected");
    settle(delivery.term().await);
    stats.bump(|c| c.rejected += 1);
}

fn settle(result: Result<(), SourceError>) {
    if let Err(e) = result {
        // The job comes back after `ack_wait` and is settled again: game-session's
        // duplicate detection keeps a second action from applying.
        tracing::warn!(error = %e, "settling a bot job failed");
    }
}

/// TEST ONLY: tells a waiting test a job is held (see `test_think_delay`).
#[cfg(feature = "test-hooks")]
fn announce_thinking(job_id: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "THINKING {job_id}");
    let _ = out.flush();
}

/// The worker, built and ready: [`Service::serve`] works jobs until the shutdown signal.
/// The shape of every service crate (`build` from configuration, or `from_parts` with
/// other adapters, then `serve`); like the clock it serves nobody but its admin
/// endpoints.
pub struct Service<S = JetStreamSource, A = GameSessionClient<Traced>> {
    source: S,
    sessions: A,
    settings: Settings,
    stats: Arc<Stats>,
    clock: Arc<dyn Clock>,
    /// What `/readyz` checks.
    pub readiness: frontier_platform::admin::Readiness,
}

use frontier_platform::admin::Zeroed;
/// The bot-worker's counters and gauges, exported at zero from the start.
const ZEROED: &[Zeroed] = &[
    Zeroed::plain("frontier_bot_jobs_total"),
    Zeroed::plain("frontier_bot_jobs_set_aside_total"),
    Zeroed::by(
        "frontier_bot_jobs_failures_total",
        "kind",
        &["act", "engine", "task"],
    ),
];
const GAUGES: &[&str] = &["frontier_bot_jobs_backlog", "frontier_bot_jobs_in_progress"];

/// Builds a worker from configuration: connects to NATS, creates the bot-job stream and
/// the shared consumer if missing (game-session lazily).
pub async fn build(config: &Config) -> anyhow::Result<Service> {
    frontier_platform::admin::start_at_zero(ZEROED, GAUGES);
    frontier_platform::config::refuse_unbuilt_test_hooks(
        cfg!(feature = "test-hooks"),
        TEST_HOOK_VARIABLES,
    )?;
    let ns = Namespace::new(&config.namespace.namespace).map_err(anyhow::Error::msg)?;
    let nats = frontier_platform::streams::connect(&config.nats.nats_url)
        .await
        .map_err(anyhow::Error::msg)?;
    let js = async_nats::jetstream::new(nats.clone());
    let settings = Settings::from_config(config);
    let source = JetStreamSource::connect(
        &js,
        &ns,
        config.nats.nats_stream_replicas,
        settings.ack_wait,
        settings.max_deliver,
    )
    .await
    .context("the bot-job queue")?;
    let service = Service::from_parts(source, sessions(&config.game_session_urls)?, settings);
    Ok(Service {
        readiness: frontier_platform::admin::Readiness::new().nats(nats),
        ..service
    })
}

impl<S: JobSource, A: Sessions> Service<S, A> {
    /// A worker over this source and these sessions.
    pub fn from_parts(source: S, sessions: A, settings: Settings) -> Self {
        Service {
            source,
            sessions,
            settings,
            stats: Arc::default(),
            clock: Arc::new(SystemClock),
            readiness: frontier_platform::admin::Readiness::new(),
        }
    }

    /// The same worker reading time from `clock` (queue latency and the bot's clock).
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Service { clock, ..self }
    }

    /// Its counts.
    pub fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }

    /// Works jobs until `shutdown`, then finishes those in hand.
    pub async fn serve(self, shutdown: Shutdown) -> anyhow::Result<()> {
        tracing::info!(
            concurrency = self.settings.concurrency,
            "bot-worker taking jobs"
        );
        work(
            self.source,
            self.sessions,
            self.settings,
            self.stats,
            self.clock,
            shutdown,
        )
        .await
    }
}

/// Runs a worker from configuration until `shutdown`.
pub async fn run(config: Config, shutdown: Shutdown) -> anyhow::Result<()> {
    let service = build(&config).await?;
    frontier_platform::admin::spawn(
        config.admin.admin_listen,
        "bot-worker",
        service.readiness.clone(),
        shutdown.clone(),
    )
    .await
    .context("admin listener")?;
    service.serve(shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delays_double_up_to_the_cap() {
        let s = Settings {
            retry_base: Duration::from_millis(500),
            retry_cap: Duration::from_secs(3),
            ..Settings::default()
        };
        let delays: Vec<u64> = (1..=5)
            .map(|d| s.retry_delay(d).as_millis() as u64)
            .collect();
        assert_eq!(delays, [500, 1000, 2000, 3000, 3000]);
    }
}
