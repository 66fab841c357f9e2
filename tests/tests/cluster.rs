//! The live path on a Redis Cluster of three masters and a NATS cluster of three JetStream
//! servers with replicated (R3) streams, both started on loopback by the test itself
//! (`frontier_testkit::cluster`): a hidden game to the end with reveals, a flag falling,
//! a rated game recorded and rated; then one NATS server killed and one Redis master killed
//! (SIGKILL) and restarted, with nothing acknowledged lost.
//!
//! The Redis masters have no replicas (see deploy/README.md): while a master is down the
//! games of its shards answer `unavailable`, the others play on, and once it is back the
//! games it holds continue from the last acknowledged move.

mod common;

use std::time::Duration;

use common::{Client, Platform, Servers, get, post, start_game};
use frontier_platform::{GameId, Namespace, Shard};
use frontier_testkit::cluster::{NatsCluster, RedisCluster};
use serde_json::{Value, json};

const LAYOUT: &str = "PQBRBRNNPPPPPPP/rnbqbrpnppppppp";
/// One clock "minute" in these tests.
const MINUTE: &str = "400ms";

/// How long one of these tests may take. Every step is printed (shown when a test fails),
/// so a step that never ends fails its test naming where it stopped, and the clusters and
/// the platform go with the test's values.
const LIMIT: Duration = Duration::from_secs(300);

async fn bounded(steps: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    tokio::time::timeout(LIMIT, steps).await.map_err(|_| {
        anyhow::anyhow!("not finished within {LIMIT:?}: it stopped after the last step printed")
    })?
}

/// Prints a step with the time since the first one.
fn step(what: &str) {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = START.get_or_init(std::time::Instant::now);
    eprintln!("[{:>8.3}s] {what}", start.elapsed().as_secs_f64());
}

struct Clusters {
    redis: RedisCluster,
    nats: NatsCluster,
}

impl Clusters {
    async fn start() -> anyhow::Result<Clusters> {
        step("starting a Redis Cluster");
        let redis = RedisCluster::start()?;
        step("starting a NATS cluster");
        let nats = NatsCluster::start()?;
        nats.wait_ready().await?;
        step("clusters ready");
        Ok(Clusters { redis, nats })
    }

    fn servers(&self) -> Servers {
        Servers {
            redis: self.redis.urls(),
            nats: self.nats.urls(),
            replicas: 3,
        }
    }

    /// Two gateways, two game-sessions (shortened clock minutes), a clock, the rating
    /// service.
    async fn platform(&self) -> anyhow::Result<Platform> {
        // `NatsCluster::wait_ready` returned: R3 streams can be placed.
        let mut p = Platform::start_on(
            &self.servers(),
            2,
            2,
            Some(LAYOUT),
            &["--test-clock-minute", MINUTE],
        )
        .await?;
        p.start_clock().await?;
        step("platform started");
        Ok(p)
    }
}

async fn register(p: &Platform, name: &str) -> anyhow::Result<(String, String)> {
    let (status, body) = post(
        p.gateways[0],
        "/api/register",
        &json!({"username": name, "password": "a long passphrase"}).to_string(),
    )
    .await?;
    anyhow::ensure!(status == 201, "{body}");
    Ok((
        body["token"].as_str().unwrap_or_default().to_owned(),
        body["player"]["id"].as_str().unwrap_or_default().to_owned(),
    ))
}

/// How long a finished game may take to be rated here. Longer than [`common::WAIT`]: when
/// the stream's leader is killed, nats-server elects another after 4 to 9 s of silence (its
/// Raft election timeout), more on a loaded machine where elections can split, and
/// game-session's publish meanwhile times out (5 s) and is made again from its outbox.
const RATED_WITHIN: Duration = Duration::from_secs(90);

