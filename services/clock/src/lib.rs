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
use frontier_platform::{GameId, Namespace, Shutdown};
use frontier_proto::gamesession::v1 as pb;
use frontier_proto::gamesession::v1::game_session_client::GameSessionClient;
use redis::aio::ConnectionManager;
use tonic::transport::Channel;

pub mod config;

pub use config::Config;

/// Unix milliseconds (injected so tests can drive time).
pub trait TimeSource: Send + Sync + 'static {
    /// Now.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemTime;

impl TimeSource for SystemTime {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default()
    }
}

/// Claims due deadlines: KEYS deadlines, claimed; ARGV now, lease ms, limit. Returns
/// member/deadline pairs (deadline 0 for a re-claimed stale claim).
const CLAIM_SCRIPT: &str = r#"
local now = tonumber(ARGV[1])
local lease_end = now + tonumber(ARGV[2])
local out = {}
local stale = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, ARGV[3])
for _, member in ipairs(stale) do
  redis.call('ZADD', KEYS[2], lease_end, member)
  table.insert(out, member)
  table.insert(out, '0')
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, ARGV[3])
for i = 1, #due, 2 do
  redis.call('ZREM', KEYS[1], due[i])
  redis.call('ZADD', KEYS[2], lease_end, due[i])
  table.insert(out, due[i])
  table.insert(out, due[i + 1])
end
return out
"#;

/// The deadline sets in Redis.
#[derive(Clone)]
pub struct Deadlines {
    conn: ConnectionManager,
    ns: Namespace,
    claim: Arc<redis::Script>,
}

impl Deadlines {
    /// Connects to Redis.
    pub async fn connect(url: &str, ns: Namespace) -> anyhow::Result<Deadlines> {
        let client = redis::Client::open(url)?;
        let conn = ConnectionManager::new(client).await?;
        Ok(Deadlines {
            conn,
            ns,
            claim: Arc::new(redis::Script::new(CLAIM_SCRIPT)),
        })
    }

    /// Claims up to `limit` deadlines due at `now_ms` for `lease`.
    pub async fn claim_due(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
    ) -> anyhow::Result<Vec<(GameId, i64)>> {
        let mut conn = self.conn.clone();
        let raw: Vec<String> = self
            .claim
            .key(self.ns.deadlines_key())
            .key(self.ns.deadlines_claimed_key())
            .arg(now_ms)
            .arg(lease.as_millis() as u64)
            .arg(limit)
            .invoke_async(&mut conn)
            .await?;
        Ok(raw
            .chunks_exact(2)
            .filter_map(|pair| {
                let game = pair[0].parse().ok()?;
                let deadline = pair[1].parse::<f64>().ok()? as i64;
                Some((game, deadline))
            })
            .collect())
    }

    /// A claimed deadline was handled.
    pub async fn release(&self, game: &GameId) -> anyhow::Result<()> {
        let mut conn = self.conn.clone();
        let _: i64 = redis::cmd("ZREM")
            .arg(self.ns.deadlines_claimed_key())
            .arg(game.to_string())
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// How many deadlines are tracked (scheduled and claimed).
    pub async fn tracked(&self) -> anyhow::Result<u64> {
        let mut conn = self.conn.clone();
        let (scheduled, claimed): (u64, u64) = redis::pipe()
            .cmd("ZCARD")
            .arg(self.ns.deadlines_key())
            .cmd("ZCARD")
            .arg(self.ns.deadlines_claimed_key())
            .query_async(&mut conn)
            .await?;
        Ok(scheduled + claimed)
    }
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
pub struct ClockService {
    deadlines: Deadlines,
    sessions: GameSessionClient<Channel>,
    time: Arc<dyn TimeSource>,
    settings: Settings,
}

impl ClockService {
    /// A clock over these deadlines, talking to game-session.
    pub fn new(
        deadlines: Deadlines,
        sessions: GameSessionClient<Channel>,
        time: Arc<dyn TimeSource>,
        settings: Settings,
    ) -> ClockService {
        ClockService {
            deadlines,
            sessions,
            time,
            settings,
        }
    }

    /// One poll: claims what is due and fires it. Returns how many were fired.
    pub async fn poll(&self) -> anyhow::Result<usize> {
        let now = self.time.now_ms();
        let claimed = self
            .deadlines
            .claim_due(now, self.settings.lease, self.settings.batch)
            .await?;
        let mut fired = 0;
        let mut tasks = tokio::task::JoinSet::new();
        for (game, deadline) in claimed {
            let mut sessions = self.sessions.clone();
            let deadlines = self.deadlines.clone();
            tasks.spawn(async move {
                let result = sessions
                    .expire_clock(pb::ExpireClockRequest {
                        game_id: game.to_string(),
                    })
                    .await;
                match result {
                    Ok(r) => {
                        if deadline > 0 {
                            let lag = (now - deadline).max(0) as f64 / 1000.0;
                            metrics::histogram!("frontier_clock_firing_lag_seconds").record(lag);
                        }
                        if r.into_inner().ended {
                            metrics::counter!("frontier_clock_games_ended_total").increment(1);
                        }
                        if let Err(e) = deadlines.release(&game).await {
                            tracing::warn!(%game, error = %e, "releasing a claim failed; it will be retried harmlessly");
                        }
                        true
                    }
                    Err(status) => {
                        // Left claimed: when the lease runs out it is claimed again.
                        tracing::warn!(%game, %status, "game-session could not expire the clock");
                        false
                    }
                }
            });
        }
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
                && let Ok(n) = self.deadlines.tracked().await
            {
                metrics::gauge!("frontier_clock_deadlines_tracked").set(n as f64);
            }
        }
    }
}

/// Connects lazily to game-session.
pub fn sessions(urls: &[String]) -> anyhow::Result<GameSessionClient<Channel>> {
    frontier_proto::game_session_client(urls).map_err(anyhow::Error::msg)
}

/// Runs a clock instance from configuration until `shutdown`.
pub async fn run(config: Config, shutdown: Shutdown) -> anyhow::Result<()> {
    let ns = Namespace::new(&config.namespace.namespace).map_err(anyhow::Error::msg)?;
    if let Some(addr) = config.metrics_listen {
        metrics_exporter_prometheus::PrometheusBuilder::new()
            .with_http_listener(addr)
            .install()
            .context("metrics listener")?;
        tracing::info!(%addr, "metrics at /metrics");
    }
    let deadlines = Deadlines::connect(&config.redis.redis_url, ns)
        .await
        .context("connecting to Redis")?;
    let service = ClockService::new(
        deadlines,
        sessions(&config.game_session_urls)?,
        Arc::new(SystemTime),
        Settings {
            poll_interval: config.poll_interval,
            lease: config.lease,
            batch: config.batch,
        },
    );
    tracing::info!("clock running");
    service.run(shutdown).await;
    Ok(())
}
