//! Chaos under load: the multi-instance rig (every service twice, each its own `frontier`
//! process) loaded by clients playing games while one instance of a random service is
//! killed with SIGKILL every few seconds and started again. Clients reconnect (to the other
//! gateway when theirs died), resume by version and resend an unanswered action under its
//! own id. Afterwards everything is checked from the records — Redis game state and logs,
//! the rating service's Postgres tables, and the clients' own logs of every ack — not from
//! the services' word:
//!
//! - every acknowledged move is in its game's record, at the version its ack named;
//! - no game is stuck: after the chaos each unfinished game is played one more move, then
//!   finished; every game that started is finished in Redis;
//! - every finished game is recorded exactly once, and rated exactly once (two history rows
//!   per rated game; each registered player's rated-game count equals what was played);
//! - no client received a version twice or saw a gap, on one connection or across
//!   reconnects;
//! - every matchmaking ticket ended exactly once: each seek got one game, each seeker is in
//!   exactly the games it was told, and no process exited except those killed.
//!
//! The test form is short (`FRONTIER_CHAOS_SECONDS`, default 40; `FRONTIER_CHAOS_SCALE`
//! multiplies the clients, default 1; `FRONTIER_CHAOS_KILL_EVERY_MS`, default 3000;
//! `FRONTIER_CHAOS_SEED`); `make chaos` runs a longer one. It needs the `frontier` binary
//! (`FRONTIER_BIN`, else next to the test's folder: `cargo test --workspace` builds it;
//! alone, `cargo build -p frontier --bin frontier` first).
//!
//! `FRONTIER_CHAOS_CLUSTERS=1` (`make chaos-clusters`): the test starts its own servers,
//! as an operator who cannot lose one would run them — a Redis Cluster of three masters
//! with a replica each (game-sessions with `--redis-ack-replicas 1`), a NATS cluster of
//! three (R3 streams), and a Postgres primary with a synchronous streaming standby behind
//! one service address (a TCP forwarder) — and the monkey's victims include those servers:
//! every fourth kill is a Redis master (SIGKILL; once its replica is promoted it is started
//! again and rejoins as that replica's replica, as a pod would), and once, half-way, the
//! Postgres primary (stopped at once, the standby promoted with `pg_ctl promote`, the
//! address switched to it; the lost primary is not brought back). The verdict is the same;
//! the figures of each failover are printed: kill → the killed master's games move again,
//! moves refused `unavailable` meanwhile, and the Postgres switch.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use frontier_integration_tests::rig::{Rig, RigConfig, Service};
use frontier_rules::{Position, Variant};
use frontier_testkit::cluster::{NatsCluster, RedisCluster};
use frontier_testkit::postgres::{Forwarder, StreamingPair};
use futures_util::{SinkExt as _, StreamExt as _};
use prost::Message as _;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// How long one operation (an action and its answer, a version awaited, a reconnect) may
/// take before the game counts as stuck: generous, for a loaded 2-core machine.
const OP_DEADLINE: Duration = Duration::from_secs(120);
/// How long one read waits before the caller looks at its deadline again.
const READ_SLICE: Duration = Duration::from_secs(2);
/// After this long without the answer to an action, it is sent again (same id: applied
/// once).
const RESEND_AFTER: Duration = Duration::from_secs(15);
const JWT_SECRET: &str = "chaos-test-secret-0123456789abcdefghijkl";

struct Settings {
    seconds: u64,
    kill_every: Duration,
    scale: usize,
    seed: u64,
    max_plies: u32,
}

