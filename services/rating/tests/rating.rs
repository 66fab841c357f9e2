//! The rating service on real JetStream and Postgres: a game delivered twice changes
//! ratings once; a service killed between commit and ack and restarted still counts the
//! game once; two instances consuming at once while one player finishes many games at the
//! same time lose no update.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use frontier_glicko2::{INITIAL, Score, rate_game};
use frontier_platform::{Namespace, Shutdown};
use frontier_proto::games::v1::{FinishedGame, Player, Variant};
use frontier_rating::{ConsumerSettings, ConsumerStats, MIGRATOR, PgStore, consume};
use futures_util::StreamExt as _;
use prost::Message as _;
use sqlx::PgPool;
use uuid::Uuid;

struct Env {
    ns: Namespace,
    pool: PgPool,
    url: String,
    nats: async_nats::Client,
    js: jetstream::Context,
}

async fn env() -> Env {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let url = frontier_testkit::fresh_database().await.expect("Postgres");
    let pool = PgPool::connect(&url).await.expect("connect");
    MIGRATOR.run(&pool).await.expect("migrate");
    let nats = async_nats::connect(frontier_testkit::nats_url())
        .await
        .expect("NATS");
    let js = jetstream::new(nats.clone());
    frontier_platform::streams::ensure_finished_games(&js, &ns, 1)
        .await
        .expect("stream");
    Env {
        ns,
        pool,
        url,
        nats,
        js,
    }
}

fn settings() -> ConsumerSettings {
    ConsumerSettings {
        ack_wait: Duration::from_secs(1),
        ..ConsumerSettings::named("rating")
    }
}

impl Env {
    fn instance(&self, crash: bool) -> Shutdown {
        self.instance_with(
            ConsumerSettings {
                hang_after_commit: crash,
                ..settings()
            },
            Arc::default(),
        )
    }

    fn instance_with(&self, settings: ConsumerSettings, stats: Arc<ConsumerStats>) -> Shutdown {
        let stop = Shutdown::new();
        let (pool, nats, ns, stop2) = (
            self.pool.clone(),
            self.nats.clone(),
            self.ns.clone(),
            stop.clone(),
        );
        tokio::spawn(async move {
            if let Err(e) = consume(PgStore::new(pool), nats, &ns, &settings, stats, stop2).await {
                eprintln!("consumer: {e:#}");
            }
        });
        stop
    }

    async fn publish_raw(&self, payload: Vec<u8>) {
        self.js
            .publish(self.ns.finished_games_subject(), payload.into())
            .await
            .expect("publish")
            .await
            .expect("stored");
    }

    /// The durable consumer's state: (ack pending, redelivered, pending).
    async fn consumer_state(&self) -> (usize, usize, u64) {
        let mut consumer: jetstream::consumer::PullConsumer = self
            .js
            .get_consumer_from_stream("rating", self.ns.finished_games_stream())
            .await
            .expect("consumer");
        let info = consumer.info().await.expect("info");
        (info.num_ack_pending, info.num_redelivered, info.num_pending)
    }

    async fn publish(&self, game: &FinishedGame, msg_id: &str) {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", msg_id);
        self.js
            .publish_with_headers(
                self.ns.finished_games_subject(),
                headers,
                game.encode_to_vec().into(),
            )
            .await
            .expect("publish")
            .await
            .expect("stored");
    }

    async fn recorded(&self) -> async_nats::Subscriber {
        let sub = self
            .nats
            .subscribe(self.ns.recorded_games_subject())
            .await
            .expect("sub");
        self.nats.flush().await.expect("flush");
        frontier_testkit::nats_round_trip(&self.nats).await;
        sub
    }

    async fn rated_games(&self, player: Uuid) -> i32 {
        sqlx::query_scalar(
            "SELECT rated_games FROM ratings WHERE player_id = $1 AND variant = 'standard'",
        )
        .bind(player)
        .fetch_optional(&self.pool)
        .await
        .expect("query")
        .unwrap_or(0)
    }

    async fn stop(self) {
        let _ = self.js.delete_stream(self.ns.finished_games_stream()).await;
    }
}

