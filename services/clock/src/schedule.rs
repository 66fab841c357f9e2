//! The clock's logic, over two seams: the [`DeadlineQueue`] it claims due deadlines from,
//! and the [`Expirer`] (game-session) it asks to end a game on time. No I/O of its own;
//! the Redis and in-memory queues and the gRPC expirer are in `lib.rs`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use frontier_platform::time::Clock;
use frontier_platform::{GameId, Shutdown};

/// A failure of the queue or of game-session, for the logs.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SeamError(pub String);

/// Where deadlines wait to be claimed.
pub trait DeadlineQueue: Send + Sync + 'static {
    /// Claims up to `limit` deadlines due at `now_ms`, each held for `lease`: the game and
    /// its deadline (0 for a claim whose earlier lease ran out).
    fn claim_due(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<(GameId, i64)>, SeamError>> + Send;

    /// A claimed deadline was handled.
    fn release(&self, game: &GameId) -> impl Future<Output = Result<(), SeamError>> + Send;

    /// How many deadlines are tracked (scheduled and claimed).
    fn tracked(&self) -> impl Future<Output = Result<u64, SeamError>> + Send;
}

/// What ends games on time: game-session, which re-checks its record and decides.
pub trait Expirer: Clone + Send + Sync + 'static {
    /// Asks for `game`'s clock to be checked: true if the game ended now.
    fn expire(&self, game: GameId) -> impl Future<Output = Result<bool, SeamError>> + Send;
}

/// Tunables.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// How often to look for due deadlines.
    pub poll_interval: Duration,
    /// How long a claim is held before another instance may take it over.
    pub lease: Duration,
    /// Most deadlines claimed per poll.
    pub batch: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            poll_interval: Duration::from_millis(20),
            lease: Duration::from_millis(500),
            batch: 256,
        }
    }
}

/// One clock instance.
pub struct Scheduler<Q, E> {
    queue: Arc<Q>,
    expirer: E,
    time: Arc<dyn Clock>,
    settings: Settings,
}

impl<Q: DeadlineQueue, E: Expirer> Scheduler<Q, E> {
    /// A clock over this queue, firing through `expirer`.
    pub fn new(queue: Q, expirer: E, time: Arc<dyn Clock>, settings: Settings) -> Self {
        Scheduler {
            queue: Arc::new(queue),
            expirer,
            time,
            settings,
        }
    }

    /// One poll: claims what is due and fires it. Returns how many were fired.
    pub async fn poll(&self) -> Result<usize, SeamError> {
        let now = self.time.now_ms();
        let claimed = self
            .queue
            .claim_due(now, self.settings.lease, self.settings.batch)
            .await?;
        let mut tasks = tokio::task::JoinSet::new();
        for (game, deadline) in claimed {
            let expirer = self.expirer.clone();
            let queue = self.queue.clone();
            tasks.spawn(async move {
                match expirer.expire(game).await {
                    Ok(ended) => {
                        if deadline > 0 {
                            let lag = (now - deadline).max(0) as f64 / 1000.0;
                            metrics::histogram!("frontier_clock_firing_lag_seconds").record(lag);
                        }
                        if ended {
                            metrics::counter!("frontier_clock_games_ended_total").increment(1);
                        }
                        if let Err(e) = queue.release(&game).await {
                            tracing::warn!(%game, error = %e, "releasing a claim failed; it will be retried harmlessly");
                        }
                        true
                    }
                    Err(e) => {
                        // Left claimed: when the lease runs out it is claimed again.
                        metrics::counter!("frontier_clock_expire_errors_total").increment(1);
                        tracing::warn!(%game, error = %e, "game-session could not expire the clock");
                        false
                    }
                }
            });
        }
        let mut fired = 0;
        while let Some(done) = tasks.join_next().await {
            fired += usize::from(done.unwrap_or(false));
        }
        Ok(fired)
    }

    /// Polls until `shutdown`.
    pub async fn run(self, shutdown: Shutdown) {
        let mut tick = tokio::time::interval(self.settings.poll_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut gauge_every = 0u32;
        loop {
            tokio::select! {
                _ = shutdown.wait() => break,
                _ = tick.tick() => {}
            }
            if let Err(e) = self.poll().await {
                tracing::warn!(error = %e, "clock poll failed");
            }
            gauge_every = (gauge_every + 1) % 50;
            if gauge_every == 0
                && let Ok(n) = self.queue.tracked().await
            {
                metrics::gauge!("frontier_clock_deadlines_tracked").set(n as f64);
            }
        }
    }
}
