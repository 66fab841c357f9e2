//! The black-box harness: a platform of real gateways, game-sessions and a rating service,
//! started in this process on port 0 against the real Redis, NATS and Postgres of the test
//! run, and WebSocket clients that record every frame they receive.

#![allow(dead_code, unreachable_pub)]

pub mod bots;
pub mod leak;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser as _;
use frontier_platform::Shutdown;
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

/// The JWT secret every gateway of a test platform shares.
pub const JWT_SECRET: &str = "integration-test-secret-0123456789abcdef";

/// Abuse limits far above what any test does (a test that checks a limit sets its own).
pub const GENEROUS_LIMITS: &[(&str, &str)] = &[
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
];

/// How long a test waits for a frame before failing.
pub const WAIT: Duration = Duration::from_secs(30);

/// Where a platform's Redis and NATS are.
#[derive(Debug, Clone)]
pub struct Servers {
    /// Redis URL (comma-separated seeds: a Redis Cluster).
    pub redis: String,
    /// NATS URL (comma-separated seeds: a NATS cluster).
    pub nats: String,
    /// Replicas of the JetStream streams the services create.
    pub replicas: u8,
}

impl Servers {
    /// The test run's Redis and NATS (one server each).
    pub fn of_the_run() -> Servers {
        Servers {
            redis: frontier_testkit::redis_url(),
            nats: frontier_testkit::nats_url(),
            replicas: 1,
        }
    }
}

/// A running platform.
pub struct Platform {
    /// Gateway HTTP/WebSocket addresses.
    pub gateways: Vec<SocketAddr>,
    /// game-session gRPC addresses.
    pub sessions: Vec<SocketAddr>,
    /// The namespace.
    pub namespace: String,
    /// The database URL.
    pub database_url: String,
    /// What the rating consumer did.
    pub rating: Arc<frontier_rating::ConsumerStats>,
    /// The rating service's read API.
    pub rating_url: String,
    /// Matchmaking instances' gRPC addresses (with [`Platform::start_matchmade`]).
    pub matchmakers: Vec<SocketAddr>,
    /// Its Redis and NATS.
    pub servers: Arc<Servers>,
    shutdowns: Vec<Shutdown>,
    tasks: Vec<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

/// What a [`Platform`] constructor sets beyond its servers and instance counts; each
/// constructor names the few it sets, the rest as [`Default`] has them.
#[derive(Default)]
struct Options<'a> {
    /// Hidden games' layout.
    layout: Option<&'a str>,
    /// Extra flags for every game-session.
    session_flags: &'a [&'a str],
    /// Gateway flags that replace the harness's own.
    gateway_flags: &'a [(&'a str, &'a str)],
    /// Matchmaking instances, each given `matchmaking_flags`.
    matchmakers: usize,
    matchmaking_flags: &'a [&'a str],
    /// The game-sessions' clock (the system's when `None`).
    session_clock: Option<Arc<dyn frontier_platform::time::Clock>>,
}

impl Platform {
    /// Starts `sessions` game-sessions and `gateways` gateways; gateway `i` talks to
    /// game-session `i % sessions` only, so two players on different gateways have their
    /// moves served by different game-session instances. Hidden games use `layout`.
    pub async fn start(
        gateways: usize,
        sessions: usize,
        layout: Option<&str>,
    ) -> anyhow::Result<Platform> {
        Platform::start_with(gateways, sessions, layout, &[], &[]).await
    }

    /// As [`Platform::start`], the game-sessions reading time from `clock` (a
    /// [`frontier_platform::time::ManualClock`]): a test then says how long a player
    /// thought, whatever the machine's scheduling makes of the real time in between.
    #[allow(dead_code)] // Only the clock tests hold time.
    pub async fn start_with_session_clock(
        gateways: usize,
        sessions: usize,
        clock: Arc<dyn frontier_platform::time::Clock>,
    ) -> anyhow::Result<Platform> {
        Platform::start_inner(
            &Servers::of_the_run(),
            gateways,
            sessions,
            Options {
                session_clock: Some(clock),
                ..Options::default()
            },
        )
        .await
    }

