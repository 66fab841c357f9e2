//! A throwaway Redis primary with replicas on loopback (`redis-server --replicaof`), each
//! node in its own folder of a temporary directory: any node killed (SIGKILL), paused
//! (SIGSTOP) and resumed, or restarted from its folder on demand; optionally watched by
//! Redis Sentinels (`redis-server <conf> --sentinel`) that fail a lost primary over to a
//! replica. Every process is killed when the value drops.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context as _, bail};

use crate::cluster::{cli, log_file, temp_dir, wait_until};
use crate::free_port;

/// How long a node may take to start or a replica to catch up with its primary.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);

/// The name under which the sentinels know the primary.
pub const SENTINEL_NAME: &str = "frontier";

/// The sentinels' `failover-timeout`: among other things, how long the sentinel leading a
/// failover waits for the other replicas to follow the promoted one before it sends them
/// `REPLICAOF` again regardless (a replica it could not reach meanwhile follows then).
const FAILOVER_TIMEOUT_MS: u32 = 10_000;

/// A Redis primary (node 0 at the start) and its replicas (nodes 1…), and the sentinels
/// watching them if any.
pub struct ReplicatedRedis {
    dir: PathBuf,
    ports: Vec<u16>,
    nodes: Vec<Option<Child>>,
    sentinel_ports: Vec<u16>,
    sentinels: Vec<Child>,
}

impl ReplicatedRedis {
    /// Starts a primary and `replicas` replicas of it, and waits until every replica has
    /// synchronised (its link to the primary is up and the primary counts it).
    pub fn start(replicas: usize) -> anyhow::Result<ReplicatedRedis> {
        let mut redis = ReplicatedRedis {
            dir: temp_dir("redis-replicated")?,
            ports: Vec::new(),
            nodes: Vec::new(),
            sentinel_ports: Vec::new(),
            sentinels: Vec::new(),
        };
        for _ in 0..=replicas {
            redis.ports.push(free_port()?);
            redis.nodes.push(None);
        }
        for i in 0..=replicas {
            redis.spawn(i)?;
        }
        for i in 0..=replicas {
            redis.wait_answers(i)?;
        }
        for i in 1..=replicas {
            redis.wait_synced(i)?;
        }
        Ok(redis)
    }

