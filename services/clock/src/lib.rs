//! The clock service: fires game deadlines (flag falls and first-move limits) on time,
//! with no message from any player.
//!
//! game-session keeps every timed live game's next deadline in a Redis sorted set, updated
//! in the same compare-and-set as the game. Clock instances poll it; a due deadline is
//! claimed by one Lua script that moves it to a "claimed" set with a short lease, so only
//! one instance gets it. The claimer asks game-session (`ExpireClock`) to end the game on
//! time; game-session re-checks the authoritative state, so a move that raced the flag is
//! decided once. A claim whose instance died is claimed again when its lease runs out, and
//! game-session's re-check makes that repeat harmless: each deadline takes effect once.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use frontier_platform::admin::Readiness;
use frontier_platform::deadlines::{Claims, MemoryDeadlines, Nudge, RedisDeadlines};
use frontier_platform::time::SystemClock;
use frontier_platform::trace::{Traced, traced};
use frontier_platform::{GameId, Namespace, Shutdown};
use frontier_proto::gamesession::v1 as pb;
use frontier_proto::gamesession::v1::game_session_client::GameSessionClient;

pub mod config;
pub mod schedule;

pub use config::Config;
pub use schedule::{DeadlineQueue, Expirer, Scheduler, SeamError, Settings};

impl DeadlineQueue for RedisDeadlines {
    async fn claim_due(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
    ) -> Result<Claims, SeamError> {
        RedisDeadlines::claim(self, now_ms, lease, limit)
            .await
            .map_err(|e| SeamError(format!("Redis: {e}")))
    }

    async fn release(&self, game: &GameId) -> Result<(), SeamError> {
        RedisDeadlines::release(self, game)
            .await
            .map_err(|e| SeamError(format!("Redis: {e}")))
    }

    async fn tracked(&self) -> Result<u64, SeamError> {
        RedisDeadlines::tracked(self)
            .await
            .map_err(|e| SeamError(format!("Redis: {e}")))
    }
}

impl DeadlineQueue for MemoryDeadlines {
    async fn claim_due(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
    ) -> Result<Claims, SeamError> {
        Ok(MemoryDeadlines::claim(self, now_ms, lease, limit))
    }

    async fn release(&self, game: &GameId) -> Result<(), SeamError> {
        MemoryDeadlines::release(self, game);
        Ok(())
    }

    async fn tracked(&self) -> Result<u64, SeamError> {
        Ok(MemoryDeadlines::tracked(self))
    }
}

impl Expirer for GameSessionClient<Traced> {
    /// The root of a flag fall's trace: game-session's handling and the events it
    /// publishes join it.
    #[tracing::instrument(name = "clock.expire", skip_all, fields(game = %game))]
    async fn expire(&self, game: GameId) -> Result<bool, SeamError> {
        let mut client = self.clone();
        client
            .expire_clock(pb::ExpireClockRequest {
                game_id: game.to_string(),
            })
            .await
            .map(|r| r.into_inner().ended)
            .map_err(|status| SeamError(status.to_string()))
    }
}

/// Connects lazily to game-session; each call carries the caller's trace context.
pub fn sessions(urls: &[String]) -> anyhow::Result<GameSessionClient<Traced>> {
    let channel = frontier_proto::game_session_channel(urls).map_err(anyhow::Error::msg)?;
    Ok(GameSessionClient::new(traced(channel)))
}

/// Runs a clock instance from configuration until `shutdown`.
pub async fn run(config: Config, shutdown: Shutdown) -> anyhow::Result<()> {
    let service = build(&config).await?;
    frontier_platform::admin::spawn(
        config.admin.admin_listen,
        "clock",
        service.readiness.clone(),
        shutdown.clone(),
    )
    .await
    .context("admin listener")?;
    tracing::info!("clock running");
    service.serve(shutdown).await
}

/// A clock instance, built and ready: [`Service::serve`] fires deadlines until the
/// shutdown signal. The shape of every service crate (`build` from its configuration, or
/// `from_parts`, then `serve`), less the listener: a clock serves nobody but its admin
/// endpoints.
pub struct Service<Q = RedisDeadlines, E = GameSessionClient<frontier_platform::trace::Traced>> {
    scheduler: Scheduler<Q, E>,
    /// What `/readyz` checks.
    pub readiness: Readiness,
}

use frontier_platform::admin::Zeroed;
/// The clock's counters and gauges, exported at zero from the start.
const ZEROED: &[Zeroed] = &[
    Zeroed::plain("frontier_clock_games_ended_total"),
    Zeroed::plain("frontier_clock_expire_errors_total"),
];
const GAUGES: &[&str] = &["frontier_clock_deadlines_tracked"];

/// Builds a clock from configuration: connects to Redis (game-session lazily).
pub async fn build(config: &Config) -> anyhow::Result<Service> {
    frontier_platform::admin::start_at_zero(ZEROED, GAUGES);
    let ns = Namespace::new(&config.namespace.namespace).map_err(anyhow::Error::msg)?;
    let conn = config
        .redis
        .connect()
        .await
        .context("connecting to Redis")?;
    let scheduler = Scheduler::new(
        RedisDeadlines::new(conn.clone(), ns.clone()),
        sessions(&config.game_session_urls)?,
        Arc::new(SystemClock),
        Settings {
            poll_interval: config.poll_interval,
            lease: config.lease,
            batch: config.batch,
            max_sleep: frontier_platform::deadlines::CLOCK_MAX_SLEEP,
        },
    );
    tokio::spawn(listen_for_nudges(
        config.redis.redis_url.clone(),
        ns.clock_nudge_channel(),
        scheduler.nudge(),
    ));
    Ok(Service {
        scheduler,
        readiness: Readiness::new().redis(conn),
    })
}

impl<Q: DeadlineQueue, E: Expirer> Service<Q, E> {
    /// A clock over these parts (the in-memory queue, game-session in the same process).
    pub fn from_parts(scheduler: Scheduler<Q, E>) -> Self {
        Service {
            scheduler,
            readiness: Readiness::new(),
        }
    }

    /// Fires due deadlines until `shutdown`.
    pub async fn serve(self, shutdown: Shutdown) -> anyhow::Result<()> {
        self.scheduler.run(shutdown).await;
        Ok(())
    }
}

/// Follows game-session's nudges (a deadline written for sooner than a sleeping clock would
/// look) on Redis Pub/Sub, from the first seed that answers, reconnecting for as long as
/// the process lives. Without it a clock still looks every `CLOCK_MAX_SLEEP`: a lost nudge
/// only makes such a flag that much later. (On a Redis Cluster a publication reaches the
/// subscribers of every node.)
pub async fn listen_for_nudges(urls: String, channel: String, nudge: Nudge) {
    use futures_util::StreamExt as _;
    let seeds: Vec<String> = urls
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if seeds.is_empty() {
        return;
    }
    for attempt in 0usize.. {
        let url = &seeds[attempt % seeds.len()];
        let subscribed = async {
            let mut pubsub = redis::Client::open(url.as_str())?
                .get_async_pubsub()
                .await?;
            pubsub.subscribe(&channel).await?;
            redis::RedisResult::Ok(pubsub)
        }
        .await;
        match subscribed {
            Ok(pubsub) => {
                let mut messages = pubsub.into_on_message();
                while let Some(message) = messages.next().await {
                    if let Ok(at) = message.get_payload::<i64>() {
                        nudge.at(at);
                    }
                }
                tracing::debug!("the clock's nudge subscription ended; subscribing again");
            }
            Err(e) => tracing::debug!(error = %e, "subscribing to clock nudges failed"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