    /// As [`Platform::start`], with `matchmakers` matchmaking instances (each given
    /// `matchmaking_flags`); gateway `i` calls instance `i % matchmakers`, and every
    /// instance creates games on every game-session.
    pub async fn start_matchmade(
        gateways: usize,
        sessions: usize,
        matchmakers: usize,
        matchmaking_flags: &[&str],
    ) -> anyhow::Result<Platform> {
        Platform::start_inner(
            &Servers::of_the_run(),
            gateways,
            sessions,
            Options {
                matchmakers,
                matchmaking_flags,
                ..Options::default()
            },
        )
        .await
    }

    /// As [`Platform::start_matchmade`], with gateway flags that replace the harness's own
    /// (see [`Platform::start_with`]).
    pub async fn start_matchmade_with(
        gateways: usize,
        sessions: usize,
        matchmakers: usize,
        matchmaking_flags: &[&str],
        gateway_flags: &[(&str, &str)],
    ) -> anyhow::Result<Platform> {
        Platform::start_inner(
            &Servers::of_the_run(),
            gateways,
            sessions,
            Options {
                gateway_flags,
                matchmakers,
                matchmaking_flags,
                ..Options::default()
            },
        )
        .await
    }

    /// As [`Platform::start`], with extra flags for every game-session, and gateway flags
    /// (`("--login-limit", "3/1s")`, …) that replace the harness's own. The harness raises every abuse limit far above what a
    /// test does, so only a test that sets a limit meets it.
    pub async fn start_with(
        gateways: usize,
        sessions: usize,
        layout: Option<&str>,
        session_flags: &[&str],
        gateway_flags: &[(&str, &str)],
    ) -> anyhow::Result<Platform> {
        Platform::start_inner(
            &Servers::of_the_run(),
            gateways,
            sessions,
            Options {
                layout,
                session_flags,
                gateway_flags,
                ..Options::default()
            },
        )
        .await
    }

    /// As [`Platform::start_with`], with `matchmakers` matchmaking instances (each given
    /// `matchmaking_flags`).
    #[allow(dead_code)] // Not every test file needs quick match.
    pub async fn start_with_matchmaking(
        gateways: usize,
        sessions: usize,
        layout: Option<&str>,
        session_flags: &[&str],
        (matchmakers, matchmaking_flags): (usize, &[&str]),
    ) -> anyhow::Result<Platform> {
        Platform::start_inner(
            &Servers::of_the_run(),
            gateways,
            sessions,
            Options {
                layout,
                session_flags,
                matchmakers,
                matchmaking_flags,
                ..Options::default()
            },
        )
        .await
    }

    /// As [`Platform::start_with`] (no gateway flags), on these servers.
    #[allow(dead_code)] // Only the cluster tests start on other servers.
    pub async fn start_on(
        servers: &Servers,
        gateways: usize,
        sessions: usize,
        layout: Option<&str>,
        session_flags: &[&str],
    ) -> anyhow::Result<Platform> {
        Platform::start_inner(
            servers,
            gateways,
            sessions,
            Options {
                layout,
                session_flags,
                ..Options::default()
            },
        )
        .await
    }

