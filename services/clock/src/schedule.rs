//! The clock's logic, over two seams: the [`DeadlineQueue`] it claims due deadlines from,
//! and the [`Expirer`] (game-session) it asks to end a game on time. No I/O of its own;
//! the Redis and in-memory queues and the gRPC expirer are in `lib.rs`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use frontier_platform::deadlines::{CLOCK_MAX_SLEEP, Claims, Nudge};
use frontier_platform::time::Clock;
use frontier_platform::{GameId, Shutdown};

/// A failure of the queue or of game-session, for the logs.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SeamError(pub String);

/// Where deadlines wait to be claimed.
pub trait DeadlineQueue: Send + Sync + 'static {
    /// Claims up to `limit` deadlines due at `now_ms`, each held for `lease`: the game and
    /// its deadline (0 for a claim whose earlier lease ran out); and when the earliest of
    /// those left falls due.
    fn claim_due(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
    ) -> impl Future<Output = Result<Claims, SeamError>> + Send;

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
    /// How long to wait before looking again after a look that failed (Redis down). A
    /// clock otherwise sleeps until its next deadline, at most
    /// [`CLOCK_MAX_SLEEP`](frontier_platform::deadlines::CLOCK_MAX_SLEEP), or until nudged.
    pub poll_interval: Duration,
    /// How long a claim is held before another instance may take it over.
    pub lease: Duration,
    /// Most deadlines claimed per poll.
    pub batch: usize,
    /// The longest the clock sleeps with nothing due sooner (a deadline written for sooner
    /// comes with a nudge). game-session nudges for deadlines less than
    /// [`CLOCK_MAX_SLEEP`] ahead, so a longer sleep only makes sense where every deadline
    /// is nudged (in one process) — or in a test that proves the nudges work.
    pub max_sleep: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            poll_interval: Duration::from_millis(20),
            lease: Duration::from_millis(500),
            batch: 256,
            max_sleep: CLOCK_MAX_SLEEP,
        }
    }
}

/// One clock instance.
pub struct Scheduler<Q, E> {
    queue: Arc<Q>,
    expirer: E,
    time: Arc<dyn Clock>,
    settings: Settings,
    nudge: Nudge,
}

impl<Q: DeadlineQueue, E: Expirer> Scheduler<Q, E> {
    /// A clock over this queue, firing through `expirer`.
    pub fn new(queue: Q, expirer: E, time: Arc<dyn Clock>, settings: Settings) -> Self {
        Scheduler {
            queue: Arc::new(queue),
            expirer,
            time,
            settings,
            nudge: Nudge::default(),
        }
    }

    /// What wakes this clock before its planned time (a deadline written for sooner).
    pub fn nudge(&self) -> Nudge {
        self.nudge.clone()
    }

    /// This clock woken by `nudge` (the in-memory deadline sets' own, in one process).
    pub fn with_nudge(mut self, nudge: Nudge) -> Self {
        self.nudge = nudge;
        self
    }

    /// One poll: claims what is due and fires it. Returns how many were fired.
    pub async fn poll(&self) -> Result<usize, SeamError> {
        Ok(self.look().await?.0)
    }

    /// One look: fires what is due; how many fired, and how long until the next look.
    async fn look(&self) -> Result<(usize, Duration), SeamError> {
        let now = self.time.now_ms();
        let claims = self
            .queue
            .claim_due(now, self.settings.lease, self.settings.batch)
            .await?;
        let full = claims.due.len() >= self.settings.batch;
        let mut tasks = tokio::task::JoinSet::new();
        for (game, deadline) in claims.due {
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
        // More due than one batch: look again at once. Else sleep until the earliest left
        // (its time on this clock), and never longer than `max_sleep`: a deadline written
        // for sooner than that comes with a nudge.
        let wait = match claims.next {
            _ if full => Duration::ZERO,
            Some(at) => {
                let ahead = (at - self.time.now_ms()).max(0) as u64;
                Duration::from_millis(ahead).min(self.settings.max_sleep)
            }
            None => self.settings.max_sleep,
        };
        Ok((fired, wait))
    }

    /// Fires deadlines until `shutdown`: looks, then sleeps until the next deadline it
    /// knows of, or until nudged.
    pub async fn run(self, shutdown: Shutdown) {
        let mut gauged = tokio::time::Instant::now();
        loop {
            let wait = match self.look().await {
                Ok((_, wait)) => wait,
                Err(e) => {
                    tracing::warn!(error = %e, "clock poll failed");
                    self.settings.poll_interval
                }
            };
            metrics::counter!("frontier_clock_looks_total").increment(1);
            if gauged.elapsed() >= Duration::from_secs(5) {
                gauged = tokio::time::Instant::now();
                if let Ok(n) = self.queue.tracked().await {
                    metrics::gauge!("frontier_clock_deadlines_tracked").set(n as f64);
                }
            }
            if wait.is_zero() {
                if shutdown.is_triggered() {
                    break;
                }
                tokio::task::yield_now().await;
                continue;
            }
            tokio::select! {
                _ = shutdown.wait() => break,
                _ = tokio::time::sleep(wait) => {}
                _ = self.nudge.wait() => {}
            }
        }
    }
}
