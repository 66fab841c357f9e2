//! How many finished games one fair-play worker screens per second, per variant, on real
//! JetStream and Postgres: a backlog of games published first, then one consumer with
//! `--concurrency` 2 (this machine's cores) drains it. Ignored by default (a measurement,
//! docs/benchmarks.md): `scripts/test-services.sh cargo test -p frontier-fairplay-service
//! --test throughput -- --ignored --nocapture`. The engine and the analysis are built at
//! opt-level 3 in test builds too (the workspace's `profile.dev.package`), so the figure is
//! the release one for the part that costs.

#[path = "../../../libs/fairplay/tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use common::{LAYOUT, Player, play};
use frontier_engine::Level;
use frontier_fairplay::{Settings, Thresholds};
use frontier_fairplay_service::{
    Analyser, ConsumerSettings, ConsumerStats, MIGRATOR, PgStore, RatingSource, consume,
};
use frontier_platform::time::SystemClock;
use frontier_platform::{Namespace, Shutdown, convert::variant_to_proto};
use frontier_proto::games::v1::{FinishedGame, MoveRecord, Player as PbPlayer};
use frontier_rules::Variant;
use prost::Message as _;
use uuid::Uuid;

/// This process's CPU time in seconds (user + system, from /proc/self/stat).
fn process_cpu_s() -> f64 {
    let text = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = text.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<f64>().ok()))
        .sum();
    ticks / 100.0
}

fn person(name: &str) -> PbPlayer {
    PbPlayer {
        id: Uuid::new_v4().to_string(),
        name: name.to_owned(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn games_screened_per_second_by_one_worker() {
    const GAMES: u64 = 8;
    const PLIES: u32 = 60;
    let settings = Settings::default();
    println!(
        "one worker, concurrency 2, {} nodes per position, {GAMES} games of up to {PLIES} plies (Medium vs Medium) per variant",
        settings.nodes
    );
    for variant in Variant::ALL {
        let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
        let url = frontier_testkit::fresh_database().await.expect("Postgres");
        let pool = sqlx::PgPool::connect(&url).await.expect("connect");
        MIGRATOR.run(&pool).await.expect("migrate");
        let nats = async_nats::connect(frontier_testkit::nats_url())
            .await
            .expect("NATS");
        let js = jetstream::new(nats.clone());
        frontier_platform::streams::ensure_finished_games(&js, &ns, 1)
            .await
            .expect("stream");
        let layout = (variant == Variant::Hidden).then_some(LAYOUT);
        let (white, black) = (person("white"), person("black"));
        let mut plies = 0;
        for seed in 0..GAMES {
            let (input, _) = play(
                variant,
                layout,
                Player::Honest(Level::Medium, Level::Medium.node_budget(variant)),
                Player::Honest(Level::Medium, Level::Medium.node_budget(variant)),
                7_000 + seed,
                PLIES,
            );
            plies += input.moves.len();
            let game = FinishedGame {
                game_id: Uuid::new_v4().to_string(),
                variant: variant_to_proto(variant) as i32,
                rated: true,
                white: Some(white.clone()),
                black: Some(black.clone()),
                result: "draw".to_owned(),
                outcome: "draw-agreement".to_owned(),
                moves: input
                    .moves
                    .iter()
                    .enumerate()
                    .map(|(i, m)| MoveRecord {
                        ply: i as u32 + 1,
                        uci: m.uci.clone(),
                        at_ms: m.at_ms,
                        ..Default::default()
                    })
                    .collect(),
                ended_at_ms: 1_800_000_000_000 + seed as i64,
                initial_layout: input.initial_layout.clone().unwrap_or_default(),
                ..Default::default()
            };
            js.publish(ns.finished_games_subject(), game.encode_to_vec().into())
                .await
                .expect("publish")
                .await
                .expect("stored");
        }
        let stats = Arc::new(ConsumerStats::default());
        let stop = Shutdown::new();
        let cpu0 = process_cpu_s();
        let t0 = Instant::now();
        let consumer = tokio::spawn(consume(
            PgStore::new(pool, Thresholds::default()),
            nats,
            ns,
            ConsumerSettings {
                concurrency: 2,
                ..ConsumerSettings::named("fairplay")
            },
            Analyser {
                settings,
                ratings: RatingSource::default(),
                clock: Arc::new(SystemClock),
            },
            stats.clone(),
            stop.clone(),
        ));
        tokio::time::timeout(Duration::from_secs(600), stats.wait_settled(GAMES))
            .await
            .expect("the backlog drains");
        let wall = t0.elapsed().as_secs_f64();
        let cpu = process_cpu_s() - cpu0;
        assert_eq!(stats.snapshot()[0], GAMES, "every game analysed");
        stop.trigger();
        let _ = consumer.await;
        println!(
            "{variant:?}: {GAMES} games ({:.0} plies each) in {wall:.1} s: {:.2} games/s per worker, {:.2} CPU s per game",
            plies as f64 / GAMES as f64,
            GAMES as f64 / wall,
            cpu / GAMES as f64
        );
    }
}