    /// [`ReplicatedRedis::start`], watched by `sentinels` sentinels (a majority of them
    /// is the quorum that fails the primary over) that consider a primary silent for
    /// `down_after_ms` lost. Returns once every sentinel knows every replica and the other
    /// sentinels.
    pub fn start_with_sentinels(
        replicas: usize,
        sentinels: usize,
        down_after_ms: u32,
    ) -> anyhow::Result<ReplicatedRedis> {
        let mut redis = ReplicatedRedis::start(replicas)?;
        for i in 0..sentinels {
            let port = free_port()?;
            let dir = redis.dir.join(format!("sentinel{i}"));
            std::fs::create_dir_all(&dir)?;
            // Sentinel rewrites its configuration file as it learns: one file each.
            let conf = dir.join("sentinel.conf");
            std::fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\ndir {dir}\n\
                     sentinel monitor {SENTINEL_NAME} 127.0.0.1 {primary} {quorum}\n\
                     sentinel down-after-milliseconds {SENTINEL_NAME} {down_after_ms}\n\
                     sentinel failover-timeout {SENTINEL_NAME} {FAILOVER_TIMEOUT_MS}\n\
                     sentinel parallel-syncs {SENTINEL_NAME} {replicas}\n",
                    dir = dir.display(),
                    primary = redis.ports[0],
                    quorum = sentinels / 2 + 1,
                ),
            )?;
            let child = Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdout(log_file(&dir, "sentinel.log")?)
                .stderr(Stdio::null())
                .spawn()
                .context("starting redis-server --sentinel")?;
            redis.sentinel_ports.push(port);
            redis.sentinels.push(child);
        }
        for &port in &redis.sentinel_ports {
            wait_until("sentinel knows the group", SYNC_TIMEOUT, || {
                cli(port, &["SENTINEL", "MASTER", SENTINEL_NAME]).is_ok_and(|info| {
                    let field = |name: &str| {
                        let lines: Vec<&str> = info.lines().map(str::trim).collect();
                        lines
                            .iter()
                            .position(|l| *l == name)
                            .and_then(|i| lines.get(i + 1))
                            .and_then(|v| v.parse::<usize>().ok())
                    };
                    field("num-slaves") == Some(replicas)
                        && field("num-other-sentinels") == Some(sentinels - 1)
                })
            })?;
        }
        Ok(redis)
    }

    /// The `redis+sentinel://` URL of the group (every sentinel, the primary's name).
    pub fn sentinel_url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinel_ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect();
        format!("redis+sentinel://{}/{SENTINEL_NAME}", hosts.join(","))
    }

    /// What the sentinels logged of failovers (a primary seen down, elections, promotion,
    /// replicas reconfigured, a demoted primary made a replica, the end): each sentinel's
    /// lines naming them, under a header naming the sentinel; then each node's lines on
    /// its role and replication links (made a primary or a replica, synchronised, a link
    /// lost). For a test to print when a failover took longer than it should.
    pub fn sentinel_events(&self) -> String {
        let mut out = String::new();
        for i in 0..self.sentinel_ports.len() {
            self.log_lines(
                &mut out,
                &format!("sentinel {i}"),
                &format!("sentinel{i}/sentinel.log"),
                &[
                    "failover",
                    "reconf",
                    "elected",
                    "promoted",
                    "switch-master",
                    "odown",
                    "sdown master",
                    "convert-to-slave",
                ],
            );
        }
        for i in 0..self.ports.len() {
            self.log_lines(
                &mut out,
                &format!("node {i} (port {})", self.ports[i]),
                &format!("n{i}/redis.log"),
                &[
                    "MASTER MODE",
                    "REPLICAOF",
                    "Connecting to MASTER",
                    "MASTER <-> REPLICA sync: Finished",
                    "Synchronization with replica",
                    "partial resynchronization",
                    "Connection with replica",
                    "Connection with master lost",
                ],
            );
        }
        out
    }

    /// Appends to `out` a `header:` line, then each line of the log at `path` (in the
    /// group's folder; none if unreadable) holding any of `words`, indented.
    fn log_lines(&self, out: &mut String, header: &str, path: &str, words: &[&str]) {
        let log = std::fs::read_to_string(self.dir.join(path)).unwrap_or_default();
        out.push_str(header);
        out.push_str(":\n");
        for line in log.lines().filter(|l| words.iter().any(|w| l.contains(w))) {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
    }

    /// Asks a sentinel to fail the primary over now, though it runs (`SENTINEL FAILOVER`:
    /// a switchover, as for maintenance).
    pub fn switch_over(&self) -> anyhow::Result<()> {
        let port = *self.sentinel_ports.first().context("no sentinel")?;
        let answer = cli(port, &["SENTINEL", "FAILOVER", SENTINEL_NAME])?;
        anyhow::ensure!(answer.trim() == "OK", "SENTINEL FAILOVER answered {answer}");
        Ok(())
    }

    /// Which node the sentinels name the primary (asking the first that answers).
    pub fn primary_by_sentinels(&self) -> anyhow::Result<usize> {
        for &port in &self.sentinel_ports {
            if let Ok(answer) = cli(
                port,
                &["SENTINEL", "get-master-addr-by-name", SENTINEL_NAME],
            ) {
                let named = answer
                    .lines()
                    .nth(1)
                    .and_then(|p| p.trim().parse::<u16>().ok());
                if let Some(i) = self.ports.iter().position(|&p| Some(p) == named) {
                    return Ok(i);
                }
            }
        }
        bail!("no sentinel names a primary among the nodes")
    }

    /// Starts node `i`: the primary as itself, a replica of the primary.
    fn spawn(&mut self, i: usize) -> anyhow::Result<()> {
        let node_dir = self.dir.join(format!("n{i}"));
        std::fs::create_dir_all(&node_dir)?;
        let mut command = Command::new("redis-server");
        command
            .args(["--port", &self.ports[i].to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--appendonly", "yes"])
            .args(["--appendfsync", "always"])
            // A replica (re)joining is synchronised at once, not after the 5 s a master
            // waits by default for more replicas to share one diskless transfer.
            .args(["--repl-diskless-sync-delay", "0"])
            .args(["--save", ""])
            .arg("--dir")
            .arg(&node_dir);
        if i > 0 {
            command.args(["--replicaof", "127.0.0.1", &self.ports[0].to_string()]);
        }
        let child = command
            .stdout(log_file(&node_dir, "redis.log")?)
            .stderr(Stdio::null())
            .spawn()
            .context("starting redis-server (is Redis 7 installed?)")?;
        self.nodes[i] = Some(child);
        Ok(())
    }

    fn wait_answers(&self, i: usize) -> anyhow::Result<()> {
        let port = self.ports[i];
        wait_until("redis node", SYNC_TIMEOUT, || cli(port, &["PING"]).is_ok())
    }

    /// Waits until replica `i`'s link to the primary is up and it has loaded the primary's
    /// data.
    pub fn wait_synced(&self, i: usize) -> anyhow::Result<()> {
        let port = self.ports[i];
        wait_until("replica synchronised", SYNC_TIMEOUT, || {
            cli(port, &["INFO", "replication"]).is_ok_and(|info| {
                info.contains("master_link_status:up") && info.contains("master_sync_in_progress:0")
            })
        })
    }

    /// How many replicas node `i` counts as online, attached and synchronised (`INFO
    /// replication`: each `slaveN:…,state=online,…`); an error if it does not answer.
    pub fn online_replicas(&self, i: usize) -> anyhow::Result<usize> {
        let info = cli(self.ports[i], &["INFO", "replication"])?;
        Ok(info
            .lines()
            .filter(|l| l.starts_with("slave") && l.contains("state=online"))
            .count())
    }

    /// The primary's URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.ports[0])
    }

    /// The port of node `i` (0: the primary).
    pub fn port(&self, i: usize) -> u16 {
        self.ports[i]
    }

    /// Runs a command on node `i` through `redis-cli` (bounded): its output.
    pub fn cli(&self, i: usize, args: &[&str]) -> anyhow::Result<String> {
        cli(self.ports[i], args)
    }

    /// Whether node `i` was killed (and not started again).
    pub fn is_down(&self, i: usize) -> bool {
        self.nodes[i].is_none()
    }

    /// Kills node `i` (SIGKILL).
    pub fn kill(&mut self, i: usize) -> anyhow::Result<()> {
        if let Some(mut child) = self.nodes[i].take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Restarts node `i` from its folder and waits until it answers (a replica: until it
    /// has synchronised again).
    pub fn restart(&mut self, i: usize) -> anyhow::Result<()> {
        self.spawn(i)?;
        self.wait_answers(i)?;
        if i > 0 {
            self.wait_synced(i)?;
        }
        Ok(())
    }

    /// Stops node `i` without ending it (SIGSTOP): its connections stay open and nothing
    /// answers on them.
    pub fn pause(&self, i: usize) -> anyhow::Result<()> {
        self.signal(i, "-STOP")
    }

    /// Lets a paused node `i` run again (SIGCONT).
    pub fn resume(&self, i: usize) -> anyhow::Result<()> {
        self.signal(i, "-CONT")
    }

    fn signal(&self, i: usize, signal: &str) -> anyhow::Result<()> {
        let Some(child) = &self.nodes[i] else {
            bail!("node {i} is not running");
        };
        let status = Command::new("kill")
            .arg(signal)
            .arg(child.id().to_string())
            .status()?;
        anyhow::ensure!(status.success(), "kill {signal} {}", child.id());
        Ok(())
    }
}

impl Drop for ReplicatedRedis {
    fn drop(&mut self) {
        for sentinel in &mut self.sentinels {
            let _ = sentinel.kill();
            let _ = sentinel.wait();
        }
        for node in self.nodes.iter_mut().flatten() {
            // A paused process ends on SIGKILL all the same.
            let _ = node.kill();
            let _ = node.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
