//! Where live games are kept: a versioned blob per game plus its event log, changed only by
//! compare-and-set. [`RedisStore`] for real deployments, [`MemoryStore`] for unit tests and
//! the single-process mode.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use frontier_platform::deadlines::{self, MemoryDeadlines, RedisDeadlines};
use frontier_platform::{GameId, Namespace, RedisConn, Shard, redis_conn};

/// The layout of game-session's keys in Redis (which keys hold a game, its log, the
/// outboxes, deadlines, rematches). Raise it with any change of key names or types, with a
/// migration from the older layouts in [`RedisStore::check_layout`].
pub const KEY_LAYOUT: u32 = 1;

/// Why game-session will not start on this Redis.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// Redis could not be asked.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Stamped by a newer version: its keys are not this version's to use.
    #[error(
        "Redis holds game-session's key layout {0}, newer than this version's: upgrade this instance"
    )]
    Newer(u32),
    /// The stamp is not a number.
    #[error("Redis holds an unreadable key-layout stamp `{0}`")]
    Unreadable(String),
}

/// A storage failure: the write or read did not happen, or a write is not yet safe to
/// acknowledge. Either way the caller answers `unavailable` and the client may send the
/// same action again (under its id, so it is never applied twice).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend is down or answered nonsense.
    #[error("game store: {0}")]
    Backend(String),
    /// The write was made on the master, but fewer replicas than required confirmed it
    /// within the timeout (`WAIT`): a failover now could lose it, so it is not acknowledged.
    #[error("game store: {confirmed} of the {required} replicas required confirmed the write")]
    NotReplicated {
        /// How many replicas confirmed it.
        confirmed: i64,
        /// How many must ([`AckReplicas::replicas`]).
        required: u32,
    },
}

impl From<redis::RedisError> for StoreError {
    fn from(e: redis::RedisError) -> Self {
        StoreError::Backend(e.to_string())
    }
}

impl From<redis::ParsingError> for StoreError {
    fn from(e: redis::ParsingError) -> Self {
        StoreError::Backend(e.to_string())
    }
}

/// When a write to Redis counts as done: once this many replicas confirmed it (Redis
/// `WAIT replicas timeout` after the write, on the same connection), so that a replica
/// promoted in a failover holds every acknowledged write. `replicas: 0` acknowledges a
/// write once the master made it (a failover may then lose the master's last writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckReplicas {
    /// Replicas that must confirm a write.
    pub replicas: u32,
    /// How long to wait for them before answering `unavailable`.
    pub timeout: Duration,
}

impl AckReplicas {
    /// No replica waited for.
    pub const NONE: AckReplicas = AckReplicas {
        replicas: 0,
        timeout: Duration::ZERO,
    };
}

/// How many connections carry acknowledged writes. `WAIT` blocks the connection it is sent
/// on until the replicas answer (a round trip to them), so writes use connections of their
/// own, never the one reads share, and several of them so that writes of different games
/// wait side by side.
pub const ACK_WRITERS: usize = 4;

/// A write: the new state, the log entries it appends, and what else it implies.
#[derive(Debug, Clone)]
pub struct Write {
    /// The game.
    pub game: GameId,
    /// The version the caller read (0 for a game that does not exist yet).
    pub expected: u64,
    /// The new version (`expected + entries.len()`).
    pub version: u64,
    /// The new state.
    pub state: Bytes,
    /// Log entries, one per version from `expected + 1`.
    pub entries: Vec<Bytes>,
    /// The game ended: let its keys expire after this long.
    pub finished_ttl: Option<Duration>,
    /// Put the game in the outbox of finished games to publish (a game that ended; not a
    /// board aborted before its second player came, which is no game and is not recorded).
    pub outbox: bool,
    /// The game's next clock deadline (Unix ms), or none (no clock, or over).
    pub deadline: Option<i64>,
    /// The game has no clock: it never has a deadline, so the write neither schedules nor
    /// drops one (a Redis call less per move; `deadline` is then none).
    pub untimed: bool,
    /// The change leaves a bot to act: its job, put in the bot-job outbox with the change.
    pub bot_job: Option<OutboxJob>,
    /// What the change does to the game's move records (storage formats 2 and 3; format
    /// 1 leaves them alone).
    pub moves: crate::storage::MovesWrite,
}

impl Write {
    /// The write leaves the game's deadline alone: an untimed game never has one.
    fn leaves_deadline_alone(&self) -> bool {
        self.untimed && self.deadline.is_none()
    }
}

/// A game as stored: its version, its state, and its move records (empty unless the
/// state is in storage format 2 or 3), all read at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The version.
    pub version: u64,
    /// The state (`StoredGame`).
    pub state: Bytes,
    /// The move records' list.
    pub moves: Vec<Bytes>,
}

/// A bot job waiting in the outbox for the stream's acknowledgement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxJob {
    /// The job id `<game id>:<version>` (the stream's message id).
    pub id: String,
    /// The job (JSON `frontier_protocol::BotJob`).
    pub payload: Bytes,
}

impl OutboxJob {
    /// The game and version of the job, from its id.
    pub fn game_and_version(&self) -> Option<(GameId, u64)> {
        let (game, version) = self.id.rsplit_once(':')?;
        Some((game.parse().ok()?, version.parse().ok()?))
    }
}

/// A rematch offer for a finished game, kept next to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RematchOffer {
    /// The offerer's colour in the finished game.
    pub by: frontier_rules::Color,
    /// Accepted: the new game is made (or being made) under `new_game`.
    pub accepted: bool,
    /// The rematch's id, drawn when the offer was made.
    pub new_game: GameId,
}

/// How long a game's presence record outlives its last report.
const PRESENCE_TTL_SECONDS: u64 = 7 * 24 * 3600;

/// A present seat's record has its expiry renewed by the ticks once in this many minutes
/// (in its shard's minute), not on every tick: a command less per seat per tick.
const PRESENCE_RENEW_MINUTES: i64 = 16;

/// Whether a tick at `now_ms` renews `game`'s presence record's expiry.
fn presence_renewal_due(game: &GameId, now_ms: i64) -> bool {
    (now_ms / 60_000).rem_euclid(PRESENCE_RENEW_MINUTES)
        == i64::from(Shard::of(game).index()) % PRESENCE_RENEW_MINUTES
}

/// Entries of a gateway's tick written or read per pipelined call.
const TICK_PIPELINE: usize = 500;

/// One entry of a gateway's tick.
enum Tick {
    Present(GameId, frontier_rules::Color),
    Quiet(GameId, u64),
}

