//! Losing a Redis master under load, on a Redis Cluster of three masters with a replica
//! each (throwaway `redis-server`s, `cluster-node-timeout` 2 s): pairs of clients play
//! random legal moves through two gateways and two game-sessions (`--redis-ack-replicas
//! 1`), one master is SIGKILLed, the cluster promotes its replica, and the killed node is
//! started again (as a pod would be) and rejoins as the new master's replica. A move the
//! platform could not make safe meanwhile is answered `unavailable` and sent again under
//! the same id. The verdict comes from the records: every acknowledged move is in its
//! game, in order, at the version it was acknowledged at (none lost, doubled or skipped),
//! and the killed master's games resumed within 10 s.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use common::{Client, Platform, Servers, start_game};
use frontier_platform::{GameId, Namespace, RedisConn};
use frontier_rules::{Color, Position, Variant};
use frontier_testkit::cluster::RedisCluster;
use serde_json::json;

/// `cluster-node-timeout`: how long a master may be silent before it is failed over.
const NODE_TIMEOUT_MS: u32 = 2000;
/// Games played side by side.
const PAIRS: usize = 8;
/// One move per pair this often (under the gateway's message rate, 20 a second).
const PACE: Duration = Duration::from_millis(100);
/// How long a move is sent again while the platform answers `unavailable`.
const RETRY_FOR: Duration = Duration::from_secs(60);
/// How soon after the kill the killed master's games must be playing again.
const RESUME_WITHIN: Duration = Duration::from_secs(10);
/// How long the whole test may take.
const LIMIT: Duration = Duration::from_secs(300);

/// Prints a step with the time since the first one.
fn step(what: &str) {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let start = START.get_or_init(Instant::now);
    eprintln!("[{:>8.3}s] {what}", start.elapsed().as_secs_f64());
}

/// A small deterministic random source (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// What one pair of players saw.
struct Played {
    game: String,
    /// The acknowledged moves, in order, with when each was acknowledged.
    acked: Vec<(String, Instant)>,
    /// Answers `unavailable` (each followed by the same move under the same id).
    refused: u64,
    /// The game ended (by the rules) before the players were stopped.
    ended: bool,
}

