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

/// A connection to one Redis (reconnecting by itself) or to a Redis Cluster (following
/// its slots). Clone it freely: clones share the connection.
#[derive(Clone)]
pub enum RedisConn {
    /// One Redis.
    Single(ConnectionManager),
    /// A Redis Cluster.
    Cluster(ClusterConnection),
}

impl RedisConn {
    /// Connects to `urls`: a comma-separated list of seed nodes. More than one seed, or
    /// `cluster`, means a Redis Cluster; else one Redis. A command waits at most
    /// `response_timeout` for its answer.
    pub async fn connect(urls: &str, cluster: bool) -> redis::RedisResult<RedisConn> {
        let seeds: Vec<&str> = urls
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let timeout = Duration::from_secs(5);
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
            RedisConn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            RedisConn::Single(c) => c.get_db(),
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
