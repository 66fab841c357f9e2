//! Configuration pieces shared by the services' `clap` structs (flatten them in).

use std::time::Duration;

/// Where Redis is.
#[derive(Debug, Clone, clap::Args)]
pub struct RedisArgs {
    /// Redis URL, or a comma-separated list of Redis Cluster seed nodes
    /// (`redis://10.0.0.1:6379,redis://10.0.0.2:6379`): more than one URL means a cluster.
    #[arg(
        long,
        env = "FRONTIER_REDIS_URL",
        default_value = "redis://127.0.0.1:6379"
    )]
    pub redis_url: String,
    /// Treat a single `--redis-url` as a seed node of a Redis Cluster.
    #[arg(long, env = "FRONTIER_REDIS_CLUSTER", default_value_t = false)]
    pub redis_cluster: bool,
}

impl RedisArgs {
    /// Connects to the Redis (or Redis Cluster) these arguments name.
    pub async fn connect(&self) -> redis::RedisResult<crate::RedisConn> {
        crate::RedisConn::connect(&self.redis_url, self.redis_cluster).await
    }
}

/// Where NATS is.
#[derive(Debug, Clone, clap::Args)]
pub struct NatsArgs {
    /// NATS URL, or a comma-separated list of a NATS cluster's seed URLs (JetStream must
    /// be enabled on the servers).
    #[arg(
        long,
        env = "FRONTIER_NATS_URL",
        default_value = "nats://127.0.0.1:4222"
    )]
    pub nats_url: String,
    /// Replicas of each JetStream stream a service creates: 1 on one server, 3 on a NATS
    /// cluster of three or more (a stream survives the loss of one server). Applies when
    /// the stream is created; an existing stream keeps its own.
    #[arg(
        long,
        env = "FRONTIER_NATS_STREAM_REPLICAS",
        default_value_t = 1,
        value_parser = clap::value_parser!(u8).range(1..=5)
    )]
    pub nats_stream_replicas: u8,
}

/// Where Postgres is.
#[derive(Debug, Clone, clap::Args)]
pub struct PostgresArgs {
    /// Postgres URL.
    #[arg(
        long,
        env = "FRONTIER_DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/frontier"
    )]
    pub database_url: String,
}

impl PostgresArgs {
    /// A pool on `--database-url` that follows a failover of the primary behind that one
    /// address (a service address that moves to the promoted standby): each connection is
    /// checked before use, so one to a primary that is gone is dropped and a new one made;
    /// a new connection to a server in recovery (a standby, or an old primary come back as
    /// one) is refused, so writes never go to a read-only server; and connections are
    /// renewed every 10 minutes. Waiting for a connection takes at most 5 s.
    pub async fn pool(&self, max_connections: u32) -> sqlx::Result<sqlx::PgPool> {
        postgres_pool(&self.database_url, max_connections).await
    }
}

/// [`PostgresArgs::pool`] on `url`.
pub async fn postgres_pool(url: &str, max_connections: u32) -> sqlx::Result<sqlx::PgPool> {
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(5))
        .test_before_acquire(true)
        .max_lifetime(Duration::from_secs(600))
        .after_connect(|conn, _| {
            Box::pin(async move {
                let standby: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()")
                    .fetch_one(&mut *conn)
                    .await?;
                if standby {
                    return Err(sqlx::Error::Protocol(
                        "the server is a standby (in recovery), not the primary".into(),
                    ));
                }
                Ok(())
            })
        })
        .connect(url)
        .await
}

/// Where a service serves its admin endpoints (`/metrics`, `/healthz`, `/readyz`).
#[derive(Debug, Clone, clap::Args)]
pub struct AdminArgs {
    /// Address of the admin endpoints: Prometheus `/metrics`, liveness `/healthz`, and
    /// readiness `/readyz` (every dependency reachable). None: not served.
    #[arg(long, env = "FRONTIER_ADMIN_LISTEN", alias = "metrics-listen")]
    pub admin_listen: Option<std::net::SocketAddr>,
}

/// The namespace of every subject, stream and key.
#[derive(Debug, Clone, clap::Args)]
pub struct NamespaceArgs {
    /// Prefix of every NATS subject, JetStream stream and Redis key.
    #[arg(long, env = "FRONTIER_NAMESPACE", default_value = "frontier")]
    pub namespace: String,
}

