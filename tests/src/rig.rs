//! The multi-instance rig: every service as its own `frontier <service>` process on
//! loopback, `instances` of each, on real Redis, NATS and Postgres. Each process keeps its
//! ports for its whole life, so one that is killed (SIGKILL) comes back where it was.
//!
//! Wiring: every gateway, matchmaker, clock and bot-worker names every game-session (a
//! balanced client); gateway and matchmaker `i` ask rating instance `i % n`, and gateway
//! `i` calls matchmaker `i % n`. Used by `make rig` (`src/bin/rig.rs`) and the chaos test
//! (`tests/chaos.rs`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The gateway's abuse limits raised far above what load from one address does.
pub const GENEROUS_GATEWAY_LIMITS: &[(&str, &str)] = &[
    ("--guest-limit", "100000/1s"),
    ("--register-limit", "100000/1s"),
    ("--login-limit", "100000/1s"),
    ("--login-free-failures", "100000"),
    ("--ws-per-address", "100000"),
    ("--ws-per-player", "1000"),
    ("--board-limit", "100000/1s"),
    ("--waiting-boards", "10000"),
    ("--hash-queue", "64"),
    ("--hash-rate", "100000"),
    ("--ws-rate", "1000"),
    ("--ws-burst", "1000"),
];

/// How long a process may take to answer `/readyz` after it was started.
const READY_WITHIN: Duration = Duration::from_secs(90);

/// A service of the platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Service {
    /// `frontier game-session`.
    GameSession,
    /// `frontier rating`.
    Rating,
    /// `frontier matchmaking`.
    Matchmaking,
    /// `frontier gateway`.
    Gateway,
    /// `frontier clock`.
    Clock,
    /// `frontier bot-worker`.
    BotWorker,
}

impl Service {
    /// Every service, in the order the rig starts them.
    pub const ALL: [Service; 6] = [
        Service::GameSession,
        Service::Rating,
        Service::Matchmaking,
        Service::Gateway,
        Service::Clock,
        Service::BotWorker,
    ];

    /// The subcommand of `frontier`.
    pub fn name(self) -> &'static str {
        match self {
            Service::GameSession => "game-session",
            Service::Rating => "rating",
            Service::Matchmaking => "matchmaking",
            Service::Gateway => "gateway",
            Service::Clock => "clock",
            Service::BotWorker => "bot-worker",
        }
    }

    fn listens(self) -> bool {
        !matches!(self, Service::Clock | Service::BotWorker)
    }
}

/// What the rig runs, and against what.
#[derive(Clone, Debug)]
pub struct RigConfig {
    /// The `frontier` binary.
    pub bin: PathBuf,
    /// Instances of every service (at least 1).
    pub instances: usize,
    /// Redis URL.
    pub redis_url: String,
    /// NATS URL (with JetStream).
    pub nats_url: String,
    /// Postgres database URL (the gateway's accounts and rating's records).
    pub database_url: String,
    /// The namespace (Redis key and NATS subject prefix).
    pub namespace: String,
    /// The JWT secret every gateway shares.
    pub jwt_secret: String,
    /// Extra flags for every instance of a service.
    pub flags: Vec<(Service, Vec<String>)>,
    /// Extra flags for one instance, `(service, index)`, after the service's `flags`.
    pub instance_flags: Vec<((Service, usize), Vec<String>)>,
    /// Where each process's output goes (`<service>-<i>.log`, appended across restarts);
    /// `None`: discarded.
    pub logs: Option<PathBuf>,
}

/// One process of the rig.
#[derive(Debug)]
pub struct Instance {
    /// Its service.
    pub service: Service,
    /// Its index among its service's instances.
    pub index: usize,
    /// Its gRPC or HTTP/WebSocket address (clock and bot-worker: none).
    pub listen: Option<SocketAddr>,
    /// Its admin address (`/metrics`, `/healthz`, `/readyz`).
    pub admin: SocketAddr,
    /// How many times it was started.
    pub starts: u32,
    /// How many times the rig killed it.
    pub kills: u32,
    /// How many times the rig stopped it with SIGTERM (a rolling upgrade).
    pub stops: u32,
    args: Vec<String>,
    child: Option<Child>,
}

impl Instance {
    /// `<service>-<index>`.
    pub fn label(&self) -> String {
        format!("{}-{}", self.service.name(), self.index)
    }