    async fn start_inner(
        servers: &Servers,
        gateways: usize,
        sessions: usize,
        options: Options<'_>,
    ) -> anyhow::Result<Platform> {
        let Options {
            layout,
            session_flags,
            gateway_flags,
            matchmakers,
            matchmaking_flags,
            session_clock,
        } = options;
        let namespace = frontier_testkit::unique_namespace();
        let database_url = frontier_testkit::fresh_database().await?;
        let mut platform = Platform {
            gateways: Vec::new(),
            sessions: Vec::new(),
            namespace: namespace.clone(),
            database_url: database_url.clone(),
            rating: Arc::default(),
            rating_url: String::new(),
            matchmakers: Vec::new(),
            servers: Arc::new(servers.clone()),
            shutdowns: Vec::new(),
            tasks: Vec::new(),
        };
        for _ in 0..sessions {
            let mut args = vec![
                "game-session".to_owned(),
                "--redis-url".into(),
                servers.redis.clone(),
                "--nats-url".into(),
                servers.nats.clone(),
                "--namespace".into(),
                namespace.clone(),
                "--outbox-interval".into(),
                "1s".into(),
                "--nats-stream-replicas".into(),
                servers.replicas.to_string(),
            ];
            if let Some(layout) = layout {
                args.push("--test-fixed-layout".into());
                args.push(layout.to_owned());
            }
            args.extend(session_flags.iter().map(|f| (*f).to_owned()));
            let config = frontier_game_session::Config::try_parse_from(args)?;
            let clock = session_clock
                .clone()
                .unwrap_or_else(|| Arc::new(frontier_platform::time::SystemClock));
            let service = frontier_game_session::build_with_clock(&config, clock).await?;
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            platform.sessions.push(listener.local_addr()?);
            let shutdown = Shutdown::new();
            platform.shutdowns.push(shutdown.clone());
            platform
                .tasks
                .push(tokio::spawn(service.serve(listener, shutdown)));
        }
        // One rating service (consumer and read API), so finished games reach Postgres and
        // the dashboard as in production.
        let rating_url = {
            let pool = sqlx_pool(&database_url).await?;
            frontier_rating::MIGRATOR.run(&pool).await?;
            let store = frontier_rating::PgStore::new(pool);
            let nats = frontier_platform::streams::connect(&servers.nats)
                .await
                .map_err(anyhow::Error::msg)?;
            let ns = frontier_platform::Namespace::new(&namespace).map_err(anyhow::Error::msg)?;
            let shutdown = Shutdown::new();
            platform.shutdowns.push(shutdown.clone());
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            let url = format!("http://{}", listener.local_addr()?);
            platform.tasks.push(tokio::spawn(frontier_rating::serve_api(
                listener,
                frontier_rating::grpc::RatingsService::new(
                    store.clone(),
                    Arc::new(frontier_platform::time::SystemClock),
                ),
                shutdown.clone(),
            )));
            let rating = platform.rating.clone();
            let stream_replicas = servers.replicas;
            platform.tasks.push(tokio::spawn(async move {
                let settings = frontier_rating::ConsumerSettings {
                    ack_wait: Duration::from_secs(5),
                    stream_replicas,
                    ..frontier_rating::ConsumerSettings::named("rating")
                };
                frontier_rating::consume(store, nats, &ns, &settings, rating, shutdown).await
            }));
            url
        };
        platform.rating_url = rating_url.clone();
        let session_urls: Vec<String> = platform
            .sessions
            .iter()
            .map(|s| format!("http://{s}"))
            .collect();
        for _ in 0..matchmakers {
            let mut args = vec![
                "matchmaking".to_owned(),
                "--game-session-urls".into(),
                session_urls.join(","),
                "--rating-url".into(),
                rating_url.clone(),
                "--redis-url".into(),
                servers.redis.clone(),
                "--nats-url".into(),
                servers.nats.clone(),
                "--namespace".into(),
                namespace.clone(),
            ];
            args.extend(matchmaking_flags.iter().map(|f| (*f).to_owned()));
            let config = frontier_matchmaking::Config::try_parse_from(args)?;
            let service = frontier_matchmaking::build(&config).await?;
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            platform.matchmakers.push(listener.local_addr()?);
            let shutdown = Shutdown::new();
            platform.shutdowns.push(shutdown.clone());
            platform
                .tasks
                .push(tokio::spawn(service.serve(listener, shutdown)));
        }
        for i in 0..gateways {
            let session = platform.sessions[i % sessions];
            let mut own = vec![
                ("--game-session-urls", format!("http://{session}")),
                ("--nats-url", servers.nats.clone()),
                ("--database-url", database_url.clone()),
                ("--namespace", namespace.clone()),
                ("--jwt-secret", JWT_SECRET.into()),
                ("--public-url", "https://frontier.test".into()),
                ("--rating-url", rating_url.clone()),
                ("--redis-url", servers.redis.clone()),
            ];
            if !platform.matchmakers.is_empty() {
                own.push((
                    "--matchmaking-url",
                    format!(
                        "http://{}",
                        platform.matchmakers[i % platform.matchmakers.len()]
                    ),
                ));
            }
            own.extend(GENEROUS_LIMITS.iter().map(|(f, v)| (*f, (*v).to_owned())));
            // A test's flag replaces the harness's own; `{matchmakers}` in its value stands
            // for every matchmaking instance's URL, comma-separated.
            let every_matchmaker = platform
                .matchmakers
                .iter()
                .map(|m| format!("http://{m}"))
                .collect::<Vec<_>>()
                .join(",");
            let mut args = vec!["gateway".to_owned()];
            for (flag, value) in own
                .into_iter()
                .filter(|(flag, _)| !gateway_flags.iter().any(|(f, _)| f == flag))
                .chain(
                    gateway_flags
                        .iter()
                        .map(|(f, v)| (*f, v.replace("{matchmakers}", &every_matchmaker))),
                )
            {
                args.push(flag.to_owned());
                args.push(value);
            }
            let config = frontier_gateway::Config::try_parse_from(args)?;
            let shutdown = Shutdown::new();
            let service = frontier_gateway::build(&config).await?;
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            platform.gateways.push(listener.local_addr()?);
            platform.shutdowns.push(shutdown.clone());
            platform
                .tasks
                .push(tokio::spawn(service.serve(listener, shutdown)));
        }
        Ok(platform)
    }

