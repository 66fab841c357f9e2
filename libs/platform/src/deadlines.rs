//! The deadline contract between game-session and the clock service, in one place.
//!
//! game-session keeps each timed live game's next deadline (Unix ms) in its shard's set
//! scored by time (one set per [`Shard`], so that a game's compare-and-set touches one
//! Redis Cluster slot), written in the same compare-and-set as the game ([`schedule_lua`] is embedded in
//! its script) or on its own ([`RedisDeadlines::schedule`]). Clock instances claim due
//! deadlines atomically ([`CLAIM_SCRIPT`]): a claim moves the game to a "claimed" set with
//! a lease, so one instance fires it; if that instance dies, the lease runs out and another
//! claims it again. A handled claim is released. A claim walks every shard (on a single
//! Redis node in one script call, [`CLAIM_ALL_SCRIPT`]; on a cluster one call per shard).
//!
//! [`MemoryDeadlines`] is the same contract in memory, shared by game-session's in-memory
//! store and the clock when every service runs in one process.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::redis_conn::{SHARDS, Shard};
use crate::{GameId, Namespace, RedisConn};

/// A Lua snippet that schedules a deadline inside a larger script: with `key` the deadline
/// set (e.g. `KEYS[4]`), `at` the deadline in Unix ms or -1 for none (e.g. `ARGV[6]`), and
/// `member` the game id (e.g. `ARGV[5]`).
pub fn schedule_lua(key: &str, at: &str, member: &str) -> String {
    format!(
        "if tonumber({at}) >= 0 then redis.call('ZADD', {key}, {at}, {member}) \
         else redis.call('ZREM', {key}, {member}) end\n"
    )
}

/// Claims due deadlines of one shard: KEYS deadlines, claimed (the same shard's); ARGV now, lease ms, limit. Returns
/// member/deadline pairs (deadline 0 for a re-claimed stale claim), then, if anything is
/// left in the shard, an empty member with the earliest score left (a deadline, or the end
/// of a claim's lease): when the clock should look again.
pub const CLAIM_SCRIPT: &str = r#"
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
local next = nil
for k = 1, 2 do
  local first = redis.call('ZRANGE', KEYS[k], 0, 0, 'WITHSCORES')
  if #first == 2 and (next == nil or tonumber(first[2]) < tonumber(next)) then next = first[2] end
end
if next ~= nil then
  table.insert(out, '')
  table.insert(out, next)
end
return out
"#;

/// [`CLAIM_SCRIPT`] over every shard in one call, for a single Redis node (where every
/// shard's keys are on one server): KEYS deadlines and claimed of each shard in turn; ARGV
/// now, lease ms, limit (in all). One call per poll instead of one per shard.
pub const CLAIM_ALL_SCRIPT: &str = r#"
local now = tonumber(ARGV[1])
local lease_end = now + tonumber(ARGV[2])
local left = tonumber(ARGV[3])
local out = {}
for k = 1, #KEYS, 2 do
  if left <= 0 then break end
  local stale = redis.call('ZRANGEBYSCORE', KEYS[k + 1], '-inf', now, 'LIMIT', 0, left)
  for _, member in ipairs(stale) do
    redis.call('ZADD', KEYS[k + 1], lease_end, member)
    table.insert(out, member)
    table.insert(out, '0')
    left = left - 1
  end
  if left > 0 then
    local due = redis.call('ZRANGEBYSCORE', KEYS[k], '-inf', now, 'WITHSCORES', 'LIMIT', 0, left)
    for i = 1, #due, 2 do
      redis.call('ZREM', KEYS[k], due[i])
      redis.call('ZADD', KEYS[k + 1], lease_end, due[i])
      table.insert(out, due[i])
      table.insert(out, due[i + 1])
      left = left - 1
    end
  end
end
local next = nil
for k = 1, #KEYS do
  local first = redis.call('ZRANGE', KEYS[k], 0, 0, 'WITHSCORES')
  if #first == 2 and (next == nil or tonumber(first[2]) < tonumber(next)) then next = first[2] end
end
if next ~= nil then
  table.insert(out, '')
  table.insert(out, next)