async fn next_notice(sub: &mut async_nats::Subscriber) -> serde_json::Value {
    let msg = tokio::time::timeout(Duration::from_secs(20), sub.next())
        .await
        .expect("a game is recorded")
        .expect("open");
    serde_json::from_slice(&msg.payload).expect("json")
}

fn player(id: Uuid, name: &str) -> Player {
    Player {
        id: id.to_string(),
        name: name.to_owned(),
        guest: false,
        bot: false,
        bot_level: 0,
    }
}

fn finished(white: Uuid, black: Uuid, result: &str, ended_at_ms: i64) -> FinishedGame {
    FinishedGame {
        game_id: Uuid::now_v7().to_string(),
        variant: Variant::Standard as i32,
        rated: true,
        white: Some(player(white, "w")),
        black: Some(player(black, "b")),
        result: result.to_owned(),
        outcome: format!("{result}-resignation"),
        created_at_ms: ended_at_ms - 1000,
        started_at_ms: ended_at_ms - 900,
        ended_at_ms,
        start_fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
        final_fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
        ..Default::default()
    }
}

const NOW: i64 = 1_800_000_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_delivered_twice_changes_ratings_once() {
    let env = env().await;
    let mut notices = env.recorded().await;
    let stop = env.instance(false);
    let (w, b) = (Uuid::now_v7(), Uuid::now_v7());
    let game = finished(w, b, "white", NOW);
    // Two messages with different message ids: JetStream keeps both, the service must not.
    env.publish(&game, "first").await;
    env.publish(&game, "second").await;
    let first = next_notice(&mut notices).await;
    let second = next_notice(&mut notices).await;
    assert_eq!(
        (first["duplicate"].clone(), second["duplicate"].clone()),
        (false.into(), true.into())
    );
    assert_eq!(env.rated_games(w).await, 1);
    let (rating, rd): (f64, f64) =
        sqlx::query_as("SELECT rating, rd FROM ratings WHERE player_id = $1")
            .bind(w)
            .fetch_one(&env.pool)
            .await
            .expect("row");
    let expected = rate_game(INITIAL, 0.0, INITIAL, Score::Win);
    assert!((rating - expected.rating).abs() < 1e-6 && (rd - expected.rd).abs() < 1e-6);
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM games")
        .fetch_one(&env.pool)
        .await
        .expect("count");
    assert_eq!(stored, 1);
    stop.trigger();
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_between_commit_and_ack_and_restarted_still_counts_once() {
    let env = env().await;
    let mut notices = env.recorded().await;
    let (w, b) = (Uuid::now_v7(), Uuid::now_v7());
    // A rating process that stops right after its first commit, before acknowledging; it
    // is killed there with SIGKILL.
    let mut doomed = std::process::Command::new(frontier_testkit::frontier_bin())
        .arg("rating")
        .args([
            "--nats-url",
            &frontier_testkit::nats_url(),
            "--database-url",
            &env.url,
            "--namespace",
            env.ns.prefix(),
            "--ack-wait",
            "1s",
            "--test-hang-after-commit",
            // Any free port for its read API (another rating may hold the default).
            "--listen",
            "127.0.0.1:0",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the rating binary starts");
    let game = finished(w, b, "black", NOW);
    env.publish(&game, "g1").await;
    let stdout = doomed.stdout.take().expect("piped");
    let line = tokio::task::spawn_blocking(move || {
        use std::io::BufRead as _;
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find(|l| l.starts_with("COMMITTED"))
            .unwrap_or_default()
    })
    .await
    .expect("join");
    assert_eq!(line.trim(), format!("COMMITTED {}", game.game_id));
    doomed.kill().expect("SIGKILL");
    let status = doomed.wait().expect("wait");
    assert!(!status.success(), "it died");
    assert_eq!(env.rated_games(b).await, 1, "the commit happened");
    // Restarted: the unacknowledged game comes again and changes nothing.
    let stop = env.instance(false);
    let notice = next_notice(&mut notices).await;
    assert_eq!(notice["duplicate"], true);
    assert_eq!(env.rated_games(b).await, 1);
    let history: i64 =
        sqlx::query_scalar("SELECT count(*) FROM rating_history WHERE player_id = $1")
            .bind(b)
            .fetch_one(&env.pool)
            .await
            .expect("count");
    assert_eq!(history, 1);
    stop.trigger();
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_and_one_busy_player_lose_no_update() {
    let env = env().await;
    let mut notices = env.recorded().await;
    let stops = [env.instance(false), env.instance(false)];
    let busy = Uuid::now_v7();
    const GAMES: usize = 12;
    for i in 0..GAMES {
        let opponent = Uuid::now_v7();
        let result = ["white", "black", "draw"][i % 3];
        // All end at the same moment.
        env.publish(&finished(busy, opponent, result, NOW), &format!("m{i}"))
            .await;
    }
    for _ in 0..GAMES {
        next_notice(&mut notices).await;
    }
    assert_eq!(env.rated_games(busy).await, GAMES as i32);
    let history: i64 =
        sqlx::query_scalar("SELECT count(*) FROM rating_history WHERE player_id = $1")
            .bind(busy)
            .fetch_one(&env.pool)
            .await
            .expect("count");
    assert_eq!(history, GAMES as i64);
    // The rating row is the result of the last applied history step (nothing overwritten).
    let (rd,): (f64,) = sqlx::query_as("SELECT rd FROM ratings WHERE player_id = $1")
        .bind(busy)
        .fetch_one(&env.pool)
        .await
        .expect("row");
    let min_rd: f64 = sqlx::query_scalar("SELECT min(rd) FROM rating_history WHERE player_id = $1")
        .bind(busy)
        .fetch_one(&env.pool)
        .await
        .expect("min");
    assert!(
        (rd - min_rd).abs() < 1e-9,
        "RD only shrinks with games at one moment: {rd} vs {min_rd}"
    );
    for s in stops {
        s.trigger();
    }
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn casual_aborted_and_guest_games_are_stored_not_rated() {
    let env = env().await;
    let mut notices = env.recorded().await;
    let stop = env.instance(false);
    let (w, b) = (Uuid::now_v7(), Uuid::now_v7());
    let mut casual = finished(w, b, "white", NOW);
    casual.rated = false;
    let mut aborted = finished(w, b, "aborted", NOW);
    aborted.outcome = "aborted".into();
    let mut guest = finished(w, b, "black", NOW);
    if let Some(p) = guest.white.as_mut() {
        p.guest = true;
    }
    for (i, g) in [casual, aborted, guest].iter().enumerate() {
        env.publish(g, &format!("x{i}")).await;
        let n = next_notice(&mut notices).await;
        assert_eq!(n["rated"], false);
    }
    assert_eq!(env.rated_games(w).await, 0);
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM games")
        .fetch_one(&env.pool)
        .await
        .expect("count");
    assert_eq!(stored, 3);
    stop.trigger();
    env.stop().await;
}

/// Waits (polling, bounded) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_that_can_never_be_accepted_are_terminated_and_never_stall_the_stream() {
    let env = env().await;
    let mut notices = env.recorded().await;
    let stats = Arc::new(ConsumerStats::default());
    // More refusals than JetStream's default limit of unacknowledged messages (1,000): had
    // they been redelivered forever, the valid game after them would never be delivered.
    const BAD: u64 = 1_100;
    let (w, b) = (Uuid::now_v7(), Uuid::now_v7());
    env.publish_raw(b"not a protobuf \xff\xff".to_vec()).await;
    for i in 1..BAD {
        let mut game = finished(w, b, "white", NOW);
        match i % 3 {
            0 => game.black = None,
            1 => game.game_id = "not-a-uuid".into(),
            _ => game.result = "sideways".into(),
        }
        env.publish_raw(game.encode_to_vec()).await;
    }
    let good = finished(w, b, "white", NOW);
    env.publish(&good, "good").await;
    let stop = env.instance_with(settings(), stats.clone());
    let notice = next_notice(&mut notices).await;
    assert_eq!(notice["game_id"], good.game_id.as_str());
    assert_eq!(notice["rated"], true);
    assert_eq!(env.rated_games(w).await, 1);
    until("every refusal counted", || {
        stats.rejected.load(std::sync::atomic::Ordering::Relaxed) == BAD
    })
    .await;
    let (ack_pending, redelivered, pending) = env.consumer_state().await;
    assert_eq!(
        (ack_pending, redelivered, pending),
        (0, 0, 0),
        "nothing waits for an ack, nothing was delivered twice"
    );
    assert_eq!(stats.snapshot(), [1, 0, BAD, 0, 0]);
    stop.trigger();
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storage_failure_is_retried_with_backoff_then_set_aside_after_max_deliver() {
    let env = env().await;
    let mut notices = env.recorded().await;
    let stats = Arc::new(ConsumerStats::default());
    // Postgres refuses every insert while the table is away: a failure that is not the
    // record's fault, so it is retried.
    sqlx::query("ALTER TABLE games RENAME TO games_away")
        .execute(&env.pool)
        .await
        .expect("rename");
    let stop = env.instance_with(
        ConsumerSettings {
            max_deliver: 3,
            retry_base: Duration::from_millis(20),
            retry_cap: Duration::from_millis(40),
            ..settings()
        },
        stats.clone(),
    );
    let (w, b) = (Uuid::now_v7(), Uuid::now_v7());
    let doomed = finished(w, b, "white", NOW);
    env.publish(&doomed, "doomed").await;
    until("the third delivery to be given up", || {
        stats.set_aside.load(std::sync::atomic::Ordering::Relaxed) == 1
    })
    .await;
    assert_eq!(
        stats.snapshot(),
        [0, 0, 0, 2, 1],
        "two retries, then set aside"
    );
    // The next game, once storage is back, is recorded at once; the one set aside stays in
    // the stream and is not delivered again.
    sqlx::query("ALTER TABLE games_away RENAME TO games")
        .execute(&env.pool)
        .await
        .expect("rename back");
    let next = finished(w, b, "black", NOW);
    env.publish(&next, "next").await;
    let notice = next_notice(&mut notices).await;
    assert_eq!(notice["game_id"], next.game_id.as_str());
    let (ack_pending, _, pending) = env.consumer_state().await;
    assert_eq!((ack_pending, pending), (0, 0));
    assert_eq!(stats.snapshot(), [1, 0, 0, 2, 1]);
    stop.trigger();
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storage_failure_that_ends_is_retried_until_the_game_is_recorded() {
    let env = env().await;
    let mut notices = env.recorded().await;
    let stats = Arc::new(ConsumerStats::default());
    sqlx::query("ALTER TABLE games RENAME TO games_away")
        .execute(&env.pool)
        .await
        .expect("rename");
    let stop = env.instance_with(
        ConsumerSettings {
            retry_base: Duration::from_millis(20),
            retry_cap: Duration::from_millis(200),
            ..settings()
        },
        stats.clone(),
    );
    let (w, b) = (Uuid::now_v7(), Uuid::now_v7());
    let game = finished(w, b, "draw", NOW);
    env.publish(&game, "g").await;
    until("a retry", || {
        stats.retries.load(std::sync::atomic::Ordering::Relaxed) >= 1
    })
    .await;
    sqlx::query("ALTER TABLE games_away RENAME TO games")
        .execute(&env.pool)
        .await
        .expect("rename back");
    let notice = next_notice(&mut notices).await;
    assert_eq!(notice["game_id"], game.game_id.as_str());
    assert_eq!(env.rated_games(w).await, 1);
    let [recorded, _, rejected, retries, set_aside] = stats.snapshot();
    assert_eq!((recorded, rejected, set_aside), (1, 0, 0));
    assert!(retries >= 1);
    stop.trigger();
    env.stop().await;
}

#[test]
fn retry_delays_double_up_to_the_cap() {
    let s = ConsumerSettings {
        retry_base: Duration::from_secs(1),
        retry_cap: Duration::from_secs(60),
        ..ConsumerSettings::named("r")
    };
    let delays: Vec<u64> = (1..=8).map(|d| s.retry_delay(d).as_secs()).collect();
    assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60]);
    assert_eq!(s.retry_delay(1_000_000), Duration::from_secs(60));
}
