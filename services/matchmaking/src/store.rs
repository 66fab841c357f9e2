//! Tickets in Redis, and the atomic steps on them.
//!
//! Keys (under `Namespace::matchmaking_prefix`, one hash tag):
//! - `ticket:<player>` — a hash: `gen` (the ticket's generation), `pools` (pool keys,
//!   space-separated), `body` (the [`StoredTicket`] as JSON), and while a pairing holds it
//!   `claimed` (the match id) and, if the player cancelled meanwhile, `cancelled`.
//! - `pool:<pool key>` — a sorted set of the players waiting there, scored by since when.
//! - `match:<id>` — a claimed pairing ([`MatchRecord`] as JSON) until its game exists;
//!   `pending` — those match ids, scored by when an instance may next try to create the
//!   game (a lease: the instance that claimed it first, another one if it died).
//! - `matched:<player>` — the `matched` notice (JSON) of the player's latest seek, kept 10
//!   minutes for `status` and `cancel`; a new seek deletes it.
//! - `leaving` — players whose last connection closed, scored by when their seek lapses.
//! - `waits:<pool key>` — the latest times to pair (ms), newest first, 100 at most.
//! - `history:<player>` — `opp` (last opponent), `colors` (latest colours, `w`/`b`).
//!
//! **Why a script and not a lease.** Pairing a pair is one Lua script ([`CLAIM_SCRIPT`]):
//! it takes the tickets only if each is still there with the generation the pairing step
//! read and not already claimed, and in the same step removes them from every pool and
//! records the pairing. Redis runs a script alone, so two instances that chose overlapping
//! pairs cannot both win; the loser's script changes nothing (a *pairing conflict*). No
//! instance owns a pool, so any number of instances pair at once with no hand-over when one
//! dies, and there is no fencing token to carry to a second store: the check and the write
//! are in the same place. A per-pool lease would serialise each pool on one instance and
//! still need this check at the write.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use frontier_pairing::Pool;
use frontier_platform::Namespace;
use frontier_platform::RedisConn;

use crate::ticket::{MatchRecord, StoredTicket};

/// Places (or replaces) a ticket. KEYS[1] ticket; ARGV prefix, player, gen, body, since,
/// pool keys…. Returns 0 placed, 1 replaced a waiting ticket, -1 refused: the current
/// ticket is being made into a game (even if cancelled meanwhile: that game may still
/// start, and a player is never put in two).
pub const SEEK_SCRIPT: &str = r#"
local prefix, player = ARGV[1], ARGV[2]
local replaced = 0
local current = redis.call('HMGET', KEYS[1], 'pools', 'claimed')
if current[2] then return -1 end
if current[1] then
  replaced = 1
  for pool in string.gmatch(current[1], '%S+') do
    redis.call('ZREM', prefix .. 'pool:' .. pool, player)
  end
end
local pools = {}
for i = 6, #ARGV do
  table.insert(pools, ARGV[i])
  redis.call('ZADD', prefix .. 'pool:' .. ARGV[i], ARGV[5], player)
end
redis.call('DEL', KEYS[1], (string.gsub(KEYS[1], 'ticket:', 'matched:', 1)))
redis.call('HSET', KEYS[1], 'gen', ARGV[3], 'pools', table.concat(pools, ' '), 'body', ARGV[4])
redis.call('ZREM', prefix .. 'leaving', player)
return replaced
"#;

/// Cancels a ticket. KEYS[1] ticket; ARGV prefix, player, gen ('' for any). Returns 0 no
/// ticket, 1 cancelled, 2 being made into a game (marked: if that fails, it does not come
/// back), 3 no ticket because the latest seek's game exists (its notice is kept).
pub const CANCEL_SCRIPT: &str = r#"
local prefix, player = ARGV[1], ARGV[2]
redis.call('ZREM', prefix .. 'leaving', player)
local current = redis.call('HMGET', KEYS[1], 'gen', 'pools', 'claimed')
if not current[1] then
  if ARGV[3] == '' and redis.call('EXISTS', (string.gsub(KEYS[1], 'ticket:', 'matched:', 1))) == 1 then
    return 3
  end
  return 0
end
if ARGV[3] ~= '' and current[1] ~= ARGV[3] then return 0 end
if current[3] then
  redis.call('HSET', KEYS[1], 'cancelled', '1')
  return 2
end
for pool in string.gmatch(current[2], '%S+') do
  redis.call('ZREM', prefix .. 'pool:' .. pool, player)
