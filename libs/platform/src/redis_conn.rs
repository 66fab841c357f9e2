//! One Redis connection type for one Redis or a Redis Cluster, and the shards that let the
//! platform's shared sets live on a cluster.
//!
//! Under Redis Cluster a script or a pipeline may only touch keys of one hash slot. Each
//! game's keys therefore carry the hash tag of the game's [`Shard`], and so do the sets
//! that a game's compare-and-set writes along with it (its clock deadline, the outbox of
//! finished games, the bot-job outbox): there is one of each per shard, [`SHARDS`] in all,
//! and whoever walks them (the clock, game-session's outbox sweepers) visits every shard.
//! The shards' tags are chosen so that their slots are spread evenly over the slot range,
//! so the contiguous ranges that `redis-cli --cluster create` gives each master hold about
//! as many shards each. On one Redis the same keys are used, so the layout is one.

use std::sync::OnceLock;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::GameId;

/// How many shards the shared sets are split into. Part of the key layout: changing it
/// moves every game's keys (see deploy/README.md).
pub const SHARDS: u16 = 16;

/// Redis Cluster's number of hash slots.
const SLOTS: u16 = 16384;

/// One of the [`SHARDS`] shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard(u16);

impl Shard {
    /// The shard of a game: from the random low bits of its id, so games spread evenly.
    pub fn of(game: &GameId) -> Shard {
        Shard((game.0.as_u128() % u128::from(SHARDS)) as u16)
    }

    /// Shard `i` modulo [`SHARDS`].
    pub fn wrapping(i: u16) -> Shard {
        Shard(i % SHARDS)
    }

    /// Every shard, in order.
    pub fn all() -> impl Iterator<Item = Shard> {
        (0..SHARDS).map(Shard)
    }

    /// The shard's number.
    pub fn index(self) -> u16 {
        self.0
    }

    /// The shard's hash tag (without braces): `s<index>-<n>`, with the smallest `n` whose
    /// slot lies in the shard's share of the slot range.
    pub fn tag(self) -> &'static str {
        static TAGS: OnceLock<Vec<String>> = OnceLock::new();
        let tags = TAGS.get_or_init(|| {
            (0..SHARDS)
                .map(|i| {
                    let share = u32::from(SLOTS) / u32::from(SHARDS);
                    let range = (u32::from(i) * share)..(u32::from(i) * share + share);
                    (0u32..)
                        .map(|n| format!("s{i}-{n}"))
                        .find(|tag| range.contains(&u32::from(key_slot(tag.as_bytes()))))
                        .expect("some tag of every shard hashes into its range")
                })
                .collect()
        });
        &tags[usize::from(self.0)]
    }
}

/// CRC16 (XMODEM), the checksum of Redis Cluster's key hashing.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in bytes {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The hash slot of a key (the part between the first `{` and the next `}` if not empty).
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            let close = rest.iter().position(|&b| b == b'}')?;
            (close > 0).then(|| &rest[..close])
        })
        .unwrap_or(key);
    crc16(hashed) % SLOTS
}

/// A connection to one Redis (reconnecting by itself), to the primary that Redis Sentinels
/// name (following a failover), or to a Redis Cluster (following its slots). Clone it
/// freely: clones share the connection.
#[derive(Clone)]
pub enum RedisConn {
    /// One Redis.
    Single(ConnectionManager),
    /// The primary of a Sentinel-managed group.
    Sentinel(SentinelConn),
    /// A Redis Cluster.
    Cluster(ClusterConnection),
}

/// The URL scheme of a Sentinel-managed primary:
/// `redis+sentinel://<sentinel>:<port>[,<sentinel>:<port>…]/<primary name>`.
pub const SENTINEL_SCHEME: &str = "redis+sentinel://";

/// How long a command waits for its answer, and a connection for its handshake.
const TIMEOUT: Duration = Duration::from_secs(5);

/// How often a [`SentinelConn`] asks the sentinels at most while its primary fails.
const ASK_EVERY: Duration = Duration::from_millis(100);

