//! A throwaway Postgres primary with a synchronous streaming standby on loopback
//! (`initdb`, `pg_basebackup -R`, `pg_ctl`), for failover tests: the primary stopped at
//! once (immediate shutdown: no checkpoint, as in a crash), the standby promoted
//! (`pg_ctl promote`); and a [`Forwarder`], the one address the services use (as a
//! Kubernetes Service or a proxy in front of the current primary), switched to the
//! promoted standby. Both servers are stopped, and their folder removed, when the value
//! drops.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::net::{TcpListener, TcpStream};

use crate::cluster::{run_bounded, temp_dir, wait_until};
use crate::free_port;

/// How long a server may take to start, or the standby to catch up.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The folder of the Postgres binaries (`initdb`, `pg_ctl`, …): the newest under
/// `/usr/lib/postgresql`, or the `PATH`'s.
fn bin_dir() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|p| p.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop()
}

/// Whether the Postgres server binaries are installed (else the caller skips, saying so).
pub fn installed() -> bool {
    bin_dir().is_some()
}

/// A primary and its synchronous standby.
pub struct StreamingPair {
    bin: PathBuf,
    dir: PathBuf,
    /// Run the tools as `postgres` (Postgres refuses to run as root).
    as_postgres: bool,
    primary_port: u16,
    standby_port: u16,
}

impl StreamingPair {
    /// Starts a primary (`synchronous_standby_names = '*'`: a commit returns once the
    /// standby has flushed it) and a standby streaming from it, and waits until the
    /// standby is the synchronous one.
    pub fn start() -> anyhow::Result<StreamingPair> {
        let bin = bin_dir().context("no Postgres binaries under /usr/lib/postgresql")?;
        let as_postgres = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        let dir = temp_dir("postgres-pair")?;
        let pair = StreamingPair {
            bin,
            dir,
            as_postgres,
            primary_port: free_port()?,
            standby_port: free_port()?,
        };
        if as_postgres {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&pair.dir)
                .status()?;
            anyhow::ensure!(status.success(), "chown of {}", pair.dir.display());
        }
        let primary = pair.dir.join("primary");
        pair.tool(
            "initdb",
            &[
                "-D",
                &primary.display().to_string(),
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
            ],
        )?;
        std::fs::write(
            primary.join("postgresql.auto.conf"),
            format!(
                "port = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\n\
                 wal_level = replica\nmax_wal_senders = 4\nsynchronous_standby_names = '*'\n\
                 synchronous_commit = on\nfsync = off\nshared_buffers = 16MB\n",
                pair.primary_port,
                pair.dir.display(),
            ),
        )?;
        pair.pg_ctl(&primary, "start")?;
        let standby = pair.dir.join("standby");
        pair.tool(
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &pair.primary_port.to_string(),
                "-U",
                "postgres",
                "-D",
                &standby.display().to_string(),
                "-R",
                "-X",
                "stream",
            ],
        )?;
        // The copy carries the primary's settings: the standby gets its own port (and an
        // empty list of synchronous standbys, should it be promoted with none behind it).
        let mut conf = std::fs::read_to_string(standby.join("postgresql.auto.conf"))?;
        conf = conf.replace(
            &format!("port = {}", pair.primary_port),
            &format!("port = {}", pair.standby_port),
        );
        conf = conf.replace(
            "synchronous_standby_names = '*'",
            "synchronous_standby_names = ''",
        );
        std::fs::write(standby.join("postgresql.auto.conf"), conf)?;
        pair.pg_ctl(&standby, "start")?;
        let port = pair.primary_port;
        wait_until("the standby streaming synchronously", START_TIMEOUT, || {
            pair.psql(
                port,
                "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming' AND sync_state = 'sync'",
            )
            .is_ok_and(|n| n == "1")
        })?;
        Ok(pair)
    }

    /// Runs one of the Postgres tools (bounded), as `postgres` when this is root.
    fn tool(&self, name: &str, args: &[&str]) -> anyhow::Result<String> {
        let program = self.bin.join(name);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&program);
            c
        } else {
            Command::new(&program)
        };
        command.args(args).current_dir(&self.dir);
        let out = run_bounded(&mut command, START_TIMEOUT).with_context(|| name.to_owned())?;
        if !out.status.success() {
            bail!(
                "{name} {args:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    fn pg_ctl(&self, data: &Path, action: &str) -> anyhow::Result<()> {
        let log = data.with_extension("log");
        self.tool(
            "pg_ctl",
            &[
                "-D",
                &data.display().to_string(),
                "-l",
                &log.display().to_string(),
                "-w",
                action,
            ],
        )
        .map(|_| ())
    }

    /// One value from `sql` through `psql` on `port`.
    pub fn psql(&self, port: u16, sql: &str) -> anyhow::Result<String> {
        self.tool(
            "psql",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-Atc",
                sql,
            ],
        )
    }

    /// The primary's port.
    pub fn primary_port(&self) -> u16 {
        self.primary_port
    }

    /// The standby's port.
    pub fn standby_port(&self) -> u16 {
        self.standby_port
    }

    /// Stops the primary at once (immediate shutdown: every process ends without a
    /// checkpoint, as in a crash; the standby has every commit, being synchronous).
    pub fn kill_primary(&self) -> anyhow::Result<()> {
        let data = self.dir.join("primary");
        self.tool(
            "pg_ctl",
            &["-D", &data.display().to_string(), "-m", "immediate", "stop"],
        )
        .map(|_| ())
    }

    /// Promotes the standby (`pg_ctl promote`, waiting until it accepts writes).
    pub fn promote_standby(&self) -> anyhow::Result<()> {
        self.pg_ctl(&self.dir.join("standby"), "promote")
    }
}

impl Drop for StreamingPair {
    fn drop(&mut self) {
        for data in ["primary", "standby"] {
            let data = self.dir.join(data);
            let _ = self.tool(
                "pg_ctl",
                &["-D", &data.display().to_string(), "-m", "immediate", "stop"],
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A TCP forwarder on loopback: every connection it accepts is joined to the current
/// target port; switching the target drops the connections it carries (as a proxy or a
/// Service moving to another server does), and later ones go to the new target.
pub struct Forwarder {
    port: u16,
    target: Arc<AtomicU16>,
    /// Bumped on each switch: a carried connection ends when it changes.
    epoch: tokio::sync::watch::Sender<u64>,
    accept: tokio::task::JoinHandle<()>,
}

impl Forwarder {
    /// Listens on a free loopback port and forwards to `target`.
    pub async fn start(target: u16) -> anyhow::Result<Forwarder> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let target = Arc::new(AtomicU16::new(target));
        let (epoch, _) = tokio::sync::watch::channel(0u64);
        let accept = {
            let target = target.clone();
            let epoch = epoch.clone();
            tokio::spawn(async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    let to = target.load(Ordering::SeqCst);
                    let mut switched = epoch.subscribe();
                    tokio::spawn(async move {
                        let Ok(mut outbound) = TcpStream::connect(("127.0.0.1", to)).await else {
                            return;
                        };
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                            _ = switched.changed() => {}
                        }
                    });
                }
            })
        };
        Ok(Forwarder {
            port,
            target,
            epoch,
            accept,
        })
    }

    /// The port the services connect to.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Sends new connections to `target` and drops the ones carried so far.
    pub fn switch(&self, target: u16) {
        self.target.store(target, Ordering::SeqCst);
        self.epoch.send_modify(|e| *e += 1);
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.accept.abort();
        self.epoch.send_modify(|e| *e += 1);
    }
}