    /// Starts a clock service for this platform's game-sessions (flag falls, first-move
    /// limits), as in production.
    #[allow(dead_code)] // Not every test file needs a clock.
    pub async fn start_clock(&mut self) -> anyhow::Result<()> {
        let urls: Vec<String> = self
            .sessions
            .iter()
            .map(|s| format!("http://{s}"))
            .collect();
        let config = frontier_clock::Config::try_parse_from([
            "clock".to_owned(),
            "--redis-url".into(),
            self.servers.redis.clone(),
            "--namespace".into(),
            self.namespace.clone(),
            "--game-session-urls".into(),
            urls.join(","),
        ])?;
        let service = frontier_clock::build(&config).await?;
        let shutdown = Shutdown::new();
        self.shutdowns.push(shutdown.clone());
        self.tasks.push(tokio::spawn(service.serve(shutdown)));
        Ok(())
    }

    /// Starts `n` real bot-workers sharing the bot-job consumer; `max_nodes` caps every
    /// decision (a test hook) so whole games stay quick.
    #[allow(dead_code)] // Not every test file plays the computer.
    pub async fn start_bot_workers(&mut self, n: usize, max_nodes: u64) -> anyhow::Result<()> {
        let urls: Vec<String> = self
            .sessions
            .iter()
            .map(|s| format!("http://{s}"))
            .collect();
        for _ in 0..n {
            let config = frontier_bot_worker::Config::try_parse_from([
                "bot-worker".to_owned(),
                "--nats-url".into(),
                self.servers.nats.clone(),
                "--namespace".into(),
                self.namespace.clone(),
                "--game-session-urls".into(),
                urls.join(","),
                "--concurrency".into(),
                "2".into(),
                "--test-max-nodes".into(),
                max_nodes.to_string(),
            ])?;
            let service = frontier_bot_worker::build(&config).await?;
            let shutdown = Shutdown::new();
            self.shutdowns.push(shutdown.clone());
            self.tasks.push(tokio::spawn(service.serve(shutdown)));
        }
        Ok(())
    }

    /// A gateway's base URL.
    pub fn http(&self, gateway: usize) -> String {
        format!("http://{}", self.gateways[gateway])
    }

    /// Stops everything and removes the test's stream.
    pub async fn stop(self) {
        for s in &self.shutdowns {
            s.trigger();
        }
        for t in self.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(5), t).await;
        }
        if let Ok(client) = frontier_platform::streams::connect(&self.servers.nats).await
            && let Ok(ns) = frontier_platform::Namespace::new(&self.namespace)
        {
            let js = async_nats::jetstream::new(client);
            let _ = js.delete_stream(ns.finished_games_stream()).await;
            let _ = js.delete_stream(ns.bot_jobs_stream()).await;
        }
    }
}

async fn sqlx_pool(url: &str) -> anyhow::Result<sqlx::PgPool> {
    Ok(sqlx::PgPool::connect(url).await?)
}

/// A minimal HTTP/1.1 GET: status and body text.
pub async fn get(addr: SocketAddr, path: &str) -> anyhow::Result<(u16, String)> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let text = exchange(addr, path, &request).await?;
    let status: u16 = text
        .split_whitespace()
        .nth(1)
        .context("status line")?
        .parse()?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    // Responses may be chunked: join the chunks.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, tail)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 || tail.len() < n {
                break;
            }
            out.push_str(&tail[..n]);
            rest = tail[n..].trim_start_matches("\r\n");
        }
        out
    } else {
        body.to_owned()
    };
    Ok((status, body))
}