/// Plays random legal moves in `game`, one per [`PACE`], until `stop` (or the game ends):
/// each move is sent until acknowledged, under one id, and must be acknowledged at the
/// next version.
async fn play(
    game: String,
    mut white: Client,
    mut black: Client,
    seed: u64,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<Played> {
    let mut rng = Rng(seed | 1);
    let mut position = Position::new(Variant::Standard);
    let mut played = Played {
        game: game.clone(),
        acked: Vec::new(),
        refused: 0,
        ended: false,
    };
    let mut pace = tokio::time::interval(PACE);
    'game: while !stop.load(Ordering::Relaxed) {
        pace.tick().await;
        let moves = position.legal_move_list();
        if moves.is_empty() {
            played.ended = true;
            break;
        }
        // Promotions aside when there is anything else (a plain move needs no choice).
        let plain: Vec<_> = moves.iter().filter(|m| m.to_string().len() == 4).collect();
        let chosen = if plain.is_empty() {
            moves[rng.below(moves.len())]
        } else {
            *plain[rng.below(plain.len())]
        };
        let uci = chosen.to_string();
        let id = format!("m{}", played.acked.len());
        let mover = if position.turn() == Color::White {
            &mut white
        } else {
            &mut black
        };
        let deadline = Instant::now() + RETRY_FOR;
        loop {
            mover
                .send(json!({"type": "move", "id": id, "game_id": game, "uci": uci}))
                .await?;
            let answer = mover
                .until(&format!("the answer to {id}"), |v| {
                    (v["type"] == "ack" || v["type"] == "error") && v["id"] == id.as_str()
                })
                .await?;
            if answer["type"] == "ack" {
                let version = answer["version"].as_u64().context("an ack's version")?;
                anyhow::ensure!(
                    version == 3 + played.acked.len() as u64,
                    "{game}: {uci} acknowledged at version {version} after {} moves",
                    played.acked.len()
                );
                break;
            }
            match answer["code"].as_str() {
                Some("unavailable") => {
                    played.refused += 1;
                    anyhow::ensure!(
                        Instant::now() < deadline,
                        "{game}: {uci} still unavailable after {RETRY_FOR:?}"
                    );
                    // A client's pause before it sends again.
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                // Drawn by the rules (repetition, fifty moves, material) at the last move.
                Some("game_over") => {
                    played.ended = true;
                    break 'game;
                }
                _ => anyhow::bail!("{game}: {uci} refused: {answer}"),
            }
        }
        position.play_unchecked(&chosen);
        played.acked.push((uci, Instant::now()));
    }
    Ok(played)
}

/// The longest wait for an acknowledged move of a game between `since` and `until` (or
/// the game's end, if it ended).
fn longest_gap(played: &Played, since: Instant, until: Instant) -> Duration {
    let mut last = since;
    let mut longest = Duration::ZERO;
    for (_, at) in played.acked.iter().filter(|(_, at)| *at >= since) {
        longest = longest.max(at.duration_since(last));
        last = *at;
    }
    if !played.ended {
        longest = longest.max(until.saturating_duration_since(last));
    }
    longest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_redis_master_with_a_replica_fails_over_and_loses_no_acknowledged_move()
-> anyhow::Result<()> {
    tokio::time::timeout(LIMIT, failover_steps())
        .await
        .map_err(|_| anyhow::anyhow!("not finished within {LIMIT:?}: see the last step"))?
}

async fn failover_steps() -> anyhow::Result<()> {
    step("starting a Redis Cluster: 3 masters, 3 replicas");
    let mut redis = RedisCluster::start_replicated(NODE_TIMEOUT_MS)?;
    let servers = Servers {
        redis: redis.urls(),
        nats: frontier_testkit::nats_url(),
        replicas: 1,
    };
    let p = Platform::start_on(&servers, 2, 2, None, &["--redis-ack-replicas", "1"]).await?;
    let ns = Namespace::new(&p.namespace).map_err(anyhow::Error::msg)?;
    // What game-session's default would choose here: every master has a replica.
    let conn = RedisConn::connect(&redis.urls(), false).await?;
    let store = frontier_game_session::store::RedisStore::new(conn.clone(), ns.clone());
    assert_eq!(store.replicas_per_master().await?, 1);

    step("starting the games");
    let stop = Arc::new(AtomicBool::new(false));
    let mut games = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..PAIRS {
        let mut white = Client::guest(p.gateways[i % 2], "white").await?;
        let mut black = Client::guest(p.gateways[(i + 1) % 2], "black").await?;
        let game = start_game(&mut white, &mut black, "standard", "white").await?;
        let id: GameId = game.parse()?;
        let slot = frontier_platform::redis_conn::key_slot(ns.game_state_key(&id).as_bytes());
        games.push((game.clone(), slot));
        tasks.push(tokio::spawn(play(
            game,
            white,
            black,
            0x9e37_79b9_7f4a_7c15 ^ i as u64,
            stop.clone(),
        )));
    }
    // Load for a moment, then kill the master of the first game.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let victim = redis.master_of_slot(games[0].1)?;
    let doomed: Vec<String> = games
        .iter()
        .filter(|(_, slot)| redis.master_of_slot(*slot).ok() == Some(victim))
        .map(|(g, _)| g.clone())
        .collect();
    step(&format!(
        "killing Redis master {victim} ({} of {PAIRS} games on it)",
        doomed.len()
    ));
    let killed_at = Instant::now();
    redis.kill(victim)?;

    // The cluster fails it and promotes its replica.
    let deadline = Instant::now() + Duration::from_secs(60);
    let promoted = loop {
        match redis.master_of_slot(games[0].1) {
            Ok(node) if node != victim => break node,
            _ => {}
        }
        anyhow::ensure!(Instant::now() < deadline, "no replica promoted within 60 s");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let promotion = killed_at.elapsed();
    step(&format!(
        "node {promoted} promoted after {promotion:?}; restarting node {victim}"
    ));
    // As a pod is started again: it rejoins as the new master's replica, and writes to
    // its slots are confirmed by a replica again.
    redis.restart(victim)?;
    redis.wait_replicas_synced()?;
    let rejoined = killed_at.elapsed();
    step(&format!(
        "node {victim} a synchronised replica after {rejoined:?}"
    ));
    // Play on past the time the killed master's games had to resume in, and a while after
    // the node came back: a game that has not resumed shows as one long pause.
    let until = (killed_at + RESUME_WITHIN).max(Instant::now()) + Duration::from_secs(3);
    tokio::time::sleep_until(until.into()).await;
    stop.store(true, Ordering::Relaxed);
    let stopped_at = Instant::now();
    let mut played = Vec::new();
    for t in tasks {
        played.push(t.await??);
    }

    step("checking every game's record");
    let mut watcher = Client::guest(p.gateways[0], "watcher").await?;
    let mut conn = conn;
    let (mut moves, mut refused) = (0, 0);
    let mut outages = Vec::new();
    for g in &played {
        watcher
            .send(json!({"type": "open", "game_id": g.game}))
            .await?;
        let view = watcher
            .until("a view", |v| {
                v["type"] == "game" && v["game_id"] == g.game.as_str()
            })
            .await?;
        let recorded: Vec<&str> = view["game"]["moves"]
            .as_array()
            .context("moves")?
            .iter()
            .filter_map(|m| m["uci"].as_str())
            .collect();
        let acked: Vec<&str> = g.acked.iter().map(|(uci, _)| uci.as_str()).collect();
        assert_eq!(
            recorded, acked,
            "{}: the record holds exactly the acknowledged moves",
            g.game
        );
        assert_eq!(view["version"], json!(2 + acked.len()), "{view}");
        let id: GameId = g.game.parse()?;
        let logged: u64 = redis::cmd("LLEN")
            .arg(ns.game_log_key(&id))
            .query_async(&mut conn)
            .await?;
        assert_eq!(
            logged,
            2 + acked.len() as u64,
            "{}: one log entry per version",
            g.game
        );
        moves += acked.len();
        refused += g.refused;
        if doomed.contains(&g.game) {
            outages.push(longest_gap(g, killed_at, stopped_at));
        }
        watcher.discard_unread();
    }
    outages.sort();
    let spared_gap = played
        .iter()
        .filter(|g| !doomed.contains(&g.game))
        .map(|g| longest_gap(g, killed_at, stopped_at))
        .max()
        .unwrap_or_default();
    eprintln!(
        "figures: replica promoted {promotion:?} after the kill, killed node synchronised again \
         {rejoined:?}; the killed master's {} games paused at most {:?} (median {:?}), the \
         others at most {spared_gap:?}; {moves} moves acknowledged, {refused} answers \
         `unavailable` (each sent again), 0 lost",
        outages.len(),
        outages.last().copied().unwrap_or_default(),
        outages.get(outages.len() / 2).copied().unwrap_or_default(),
    );
    let worst = outages.last().copied().unwrap_or_default();
    assert!(
        worst <= RESUME_WITHIN,
        "the killed master's games paused {worst:?}, more than {RESUME_WITHIN:?}"
    );
    p.stop().await;
    Ok(())
}
