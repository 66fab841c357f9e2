//! Abuse limits: how many guests, registrations, logins, connections and boards one client
//! address or one player may have, kept in Redis so that every gateway shares one budget.
//!
//! Each check is one Lua script (one round trip, atomic), timed by Redis's own clock so
//! gateways with skewed clocks agree. Windows are sliding logs (a sorted set of the
//! admitted requests' times): at most `count` in any `window`, and a refusal says exactly
//! when the oldest one leaves the window. Concurrent connections are leases (a sorted set
//! of connection ids scored by lease expiry, refreshed while the connection lives), so a
//! crashed gateway's connections stop counting within one lease. A gateway refreshes the
//! leases of all its connections together ([`Limits::keep_leases`]): one pipeline per
//! interval (one per hash slot on a cluster), not a script per connection.
//!
//! In front of Redis, each gateway remembers the windows Redis reported full and until when
//! ([`LocalRefusals`]): until then it refuses on its own, with no round trip. This never
//! refuses what Redis would admit — a full sliding window only empties with time — so a
//! flood from one address costs one Redis call per window slot, not one per request.
//!
//! If Redis does not answer (error, or not within [`REDIS_TIMEOUT`]) a check lets the
//! request through, logs, and counts `frontier_gateway_limit_errors_total`: the limits
//! protect the platform, they must not take it down with Redis.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use frontier_platform::Namespace;
use frontier_platform::RedisConn;
use frontier_platform::config::parse_duration;

/// How long a limit check waits for Redis before letting the request through.
pub const REDIS_TIMEOUT: Duration = Duration::from_millis(500);

/// `count` requests per sliding `window` (written `30/10m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Requests admitted per window (at least 1).
    pub count: u32,
    /// The window.
    pub window: Duration,
}

impl FromStr for Rate {
    type Err = String;