    /// Its process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

/// A running rig. Dropping it kills every process.
#[derive(Debug)]
pub struct Rig {
    config: RigConfig,
    /// Every process, services in [`Service::ALL`] order.
    pub instances: Vec<Instance>,
}

/// A free loopback port (bound, read, released: the child binds it right after), from
/// outside the ephemeral range so that nothing takes it while its instance is killed
/// (`frontier_testkit::free_port`).
fn free_addr() -> anyhow::Result<SocketAddr> {
    Ok(SocketAddr::from((
        [127, 0, 0, 1],
        frontier_testkit::free_port()?,
    )))
}

impl Rig {
    /// Starts every instance of every service and waits until each answers `/readyz`.
    pub async fn start(config: RigConfig) -> anyhow::Result<Rig> {
        anyhow::ensure!(
            config.bin.is_file(),
            "no frontier binary at {} (build it first: cargo build -p frontier --bin frontier)",
            config.bin.display()
        );
        if let Some(dir) = &config.logs {
            std::fs::create_dir_all(dir)?;
        }
        let n = config.instances.max(1);
        let mut addrs = std::collections::HashMap::new();
        for service in Service::ALL {
            for i in 0..n {
                let listen = if service.listens() {
                    Some(free_addr()?)
                } else {
                    None
                };
                addrs.insert((service, i), (listen, free_addr()?));
            }
        }
        let url = |service: Service, i: usize| -> String {
            let (listen, _) = addrs[&(service, i % n)];
            format!("http://{}", listen.expect("a service that listens"))
        };
        let sessions: Vec<String> = (0..n).map(|i| url(Service::GameSession, i)).collect();
        let sessions = sessions.join(",");
        let mut rig = Rig {
            config: config.clone(),
            instances: Vec::new(),
        };
        for service in Service::ALL {
            for i in 0..n {
                let (listen, admin) = addrs[&(service, i)];
                let mut args = vec![
                    service.name().to_owned(),
                    "--admin-listen".into(),
                    admin.to_string(),
                ];
                if let Some(listen) = listen {
                    args.extend(["--listen".into(), listen.to_string()]);
                }
                match service {
                    Service::GameSession | Service::Rating => {}
                    Service::Matchmaking => args.extend([
                        "--game-session-urls".into(),
                        sessions.clone(),
                        "--rating-url".into(),
                        url(Service::Rating, i),
                    ]),
                    Service::Gateway => {
                        args.extend([
                            "--game-session-urls".into(),
                            sessions.clone(),
                            "--rating-url".into(),
                            url(Service::Rating, i),
                            // Every matchmaking instance: the gateway fails over between
                            // them, so killing one refuses no seek.
                            "--matchmaking-url".into(),
                            (0..n)
                                .map(|k| url(Service::Matchmaking, (i + k) % n))
                                .collect::<Vec<_>>()
                                .join(","),
                            "--public-url".into(),
                            format!("http://{}", listen.expect("a gateway listens")),
                        ]);
                        // A limit the config sets replaces the generous one (a flag may
                        // be given once).
                        let set_here = |flag: &str| {
                            config.flags.iter().any(|(s, flags)| {
                                *s == Service::Gateway && flags.iter().any(|f| f == flag)
                            })
                        };
                        for (flag, value) in GENEROUS_GATEWAY_LIMITS {
                            if !set_here(flag) {
                                args.extend([(*flag).to_owned(), (*value).to_owned()]);
                            }
                        }
                    }
                    Service::Clock | Service::BotWorker => {
                        args.extend(["--game-session-urls".into(), sessions.clone()]);
                    }
                }
                for (s, flags) in &config.flags {
                    if *s == service {
                        args.extend(flags.iter().cloned());
                    }
                }
                for (at, flags) in &config.instance_flags {
                    if *at == (service, i) {
                        args.extend(flags.iter().cloned());
                    }
                }
                rig.instances.push(Instance {
                    service,
                    index: i,
                    listen,
                    admin,
                    starts: 0,
                    kills: 0,
                    stops: 0,
                    args,
                    child: None,
                });
            }
        }
        // Services in order, the instances of one service together.
        for service in Service::ALL {
            let ids: Vec<usize> = (0..rig.instances.len())
                .filter(|&k| rig.instances[k].service == service)
                .collect();
            for &k in &ids {
                rig.spawn(k)?;
            }
            for &k in &ids {
                rig.wait_ready(k).await?;
            }
        }
        Ok(rig)
    }

    /// Every gateway's HTTP/WebSocket address.
    pub fn gateways(&self) -> Vec<SocketAddr> {
        self.of(Service::Gateway)
            .filter_map(|k| self.instances[k].listen)
            .collect()
    }

    /// The indexes (into [`Rig::instances`]) of a service's instances.
    pub fn of(&self, service: Service) -> impl Iterator<Item = usize> + '_ {
        (0..self.instances.len()).filter(move |&k| self.instances[k].service == service)
    }