impl Settings {
    fn from_env() -> anyhow::Result<Settings> {
        let var = |name: &str, default: u64| -> anyhow::Result<u64> {
            match std::env::var(name) {
                Ok(v) => v.parse().with_context(|| format!("{name}={v}")),
                Err(_) => Ok(default),
            }
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Ok(Settings {
            seconds: var("FRONTIER_CHAOS_SECONDS", 40)?,
            kill_every: Duration::from_millis(var("FRONTIER_CHAOS_KILL_EVERY_MS", 3000)?),
            scale: var("FRONTIER_CHAOS_SCALE", 1)?.max(1) as usize,
            seed: var("FRONTIER_CHAOS_SEED", now)? | 1,
            max_plies: 40,
        })
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// An acknowledged action as the client logged it.
#[derive(Clone, Debug)]
struct Ack {
    client: String,
    game: String,
    version: u64,
    /// `move <uci>`, `promote <role>`, `resign`.
    what: String,
    /// When the client received the ack.
    at: Instant,
}

/// A game a client saw end.
#[derive(Clone, Debug)]
struct Finished {
    rated: bool,
    aborted: bool,
    white: String,
    black: String,
}

#[derive(Default)]
struct Log {
    acks: Vec<Ack>,
    violations: Vec<String>,
    /// Every game that started, with the clients playing it.
    started: HashSet<String>,
    finished: HashMap<String, Finished>,
    /// Seeker id → the games it was told it was matched into, one per ticket.
    tickets: HashMap<String, Vec<String>>,
    /// Seeks that lapsed while their player was away (sought again).
    lapsed: u64,
    /// Retried refusals by code (`unavailable`, …) and reconnects.
    retried: BTreeMap<String, u64>,
    /// When a game action was refused `unavailable` (and sent again), and its game.
    unavailable: Vec<(Instant, String)>,
    reconnects: u64,
}

type Shared = Arc<Mutex<Log>>;

fn note(log: &Shared, f: impl FnOnce(&mut Log)) {
    f(&mut log.lock().expect("the log lock is never poisoned"));
}

/// What a client knows of one game.
#[derive(Clone, Debug, Default)]
struct View {
    fen: String,
    turn: String,
    pending: bool,
    over: bool,
    aborted: bool,
    variant: String,
    rated: bool,
    white: String,
    black: String,
}

/// One player: a token, and a connection that is made again whenever it breaks.
struct Player {
    name: String,
    id: String,
    token: String,
    gateways: Vec<SocketAddr>,
    gw: usize,
    ws: Option<Ws>,
    /// The last version received of each game (across connections).
    seen: HashMap<String, u64>,
    views: HashMap<String, View>,
    /// Games this player follows (opened, or opened for it by the gateway).
    follow: HashSet<String>,
    /// `matched` notices received.
    matched: Vec<Value>,
    reopen: Vec<String>,
    /// The id of the request awaiting its answer.
    inflight: Option<String>,
    log: Shared,
    n: u64,
}

enum Reply {
    Frame(Value),
    Refused(String),
}

impl Player {
    async fn new(
        gateways: &[SocketAddr],
        gw: usize,
        name: &str,
        register: bool,
        log: Shared,
    ) -> anyhow::Result<Player> {
        let (path, body) = if register {
            (
                "/api/register",
                json!({"username": name, "password": "Chaos-monkey-passphrase-42"}).to_string(),
            )
        } else {
            ("/api/guest", String::new())
        };
        let deadline = Instant::now() + OP_DEADLINE;
        let mut k = gw;
        let body = loop {
            let outcome = common::post(gateways[k % gateways.len()], path, &body).await;
            match outcome {
                Ok((201, body)) => break body,
                Ok((status, body)) if status != 503 && status != 500 => {
                    anyhow::bail!("{path}: {status} {body}")
                }
                last => {
                    // The last answer (or error) says why, when the machine is gone.
                    anyhow::ensure!(
                        Instant::now() < deadline,
                        "{path}: no gateway answered within {OP_DEADLINE:?}; the last try: {last:?}"
                    );
                    k += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        let mut player = Player {
            name: name.to_owned(),
            id: body["player"]["id"].as_str().context("id")?.to_owned(),
            token: body["token"].as_str().context("token")?.to_owned(),
            gateways: gateways.to_vec(),
            gw: k % gateways.len(),
            ws: None,
            seen: HashMap::new(),
            views: HashMap::new(),
            follow: HashSet::new(),
            matched: Vec::new(),
            reopen: Vec::new(),
            inflight: None,
            log,
            n: 0,
        };
        player.connect().await?;
        Ok(player)
    }

    /// (Re)connects to a gateway — the next one first — authenticates, and opens every
    /// game it follows after the last version it saw.
    async fn connect(&mut self) -> anyhow::Result<()> {
        let first = self.ws.is_none() && self.seen.is_empty() && self.n == 0;
        self.ws = None;
        let deadline = Instant::now() + OP_DEADLINE;
        loop {
            if !first {
                self.gw = (self.gw + 1) % self.gateways.len();
            }
            match self.try_connect(self.gateways[self.gw]).await {
                Ok(ws) => {
                    self.ws = Some(ws);
                    break;
                }
                Err(e) => {
                    anyhow::ensure!(
                        Instant::now() < deadline,
                        "{}: no gateway took the connection: {e:#}",
                        self.name
                    );
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        self.n += 1;
        if !first {
            note(&self.log, |l| l.reconnects += 1);
        }
        let games: Vec<String> = self
            .follow
            .iter()
            .filter(|g| !self.views.get(*g).is_some_and(|v| v.over))
            .cloned()
            .collect();
        for game in games {
            self.open(&game).await?;
        }
        Ok(())
    }

    async fn try_connect(&self, addr: SocketAddr) -> anyhow::Result<Ws> {
        let attempt = async {
            let (mut ws, _) = tokio_tungstenite::connect_async_with_config(
                format!("ws://{addr}/ws/v1"),
                None,
                true,
            )
            .await?;
            ws.send(Message::Text(
                json!({"type": "auth", "token": self.token})
                    .to_string()
                    .into(),
            ))
            .await?;
            loop {
                match ws.next().await.context("closed")?? {
                    Message::Text(t) => {
                        let v: Value = serde_json::from_str(&t)?;
                        match v["type"].as_str() {
                            Some("welcome") => {}
                            Some("authenticated") => return anyhow::Ok(ws),
                            _ => anyhow::bail!("auth: {v}"),
                        }
                    }
                    Message::Close(f) => anyhow::bail!("closed: {f:?}"),
                    _ => {}
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), attempt)
            .await
            .context("connect timed out")?
    }

    /// Opens a game after the last version seen (or from its whole view).
    async fn open(&mut self, game: &str) -> anyhow::Result<()> {
        self.follow.insert(game.to_owned());
        let mut msg = json!({"type": "open", "id": format!("open:{game}"), "game_id": game});
        if let Some(v) = self.seen.get(game) {
            msg["after_version"] = json!(v);
        }
        self.send(msg).await;
        Ok(())
    }

    /// Sends; a broken connection is noticed by the next read.
    async fn send(&mut self, msg: Value) {
        if let Some(ws) = &mut self.ws
            && ws
                .send(Message::Text(msg.to_string().into()))
                .await
                .is_err()
        {
            self.ws = None;
        }
    }

    /// The next frame within [`READ_SLICE`] (`None`: nothing yet), reconnecting first if
    /// the connection broke. Every frame is checked and applied to the views.
    async fn recv(&mut self) -> anyhow::Result<Option<Value>> {
        if self.ws.is_none() {
            self.connect().await?;
        }
        for game in std::mem::take(&mut self.reopen) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            self.open(&game).await?;
        }
        let Some(ws) = &mut self.ws else {
            return Ok(None);
        };
        let message = match tokio::time::timeout(READ_SLICE, ws.next()).await {
            Err(_) => return Ok(None),
            Ok(Some(Ok(m))) => m,
            Ok(_) => {
                self.ws = None;
                return Ok(None);
            }
        };
        match message {
            Message::Text(t) => {
                let v: Value = serde_json::from_str(&t)?;
                self.handle(&v);
                Ok(Some(v))
            }
            Message::Close(_) => {
                self.ws = None;
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    fn violation(&self, what: String) {
        note(&self.log, |l| {
            l.violations.push(format!("{}: {what}", self.name))
        });
    }

    fn handle(&mut self, v: &Value) {
        let game = v["game_id"].as_str().unwrap_or_default().to_owned();
        match v["type"].as_str().unwrap_or_default() {
            "event" => {
                let version = v["version"].as_u64().unwrap_or_default();
                match self.seen.get(&game) {
                    None => self.violation(format!("event v{version} of {game} before its view")),
                    Some(&last) if version <= last => {
                        self.violation(format!("{game}: v{version} again (had v{last})"))
                    }
                    Some(&last) if version > last + 1 => {
                        self.violation(format!("{game}: gap, v{last} then v{version}"))
                    }
                    _ => {}
                }
                self.seen.insert(game.clone(), version);
                let e = &v["event"];
                let view = self.views.entry(game).or_default();
                if let Some(fen) = e["fen"].as_str() {
                    fen.clone_into(&mut view.fen);
                    view.turn = turn_of(fen);
                }
                if let Some(turn) = e["turn"].as_str() {
                    turn.clone_into(&mut view.turn);
                }
                if e["kind"] == "started" {
                    view.white = e["white"]["id"].as_str().unwrap_or_default().to_owned();
                    view.black = e["black"]["id"].as_str().unwrap_or_default().to_owned();
                }
                view.pending = e["promotion_pending"] == true;
                if !v["outcome"].is_null() {
                    view.over = true;
                    view.aborted = v["outcome"]["result"] == "aborted";
                }
            }
            "game" => {
                let version = v["version"].as_u64().unwrap_or_default();
                if let Some(&last) = self.seen.get(&game)
                    && version < last
                {
                    self.violation(format!("{game}: a view at v{version} after v{last}"));
                }
                self.seen.insert(game.clone(), version);
                let g = &v["game"];
                let view = self.views.entry(game).or_default();
                view.fen = g["fen"].as_str().unwrap_or_default().to_owned();
                view.turn = g["turn"].as_str().unwrap_or_default().to_owned();
                view.pending = !g["pending_promotion"].is_null();
                view.over = !g["outcome"].is_null();
                view.aborted = g["outcome"]["result"] == "aborted";
                view.variant = g["variant"].as_str().unwrap_or_default().to_owned();
                view.rated = g["rated"] == true;
                view.white = g["white"]["id"].as_str().unwrap_or_default().to_owned();
                view.black = g["black"]["id"].as_str().unwrap_or_default().to_owned();
            }
            "matched" => {
                self.follow.insert(game);
                self.matched.push(v.clone());
            }
            "board_created" | "board_joined" | "game_created" => {
                self.follow.insert(game);
            }
            "error" => {
                // A game whose relay failed (`unavailable`, `internal`: a service behind the
                // gateway died; the error names the request that opened it, not the one in
                // flight) is opened again after the last version seen.
                let transient = matches!(v["code"].as_str(), Some("unavailable" | "internal"));
                let id = v["id"].as_str().unwrap_or_default();
                if let Some(game) = id.strip_prefix("open:") {
                    self.reopen.push(game.to_owned());
                } else if transient
                    && self.follow.contains(&game)
                    && self.inflight.as_deref() != Some(id)
                {
                    self.reopen.push(game);
                }
            }
            _ => {}
        }
    }

    /// Sends a request under `id` and waits for its answer (`ack`, `board_created`, …) or
    /// final refusal. A lost connection, `unavailable`, `internal` or silence make it send
    /// the same message again, under the same id: a game action is applied once.
    async fn request(&mut self, msg: Value, answer: &str) -> anyhow::Result<Reply> {
        let id = msg["id"].as_str().context("a request id")?.to_owned();
        self.inflight = Some(id.clone());
        let reply = self.request_inner(&id, msg, answer).await;
        self.inflight = None;
        reply
    }

    async fn request_inner(&mut self, id: &str, msg: Value, answer: &str) -> anyhow::Result<Reply> {
        let deadline = Instant::now() + OP_DEADLINE;
        'send: loop {
            anyhow::ensure!(
                Instant::now() < deadline,
                "{}: no answer to {msg} within {OP_DEADLINE:?}",
                self.name
            );
            if self.ws.is_none() {
                self.connect().await?;
            }
            self.send(msg.clone()).await;
            let sent = Instant::now();
            let connection = self.n;
            loop {
                if self.n != connection || self.ws.is_none() || sent.elapsed() > RESEND_AFTER {
                    continue 'send;
                }
                let Some(v) = self.recv().await? else {
                    continue;
                };
                if v["id"] != id {
                    continue;
                }
                if v["type"] == answer {
                    return Ok(Reply::Frame(v));
                }
                if v["type"] == "error" {
                    let code = v["code"].as_str().unwrap_or_default().to_owned();
                    if matches!(code.as_str(), "unavailable" | "internal" | "rate_limited") {
                        let game = msg["game_id"].as_str().map(str::to_owned);
                        note(&self.log, |l| {
                            if let Some(game) = game
                                && code == "unavailable"
                            {
                                l.unavailable.push((Instant::now(), game));
                            }
                            *l.retried.entry(code).or_default() += 1;
                        });
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue 'send;
                    }
                    return Ok(Reply::Refused(code));
                }
            }
        }
    }

    /// A game action; its ack is logged.
    async fn act(&mut self, game: &str, mut msg: Value, what: String) -> anyhow::Result<Reply> {
        let id = format!("{}-{}", self.name, uuid::Uuid::new_v4().simple());
        msg["id"] = json!(id);
        msg["game_id"] = json!(game);
        let reply = self.request(msg, "ack").await?;
        if let Reply::Frame(ack) = &reply {
            let version = ack["version"].as_u64().context("ack version")?;
            let a = Ack {
                client: self.name.clone(),
                game: game.to_owned(),
                version,
                what,
                at: Instant::now(),
            };
            note(&self.log, |l| l.acks.push(a));
        }
        Ok(reply)
    }

    /// Waits until this player has seen `version` of `game` (or its end).
    async fn wait_version(&mut self, game: &str, version: u64) -> anyhow::Result<()> {
        let deadline = Instant::now() + OP_DEADLINE;
        while self.seen.get(game).copied().unwrap_or(0) < version {
            anyhow::ensure!(
                Instant::now() < deadline,
                "{}: {game} stuck at v{:?}, waiting for v{version}",
                self.name,
                self.seen.get(game)
            );
            self.recv().await?;
        }
        Ok(())
    }

    /// Waits until `pred` holds for this player's view of `game`.
    async fn wait_view(
        &mut self,
        game: &str,
        what: &str,
        pred: impl Fn(&View) -> bool,
    ) -> anyhow::Result<View> {
        let deadline = Instant::now() + OP_DEADLINE;
        loop {
            if let Some(view) = self.views.get(game)
                && pred(view)
            {
                return Ok(view.clone());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "{}: {game} stuck waiting for {what} (at v{:?})",
                self.name,
                self.seen.get(game)
            );
            self.recv().await?;
        }
    }

    fn version(&self, game: &str) -> u64 {
        self.seen.get(game).copied().unwrap_or(0)
    }
}

fn turn_of(fen: &str) -> String {
    match fen.split_whitespace().nth(1) {
        Some("b") => "black".to_owned(),
        _ => "white".to_owned(),
    }
}

fn variant_of(name: &str) -> Variant {
    match name {
        "hidden" => Variant::Hidden,
        "atomic" => Variant::Atomic,
        _ => Variant::Standard,
    }
}

/// The next action of the side to move in `view`: a promotion choice or a random legal
/// move.
fn choose(view: &View, rng: &mut Rng) -> anyhow::Result<(Value, String)> {
    if view.pending {
        let role = ["q", "r", "b", "n"][rng.below(4)];
        return Ok((
            json!({"type": "promote", "role": role}),
            format!("promote {role}"),
        ));
    }
    let position = Position::from_fen(variant_of(&view.variant), &view.fen)
        .map_err(|e| anyhow::anyhow!("{}: {e}", view.fen))?;
    let moves = position.legal_move_list();
    anyhow::ensure!(!moves.is_empty(), "no legal move, no outcome: {}", view.fen);
    let uci = moves[rng.below(moves.len())].to_string();
    Ok((json!({"type": "move", "uci": uci}), format!("move {uci}")))
}

struct Ctx {
    log: Shared,
    stop: Arc<AtomicBool>,
    moves: Arc<AtomicU64>,
    max_plies: u32,
}

fn finished(ctx: &Ctx, game: &str, view: &View) {
    let f = Finished {
        rated: view.rated,
        aborted: view.aborted,
        white: view.white.clone(),
        black: view.black.clone(),
    };
    note(&ctx.log, |l| {
        l.finished.insert(game.to_owned(), f);
    });
}

/// Two players playing random games with each other, closed loop, until stopped; the game
/// in progress when the chaos stops is played one more move and then resigned.
async fn pair(
    ctx: Arc<Ctx>,
    mut white: Player,
    mut black: Player,
    variant: &'static str,
    rated: bool,
    clock: bool,
    seed: u64,
) -> anyhow::Result<()> {
    let mut rng = Rng(seed);
    while !ctx.stop.load(Ordering::Relaxed) {
        let mut create = json!({"type": "create_board", "id": format!("c{}", rng.next()),
            "variant": variant, "color": "white", "rated": rated});
        if clock {
            create["clock"] = json!({"minutes": 30, "increment": 0});
        }
        let created = match white.request(create, "board_created").await? {
            Reply::Frame(v) => v,
            Reply::Refused(code) => anyhow::bail!("{}: create_board refused: {code}", white.name),
        };
        let game = created["game_id"].as_str().context("game id")?.to_owned();
        let code = created["code"].as_str().context("code")?.to_owned();
        let join = json!({"type": "join_board", "id": format!("j{}", rng.next()), "code": code});
        match black.request(join, "board_joined").await? {
            Reply::Frame(_) => {}
            // An earlier attempt joined (its answer was lost with its connection).
            Reply::Refused(code) if code == "board_full" => black.open(&game).await?,
            Reply::Refused(code) => anyhow::bail!("{}: join_board refused: {code}", black.name),
        }
        for p in [&mut white, &mut black] {
            p.wait_version(&game, 2).await?;
        }
        note(&ctx.log, |l| {
            l.started.insert(game.clone());
        });
        let mut plies = 0;
        let mut after_stop = 0;
        loop {
            let view = white.wait_view(&game, "a view", |_| true).await?;
            if view.over {
                break;
            }
            if plies >= ctx.max_plies || after_stop == 1 {
                let reply = white
                    .act(&game, json!({"type": "resign"}), "resign".into())
                    .await?;
                if let Reply::Refused(code) = reply {
                    anyhow::ensure!(
                        code == "game_over",
                        "{}: resign refused: {code}",
                        white.name
                    );
                }
                white.wait_view(&game, "the end", |v| v.over).await?;
                break;
            }
            if ctx.stop.load(Ordering::Relaxed) {
                after_stop += 1;
            }
            let (msg, what) = choose(&view, &mut rng)?;
            let mover = if view.turn == "black" {
                &mut black
            } else {
                &mut white
            };
            match mover.act(&game, msg, what.clone()).await? {
                Reply::Frame(ack) => {
                    ctx.moves.fetch_add(1, Ordering::Relaxed);
                    let version = ack["version"].as_u64().context("version")?;
                    for p in [&mut white, &mut black] {
                        p.wait_version(&game, version).await?;
                    }
                }
                Reply::Refused(code) if code == "game_over" => {
                    // Ended meanwhile (a first-move limit under a long outage): the end
                    // event follows.
                    white.wait_view(&game, "the end", |v| v.over).await?;
                }
                Reply::Refused(code) => {
                    anyhow::bail!("{}: {what} in {game} refused: {code}", mover.name)
                }
            }
            plies += 1;
        }
        let last = white.version(&game);
        black.wait_version(&game, last).await?;
        let view = white.views[&game].clone();
        finished(&ctx, &game, &view);
    }
    Ok(())
}

/// A player who plays the computer (Easy), White, random moves, until stopped.
async fn versus_bot(
    ctx: Arc<Ctx>,
    mut p: Player,
    variant: &'static str,
    seed: u64,
) -> anyhow::Result<()> {
    let mut rng = Rng(seed);
    while !ctx.stop.load(Ordering::Relaxed) {
        let create = json!({"type": "play_computer", "id": format!("pc{}", rng.next()),
            "variant": variant, "level": "easy", "color": "white"});
        let created = match p.request(create, "game_created").await? {
            Reply::Frame(v) => v,
            Reply::Refused(code) => anyhow::bail!("{}: play_computer refused: {code}", p.name),
        };
        let game = created["game_id"].as_str().context("game id")?.to_owned();
        p.wait_version(&game, 2).await?;
        note(&ctx.log, |l| {
            l.started.insert(game.clone());
        });
        let mut plies = 0;
        let mut after_stop = 0;
        loop {
            let view = p
                .wait_view(&game, "my turn", |v| v.over || v.turn == "white")
                .await?;
            if view.over {
                break;
            }
            if plies >= ctx.max_plies / 2 || after_stop == 1 {
                if let Reply::Refused(code) = p
                    .act(&game, json!({"type": "resign"}), "resign".into())
                    .await?
                {
                    anyhow::ensure!(code == "game_over", "{}: resign refused: {code}", p.name);
                }
                p.wait_view(&game, "the end", |v| v.over).await?;
                break;
            }
            if ctx.stop.load(Ordering::Relaxed) {
                after_stop += 1;
            }
            let (msg, what) = choose(&view, &mut rng)?;
            match p.act(&game, msg, what.clone()).await? {
                Reply::Frame(ack) => {
                    ctx.moves.fetch_add(1, Ordering::Relaxed);
                    p.wait_version(&game, ack["version"].as_u64().context("version")?)
                        .await?;
                }
                Reply::Refused(code) if code == "game_over" => {
                    p.wait_view(&game, "the end", |v| v.over).await?;
                }
                Reply::Refused(code) => {
                    anyhow::bail!("{}: {what} in {game} refused: {code}", p.name)
                }
            }
            plies += 1;
        }
        let view = p.views[&game].clone();
        finished(&ctx, &game, &view);
    }
    Ok(())
}

/// A quick-match seeker: seeks a casual 3+0 standard game, and once matched (with another
/// seeker or, after the bot wait, the computer) resigns it; again until stopped. A seek
/// that stands when the chaos stops is waited out.
async fn seeker(ctx: Arc<Ctx>, mut p: Player, seed: u64) -> anyhow::Result<()> {
    let mut rng = Rng(seed);
    let mut known: HashSet<String> = HashSet::new();
    while !ctx.stop.load(Ordering::Relaxed) {
        p.matched.clear();
        let (mut settling, found) = seek_once(&mut p, &known, &mut rng).await?;
        // Wait for the match: a `matched` notice, or — after a reconnect, when the notice
        // may have gone with the old connection — what `status` says.
        let deadline = Instant::now() + OP_DEADLINE;
        let mut connection = p.n;
        let mut asked = Instant::now();
        let game = loop {
            if let Some(game) = &found {
                break game.clone();
            }
            if let Some(m) = p
                .matched
                .iter()
                .find(|m| !known.contains(m["game_id"].as_str().unwrap_or_default()))
            {
                break m["game_id"].as_str().context("game id")?.to_owned();
            }
            anyhow::ensure!(Instant::now() < deadline, "{}: never matched", p.name);
            let poll = settling && asked.elapsed() > Duration::from_secs(1);
            if p.n != connection || poll {
                connection = p.n;
                asked = Instant::now();
                let status = json!({"type": "status", "id": format!("st{}", rng.next())});
                if let Reply::Frame(s) = p.request(status, "status").await? {
                    let matched = s["matched"]["game_id"].as_str().unwrap_or_default();
                    if !matched.is_empty() && !known.contains(matched) {
                        if !p.follow.contains(matched) {
                            p.open(matched).await?;
                        }
                        break matched.to_owned();
                    }
                    if s["matching"].as_bool() == Some(true) {
                        // Paired, its game being made (longer while game-session is down):
                        // the notice follows, or the next `status` names the game. A seek
                        // sent now would forget that match (docs/protocol.md, `status`).
                        settling = true;
                    } else if s["seeking"].is_null() && !settling {
                        // The seek lapsed while away (nothing matched): seek again.
                        note(&ctx.log, |l| l.lapsed += 1);
                        break String::new();
                    } else {
                        settling &= s["seeking"].is_null();
                    }
                }
            }
            p.recv().await?;
        };
        if game.is_empty() {
            continue;
        }
        known.insert(game.clone());
        note(&ctx.log, |l| {
            l.tickets
                .entry(p.id.clone())
                .or_default()
                .push(game.clone());
            l.started.insert(game.clone());
        });
        p.wait_version(&game, 2).await?;
        if let Reply::Refused(code) = p
            .act(&game, json!({"type": "resign"}), "resign".into())
            .await?
        {
            anyhow::ensure!(code == "game_over", "{}: resign refused: {code}", p.name);
        }
        let view = p.wait_view(&game, "the end", |v| v.over).await?;
        finished(&ctx, &game, &view);
    }
    Ok(())
}

/// Sends one seek. A seek is no game action (a resend is a new ticket, not a duplicate),
/// so when its answer is lost — a broken connection, silence, `unavailable` — `status`
/// says whether it stands or was matched before it is sent again. Returns whether the
/// ticket is settling into a game (`already_matched`) and the game if `status` named it.
async fn seek_once(
    p: &mut Player,
    known: &HashSet<String>,
    rng: &mut Rng,
) -> anyhow::Result<(bool, Option<String>)> {
    let deadline = Instant::now() + OP_DEADLINE;
    loop {
        anyhow::ensure!(Instant::now() < deadline, "{}: seek never answered", p.name);
        if p.ws.is_none() {
            p.connect().await?;
        }
        let id = format!("s{}", rng.next());
        p.send(json!({"type": "seek", "id": id,
            "pools": [{"variant": "standard", "clock": {"minutes": 3, "increment": 0}}]}))
            .await;
        let (sent, connection) = (Instant::now(), p.n);
        p.inflight = Some(id.clone());
        let answered = loop {
            if p.n != connection || p.ws.is_none() || sent.elapsed() > RESEND_AFTER {
                break None;
            }
            let Some(v) = p.recv().await? else { continue };
            if v["id"] == id.as_str() && (v["type"] == "seeking" || v["type"] == "error") {
                break Some(v);
            }
        };
        p.inflight = None;
        if let Some(v) = answered {
            match v["code"].as_str() {
                None => return Ok((false, None)),
                Some("already_matched") => return Ok((true, None)),
                Some("unavailable" | "internal") => {
                    note(&p.log, |l| {
                        *l.retried
                            .entry(v["code"].as_str().unwrap_or_default().to_owned())
                            .or_default() += 1;
                    });
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Some(code) => anyhow::bail!("{}: seek refused: {code}", p.name),
            }
        }
        // The answer is unknown: does a ticket stand, or did it already end in a game?
        let status = json!({"type": "status", "id": format!("st{}", rng.next())});
        if let Reply::Frame(s) = p.request(status, "status").await? {
            let matched = s["matched"]["game_id"].as_str().unwrap_or_default();
            if !matched.is_empty() && !known.contains(matched) {
                if !p.follow.contains(matched) {
                    p.open(matched).await?;
                }
                return Ok((false, Some(matched.to_owned())));
            }
            if !s["seeking"].is_null() {
                return Ok((false, None));
            }
        }
    }
}

/// SIGKILLs one instance of a random service every `every` and starts it again, until
/// stopped; returns nothing but leaves the counts in the rig.
async fn chaos_monkey(
    rig: Arc<tokio::sync::Mutex<Rig>>,
    clusters: Option<Arc<Clusters>>,
    stop: Arc<AtomicBool>,
    every: Duration,
    postgres_at: Instant,
    seed: u64,
) -> anyhow::Result<()> {
    let mut rng = Rng(seed);
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        n += 1;
        if let Some(c) = &clusters {
            if c.postgres_switch.lock().expect("not poisoned").is_none()
                && Instant::now() >= postgres_at
            {
                let switch = tokio::task::block_in_place(|| c.switch_postgres())?;
                *c.postgres_switch.lock().expect("not poisoned") = Some(switch);
                continue;
            }
            if n % 4 == 2 {
                let victim = rng.next();
                tokio::task::block_in_place(|| c.kill_redis_master(victim))?;
                continue;
            }
        }
        let mut rig = rig.lock().await;
        let service = Service::ALL[rng.below(Service::ALL.len())];
        let ids: Vec<usize> = rig.of(service).collect();
        let k = ids[rng.below(ids.len())];
        rig.kill(k)?;
        // Down for a moment, as after a crash, before its replacement starts.
        tokio::time::sleep(Duration::from_millis(300)).await;
        rig.restart(k).await?;
    }
    Ok(())
}

/// `cluster-node-timeout` of the chaos's Redis Cluster: how long a master may be silent
/// before its replica takes over (as in tests/failover.rs).
const NODE_TIMEOUT_MS: u32 = 2000;

/// The servers of `make chaos-clusters`, started by the test so that the monkey can kill
/// them: see the module's documentation.
struct Clusters {
    redis: Mutex<RedisCluster>,
    nats: NatsCluster,
    postgres: StreamingPair,
    /// The services' Postgres address, on the primary until the switch.
    forwarder: Forwarder,
    /// Each Redis master killed, in order.
    master_kills: Mutex<Vec<MasterKill>>,
    postgres_switch: Mutex<Option<PostgresSwitch>>,
}

/// A Redis master killed by the monkey.
struct MasterKill {
    node: usize,
    /// The slots it served when it was killed.
    slots: Vec<std::ops::RangeInclusive<u16>>,
    killed_at: Instant,
    /// When another node was seen serving its slots.
    promoted_at: Instant,
    /// When the killed node, started again, was a synchronised replica.
    rejoined_at: Instant,
}

/// The Postgres primary lost and the standby promoted: how long after the loss the
/// address led to the new primary, and answered as one.
struct PostgresSwitch {
    switched: Duration,
    writable: Duration,
}

impl Clusters {
    /// Starts the three clusters (each waited for until it serves) and the database the
    /// rig uses, through the forwarder.
    async fn start() -> anyhow::Result<Clusters> {
        anyhow::ensure!(
            frontier_testkit::postgres::installed(),
            "FRONTIER_CHAOS_CLUSTERS needs the Postgres server binaries (initdb, pg_ctl)"
        );
        let redis = tokio::task::spawn_blocking(|| RedisCluster::start_replicated(NODE_TIMEOUT_MS))
            .await??;
        let nats = NatsCluster::start()?;
        nats.wait_ready().await?;
        let postgres = tokio::task::spawn_blocking(StreamingPair::start).await??;
        let forwarder = Forwarder::start(postgres.primary_port()).await?;
        let port = forwarder.port();
        let postgres = tokio::task::spawn_blocking(move || {
            postgres
                .psql(port, "CREATE DATABASE chaos")
                .map(|_| postgres)
        })
        .await??;
        Ok(Clusters {
            redis: Mutex::new(redis),
            nats,
            postgres,
            forwarder,
            master_kills: Mutex::default(),
            postgres_switch: Mutex::default(),
        })
    }

    fn redis_url(&self) -> String {
        self.redis.lock().expect("not poisoned").urls()
    }

    fn database_url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/chaos",
            self.forwarder.port()
        )
    }

    /// SIGKILLs a master (the `pick`th, in the order the cluster lists them), waits until
    /// its replica serves its slots, starts it again and waits until it is a synchronised
    /// replica (every master has one again before the next kill). Blocking.
    fn kill_redis_master(&self, pick: u64) -> anyhow::Result<()> {
        let mut redis = self.redis.lock().expect("not poisoned");
        let masters = redis.masters_asking_not(None)?;
        let (node, slots) = masters[(pick % masters.len() as u64) as usize].clone();
        let probe = *slots[0].start();
        let killed_at = Instant::now();
        redis.kill(node)?;
        let deadline = killed_at + Duration::from_secs(60);
        while !redis
            .master_of_slot_asking_not(probe, Some(node))
            .is_ok_and(|m| m != node)
        {
            anyhow::ensure!(
                Instant::now() < deadline,
                "Redis node {node} killed: no replica promoted within 60 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let promoted_at = Instant::now();
        redis.restart(node)?;
        redis.wait_replicas_synced()?;
        let rejoined_at = Instant::now();
        println!(
            "chaos: Redis master {node} killed, replica promoted after {:?}, the node a synchronised replica again after {:?}",
            promoted_at - killed_at,
            rejoined_at - killed_at
        );
        self.master_kills
            .lock()
            .expect("not poisoned")
            .push(MasterKill {
                node,
                slots,
                killed_at,
                promoted_at,
                rejoined_at,
            });
        Ok(())
    }

    /// Stops the Postgres primary at once, promotes the standby (`pg_ctl promote`) and
    /// switches the services' address to it. The lost primary stays down. Blocking.
    fn switch_postgres(&self) -> anyhow::Result<PostgresSwitch> {
        let killed_at = Instant::now();
        self.postgres.kill_primary()?;
        self.postgres.promote_standby()?;
        self.forwarder.switch(self.postgres.standby_port());
        let switched = killed_at.elapsed();
        let deadline = killed_at + Duration::from_secs(60);
        while self
            .postgres
            .psql(self.forwarder.port(), "SELECT NOT pg_is_in_recovery()")
            .ok()
            .as_deref()
            != Some("t")
        {
            anyhow::ensure!(
                Instant::now() < deadline,
                "the promoted standby not writable through the address within 60 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let writable = killed_at.elapsed();
        println!(
            "chaos: Postgres primary stopped, standby promoted and the address switched after {switched:?}, a primary through it after {writable:?}"
        );
        Ok(PostgresSwitch { switched, writable })
    }

    /// The figures of the failovers, from the monkey's kills and the clients' logs: per
    /// Redis master kill, how long until a game on its slots had a move acknowledged again
    /// (after the promotion was seen: an ack arriving just after the kill may carry a write
    /// made before it), and the moves of its games refused `unavailable` from the kill to
    /// the node's return as a replica.
    fn figures(&self, namespace: &str, log: &Log) -> anyhow::Result<String> {
        let ns = frontier_platform::Namespace::new(namespace).map_err(anyhow::Error::msg)?;
        let mut slot_of = HashMap::new();
        for game in &log.started {
            let id: frontier_platform::GameId = game.parse()?;
            let slot = frontier_platform::redis_conn::key_slot(ns.game_state_key(&id).as_bytes());
            slot_of.insert(game.clone(), slot);
        }
        // Each game's first and last acknowledged move.
        let mut span: HashMap<String, (Instant, Instant)> = HashMap::new();
        for a in &log.acks {
            let e = span.entry(a.game.clone()).or_insert((a.at, a.at));
            e.0 = e.0.min(a.at);
            e.1 = e.1.max(a.at);
        }
        let kills = self.master_kills.lock().expect("not poisoned");
        let (mut resumed, mut promoted, mut lines) = (Vec::new(), Vec::new(), Vec::new());
        let mut refused = 0;
        for k in kills.iter() {
            let on_it = |game: &String| {
                slot_of
                    .get(game)
                    .is_some_and(|s| k.slots.iter().any(|r| r.contains(s)))
            };
            // Its games in play across the kill: a move acknowledged before and one after.
            let games = span
                .iter()
                .filter(|(g, (first, last))| {
                    on_it(g) && *first < k.killed_at && *last > k.killed_at
                })
                .count();
            let again = log
                .acks
                .iter()
                .filter(|a| a.at >= k.promoted_at && on_it(&a.game))
                .map(|a| a.at - k.killed_at)
                .min();
            let refusals = log
                .unavailable
                .iter()
                .filter(|(at, g)| *at >= k.killed_at && *at <= k.rejoined_at && on_it(g))
                .count();
            refused += refusals;
            promoted.push(k.promoted_at - k.killed_at);
            if let Some(again) = again {
                resumed.push(again);
            }
            lines.push(format!(
                "node {}: promoted {:.2} s, moving again {}, rejoined {:.2} s, {refusals} refused, {games} of its games in play across the kill",
                k.node,
                (k.promoted_at - k.killed_at).as_secs_f64(),
                again.map_or("never".to_owned(), |d| format!("{:.2} s", d.as_secs_f64())),
                (k.rejoined_at - k.killed_at).as_secs_f64(),
            ));
        }
        let stats = |mut v: Vec<Duration>| -> String {
            v.sort();
            match (v.get(v.len() / 2), v.last()) {
                (Some(p50), Some(max)) => format!(
                    "p50 {:.2} s / max {:.2} s",
                    p50.as_secs_f64(),
                    max.as_secs_f64()
                ),
                _ => "none".to_owned(),
            }
        };
        let postgres = match &*self.postgres_switch.lock().expect("not poisoned") {
            Some(s) => format!(
                "Postgres primary lost: the address on the promoted standby after {:.2} s, answering as a primary after {:.2} s",
                s.switched.as_secs_f64(),
                s.writable.as_secs_f64()
            ),
            None => "the Postgres primary was not killed (the chaos ended first)".to_owned(),
        };
        Ok(format!(
            "{} Redis masters killed: their games moving again {} after the kill ({} of them with a move after), replica promoted {}; {refused} moves refused `unavailable` during the failovers (each sent again); {postgres}\n  {}",
            kills.len(),
            stats(resumed.clone()),
            resumed.len(),
            stats(promoted),
            lines.join("\n  ")
        ))
    }
}

/// Removes the namespace's JetStream streams (the Redis keys and the database go with the
/// test run).
async fn remove_streams(nats_url: &str, namespace: &str) {
    if let Ok(client) = frontier_platform::streams::connect(nats_url).await
        && let Ok(ns) = frontier_platform::Namespace::new(namespace)
    {
        let js = async_nats::jetstream::new(client);
        let _ = js.delete_stream(ns.finished_games_stream()).await;
        let _ = js.delete_stream(ns.bot_jobs_stream()).await;
    }
}

/// The order of a rolling upgrade, as deploy/README.md gives it ("from the inside out"):
/// rating, game-session, then its callers, the gateway (the clients' edge) last.
const UPGRADE_ORDER: [Service; 6] = [
    Service::Rating,
    Service::GameSession,
    Service::Clock,
    Service::BotWorker,
    Service::Matchmaking,
    Service::Gateway,
];

/// A rolling upgrade, once: each instance of each service in [`UPGRADE_ORDER`], one at a
/// time, is stopped as an orchestrator stops a pod (SIGTERM, drain) and started as the
/// "new version" — the same build with `--drain-timeout 19s` added, a flag that changes
/// nothing observable (two real versions are not at hand) — and waited for until ready.
/// game-session's new version also writes storage format 2 (`--storage-format 2`), so the
/// games under load are carried from format 1 to 2 as the instances are replaced — and,
/// while old and new instances both serve, back and forth between the two (this build
/// reads both; a real older release reads only 1, deploy/README.md, "Storage format 2").
/// It also puts its events' metadata in the payload (`--event-metadata payload`), so the
/// gateways relay events of both forms while the instances are replaced (a real rollout
/// turns it on only after the gateways, deploy/README.md, "Event metadata in the payload").
async fn rolling_upgrade(rig: Arc<tokio::sync::Mutex<Rig>>) -> anyhow::Result<()> {
    for service in UPGRADE_ORDER {
        let ids: Vec<usize> = rig.lock().await.of(service).collect();
        for k in ids {
            let mut rig = rig.lock().await;
            let status = rig.terminate(k, Duration::from_secs(30)).await?;
            anyhow::ensure!(
                status.success(),
                "{} did not stop cleanly on SIGTERM: {status}",
                rig.instances[k].label()
            );
            rig.add_flags(k, &["--drain-timeout", "19s"]);
            if service == Service::GameSession {
                rig.add_flags(k, &["--storage-format", "2", "--event-metadata", "payload"]);
            }
            rig.restart(k).await?;
        }
    }
    Ok(())
}

/// What happens to the rig under load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Disruption {
    /// [`chaos_monkey`]: SIGKILLs for the test's duration.
    Kills,
    /// [`rolling_upgrade`]: every instance replaced once, gracefully (the load runs at
    /// least the test's duration, and until the upgrade is over).
    RollingUpgrade,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_acknowledged_is_lost_while_instances_are_killed_under_load() -> anyhow::Result<()>
{
    under_load(Disruption::Kills).await
}

/// Upgrades that lose nothing: a rolling upgrade of every service, one instance at a time,
/// under the same load and checked from the same records as the kills.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_upgrade_of_every_service_under_load_loses_nothing() -> anyhow::Result<()> {
    under_load(Disruption::RollingUpgrade).await
}

async fn under_load(disruption: Disruption) -> anyhow::Result<()> {
    let mut settings = Settings::from_env()?;
    if disruption == Disruption::RollingUpgrade {
        // The upgrade sets the pace; the load only needs to outlast it.
        settings.seconds = settings.seconds.min(20);
    }
    let namespace = frontier_testkit::unique_namespace();
    let clusters = if std::env::var("FRONTIER_CHAOS_CLUSTERS").is_ok_and(|v| v == "1") {
        println!(
            "chaos: starting a Redis Cluster (3 masters, 3 replicas), a NATS cluster (3) and a Postgres primary with a standby"
        );
        Some(Arc::new(Clusters::start().await?))
    } else {
        None
    };
    let (redis_url, nats_url, database_url) = match &clusters {
        Some(c) => (c.redis_url(), c.nats.urls(), c.database_url()),
        None => (
            frontier_testkit::redis_url(),
            frontier_testkit::nats_url(),
            frontier_testkit::fresh_database().await?,
        ),
    };
    let logs = std::env::temp_dir().join(format!("frontier-chaos-{namespace}"));
    println!(
        "chaos: seed {}, {} s, a kill every {:?}, scale {}; process logs in {}",
        settings.seed,
        settings.seconds,
        settings.kill_every,
        settings.scale,
        logs.display()
    );
    let tails = LogTails::new(logs.clone());
    let flags = |s: &[&str]| s.iter().map(|f| (*f).to_owned()).collect::<Vec<_>>();
    let mut service_flags = vec![
        (Service::GameSession, flags(&["--outbox-interval", "1s"])),
        (Service::Rating, flags(&["--ack-wait", "5s"])),
        (
            Service::BotWorker,
            flags(&["--ack-wait", "3s", "--concurrency", "1"]),
        ),
        (
            Service::Matchmaking,
            flags(&["--bot-after", "4s", "--lease", "2s", "--grace", "30s"]),
        ),
    ];
    if clusters.is_some() {
        // A move is acknowledged once a replica has it; every stream on three servers.
        for (service, f) in &mut service_flags {
            if *service == Service::GameSession {
                f.extend(flags(&["--redis-ack-replicas", "1"]));
            }
            f.extend(flags(&["--nats-stream-replicas", "3"]));
        }
        service_flags.push((Service::Gateway, flags(&["--nats-stream-replicas", "3"])));
    }
    let rig = Rig::start(RigConfig {
        bin: frontier_testkit::frontier_bin(),
        instances: 2,
        redis_url: redis_url.clone(),
        nats_url: nats_url.clone(),
        database_url: database_url.clone(),
        namespace: namespace.clone(),
        jwt_secret: JWT_SECRET.to_owned(),
        flags: service_flags,
        // Under kills, the second game-session instance writes storage format 3 and the
        // first format 1 (named, so that a `FRONTIER_STORAGE_FORMAT` in the environment
        // does not make both alike): a game begun on either is played on by both, so games
        // in the hash layout and games carried from 1 to 2 meet the kills side by side
        // (`storage::format_for`).
        instance_flags: match disruption {
            Disruption::Kills => vec![
                ((Service::GameSession, 0), flags(&["--storage-format", "1"])),
                ((Service::GameSession, 1), flags(&["--storage-format", "3"])),
            ],
            Disruption::RollingUpgrade => Vec::new(),
        },
        logs: Some(logs.clone()),
    })
    .await?;
    let gateways = rig.gateways();
    let rig = Arc::new(tokio::sync::Mutex::new(rig));
    let log: Shared = Arc::default();
    let ctx = Arc::new(Ctx {
        log: log.clone(),
        stop: Arc::new(AtomicBool::new(false)),
        moves: Arc::new(AtomicU64::new(0)),
        max_plies: settings.max_plies,
    });

    // The clients: casual pairs of guests (standard, hidden, atomic; some timed), rated
    // pairs of registered players, quick-match seekers, players of the computer. A pair's
    // two players start on different gateways.
    let mut rng = Rng(settings.seed);
    let mut tasks = tokio::task::JoinSet::new();
    let s = settings.scale;
    let tag = &uuid::Uuid::new_v4().simple().to_string()[..6];
    let mut registered = Vec::new();
    // Registered players first, on an idle rig: a registration hashes a password on one
    // gateway thread at a lower priority (`--hash-nice`), which waits behind the moves
    // once the games below are running.
    let mut rated = Vec::new();
    for i in 0..2 * s {
        let w = Player::new(&gateways, i, &format!("rw{tag}{i}"), true, log.clone()).await?;
        let b = Player::new(&gateways, i + 1, &format!("rb{tag}{i}"), true, log.clone()).await?;
        registered.extend([w.id.clone(), b.id.clone()]);
        rated.push((w, b));
    }
    for i in 0..4 * s {
        let variant = ["standard", "hidden", "atomic", "hidden"][i % 4];
        let w = Player::new(&gateways, i, &format!("w{i}"), false, log.clone()).await?;
        let b = Player::new(&gateways, i + 1, &format!("b{i}"), false, log.clone()).await?;
        tasks.spawn(pair(
            ctx.clone(),
            w,
            b,
            variant,
            false,
            i % 2 == 1,
            rng.next(),
        ));
    }
    for (i, (w, b)) in rated.into_iter().enumerate() {
        let variant = ["standard", "hidden"][i % 2];
        tasks.spawn(pair(ctx.clone(), w, b, variant, true, true, rng.next()));
    }
    let mut seekers = Vec::new();
    for i in 0..3 * s {
        let p = Player::new(&gateways, i, &format!("q{i}"), false, log.clone()).await?;
        seekers.push(p.id.clone());
        tasks.spawn(seeker(ctx.clone(), p, rng.next()));
    }
    for i in 0..2 * s {
        let p = Player::new(&gateways, i, &format!("c{i}"), false, log.clone()).await?;
        let variant = ["standard", "atomic"][i % 2];
        tasks.spawn(versus_bot(ctx.clone(), p, variant, rng.next()));
    }

    // The chaos.
    let chaos_stop = Arc::new(AtomicBool::new(false));
    let monkey = match disruption {
        Disruption::Kills => tokio::spawn(chaos_monkey(
            rig.clone(),
            clusters.clone(),
            chaos_stop.clone(),
            settings.kill_every,
            Instant::now() + Duration::from_secs(settings.seconds) / 2,
            rng.next(),
        )),
        Disruption::RollingUpgrade => tokio::spawn(rolling_upgrade(rig.clone())),
    };
    let started = Instant::now();
    let moves_before = ctx.moves.load(Ordering::Relaxed);
    let deadline = started + Duration::from_secs(settings.seconds);
    // The kills go on until the deadline; an upgrade, until it is over (and the deadline).
    let upgrading = |monkey: &tokio::task::JoinHandle<anyhow::Result<()>>| {
        disruption == Disruption::RollingUpgrade && !monkey.is_finished()
    };
    while (Instant::now() < deadline || upgrading(&monkey)) && !tasks.is_empty() {
        if let Ok(Some(done)) = tokio::time::timeout(READ_SLICE, tasks.join_next()).await {
            // A client that stops before the end has failed.
            done??;
            anyhow::bail!("a client stopped before the end of the chaos");
        }
    }
    chaos_stop.store(true, Ordering::Relaxed);
    monkey.await??;
    let chaos_secs = started.elapsed().as_secs_f64();
    let chaos_moves = ctx.moves.load(Ordering::Relaxed) - moves_before;

    // Every game in progress continues (one more move) and ends; the seekers' last tickets
    // are waited out.
    ctx.stop.store(true, Ordering::Relaxed);
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let mut rig = Arc::try_unwrap(rig)
        .map_err(|_| anyhow::anyhow!("the rig is still shared"))?
        .into_inner();
    let crashed = rig.exited()?;
    let kills: BTreeMap<&str, u32> = Service::ALL
        .iter()
        .map(|s| (s.name(), rig.of(*s).map(|k| rig.instances[k].kills).sum()))
        .collect();
    let stops: u32 = rig.instances.iter().map(|i| i.stops).sum();

    let log = std::mem::take(&mut *log.lock().expect("the log lock is never poisoned"));
    let report = check(
        &namespace,
        &redis_url,
        &database_url,
        &log,
        &registered,
        &seekers,
    )
    .await;
    println!(
        "chaos ({disruption:?}): {:.0} s, {} kills {kills:?}, {stops} graceful replacements, {chaos_moves} moves acknowledged during the chaos ({:.1} moves/s), {} acks in all, {} games finished, {} tickets ({} seeks lapsed), {} reconnects, retried refusals {:?}",
        chaos_secs,
        kills.values().sum::<u32>(),
        chaos_moves as f64 / chaos_secs,
        log.acks.len(),
        log.finished.len(),
        log.tickets.values().map(Vec::len).sum::<usize>(),
        log.lapsed,
        log.reconnects,
        log.retried,
    );
    rig.stop();
    remove_streams(&nats_url, &namespace).await;
    let report = report?;
    println!("chaos: checked from the records: {report}");
    // Which formats the games are stored in (read once the records are checked, so that a
    // failed read here does not hide their report). After the upgrade game-session writes
    // format 2, so games played on have their moves listed beside their state; under the
    // kills one instance writes format 3 and the other 1 (a game of 1 written by the
    // instance told 3 goes on in 2).
    let listed = listed_games(&redis_url, &namespace).await?;
    let hashed = match disruption {
        Disruption::RollingUpgrade => None,
        Disruption::Kills => Some(hashed_games(&redis_url, &namespace).await?),
    };
    if let Some(c) = clusters
        .as_ref()
        .filter(|_| disruption == Disruption::Kills)
    {
        println!(
            "chaos: failovers (0 acknowledged moves lost: checked above): {}",
            c.figures(&namespace, &log)?
        );
    }
    anyhow::ensure!(
        crashed.is_empty(),
        "processes exited without being killed: {crashed:?} (logs in {})",
        logs.display()
    );
    anyhow::ensure!(
        log.violations.is_empty(),
        "clients saw {} violations: {:#?}",
        log.violations.len(),
        log.violations
    );
    match disruption {
        Disruption::Kills => {
            anyhow::ensure!(
                kills.values().sum::<u32>() > 0 || settings.seconds < settings.kill_every.as_secs(),
                "nothing was killed"
            );
            let hashed = hashed.unwrap_or_default();
            println!(
                "chaos: {hashed} games in storage format 3, {listed} with a list of move records (carried from 1 to 2, some back to 1)"
            );
            anyhow::ensure!(
                hashed > 0 && listed > 0,
                "the game-session instance told format 3 wrote {hashed} games in it and {listed} in 2: the formats did not meet"
            );
        }
        Disruption::RollingUpgrade => {
            anyhow::ensure!(
                stops as usize == rig.instances.len(),
                "{stops} of {} instances were replaced",
                rig.instances.len()
            );
            println!("chaos: {listed} games with their moves listed (storage format 2)");
            anyhow::ensure!(
                listed > 0,
                "no game's moves are listed: game-session's new version did not write storage format 2"
            );
        }
    }
    anyhow::ensure!(chaos_moves > 0, "no move was played during the chaos");
    tails.passed();
    let _ = std::fs::remove_dir_all(&logs);
    Ok(())
}

/// Prints the last lines of every process's log when a chaos run ends without passing
/// (an early `?` included): CI keeps a test's output, not the machine's `/tmp`.
struct LogTails {
    dir: PathBuf,
    passed: bool,
}

/// How many lines of each process's log a failed run prints.
const TAIL_LINES: usize = 15;

impl LogTails {
    fn new(dir: PathBuf) -> LogTails {
        LogTails { dir, passed: false }
    }

    fn passed(mut self) {
        self.passed = true;
    }
}

impl Drop for LogTails {
    fn drop(&mut self) {
        if self.passed {
            return;
        }
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for file in files {
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let lines: Vec<&str> = text.lines().collect();
            println!(
                "chaos: the last {} lines of {}:",
                TAIL_LINES.min(lines.len()),
                file.display()
            );
            for line in &lines[lines.len().saturating_sub(TAIL_LINES)..] {
                println!("  {line}");
            }
        }
    }
}

/// How many games of `namespace` have a list of move records (storage format 2).
async fn listed_games(redis_url: &str, namespace: &str) -> anyhow::Result<usize> {
    let pattern = format!("{namespace}:{{*}}:game:*:moves");
    Ok(keys_on_every_node(redis_url, &pattern).await?.len())
}

/// How many games of `namespace` are in storage format 3: a state hash with a record
/// count `n`.
async fn hashed_games(redis_url: &str, namespace: &str) -> anyhow::Result<usize> {
    let states = game_states(redis_url, namespace).await?;
    // One node or a cluster (a seed list): each read goes to the key's master.
    let mut redis = frontier_platform::redis_conn::RedisConn::connect(redis_url, false).await?;
    let mut hashed = 0;
    for key in &states {
        let has_count: bool = redis::cmd("HEXISTS")
            .arg(key)
            .arg("n")
            .query_async(&mut redis)
            .await?;
        hashed += usize::from(has_count);
    }
    Ok(hashed)
}

/// The games' state hashes of `namespace`, `<ns>:{<shard>}:game:<id>`, from every node;
/// not the `:log`, `:moves`, `:presence`, … beside them.
async fn game_states(redis_url: &str, namespace: &str) -> anyhow::Result<Vec<String>> {
    let mut keys = keys_on_every_node(redis_url, &format!("{namespace}:{{*}}:game:*")).await?;
    keys.retain(|k| {
        k.rsplit_once(":game:")
            .is_some_and(|(_, id)| !id.contains(':'))
    });
    Ok(keys)
}

/// The keys matching `pattern` on every node of the seed list, sorted, each once: on a
/// cluster each master lists only the keys of its own slots (the seed list names every
/// master).
async fn keys_on_every_node(redis_url: &str, pattern: &str) -> anyhow::Result<Vec<String>> {
    let mut keys = Vec::new();
    for url in redis_url.split(',') {
        let mut node = redis::Client::open(url.trim())?
            .get_multiplexed_async_connection()
            .await?;
        let mut cursor = 0u64;
        loop {
            let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut node)
                .await?;
            keys.extend(batch);
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
    }
    keys.sort();
    keys.dedup();
    Ok(keys)
}

/// The checks from the records; `Ok` carries the counts checked, `Err` every failure.
async fn check(
    namespace: &str,
    redis_url: &str,
    database_url: &str,
    log: &Log,
    registered: &[String],
    seekers: &[String],
) -> anyhow::Result<String> {
    let mut failures = Vec::new();
    // One node or a cluster (a seed list): key reads go to the key's master.
    let mut redis = frontier_platform::redis_conn::RedisConn::connect(redis_url, false).await?;
    let ns = frontier_platform::Namespace::new(namespace).map_err(anyhow::Error::msg)?;
    // 1. Every acknowledged action is in its game's log at the version its ack named. The
    // layout is told as the service tells it (`LOG_SCRIPT`): a game whose hash has a record
    // count `n` (storage format 3) keeps its log as the hash's fields `e<version>`, and has
    // no log list; any other game, in its log list. Each game's layout is read once.
    let mut hashed_by_game: HashMap<&str, bool> = HashMap::new();
    for ack in &log.acks {
        let id: frontier_platform::GameId = ack.game.parse()?;
        let state_key = ns.game_state_key(&id);
        let hashed = match hashed_by_game.get(ack.game.as_str()) {
            Some(&hashed) => hashed,
            None => {
                let hashed: bool = redis::cmd("HEXISTS")
                    .arg(&state_key)
                    .arg("n")
                    .query_async(&mut redis)
                    .await?;
                let listed: bool = redis::cmd("EXISTS")
                    .arg(ns.game_log_key(&id))
                    .query_async(&mut redis)
                    .await?;
                if hashed && listed {
                    failures.push(format!(
                        "{} is in storage format 3 and has a log list too",
                        ack.game
                    ));
                }
                hashed_by_game.insert(&ack.game, hashed);
                hashed
            }
        };
        let entry: Option<Vec<u8>> = if hashed {
            redis::cmd("HGET")
                .arg(&state_key)
                .arg(format!("e{}", ack.version))
                .query_async(&mut redis)
                .await?
        } else {
            redis::cmd("LINDEX")
                .arg(ns.game_log_key(&id))
                .arg(ack.version - 1)
                .query_async(&mut redis)
                .await?
        };
        let Some(entry) = entry else {
            failures.push(format!(
                "lost: {} acked {} at v{} of {}, not in the game's log",
                ack.client, ack.what, ack.version, ack.game
            ));
            continue;
        };
        let entry = frontier_proto::gamesession::storage::v1::LogEntry::decode(&entry[..])?;
        let frame: Value = serde_json::from_slice(&entry.public).unwrap_or(Value::Null);
        let e = &frame["event"];
        let found = match ack.what.split_once(' ') {
            Some(("move", uci)) => {
                e["kind"] == "move"
                    && e["uci"]
                        .as_str()
                        .is_some_and(|u| u.get(..4) == uci.get(..4))
            }
            Some(("promote", role)) => {
                e["kind"] == "promotion" && e["uci"].as_str().is_some_and(|u| u.ends_with(role))
            }
            _ => e["kind"] == "ended" && frame["outcome"]["reason"] == "resignation",
        };
        if entry.version != ack.version || !found {
            failures.push(format!(
                "{ack:?}: the log has v{} {frame} there",
                entry.version
            ));
        }
    }

    // 2. No game is stuck: every game that started has ended in Redis.
    let mut by_player: HashMap<String, Vec<String>> = HashMap::new();
    let mut ended = 0;
    let keys = game_states(redis_url, namespace).await?;
    let mut stored = HashMap::new();
    for key in &keys {
        let s: Option<Vec<u8>> = redis::cmd("HGET")
            .arg(key)
            .arg("s")
            .query_async(&mut redis)
            .await?;
        let Some(s) = s else { continue };
        let game = frontier_proto::gamesession::storage::v1::StoredGame::decode(&s[..])?;
        for p in [&game.white, &game.black].into_iter().flatten() {
            by_player
                .entry(p.id.clone())
                .or_default()
                .push(game.id.clone());
        }
        stored.insert(game.id.clone(), game);
    }
    for game in &log.started {
        match stored.get(game) {
            None => failures.push(format!("{game} started but has no record in Redis")),
            Some(g) if g.outcome.is_empty() => {
                failures.push(format!("{game} never ended (ply {})", g.ply))
            }
            Some(_) => ended += 1,
        }
        if !log.finished.contains_key(game) {
            failures.push(format!("{game}: its players never saw it end"));
        }
    }

    // 3. Every matchmaking ticket ended exactly once: each seeker is in exactly the games
    // it was told, one per ticket, each game once.
    let mut tickets = 0;
    for seeker in seekers {
        let told: Vec<String> = log.tickets.get(seeker).cloned().unwrap_or_default();
        tickets += told.len();
        let mut in_redis = by_player.get(seeker).cloned().unwrap_or_default();
        let mut told_sorted = told.clone();
        in_redis.sort();
        told_sorted.sort();
        told_sorted.dedup();
        if told_sorted.len() != told.len() {
            failures.push(format!(
                "seeker {seeker} was matched into one game twice: {told:?}"
            ));
        }
        if in_redis != told_sorted {
            let only_told: Vec<_> = told_sorted
                .iter()
                .filter(|g| !in_redis.contains(g))
                .collect();
            let only_records: Vec<_> = in_redis
                .iter()
                .filter(|g| !told_sorted.contains(g))
                .collect();
            failures.push(format!(
                "seeker {seeker}: told of {only_told:?} not in the records, in {only_records:?} never told"
            ));
        }
    }

    // 4. Every finished game is recorded exactly once in the rating service's Postgres, and
    // each rated one rated exactly once. The consumer may lag behind (a killed instance's
    // deliveries come again after the ack wait): wait for it.
    let pool = sqlx::PgPool::connect(database_url).await?;
    let want: Vec<uuid::Uuid> = log
        .finished
        .keys()
        .map(|g| g.parse())
        .collect::<Result<_, _>>()?;
    let deadline = Instant::now() + OP_DEADLINE;
    let recorded: Vec<(uuid::Uuid, bool)> = loop {
        let rows: Vec<(uuid::Uuid, bool)> =
            sqlx::query_as("SELECT id, rated FROM games WHERE id = ANY($1)")
                .bind(&want)
                .fetch_all(&pool)
                .await?;
        if rows.len() == want.len() || Instant::now() > deadline {
            break rows;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let all_games: i64 = sqlx::query_scalar("SELECT count(*) FROM games")
        .fetch_one(&pool)
        .await?;
    if recorded.len() != want.len() {
        let have: HashSet<uuid::Uuid> = recorded.iter().map(|(id, _)| *id).collect();
        let missing: Vec<_> = want.iter().filter(|g| !have.contains(g)).collect();
        failures.push(format!(
            "{} finished games never recorded: {missing:?}",
            missing.len()
        ));
    }
    if all_games as usize != want.len() {
        failures.push(format!(
            "{all_games} games recorded, {} finished",
            want.len()
        ));
    }
    let mut rated_games = 0;
    let mut per_player: HashMap<String, i64> = HashMap::new();
    for (game, f) in &log.finished {
        let counts = f.rated && !f.aborted;
        if counts {
            rated_games += 1;
            for p in [&f.white, &f.black] {
                *per_player.entry(p.clone()).or_default() += 1;
            }
        }
        let rows: i64 =
            sqlx::query_scalar("SELECT count(*) FROM rating_history WHERE game_id = $1")
                .bind(game.parse::<uuid::Uuid>()?)
                .fetch_one(&pool)
                .await?;
        let expected = if counts { 2 } else { 0 };
        if rows != expected {
            failures.push(format!(
                "{game}: {rows} rating-history rows, expected {expected}"
            ));
        }
    }
    for player in registered {
        let n: Option<i32> =
            sqlx::query_scalar("SELECT sum(rated_games)::int FROM ratings WHERE player_id = $1")
                .bind(player.parse::<uuid::Uuid>()?)
                .fetch_one(&pool)
                .await?;
        let expected = per_player.get(player).copied().unwrap_or(0);
        if i64::from(n.unwrap_or(0)) != expected {
            failures.push(format!(
                "{player}: rated {} times, played {expected} rated games",
                n.unwrap_or(0)
            ));
        }
    }
    pool.close().await;

    if failures.is_empty() {
        Ok(format!(
            "{} acks all in their games' logs; {} games started, {ended} ended in Redis; {} finished games recorded once each, {rated_games} rated exactly once; {tickets} tickets each ended in one game; 0 lost",
            log.acks.len(),
            log.started.len(),
            want.len()
        ))
    } else {
        anyhow::bail!("{} failures:\n{}", failures.len(), failures.join("\n"))
    }
}