end
redis.call('DEL', KEYS[1])
return 1
"#;

/// Claims a pairing. KEYS[1] match, KEYS[2] pending, KEYS[3..] tickets; ARGV prefix, match
/// id, record, retry at, then player and gen per ticket. Returns 1 claimed, 0 a ticket is
/// gone, replaced or claimed already (nothing changed).
pub const CLAIM_SCRIPT: &str = r#"
local prefix = ARGV[1]
for j = 3, #KEYS do
  local current = redis.call('HMGET', KEYS[j], 'gen', 'claimed')
  if current[1] ~= ARGV[4 + 2 * (j - 2)] or current[2] then return 0 end
end
for j = 3, #KEYS do
  local player = ARGV[3 + 2 * (j - 2)]
  local pools = redis.call('HGET', KEYS[j], 'pools')
  for pool in string.gmatch(pools, '%S+') do
    redis.call('ZREM', prefix .. 'pool:' .. pool, player)
  end
  redis.call('HSET', KEYS[j], 'claimed', ARGV[2])
end
redis.call('SET', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
return 1
"#;

/// The game of a pairing exists. KEYS[1] match, KEYS[2] pending, KEYS[3..] tickets; ARGV
/// match id, notice ttl (s), then player and notice per ticket. Drops the tickets the
/// pairing holds (a newer seek is left alone), keeps each player's notice. Returns 1, or 0
/// when the pairing was already settled.
pub const FINISH_SCRIPT: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for j = 3, #KEYS do
  local player, notice = ARGV[1 + 2 * (j - 2)], ARGV[2 + 2 * (j - 2)]
  if redis.call('HGET', KEYS[j], 'claimed') == ARGV[1] then redis.call('DEL', KEYS[j]) end
  redis.call('SET', string.gsub(KEYS[j], 'ticket:', 'matched:', 1), notice, 'EX', ARGV[2])
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
"#;

/// Gives a pairing up: its tickets go back to their pools with their original since (one
/// cancelled meanwhile is dropped). KEYS[1] match, KEYS[2] pending, KEYS[3..] tickets;
/// ARGV prefix, match id, the lease the caller holds ('' for none: a final refusal), then
/// player and since per ticket. Returns 1, or 0 when the pairing was already settled or
/// its lease is no longer the caller's (another instance took it over: the fencing token).
pub const RESTORE_SCRIPT: &str = r#"
local prefix = ARGV[1]
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[3] ~= '' and tonumber(redis.call('ZSCORE', KEYS[2], ARGV[2])) ~= tonumber(ARGV[3]) then
  return 0
end
for j = 3, #KEYS do
  local player, since = ARGV[2 + 2 * (j - 2)], ARGV[3 + 2 * (j - 2)]
  local current = redis.call('HMGET', KEYS[j], 'claimed', 'cancelled', 'pools')
  if current[1] == ARGV[2] then
    if current[2] then
      redis.call('DEL', KEYS[j])
    else
      redis.call('HDEL', KEYS[j], 'claimed')
      for pool in string.gmatch(current[3], '%S+') do
        redis.call('ZADD', prefix .. 'pool:' .. pool, since, player)
      end
    end
  end
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1
"#;

/// Takes over pairings whose game is due to be (re)tried: KEYS[1] pending; ARGV now, lease
/// ms, limit. Returns their ids, each leased to the caller.
pub const DUE_SCRIPT: &str = r#"
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, id in ipairs(due) do
  redis.call('ZADD', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]), id)
end
return due
"#;

/// What a seek did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placed {
    /// A new ticket.
    New,
    /// It replaced the player's waiting ticket.
    Replaced,
    /// Refused: the player's ticket is being made into a game right now.
    Matching,
}

/// What a cancel did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancelled {
    /// The player had no ticket.
    Nothing,
    /// The ticket is gone.
    Cancelled,
    /// Too late: the ticket is being made into a game (it will not come back if that fails).
    TooLate,
    /// Too late: the player's latest seek was made into a game, which exists (its notice
    /// is kept for `status`; a new seek forgets it).
    Matched,
}

/// Storage failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Redis failed.
    #[error("Redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// A stored value does not read back.
    #[error("stored {what} does not read back: {source}")]
    Corrupt {
        /// What.
        what: &'static str,
        /// Why.
        source: serde_json::Error,
    },
}

