//! Throwaway clusters on loopback for the cluster tests: a Redis Cluster of three masters
//! (`redis-server --cluster-enabled yes`, joined with `redis-cli --cluster create`) and a
//! NATS cluster of three JetStream servers (`nats-server --cluster … --routes …`), each
//! node in its own folder of a temporary directory, any node killed (SIGKILL) and
//! restarted from its folder on demand. Every process is killed when the value drops.
//!
//! [`RedisCluster::start`]'s masters have no replicas: a killed master's slots are down
//! until it is restarted, and it comes back with everything it acknowledged (append-only
//! file, `appendfsync always`). `cluster-require-full-coverage no` keeps the other masters
//! serving their slots meanwhile. [`RedisCluster::start_replicated`] gives each master a
//! replica, which the cluster promotes when its master is lost for `cluster-node-timeout`.

use crate::free_port;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};

/// The stream [`NatsCluster::wait_ready`] makes to see that R3 streams can be placed.
const READY_STREAM: &str = "FRONTIER_CLUSTER_READY";

/// How long a cluster may take to form or to take a node back.
const FORM_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `command` to its end, at most `limit` (then it is killed): its output, or an
/// error saying it did not finish. A test never waits on a tool that stopped answering.
pub(crate) fn run_bounded(
    command: &mut Command,
    limit: Duration,
) -> anyhow::Result<std::process::Output> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let start = Instant::now();
    loop {
        if child.try_wait()?.is_some() {
            return Ok(child.wait_with_output()?);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output()?;
            bail!(
                "{command:?}: not finished after {limit:?}; it printed: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn temp_dir(kind: &str) -> anyhow::Result<PathBuf> {
    let dir =
        std::env::temp_dir().join(format!("frontier-{kind}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

pub(crate) fn log_file(dir: &Path, name: &str) -> anyhow::Result<Stdio> {
    Ok(std::fs::File::create(dir.join(name))?.into())
}

/// Waits (polling every 50 ms) until `ready` holds, at most `timeout`.
pub(crate) fn wait_until(
    what: &str,
    timeout: Duration,
    mut ready: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    let start = Instant::now();
    while !ready() {
        if start.elapsed() > timeout {
            bail!("{what}: not ready after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// A Redis Cluster of three masters on loopback, with or without a replica each.
pub struct RedisCluster {
    fsync: String,
    /// `cluster-node-timeout` (ms): how long a node may be silent before it is failed.
    node_timeout_ms: u32,
    /// Replicas per master.
    replicas: usize,
    dir: PathBuf,
    ports: Vec<u16>,
    /// Each node's cluster bus port (set, not the default `port + 10000`, which could lie
    /// in the ephemeral range).
    bus_ports: Vec<u16>,
    nodes: Vec<Option<Child>>,
}

impl RedisCluster {
    /// Starts three masters, joins them into a cluster (slots split evenly, no replicas)
    /// and waits until every node reports the cluster up.
    pub fn start() -> anyhow::Result<RedisCluster> {
        RedisCluster::start_with_fsync("always")
    }

    /// [`RedisCluster::start`] with another `appendfsync` policy (`always`, `everysec`,
    /// `no`): the benchmarks compare the cluster with a single node that keeps nothing on
    /// disk.
    pub fn start_with_fsync(policy: &str) -> anyhow::Result<RedisCluster> {
        RedisCluster::start_with(policy, 0, 1000)
    }

    /// Three masters with a replica each (nodes 3, 4, 5 at the start), `cluster-node-timeout`
    /// `node_timeout_ms`: a master silent that long is failed and its replica promoted.
    /// Returns once the cluster is up and every replica has synchronised.
    pub fn start_replicated(node_timeout_ms: u32) -> anyhow::Result<RedisCluster> {
        let cluster = RedisCluster::start_with("always", 1, node_timeout_ms)?;
        cluster.wait_replicas_synced()?;
        Ok(cluster)
    }

    fn start_with(
        policy: &str,
        replicas: usize,
        node_timeout_ms: u32,
    ) -> anyhow::Result<RedisCluster> {
        let dir = temp_dir("redis-cluster")?;
        let mut cluster = RedisCluster {
            fsync: policy.to_owned(),
            node_timeout_ms,
            replicas,
            dir,
            ports: Vec::new(),
            bus_ports: Vec::new(),
            nodes: Vec::new(),
        };
        let count = 3 * (1 + replicas);
        for _ in 0..count {
            cluster.ports.push(free_port()?);
            cluster.bus_ports.push(free_port()?);
            cluster.nodes.push(None);
        }
        for i in 0..count {
            cluster.spawn(i)?;
        }
        for &port in &cluster.ports {
            wait_until("redis node", FORM_TIMEOUT, || cli(port, &["PING"]).is_ok())?;
        }
        let addresses: Vec<String> = cluster
            .ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        // `--cluster create` waits for the nodes to agree, without a limit of its own.
        let out = run_bounded(
            Command::new("redis-cli")
                .arg("--cluster")
                .arg("create")
                .args(&addresses)
                .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"]),
            FORM_TIMEOUT,
        )
        .context("redis-cli --cluster create")?;
        if !out.status.success() {
            bail!(
                "redis-cli --cluster create failed: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        cluster.wait_up()?;
        Ok(cluster)
    }

    fn spawn(&mut self, i: usize) -> anyhow::Result<()> {
        let node_dir = self.dir.join(format!("n{i}"));
        std::fs::create_dir_all(&node_dir)?;
        let child = Command::new("redis-server")
            .args(["--port", &self.ports[i].to_string()])
            .args(["--cluster-port", &self.bus_ports[i].to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--cluster-enabled", "yes"])
            .args(["--cluster-config-file", "nodes.conf"])
            .args(["--cluster-node-timeout", &self.node_timeout_ms.to_string()])
            .args(["--cluster-require-full-coverage", "no"])
            .args(["--appendonly", "yes"])
            .args(["--appendfsync", &self.fsync])
            // A replica (re)joining is synchronised at once, not after the 5 s a master
            // waits by default for more replicas to share one diskless transfer.
            .args(["--repl-diskless-sync-delay", "0"])
            .args(["--save", ""])
            .arg("--dir")
            .arg(&node_dir)
            .stdout(log_file(&node_dir, "redis.log")?)
            .stderr(Stdio::null())
            .spawn()
            .context("starting redis-server (is Redis 7 installed?)")?;
        self.nodes[i] = Some(child);
        Ok(())
    }

    /// Waits until every running node reports `cluster_state:ok` and knows every node.
    pub fn wait_up(&self) -> anyhow::Result<()> {
        let known = format!("cluster_known_nodes:{}", self.ports.len());
        for (i, &port) in self.ports.iter().enumerate() {
            if self.nodes[i].is_none() {
                continue;
            }
            wait_until("redis cluster", FORM_TIMEOUT, || {
                cli(port, &["CLUSTER", "INFO"])
                    .is_ok_and(|info| info.contains("cluster_state:ok") && info.contains(&known))
            })?;
        }
        Ok(())
    }

    /// Waits until every running node that is a replica has synchronised with its master
    /// (its link is up, no sync in progress), there are as many of them as the cluster has
    /// replicas, and every running node's `CLUSTER NODES` shows them so.
    pub fn wait_replicas_synced(&self) -> anyhow::Result<()> {
        wait_until("replicas synchronised", FORM_TIMEOUT, || {
            let synced = self
                .ports
                .iter()
                .enumerate()
                .filter(|(i, _)| self.nodes[*i].is_some())
                .filter(|(_, port)| {
                    cli(**port, &["INFO", "replication"]).is_ok_and(|info| {
                        info.contains("role:slave")
                            && info.contains("master_link_status:up")
                            && info.contains("master_sync_in_progress:0")
                    })
                })
                .count();
            // And every node knows them as replicas of a master (gossip has spread).
            let known = self
                .ports
                .iter()
                .enumerate()
                .filter(|(i, _)| self.nodes[*i].is_some())
                .all(|(_, port)| {
                    cli(*port, &["CLUSTER", "NODES"]).is_ok_and(|nodes| {
                        nodes
                            .lines()
                            .filter(|l| {
                                let f: Vec<&str> = l.split_whitespace().collect();
                                f.len() > 3
                                    && f[2].split(',').any(|f| f == "slave")
                                    && !f[2].contains("fail")
                                    && f[3] != "-"
                            })
                            .count()
                            == 3 * self.replicas
                    })
                });
            synced == 3 * self.replicas && known
        })
    }

    /// Whether node `i` is running.
    pub fn is_running(&self, i: usize) -> bool {
        self.nodes[i].is_some()
    }

    /// How many nodes the cluster has (masters and replicas).
    pub fn len(&self) -> usize {
        self.ports.len()
    }

    /// Never: a cluster has nodes.
    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }

    /// The seed URLs, comma-separated (as `FRONTIER_REDIS_URL` takes them).
    pub fn urls(&self) -> String {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The port of node `i`.
    pub fn port(&self, i: usize) -> u16 {
        self.ports[i]
    }

    /// Which node (index) serves `slot` as master, from `CLUSTER NODES` of the first running
    /// node other than `not_asking` (a node just killed may still be named by the others
    /// until they fail it; a node just restarted may not yet know the news).
    pub fn master_of_slot_asking_not(
        &self,
        slot: u16,
        not_asking: Option<usize>,
    ) -> anyhow::Result<usize> {
        let masters = self.masters_asking_not(not_asking)?;
        masters
            .iter()
            .find(|(_, ranges)| ranges.iter().any(|r| r.contains(&slot)))
            .map(|(i, _)| *i)
            .with_context(|| format!("no master serves slot {slot}: {masters:?}"))
    }

    /// The masters serving slots (node index, its slot ranges), from `CLUSTER NODES` of
    /// the first running node other than `not_asking`.
    pub fn masters_asking_not(
        &self,
        not_asking: Option<usize>,
    ) -> anyhow::Result<Vec<(usize, Vec<std::ops::RangeInclusive<u16>>)>> {
        let running = (0..self.ports.len())
            .find(|&i| self.nodes[i].is_some() && Some(i) != not_asking)
            .context("no running node")?;
        let nodes = cli(self.ports[running], &["CLUSTER", "NODES"])?;
        let mut masters = Vec::new();
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let Some(port) = fields
                .get(1)
                .and_then(|a| a.split(['@', ',']).next())
                .and_then(|a| a.rsplit_once(':'))
                .and_then(|(_, p)| p.parse::<u16>().ok())
            else {
                continue;
            };
            let ranges: Vec<std::ops::RangeInclusive<u16>> = fields
                .iter()
                .skip(8)
                .filter_map(|range| {
                    let (start, end) = range.split_once('-').unwrap_or((range, range));
                    Some(start.parse::<u16>().ok()?..=end.parse::<u16>().ok()?)
                })
                .collect();
            let master = fields
                .get(2)
                .is_some_and(|f| f.split(',').any(|f| f == "master"));
            if master
                && !ranges.is_empty()
                && let Some(i) = self.ports.iter().position(|&p| p == port)
            {
                masters.push((i, ranges));
            }
        }
        Ok(masters)
    }

    /// Which node (index) serves `slot` as master, from `CLUSTER NODES` of a running node.
    pub fn master_of_slot(&self, slot: u16) -> anyhow::Result<usize> {
        self.master_of_slot_asking_not(slot, None)
    }

    /// Kills node `i` (SIGKILL).
    pub fn kill(&mut self, i: usize) -> anyhow::Result<()> {
        if let Some(mut child) = self.nodes[i].take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Restarts node `i` from its folder (its node id, slots and data) and waits until
    /// the cluster is up again (a master whose replica was promoted meanwhile comes back as
    /// that replica's replica).
    pub fn restart(&mut self, i: usize) -> anyhow::Result<()> {
        self.spawn(i)?;
        self.wait_up()
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in self.nodes.iter_mut().flatten() {
            let _ = node.kill();
            let _ = node.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `redis-cli -p <port> <args>`; its output, or an error if it failed or answered one.
/// Bounded: a node that accepts but does not answer makes it an error within 10 s.
pub(crate) fn cli(port: u16, args: &[&str]) -> anyhow::Result<String> {
    let out = run_bounded(
        Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(args),
        Duration::from_secs(10),
    )
    .context("redis-cli")?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() || text.starts_with("ERR") || text.contains("Could not connect") {
        bail!("redis-cli {args:?} on {port}: {text}");
    }
    Ok(text)
}

/// A NATS cluster of three JetStream servers on loopback.
pub struct NatsCluster {
    dir: PathBuf,
    client_ports: Vec<u16>,
    route_ports: Vec<u16>,
    nodes: Vec<Option<Child>>,
}

impl NatsCluster {
    /// Starts three servers routed to each other, each with its own JetStream store.
    /// JetStream is usable once [`NatsCluster::wait_ready`] returns.
    pub fn start() -> anyhow::Result<NatsCluster> {
        let mut cluster = NatsCluster {
            dir: temp_dir("nats-cluster")?,
            client_ports: Vec::new(),
            route_ports: Vec::new(),
            nodes: Vec::new(),
        };
        for _ in 0..3 {
            cluster.client_ports.push(free_port()?);
            cluster.route_ports.push(free_port()?);
            cluster.nodes.push(None);
        }
        for i in 0..3 {
            cluster.spawn(i)?;
        }
        Ok(cluster)
    }

    fn spawn(&mut self, i: usize) -> anyhow::Result<()> {
        let node_dir = self.dir.join(format!("n{i}"));
        std::fs::create_dir_all(&node_dir)?;
        let routes: Vec<String> = self
            .route_ports
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, p)| format!("nats://127.0.0.1:{p}"))
            .collect();
        let child = Command::new("nats-server")
            .args(["-a", "127.0.0.1"])
            .args(["-p", &self.client_ports[i].to_string()])
            .args(["-n", &format!("n{i}")])
            .arg("-js")
            .arg("-sd")
            .arg(node_dir.join("js"))
            .args([
                "--cluster_name",
                "frontier-test",
                "--cluster",
                &format!("nats://127.0.0.1:{}", self.route_ports[i]),
                "--routes",
                &routes.join(","),
            ])
            .stdout(Stdio::null())
            .stderr(log_file(&node_dir, "nats.log")?)
            .spawn()
            .context("starting nats-server")?;
        self.nodes[i] = Some(child);
        Ok(())
    }

    /// Waits until JetStream answers through every running server (a meta leader is
    /// elected and the servers are routed).
    pub async fn wait_ready(&self) -> anyhow::Result<()> {
        let start = Instant::now();
        for (i, &port) in self.client_ports.iter().enumerate() {
            if self.nodes[i].is_none() {
                continue;
            }
            loop {
                // The JetStream API's account info: answered (without an error) once a
                // meta leader is elected and reachable from this server.
                let ok = match async_nats::connect(format!("nats://127.0.0.1:{port}")).await {
                    Ok(client) => matches!(
                        tokio::time::timeout(
                            Duration::from_secs(2),
                            client.request("$JS.API.INFO", Vec::new().into()),
                        )
                        .await,
                        Ok(Ok(reply)) if !String::from_utf8_lossy(&reply.payload).contains("\"error\"")
                    ),
                    Err(_) => false,
                };
                if ok {
                    break;
                }
                if start.elapsed() > FORM_TIMEOUT {
                    bail!("NATS cluster: JetStream not ready on {port} after {FORM_TIMEOUT:?}");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        // Answering is not placing: until the JetStream meta group knows all three peers, a
        // stream of three replicas is refused with "no suitable peers for placement"
        // (10005). Ready means a throwaway R3 stream can be made (and it is removed again).
        if self.nodes.iter().all(Option::is_some) {
            let client = async_nats::connect(self.url(0)).await?;
            let config = format!(
                r#"{{"name":"{READY_STREAM}","subjects":["_frontier.{READY_STREAM}"],"num_replicas":3,"storage":"memory"}}"#
            );
            loop {
                let created = tokio::time::timeout(
                    Duration::from_secs(2),
                    client.request(
                        format!("$JS.API.STREAM.CREATE.{READY_STREAM}"),
                        config.clone().into(),
                    ),
                )
                .await;
                if let Ok(Ok(reply)) = created
                    && !String::from_utf8_lossy(&reply.payload).contains("\"error\"")
                {
                    break;
                }
                if start.elapsed() > FORM_TIMEOUT {
                    bail!("NATS cluster: no R3 stream placed after {FORM_TIMEOUT:?}");
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let _ = client
                .request(
                    format!("$JS.API.STREAM.DELETE.{READY_STREAM}"),
                    Vec::new().into(),
                )
                .await;
        }
        Ok(())
    }

    /// The seed URLs, comma-separated (as `FRONTIER_NATS_URL` takes them).
    pub fn urls(&self) -> String {
        self.client_ports
            .iter()
            .map(|p| format!("nats://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The client URL of server `i`.
    pub fn url(&self, i: usize) -> String {
        format!("nats://127.0.0.1:{}", self.client_ports[i])
    }

    /// The server name of node `i` (`n<i>`).
    pub fn name(i: usize) -> String {
        format!("n{i}")
    }

    /// Kills server `i` (SIGKILL).
    pub fn kill(&mut self, i: usize) -> anyhow::Result<()> {
        if let Some(mut child) = self.nodes[i].take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Restarts server `i` from its folder (its JetStream store) and waits until JetStream
    /// answers through it.
    pub async fn restart(&mut self, i: usize) -> anyhow::Result<()> {
        self.spawn(i)?;
        self.wait_ready().await
    }
}

impl Drop for NatsCluster {
    fn drop(&mut self) {
        for node in self.nodes.iter_mut().flatten() {
            let _ = node.kill();
            let _ = node.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