/// A minimal HTTP/1.1 POST (the tests need no HTTP client crate for three endpoints).
pub async fn post(addr: SocketAddr, path: &str, body: &str) -> anyhow::Result<(u16, Value)> {
    let response = post_with(addr, path, &[], body).await?;
    Ok((response.status, response.body))
}

/// Sends one HTTP/1.1 request (`Connection: close`) and reads the whole answer, each step
/// within [`WAIT`]: the answer as text.
async fn exchange(addr: SocketAddr, path: &str, request: &str) -> anyhow::Result<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::time::timeout(WAIT, tokio::net::TcpStream::connect(addr))
        .await
        .with_context(|| format!("{addr}: not connected within {WAIT:?}"))??;
    stream.write_all(request.as_bytes()).await?;
    let mut response = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut response))
        .await
        .with_context(|| format!("{path} on {addr}: no whole answer within {WAIT:?}"))??;
    Ok(String::from_utf8_lossy(&response).into_owned())
}

/// An HTTP response: status, headers (names lower-cased) and JSON body.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` if it is not JSON).
    pub body: Value,
}

impl Response {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A minimal HTTP/1.1 POST with extra headers (`X-Forwarded-For`, …).
pub async fn post_with(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> anyhow::Result<Response> {
    request(addr, "POST", path, headers, body).await
}

/// A minimal HTTP/1.1 request of any method with extra headers (`Authorization`, …) and a
/// JSON body (empty: none).
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> anyhow::Result<Response> {
    let extra: String = headers
        .iter()
        .map(|(n, v)| format!("{n}: {v}\r\n"))
        .collect();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        body.len()
    );
    let text = exchange(addr, path, &request).await?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .context("status line")?
        .parse()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let json_start = body.find('{').unwrap_or(0);
    let json_end = body.rfind('}').map_or(body.len(), |i| i + 1);
    let body = serde_json::from_str(&body[json_start..json_end]).unwrap_or(Value::Null);
    Ok(Response {
        status,
        headers,
        body,
    })
}

/// A guest token.
pub async fn guest_token(addr: SocketAddr) -> anyhow::Result<(String, String)> {
    let (status, body) = post(addr, "/api/guest", "").await?;
    anyhow::ensure!(status == 201, "guest: {status} {body}");
    Ok((
        body["token"].as_str().context("token")?.to_owned(),
        body["player"]["id"].as_str().context("id")?.to_owned(),
    ))
}

/// Registers `name` (password "a long passphrase"): its token and player id.
#[allow(dead_code)] // Not every test file registers players this way.
pub async fn register(gw: SocketAddr, name: &str) -> anyhow::Result<(String, String)> {
    let (status, body) = post(
        gw,
        "/api/register",
        &json!({"username": name, "password": "a long passphrase"}).to_string(),
    )
    .await?;
    anyhow::ensure!(status == 201, "register: {status} {body}");
    Ok((
        body["token"].as_str().context("token")?.to_owned(),
        body["player"]["id"].as_str().context("id")?.to_owned(),
    ))
}

/// Signs `name` in again (registered by [`register`]): a fresh token.
#[allow(dead_code)] // Not every test file signs in again.
pub async fn login(gw: SocketAddr, name: &str) -> anyhow::Result<String> {
    let (status, body) = post(
        gw,
        "/api/login",
        &json!({"username": name, "password": "a long passphrase"}).to_string(),
    )
    .await?;
    anyhow::ensure!(status == 200, "login: {status} {body}");
    Ok(body["token"].as_str().context("token")?.to_owned())
}

/// A WebSocket client that keeps every frame it received.
pub struct Client {
    ws: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    /// Every text frame received, in order.
    pub log: Arc<Mutex<Vec<Value>>>,
    /// The player id, once authenticated.
    pub player_id: String,
    /// A label for messages.
    pub name: String,
    /// Frames read while waiting for another, not yet taken by a wait.
    unread: std::collections::VecDeque<Value>,
}

impl Client {
    /// Connects to a gateway (not yet authenticated); reads the welcome.
    pub async fn connect(addr: SocketAddr, name: &str) -> anyhow::Result<Client> {
        let (ws, _) = tokio::time::timeout(
            WAIT,
            tokio_tungstenite::connect_async_with_config(format!("ws://{addr}/ws/v1"), None, true),
        )
        .await
        .with_context(|| format!("{name}: no WebSocket to {addr} within {WAIT:?}"))??;
        let mut client = Client {
            ws,
            log: Arc::default(),
            player_id: String::new(),
            name: name.to_owned(),
            unread: Default::default(),
        };
        let welcome = client.next().await?;
        anyhow::ensure!(
            welcome["type"] == "welcome" && welcome["protocol"] == 1,
            "{welcome}"
        );
        Ok(client)
    }