    fn from_str(s: &str) -> Result<Rate, String> {
        let (count, window) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}` is not a rate like 30/10m"))?;
        let count: u32 = count
            .trim()
            .parse()
            .map_err(|_| format!("`{s}`: the count is a whole number"))?;
        let window = parse_duration(window)?;
        if count == 0 || window.is_zero() {
            return Err(format!("`{s}`: count and window must be positive"));
        }
        Ok(Rate { count, window })
    }
}

/// An address range in CIDR notation (`10.0.0.0/8`, `::1/128`; a bare address is a
/// single-address range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    bits: u8,
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Cidr, String> {
        let s = s.trim();
        let (addr, bits) = match s.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (s, None),
        };
        let network: IpAddr = addr
            .parse()
            .map_err(|_| format!("`{s}` is not an address range like 10.0.0.0/8"))?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            Some(b) => b
                .parse::<u8>()
                .ok()
                .filter(|b| *b <= max)
                .ok_or_else(|| format!("`{s}`: the prefix length is 0 to {max}"))?,
            None => max,
        };
        Ok(Cidr { network, bits })
    }
}

impl Cidr {
    /// Whether `ip` is in the range (an IPv4-mapped IPv6 address counts as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, canonical(ip)) {
            (IpAddr::V4(n), IpAddr::V4(a)) => prefix_eq(
                u128::from(n.to_bits()),
                u128::from(a.to_bits()),
                self.bits,
                32,
            ),
            (IpAddr::V6(n), IpAddr::V6(a)) => prefix_eq(n.to_bits(), a.to_bits(), self.bits, 128),
            _ => false,
        }
    }
}

fn prefix_eq(a: u128, b: u128, bits: u8, width: u32) -> bool {
    let shift = width - u32::from(bits);
    shift >= width || (a >> shift) == (b >> shift)
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The client's address: the TCP peer, or — only when the peer is a trusted proxy — the
/// nearest untrusted address its forwarding header names. `Forwarded` (RFC 7239) is read
/// if present, else `X-Forwarded-For`; the list is walked from the right (the entries the
/// trusted proxies appended) past trusted addresses, so a client cannot choose its
/// address by sending a forged header through the proxy. A malformed entry stops the walk
/// at the last trusted hop's peer.
pub fn client_ip(peer: SocketAddr, headers: &HeaderMap, trusted: &[Cidr]) -> IpAddr {
    let peer = canonical(peer.ip());
    let is_trusted = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let hops: Vec<Option<IpAddr>> = if let Some(v) = header_text(headers, "forwarded") {
        v.split(',')
            .map(|element| {
                element
                    .split(';')
                    .filter_map(|pair| pair.split_once('='))
                    .find(|(k, _)| k.trim().eq_ignore_ascii_case("for"))
                    .and_then(|(_, v)| parse_forwarded_for(v))
            })
            .collect()
    } else if let Some(v) = header_text(headers, "x-forwarded-for") {
        v.split(',').map(parse_forwarded_for).collect()
    } else {
        return peer;
    };
    let mut client = peer;
    for hop in hops.into_iter().rev() {
        match hop {
            Some(ip) => {
                client = canonical(ip);
                if !is_trusted(client) {
                    break;
                }
            }
            None => break,
        }
    }
    client
}

/// All values of a header joined with `,` (a header may be sent several times).
fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    let values: Vec<&str> = headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

/// `203.0.113.7`, `"[2001:db8::1]:4711"`, `198.51.100.2:80`.
fn parse_forwarded_for(v: &str) -> Option<IpAddr> {
    let v = v.trim().trim_matches('"');
    if let Ok(ip) = v.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = v.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    v.parse::<SocketAddr>().ok().map(|s| s.ip())
}

/// The key a client address is limited under: an IPv4 address, or the /64 of an IPv6
/// address (one subscriber usually holds a whole /64).
pub fn address_subject(ip: IpAddr) -> String {
    match address_net(ip) {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(net) => format!("{net}/64"),
    }
}

/// The address the per-address limits count: an IPv4 address as it is, an IPv6 address's
/// /64 (one subscriber's usual allocation).
pub fn address_net(ip: IpAddr) -> IpAddr {
    match canonical(ip) {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & !((1u128 << 64) - 1))),
    }
}

/// [`address_subject`] read back (`None` for a subject that is not an address).
fn subject_net(subject: &str) -> Option<IpAddr> {
    subject.strip_suffix("/64").unwrap_or(subject).parse().ok()
}

/// How passwords are hashed on this gateway: its own threads and rates, not shared through
/// Redis (so `frontier dev` offers these and none of [`LimitArgs`]'s shared limits).
#[derive(Debug, Clone, clap::Args)]
pub struct HashArgs {
    /// Threads hashing passwords (Argon2id).
    #[arg(long, env = "FRONTIER_HASH_THREADS", default_value_t = 1)]
    pub hash_threads: usize,
    /// Hashes that may wait for a thread; beyond that, logins and registrations are
    /// refused at once (503).
    #[arg(long, env = "FRONTIER_HASH_QUEUE", default_value_t = 4)]
    pub hash_queue: usize,
    /// Password hashes started per second on this gateway, on average (bursts of threads +
    /// queue); beyond that, refused at once (503).
    #[arg(long, env = "FRONTIER_HASH_RATE", default_value_t = 5.0)]
    pub hash_rate: f64,
    /// Scheduling priority (`nice`, 0–19) of the hashing threads: above 0 they yield the
    /// CPU to the threads relaying moves when it is short.
    #[arg(long, env = "FRONTIER_HASH_NICE", default_value_t = 10)]
    pub hash_nice: i32,
}

/// The abuse limits' configuration (flattened into the gateway's). Every limit but the
/// hashing is kept in Redis, shared by all gateways.
#[derive(Debug, Clone, clap::Args)]
pub struct LimitArgs {
    /// Proxies (CIDRs, comma-separated) whose `Forwarded` / `X-Forwarded-For` header names
    /// the client. From any other peer those headers are ignored.
    #[arg(long, env = "FRONTIER_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<Cidr>,
    /// Guests created per client address.
    #[arg(long, env = "FRONTIER_GUEST_LIMIT", default_value = "30/10m")]
    pub guest_limit: Rate,
    /// Registrations per client address.
    #[arg(long, env = "FRONTIER_REGISTER_LIMIT", default_value = "10/1h")]
    pub register_limit: Rate,
    /// Login attempts per client address.
    #[arg(long, env = "FRONTIER_LOGIN_LIMIT", default_value = "20/1m")]
    pub login_limit: Rate,
    /// Failed logins against one username before each further attempt must wait.
    #[arg(long, env = "FRONTIER_LOGIN_FREE_FAILURES", default_value_t = 5)]
    pub login_free_failures: u32,
    /// The wait after the first failure beyond the free ones; it doubles with each further
    /// failure.
    #[arg(long, env = "FRONTIER_LOGIN_FAILURE_DELAY", default_value = "1s", value_parser = parse_duration)]
    pub login_failure_delay: Duration,
    /// The longest wait between attempts against one username.
    #[arg(long, env = "FRONTIER_LOGIN_FAILURE_MAX_DELAY", default_value = "30s", value_parser = parse_duration)]
    pub login_failure_max_delay: Duration,
    /// A username's failures are forgotten this long after the last one (or at a
    /// successful login).
    #[arg(long, env = "FRONTIER_LOGIN_FAILURE_RESET", default_value = "15m", value_parser = parse_duration)]
    pub login_failure_reset: Duration,
    /// Open WebSocket connections per client address, across all gateways.
    #[arg(long, env = "FRONTIER_WS_PER_ADDRESS", default_value_t = 64)]
    pub ws_per_address: u32,
    /// Open (authenticated) WebSocket connections per player, across all gateways.
    #[arg(long, env = "FRONTIER_WS_PER_PLAYER", default_value_t = 8)]
    pub ws_per_player: u32,
    /// Lease of a connection's slot: refreshed every third of it while the connection
    /// lives, so the slots of a crashed gateway free themselves within one lease.
    #[arg(long, env = "FRONTIER_WS_LEASE", default_value = "30s", value_parser = parse_duration)]
    pub ws_lease: Duration,
    /// Boards a player may create.
    #[arg(long, env = "FRONTIER_BOARD_LIMIT", default_value = "30/1m")]
    pub board_limit: Rate,
    /// Boards of one player waiting for an opponent at once; one more is refused
    /// (`too_many_boards`).
    #[arg(long, env = "FRONTIER_WAITING_BOARDS", default_value_t = 5)]
    pub waiting_boards: u32,
    /// A waiting board stops counting after this long even if nobody saw it start
    /// (a safety net; boards are checked with game-session before a refusal).
    #[arg(long, env = "FRONTIER_WAITING_BOARD_TTL", default_value = "24h", value_parser = parse_duration)]
    pub waiting_board_ttl: Duration,
    /// Password hashing (the one part of these that `frontier dev` offers too).
    #[command(flatten)]
    pub hashing: HashArgs,
    /// Guests without a finished game are removed this long after their creation.
    #[arg(long, env = "FRONTIER_GUEST_TTL", default_value = "7d", value_parser = parse_duration)]
    pub guest_ttl: Duration,
    /// How often the guest clean-up runs.
    #[arg(long, env = "FRONTIER_GUEST_SWEEP_INTERVAL", default_value = "1h", value_parser = parse_duration)]
    pub guest_sweep_interval: Duration,
    /// Guests removed per statement.
    #[arg(long, env = "FRONTIER_GUEST_SWEEP_BATCH", default_value_t = 500)]
    pub guest_sweep_batch: i64,
}

/// A limit that refused a request, and when to retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The reason, as in the refusal metric (`login_rate`, `ws_player`, …).
    pub reason: &'static str,
    /// When the request could succeed (`None`: when something else happens, e.g. a
    /// connection closes or a board starts).
    pub retry_after: Option<Duration>,
}

impl Refused {
    /// A refusal, counted in `frontier_gateway_refusals_total{reason}`.
    pub fn new(reason: &'static str, retry_after: Option<Duration>) -> Refused {
        count_refusal(reason);
        Refused {
            reason,
            retry_after,
        }
    }

    /// `retry_after` in whole milliseconds (at least 1).
    pub fn retry_after_ms(&self) -> Option<u64> {
        self.retry_after
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1))
    }
}

/// Counts a refusal by reason.
pub fn count_refusal(reason: &'static str) {
    metrics::counter!("frontier_gateway_refusals_total", "reason" => reason).increment(1);
}

/// The windowed limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// `POST /api/guest` per address.
    Guest,
    /// `POST /api/register` per address.
    Register,
    /// `POST /api/login` per address.
    Login,
    /// `create_board` per player.
    Boards,
}

impl Window {
    fn name(self) -> &'static str {
        match self {
            Window::Guest => "guest",
            Window::Register => "register",
            Window::Login => "login",
            Window::Boards => "boards",
        }
    }

    fn reason(self) -> &'static str {
        match self {
            Window::Guest => "guest_rate",
            Window::Register => "register_rate",
            Window::Login => "login_rate",
            Window::Boards => "board_rate",
        }
    }
}

/// What kind of subject a connection slot is counted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// A client address.
    Address,
    /// A player.
    Player,
}

/// The outcome of reserving a waiting-board slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reservation {
    /// Reserved (or limits are off).
    Reserved,
    /// At the cap: the members counted (game ids, or `r:`-prefixed reservations).
    Full(Vec<String>),
}

const NOW: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
";

/// KEYS[1] the log; ARGV count, window ms, member. 0 if admitted, else ms to wait.
const WINDOW_SCRIPT: &str = r"
local count = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n >= count then
  local oldest = redis.call('ZRANGE', KEYS[1], n - count, n - count, 'WITHSCORES')
  local wait = tonumber(oldest[2]) + window - now
  if wait < 1 then wait = 1 end
  return wait
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
return 0
";

/// KEYS[1] the username's failures; ARGV free, base ms, max ms. 0 to go ahead, else ms
/// to wait. Past the free failures an attempt takes the one slot until its answer.
const LOGIN_ATTEMPT_SCRIPT: &str = r"
local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
local not_before = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
if now < not_before then return not_before - now end
local free = tonumber(ARGV[1])
if n >= free then
  local d = math.min(tonumber(ARGV[2]) * 2 ^ (n - free), tonumber(ARGV[3]))
  redis.call('HSET', KEYS[1], 'until', math.floor(now + d))
end
return 0
";

/// KEYS[1] the username's failures; ARGV free, base ms, max ms, reset ms.
const LOGIN_FAILED_SCRIPT: &str = r"
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
local free = tonumber(ARGV[1])
if n > free then
  local d = math.min(tonumber(ARGV[2]) * 2 ^ (n - free - 1), tonumber(ARGV[3]))
  redis.call('HSET', KEYS[1], 'until', math.floor(now + d))
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return n
";

/// KEYS[1] the slots; ARGV max, member, lease ms. 1 if acquired.
const ACQUIRE_SCRIPT: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
";

/// KEYS[1] the player's waiting boards; ARGV cap, member, ttl ms, member to drop ('' none).
/// {'ok'} if added, else {'full', members…}.
const WAITING_ADD_SCRIPT: &str = r"
if ARGV[4] ~= '' then redis.call('ZREM', KEYS[1], ARGV[4]) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if tonumber(ARGV[1]) > 0 and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  local out = redis.call('ZRANGE', KEYS[1], 0, -1)
  table.insert(out, 1, 'full')
  return out
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return {'ok'}
";

struct Scripts {
    window: redis::Script,
    login_attempt: redis::Script,
    login_failed: redis::Script,
    acquire: redis::Script,
    waiting_add: redis::Script,
}

fn script(body: &str) -> redis::Script {
    redis::Script::new(&format!("{NOW}{body}"))
}

/// The per-process pre-filter: windows Redis reported full, and until when; and the client
/// addresses (an IPv6 client's /64) one of whose per-address windows — guests,
/// registrations, logins — is full, refused at accept ([`Limits::refused_at_accept`]).
#[derive(Default)]
pub struct LocalRefusals {
    until: Mutex<HashMap<String, Instant>>,
    addresses: Mutex<HashMap<IpAddr, Instant>>,
}

/// Entries kept before expired ones are swept out.
const LOCAL_SWEEP_AT: usize = 10_000;

impl LocalRefusals {
    /// How long `key` is still known to be full at `now`, if it is.
    pub fn blocked(&self, key: &str, now: Instant) -> Option<Duration> {
        let map = self.until.lock().unwrap_or_else(|p| p.into_inner());
        map.get(key)
            .and_then(|until| until.checked_duration_since(now))
            .filter(|d| !d.is_zero())
    }

    /// A per-address window of `address` (as [`address_net`] keys it) is full until
    /// `until`.
    pub fn block_address(&self, address: IpAddr, until: Instant) {
        let mut map = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= LOCAL_SWEEP_AT {
            let now = Instant::now();
            map.retain(|_, u| *u > now);
        }
        let entry = map.entry(address).or_insert(until);
        *entry = (*entry).max(until);
    }

    /// Whether a per-address window of `address` is known full at `now`.
    pub fn address_blocked(&self, address: IpAddr, now: Instant) -> bool {
        let map = self.addresses.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&address).is_some_and(|until| *until > now)
    }

    /// Redis reported `key` full until `until`.
    pub fn block(&self, key: String, until: Instant) {
        let mut map = self.until.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= LOCAL_SWEEP_AT {
            let now = Instant::now();
            map.retain(|_, u| *u > now);
        }
        map.insert(key, until);
    }
}

/// The limits, on Redis; [`Limits::disabled`] lets everything through (in-memory mode).
#[derive(Clone)]
pub struct Limits {
    redis: Option<RedisConn>,
    ns: Namespace,
    scripts: Arc<Scripts>,
    local: Arc<LocalRefusals>,
    /// Without Redis (one process): each player's open connections, counted here so that
    /// [`Limits::player_connections`] can still tell when a player's last one closed.
    local_players: Arc<Mutex<HashMap<String, usize>>>,
    /// The slots this gateway's open connections hold (slot set key → connection ids),
    /// whose leases [`Limits::keep_leases`] refreshes together.
    /// Shared strings: a refresh takes its snapshot under the lock by counting references,
    /// and writes its commands after it.
    held: Arc<Mutex<Held>>,
    /// The configuration.
    pub args: LimitArgs,
}

/// The connection slots a gateway holds: slot set key → connection ids.
type Held = HashMap<Arc<str>, HashSet<Arc<str>>>;

/// Slot sets refreshed per pipelined call (a call holds Redis for about a millisecond).
const LEASE_PIPELINE: usize = 500;

/// How long a waiting-board reservation holds while the board is being created.
const RESERVATION_TTL: Duration = Duration::from_secs(30);

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl Limits {
    /// Limits kept in Redis under `ns`.
    pub fn new(redis: Option<RedisConn>, ns: Namespace, args: LimitArgs) -> Limits {
        Limits {
            redis,
            ns,
            scripts: Arc::new(Scripts {
                window: script(WINDOW_SCRIPT),
                login_attempt: script(LOGIN_ATTEMPT_SCRIPT),
                login_failed: script(LOGIN_FAILED_SCRIPT),
                acquire: script(ACQUIRE_SCRIPT),
                waiting_add: script(WAITING_ADD_SCRIPT),
            }),
            local: Arc::default(),
            local_players: Arc::default(),
            held: Arc::default(),
            args,
        }
    }

    /// No limits (no Redis): every check passes. Password hashing stays bounded.
    pub fn disabled(ns: Namespace, args: LimitArgs) -> Limits {
        Limits::new(None, ns, args)
    }

    async fn invoke<T: redis::FromRedisValue>(
        &self,
        what: &'static str,
        call: redis::ScriptInvocation<'_>,
    ) -> Option<T> {
        let mut conn = self.redis.clone()?;
        match tokio::time::timeout(REDIS_TIMEOUT, call.invoke_async::<T>(&mut conn)).await {
            Ok(Ok(v)) => Some(v),
            Ok(Err(e)) => {
                limit_error(what, &e.to_string());
                None
            }
            Err(_) => {
                limit_error(what, "timed out");
                None
            }
        }
    }

    fn window_rate(&self, window: Window) -> Rate {
        match window {
            Window::Guest => self.args.guest_limit,
            Window::Register => self.args.register_limit,
            Window::Login => self.args.login_limit,
            Window::Boards => self.args.board_limit,
        }
    }

    /// Whether a new connection from `peer` is refused before anything is read from it:
    /// one of the address's per-address windows (guests, registrations, logins) is known
    /// full on this gateway. Never for a trusted proxy (its clients are told apart only
    /// by their forwarding headers), nor without Redis (limits off).
    pub fn refused_at_accept(&self, peer: IpAddr) -> bool {
        if self.redis.is_none() || self.args.trusted_proxies.iter().any(|c| c.contains(peer)) {
            return false;
        }
        self.local
            .address_blocked(address_net(peer), Instant::now())
    }

    /// Counts one request of `subject` against `window`; refused once the window is full.
    pub async fn check(&self, window: Window, subject: &str) -> Result<(), Refused> {
        let rate = self.window_rate(window);
        let key = self.ns.rate_limit_key(window.name(), subject);
        if let Some(wait) = self.local.blocked(&key, Instant::now()) {
            return Err(Refused::new(window.reason(), Some(wait)));
        }
        let member = uuid::Uuid::new_v4().to_string();
        let mut call = self.scripts.window.key(&key);
        call.arg(rate.count).arg(ms(rate.window)).arg(member);
        match self.invoke::<u64>(window.name(), call).await {
            Some(wait) if wait > 0 => {
                let wait = Duration::from_millis(wait);
                let until = Instant::now() + wait;
                self.local.block(key, until);
                if window != Window::Boards
                    && let Some(net) = subject_net(subject)
                {
                    self.local.block_address(net, until);
                }
                Err(Refused::new(window.reason(), Some(wait)))
            }
            _ => Ok(()),
        }
    }

    /// Before checking a password for `username`: refused while the username's failures
    /// ask for a wait.
    pub async fn login_attempt(&self, username: &str) -> Result<(), Refused> {
        let key = self.ns.login_failures_key(&username.to_ascii_lowercase());
        let mut call = self.scripts.login_attempt.key(key);
        call.arg(self.args.login_free_failures)
            .arg(ms(self.args.login_failure_delay))
            .arg(ms(self.args.login_failure_max_delay));
        match self.invoke::<u64>("login_attempt", call).await {
            Some(wait) if wait > 0 => Err(Refused::new(
                "login_failures",
                Some(Duration::from_millis(wait)),
            )),
            _ => Ok(()),
        }
    }

    /// A wrong password for `username`: the next attempt waits (past the free failures).
    pub async fn login_failed(&self, username: &str) {
        let key = self.ns.login_failures_key(&username.to_ascii_lowercase());
        let mut call = self.scripts.login_failed.key(key);
        call.arg(self.args.login_free_failures)
            .arg(ms(self.args.login_failure_delay))
            .arg(ms(self.args.login_failure_max_delay))
            .arg(ms(self.args.login_failure_reset));
        let _ = self.invoke::<u64>("login_failed", call).await;
    }

    /// A successful login for `username`: its failures are forgotten.
    pub async fn login_succeeded(&self, username: &str) {
        let Some(mut conn) = self.redis.clone() else {
            return;
        };
        let key = self.ns.login_failures_key(&username.to_ascii_lowercase());
        let del = redis::cmd("DEL").arg(key).to_owned();
        match tokio::time::timeout(REDIS_TIMEOUT, del.query_async::<i64>(&mut conn)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => limit_error("login_succeeded", &e.to_string()),
            Err(_) => limit_error("login_succeeded", "timed out"),
        }
    }

    fn slot_key(&self, slot: Slot, subject: &str) -> String {
        match slot {
            Slot::Address => self.ns.connections_key("addr", subject),
            Slot::Player => self.ns.connections_key("player", subject),
        }
    }

    /// Takes a connection slot of `subject` for connection `id`; refused at the cap.
    pub async fn acquire(&self, slot: Slot, subject: &str, id: &str) -> Result<(), Refused> {
        if self.redis.is_none() {
            if slot == Slot::Player {
                let mut players = self.local_players.lock().unwrap_or_else(|p| p.into_inner());
                *players.entry(subject.to_owned()).or_default() += 1;
            }
            return Ok(());
        }
        let (max, reason) = match slot {
            Slot::Address => (self.args.ws_per_address, "ws_address"),
            Slot::Player => (self.args.ws_per_player, "ws_player"),
        };
        let key = self.slot_key(slot, subject);
        let mut call = self.scripts.acquire.key(&key);
        call.arg(max).arg(id).arg(ms(self.args.ws_lease));
        match self.invoke::<i64>(reason, call).await {
            // A slot frees when another connection closes: no time can be promised; a
            // second is a fair pause before trying again.
            Some(0) => Err(Refused::new(reason, Some(Duration::from_secs(1)))),
            _ => {
                self.lock_held()
                    .entry(Arc::from(key))
                    .or_default()
                    .insert(Arc::from(id));
                Ok(())
            }
        }
    }

    fn lock_held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many leases this gateway holds (connection slots of its open connections).
    pub fn held_leases(&self) -> usize {
        self.lock_held().values().map(HashSet::len).sum()
    }

    /// Refreshes the leases of every slot this gateway's connections hold, every third of
    /// the lease, until `shutdown`. A gateway that dies stops refreshing: its connections'
    /// slots free themselves within one lease, as before.
    pub async fn keep_leases(self, shutdown: frontier_platform::Shutdown) {
        if self.redis.is_none() {
            return;
        }
        let mut tick =
            tokio::time::interval((self.args.ws_lease / 3).max(Duration::from_millis(100)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = shutdown.wait() => return,
                _ = tick.tick() => {}
            }
            self.refresh_held().await;
        }
    }

    /// One refresh of every held lease: Redis's time once, then for each slot set one
    /// `ZADD XX` of all its members (XX: a connection released meanwhile is not put back)
    /// and its expiry, pipelined ([`LEASE_PIPELINE`] sets a call; on a cluster, one hash
    /// slot's sets a call). The lock is held only for a snapshot of shared strings (the
    /// commands are written after it: connections opening and closing wait on it, on the
    /// runtime's threads).
    pub async fn refresh_held(&self) {
        let Some(conn) = self.redis.clone() else {
            return;
        };
        let held: Vec<(Arc<str>, Vec<Arc<str>>)> = self
            .lock_held()
            .iter()
            .map(|(key, ids)| (key.clone(), ids.iter().cloned().collect()))
            .collect();
        if held.is_empty() {
            return;
        }
        let mut time_conn = conn.clone();
        let now_ms = match tokio::time::timeout(
            REDIS_TIMEOUT,
            redis::cmd("TIME").query_async::<(u64, u64)>(&mut time_conn),
        )
        .await
        {
            Ok(Ok((secs, micros))) => secs * 1000 + micros / 1000,
            Ok(Err(e)) => return limit_error("ws_refresh", &e.to_string()),
            Err(_) => return limit_error("ws_refresh", "timed out"),
        };
        let lease = ms(self.args.ws_lease);
        let until = now_ms + lease;
        let pipes = {
            // One pipeline in the making per hash slot (one for a single node), and the
            // finished ones.
            let mut open: HashMap<u16, (redis::Pipeline, usize)> = HashMap::new();
            let mut pipes = Vec::new();
            for (key, ids) in &held {
                let slot = if conn.is_cluster() {
                    frontier_platform::redis_conn::key_slot(key.as_bytes())
                } else {
                    0
                };
                let (pipe, sets) = open.entry(slot).or_insert_with(|| (redis::pipe(), 0));
                // Each command sized up front (its buffers never grow), and no reply
                // ignored one by one (`ignore` puts every command's index in a hash set;
                // the replies, numbers, are read and dropped together).
                let mut zadd = redis::Cmd::with_capacity(
                    3 + 2 * ids.len(),
                    4 + key.len() + 2 + ids.iter().map(|id| 13 + id.len()).sum::<usize>(),
                );
                zadd.arg("ZADD").arg(&**key).arg("XX");
                for id in ids {
                    zadd.arg(until).arg(&**id);
                }
                pipe.add_command(zadd);
                let mut pexpire = redis::Cmd::with_capacity(3, 7 + key.len() + 20);
                pexpire.arg("PEXPIRE").arg(&**key).arg(lease);
                pipe.add_command(pexpire);
                *sets += 1;
                if *sets == LEASE_PIPELINE {
                    pipes.push(std::mem::replace(pipe, redis::pipe()));
                    *sets = 0;
                }
            }
            pipes.extend(
                open.into_values()
                    .filter(|(_, sets)| *sets > 0)
                    .map(|(pipe, _)| pipe),
            );
            pipes
        };
        for pipe in pipes {
            let mut c = conn.clone();
            match tokio::time::timeout(REDIS_TIMEOUT, pipe.query_async::<()>(&mut c)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => limit_error("ws_refresh", &e.to_string()),
                Err(_) => limit_error("ws_refresh", "timed out"),
            }
        }
    }

    /// Gives back connection `id`'s slots.
    pub async fn release(&self, slots: &[(Slot, String)], id: &str) {
        let Some(mut conn) = self.redis.clone() else {
            let mut players = self.local_players.lock().unwrap_or_else(|p| p.into_inner());
            for (slot, subject) in slots {
                if *slot == Slot::Player
                    && let Some(n) = players.get_mut(subject)
                {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        players.remove(subject);
                    }
                }
            }
            return;
        };
        {
            let mut held = self.lock_held();
            for (slot, subject) in slots {
                let key = self.slot_key(*slot, subject);
                if let Some(ids) = held.get_mut(key.as_str()) {
                    ids.remove(id);
                    if ids.is_empty() {
                        held.remove(key.as_str());
                    }
                }
            }
        }
        // One command per set: they lie in different Redis Cluster slots.
        for (slot, subject) in slots {
            let zrem = redis::cmd("ZREM")
                .arg(self.slot_key(*slot, subject))
                .arg(id)
                .to_owned();
            match tokio::time::timeout(REDIS_TIMEOUT, zrem.query_async::<i64>(&mut conn)).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => limit_error("ws_release", &e.to_string()),
                Err(_) => limit_error("ws_release", "timed out"),
            }
        }
    }

    /// How many connections of `player` are open anywhere (leases not yet run out; without
    /// Redis, in this process); `None` when it cannot be told (Redis failed).
    pub async fn player_connections(&self, player: &str) -> Option<u64> {
        let Some(mut conn) = self.redis.clone() else {
            let players = self.local_players.lock().unwrap_or_else(|p| p.into_inner());
            return Some(players.get(player).copied().unwrap_or(0) as u64);
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or_default();
        let count = redis::cmd("ZCOUNT")
            .arg(self.slot_key(Slot::Player, player))
            .arg(format!("({now}"))
            .arg("+inf")
            .to_owned();
        match tokio::time::timeout(REDIS_TIMEOUT, count.query_async::<u64>(&mut conn)).await {
            Ok(Ok(n)) => Some(n),
            Ok(Err(e)) => {
                limit_error("ws_count", &e.to_string());
                None
            }
            Err(_) => {
                limit_error("ws_count", "timed out");
                None
            }
        }
    }

    /// Reserves one of `player`'s waiting-board slots as `reservation` (an `r:` id),
    /// while the board is being created.
    pub async fn reserve_waiting(&self, player: &str, reservation: &str) -> Reservation {
        self.waiting_add(
            player,
            reservation,
            RESERVATION_TTL,
            "",
            self.args.waiting_boards,
        )
        .await
    }

    /// The board `game` was created under `reservation`: it counts until it starts.
    pub async fn confirm_waiting(&self, player: &str, reservation: &str, game: &str) {
        let _ = self
            .waiting_add(player, game, self.args.waiting_board_ttl, reservation, 0)
            .await;
    }

    async fn waiting_add(
        &self,
        player: &str,
        member: &str,
        ttl: Duration,
        drop: &str,
        cap: u32,
    ) -> Reservation {
        let mut call = self
            .scripts
            .waiting_add
            .key(self.ns.waiting_boards_key(player));
        call.arg(cap).arg(member).arg(ms(ttl)).arg(drop);
        match self.invoke::<Vec<String>>("waiting_boards", call).await {
            Some(mut out) if out.first().is_some_and(|s| s == "full") => {
                out.remove(0);
                Reservation::Full(out)
            }
            _ => Reservation::Reserved,
        }
    }

    /// `member` (a game or a reservation) no longer counts among `player`'s waiting boards.
    pub async fn remove_waiting(&self, player: &str, member: &str) {
        let Some(mut conn) = self.redis.clone() else {
            return;
        };
        let zrem = redis::cmd("ZREM")
            .arg(self.ns.waiting_boards_key(player))
            .arg(member)
            .to_owned();
        match tokio::time::timeout(REDIS_TIMEOUT, zrem.query_async::<i64>(&mut conn)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => limit_error("waiting_boards", &e.to_string()),
            Err(_) => limit_error("waiting_boards", "timed out"),
        }
    }
}

fn limit_error(what: &'static str, error: &str) {
    tracing::warn!(
        limit = what,
        error,
        "limit check failed; letting the request through"
    );
    metrics::counter!("frontier_gateway_limit_errors_total", "limit" => what).increment(1);
}

impl LimitArgs {
    /// Every limit at its default, with this hashing: for a gateway without Redis (the
    /// single-process mode), where the shared limits are off and not offered as flags.
    pub fn defaults_with(hashing: HashArgs) -> LimitArgs {
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            limits: LimitArgs,
        }
        let mut limits = <Defaults as clap::Parser>::parse_from(["defaults"]).limits;
        limits.hashing = hashing;
        limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn cidrs(list: &[&str]) -> Vec<Cidr> {
        list.iter().map(|c| c.parse().expect("cidr")).collect()
    }

    fn peer(ip: &str) -> SocketAddr {
        SocketAddr::new(ip.parse().expect("ip"), 4711)
    }

    #[test]
    fn rates_and_ranges_parse() {
        assert_eq!(
            "30/10m".parse::<Rate>(),
            Ok(Rate {
                count: 30,
                window: Duration::from_secs(600)
            })
        );
        assert!("0/1m".parse::<Rate>().is_err());
        assert!("5".parse::<Rate>().is_err());
        let net: Cidr = "10.0.0.0/8".parse().expect("cidr");
        assert!(net.contains("10.200.1.1".parse().expect("ip")));
        assert!(net.contains("::ffff:10.1.2.3".parse().expect("ip")));
        assert!(!net.contains("11.0.0.1".parse().expect("ip")));
        let all: Cidr = "0.0.0.0/0".parse().expect("cidr");
        assert!(all.contains("8.8.8.8".parse().expect("ip")));
        let one: Cidr = "::1".parse().expect("cidr");
        assert!(one.contains("::1".parse().expect("ip")));
        assert!(!one.contains("::2".parse().expect("ip")));
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
    }

    #[test]
    fn forwarding_headers_count_only_from_trusted_proxies() {
        let trusted = cidrs(&["127.0.0.1/32", "10.0.0.0/8"]);
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            HeaderValue::from_static("1.1.1.1, 203.0.113.7, 10.0.0.2"),
        );
        // From a trusted peer: the nearest untrusted hop (1.1.1.1 may be forged by the
        // client; 203.0.113.7 is what our proxy saw).
        assert_eq!(
            client_ip(peer("127.0.0.1"), &headers, &trusted),
            "203.0.113.7".parse::<IpAddr>().expect("ip")
        );
        // From anyone else the header is ignored.
        assert_eq!(
            client_ip(peer("192.0.2.9"), &headers, &trusted),
            "192.0.2.9".parse::<IpAddr>().expect("ip")
        );
        // Forwarded wins over X-Forwarded-For; quoted IPv6 with a port.
        headers.insert(
            "forwarded",
            HeaderValue::from_static(r#"for="[2001:db8::1]:4711";proto=https"#),
        );
        assert_eq!(
            client_ip(peer("10.1.1.1"), &headers, &trusted),
            "2001:db8::1".parse::<IpAddr>().expect("ip")
        );
        // Garbage stops the walk at the proxy.
        headers.insert("forwarded", HeaderValue::from_static("for=unknown"));
        assert_eq!(
            client_ip(peer("127.0.0.1"), &headers, &trusted),
            "127.0.0.1".parse::<IpAddr>().expect("ip")
        );
    }

    #[test]
    fn every_refusal_is_counted_by_reason() {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            Refused::new("login_rate", Some(Duration::from_millis(1500)));
            Refused::new("login_rate", None);
            count_refusal("hash_busy");
        });
        let text = handle.render();
        assert!(
            text.contains(r#"frontier_gateway_refusals_total{reason="login_rate"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"frontier_gateway_refusals_total{reason="hash_busy"} 1"#),
            "{text}"
        );
    }

    #[test]
    fn the_local_prefilter_refuses_only_until_the_time_redis_gave() {
        let local = LocalRefusals::default();
        let now = Instant::now();
        assert_eq!(local.blocked("k", now), None);
        local.block("k".into(), now + Duration::from_millis(300));
        assert_eq!(
            local.blocked("k", now + Duration::from_millis(100)),
            Some(Duration::from_millis(200))
        );
        assert_eq!(local.blocked("k", now + Duration::from_millis(300)), None);
        assert_eq!(local.blocked("other", now), None);
    }

    #[test]
    fn ipv6_clients_are_limited_by_their_64() {
        assert_eq!(
            address_subject("2001:db8:1:2:3:4:5:6".parse().expect("ip")),
            "2001:db8:1:2::/64"
        );
        assert_eq!(
            address_subject("::ffff:192.0.2.1".parse().expect("ip")),
            "192.0.2.1"
        );
    }

    #[tokio::test]
    async fn without_redis_a_players_connections_are_counted_in_process() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Args {
            #[command(flatten)]
            limits: LimitArgs,
        }
        let args = Args::try_parse_from(["gateway"]).expect("defaults").limits;
        let limits = Limits::disabled(Namespace::new("t").expect("a namespace"), args);
        assert_eq!(limits.player_connections("p").await, Some(0));
        for conn in ["c1", "c2"] {
            limits
                .acquire(Slot::Player, "p", conn)
                .await
                .expect("no cap without Redis");
        }
        limits
            .acquire(Slot::Address, "127.0.0.1", "c1")
            .await
            .expect("no cap without Redis");
        assert_eq!(limits.player_connections("p").await, Some(2));
        let slots = vec![
            (Slot::Player, "p".to_owned()),
            (Slot::Address, "127.0.0.1".to_owned()),
        ];
        limits.release(&slots, "c1").await;
        assert_eq!(limits.player_connections("p").await, Some(1));
        limits.release(&slots, "c2").await;
        assert_eq!(
            limits.player_connections("p").await,
            Some(0),
            "the last one closed"
        );
        assert_eq!(limits.player_connections("other").await, Some(0));
    }
}