/// Where tickets, pairings and the per-player notes live. Every step that decides
/// something (`seek`, `cancel`, `claim`, `finish`, `restore`, `due`) is atomic: two
/// matchmakers sharing a store can never both take one ticket. Adapters: Redis
/// ([`RedisTickets`], any number of instances) and memory
/// ([`MemoryTickets`](crate::memory::MemoryTickets), one process); the storage suite in
/// `tests/tickets.rs` runs against both.
pub trait TicketStore: Send + Sync + 'static {
    /// Places a ticket (replacing the player's waiting one).
    fn seek(
        &self,
        ticket: &StoredTicket,
    ) -> impl Future<Output = Result<Placed, StoreError>> + Send;

    /// Cancels the player's ticket (only generation `generation`, if given).
    fn cancel(
        &self,
        player: &str,
        generation: Option<&str>,
    ) -> impl Future<Output = Result<Cancelled, StoreError>> + Send;

    /// The player's ticket, if any, and whether a pairing holds it.
    fn ticket(
        &self,
        player: &str,
    ) -> impl Future<Output = Result<Option<(StoredTicket, bool)>, StoreError>> + Send;

    /// Every waiting ticket (not those a pairing holds), in player order.
    fn waiting(&self) -> impl Future<Output = Result<Vec<StoredTicket>, StoreError>> + Send;

    /// Claims a pairing: its tickets leave every pool and the record waits for its game,
    /// leased until `retry_at_ms`. `false`: another step took or changed a ticket first
    /// (and nothing changed).
    fn claim(
        &self,
        record: &MatchRecord,
        retry_at_ms: u64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The pairing's game exists: its tickets are done, each player's notice is kept for
    /// `status` ([`NOTICE_TTL`]), and the time to pair and the colours are remembered.
    /// `false`: it had been settled already.
    fn finish(
        &self,
        record: &MatchRecord,
        notices: &[(String, String)],
        now_ms: u64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Gives a pairing up: its tickets go back with their original wait (those cancelled
    /// meanwhile do not). With `lease_until`, only while the caller's lease on it is still
    /// that one. `false`: it had been settled already, or taken over.
    fn restore(
        &self,
        record: &MatchRecord,
        lease_until: Option<u64>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Pairings whose game is due to be (re)tried at `now_ms` (at most `limit`, the
    /// longest due first), each leased to the caller for `lease`.
    fn due(
        &self,
        now_ms: u64,
        lease: Duration,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<MatchRecord>, StoreError>> + Send;

    /// The player's latest `matched` notice (JSON), kept for [`NOTICE_TTL`].
    fn notice(
        &self,
        player: &str,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;

    /// The player's last matchmade opponent and recent colour balance (Whites − Blacks).
    fn history(
        &self,
        player: &str,
    ) -> impl Future<Output = Result<(Option<String>, i32), StoreError>> + Send;

    /// The latest times to pair in `pool` (ms), newest first, [`RECENT_WAITS`] at most.
    fn recent_waits(&self, pool: &str)
    -> impl Future<Output = Result<Vec<u64>, StoreError>> + Send;

    /// The player's last connection closed: their seek lapses at `at_ms` unless they come
    /// back (a seek or `stay`).
    fn leave(
        &self,
        player: &str,
        at_ms: u64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The player is connected again: their seek stays.
    fn stay(&self, player: &str) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Players whose grace period ended by `now_ms` (the earliest first, 500 at most).
    fn lapsed(&self, now_ms: u64) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// Tickets waiting per pool, for every pool.
    fn waiting_per_pool(&self)
    -> impl Future<Output = Result<Vec<(Pool, u64)>, StoreError>> + Send;
}

/// The tickets in Redis.
#[derive(Clone)]
pub struct RedisTickets {
    conn: RedisConn,
    prefix: String,
    scripts: Arc<Scripts>,
}

struct Scripts {
    seek: redis::Script,
    cancel: redis::Script,
    claim: redis::Script,
    finish: redis::Script,
    restore: redis::Script,
    due: redis::Script,
}

/// How long a `matched` notice is kept for `status`.
pub const NOTICE_TTL: Duration = Duration::from_secs(600);
/// How many colours count as "recent".
pub const RECENT_COLORS: usize = 10;
/// How many times to pair are kept per pool.
pub const RECENT_WAITS: usize = 100;
/// How long a player's history (last opponent, colours) is kept after their last game.
pub const HISTORY_TTL: Duration = Duration::from_secs(86_400);
/// Most lapsed seeks taken per step.
pub const LAPSED_PER_STEP: usize = 500;

impl RedisTickets {
    /// Over this connection (one Redis or a Redis Cluster: every key shares the `{mm}`
    /// hash tag, so each script touches one slot), in this namespace.
    pub fn new(conn: impl Into<RedisConn>, ns: &Namespace) -> RedisTickets {
        RedisTickets {
            conn: conn.into(),
            prefix: ns.matchmaking_prefix(),
            scripts: Arc::new(Scripts {
                seek: redis::Script::new(SEEK_SCRIPT),
                cancel: redis::Script::new(CANCEL_SCRIPT),
                claim: redis::Script::new(CLAIM_SCRIPT),
                finish: redis::Script::new(FINISH_SCRIPT),
                restore: redis::Script::new(RESTORE_SCRIPT),
                due: redis::Script::new(DUE_SCRIPT),
            }),
        }
    }

    fn ticket_key(&self, player: &str) -> String {
        format!("{}ticket:{player}", self.prefix)
    }

    fn pool_key(&self, pool: &str) -> String {
        format!("{}pool:{pool}", self.prefix)
    }

    fn match_key(&self, id: &str) -> String {
        format!("{}match:{id}", self.prefix)
    }

    fn pending_key(&self) -> String {
        format!("{}pending", self.prefix)
    }
}

impl TicketStore for RedisTickets {
    /// Places a ticket (replacing the player's waiting one).
    async fn seek(&self, ticket: &StoredTicket) -> Result<Placed, StoreError> {
        let body = serde_json::to_string(ticket).map_err(|source| StoreError::Corrupt {
            what: "ticket",
            source,
        })?;
        let mut invocation = self.scripts.seek.key(self.ticket_key(&ticket.seeker.id));
        invocation
            .arg(&self.prefix)
            .arg(&ticket.seeker.id)
            .arg(&ticket.generation)
            .arg(body)
            .arg(ticket.since_ms);
        for pool in &ticket.pools {
            invocation.arg(pool);
        }
        let outcome: i64 = invocation.invoke_async(&mut self.conn.clone()).await?;
        Ok(match outcome {
            1 => Placed::Replaced,
            -1 => Placed::Matching,
            _ => Placed::New,
        })
    }

    /// Cancels the player's ticket (only generation `generation`, if given).
    async fn cancel(
        &self,
        player: &str,
        generation: Option<&str>,
    ) -> Result<Cancelled, StoreError> {
        let outcome: i64 = self
            .scripts
            .cancel
            .key(self.ticket_key(player))
            .arg(&self.prefix)
            .arg(player)
            .arg(generation.unwrap_or(""))
            .invoke_async(&mut self.conn.clone())
            .await?;
        Ok(match outcome {
            1 => Cancelled::Cancelled,
            2 => Cancelled::TooLate,
            3 => Cancelled::Matched,
            _ => Cancelled::Nothing,
        })
    }

    /// The player's ticket, if any, and whether a pairing holds it.
    async fn ticket(&self, player: &str) -> Result<Option<(StoredTicket, bool)>, StoreError> {
        let (body, claimed): (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(self.ticket_key(player))
            .arg("body")
            .arg("claimed")
            .query_async(&mut self.conn.clone())
            .await?;
        let Some(body) = body else { return Ok(None) };
        let ticket = serde_json::from_str(&body).map_err(|source| StoreError::Corrupt {
            what: "ticket",
            source,
        })?;
        Ok(Some((ticket, claimed.is_some())))
    }

    /// Every waiting ticket (not those a pairing holds). A ticket that does not read back is
    /// skipped and logged: one bad value must not stop every pairing.
    async fn waiting(&self) -> Result<Vec<StoredTicket>, StoreError> {
        let pools: Vec<String> = Pool::all().map(|p| p.to_string()).collect();
        let mut pipe = redis::pipe();
        for pool in &pools {
            pipe.cmd("ZRANGE").arg(self.pool_key(pool)).arg(0).arg(-1);
        }
        let members: Vec<Vec<String>> = pipe.query_async(&mut self.conn.clone()).await?;
        let players: BTreeSet<String> = members.into_iter().flatten().collect();
        if players.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for player in &players {
            pipe.cmd("HMGET")
                .arg(self.ticket_key(player))
                .arg("body")
                .arg("claimed");
        }
        let rows: Vec<(Option<String>, Option<String>)> =
            pipe.query_async(&mut self.conn.clone()).await?;
        let mut tickets = Vec::with_capacity(rows.len());
        for (body, claimed) in rows {
            let (Some(body), None) = (body, claimed) else {
                continue;
            };
            match serde_json::from_str(&body) {
                Ok(ticket) => tickets.push(ticket),
                Err(e) => tracing::warn!(error = %e, "a stored ticket does not read back"),
            }
        }
        Ok(tickets)
    }

    /// Claims a pairing: its tickets leave every pool and the record waits for its game,
    /// leased until `retry_at_ms`. `false`: another step took or changed a ticket first.
    async fn claim(&self, record: &MatchRecord, retry_at_ms: u64) -> Result<bool, StoreError> {
        let body = serde_json::to_string(record).map_err(|source| StoreError::Corrupt {
            what: "pairing",
            source,
        })?;
        let mut invocation = self.scripts.claim.key(self.match_key(&record.id));
        invocation.key(self.pending_key());
        for ticket in &record.tickets {
            invocation.key(self.ticket_key(&ticket.seeker.id));
        }
        invocation
            .arg(&self.prefix)
            .arg(&record.id)
            .arg(body)
            .arg(retry_at_ms);
        for ticket in &record.tickets {
            invocation.arg(&ticket.seeker.id).arg(&ticket.generation);
        }
        let claimed: i64 = invocation.invoke_async(&mut self.conn.clone()).await?;
        Ok(claimed == 1)
    }

    /// The pairing's game exists: its tickets are done, each player's notice is kept for
    /// `status`, and the time to pair and the colours are remembered. `false`: it had been
    /// settled already.
    async fn finish(
        &self,
        record: &MatchRecord,
        notices: &[(String, String)],
        now_ms: u64,
    ) -> Result<bool, StoreError> {
        let mut invocation = self.scripts.finish.key(self.match_key(&record.id));
        invocation.key(self.pending_key());
        for (player, _) in notices {
            invocation.key(self.ticket_key(player));
        }
        invocation.arg(&record.id).arg(NOTICE_TTL.as_secs());
        for (player, notice) in notices {
            invocation.arg(player).arg(notice);
        }
        let finished: i64 = invocation.invoke_async(&mut self.conn.clone()).await?;
        if finished == 1 {
            let mut pipe = redis::pipe();
            for ticket in &record.tickets {
                pipe.cmd("LPUSH")
                    .arg(format!("{}waits:{}", self.prefix, record.pool))
                    .arg(now_ms.saturating_sub(ticket.since_ms))
                    .ignore();
            }
            pipe.cmd("LTRIM")
                .arg(format!("{}waits:{}", self.prefix, record.pool))
                .arg(0)
                .arg(RECENT_WAITS - 1)
                .ignore();
            let seats = [
                (&record.white, "w", &record.black),
                (&record.black, "b", &record.white),
            ];
            for (seat, color, other) in seats {
                let crate::ticket::Seat::Player(seeker) = seat else {
                    continue;
                };
                let key = format!("{}history:{}", self.prefix, seeker.id);
                let opponent = match other {
                    crate::ticket::Seat::Player(p) => p.id.clone(),
                    crate::ticket::Seat::Bot(level) => format!("bot:{level}"),
                };
                pipe.cmd("HSET").arg(&key).arg("opp").arg(opponent).ignore();
                pipe.cmd("LPUSH")
                    .arg(format!("{key}:colors"))
                    .arg(color)
                    .ignore();
                pipe.cmd("LTRIM")
                    .arg(format!("{key}:colors"))
                    .arg(0)
                    .arg(RECENT_COLORS - 1)
                    .ignore();
                for k in [key.clone(), format!("{key}:colors")] {
                    pipe.cmd("EXPIRE")
                        .arg(k)
                        .arg(HISTORY_TTL.as_secs())
                        .ignore();
                }
            }
            let () = pipe.query_async(&mut self.conn.clone()).await?;
        }
        Ok(finished == 1)
    }

    /// Gives a pairing up: its tickets go back with their original wait (those cancelled
    /// meanwhile do not). With `lease_until`, only while the caller's lease on it is still
    /// that one. `false`: it had been settled already, or taken over.
    async fn restore(
        &self,
        record: &MatchRecord,
        lease_until: Option<u64>,
    ) -> Result<bool, StoreError> {
        let mut invocation = self.scripts.restore.key(self.match_key(&record.id));
        invocation.key(self.pending_key());
        for ticket in &record.tickets {
            invocation.key(self.ticket_key(&ticket.seeker.id));
        }
        invocation
            .arg(&self.prefix)
            .arg(&record.id)
            .arg(lease_until.map(|l| l.to_string()).unwrap_or_default());
        for ticket in &record.tickets {
            invocation.arg(&ticket.seeker.id).arg(ticket.since_ms);
        }
        let restored: i64 = invocation.invoke_async(&mut self.conn.clone()).await?;
        Ok(restored == 1)
    }

    /// Pairings whose game is due to be (re)tried at `now_ms`, leased to the caller for
    /// `lease`.
    async fn due(
        &self,
        now_ms: u64,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<MatchRecord>, StoreError> {
        let ids: Vec<String> = self
            .scripts
            .due
            .key(self.pending_key())
            .arg(now_ms)
            .arg(lease.as_millis() as u64)
            .arg(limit)
            .invoke_async(&mut self.conn.clone())
            .await?;
        let mut records = Vec::with_capacity(ids.len());
        for id in ids {
            let body: Option<String> = redis::cmd("GET")
                .arg(self.match_key(&id))
                .query_async(&mut self.conn.clone())
                .await?;
            match body.map(|b| serde_json::from_str::<MatchRecord>(&b)) {
                Some(Ok(record)) => records.push(record),
                Some(Err(e)) => {
                    tracing::error!(match_id = %id, error = %e, "a stored pairing does not read back; set aside");
                    let _: i64 = redis::cmd("ZREM")
                        .arg(self.pending_key())
                        .arg(&id)
                        .query_async(&mut self.conn.clone())
                        .await?;
                }
                None => {
                    let _: i64 = redis::cmd("ZREM")
                        .arg(self.pending_key())
                        .arg(&id)
                        .query_async(&mut self.conn.clone())
                        .await?;
                }
            }
        }
        Ok(records)
    }

    /// The player's latest `matched` notice (JSON), kept for 10 minutes.
    async fn notice(&self, player: &str) -> Result<Option<String>, StoreError> {
        Ok(redis::cmd("GET")
            .arg(format!("{}matched:{player}", self.prefix))
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// The player's last matchmade opponent and recent colour balance (Whites − Blacks).
    async fn history(&self, player: &str) -> Result<(Option<String>, i32), StoreError> {
        let key = format!("{}history:{player}", self.prefix);
        let (opponent, colors): (Option<String>, Vec<String>) = redis::pipe()
            .cmd("HGET")
            .arg(&key)
            .arg("opp")
            .cmd("LRANGE")
            .arg(format!("{key}:colors"))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn.clone())
            .await?;
        let balance = colors.iter().map(|c| if c == "w" { 1 } else { -1 }).sum();
        Ok((opponent, balance))
    }

    /// The latest times to pair in `pool` (ms).
    async fn recent_waits(&self, pool: &str) -> Result<Vec<u64>, StoreError> {
        Ok(redis::cmd("LRANGE")
            .arg(format!("{}waits:{pool}", self.prefix))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// The player's last connection closed: their seek lapses at `at_ms` unless they come
    /// back (a seek or `stay`).
    async fn leave(&self, player: &str, at_ms: u64) -> Result<(), StoreError> {
        let _: i64 = redis::cmd("ZADD")
            .arg(format!("{}leaving", self.prefix))
            .arg(at_ms)
            .arg(player)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// The player is connected again: their seek stays.
    async fn stay(&self, player: &str) -> Result<(), StoreError> {
        let _: i64 = redis::cmd("ZREM")
            .arg(format!("{}leaving", self.prefix))
            .arg(player)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Players whose grace period ended by `now_ms`.
    async fn lapsed(&self, now_ms: u64) -> Result<Vec<String>, StoreError> {
        Ok(redis::cmd("ZRANGEBYSCORE")
            .arg(format!("{}leaving", self.prefix))
            .arg("-inf")
            .arg(now_ms)
            .arg("LIMIT")
            .arg(0)
            .arg(LAPSED_PER_STEP)
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// Tickets waiting per pool.
    async fn waiting_per_pool(&self) -> Result<Vec<(Pool, u64)>, StoreError> {
        let pools: Vec<Pool> = Pool::all().collect();
        let mut pipe = redis::pipe();
        for pool in &pools {
            pipe.cmd("ZCARD").arg(self.pool_key(&pool.to_string()));
        }
        let counts: Vec<u64> = pipe.query_async(&mut self.conn.clone()).await?;
        Ok(pools.into_iter().zip(counts).collect())
    }
}