end
return out
"#;

/// What one claim found: the deadlines claimed, and the earliest time anything left (a
/// deadline, or the end of a claim's lease) falls due.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claims {
    /// Games claimed with their deadline (0 for a re-claimed stale claim).
    pub due: Vec<(GameId, i64)>,
    /// The earliest time anything left falls due (Unix ms), if anything is left.
    pub next: Option<i64>,
}

/// The longest a clock sleeps with nothing due sooner: a deadline written for less than
/// this ahead is announced to the clocks ([`Nudge`], [`RedisDeadlines::nudge`]), so that
/// none falls late behind a sleeping clock.
pub const CLOCK_MAX_SLEEP: Duration = Duration::from_millis(500);

/// A claim script's answer: game/deadline pairs (a game id that does not parse is skipped),
/// and the empty member's score as the next time due.
fn parse_claims(raw: &[String]) -> Claims {
    let mut claims = Claims::default();
    for pair in raw.chunks_exact(2) {
        let Some(at) = pair[1].parse::<f64>().ok().map(|at| at as i64) else {
            continue;
        };
        if pair[0].is_empty() {
            claims.next = Some(claims.next.map_or(at, |n: i64| n.min(at)));
        } else if let Ok(game) = pair[0].parse() {
            claims.due.push((game, at));
        }
    }
    claims
}

/// Wakes a sleeping clock early: a deadline was written that falls before its planned
/// wake. In one process the store calls [`Nudge::at`] directly; over Redis, game-session
/// publishes on [`Namespace::clock_nudge_channel`] and the clock's listener calls it.
#[derive(Debug, Clone, Default)]
pub struct Nudge {
    notify: Arc<tokio::sync::Notify>,
}

impl Nudge {
    /// A deadline at `_at_ms` was written: wake the clock to look again.
    pub fn at(&self, _at_ms: i64) {
        self.notify.notify_one();
    }

    /// Until the next nudge (one given while nobody waited counts).
    pub async fn wait(&self) {
        self.notify.notified().await;
    }
}

/// The deadline sets in Redis.
#[derive(Clone)]
pub struct RedisDeadlines {
    conn: RedisConn,
    ns: Namespace,
    claim: Arc<redis::Script>,
    claim_all: Arc<redis::Script>,
    /// The shard the next claim starts at, so that no shard waits behind the others.
    next: Arc<AtomicU16>,
}

impl RedisDeadlines {
    /// Over this connection.
    pub fn new(conn: RedisConn, ns: Namespace) -> RedisDeadlines {
        RedisDeadlines {
            conn,
            ns,
            claim: Arc::new(redis::Script::new(CLAIM_SCRIPT)),
            claim_all: Arc::new(redis::Script::new(CLAIM_ALL_SCRIPT)),
            next: Arc::default(),
        }
    }

    /// Connects to Redis (`urls` as [`RedisConn::connect`] takes them).
    pub async fn connect(urls: &str, ns: Namespace) -> redis::RedisResult<RedisDeadlines> {
        Ok(RedisDeadlines::new(
            RedisConn::connect(urls, false).await?,
            ns,
        ))
    }

    /// Schedules (or, with none, drops) a game's deadline.
    pub async fn schedule(&self, game: &GameId, at: Option<i64>) -> redis::RedisResult<()> {
        let mut conn = self.conn.clone();
        let key = self.ns.deadlines_key(Shard::of(game));
        let mut cmd = match at {
            Some(at) => {
                let mut c = redis::cmd("ZADD");
                c.arg(key).arg(at);
                c
            }
            None => {
                let mut c = redis::cmd("ZREM");
                c.arg(key);
                c
            }
        };
        let _: i64 = cmd.arg(game.to_string()).query_async(&mut conn).await?;
        Ok(())
    }

    /// Claims up to `limit` deadlines due at `now_ms` for `lease`, walking every shard
    /// (from a different one each time). A shard that cannot be reached is skipped (and
    /// logged); an error only when none could be.
    pub async fn claim_due(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
    ) -> redis::RedisResult<Vec<(GameId, i64)>> {
        Ok(self.claim(now_ms, lease, limit).await?.due)
    }