/// The player's dashboard entry once its `variant` rating moved (recorded asynchronously).
async fn rated_player(p: &Platform, id: &str, variant: &str) -> anyhow::Result<Value> {
    let deadline = tokio::time::Instant::now() + RATED_WITHIN;
    loop {
        let (status, body) = get(p.gateways[1], &format!("/api/players/{id}")).await?;
        let player: Value = serde_json::from_str(&body).unwrap_or_default();
        if status == 200 && player["ratings"][variant]["rd"].as_f64() < Some(350.0) {
            return Ok(player);
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "no {variant} rating for {id}: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Fool's mate in a hidden game: every move reveals its piece to both players and the
/// spectator, the end shows the layout, and no frame leaks an identity.
async fn hidden_fools_mate(p: &Platform) -> anyhow::Result<()> {
    step("a hidden game");
    let mut white = Client::guest(p.gateways[0], "white").await?;
    let mut black = Client::guest(p.gateways[1], "black").await?;
    let game = start_game(&mut white, &mut black, "hidden", "white").await?;
    let mut watcher = Client::guest(p.gateways[1], "watcher").await?;
    watcher
        .send(json!({"type": "open", "game_id": game}))
        .await?;
    watcher.until("view", |v| v["type"] == "game").await?;
    for (i, (uci, role)) in [
        ("f2f3", "pawn"),
        ("e7e5", "pawn"),
        ("g2g4", "pawn"),
        ("d8h4", "queen"),
    ]
    .iter()
    .enumerate()
    {
        let mover = if i % 2 == 0 { &mut white } else { &mut black };
        let version = mover.play(&game, uci).await?;
        assert_eq!(version, 3 + i as u64);
        for c in [&mut white, &mut black, &mut watcher] {
            let e = c.event(&game, version).await?;
            assert_eq!(e["event"]["reveal"]["role"], *role, "{uci}");
        }
    }
    let last = watcher.frames().last().cloned().unwrap_or_default();
    assert_eq!(
        last["outcome"],
        json!({"result": "black", "reason": "checkmate"})
    );
    assert_eq!(last["shuffle"]["layout"], LAYOUT);
    for c in [&white, &black, &watcher] {
        let checked = common::leak::check_client(&c.frames(), LAYOUT)?;
        assert!(checked > 0, "{} saw hidden-game frames", c.name);
    }
    Ok(())
}

/// A timed game whose clock runs out with nobody sending anything: the clock service
/// (walking every deadline shard) ends it.
async fn a_flag_falls(p: &Platform) -> anyhow::Result<()> {
    step("a flag");
    let end = common::play_to_the_flag(p.gateways[0], p.gateways[1]).await?;
    assert_eq!(
        end["outcome"],
        json!({"result": "black", "reason": "timeout"})
    );
    Ok(())
}

/// A rated standard game between two registered players, to Black's win: returns Black's
/// id once the rating service recorded and rated it.
async fn a_rated_game_is_recorded(p: &Platform, names: [&str; 2]) -> anyhow::Result<Value> {
    step(&format!("a rated game: {names:?}"));
    let alice = register(p, names[0]).await?;
    let bob = register(p, names[1]).await?;
    let mut white = Client::with_token(p.gateways[0], names[0], &alice.0, &alice.1).await?;
    let mut black = Client::with_token(p.gateways[1], names[1], &bob.0, &bob.1).await?;
    white.send(json!({"type": "create_board", "id": "c", "variant": "standard", "color": "white", "rated": true})).await?;
    let created = white
        .until("created", |v| v["type"] == "board_created")
        .await?;
    let game = created["game_id"].as_str().unwrap_or_default().to_owned();
    black
        .send(json!({"type": "join_board", "id": "j", "code": created["code"]}))
        .await?;
    black
        .until("joined", |v| v["type"] == "board_joined")
        .await?;
    for (i, uci) in ["f2f3", "e7e5", "g2g4", "d8h4"].iter().enumerate() {
        let mover = if i % 2 == 0 { &mut white } else { &mut black };
        mover.play(&game, uci).await?;
    }
    step("waiting for its rating");
    let player = rated_player(p, &bob.1, "standard").await?;
    let won = frontier_glicko2::rate_game(
        frontier_glicko2::INITIAL,
        0.0,
        frontier_glicko2::INITIAL,
        frontier_glicko2::Score::Win,
    );
    let rating = player["ratings"]["standard"]["rating"]
        .as_f64()
        .unwrap_or_default();
    assert!((rating - won.rating).abs() < 0.01, "{player}");
    Ok(player)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_path_runs_on_a_redis_cluster_and_a_nats_cluster_with_r3_streams()
-> anyhow::Result<()> {
    bounded(the_live_path_runs_on_a_redis_cluster_and_a_nats_cluster_with_r3_streams_steps()).await
}

async fn the_live_path_runs_on_a_redis_cluster_and_a_nats_cluster_with_r3_streams_steps()
-> anyhow::Result<()> {
    let clusters = Clusters::start().await?;
    let p = clusters.platform().await?;
    hidden_fools_mate(&p).await?;
    a_flag_falls(&p).await?;
    a_rated_game_is_recorded(&p, ["alice", "bob"]).await?;
    step("checking the streams' replicas");
    // The streams the services created are replicated on the three servers.
    let nats = frontier_platform::streams::connect(&clusters.nats.urls())
        .await
        .map_err(anyhow::Error::msg)?;
    let js = async_nats::jetstream::new(nats);
    let ns = Namespace::new(&p.namespace).map_err(anyhow::Error::msg)?;
    for name in [ns.finished_games_stream(), ns.bot_jobs_stream()] {
        let info = js.get_stream(&name).await?.info().await?.clone();
        assert_eq!(info.config.num_replicas, 3, "{name}");
        let cluster = info.cluster.clone().unwrap_or_default();
        assert!(cluster.leader.is_some(), "{name}: {cluster:?}");
        assert_eq!(cluster.replicas.len(), 2, "{name}: {cluster:?}");
    }
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_nats_server_leading_the_finished_games_stream_loses_nothing()
-> anyhow::Result<()> {
    bounded(killing_the_nats_server_leading_the_finished_games_stream_loses_nothing_steps()).await
}

async fn killing_the_nats_server_leading_the_finished_games_stream_loses_nothing_steps()
-> anyhow::Result<()> {
    let mut clusters = Clusters::start().await?;
    let p = clusters.platform().await?;
    // A first rated game while all three servers run.
    a_rated_game_is_recorded(&p, ["ann", "ben"]).await?;
    let nats = frontier_platform::streams::connect(&clusters.nats.urls())
        .await
        .map_err(anyhow::Error::msg)?;
    let js = async_nats::jetstream::new(nats);
    let ns = Namespace::new(&p.namespace).map_err(anyhow::Error::msg)?;
    let mut stream = js.get_stream(ns.finished_games_stream()).await?;
    // A loaded machine may be between two elections of the stream's leader: wait for one.
    let deadline = tokio::time::Instant::now() + common::WAIT;
    let leader = loop {
        let cluster = stream.info().await?.cluster.clone();
        if let Some(leader) = cluster.as_ref().and_then(|c| c.leader.clone()) {
            break leader;
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the stream has no leader: {cluster:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let victim = (0..3)
        .find(|&i| NatsCluster::name(i) == leader)
        .ok_or_else(|| anyhow::anyhow!("no leader among the servers: `{leader}`"))?;
    step(&format!(
        "killing NATS server {leader}, the stream's leader"
    ));
    clusters.nats.kill(victim)?;
    // The platform plays on over the two servers left: a hidden game to the end, and a
    // second rated game recorded through the R3 stream that lost its leader.
    hidden_fools_mate(&p).await?;
    a_rated_game_is_recorded(&p, ["cat", "dan"]).await?;
    step("restarting it");
    clusters.nats.restart(victim).await?;
    step("restarted");
    a_rated_game_is_recorded(&p, ["eve", "fay"]).await?;
    step("counting the stream's messages");
    // Every finished game is in the stream exactly once: three rated, one hidden.
    let info = stream.info().await?.clone();
    assert_eq!(info.state.messages, 4, "{info:?}");
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_redis_master_stops_only_its_games_and_loses_nothing_acknowledged()
-> anyhow::Result<()> {
    bounded(killing_a_redis_master_stops_only_its_games_and_loses_nothing_acknowledged_steps())
        .await
}

async fn killing_a_redis_master_stops_only_its_games_and_loses_nothing_acknowledged_steps()
-> anyhow::Result<()> {
    let mut clusters = Clusters::start().await?;
    let p = clusters.platform().await?;
    let ns = Namespace::new(&p.namespace).map_err(anyhow::Error::msg)?;
    let master_of = |game: &str| -> anyhow::Result<usize> {
        let id: GameId = game.parse()?;
        let key = ns.game_state_key(&id);
        let slot = frontier_platform::redis_conn::key_slot(key.as_bytes());
        assert_eq!(
            slot,
            frontier_platform::redis_conn::key_slot(ns.deadlines_key(Shard::of(&id)).as_bytes())
        );
        clusters.redis.master_of_slot(slot)
    };
    // Games until two of them live on different masters.
    let mut games = Vec::new();
    let (doomed, spared) = loop {
        anyhow::ensure!(games.len() < 40, "every game on one master");
        let mut white = Client::guest(p.gateways[0], "white").await?;
        let mut black = Client::guest(p.gateways[1], "black").await?;
        let game = start_game(&mut white, &mut black, "hidden", "white").await?;
        assert_eq!(white.play(&game, "f2f3").await?, 3);
        black.event(&game, 3).await?;
        let master = master_of(&game)?;
        games.push((game, master, white, black));
        let first = games[0].1;
        if let Some(other) = games.iter().position(|g| g.1 != first) {
            break (0, other);
        }
    };
    let victim = games[doomed].1;
    step(&format!("killing Redis master {victim}"));
    clusters.redis.kill(victim)?;

    // The spared game plays on.
    {
        let (game, _, _, black) = &mut games[spared];
        assert_eq!(black.play(game, "e7e5").await?, 4);
    }
    // The doomed game's move is refused with a typed error, and changes nothing.
    {
        let (game, _, _, black) = &mut games[doomed];
        black
            .send(json!({"type": "move", "id": "down", "game_id": game, "uci": "e7e5"}))
            .await?;
        let error = black.error_for("down").await?;
        assert_eq!(error["code"], "unavailable", "{error}");
    }

    step("restarting it");
    clusters.redis.restart(victim)?;
    step("restarted");
    // Back: the doomed game continues from its last acknowledged move (version 3), so the
    // next one is version 4, and a fresh view shows every move.
    let (game, _, white, black) = &mut games[doomed];
    let version = retry_move(black, game, "e7e5").await?;
    assert_eq!(
        version, 4,
        "nothing acknowledged was lost, nothing applied twice"
    );
    white.event(game, 4).await?;
    assert_eq!(white.play(game, "g2g4").await?, 5);
    assert_eq!(black.play(game, "d8h4").await?, 6);
    let mut watcher = Client::guest(p.gateways[0], "watcher").await?;
    watcher
        .send(json!({"type": "open", "game_id": game}))
        .await?;
    let view = watcher
        .until("view", |v| v["type"] == "game" && v["version"] == 6)
        .await?;
    assert_eq!(
        view["game"]["outcome"],
        json!({"result": "black", "reason": "checkmate"}),
        "{view}"
    );
    p.stop().await;
    Ok(())
}

/// Sends a move until it is acknowledged: right after a master's restart the client may
/// still find its slots unserved for a moment (`unavailable`), which changes nothing.
async fn retry_move(c: &mut Client, game: &str, uci: &str) -> anyhow::Result<u64> {
    let deadline = tokio::time::Instant::now() + common::WAIT;
    for attempt in 0.. {
        let id = format!("retry-{attempt}");
        c.send(json!({"type": "move", "id": id, "game_id": game, "uci": uci}))
            .await?;
        let answer = c
            .until(&format!("answer to {id}"), |v| {
                (v["type"] == "ack" || v["type"] == "error") && v["id"] == id.as_str()
            })
            .await?;
        if answer["type"] == "ack" {
            return answer["version"]
                .as_u64()
                .ok_or_else(|| anyhow::anyhow!("no version: {answer}"));
        }
        anyhow::ensure!(answer["code"] == "unavailable", "{answer}");
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "still unavailable: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    unreachable!("the loop returns")
}