/// A connection to the primary of a group of Redis servers managed by Redis Sentinel.
///
/// It asks the sentinels (in turn, until one answers) which server is the primary
/// (`SENTINEL get-master-addr-by-name`) and keeps a reconnecting connection to it. A
/// command that fails as a lost primary fails (connection refused, dropped or timed out,
/// or [`primary_in_doubt`]: `READONLY`, the server was demoted to a replica) makes it ask again and move to the
/// primary named now; the command itself is not sent again (the caller's own retry is:
/// a write may have been made), so a failover costs its callers one failed command each
/// and the time the sentinels take to agree. A primary replaced while it still runs fails
/// no command: a caller that sees its writes unconfirmed asks
/// ([`RedisConn::recheck_primary`]).
#[derive(Clone)]
pub struct SentinelConn {
    inner: std::sync::Arc<SentinelInner>,
}

struct SentinelInner {
    sentinels: Vec<String>,
    name: String,
    /// The primary's address and a connection to it.
    current: std::sync::Mutex<(String, ConnectionManager)>,
    /// One look-up at a time (the callers failing together wait for its answer), and when
    /// the last one was made: while the sentinels still name the lost primary (they have
    /// not yet agreed it is down), they are asked at most every [`ASK_EVERY`].
    asking: tokio::sync::Mutex<Option<std::time::Instant>>,
}

/// A `redis+sentinel://` URL, parsed: the sentinels' `host:port`s and the primary's name.
fn parse_sentinel_url(url: &str) -> redis::RedisResult<(Vec<String>, String)> {
    let invalid = |why: &str| {
        redis::RedisError::from((
            redis::ErrorKind::InvalidClientConfig,
            "bad Sentinel URL",
            format!("{why}: expected {SENTINEL_SCHEME}host:port[,host:port…]/<primary name>"),
        ))
    };
    let rest = url
        .strip_prefix(SENTINEL_SCHEME)
        .ok_or_else(|| invalid("not a Sentinel URL"))?;
    let (hosts, name) = rest
        .split_once('/')
        .ok_or_else(|| invalid("no primary name"))?;
    let name = name.trim_end_matches('/');
    if name.is_empty() || name.contains('/') {
        return Err(invalid("no primary name"));
    }
    let sentinels: Vec<String> = hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|h| {
            if h.contains(':') {
                h.to_owned()
            } else {
                format!("{h}:26379")
            }
        })
        .collect();
    if sentinels.is_empty() {
        return Err(invalid("no sentinel"));
    }
    Ok((sentinels, name.to_owned()))
}

/// Whether a command's failure says the primary may have changed.
fn lost_primary(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_refusal()
        || e.is_connection_dropped()
        || e.is_timeout()
        || primary_in_doubt(e)
}

/// Whether a refusal says the node may no longer be the primary, or is one that lost its
/// replicas: `READONLY` (made a replica), `MASTERDOWN`, `NOREPLICAS` (a primary with
/// `min-replicas-to-write` whose replicas left — as when they follow a new primary). A
/// refusal inside a pipeline fails no command of a connection: its caller asks
/// ([`RedisConn::recheck_primary`]).
pub fn primary_in_doubt(e: &redis::RedisError) -> bool {
    matches!(
        e.kind(),
        redis::ErrorKind::Server(
            redis::ServerErrorKind::ReadOnly | redis::ServerErrorKind::MasterDown
        )
    ) || e.code() == Some("NOREPLICAS")
}

impl SentinelConn {
    /// Connects to the primary that the sentinels of `url` (`redis+sentinel://…`) name.
    pub async fn connect(url: &str) -> redis::RedisResult<SentinelConn> {
        let (sentinels, name) = parse_sentinel_url(url)?;
        let address = primary_address(&sentinels, &name).await?;
        let manager = manager_for(&address).await?;
        Ok(SentinelConn {
            inner: std::sync::Arc::new(SentinelInner {
                sentinels,
                name,
                current: std::sync::Mutex::new((address, manager)),
                asking: tokio::sync::Mutex::new(None),
            }),
        })
    }

