//! `frontier-clusters`: a throwaway 3-master Redis Cluster and 3-node NATS cluster (with
//! JetStream) on loopback ports — the same as the cluster tests start
//! (`libs/testkit/src/cluster.rs`) — for running something else against them: the command
//! after `--` runs with `FRONTIER_TEST_REDIS_URL` and `FRONTIER_TEST_NATS_URL` set to the
//! clusters' seed lists and `FRONTIER_NATS_STREAM_REPLICAS=3`; both clusters are stopped
//! and their folders removed when it exits. Loopback only; stops with the command.
//!
//! ```sh
//! scripts/test-services.sh target/release/frontier-clusters --appendfsync no -- \
//!     scripts/bench-live.sh frontier target/release/frontier 40 20 -- --rate 10000 --games 1000
//! ```
//!
//! `--appendfsync always|everysec|no`: the Redis masters' policy (default `always`, as in
//! the tests: masters without replicas lose nothing acknowledged only so).

use std::process::{Command, ExitCode};

use anyhow::{Context as _, bail};
use frontier_testkit::cluster::{NatsCluster, RedisCluster};

fn usage() -> &'static str {
    "usage: frontier-clusters [--appendfsync always|everysec|no] -- COMMAND [ARGS…]"
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let mut args = std::env::args().skip(1);
    let mut fsync = "always".to_owned();
    let mut command = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--appendfsync" => {
                fsync = args.next().context(usage())?;
                if !["always", "everysec", "no"].contains(&fsync.as_str()) {
                    bail!("--appendfsync: always, everysec or no\n{}", usage());
                }
            }
            "--" => {
                command.extend(args.by_ref());
            }
            "-h" | "--help" => {
                println!("{}", usage());
                return Ok(ExitCode::SUCCESS);
            }
            other => bail!("unknown argument `{other}`\n{}", usage()),
        }
    }
    let Some((program, rest)) = command.split_first() else {
        bail!("no command to run\n{}", usage());
    };
    let redis = RedisCluster::start_with_fsync(&fsync)?;
    let nats = NatsCluster::start()?;
    nats.wait_ready().await?;
    eprintln!(
        "frontier-clusters: Redis Cluster {} (appendfsync {fsync}), NATS cluster {}",
        redis.urls(),
        nats.urls()
    );
    let status = Command::new(program)
        .args(rest)
        .env("FRONTIER_TEST_REDIS_URL", redis.urls())
        .env("FRONTIER_TEST_NATS_URL", nats.urls())
        .env("FRONTIER_NATS_STREAM_REPLICAS", "3")
        .status()
        .with_context(|| format!("running {program}"))?;
    drop((redis, nats));
    Ok(if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
