//! What a move costs game-session and Redis at ply 20 and at ply 400, in each storage
//! format (`make bench-long-games`; needs Redis at its standard address, or
//! `FRONTIER_TEST_REDIS_URL`).
//!
//! For each format and starting ply: `GAMES` standard games on one `GameService` over the
//! real Redis store (the state cache on, as in production; events on the in-memory bus,
//! whose cost does not depend on the game's length), each played to the starting ply
//! along one long legal line that never ends the game, then `MOVES` more moves in each,
//! round robin. Measured over those moves: this process's CPU (the service's work: the
//! driver around it is a few lines) from `/proc/self/task/*/schedstat`, Redis's from its
//! `INFO cpu`, and the bytes a move sends to Redis (the state plus the records appended).
//! Run it on a quiet machine: Redis's CPU is the whole server's.

use std::sync::Arc;
use std::time::Instant;

use frontier_game_session::bus::MemoryBus;
use frontier_game_session::game::{Action, Player};
use frontier_game_session::service::{GameService, NewBoard, RandomLayouts, Settings, SystemClock};
use frontier_game_session::store::{GameStore, RedisStore};
use frontier_platform::{GameId, Namespace, PlayerId};
use frontier_rules::{Color, Variant};

const GAMES: usize = 100;
const MOVES: usize = 40;
const ROUNDS: usize = 3;
const PLIES: [usize; 2] = [20, 400];

type Service = GameService<RedisStore, MemoryBus>;

fn player(name: &str) -> Player {
    Player {
        id: PlayerId::new().to_string(),
        name: name.to_owned(),
        guest: true,
        bot: false,
        bot_level: None,
    }
}

/// CPU time of this process's threads so far, in ns.
fn own_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Redis's CPU time so far (user + system), in ns.
async fn redis_cpu_ns(conn: &mut frontier_platform::redis_conn::RedisConn) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(conn)
        .await
        .unwrap_or_default();
    let seconds: f64 = info
        .lines()
        .filter(|l| l.starts_with("used_cpu_user:") || l.starts_with("used_cpu_sys:"))
        .filter_map(|l| l.split_once(':')?.1.trim().parse::<f64>().ok())
        .sum();
    (seconds * 1e9) as u64
}

struct Game {
    id: GameId,
    white: Player,
    black: Player,
}

async fn new_games(svc: &Service) -> Vec<Game> {
    let mut games = Vec::with_capacity(GAMES);
    for _ in 0..GAMES {
        let (white, black) = (player("w"), player("b"));
        let (id, code, _) = svc
            .create_board(NewBoard {
                creator: white.clone(),
                variant: Variant::Standard,
                color: Some(Color::White),
                rated: false,
                time_control: None,
                start_fen: None,
            })
            .await
            .expect("created");
        svc.join_board(black.clone(), &code).await.expect("joined");
        games.push(Game { id, white, black });
    }
    games
}

async fn play(svc: &Service, games: &[Game], line: &[String], plies: std::ops::Range<usize>) {
    for ply in plies {
        for g in games {
            let seat = if ply.is_multiple_of(2) {
                &g.white
            } else {
                &g.black
            };
            svc.act(
                &g.id,
                &seat.id,
                "",
                None,
                &Action::Move(line[ply].clone(), None),
            )
            .await
            .expect("a legal move of the line");
        }
    }
}

struct Row {
    format: u32,
    ply: usize,
    own_us: f64,
    redis_us: f64,
    wall_us: f64,
    state_bytes: usize,
}

async fn measure(format: u32, ply: usize, line: &[String]) -> Row {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let store = RedisStore::connect(&frontier_testkit::redis_url(), ns.clone())
        .await
        .expect("Redis answers (FRONTIER_TEST_REDIS_URL, or make bench-long-games)");
    let mut conn = store.connection();
    let svc = GameService::new(
        store,
        MemoryBus::new(ns, 64),
        Arc::new(SystemClock),
        Arc::new(RandomLayouts),
        Settings {
            storage_format: format,
            ..Settings::default()
        },
    );
    let games = new_games(&svc).await;
    play(&svc, &games, line, 0..ply).await;
    let (own0, redis0, start) = (own_cpu_ns(), redis_cpu_ns(&mut conn).await, Instant::now());
    play(&svc, &games, line, ply..ply + MOVES).await;
    let wall = start.elapsed();
    let (own1, redis1) = (own_cpu_ns(), redis_cpu_ns(&mut conn).await);
    let stored = svc
        .store()
        .load(&games[0].id)
        .await
        .expect("load")
        .expect("there");
    let moves = (GAMES * MOVES) as f64;
    for g in &games {
        let _ = svc.act(&g.id, &g.white.id, "", None, &Action::Resign).await;
    }
    Row {
        format,
        ply,
        own_us: own1.saturating_sub(own0) as f64 / 1e3 / moves,
        redis_us: redis1.saturating_sub(redis0) as f64 / 1e3 / moves,
        wall_us: wall.as_secs_f64() * 1e6 / moves,
        state_bytes: stored.state.len(),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let longest = PLIES.iter().max().copied().unwrap_or(0) + MOVES;
    let line = frontier_game_session::testing::long_line(Variant::Standard, longest, 1)
        .expect("a long line");
    println!(
        "{GAMES} games, {MOVES} moves each from the starting ply, median of {ROUNDS} rounds \
         (µs per move; state: bytes of the stored state after the last move)"
    );
    println!("| format | from ply | game-session CPU | Redis CPU | wall (one at a time) | state |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for format in [1, 2, 3] {
        for ply in PLIES {
            let rows: Vec<Row> = (0..ROUNDS)
                .map(|_| runtime.block_on(measure(format, ply, &line)))
                .collect();
            let state = rows.last().map_or(0, |r| r.state_bytes);
            let pick = |f: fn(&Row) -> f64| median(rows.iter().map(f).collect());
            println!(
                "| {} | {} | {:.1} | {:.1} | {:.1} | {} |",
                rows[0].format,
                rows[0].ply,
                pick(|r| r.own_us),
                pick(|r| r.redis_us),
                pick(|r| r.wall_us),
                state
            );
        }
    }
}