    /// The primary's address as last learnt (`host:port`).
    pub fn primary(&self) -> String {
        self.lock().0.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (String, ConnectionManager)> {
        // Only whole values are ever stored: a poisoned lock still holds a usable one.
        self.inner
            .current
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn manager(&self) -> ConnectionManager {
        self.lock().1.clone()
    }

    /// Asks the sentinels for the primary again and moves to it if it changed (a failure
    /// to ask leaves the connection as it is: the next failed command asks again).
    async fn follow(&self, failed_on: &str) {
        let last_asked = self.inner.asking.lock().await;
        self.ask(last_asked, failed_on).await;
    }

    /// Asks the sentinels whether the primary moved, in the background, unless a look-up
    /// is under way (or was made within [`ASK_EVERY`]): the caller answers at once, and a
    /// burst of callers makes one look-up.
    fn recheck(&self) {
        // Checked here too, so that a burst of callers spawns nothing while a look-up is
        // under way or was just made (the task checks again: this guard is let go).
        match self.inner.asking.try_lock() {
            Ok(last_asked) if last_asked.is_some_and(|at| at.elapsed() < ASK_EVERY) => return,
            Ok(_) => {}
            Err(_) => return,
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let conn = self.clone();
        runtime.spawn(async move {
            let Ok(last_asked) = conn.inner.asking.try_lock() else {
                return;
            };
            let address = conn.primary();
            conn.ask(last_asked, &address).await;
        });
    }

    /// [`SentinelConn::follow`] once the look-up's turn came (`last_asked` held).
    async fn ask(
        &self,
        mut last_asked: tokio::sync::MutexGuard<'_, Option<std::time::Instant>>,
        failed_on: &str,
    ) {
        if self.primary() != failed_on {
            // Another caller moved already.
            return;
        }
        if last_asked.is_some_and(|at| at.elapsed() < ASK_EVERY) {
            return;
        }
        *last_asked = Some(std::time::Instant::now());
        match primary_address(&self.inner.sentinels, &self.inner.name).await {
            Ok(address) if address != failed_on => match manager_for(&address).await {
                Ok(manager) => {
                    tracing::warn!(from = failed_on, to = %address, "Redis primary moved (Sentinel)");
                    *self.lock() = (address, manager);
                }
                Err(e) => tracing::warn!(%address, error = %e, "new Redis primary unreachable"),
            },
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "no Redis Sentinel answered"),
        }
    }
}

/// Asks each sentinel in turn for the primary's address; the first answer counts.
async fn primary_address(sentinels: &[String], name: &str) -> redis::RedisResult<String> {
    let mut last = None;
    for sentinel in sentinels {
        let asked = async {
            let client = redis::Client::open(format!("redis://{sentinel}"))?;
            let mut conn = client.get_multiplexed_async_connection().await?;
            let answer: Option<(String, u16)> = redis::cmd("SENTINEL")
                .arg("get-master-addr-by-name")
                .arg(name)
                .query_async(&mut conn)
                .await?;
            answer.ok_or_else(|| {
                redis::RedisError::from((
                    redis::ErrorKind::InvalidClientConfig,
                    "the sentinel does not know the primary",
                    name.to_owned(),
                ))
            })
        };
        match tokio::time::timeout(Duration::from_secs(1), asked).await {
            Ok(Ok((host, port))) => return Ok(format!("{host}:{port}")),
            Ok(Err(e)) => last = Some(e),
            Err(_) => {
                last = Some(redis::RedisError::from((
                    redis::ErrorKind::Io,
                    "a sentinel did not answer within 1 s",
                    sentinel.clone(),
                )));
            }
        }
    }
    Err(last.unwrap_or_else(|| {
        redis::RedisError::from((redis::ErrorKind::InvalidClientConfig, "no sentinel given"))
    }))
}

/// A reconnecting connection to `address` that gives up quickly: a primary that stopped
/// answering is more likely replaced than coming back.
async fn manager_for(address: &str) -> redis::RedisResult<ConnectionManager> {
    let client = redis::Client::open(format!("redis://{address}"))?;
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_response_timeout(Some(TIMEOUT))
        .set_number_of_retries(1);
    ConnectionManager::new_with_config(client, config).await
}

impl ConnectionLike for SentinelConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (address, mut manager) = self.lock().clone();
            let answer = manager.req_packed_command(cmd).await;
            if let Err(e) = &answer
                && lost_primary(e)
            {
                self.follow(&address).await;
            }
            answer
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let (address, mut manager) = self.lock().clone();
            let answer = manager.req_packed_commands(pipeline, offset, count).await;
            if let Err(e) = &answer
                && lost_primary(e)
            {
                self.follow(&address).await;
            }
            answer
        })
    }

    fn get_db(&self) -> i64 {
        self.manager().get_db()
    }
}