    /// Connects and authenticates as a new guest.
    pub async fn guest(addr: SocketAddr, name: &str) -> anyhow::Result<Client> {
        let (token, id) = guest_token(addr).await?;
        Client::with_token(addr, name, &token, &id).await
    }

    /// Connects and authenticates with a token.
    pub async fn with_token(
        addr: SocketAddr,
        name: &str,
        token: &str,
        id: &str,
    ) -> anyhow::Result<Client> {
        let mut client = Client::connect(addr, name).await?;
        client.send(json!({"type": "auth", "token": token})).await?;
        let reply = client.next().await?;
        anyhow::ensure!(reply["type"] == "authenticated", "{}: {reply}", client.name);
        client.player_id = id.to_owned();
        Ok(client)
    }

    /// Sends a JSON message.
    pub async fn send(&mut self, value: Value) -> anyhow::Result<()> {
        self.ws
            .send(Message::Text(value.to_string().into()))
            .await?;
        Ok(())
    }

    /// Sends raw text.
    pub async fn send_raw(&mut self, text: String) -> anyhow::Result<()> {
        self.ws.send(Message::Text(text.into())).await?;
        Ok(())
    }

    /// The next text frame (recorded), within [`WAIT`].
    pub async fn next(&mut self) -> anyhow::Result<Value> {
        if let Some(v) = self.unread.pop_front() {
            return Ok(v);
        }
        self.read().await
    }

    async fn read(&mut self) -> anyhow::Result<Value> {
        loop {
            let message = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .with_context(|| format!("{}: no frame within {WAIT:?}", self.name))?
                .with_context(|| format!("{}: connection closed", self.name))??;
            match message {
                Message::Text(text) => {
                    let value: Value = serde_json::from_str(&text)?;
                    self.log.lock().expect("log").push(value.clone());
                    return Ok(value);
                }
                Message::Close(frame) => {
                    anyhow::bail!("{}: closed by the server: {frame:?}", self.name)
                }
                _ => {}
            }
        }
    }