/// JWT settings.
#[derive(Clone, clap::Args)]
pub struct JwtArgs {
    /// A shared HS256 secret (at least 32 bytes), the key of id `default`. Every gateway
    /// must use the same keys. Either this or `--jwt-keys`, or both (this one counts as
    /// the oldest key: how a platform that had only a secret starts a rotation).
    #[arg(long, env = "FRONTIER_JWT_SECRET", hide_env_values = true)]
    pub jwt_secret: Option<String>,
    /// Signing keys for rotation: `id:secret` pairs, comma-separated, oldest first. The
    /// last signs new tokens (its id goes in their `kid`); every listed key still verifies
    /// the tokens it signed, and a token whose key is no longer listed is refused. Ids are
    /// letters, digits, `.`, `_`, `-`; secrets at least 32 bytes, without commas.
    #[arg(long, env = "FRONTIER_JWT_KEYS", hide_env_values = true)]
    pub jwt_keys: Option<String>,
    /// How long issued tokens stay valid.
    #[arg(long, env = "FRONTIER_JWT_TTL", default_value = "12h", value_parser = parse_duration)]
    pub jwt_ttl: Duration,
}

impl JwtArgs {
    /// The keys these settings give.
    pub fn keys(&self) -> Result<crate::auth::JwtKeys, String> {
        let mut keys: Vec<(&str, &[u8])> = Vec::new();
        // Empty: not set (the chart's Secret holds an empty `jwt-secret` once withdrawn).
        if let Some(secret) = self.jwt_secret.as_deref().filter(|s| !s.is_empty()) {
            keys.push((crate::auth::DEFAULT_KID, secret.as_bytes()));
        }
        for pair in self.jwt_keys.iter().flat_map(|k| k.split(',')) {
            let pair = pair.trim();
            if pair.is_empty() {
                continue;
            }
            let Some((id, secret)) = pair.split_once(':') else {
                return Err("--jwt-keys: write each key as id:secret".into());
            };
            keys.push((id.trim(), secret.as_bytes()));
        }
        if keys.is_empty() {
            return Err(
                "set --jwt-secret (FRONTIER_JWT_SECRET) or --jwt-keys (FRONTIER_JWT_KEYS)".into(),
            );
        }
        crate::auth::JwtKeys::rotating(&keys, self.jwt_ttl)
    }
}

impl std::fmt::Debug for JwtArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "JwtArgs {{ jwt_secret: <secret>, jwt_keys: <secrets>, jwt_ttl: {:?} }}",
            self.jwt_ttl
        )
    }
}

/// Parses `250ms`, `30s`, `5m`, `12h`, `7d`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("`{s}` is not a duration like 30s, 5m or 250ms"))?;
    let ms = match unit {
        "ms" => n,
        "" | "s" => n.saturating_mul(1000),
        "m" => n.saturating_mul(60_000),
        "h" => n.saturating_mul(3_600_000),
        "d" => n.saturating_mul(86_400_000),
        _ => return Err(format!("`{s}`: unit must be ms, s, m, h or d")),
    };
    Ok(Duration::from_millis(ms))
}

/// Refuses to start a build without the `test-hooks` feature when one of its test hook
/// variables is set: such a build has no such setting, and ignoring it silently would run
/// something other than what was asked for.
pub fn refuse_unbuilt_test_hooks(built: bool, variables: &[&str]) -> anyhow::Result<()> {
    if built {
        return Ok(());
    }
    if let Some(set) = variables.iter().find(|v| std::env::var_os(v).is_some()) {
        anyhow::bail!(
            "{set} is a test-only setting, and this build has no test hooks (release builds never do)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jwt_args_list_keys_oldest_first_and_an_empty_secret_is_none() {
        let secret = "s".repeat(32);
        let args = |jwt_secret: Option<&str>, jwt_keys: Option<&str>| JwtArgs {
            jwt_secret: jwt_secret.map(str::to_owned),
            jwt_keys: jwt_keys.map(str::to_owned),
            jwt_ttl: Duration::from_secs(60),
        };
        let keys = args(Some(&secret), Some(&format!("k2:{}", "t".repeat(32))))
            .keys()
            .expect("keys");
        assert_eq!(keys.signing_kid(), "k2");
        let keys = args(Some(&secret), None).keys().expect("keys");
        assert_eq!(keys.signing_kid(), crate::auth::DEFAULT_KID);
        // The chart's withdrawn secret: empty, not a key.
        let keys = args(Some(""), Some(&format!("k3:{}", "u".repeat(32))))
            .keys()
            .expect("keys");
        assert_eq!(keys.signing_kid(), "k3");
        assert!(args(Some(""), None).keys().is_err());
        assert!(args(None, Some("no-colon")).keys().is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert!(parse_duration("5y").is_err());
        assert!(parse_duration("m").is_err());
    }
}
