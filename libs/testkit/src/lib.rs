//! Test harness. `make test` runs the suite under `scripts/test-services.sh`, which finds
//! Redis, NATS (JetStream) and Postgres on their standard loopback ports or starts
//! throwaway ones, and exports where they are. This crate reads that, and gives each test
//! its own namespace (Redis key prefix and NATS subject prefix) and its own database.

pub mod cluster;
pub mod postgres;
pub mod replicas;

use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::Connection as _;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// Redis for tests.
pub fn redis_url() -> String {
    env_or("FRONTIER_TEST_REDIS_URL", "redis://127.0.0.1:6379")
}

/// NATS (with JetStream) for tests.
pub fn nats_url() -> String {
    env_or("FRONTIER_TEST_NATS_URL", "nats://127.0.0.1:4222")
}

/// A Postgres URL with the right to create databases.
pub fn postgres_admin_url() -> String {
    env_or(
        "FRONTIER_TEST_POSTGRES_URL",
        "postgres://postgres@127.0.0.1:5432/postgres",
    )
}

/// This run's id (set by the script; one per process otherwise).
pub fn run_id() -> String {
    std::env::var("FRONTIER_TEST_RUN").unwrap_or_else(|_| format!("p{}", std::process::id()))
}

/// A loopback port nobody listens on, from below the kernel's ephemeral range.
///
/// A node's port must stay free while the node is down so that it can come back on it.
/// Ports from the ephemeral range (`ip_local_port_range`, 32768–60999 by default) do not:
/// any outgoing connection may be given one, among them the clients' own reconnection
/// attempts to that very port, which the kernel then completes as a TCP self-connect. No
/// outgoing connection is ever given a port below the range. Each port is handed out once
/// per process (tests start their servers concurrently) and checked free.
pub fn free_port() -> anyhow::Result<u16> {
    use std::sync::Mutex;
    static TAKEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32_768);
    const LOW: u16 = 10_000;
    if ephemeral_low <= LOW + 1_000 {
        // An unusual range: take what the kernel gives.
        return Ok(std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port());
    }
    let mut taken = TAKEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for _ in 0..1_000 {
        let span = u128::from(ephemeral_low - LOW);
        let offset = u16::try_from(uuid::Uuid::new_v4().as_u128() % span).unwrap_or(0);
        let port = LOW + offset;
        if !taken.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            taken.push(port);
            return Ok(port);
        }
    }
    anyhow::bail!("no free loopback port below {ephemeral_low}")
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A namespace no other test (of this run or any other) uses.
pub fn unique_namespace() -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let rand = uuid::Uuid::new_v4().simple().to_string();
    format!("t{}-{n}-{}", run_id(), &rand[..8])
}

/// Creates a fresh, empty database and returns its URL.
pub async fn fresh_database() -> anyhow::Result<String> {
    let admin = postgres_admin_url();
    let name = format!(
        "ft_{}_{}",
        run_id().to_ascii_lowercase(),
        uuid::Uuid::new_v4().simple()
    );
    let mut conn = sqlx::PgConnection::connect(&admin).await.map_err(|e| {
        anyhow::anyhow!("Postgres at {admin} does not answer ({e}); run the tests with `make test`")
    })?;
    // The name is built here from a run id and a UUID, never from input.
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .execute(&mut conn)
        .await?;
    conn.close().await?;
    let base = admin
        .rsplit_once('/')
        .map(|(base, _)| base.to_owned())
        .unwrap_or(admin);
    Ok(format!("{base}/{name}"))
}

/// Waits until the NATS server has processed everything `client` sent so far (such as a
/// SUB): `flush` only empties the client's buffer, while a request that the server answers
/// itself ("no responders") is a round trip on the same connection.
pub async fn nats_round_trip(client: &async_nats::Client) {
    let probe = format!("_FRONTIER.ready.{}", uuid::Uuid::new_v4().simple());
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        client.request(probe, Vec::new().into()),
    )
    .await;
}

/// The one `frontier` binary of this build (`frontier <service>` starts a service), for
/// tests that run a service as a process of its own (to SIGKILL it): `FRONTIER_BIN` if set,
/// else the one next to the test's own `deps` folder; `cargo test --workspace` (`make
/// test`) builds it with the features the tests turn on (the test hooks). Running one
/// crate's tests alone needs it built first: `cargo build -p frontier --features test-hooks`.
pub fn frontier_bin() -> std::path::PathBuf {
    if let Some(bin) = std::env::var_os("FRONTIER_BIN") {
        return bin.into();
    }
    let exe = std::env::current_exe().expect("the test's own path");
    let profile = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("a test runs from <target>/<profile>/deps");
    let bin = profile.join("frontier");
    assert!(
        bin.exists(),
        "{} is not built: run `make test`, or `cargo build -p frontier --features test-hooks` first",
        bin.display()
    );
    bin
}