    fn spawn(&mut self, k: usize) -> anyhow::Result<()> {
        let config = &self.config;
        let instance = &mut self.instances[k];
        let (stdout, stderr) = match &config.logs {
            Some(dir) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join(format!("{}.log", instance.label())))?;
                (Stdio::from(file.try_clone()?), Stdio::from(file))
            }
            None => (Stdio::null(), Stdio::null()),
        };
        let child = Command::new(&config.bin)
            .args(&instance.args)
            .env("FRONTIER_REDIS_URL", &config.redis_url)
            .env("FRONTIER_NATS_URL", &config.nats_url)
            .env("FRONTIER_DATABASE_URL", &config.database_url)
            .env("FRONTIER_NAMESPACE", &config.namespace)
            .env("FRONTIER_JWT_SECRET", &config.jwt_secret)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("starting {}", config.bin.display()))?;
        instance.child = Some(child);
        instance.starts += 1;
        Ok(())
    }

    /// Waits until instance `k` answers `/readyz` with 200 (every dependency it has
    /// answers) and, if it listens, accepts connections on its port.
    pub async fn wait_ready(&mut self, k: usize) -> anyhow::Result<()> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let instance = &mut self.instances[k];
            if let Some(child) = &mut instance.child
                && let Some(status) = child.try_wait()?
            {
                anyhow::bail!("{} exited at start: {status}", instance.label());
            }
            let admin_ready = matches!(http_get(instance.admin, "/readyz").await, Ok(200));
            let listening = match instance.listen {
                Some(addr) => tokio::net::TcpStream::connect(addr).await.is_ok(),
                None => true,
            };
            if admin_ready && listening {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "{} not ready within {READY_WITHIN:?}",
                instance.label()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills instance `k` with SIGKILL and reaps it.
    pub fn kill(&mut self, k: usize) -> anyhow::Result<()> {
        let instance = &mut self.instances[k];
        let mut child = instance
            .child
            .take()
            .with_context(|| format!("{} is not running", instance.label()))?;
        // `Child::kill` sends SIGKILL on Unix.
        child.kill()?;
        child.wait()?;
        instance.kills += 1;
        Ok(())
    }

    /// Stops instance `k` as an orchestrator does before replacing it: SIGTERM, then its
    /// drain, waited for up to `within` (then SIGKILL). Its exit status.
    pub async fn terminate(&mut self, k: usize, within: Duration) -> anyhow::Result<ExitStatus> {
        let instance = &mut self.instances[k];
        let mut child = instance
            .child
            .take()
            .with_context(|| format!("{} is not running", instance.label()))?;
        let sent = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()?;
        anyhow::ensure!(sent.success(), "kill -TERM {}", child.id());
        let deadline = Instant::now() + within;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if Instant::now() > deadline {
                child.kill()?;
                break child.wait()?;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        instance.stops += 1;
        Ok(status)
    }

    /// Adds flags to instance `k`'s command line, for its next start (the "new version"
    /// of a rolling upgrade).
    pub fn add_flags(&mut self, k: usize, flags: &[&str]) {
        self.instances[k]
            .args
            .extend(flags.iter().map(|f| (*f).to_owned()));
    }

    /// Starts instance `k` again (same ports, same flags) and waits until it is ready.
    pub async fn restart(&mut self, k: usize) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.instances[k].child.is_none(),
            "{} still runs",
            self.instances[k].label()
        );
        self.spawn(k)?;
        self.wait_ready(k).await
    }

    /// Instances that exited although nobody killed them (a crash), with their status.
    pub fn exited(&mut self) -> anyhow::Result<Vec<(String, ExitStatus)>> {
        let mut out = Vec::new();
        for instance in &mut self.instances {
            if let Some(child) = &mut instance.child
                && let Some(status) = child.try_wait()?
            {
                out.push((instance.label(), status));
            }
        }
        Ok(out)
    }

    /// Kills every process.
    pub fn stop(&mut self) {
        for instance in &mut self.instances {
            if let Some(mut child) = instance.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A minimal HTTP/1.1 GET on loopback: the status code.
pub async fn http_get(addr: SocketAddr, path: &str) -> anyhow::Result<u16> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(
                format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            )
            .await?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await?;
        let text = String::from_utf8_lossy(&response);
        let status = text
            .split_whitespace()
            .nth(1)
            .context("a status line")?
            .parse()?;
        anyhow::Ok(status)
    };
    tokio::time::timeout(Duration::from_secs(5), exchange)
        .await
        .context("no answer within 5 s")?
}
