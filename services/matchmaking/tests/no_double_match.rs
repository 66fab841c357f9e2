//! No double match, nothing lost: 1,000 tickets arriving and cancelling at random across
//! three matchmaking processes, one of them SIGKILLed mid-run and restarted, with a real
//! game-session creating the games. Checked from game-session's game records, not from
//! matchmaking's word: nobody is in two matchmade games; a player whose cancel succeeded is
//! in none; every other seeker is in exactly one (with a person or a bot).

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use frontier_game_session::bus::NatsBus;
use frontier_game_session::service::{GameService, RandomLayouts, Settings as SessionSettings};
use frontier_game_session::store::RedisStore;
use frontier_platform::grpc::refusal_code;
use frontier_platform::{Namespace, Shutdown};
use frontier_proto::games::v1 as games;
use frontier_proto::matchmaking::v1 as pb;
use frontier_proto::matchmaking::v1::matchmaking_client::MatchmakingClient;
use frontier_protocol::ErrorCode;

const PLAYERS: usize = 1_000;

/// A loopback address whose port no outgoing connection can take while its process is
/// killed (see `frontier_testkit::free_port`): the third instance comes back on it.
fn free_port() -> SocketAddr {
    let port = frontier_testkit::free_port().expect("a free port");
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// One matchmaking process.
fn spawn(addr: SocketAddr, ns: &str, sessions: &str) -> tokio::process::Child {
    tokio::process::Command::new(frontier_testkit::frontier_bin())
        .arg("matchmaking")
        .args([
            "--listen",
            &addr.to_string(),
            "--game-session-urls",
            sessions,
            "--redis-url",
            &frontier_testkit::redis_url(),
            "--nats-url",
            &frontier_testkit::nats_url(),
            "--namespace",
            ns,
            "--interval",
            "50ms",
            "--lease",
            "1s",
            "--bot-after",
            "1500ms",
        ])
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .spawn()
        .expect("the matchmaking binary starts")
}

async fn client(addr: SocketAddr) -> MatchmakingClient<tonic::transport::Channel> {
    for _ in 0..200 {
        if let Ok(c) = MatchmakingClient::connect(format!("http://{addr}")).await {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("matchmaking at {addr} never answered");
}

/// A tiny deterministic generator (the test's randomness, reproducible from its seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Seeking and not cancelled (or cancelled too late): must end in exactly one game.
    InAGame,
    /// Cancelled while waiting: must be in no game.
    Cancelled,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_thousand_tickets_three_instances_one_killed_no_double_match() {
    let ns_name = frontier_testkit::unique_namespace();
    let ns = Namespace::new(&ns_name).expect("a namespace");
    // One game-session, served in this process.
    let sessions = Arc::new(GameService::new(
        RedisStore::connect(&frontier_testkit::redis_url(), ns.clone())
            .await
            .expect("Redis"),
        NatsBus::connect(&frontier_testkit::nats_url(), ns.clone())
            .await
            .expect("NATS"),
        Arc::new(frontier_platform::time::SystemClock),
        Arc::new(RandomLayouts),
        SessionSettings::default(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let session_url = format!("http://{}", listener.local_addr().expect("an address"));
    let shutdown = Shutdown::new();
    tokio::spawn(
        frontier_game_session::Service::from_parts(sessions.clone(), Duration::from_secs(1))
            .serve(listener, shutdown.clone()),
    );

    let addrs = [free_port(), free_port(), free_port()];
    let mut children: Vec<_> = addrs
        .iter()
        .map(|a| spawn(*a, &ns_name, &session_url))
        .collect();
    let mut clients = Vec::new();
    for a in addrs {
        clients.push(client(a).await);
    }

    let pools = [
        (games::Variant::Standard, 3, 0),
        (games::Variant::Standard, 3, 2),
        (games::Variant::Hidden, 3, 0),
        (games::Variant::Atomic, 1, 0),
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut fates: HashMap<String, Fate> = HashMap::new();
    let mut waiting: Vec<String> = Vec::new();
    let mut killed = false;
    for i in 0..PLAYERS {
        // Halfway through, instance 2 is killed (SIGKILL) and, a little later, restarted.
        if i == PLAYERS / 2 {
            children[2].kill().await.expect("SIGKILL");
            killed = true;
        }
        if killed && i == PLAYERS / 2 + 150 {
            children[2] = spawn(addrs[2], &ns_name, &session_url);
            clients[2] = client(addrs[2]).await;
            killed = false;
        }
        let live = if killed { 2 } else { 3 };
        let player = uuid::Uuid::new_v4().to_string();
        let first = rng.below(4) as usize;
        let mut mine = vec![pools[first]];
        if rng.below(10) < 4 {
            mine.push(pools[(first + 1 + rng.below(3) as usize) % 4]);
        }
        let request = pb::SeekRequest {
            player: Some(games::Player {
                id: player.clone(),
                name: format!("p{i}"),
                guest: rng.below(2) == 0,
                bot: false,
                bot_level: 0,
            }),
            pools: mine
                .iter()
                .map(|(variant, minutes, increment)| pb::Pool {
                    variant: *variant as i32,
                    minutes: *minutes,
                    increment: *increment,
                    rated: false,
                })
                .collect(),
        };
        let at = rng.below(live) as usize;
        clients[at]
            .seek(request)
            .await
            .expect("a live instance takes the seek");
        fates.insert(player.clone(), Fate::InAGame);
        waiting.push(player);
        // About one in four arrivals comes with a cancel of one of the latest seekers,
        // through any live instance: some still wait, some are being paired, some are done.
        if rng.below(4) == 0 && !waiting.is_empty() {
            let recent = waiting.len().saturating_sub(4);
            let who =
                waiting.swap_remove(recent + rng.below((waiting.len() - recent) as u64) as usize);
            let at = rng.below(live) as usize;
            match clients[at]
                .cancel_seek(pb::PlayerRequest {
                    player_id: who.clone(),
                })
                .await
            {
                Ok(r) if r.get_ref().cancelled => {
                    fates.insert(who, Fate::Cancelled);
                }
                // Already paired (and settled): it must be in a game.
                Ok(_) => {}
                Err(status) => {
                    assert_eq!(
                        refusal_code(&status),
                        Some(ErrorCode::AlreadyMatched),
                        "{status}"
                    );
                }
            }
        }
        // Arrivals spread over a few seconds, so pairing, killing and cancelling interleave.
        if i % 20 == 0 {
            tokio::time::sleep(Duration::from_millis(60)).await;
        }
    }

    // Every ticket settles: none waiting, none being made into a game.
    let redis = redis::Client::open(frontier_testkit::redis_url()).expect("Redis URL");
    let mut conn = redis::aio::ConnectionManager::new(redis)
        .await
        .expect("Redis");
    let prefix = ns.matchmaking_prefix();
    let settled = tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let tickets: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{prefix}ticket:*"))
                .query_async(&mut conn)
                .await
                .expect("KEYS");
            let pending: u64 = redis::cmd("ZCARD")
                .arg(format!("{prefix}pending"))
                .query_async(&mut conn)
                .await
                .expect("ZCARD");
            if tickets.is_empty() && pending == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(settled.is_ok(), "every ticket settled within a minute");

    // The game records, from game-session (state keys `<ns>:{<shard tag>}:game:<id>`).
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:{{*}}:game:*", ns.prefix()))
        .query_async(&mut conn)
        .await
        .expect("KEYS");
    let mut games_of: HashMap<String, usize> = HashMap::new();
    let mut bot_games = 0;
    let mut game_count = 0;
    let ids = keys
        .iter()
        .filter_map(|k| k.rsplit_once(":game:").map(|(_, id)| id))
        .filter(|id| !id.contains(':'));
    for id in ids {
        let view = sessions
            .view(&id.parse().expect("a game id"), "")
            .await
            .expect("the game reads");
        let frame: serde_json::Value = serde_json::from_str(&view.frame).expect("JSON");
        game_count += 1;
        for side in ["white", "black"] {
            let seat = &frame["game"][side];
            if seat["bot"] == true {
                bot_games += 1;
                continue;
            }
            let id = seat["id"].as_str().expect("a seated player").to_owned();
            *games_of.entry(id).or_default() += 1;
        }
    }
    let doubled: Vec<_> = games_of.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        doubled.is_empty(),
        "players in two matchmade games: {doubled:?}"
    );
    let mut wrong = Vec::new();
    for (player, fate) in &fates {
        let n = games_of.get(player).copied().unwrap_or(0);
        match fate {
            Fate::InAGame if n != 1 => wrong.push((player.clone(), *fate, n)),
            Fate::Cancelled if n != 0 => wrong.push((player.clone(), *fate, n)),
            _ => {}
        }
    }
    assert!(
        wrong.is_empty(),
        "tickets that did not end exactly once: {wrong:?}"
    );
    let strangers: HashSet<_> = games_of
        .keys()
        .filter(|p| !fates.contains_key(*p))
        .collect();
    assert!(
        strangers.is_empty(),
        "games of players who never sought: {strangers:?}"
    );
    let cancelled = fates.values().filter(|f| **f == Fate::Cancelled).count();
    eprintln!(
        "{PLAYERS} tickets: {game_count} games ({bot_games} against a bot), {cancelled} cancelled"
    );

    for child in &mut children {
        let _ = child.kill().await;
    }
    shutdown.trigger();
    if let Ok(client) = async_nats::connect(frontier_testkit::nats_url()).await {
        let js = async_nats::jetstream::new(client);
        let _ = js.delete_stream(ns.bot_jobs_stream()).await;
        let _ = js.delete_stream(ns.finished_games_stream()).await;
    }
}