    /// The first frame that matches, from those read but not yet taken, then from the
    /// wire; frames passed over stay available to later waits.
    pub async fn until(
        &mut self,
        what: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> anyhow::Result<Value> {
        if let Some(i) = self.unread.iter().position(&pred) {
            return Ok(self.unread.remove(i).expect("index is in range"));
        }
        loop {
            let v = self
                .read()
                .await
                .with_context(|| format!("waiting for {what}"))?;
            if pred(&v) {
                return Ok(v);
            }
            self.unread.push_back(v);
        }
    }

    /// Forgets frames read but not taken (they stay in the log).
    pub fn discard_unread(&mut self) {
        self.unread.clear();
    }

    /// Waits for the event of `version` in `game`.
    pub async fn event(&mut self, game: &str, version: u64) -> anyhow::Result<Value> {
        self.until(&format!("event v{version}"), |v| {
            v["type"] == "event" && v["game_id"] == game && v["version"] == version
        })
        .await
    }

    /// Waits until `game` reached `version` here: its event, or a view at that version or
    /// later (a view read after the change shows it in place of the event).
    pub async fn reached(&mut self, game: &str, version: u64) -> anyhow::Result<Value> {
        self.until(&format!("v{version} (event or view)"), |v| {
            v["game_id"] == game
                && ((v["type"] == "event" && v["version"] == version)
                    || (v["type"] == "game" && v["version"].as_u64() >= Some(version)))
        })
        .await
    }

    /// Waits for the ack of the action `id`.
    pub async fn ack(&mut self, id: &str) -> anyhow::Result<Value> {
        self.until(&format!("ack {id}"), |v| {
            v["type"] == "ack" && v["id"] == id
        })
        .await
    }

    /// Waits for an error answering `id`.
    pub async fn error_for(&mut self, id: &str) -> anyhow::Result<Value> {
        self.until(&format!("error for {id}"), |v| {
            v["type"] == "error" && v["id"] == id
        })
        .await
    }

    /// Sends a move and waits for its ack.
    pub async fn play(&mut self, game: &str, uci: &str) -> anyhow::Result<u64> {
        let id = format!(
            "{}-{uci}-{}",
            self.name,
            self.log.lock().expect("log").len()
        );
        self.send(json!({"type": "move", "id": id, "game_id": game, "uci": uci}))
            .await?;
        let ack = self.ack(&id).await?;
        ack["version"].as_u64().context("version")
    }

    /// The next WebSocket message of any kind as it came (`None`: the stream ended), within
    /// [`WAIT`].
    pub async fn next_raw(
        &mut self,
    ) -> anyhow::Result<Option<Result<Message, tokio_tungstenite::tungstenite::Error>>> {
        Ok(tokio::time::timeout(WAIT, self.ws.next()).await?)
    }

    /// Closes the connection.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }

    /// A snapshot of the frames received.
    pub fn frames(&self) -> Vec<Value> {
        self.log.lock().expect("log").clone()
    }
}

/// Two guests, White on `white_at` and Black on `black_at`, start a standard game of one
/// minute (shortened by the harness), play a move each, and then send nothing: the event
/// that ended the game, as Black received it (its outcome is the caller's to check).
pub async fn play_to_the_flag(white_at: SocketAddr, black_at: SocketAddr) -> anyhow::Result<Value> {
    let mut white = Client::guest(white_at, "white").await?;
    let mut black = Client::guest(black_at, "black").await?;
    let game = start_timed_game(
        &mut white,
        &mut black,
        "standard",
        "white",
        json!({"minutes": 1, "increment": 0}),
    )
    .await?;
    white.play(&game, "e2e4").await?;
    black.play(&game, "e7e5").await?;
    // White's clock now runs; nobody sends anything.
    black
        .until("the flag", |v| {
            v["type"] == "event" && !v["outcome"].is_null()
        })
        .await
}

/// Creates a board on `creator`'s connection and joins it from `joiner`'s; returns the game
/// id once both have seen the start (version 2).
pub async fn start_game(
    creator: &mut Client,
    joiner: &mut Client,
    variant: &str,
    color: &str,
) -> anyhow::Result<String> {
    start_timed_game(creator, joiner, variant, color, Value::Null).await
}

/// [`start_game`] with a clock (`{"minutes", "increment"}`; `null`: none).
pub async fn start_timed_game(
    creator: &mut Client,
    joiner: &mut Client,
    variant: &str,
    color: &str,
    clock: Value,
) -> anyhow::Result<String> {
    let mut create = json!({"type": "create_board", "id": "c", "variant": variant, "color": color});
    if !clock.is_null() {
        create["clock"] = clock;
    }
    let game = open_board(creator, joiner, create).await?;
    // Each side sees the start either as the event of version 2 or, if its first view was
    // read after the join, in that view.
    for c in [creator, joiner] {
        c.reached(&game, 2).await?;
    }
    Ok(game)
}

/// `creator` sends `create` (a `create_board` message) and `joiner` joins by its code: the
/// game's id once the join is answered, without waiting for either side's view of the
/// start (see [`start_timed_game`] for that).
pub async fn open_board(
    creator: &mut Client,
    joiner: &mut Client,
    create: Value,
) -> anyhow::Result<String> {
    creator.send(create).await?;
    let created = creator
        .until("board_created", |v| v["type"] == "board_created")
        .await?;
    let code = created["code"].as_str().context("code")?.to_owned();
    let game = created["game_id"].as_str().context("game")?.to_owned();
    joiner
        .send(json!({"type": "join_board", "id": "j", "code": code}))
        .await?;
    joiner
        .until("board_joined", |v| v["type"] == "board_joined")
        .await?;
    Ok(game)
}