/// The storage of live games.
pub trait GameStore: Send + Sync + 'static {
    /// The current version, state and move records of a game.
    fn load(
        &self,
        game: &GameId,
    ) -> impl Future<Output = Result<Option<Stored>, StoreError>> + Send;

    /// Applies the write if the game is still at `expected`; false if it is not. A write
    /// applied but not confirmed by the replicas the store requires is
    /// [`StoreError::NotReplicated`]: it stands on the master, unacknowledged.
    fn compare_and_set(
        &self,
        write: Write,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Waits until every write already made to `game`'s part of the store reached the
    /// replicas a write needs before it is acknowledged ([`AckReplicas`]). Answering a
    /// repeated action calls it: the attempt that made its write may have been refused
    /// `unavailable` for want of them. A store without replicas answers at once.
    fn replicated(&self, game: &GameId) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Log entries with versions `after + 1 ..= after + max`.
    fn log_after(
        &self,
        game: &GameId,
        after: u64,
        max: usize,
    ) -> impl Future<Output = Result<Vec<Bytes>, StoreError>> + Send;

    /// Binds a share code to a game unless the code is taken; the binding expires.
    fn reserve_code(
        &self,
        code: &str,
        game: &GameId,
        ttl: Duration,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The game a share code belongs to.
    fn resolve_code(
        &self,
        code: &str,
    ) -> impl Future<Output = Result<Option<GameId>, StoreError>> + Send;

    /// Finished games whose record is not yet acknowledged by the stream (those of every
    /// shard that answers: an error only when none does).
    fn outbox(&self) -> impl Future<Output = Result<Vec<GameId>, StoreError>> + Send;

    /// The record of `game` reached the stream.
    fn outbox_done(&self, game: &GameId) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Bot jobs whose publication the stream has not yet acknowledged.
    fn bot_outbox(&self) -> impl Future<Output = Result<Vec<OutboxJob>, StoreError>> + Send;

    /// The bot job `id` reached the stream (or is no longer worth sending).
    fn bot_outbox_done(&self, id: &str) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Records that `color`'s player of `game` was connected at `now_ms`.
    fn touch_presence(
        &self,
        game: &GameId,
        color: frontier_rules::Color,
        now_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// A gateway's tick: records each of `present` as connected at `now_ms` (as
    /// [`GameStore::touch_presence`]), and returns those of `quiet` whose stored version is
    /// past the one given, or which have no record. Reads no game's state.
    fn tick(
        &self,
        present: &[(GameId, frontier_rules::Color)],
        quiet: &[(GameId, u64)],
        now_ms: i64,
    ) -> impl Future<Output = Result<Vec<GameId>, StoreError>> + Send;

    /// When each seat of `game` was last seen connected.
    fn presence(
        &self,
        game: &GameId,
    ) -> impl Future<Output = Result<frontier_rules::ByColor<Option<i64>>, StoreError>> + Send;

    /// Schedules (or, with none, drops) `game`'s deadline outside a compare-and-set (after
    /// a clock check found nothing due).
    fn schedule(
        &self,
        game: &GameId,
        deadline: Option<i64>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The rematch offer of `game`, if one stands (or was accepted).
    fn rematch(
        &self,
        game: &GameId,
    ) -> impl Future<Output = Result<Option<RematchOffer>, StoreError>> + Send;

    /// Stores `offer` for `game` unless one is there already (then answers it), and adds
    /// the game to both players' sets of games with offers; both expire after `ttl`.
    fn offer_rematch(
        &self,
        game: &GameId,
        offer: RematchOffer,
        players: [&str; 2],
        ttl: Duration,
    ) -> impl Future<Output = Result<Option<RematchOffer>, StoreError>> + Send;

    /// Marks `game`'s offer accepted if it is `by`'s and still stands, in one step; answers
    /// the offer if it is accepted now (or was already, whoever's it was), else none.
    fn accept_rematch(
        &self,
        game: &GameId,
        by: frontier_rules::Color,
    ) -> impl Future<Output = Result<Option<RematchOffer>, StoreError>> + Send;

    /// Removes `game`'s offer if it stands and is not accepted, in one step; answers it.
    fn drop_rematch(
        &self,
        game: &GameId,
    ) -> impl Future<Output = Result<Option<RematchOffer>, StoreError>> + Send;

    /// The games for which `player` made or received an offer lately (some may be gone).
    fn rematch_games(
        &self,
        player: &str,
    ) -> impl Future<Output = Result<Vec<GameId>, StoreError>> + Send;
}

/// Offer: KEYS offer hash; ARGV by, new game id, ttl (ms). Answers the existing offer
/// (`{by, state, new}`), or nil once stored. One key, so it runs on a Redis Cluster; the
/// players' sets of games with offers (an index for lapsing them) are written before it.
const OFFER_REMATCH: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('HMGET', KEYS[1], 'by', 'state', 'new')
end
redis.call('HSET', KEYS[1], 'by', ARGV[1], 'state', 'offered', 'new', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return nil
"#;

/// Accept: KEYS offer hash; ARGV the offerer's colour expected. Marks a standing offer by
/// that colour accepted; answers the offer if it is accepted (now or before), else nil.
const ACCEPT_REMATCH: &str = r#"
local o = redis.call('HMGET', KEYS[1], 'by', 'state', 'new')
if o[1] == false then return nil end
if o[2] == 'accepted' then return o end
if o[1] ~= ARGV[1] then return nil end
redis.call('HSET', KEYS[1], 'state', 'accepted')
o[2] = 'accepted'
return o
"#;

/// Drop: KEYS offer hash. Removes a standing (not accepted) offer; answers it, or nil.
const DROP_REMATCH: &str = r#"
local o = redis.call('HMGET', KEYS[1], 'by', 'state', 'new')
if o[1] == false or o[2] ~= 'offered' then return nil end
redis.call('DEL', KEYS[1])
return o
"#;

/// An offer as the scripts answer it: `[by, state, new game id]`.
fn offer_of(fields: Option<Vec<Option<String>>>) -> Result<Option<RematchOffer>, StoreError> {
    let Some(fields) = fields else {
        return Ok(None);
    };
    let [Some(by), Some(state), Some(new)] = fields.as_slice() else {
        return Err(StoreError::Backend(
            "a rematch offer is missing fields".into(),
        ));
    };
    let by = match by.as_str() {
        "white" => frontier_rules::Color::White,
        "black" => frontier_rules::Color::Black,
        other => return Err(StoreError::Backend(format!("a rematch offer by `{other}`"))),
    };
    let new_game = new
        .parse()
        .map_err(|_| StoreError::Backend("a rematch offer's game id is not a UUID".into()))?;
    Ok(Some(RematchOffer {
        by,
        accepted: state == "accepted",
        new_game,
    }))
}

/// Compare-and-set of a game. KEYS: state, log, move records (the state's alone in the
/// hash layout, option `H`), then one key per option that needs one, in the options'
/// order. ARGV: expected version, new version, state, options (a string of option letters,
/// empty for a plain move), the number n of log entries, the length to cut the move
/// records to first (-1: none; 0: remove them all), then each option's arguments in the
/// options' order, then the n log entries, then the move records to append. Options:
///
/// - `H` records-held (first when given): storage format 3, the log entries and move
///   records are fields of the game's hash (`e<version>`, `r<index>` from 1, the records'
///   count in `n`), which held records-held records before this write; written with the
///   version and state in one `HSET` (no key);
/// - `T` ttl-seconds: the game ended; its keys expire then (no key);
/// - `D` deadline game-id: schedule the deadline (Unix ms; -1 drops it), key the shard's
///   deadlines (the clock contract's own snippet, `frontier_platform::deadlines`); an
///   untimed game has no deadline and its writes leave the set alone;
/// - `O` game-id: add the game to the shard's outbox of finished games;
/// - `B` job-id job: put a bot job in the shard's bot-job outbox.
///
/// A plain move passes 3 keys and 6 arguments besides its entry and record (1 key and 7
/// in the hash layout): every argument and key is a Lua string made per call, which cost
/// a fifth of the script's time when all were passed always (issue 29,
/// docs/benchmarks.md). Each `redis.call` costs about 2.5 µs of Redis's time, so the hash
/// layout's one `HSET` in place of an `HSET` and two `RPUSH`es is most of what it saves.
/// The outbox, deadline and bot-job keys are the game's shard's, so every key shares the
/// game's hash tag (one Redis Cluster slot).
fn cas_script() -> String {
    let head = r#"
local current = redis.call('HGET', KEYS[1], 'v')
if current == false then current = '0' end
if current ~= ARGV[1] then return 0 end
local a = 7
local ttl = 0
local options = ARGV[4]
local hashed = string.byte(options, 1) == 72
local held = 0
if options ~= '' then
  local k = 4
  if hashed then k = 2 end
  for i = 1, #options do
    local o = string.sub(options, i, i)
    if o == 'H' then
      held = tonumber(ARGV[a])
      a = a + 1
    elseif o == 'T' then
      ttl = tonumber(ARGV[a])
      a = a + 1
    elseif o == 'D' then
      local at, member, key = ARGV[a], ARGV[a + 1], KEYS[k]
"#;
    let tail = r#"      a = a + 2
      k = k + 1
    elseif o == 'O' then
      redis.call('SADD', KEYS[k], ARGV[a])
      a = a + 1
      k = k + 1
    elseif o == 'B' then
      redis.call('HSET', KEYS[k], ARGV[a], ARGV[a + 1])
      a = a + 2
      k = k + 1
    end
  end
end
local n = tonumber(ARGV[5])
local trim = tonumber(ARGV[6])
if hashed then
  local fields = {'v', ARGV[2], 's', ARGV[3]}
  local f = 4
  local version = tonumber(ARGV[1])
  local function put(name, value)
    fields[f + 1] = name
    fields[f + 2] = value
    f = f + 2
    if f >= 2000 then
      redis.call('HSET', KEYS[1], unpack(fields, 1, f))
      f = 0
    end
  end
  for i = 0, n - 1 do
    put('e' .. (version + 1 + i), ARGV[a + i])
  end
  local count = held
  if trim >= 0 then count = trim end
  for i = a + n, #ARGV do
    count = count + 1
    put('r' .. count, ARGV[i])
  end
  put('n', count)
  if f > 0 then redis.call('HSET', KEYS[1], unpack(fields, 1, f)) end
  if held > count then
    local gone = {}
    for i = count + 1, held do
      gone[#gone + 1] = 'r' .. i
      if #gone == 1000 or i == held then
        redis.call('HDEL', KEYS[1], unpack(gone))
        gone = {}
      end
    end
  end
  if ttl > 0 then redis.call('EXPIRE', KEYS[1], ttl) end
  return 1
end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 's', ARGV[3])
local function push(key, from, to)
  while from <= to do
    local last = math.min(to, from + 999)
    redis.call('RPUSH', key, unpack(ARGV, from, last))
    from = last + 1
  end
end
push(KEYS[2], a, a + n - 1)
if trim == 0 then
  redis.call('DEL', KEYS[3])
elseif trim > 0 then
  redis.call('LTRIM', KEYS[3], 0, trim - 1)
end
push(KEYS[3], a + n, #ARGV)
if ttl > 0 then
  redis.call('EXPIRE', KEYS[1], ttl)
  redis.call('EXPIRE', KEYS[2], ttl)
  redis.call('EXPIRE', KEYS[3], ttl)
end
return 1
"#;
    format!(
        "{head}      {}{tail}",
        deadlines::schedule_lua("key", "at", "member")
    )
}

/// The compare-and-set of a plain write in the hash layout (storage format 3): one log
/// entry, at most one record appended, and no option but a deadline. KEYS: the game's
/// hash, then (a game with a clock) its shard's deadlines. ARGV: expected version, new
/// version, state, log entry, the move's record or '' (none) and the records' new count,
/// then (with the deadlines' key) the deadline (Unix ms; -1 drops it) and the game's id.
/// The same change as [`cas_script`]'s with options `H` (and `D`), in fewer arguments:
/// each is a Lua string made per call, and the general script's further ones and its
/// option loop took a fifth of its time for such a write (scripts/redis-cas-shapes.py,
/// issue 29).
fn move_in_hash_script() -> String {
    let move_head = r#"
local current = redis.call('HGET', KEYS[1], 'v')
if current == false then current = '0' end
if current ~= ARGV[1] then return 0 end
if ARGV[5] ~= '' then
  redis.call('HSET', KEYS[1], 'v', ARGV[2], 's', ARGV[3], 'e' .. ARGV[2], ARGV[4],
    'r' .. ARGV[6], ARGV[5], 'n', ARGV[6])
else
  redis.call('HSET', KEYS[1], 'v', ARGV[2], 's', ARGV[3], 'e' .. ARGV[2], ARGV[4])
end
if KEYS[2] then
  local key, at, member = KEYS[2], ARGV[7], ARGV[8]
"#;
    format!(
        "{move_head}  {}end\nreturn 1\n",
        deadlines::schedule_lua("key", "at", "member")
    )
}

/// A game's version, state and move records in one atomic read: KEYS state, move
/// records; nil for a game that is not there. The records are the hash's `r1`…`r<n>` when
/// it has a count `n` (storage format 3), else the list's.
const LOAD_SCRIPT: &str = r#"
local vs = redis.call('HMGET', KEYS[1], 'v', 's', 'n')
if not vs[1] or not vs[2] then return false end
if not vs[3] then
  return {vs[1], vs[2], redis.call('LRANGE', KEYS[2], 0, -1)}
end
local records = {}
local count = tonumber(vs[3])
local from = 1
while from <= count do
  local names = {}
  for i = from, math.min(count, from + 999) do names[#names + 1] = 'r' .. i end
  local got = redis.call('HMGET', KEYS[1], unpack(names))
  for i = 1, #got do records[#records + 1] = got[i] end
  from = from + 1000
end
return {vs[1], vs[2], records}
"#;

/// Log entries `ARGV[1] + 1 ..= ARGV[1] + ARGV[2]`: KEYS state, log. The hash's fields
/// `e<version>` when it has a record count `n` (storage format 3; up to the first missing
/// one), else the list's.
const LOG_SCRIPT: &str = r#"
local after, max = tonumber(ARGV[1]), tonumber(ARGV[2])
if redis.call('HEXISTS', KEYS[1], 'n') == 0 then
  return redis.call('LRANGE', KEYS[2], after, after + max - 1)
end
local entries = {}
local from = after + 1
while from <= after + max do
  local names = {}
  for v = from, math.min(after + max, from + 999) do names[#names + 1] = 'e' .. v end
  local got = redis.call('HMGET', KEYS[1], unpack(names))
  for i = 1, #got do
    if not got[i] then return entries end
    entries[#entries + 1] = got[i]
  end
  from = from + 1000
end
return entries
"#;

/// Games in Redis: a hash per game (`v`, `s`), a list as its log, a list of its move
/// records (storage format 2) — or, in storage format 3, the log and the records as fields
/// of the game's hash (`e<version>`, `r<index>`, `n`) — and a set per shard as the outbox.
/// Works on one Redis or a Redis Cluster.
#[derive(Clone)]
pub struct RedisStore {
    conn: RedisConn,
    ns: Namespace,
    cas: Arc<LuaScript>,
    move_in_hash: Arc<LuaScript>,
    load_script: Arc<LuaScript>,
    log_script: Arc<LuaScript>,
    rematch_scripts: Arc<[redis::Script; 3]>,
    deadlines: RedisDeadlines,
    ack: AckReplicas,
    /// The connections of acknowledged writes (see [`ACK_WRITERS`]); empty without
    /// replicas to wait for (writes then share `conn`).
    writers: Arc<[RedisConn]>,
    next_writer: Arc<AtomicUsize>,
    /// Each shard's keys that a compare-and-set names, made once (by shard index).
    shard_keys: Arc<[ShardKeys]>,
}

/// The keys of one shard's sets that every compare-and-set names.
struct ShardKeys {
    deadlines: String,
    finished_outbox: String,
    bot_outbox: String,
}

/// A Lua script sent by its hash (`EVALSHA`), and by its text (`EVAL`, which also caches
/// it) where a node does not know it yet: a replica promoted in a failover has an empty
/// script cache.
struct LuaScript {
    code: String,
    hash: String,
}

impl LuaScript {
    fn new(code: String) -> LuaScript {
        let hash = redis::Script::new(&code).get_hash().to_owned();
        LuaScript { code, hash }
    }

    /// `EVALSHA hash` or `EVAL code`, to which the caller adds the key count, keys and
    /// arguments.
    fn cmd(&self, by_hash: bool) -> redis::Cmd {
        self.cmd_sized(by_hash, 0, 0)
    }

    /// [`cmd`](Self::cmd) with room for `more_args` further arguments of `more_bytes` in
    /// all: a move's compare-and-set is built without growing its buffers (issue 29).
    fn cmd_sized(&self, by_hash: bool, more_args: usize, more_bytes: usize) -> redis::Cmd {
        let (name, script) = if by_hash {
            ("EVALSHA", &self.hash)
        } else {
            ("EVAL", &self.code)
        };
        let mut cmd =
            redis::Cmd::with_capacity(2 + more_args, name.len() + script.len() + more_bytes);
        cmd.arg(name).arg(script);
        cmd
    }
}

/// Whether `e` says the node does not know the script (`NOSCRIPT`).
fn is_noscript(e: &redis::RedisError) -> bool {
    e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

/// Runs a script's `command` by its hash, and by its text where the node does not know it.
async fn eval<T: redis::FromRedisValue>(
    conn: &RedisConn,
    command: impl Fn(bool) -> redis::Cmd,
) -> Result<T, StoreError> {
    let mut conn = conn.clone();
    Ok(match command(true).query_async(&mut conn).await {
        Err(e) if is_noscript(&e) => command(false).query_async(&mut conn).await?,
        other => other?,
    })
}

impl RedisStore {
    /// A plain write in the hash layout as [`move_in_hash_script`] takes it: `deadlines`
    /// the shard's deadlines when the write schedules or drops one.
    fn move_in_hash_cmd(
        &self,
        write: &Write,
        key: &str,
        deadlines: Option<&str>,
        by_hash: bool,
    ) -> redis::Cmd {
        let entry = write.entries.first().map_or(&[][..], |e| e.as_ref());
        let record = write.moves.append.first().map_or(&[][..], |r| r.as_ref());
        let count = write.moves.hashed.unwrap_or(0) + 1;
        let bytes = 7 * 20
            + key.len()
            + deadlines.map_or(0, str::len)
            + write.state.len()
            + entry.len()
            + record.len()
            + 36;
        let mut cmd = self.move_in_hash.cmd_sized(by_hash, 11, bytes);
        cmd.arg(1 + usize::from(deadlines.is_some())).arg(key);
        if let Some(deadlines) = deadlines {
            cmd.arg(deadlines);
        }
        cmd.arg(write.expected)
            .arg(write.version)
            .arg(write.state.as_ref())
            .arg(entry)
            .arg(record);
        if record.is_empty() {
            cmd.arg("");
        } else {
            cmd.arg(count);
        }
        if deadlines.is_some() {
            cmd.arg(write.deadline.unwrap_or(-1))
                .arg(write.game.to_string());
        }
        cmd
    }

    /// Connects (and keeps reconnecting) to Redis: `urls` as
    /// [`RedisConn::connect`] takes them (a list of seeds means a cluster).
    pub async fn connect(urls: &str, ns: Namespace) -> Result<RedisStore, StoreError> {
        Ok(RedisStore::new(RedisConn::connect(urls, false).await?, ns))
    }

    /// Over this connection.
    pub fn new(conn: RedisConn, ns: Namespace) -> RedisStore {
        let shard_keys = Shard::all()
            .map(|shard| ShardKeys {
                deadlines: ns.deadlines_key(shard),
                finished_outbox: ns.finished_outbox_key(shard),
                bot_outbox: ns.bot_outbox_key(shard),
            })
            .collect();
        RedisStore {
            deadlines: RedisDeadlines::new(conn.clone(), ns.clone()),
            conn,
            ns,
            cas: Arc::new(LuaScript::new(cas_script())),
            move_in_hash: Arc::new(LuaScript::new(move_in_hash_script())),
            load_script: Arc::new(LuaScript::new(LOAD_SCRIPT.to_owned())),
            log_script: Arc::new(LuaScript::new(LOG_SCRIPT.to_owned())),
            rematch_scripts: Arc::new([
                redis::Script::new(OFFER_REMATCH),
                redis::Script::new(ACCEPT_REMATCH),
                redis::Script::new(DROP_REMATCH),
            ]),
            ack: AckReplicas::NONE,
            writers: Arc::new([]),
            next_writer: Arc::new(AtomicUsize::new(0)),
            shard_keys,
        }
    }

    /// Acknowledges a write only once `ack.replicas` replicas confirmed it, waiting on
    /// `writers` (connections to the same Redis, [`ACK_WRITERS`] of them, used for writes
    /// alone). With `ack.replicas` 0 writes are acknowledged as the master makes them.
    pub fn acknowledged_by(mut self, ack: AckReplicas, writers: Vec<RedisConn>) -> RedisStore {
        if ack.replicas > 0 && !writers.is_empty() {
            self.ack = ack;
            self.writers = writers.into();
        } else {
            self.ack = AckReplicas::NONE;
            self.writers = Arc::new([]);
        }
        self
    }

    /// How many replicas a write waits for.
    pub fn ack_replicas(&self) -> AckReplicas {
        self.ack
    }

    /// The fewest replicas any master has now: from `INFO replication` on one Redis (its
    /// connected replicas), from `CLUSTER NODES` on a cluster (replicas not failed, per
    /// master serving slots). 0 on a replica or a master without any.
    pub async fn replicas_per_master(&self) -> Result<u32, StoreError> {
        let mut conn = self.conn.clone();
        if self.conn.is_cluster() {
            let nodes: String = redis::cmd("CLUSTER")
                .arg("NODES")
                .query_async(&mut conn)
                .await?;
            Ok(replicas_per_master_in(&nodes))
        } else {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut conn)
                .await?;
            let field = |name: &str| {
                info.lines()
                    .find_map(|l| l.trim().strip_prefix(name)?.strip_prefix(':'))
                    .map(str::to_owned)
            };
            if field("role").as_deref() != Some("master") {
                return Ok(0);
            }
            Ok(field("connected_slaves")
                .and_then(|n| n.parse().ok())
                .unwrap_or(0))
        }
    }

    /// A write the primary made and too few replicas confirmed, or refused as no longer
    /// its to take (`redis_conn::primary_in_doubt`: the refusal came inside a pipeline,
    /// which fails no command of the connection): under Sentinel the primary may have been
    /// replaced while it still runs (its replicas moved to the new one), which no
    /// connection's failure says; every connection asks the sentinels (in the background,
    /// each at most every 100 ms), so that the client's retry goes to the primary named
    /// now.
    fn unconfirmed(&self) {
        self.conn.recheck_primary();
        for writer in self.writers.iter() {
            writer.recheck_primary();
        }
    }

    /// The next connection for an acknowledged write.
    fn writer(&self) -> RedisConn {
        let i = self.next_writer.fetch_add(1, Ordering::Relaxed);
        self.writers[i % self.writers.len()].clone()
    }

    /// Runs `write` (built by `command`: by script hash first, by script text if the node
    /// does not know the script) followed by `WAIT`, in one pipeline on one writer
    /// connection — so on the node that took the write: a cluster routes the pipeline by
    /// the write's key. Answers the write's reply and how many replicas confirmed it.
    async fn write_and_wait(
        &self,
        command: impl Fn(bool) -> redis::Cmd,
    ) -> Result<(redis::Value, i64), StoreError> {
        let mut conn = self.writer();
        let timeout_ms = u64::try_from(self.ack.timeout.as_millis()).unwrap_or(u64::MAX);
        for by_hash in [true, false] {
            let mut pipe = redis::pipe();
            pipe.add_command(command(by_hash))
                .cmd("WAIT")
                .arg(self.ack.replicas)
                .arg(timeout_ms)
                .ignore_errors();
            let mut replies: Vec<redis::RedisResult<redis::Value>> =
                pipe.query_async(&mut conn).await?;
            let (Some(waited), Some(written)) = (replies.pop(), replies.pop()) else {
                return Err(StoreError::Backend(
                    "a write and WAIT answered fewer than two replies".into(),
                ));
            };
            let written = match written {
                Err(e) if by_hash && is_noscript(&e) => continue,
                Err(e) if redis_conn::primary_in_doubt(&e) => {
                    self.unconfirmed();
                    return Err(e.into());
                }
                other => other?,
            };
            let confirmed: i64 = redis::from_redis_value(waited?)?;
            return Ok((written, confirmed));
        }
        Err(StoreError::Backend(
            "the node refused the script by text after refusing it by hash".into(),
        ))
    }

    /// The Redis connection (for readiness checks).
    pub fn connection(&self) -> RedisConn {
        self.conn.clone()
    }

    /// `<prefix>:storage-layout`: the version of the layout of game-session's keys in this
    /// Redis ([`KEY_LAYOUT`]), stamped by the first instance that starts on it.
    pub fn layout_key(&self) -> String {
        format!("{}:storage-layout", self.ns.prefix())
    }

    /// Checks the key layout this Redis holds before anything is served: a fresh Redis is
    /// stamped with [`KEY_LAYOUT`]; one stamped by a newer version (whose keys this
    /// version would not find, or would write beside) is refused, so a rolling upgrade
    /// that changes the layout can never lose live games to an old instance. A version
    /// that changes the layout migrates older stamps here, before it serves.
    pub async fn check_layout(&self) -> Result<u32, LayoutError> {
        let mut conn = self.conn.clone();
        let key = self.layout_key();
        let _: redis::Value = redis::cmd("SET")
            .arg(&key)
            .arg(KEY_LAYOUT)
            .arg("NX")
            .query_async(&mut conn)
            .await
            .map_err(StoreError::from)?;
        let stamped: Option<String> = redis::cmd("GET")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .map_err(StoreError::from)?;
        let stamped = stamped
            .as_deref()
            .and_then(|v| v.parse::<u32>().ok())
            .ok_or_else(|| LayoutError::Unreadable(stamped.clone().unwrap_or_default()))?;
        if stamped > KEY_LAYOUT {
            return Err(LayoutError::Newer(stamped));
        }
        Ok(stamped)
    }

    /// A game's rematch offer: a hash (`by`, `state` offered/accepted, `new` game id)
    /// next to the game's keys (same hash tag).
    fn rematch_key(&self, game: &GameId) -> String {
        format!("{}:rematch", self.ns.game_state_key(game))
    }

    /// The set of games for which a player made or received an offer lately.
    fn rematch_games_key(&self, player: &str) -> String {
        format!("{}:rematches:{}", self.ns.prefix(), player)
    }
}

impl RedisStore {
    /// A deadline written for sooner than a sleeping clock would look again: tell the
    /// clocks (a lost nudge only delays that flag by at most `CLOCK_MAX_SLEEP`).
    async fn nudge_if_soon(&self, deadline: Option<i64>) {
        use frontier_platform::time::Clock as _;
        let Some(at) = deadline else { return };
        let ahead = at - frontier_platform::time::SystemClock.now_ms();
        if ahead < frontier_platform::deadlines::CLOCK_MAX_SLEEP.as_millis() as i64
            && let Err(e) = self.deadlines.nudge(at).await
        {
            tracing::debug!(error = %e, "nudging the clocks failed");
        }
    }
}

/// The fewest replicas (not failed) of any master serving slots, from `CLUSTER NODES`
/// (`<id> <addr> <flags> <master id> … <slots>`); 0 if no master serves any.
fn replicas_per_master_in(nodes: &str) -> u32 {
    let lines: Vec<Vec<&str>> = nodes
        .lines()
        .map(|l| l.split_whitespace().collect())
        .filter(|f: &Vec<&str>| f.len() >= 8)
        .collect();
    let failed = |flags: &str| flags.split(',').any(|f| f == "fail" || f == "fail?");
    lines
        .iter()
        .filter(|f| f[2].split(',').any(|flag| flag == "master") && f.len() > 8 && !failed(f[2]))
        .map(|master| {
            lines
                .iter()
                .filter(|f| f[3] == master[0] && !failed(f[2]))
                .count() as u32
        })
        .min()
        .unwrap_or(0)
}

impl GameStore for RedisStore {
    async fn load(&self, game: &GameId) -> Result<Option<Stored>, StoreError> {
        let command = |by_hash: bool| {
            let mut cmd = self.load_script.cmd(by_hash);
            cmd.arg(2)
                .arg(self.ns.game_state_key(game))
                .arg(self.ns.game_moves_key(game));
            cmd
        };
        type Read = Option<(u64, Vec<u8>, Vec<Vec<u8>>)>;
        let read: Read = eval(&self.conn, command).await?;
        Ok(read.map(|(version, state, moves)| Stored {
            version,
            state: Bytes::from(state),
            moves: moves.into_iter().map(Bytes::from).collect(),
        }))
    }

    async fn compare_and_set(&self, write: Write) -> Result<bool, StoreError> {
        let shard = &self.shard_keys[usize::from(Shard::of(&write.game).index())];
        let deadlines = (!write.leaves_deadline_alone()).then_some(shard.deadlines.as_str());
        // A plain write in the hash layout (one entry, at most one record, no option but a
        // deadline) takes the script made for it, which needs none of the options below.
        let plain_in_hash = write.moves.hashed.is_some()
            && write.finished_ttl.is_none()
            && !write.outbox
            && write.bot_job.is_none()
            && write.entries.len() == 1
            && write.moves.trim_to.is_none()
            && write.moves.append.len() <= 1;
        // The options (see `cas_script`), with their keys and arguments.
        let mut options = String::new();
        let mut option_keys: Vec<&str> = Vec::new();
        let mut option_args: Vec<Bytes> = Vec::new();
        if !plain_in_hash {
            let game_id = || Bytes::from(write.game.to_string());
            if let Some(held) = write.moves.hashed {
                options.push('H');
                option_args.push(Bytes::from(held.to_string()));
            }
            if let Some(ttl) = write.finished_ttl {
                options.push('T');
                option_args.push(Bytes::from(ttl.as_secs().max(1).to_string()));
            }
            if let Some(deadlines) = deadlines {
                options.push('D');
                option_keys.push(deadlines);
                option_args.push(Bytes::from(write.deadline.unwrap_or(-1).to_string()));
                option_args.push(game_id());
            }
            if write.outbox {
                options.push('O');
                option_keys.push(&shard.finished_outbox);
                option_args.push(game_id());
            }
            if let Some(job) = &write.bot_job {
                options.push('B');
                option_keys.push(&shard.bot_outbox);
                option_args.push(Bytes::from(job.id.clone()));
                option_args.push(job.payload.clone());
            }
        }
        // The hash layout (storage format 3) names the game's hash alone.
        let game_keys: Vec<String> = if write.moves.hashed.is_some() {
            vec![self.ns.game_state_key(&write.game)]
        } else {
            let keys = self.ns.game_keys(&write.game);
            vec![keys.state, keys.log, keys.moves]
        };
        // The room `command` needs: 7 fixed arguments besides the game's keys (the key
        // count, expected and new version, state, options, entry count, trim), 5 of them
        // numbers of at most 20 bytes each, then the options' keys and arguments, entries,
        // records.
        let args = 7
            + game_keys.len()
            + option_keys.len()
            + option_args.len()
            + write.entries.len()
            + write.moves.append.len();
        let bytes = 5 * 20
            + game_keys.iter().map(|k| k.len()).sum::<usize>()
            + option_keys.iter().map(|k| k.len()).sum::<usize>()
            + write.state.len()
            + options.len()
            + option_args.iter().map(Bytes::len).sum::<usize>()
            + write.entries.iter().map(Bytes::len).sum::<usize>()
            + write.moves.append.iter().map(Bytes::len).sum::<usize>();
        let command = |by_hash: bool| {
            if plain_in_hash {
                return self.move_in_hash_cmd(&write, &game_keys[0], deadlines, by_hash);
            }
            let mut cmd = self.cas.cmd_sized(by_hash, args, bytes);
            cmd.arg(game_keys.len() + option_keys.len());
            for key in &game_keys {
                cmd.arg(key);
            }
            for key in &option_keys {
                cmd.arg(*key);
            }
            cmd.arg(write.expected)
                .arg(write.version)
                .arg(write.state.as_ref())
                .arg(options.as_str())
                .arg(write.entries.len())
                .arg(write.moves.trim_to.map_or(-1, |n| n as i64));
            for arg in &option_args {
                cmd.arg(arg.as_ref());
            }
            for entry in &write.entries {
                cmd.arg(entry.as_ref());
            }
            for record in &write.moves.append {
                cmd.arg(record.as_ref());
            }
            cmd
        };
        if self.ack.replicas == 0 {
            let applied: i64 = eval(&self.conn, command).await?;
            if applied == 1 {
                self.nudge_if_soon(write.deadline).await;
            }
            return Ok(applied == 1);
        }
        let (applied, confirmed) = self.write_and_wait(command).await?;
        let applied: i64 = redis::from_redis_value(applied)?;
        // A compare-and-set that lost wrote nothing: there is nothing to wait for.
        if applied == 1 && confirmed < i64::from(self.ack.replicas) {
            self.unconfirmed();
            return Err(StoreError::NotReplicated {
                confirmed,
                required: self.ack.replicas,
            });
        }
        if applied == 1 {
            self.nudge_if_soon(write.deadline).await;
        }
        Ok(applied == 1)
    }

    async fn replicated(&self, game: &GameId) -> Result<(), StoreError> {
        if self.ack.replicas == 0 {
            return Ok(());
        }
        // `WAIT` counts the replicas that have this connection's last write, and the
        // replication stream is in order: a write of the game's shard on this connection,
        // once confirmed, means every earlier write to that node is too, whoever made it.
        let probe = self.ns.replication_probe_key(Shard::of(game));
        let (_, confirmed) = self
            .write_and_wait(|_| {
                let mut cmd = redis::cmd("SET");
                cmd.arg(&probe).arg(1);
                cmd
            })
            .await?;
        if confirmed < i64::from(self.ack.replicas) {
            self.unconfirmed();
            return Err(StoreError::NotReplicated {
                confirmed,
                required: self.ack.replicas,
            });
        }
        Ok(())
    }

    async fn log_after(
        &self,
        game: &GameId,
        after: u64,
        max: usize,
    ) -> Result<Vec<Bytes>, StoreError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let command = |by_hash: bool| {
            let mut cmd = self.log_script.cmd(by_hash);
            cmd.arg(2)
                .arg(self.ns.game_state_key(game))
                .arg(self.ns.game_log_key(game))
                .arg(after)
                .arg(max);
            cmd
        };
        let entries: Vec<Vec<u8>> = eval(&self.conn, command).await?;
        Ok(entries.into_iter().map(Bytes::from).collect())
    }

    async fn reserve_code(
        &self,
        code: &str,
        game: &GameId,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let mut conn = self.conn.clone();
        let set: Option<String> = redis::cmd("SET")
            .arg(self.ns.board_code_key(code))
            .arg(game.to_string())
            .arg("NX")
            .arg("EX")
            .arg(ttl.as_secs().max(1))
            .query_async(&mut conn)
            .await?;
        Ok(set.is_some())
    }

    async fn resolve_code(&self, code: &str) -> Result<Option<GameId>, StoreError> {
        let mut conn = self.conn.clone();
        let id: Option<String> = redis::cmd("GET")
            .arg(self.ns.board_code_key(code))
            .query_async(&mut conn)
            .await?;
        Ok(id.and_then(|s| s.parse().ok()))
    }

    async fn outbox(&self) -> Result<Vec<GameId>, StoreError> {
        let mut conn = self.conn.clone();
        if !self.conn.is_cluster() {
            // One server holds every shard: one round trip for all.
            let mut pipe = redis::pipe();
            for shard in Shard::all() {
                pipe.cmd("SMEMBERS").arg(self.ns.finished_outbox_key(shard));
            }
            let all: Vec<Vec<String>> = pipe.query_async(&mut conn).await?;
            return Ok(all
                .into_iter()
                .flatten()
                .filter_map(|s| s.parse::<GameId>().ok())
                .collect());
        }
        let mut games = Vec::new();
        let (mut reached, mut failure) = (0, None);
        for shard in Shard::all() {
            let ids: redis::RedisResult<Vec<String>> = redis::cmd("SMEMBERS")
                .arg(self.ns.finished_outbox_key(shard))
                .query_async(&mut conn)
                .await;
            match ids {
                Ok(ids) => {
                    reached += 1;
                    games.extend(ids.into_iter().filter_map(|s| s.parse::<GameId>().ok()));
                }
                // A shard whose Redis node is down waits for the next sweep; the others go.
                Err(e) => {
                    tracing::warn!(shard = shard.index(), error = %e, "outbox shard unreachable");
                    failure.get_or_insert(e);
                }
            }
        }
        match failure {
            Some(e) if reached == 0 => Err(e.into()),
            _ => Ok(games),
        }
    }

    async fn outbox_done(&self, game: &GameId) -> Result<(), StoreError> {
        let mut conn = self.conn.clone();
        let _: i64 = redis::cmd("SREM")
            .arg(self.ns.finished_outbox_key(Shard::of(game)))
            .arg(game.to_string())
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    async fn bot_outbox(&self) -> Result<Vec<OutboxJob>, StoreError> {
        let mut conn = self.conn.clone();
        if !self.conn.is_cluster() {
            // One server holds every shard: one round trip for all.
            let mut pipe = redis::pipe();
            for shard in Shard::all() {
                pipe.cmd("HGETALL").arg(self.ns.bot_outbox_key(shard));
            }
            let all: Vec<Vec<(String, Vec<u8>)>> = pipe.query_async(&mut conn).await?;
            return Ok(all
                .into_iter()
                .flatten()
                .map(|(id, payload)| OutboxJob {
                    id,
                    payload: Bytes::from(payload),
                })
                .collect());
        }
        let mut out = Vec::new();
        let (mut reached, mut failure) = (0, None);
        for shard in Shard::all() {
            let jobs: redis::RedisResult<Vec<(String, Vec<u8>)>> = redis::cmd("HGETALL")
                .arg(self.ns.bot_outbox_key(shard))
                .query_async(&mut conn)
                .await;
            match jobs {
                Ok(jobs) => {
                    reached += 1;
                    out.extend(jobs.into_iter().map(|(id, payload)| OutboxJob {
                        id,
                        payload: Bytes::from(payload),
                    }));
                }
                Err(e) => {
                    tracing::warn!(shard = shard.index(), error = %e, "bot outbox shard unreachable");
                    failure.get_or_insert(e);
                }
            }
        }
        match failure {
            Some(e) if reached == 0 => Err(e.into()),
            _ => Ok(out),
        }
    }

    async fn bot_outbox_done(&self, id: &str) -> Result<(), StoreError> {
        let job = OutboxJob {
            id: id.to_owned(),
            payload: Bytes::new(),
        };
        // A job id names its game, and so its shard; an id that names none is in no shard.
        let Some((game, _)) = job.game_and_version() else {
            return Ok(());
        };
        let mut conn = self.conn.clone();
        let _: i64 = redis::cmd("HDEL")
            .arg(self.ns.bot_outbox_key(Shard::of(&game)))
            .arg(id)
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    async fn touch_presence(
        &self,
        game: &GameId,
        color: frontier_rules::Color,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn.clone();
        let key = self.ns.presence_key(game);
        let _: () = redis::pipe()
            .cmd("HSET")
            .arg(&key)
            .arg(color.name())
            .arg(now_ms)
            .ignore()
            .cmd("EXPIRE")
            .arg(&key)
            .arg(PRESENCE_TTL_SECONDS)
            .ignore()
            .query_async(&mut conn)
            .await?;
        Ok(())
    }

    async fn tick(
        &self,
        present: &[(GameId, frontier_rules::Color)],
        quiet: &[(GameId, u64)],
        now_ms: i64,
    ) -> Result<Vec<GameId>, StoreError> {
        // A pipeline per shard (a game's keys carry its shard's hash tag: on a cluster a
        // pipeline may touch one slot only); on one Redis, one for all. At most
        // TICK_PIPELINE entries a call, so that no move waits long behind one.
        let cluster = self.conn.is_cluster();
        let group = |game: &GameId| if cluster { Shard::of(game).index() } else { 0 };
        let mut groups: std::collections::BTreeMap<u16, Vec<Tick>> = Default::default();
        for (game, color) in present {
            groups
                .entry(group(game))
                .or_default()
                .push(Tick::Present(*game, *color));
        }
        for (game, version) in quiet {
            groups
                .entry(group(game))
                .or_default()
                .push(Tick::Quiet(*game, *version));
        }
        let mut behind = Vec::new();
        for entries in groups.values() {
            for chunk in entries.chunks(TICK_PIPELINE) {
                // Every command sized up front (its buffers never grow, as in the
                // gateway's lease refresh), and every reply read, by position: the quiet
                // games' `HGET`s are picked out from among the presence writes' replies.
                // (`Pipeline::ignore` would file the index of every presence write in a
                // hash set.)
                let mut pipe = redis::Pipeline::with_capacity(chunk.len() + chunk.len() / 8);
                let mut reads = Vec::new();
                let mut commands = 0;
                for entry in chunk {
                    match entry {
                        Tick::Present(game, color) => {
                            let key = self.ns.presence_key(game);
                            let mut hset = redis::Cmd::with_capacity(4, 4 + key.len() + 5 + 20);
                            hset.arg("HSET").arg(&key).arg(color.name()).arg(now_ms);
                            pipe.add_command(hset);
                            commands += 1;
                            // The record got its expiry when its follow began (`Presence`);
                            // a tick renews it only in its shard's minute of every
                            // PRESENCE_RENEW_MINUTES (days before it could run out).
                            if presence_renewal_due(game, now_ms) {
                                let mut expire = redis::Cmd::with_capacity(3, 6 + key.len() + 20);
                                expire.arg("EXPIRE").arg(&key).arg(PRESENCE_TTL_SECONDS);
                                pipe.add_command(expire);
                                commands += 1;
                            }
                        }
                        Tick::Quiet(game, relayed) => {
                            let key = self.ns.game_state_key(game);
                            let mut hget = redis::Cmd::with_capacity(3, 4 + key.len() + 1);
                            hget.arg("HGET").arg(&key).arg("v");
                            pipe.add_command(hget);
                            reads.push((commands, game, *relayed));
                            commands += 1;
                        }
                    }
                }
                let mut conn = self.conn.clone();
                let replies: Vec<redis::Value> = pipe.query_async(&mut conn).await?;
                if replies.len() != commands {
                    return Err(StoreError::Backend(format!(
                        "a tick's pipeline of {commands} commands answered {} replies",
                        replies.len()
                    )));
                }
                for (at, game, relayed) in reads {
                    let stored: Option<u64> = redis::from_redis_value_ref(&replies[at])?;
                    if stored.is_none_or(|v| v > relayed) {
                        behind.push(*game);
                    }
                }
            }
        }
        Ok(behind)
    }

    async fn presence(
        &self,
        game: &GameId,
    ) -> Result<frontier_rules::ByColor<Option<i64>>, StoreError> {
        let mut conn = self.conn.clone();
        let (white, black): (Option<i64>, Option<i64>) = redis::cmd("HMGET")
            .arg(self.ns.presence_key(game))
            .arg("white")
            .arg("black")
            .query_async(&mut conn)
            .await?;
        Ok(frontier_rules::ByColor { white, black })
    }

    async fn schedule(&self, game: &GameId, deadline: Option<i64>) -> Result<(), StoreError> {
        self.deadlines.schedule(game, deadline).await?;
        self.nudge_if_soon(deadline).await;
        Ok(())
    }

    async fn rematch(&self, game: &GameId) -> Result<Option<RematchOffer>, StoreError> {
        let mut conn = self.conn.clone();
        let fields: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(self.rematch_key(game))
            .arg("by")
            .arg("state")
            .arg("new")
            .query_async(&mut conn)
            .await?;
        offer_of(fields.iter().any(Option::is_some).then_some(fields))
    }

    async fn offer_rematch(
        &self,
        game: &GameId,
        offer: RematchOffer,
        players: [&str; 2],
        ttl: Duration,
    ) -> Result<Option<RematchOffer>, StoreError> {
        let mut conn = self.conn.clone();
        let ttl_ms = ttl.as_millis().max(1) as u64;
        // The index first: an index entry whose offer was never stored is harmless (a lapse
        // finds nothing there), an offer missing from the index would only end by its TTL.
        // Each player's set is its own key (its own slot on a cluster).
        for player in players {
            let key = self.rematch_games_key(player);
            let _: () = redis::pipe()
                .atomic()
                .cmd("SADD")
                .arg(&key)
                .arg(game.to_string())
                .ignore()
                .cmd("PEXPIRE")
                .arg(&key)
                .arg(ttl_ms)
                .ignore()
                .query_async(&mut conn)
                .await?;
        }
        let existing: Option<Vec<Option<String>>> = self.rematch_scripts[0]
            .key(self.rematch_key(game))
            .arg(offer.by.name())
            .arg(offer.new_game.to_string())
            .arg(ttl_ms)
            .invoke_async(&mut conn)
            .await?;
        offer_of(existing)
    }

    async fn accept_rematch(
        &self,
        game: &GameId,
        by: frontier_rules::Color,
    ) -> Result<Option<RematchOffer>, StoreError> {
        let mut conn = self.conn.clone();
        let offer: Option<Vec<Option<String>>> = self.rematch_scripts[1]
            .key(self.rematch_key(game))
            .arg(by.name())
            .invoke_async(&mut conn)
            .await?;
        offer_of(offer)
    }

    async fn drop_rematch(&self, game: &GameId) -> Result<Option<RematchOffer>, StoreError> {
        let mut conn = self.conn.clone();
        let offer: Option<Vec<Option<String>>> = self.rematch_scripts[2]
            .key(self.rematch_key(game))
            .invoke_async(&mut conn)
            .await?;
        offer_of(offer)
    }

    async fn rematch_games(&self, player: &str) -> Result<Vec<GameId>, StoreError> {
        let mut conn = self.conn.clone();
        let ids: Vec<String> = redis::cmd("SMEMBERS")
            .arg(self.rematch_games_key(player))
            .query_async(&mut conn)
            .await?;
        Ok(ids.into_iter().filter_map(|s| s.parse().ok()).collect())
    }
}

#[derive(Default)]
struct MemoryGame {
    version: u64,
    state: Bytes,
    log: Vec<Bytes>,
    moves: Vec<Bytes>,
}

#[derive(Default)]
struct MemoryInner {
    games: HashMap<GameId, MemoryGame>,
    codes: HashMap<String, GameId>,
    outbox: Vec<GameId>,
    bot_outbox: Vec<OutboxJob>,
    presence: HashMap<(GameId, frontier_rules::Color), i64>,
    rematches: HashMap<GameId, RematchOffer>,
    rematch_games: HashMap<String, Vec<GameId>>,
}

/// Games in memory, with the same compare-and-set semantics (expiry is not modelled).
#[derive(Clone, Default)]
pub struct MemoryStore {
    inner: Arc<Mutex<MemoryInner>>,
    deadlines: MemoryDeadlines,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// An empty store whose deadlines go to `deadlines` (shared with a clock in the same
    /// process).
    pub fn with_deadlines(deadlines: MemoryDeadlines) -> MemoryStore {
        MemoryStore {
            inner: Arc::default(),
            deadlines,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryInner> {
        // A panic while holding the lock cannot leave the maps half-updated (every update
        // below is a single insert or push), so a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl GameStore for MemoryStore {
    async fn load(&self, game: &GameId) -> Result<Option<Stored>, StoreError> {
        Ok(self.lock().games.get(game).map(|g| Stored {
            version: g.version,
            state: g.state.clone(),
            moves: g.moves.clone(),
        }))
    }

    async fn compare_and_set(&self, write: Write) -> Result<bool, StoreError> {
        let schedules = !write.leaves_deadline_alone();
        let mut inner = self.lock();
        let entry = inner.games.entry(write.game).or_default();
        if entry.version != write.expected {
            return Ok(false);
        }
        entry.version = write.version;
        entry.state = write.state;
        entry.log.extend(write.entries);
        if let Some(len) = write.moves.trim_to {
            entry.moves.truncate(len as usize);
        }
        entry.moves.extend(write.moves.append);
        if write.outbox && !inner.outbox.contains(&write.game) {
            inner.outbox.push(write.game);
        }
        if let Some(job) = write.bot_job {
            inner.bot_outbox.retain(|j| j.id != job.id);
            inner.bot_outbox.push(job);
        }
        if schedules {
            self.deadlines.schedule(&write.game, write.deadline);
        }
        Ok(true)
    }

    async fn replicated(&self, _game: &GameId) -> Result<(), StoreError> {
        Ok(())
    }

    async fn log_after(
        &self,
        game: &GameId,
        after: u64,
        max: usize,
    ) -> Result<Vec<Bytes>, StoreError> {
        Ok(self
            .lock()
            .games
            .get(game)
            .map(|g| {
                g.log
                    .iter()
                    .skip(after as usize)
                    .take(max)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn reserve_code(
        &self,
        code: &str,
        game: &GameId,
        _ttl: Duration,
    ) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        if inner.codes.contains_key(code) {
            return Ok(false);
        }
        inner.codes.insert(code.to_owned(), *game);
        Ok(true)
    }

    async fn resolve_code(&self, code: &str) -> Result<Option<GameId>, StoreError> {
        Ok(self.lock().codes.get(code).copied())
    }

    async fn outbox(&self) -> Result<Vec<GameId>, StoreError> {
        Ok(self.lock().outbox.clone())
    }

    async fn outbox_done(&self, game: &GameId) -> Result<(), StoreError> {
        self.lock().outbox.retain(|g| g != game);
        Ok(())
    }

    async fn bot_outbox(&self) -> Result<Vec<OutboxJob>, StoreError> {
        Ok(self.lock().bot_outbox.clone())
    }

    async fn bot_outbox_done(&self, id: &str) -> Result<(), StoreError> {
        self.lock().bot_outbox.retain(|j| j.id != id);
        Ok(())
    }

    async fn touch_presence(
        &self,
        game: &GameId,
        color: frontier_rules::Color,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.lock().presence.insert((*game, color), now_ms);
        Ok(())
    }

    async fn tick(
        &self,
        present: &[(GameId, frontier_rules::Color)],
        quiet: &[(GameId, u64)],
        now_ms: i64,
    ) -> Result<Vec<GameId>, StoreError> {
        for (game, color) in present {
            self.touch_presence(game, *color, now_ms).await?;
        }
        let mut behind = Vec::new();
        for (game, relayed) in quiet {
            if self.load(game).await?.is_none_or(|s| s.version > *relayed) {
                behind.push(*game);
            }
        }
        Ok(behind)
    }

    async fn presence(
        &self,
        game: &GameId,
    ) -> Result<frontier_rules::ByColor<Option<i64>>, StoreError> {
        let inner = self.lock();
        Ok(frontier_rules::ByColor::new_with(|c| {
            inner.presence.get(&(*game, c)).copied()
        }))
    }

    async fn schedule(&self, game: &GameId, deadline: Option<i64>) -> Result<(), StoreError> {
        self.deadlines.schedule(game, deadline);
        Ok(())
    }

    async fn rematch(&self, game: &GameId) -> Result<Option<RematchOffer>, StoreError> {
        Ok(self.lock().rematches.get(game).copied())
    }

    async fn offer_rematch(
        &self,
        game: &GameId,
        offer: RematchOffer,
        players: [&str; 2],
        _ttl: Duration,
    ) -> Result<Option<RematchOffer>, StoreError> {
        let mut inner = self.lock();
        if let Some(existing) = inner.rematches.get(game) {
            return Ok(Some(*existing));
        }
        inner.rematches.insert(*game, offer);
        for player in players {
            let games = inner.rematch_games.entry(player.to_owned()).or_default();
            if !games.contains(game) {
                games.push(*game);
            }
        }
        Ok(None)
    }

    async fn accept_rematch(
        &self,
        game: &GameId,
        by: frontier_rules::Color,
    ) -> Result<Option<RematchOffer>, StoreError> {
        let mut inner = self.lock();
        Ok(match inner.rematches.get_mut(game) {
            Some(offer) if offer.accepted => Some(*offer),
            Some(offer) if offer.by == by => {
                offer.accepted = true;
                Some(*offer)
            }
            _ => None,
        })
    }

    async fn drop_rematch(&self, game: &GameId) -> Result<Option<RematchOffer>, StoreError> {
        let mut inner = self.lock();
        match inner.rematches.get(game) {
            Some(offer) if !offer.accepted => Ok(inner.rematches.remove(game)),
            _ => Ok(None),
        }
    }

    async fn rematch_games(&self, player: &str) -> Result<Vec<GameId>, StoreError> {
        Ok(self
            .lock()
            .rematch_games
            .get(player)
            .cloned()
            .unwrap_or_default())
    }
}

impl MemoryStore {
    /// The scheduled deadline of a game (tests).
    pub fn deadline(&self, game: &GameId) -> Option<i64> {
        self.deadlines.scheduled(game)
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_presence_records_expiry_is_renewed_in_one_minute_of_every_sixteen() {
        for _ in 0..20 {
            let game = GameId::new();
            let t0 = 1_800_000_000_000_i64;
            let due: Vec<i64> = (0..PRESENCE_RENEW_MINUTES * 2)
                .filter(|m| presence_renewal_due(&game, t0 + m * 60_000))
                .collect();
            assert_eq!(due.len(), 2, "once in each 16 minutes: {due:?}");
            assert_eq!(due[1] - due[0], PRESENCE_RENEW_MINUTES);
        }
    }

    use super::{PRESENCE_RENEW_MINUTES, presence_renewal_due, replicas_per_master_in};
    use frontier_platform::GameId;

    #[test]
    fn replicas_are_counted_per_master_from_cluster_nodes() {
        let nodes = "\
a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460
a2 127.0.0.1:7001@17001 master - 0 0 2 connected 5461-10922
a3 127.0.0.1:7002@17002 master - 0 0 3 connected 10923-16383
b1 127.0.0.1:7003@17003 slave a1 0 0 1 connected
b2 127.0.0.1:7004@17004 slave a2 0 0 2 connected
b3 127.0.0.1:7005@17005 slave a3 0 0 3 connected
c3 127.0.0.1:7006@17006 slave a3 0 0 3 connected
";
        assert_eq!(
            replicas_per_master_in(nodes),
            1,
            "the fewest any master has"
        );
        let failed = nodes.replace("slave a2", "slave,fail a2");
        assert_eq!(
            replicas_per_master_in(&failed),
            0,
            "a failed replica does not count"
        );
        // A master without slots (an empty node) is not counted.
        let spare = format!("{nodes}d1 127.0.0.1:7007@17007 master - 0 0 4 connected\n");
        assert_eq!(replicas_per_master_in(&spare), 1);
        assert_eq!(replicas_per_master_in(""), 0);
    }
}