    /// [`RedisDeadlines::claim_due`], with when the clock should look again.
    pub async fn claim(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
    ) -> redis::RedisResult<Claims> {
        let mut conn = self.conn.clone();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % SHARDS;
        if !self.conn.is_cluster() {
            // One server holds every shard: one call walks them all.
            let mut invocation = self.claim_all.prepare_invoke();
            for i in 0..SHARDS {
                let shard = Shard::wrapping(start + i);
                invocation
                    .key(self.ns.deadlines_key(shard))
                    .key(self.ns.deadlines_claimed_key(shard));
            }
            let raw: Vec<String> = invocation
                .arg(now_ms)
                .arg(lease.as_millis() as u64)
                .arg(limit)
                .invoke_async(&mut conn)
                .await?;
            return Ok(parse_claims(&raw));
        }
        let mut out = Claims::default();
        let (mut reached, mut failure) = (0, None);
        for i in 0..SHARDS {
            if out.due.len() >= limit {
                break;
            }
            let shard = Shard::wrapping(start + i);
            let claimed: redis::RedisResult<Vec<String>> = self
                .claim
                .key(self.ns.deadlines_key(shard))
                .key(self.ns.deadlines_claimed_key(shard))
                .arg(now_ms)
                .arg(lease.as_millis() as u64)
                .arg(limit - out.due.len())
                .invoke_async(&mut conn)
                .await;
            // A shard whose Redis node is down waits; the others' flags still fall.
            let raw = match claimed {
                Ok(raw) => raw,
                Err(e) => {
                    tracing::warn!(shard = shard.index(), error = %e, "deadline shard unreachable");
                    failure.get_or_insert(e);
                    continue;
                }
            };
            reached += 1;
            let claims = parse_claims(&raw);
            out.due.extend(claims.due);
            out.next = match (out.next, claims.next) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        match failure {
            Some(e) if reached == 0 => Err(e),
            _ => Ok(out),
        }
    }

    /// Tells the clocks listening on [`Namespace::clock_nudge_channel`] of a deadline at
    /// `at_ms` (written for less than [`CLOCK_MAX_SLEEP`] ahead).
    pub async fn nudge(&self, at_ms: i64) -> redis::RedisResult<()> {
        let mut conn = self.conn.clone();
        let _: i64 = redis::cmd("PUBLISH")
            .arg(self.ns.clock_nudge_channel())
            .arg(at_ms)
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// A claimed deadline was handled.
    pub async fn release(&self, game: &GameId) -> redis::RedisResult<()> {
        let mut conn = self.conn.clone();
        let _: i64 = redis::cmd("ZREM")
            .arg(self.ns.deadlines_claimed_key(Shard::of(game)))
            .arg(game.to_string())
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    /// How many deadlines are tracked (scheduled and claimed, in every shard).
    pub async fn tracked(&self) -> redis::RedisResult<u64> {
        let mut conn = self.conn.clone();
        if !self.conn.is_cluster() {
            // One server holds every shard: one round trip for all.
            let mut pipe = redis::pipe();
            for shard in Shard::all() {
                pipe.cmd("ZCARD")
                    .arg(self.ns.deadlines_key(shard))
                    .cmd("ZCARD")
                    .arg(self.ns.deadlines_claimed_key(shard));
            }
            let counts: Vec<u64> = pipe.query_async(&mut conn).await?;
            return Ok(counts.iter().sum());
        }
        let mut total = 0;
        for shard in Shard::all() {
            let (scheduled, claimed): (u64, u64) = redis::pipe()
                .cmd("ZCARD")
                .arg(self.ns.deadlines_key(shard))
                .cmd("ZCARD")
                .arg(self.ns.deadlines_claimed_key(shard))
                .query_async(&mut conn)
                .await?;
            total += scheduled + claimed;
        }
        Ok(total)
    }
}

#[derive(Debug, Default)]
struct MemoryInner {
    scheduled: HashMap<GameId, i64>,
    /// Claimed games and when their lease ends.
    claimed: HashMap<GameId, i64>,
}

/// The deadline sets in memory: the same contract as [`RedisDeadlines`] for one process.
#[derive(Debug, Clone, Default)]
pub struct MemoryDeadlines {
    inner: Arc<Mutex<MemoryInner>>,
    nudge: Nudge,
}

impl MemoryDeadlines {
    /// Empty sets.
    pub fn new() -> MemoryDeadlines {
        MemoryDeadlines::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryInner> {
        // A panic while holding the lock cannot leave the maps half-updated (each method
        // makes whole insertions and removals), so a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Schedules (or, with none, drops) a game's deadline.
    pub fn schedule(&self, game: &GameId, at: Option<i64>) {
        let mut inner = self.lock();
        match at {
            Some(at) => inner.scheduled.insert(*game, at),
            None => inner.scheduled.remove(game),
        };
        drop(inner);
        if let Some(at) = at {
            self.nudge.at(at);
        }
    }

    /// What wakes the clock sleeping on these sets: every deadline written (in one process
    /// a nudge costs nothing).
    pub fn nudge(&self) -> Nudge {
        self.nudge.clone()
    }

    /// The deadline scheduled for a game.
    pub fn scheduled(&self, game: &GameId) -> Option<i64> {
        self.lock().scheduled.get(game).copied()
    }

    /// Claims up to `limit` deadlines due at `now_ms` for `lease` (stale claims first, with
    /// deadline 0, as [`CLAIM_SCRIPT`] does).
    pub fn claim_due(&self, now_ms: i64, lease: Duration, limit: usize) -> Vec<(GameId, i64)> {
        self.claim(now_ms, lease, limit).due
    }

    /// [`MemoryDeadlines::claim_due`], with when the clock should look again.
    pub fn claim(&self, now_ms: i64, lease: Duration, limit: usize) -> Claims {
        let lease_end = now_ms + lease.as_millis() as i64;
        let mut inner = self.lock();
        let mut out = Vec::new();
        let stale: Vec<GameId> = inner
            .claimed
            .iter()
            .filter(|(_, end)| **end <= now_ms)
            .map(|(g, _)| *g)
            .take(limit)
            .collect();
        for game in stale {
            inner.claimed.insert(game, lease_end);
            out.push((game, 0));
        }
        let mut due: Vec<(GameId, i64)> = inner
            .scheduled
            .iter()
            .filter(|(_, at)| **at <= now_ms)
            .map(|(g, at)| (*g, *at))
            .collect();
        due.sort_by_key(|(_, at)| *at);
        due.truncate(limit);
        for (game, at) in due {
            inner.scheduled.remove(&game);
            inner.claimed.insert(game, lease_end);
            out.push((game, at));
        }
        let next = inner
            .scheduled
            .values()
            .chain(inner.claimed.values())
            .copied()
            .min();
        Claims { due: out, next }
    }

    /// A claimed deadline was handled.
    pub fn release(&self, game: &GameId) {
        self.lock().claimed.remove(game);
    }

    /// How many deadlines are tracked (scheduled and claimed).
    pub fn tracked(&self) -> u64 {
        let inner = self.lock();
        (inner.scheduled.len() + inner.claimed.len()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_due_deadline_is_claimed_once_and_again_after_its_lease() {
        let d = MemoryDeadlines::new();
        let (a, b) = (GameId::new(), GameId::new());
        d.schedule(&a, Some(100));
        d.schedule(&b, Some(500));
        let lease = Duration::from_millis(50);
        assert_eq!(d.claim_due(99, lease, 10), vec![]);
        assert_eq!(d.claim_due(100, lease, 10), vec![(a, 100)]);
        assert_eq!(d.claim_due(120, lease, 10), vec![], "held by its lease");
        assert_eq!(d.claim_due(150, lease, 10), vec![(a, 0)], "lease ran out");
        d.release(&a);
        assert_eq!(d.tracked(), 1);
        d.schedule(&b, None);
        assert_eq!(d.claim_due(1_000, lease, 10), vec![]);
        assert_eq!(d.tracked(), 0);
    }
}