impl RedisConn {
    /// Connects to `urls`: a comma-separated list of seed nodes. More than one seed, or
    /// `cluster`, means a Redis Cluster; else one Redis. A `redis+sentinel://` URL names
    /// the sentinels of a primary and the primary's name ([`SentinelConn`]). A command
    /// waits at most 5 s for its answer.
    pub async fn connect(urls: &str, cluster: bool) -> redis::RedisResult<RedisConn> {
        if urls.trim_start().starts_with(SENTINEL_SCHEME) {
            return Ok(RedisConn::Sentinel(
                SentinelConn::connect(urls.trim()).await?,
            ));
        }
        let seeds: Vec<&str> = urls
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let timeout = TIMEOUT;
        match seeds.as_slice() {
            [] => Err(redis::RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "no Redis URL given",
            ))),
            [one] if !cluster => {
                let client = redis::Client::open(*one)?;
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(Some(timeout));
                Ok(RedisConn::Single(
                    ConnectionManager::new_with_config(client, config).await?,
                ))
            }
            seeds => {
                // Few retries: while a master is down its slots answer an error within
                // seconds instead of holding every request through a long backoff.
                let client = redis::cluster::ClusterClient::builder(seeds.to_vec())
                    .retries(3)
                    .min_retry_wait(50)
                    .max_retry_wait(500)
                    .connection_timeout(Duration::from_secs(1))
                    .response_timeout(timeout)
                    .build()?;
                Ok(RedisConn::Cluster(client.get_async_connection().await?))
            }
        }
    }

    /// Whether this is a cluster connection.
    pub fn is_cluster(&self) -> bool {
        matches!(self, RedisConn::Cluster(_))
    }

    /// Under Sentinel, asks the sentinels (in the background: this returns at once)
    /// whether the primary moved, and follows it (one look-up at a time, at most every
    /// [`ASK_EVERY`]); elsewhere nothing. For a caller whose write the primary
    /// made but no replica confirmed: a primary the sentinels replaced while it still runs
    /// (a switchover, `SENTINEL FAILOVER`, or one cut off from them) answers every command
    /// and stays a primary, without replicas, until they make it a replica — 10 s or more
    /// later — so no command fails to say it was replaced.
    pub fn recheck_primary(&self) {
        if let RedisConn::Sentinel(c) = self {
            c.recheck();
        }
    }
}

impl From<ConnectionManager> for RedisConn {
    fn from(conn: ConnectionManager) -> RedisConn {
        RedisConn::Single(conn)
    }
}

impl ConnectionLike for RedisConn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            RedisConn::Single(c) => c.req_packed_command(cmd),
            RedisConn::Sentinel(c) => c.req_packed_command(cmd),
            RedisConn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            RedisConn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            RedisConn::Sentinel(c) => c.req_packed_commands(pipeline, offset, count),
            RedisConn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            RedisConn::Single(c) => c.get_db(),
            RedisConn::Sentinel(c) => c.get_db(),
            RedisConn::Cluster(c) => c.get_db(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis_cluster_hashing() {
        // The values of the Redis Cluster specification and of the redis crate.
        assert_eq!(crc16(b"123456789"), 0x31c3);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        for key in ["a:{s3-7}:game:x", "foo{}{bar}", "{}", "plain", "x{y}z{w}"] {
            assert_eq!(
                redis::cluster_routing::Slot::new(key_slot(key.as_bytes())),
                Some(redis::cluster_routing::Slot::for_key(key)),
                "{key}"
            );
        }
    }

    #[test]
    fn sentinel_urls_name_their_sentinels_and_primary() {
        let (sentinels, name) =
            parse_sentinel_url("redis+sentinel://10.0.0.1:26379, s2 ,s3:5000/frontier")
                .expect("valid");
        assert_eq!(sentinels, ["10.0.0.1:26379", "s2:26379", "s3:5000"]);
        assert_eq!(name, "frontier");
        for bad in [
            "redis://h:1/x",
            "redis+sentinel://h:1",
            "redis+sentinel://h:1/",
            "redis+sentinel:///x",
            "redis+sentinel://h:1/a/b",
        ] {
            assert!(parse_sentinel_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn shard_tags_spread_over_the_slot_range() {
        let share = SLOTS / SHARDS;
        for shard in Shard::all() {
            let slot = key_slot(format!("ns:{{{}}}:deadlines", shard.tag()).as_bytes());
            assert_eq!(slot / share, shard.index(), "{shard:?} {}", shard.tag());
        }
    }

    #[test]
    fn games_spread_over_the_shards() {
        let mut counts = [0u32; SHARDS as usize];
        for _ in 0..16_000 {
            counts[usize::from(Shard::of(&GameId::new()).index())] += 1;
        }
        assert!(
            counts.iter().all(|&n| (700..1300).contains(&n)),
            "{counts:?}"
        );
    }
}
