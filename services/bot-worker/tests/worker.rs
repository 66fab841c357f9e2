//! The bot-worker on real NATS (JetStream) with a real game-session (in-process, on real
//! Redis and NATS): a job is played by its seat at the next version; a job done twice
//! applies once; a stale job is acknowledged without a move; poison jobs are terminated
//! and counted while a good job behind them is done; a hidden-chess bot answers its
//! pending promotion; a job waits out game-session being
//! down; a long think keeps its job; and a worker process killed while holding a job has
//! it done by another worker.
//!
//! Games are ordinary boards (A creates as White, B joins): the job is the one
//! game-session would make for A's seat — A's own `game` frame.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use frontier_bot_worker::{Counts, JetStreamSource, Service, Settings, Stats};
use frontier_game_session::bus::NatsBus;
use frontier_game_session::service::{FixedLayout, GameService, LayoutSource, RandomLayouts};
use frontier_game_session::store::RedisStore;
use frontier_platform::names::BOT_WORKERS_CONSUMER;
use frontier_platform::time::SystemClock;
use frontier_platform::{Namespace, PlayerId, Shutdown};
use frontier_proto::games::v1 as games;
use frontier_proto::gamesession::v1 as pb;
use frontier_proto::gamesession::v1::game_session_client::GameSessionClient;
use frontier_protocol::{BotJob, GameWire, ServerMessage};
use tokio::net::TcpListener;
use tokio::sync::watch;

const WAIT: Duration = Duration::from_secs(30);

type Client = GameSessionClient<tonic::transport::Channel>;

struct Env {
    ns: Namespace,
    nats: async_nats::Client,
    js: jetstream::Context,
    session: SocketAddr,
    client: Client,
    stops: Vec<Shutdown>,
}

/// Starts a game-session on `listener` in `ns` (real Redis and NATS), its hidden games
/// shuffled by `layouts`.
async fn game_session(
    ns: &Namespace,
    listener: TcpListener,
    layouts: Arc<dyn LayoutSource>,
) -> Shutdown {
    let store = RedisStore::connect(&frontier_testkit::redis_url(), ns.clone())
        .await
        .expect("Redis");
    let bus = NatsBus::connect(&frontier_testkit::nats_url(), ns.clone())
        .await
        .expect("NATS");
    let core = Arc::new(GameService::new(
        store,
        bus,
        Arc::new(SystemClock),
        layouts,
        Default::default(),
    ));
    let stop = Shutdown::new();
    tokio::spawn(
        frontier_game_session::Service::from_parts(core, Duration::from_secs(1))
            .serve(listener, stop.clone()),
    );
    stop
}

async fn env() -> Env {
    env_with(Arc::new(RandomLayouts)).await
}

async fn env_with(layouts: Arc<dyn LayoutSource>) -> Env {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let nats = async_nats::connect(frontier_testkit::nats_url())
        .await
        .expect("NATS");
    let js = jetstream::new(nats.clone());
    frontier_platform::streams::ensure_bot_jobs(&js, &ns, 1)
        .await
        .expect("the bot-job stream");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let session = listener.local_addr().expect("addr");
    let stop = game_session(&ns, listener, layouts).await;
    let client =
        frontier_proto::game_session_client(&[format!("http://{session}")]).expect("client");
    Env {
        ns,
        nats,
        js,
        session,
        client,
        stops: vec![stop],
    }
}

fn settings() -> Settings {
    Settings {
        concurrency: 2,
        ack_wait: Duration::from_secs(1),
        max_deliver: 50,
        retry_base: Duration::from_millis(100),
        retry_cap: Duration::from_millis(400),
        act_timeout: Duration::from_secs(2),
        think_delay: None,
        max_nodes: None,
    }
}

fn player(name: &str) -> games::Player {
    games::Player {
        id: PlayerId::new().to_string(),
        name: name.to_owned(),
        guest: true,
        bot: false,
        bot_level: 0,
    }
}

/// A started game: A plays White, B Black.
struct Board {
    game: String,
    a: games::Player,
    b: games::Player,
}

impl Env {
    /// Starts a worker in this process, acting on game-session at `session`.
    async fn worker(&mut self, settings: Settings, session: SocketAddr) -> Arc<Stats> {
        let source = JetStreamSource::connect(
            &self.js,
            &self.ns,
            1,
            settings.ack_wait,
            settings.max_deliver,
        )
        .await
        .expect("the shared consumer");
        let sessions =
            frontier_bot_worker::sessions(&[format!("http://{session}")]).expect("client");
        let service = Service::from_parts(source, sessions, settings);
        let stats = service.stats();
        let stop = Shutdown::new();
        tokio::spawn(service.serve(stop.clone()));
        self.stops.push(stop);
        stats
    }

    async fn board(&self) -> Board {
        self.board_of(games::Variant::Standard).await
    }

    async fn board_of(&self, variant: games::Variant) -> Board {
        let (a, b) = (player("a"), player("b"));
        let created = self
            .client
            .clone()
            .create_board(pb::CreateBoardRequest {
                creator: Some(a.clone()),
                variant: variant as i32,
                color: pb::ColorChoice::White as i32,
                rated: false,
                time_control: None,
            })
            .await
            .expect("created")
            .into_inner();
        self.client
            .clone()
            .join_board(pb::JoinBoardRequest {
                player: Some(b.clone()),
                code: created.code,
                casual_only: false,
            })
            .await
            .expect("joined");
        Board {
            game: created.game_id,
            a,
            b,
        }
    }

    /// The game as `player` sees it: its version and its `game` frame's game.
    async fn view(&self, game: &str, player: &games::Player) -> (u64, GameWire) {
        let view = self
            .client
            .clone()
            .get_view(pb::GetViewRequest {
                game_id: game.to_owned(),
                player_id: player.id.clone(),
            })
            .await
            .expect("a view")
            .into_inner();
        match serde_json::from_slice(&view.frame).expect("a frame") {
            ServerMessage::Game { game, version, .. } => {
                assert_eq!(version, view.version);
                (version, *game)
            }
            other => panic!("not a game frame: {other:?}"),
        }
    }

    async fn play(&self, board: &Board, player: &games::Player, uci: &str) {
        self.client
            .clone()
            .act(pb::ActRequest {
                game_id: board.game.clone(),
                player_id: player.id.clone(),
                client_action_id: String::new(),
                expected_version: None,
                action: Some(pb::act_request::Action::Move(pb::MoveAction {
                    uci: uci.to_owned(),
                    move_time_ms: None,
                })),
            })
            .await
            .expect("a legal move");
    }

    /// The job game-session would make for A's seat now.
    async fn job(&self, board: &Board) -> BotJob {
        let (version, view) = self.view(&board.game, &board.a).await;
        BotJob {
            job: BotJob::id_for(&board.game, version),
            game_id: board.game.clone(),
            version,
            player_id: board.a.id.clone(),
            seat: "white".to_owned(),
            level: "easy".to_owned(),
            view,
            enqueued_at_ms: frontier_platform::time::Clock::now_ms(&SystemClock),
        }
    }

    async fn publish_bytes(&self, payload: Vec<u8>, msg_id: &str) {
        self.publish_on("standard", payload, msg_id).await;
    }

    async fn publish_on(&self, variant: &str, payload: Vec<u8>, msg_id: &str) {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", msg_id);
        self.js
            .publish_with_headers(self.ns.bot_jobs_subject(variant), headers, payload.into())
            .await
            .expect("publish")
            .await
            .expect("stored");
    }

    async fn publish(&self, job: &BotJob, msg_id: &str) {
        let payload = serde_json::to_vec(job).expect("json");
        self.publish_on(&job.view.variant, payload, msg_id).await;
    }

    /// The shared consumer: (pending, awaiting ack).
    async fn queue(&self) -> (u64, usize) {
        let mut consumer: jetstream::consumer::PullConsumer = self
            .js
            .get_consumer_from_stream(BOT_WORKERS_CONSUMER, self.ns.bot_jobs_stream())
            .await
            .expect("the consumer");
        let info = consumer.info().await.expect("info");
        (info.num_pending, info.num_ack_pending)
    }

    async fn stop(self) {
        for stop in &self.stops {
            stop.trigger();
        }
        for stream in [self.ns.bot_jobs_stream(), self.ns.finished_games_stream()] {
            let _ = self.js.delete_stream(stream).await;
        }
        drop(self.nats);
    }
}

/// Waits until the counts satisfy `done`; the counts then.
async fn until(stats: &Stats, done: impl Fn(&Counts) -> bool) -> Counts {
    let mut rx: watch::Receiver<Counts> = stats.subscribe();
    let counts = tokio::time::timeout(WAIT, rx.wait_for(|c| done(c)))
        .await
        .unwrap_or_else(|_| panic!("never reached; counts: {:?}", stats.counts()))
        .expect("the worker's stats live");
    *counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_is_played_by_its_seat_at_the_next_version() {
    let mut env = env().await;
    let board = env.board().await;
    let job = env.job(&board).await;
    assert_eq!(job.version, 2, "created, started");
    env.publish(&job, &job.job).await;
    let stats = env.worker(settings(), env.session).await;
    let counts = until(&stats, |c| c.moved == 1).await;
    assert_eq!(counts.rejected + counts.refused + counts.retries, 0);
    // One move, White's (A's), at version 3; Black (B) to move.
    let (version, game) = env.view(&board.game, &board.b).await;
    assert_eq!(version, 3);
    assert_eq!(game.moves.len(), 1);
    assert_eq!(game.turn, "black");
    // Acknowledged: nothing left for any worker.
    assert_eq!(env.queue().await, (0, 0));
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_done_twice_applies_one_move() {
    let mut env = env().await;
    let board = env.board().await;
    let job = env.job(&board).await;
    // Published twice under its id (the stream drops the repeat) and once more under
    // another id (as if delivered again): two deliveries of one job.
    env.publish(&job, &job.job).await;
    env.publish(&job, &job.job).await;
    env.publish(&job, "again").await;
    let stats = env.worker(settings(), env.session).await;
    let counts = until(&stats, |c| c.moved + c.duplicates + c.refused == 2).await;
    assert_eq!(counts.moved, 1, "{counts:?}");
    let (version, game) = env.view(&board.game, &board.b).await;
    assert_eq!((version, game.moves.len()), (3, 1));
    assert_eq!(env.queue().await, (0, 0));
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_job_is_acknowledged_without_a_move() {
    let mut env = env().await;
    let board = env.board().await;
    let job = env.job(&board).await;
    // The game moves on before the job is worked: White is to move again, at version 4.
    env.play(&board, &board.a, "e2e4").await;
    env.play(&board, &board.b, "e7e5").await;
    env.publish(&job, &job.job).await;
    let stats = env.worker(settings(), env.session).await;
    let counts = until(&stats, |c| c.refused == 1).await;
    assert_eq!(counts.moved, 0);
    let (version, game) = env.view(&board.game, &board.b).await;
    assert_eq!((version, game.moves.len()), (4, 2));
    assert_eq!(env.queue().await, (0, 0));
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn poison_jobs_are_terminated_and_counted_and_a_good_job_behind_them_is_done() {
    let mut env = env().await;
    let board = env.board().await;
    let job = env.job(&board).await;
    env.publish_bytes(b"{\"job\": garbage".to_vec(), "garbage")
        .await;
    let mut impossible = job.clone();
    impossible.view.fen = "8/8/8/8/8/8/8/8 w - - 0 1".to_owned();
    env.publish(&impossible, "impossible").await;
    env.publish(&job, &job.job).await;
    let stats = env.worker(settings(), env.session).await;
    let counts = until(&stats, |c| c.moved == 1 && c.rejected == 2).await;
    assert_eq!(counts.retries, 0, "{counts:?}");
    let (version, _) = env.view(&board.game, &board.b).await;
    assert_eq!(version, 3);
    // Terminated, not waiting for another delivery.
    assert_eq!(env.queue().await, (0, 0));
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_game_session_is_down_a_job_is_retried_and_done_once_it_is_back() {
    let mut env = env().await;
    let board = env.board().await;
    let job = env.job(&board).await;
    // The worker's game-session is not there yet: its port is free.
    let down = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let later = down.local_addr().expect("addr");
    drop(down);
    let stats = env.worker(settings(), later).await;
    env.publish(&job, &job.job).await;
    until(&stats, |c| c.retries >= 2).await;
    assert_eq!(stats.counts().moved, 0);
    // game-session comes (back) there: the same games, from Redis.
    let listener = TcpListener::bind(later).await.expect("the port again");
    let stop = game_session(&env.ns, listener, Arc::new(RandomLayouts)).await;
    env.stops.push(stop);
    let counts = until(&stats, |c| c.moved == 1).await;
    assert_eq!(counts.set_aside + counts.rejected + counts.refused, 0);
    let (version, game) = env.view(&board.game, &board.b).await;
    assert_eq!((version, game.moves.len()), (3, 1));
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_failing_on_every_delivery_is_set_aside_after_the_last() {
    let mut env = env().await;
    let board = env.board().await;
    let job = env.job(&board).await;
    // game-session never comes: each delivery fails transiently.
    let down = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let nowhere = down.local_addr().expect("addr");
    drop(down);
    let stats = env
        .worker(
            Settings {
                max_deliver: 3,
                act_timeout: Duration::from_millis(500),
                ..settings()
            },
            nowhere,
        )
        .await;
    env.publish(&job, &job.job).await;
    let counts = until(&stats, |c| c.set_aside == 1).await;
    // Two retries, then the third and last delivery sets it aside: no fourth.
    assert_eq!((counts.retries, counts.thinking), (2, 3), "{counts:?}");
    assert_eq!(env.queue().await, (0, 0));
    assert_eq!(env.view(&board.game, &board.b).await.0, 2);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_exports_its_metrics() {
    // The process's recorder (as `/metrics` serves it), installed before any job.
    let metrics = frontier_platform::admin::metrics();
    let mut env = env().await;
    let board = env.board().await;
    let job = env.job(&board).await;
    env.publish(&job, &job.job).await;
    let stats = env.worker(settings(), env.session).await;
    until(&stats, |c| c.moved == 1).await;
    let text = metrics.render();
    for line in [
        "frontier_bot_jobs_total{variant=\"standard\",level=\"easy\",outcome=\"moved\"}",
        // Second-scale buckets: a Hard think of several seconds is not lost in +Inf.
        "frontier_bot_think_seconds_bucket{level=\"easy\",le=\"5\"}",
        "frontier_bot_job_queue_seconds_bucket{le=\"15\"}",
        "frontier_bot_jobs_backlog",
    ] {
        assert!(text.contains(line), "{line} missing from:\n{text}");
    }
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_think_keeps_its_job() {
    let mut env = env().await;
    let board = env.board().await;
    let job = env.job(&board).await;
    env.publish(&job, &job.job).await;
    // Three times the consumer's ack_wait of thinking: only the in-progress acks keep the
    // job from going to the other worker meanwhile.
    let slow = env
        .worker(
            Settings {
                think_delay: Some(Duration::from_secs(3)),
                ..settings()
            },
            env.session,
        )
        .await;
    until(&slow, |c| c.thinking == 1).await;
    let other = env.worker(settings(), env.session).await;
    let counts = until(&slow, |c| c.moved == 1).await;
    assert_eq!(counts.duplicates + counts.refused, 0, "{counts:?}");
    assert_eq!(other.counts(), Counts::default());
    let (version, _) = env.view(&board.game, &board.b).await;
    assert_eq!(version, 3);
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bot_answers_its_pending_promotion() {
    // White's a1 piece is truly a pawn and its a2 piece a rook (Black's layout is the
    // usual one): the a2 rook clears the a-file, then the rook-like a1 runs to a8 and
    // reveals a pawn on its last rank. White (A, the bot's seat) owes the promotion choice.
    let layout = frontier_rules::Layout::from_canonical("PNBQBNRRPPPPPPP/rnbqbnrpppppppp")
        .expect("a layout");
    let mut env = env_with(Arc::new(FixedLayout(layout))).await;
    let board = env.board_of(games::Variant::Hidden).await;
    for (i, uci) in ["a2a4", "b7b5", "a4a7", "b5b4", "a7b7", "b4b3", "a1a8"]
        .iter()
        .enumerate()
    {
        let mover = if i % 2 == 0 { &board.a } else { &board.b };
        env.play(&board, mover, uci).await;
    }
    let job = env.job(&board).await;
    assert_eq!(job.view.pending_promotion.as_deref(), Some("a8"));
    env.publish(&job, &job.job).await;
    let stats = env.worker(settings(), env.session).await;
    let counts = until(&stats, |c| c.moved == 1).await;
    assert_eq!(counts.rejected + counts.refused + counts.retries, 0);
    // The choice completed the move: Black to move, nothing pending, the move list's
    // last move carries the promotion made.
    let (version, game) = env.view(&board.game, &board.b).await;
    assert_eq!(version, job.version + 1);
    assert_eq!(game.pending_promotion, None);
    assert_eq!(game.turn, "black");
    let last = game.moves.last().expect("moves");
    assert!(
        last.uci.starts_with("a1a8") && last.uci.len() == 5,
        "{}",
        last.uci
    );
    env.stop().await;
}

/// The line a worker process prints when it holds a job (test hooks), read from its
/// standard output.
async fn wait_for_line(stdout: std::process::ChildStdout, prefix: &'static str) -> String {
    let line = tokio::task::spawn_blocking(move || {
        use std::io::BufRead as _;
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find(|l| l.starts_with(prefix))
    });
    tokio::time::timeout(WAIT, line)
        .await
        .expect("the worker took the job in time")
        .expect("reader")
        .expect("the worker printed it")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_while_thinking_has_its_job_done_by_another() {
    // FRONTIER_BOT_TEST_ACK_WAIT (default 1s) measures the recovery at another ack wait:
    // the time from the kill to the bot's move is printed (docs/benchmarks.md).
    let ack_wait_text =
        std::env::var("FRONTIER_BOT_TEST_ACK_WAIT").unwrap_or_else(|_| "1s".to_owned());
    let ack_wait = frontier_platform::config::parse_duration(&ack_wait_text).expect("a duration");
    let mut env = env().await;
    let board = env.board().await;
    let job = env.job(&board).await;
    // A worker process that holds every job a minute before thinking; killed with SIGKILL
    // while it holds this one.
    let mut doomed = std::process::Command::new(frontier_testkit::frontier_bin())
        .arg("bot-worker")
        .args([
            "--nats-url",
            &frontier_testkit::nats_url(),
            "--namespace",
            env.ns.prefix(),
            "--game-session-urls",
            &format!("http://{}", env.session),
            "--ack-wait",
            &ack_wait_text,
            "--concurrency",
            "1",
            "--test-think-delay",
            "60s",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the bot-worker binary starts");
    env.publish(&job, &job.job).await;
    let stdout = doomed.stdout.take().expect("piped");
    let line = wait_for_line(stdout, "THINKING").await;
    assert_eq!(line, format!("THINKING {}", job.job));
    doomed.kill().expect("SIGKILL");
    let killed = std::time::Instant::now();
    let _ = doomed.wait();
    // Nothing moved while it held the job.
    assert_eq!(env.view(&board.game, &board.b).await.0, 2);
    // Another worker gets the job once `ack_wait` has passed without word from the dead.
    let stats = env
        .worker(
            Settings {
                ack_wait,
                ..settings()
            },
            env.session,
        )
        .await;
    let counts = until(&stats, |c| c.moved == 1).await;
    println!(
        "the bot's move was played {:.2} s after its worker was killed (ack wait {ack_wait:?})",
        killed.elapsed().as_secs_f64()
    );
    assert_eq!(counts.duplicates + counts.refused + counts.rejected, 0);
    let (version, game) = env.view(&board.game, &board.b).await;
    assert_eq!((version, game.moves.len()), (3, 1));
    assert_eq!(env.queue().await, (0, 0));
    env.stop().await;
}

/// A worker that starts against a consumer made with another `ack_wait` (an older
/// version's 15 s) sets its own: before, the consumer kept the 15 s it was created with, and
/// a bot's move waited those 15 s after its worker died mid-think.
#[tokio::test]
async fn a_starting_worker_sets_the_consumers_ack_wait() {
    let mut env = env().await;
    let old = JetStreamSource::connect(&env.js, &env.ns, 1, Duration::from_secs(15), 50)
        .await
        .expect("an older worker's consumer");
    drop(old);
    let session = env.session;
    env.worker(settings(), session).await;
    let mut consumer: jetstream::consumer::PullConsumer = env
        .js
        .get_consumer_from_stream(BOT_WORKERS_CONSUMER, env.ns.bot_jobs_stream())
        .await
        .expect("the consumer");
    let info = consumer.info().await.expect("info");
    assert_eq!(info.config.ack_wait, settings().ack_wait);
    env.stop().await;
}

/// The default `--ack-wait` is short (a bot's move after its worker died waits about this
/// long), and progress is signalled three times within it.
#[test]
fn the_default_ack_wait_is_three_seconds_with_progress_every_second() {
    use clap::Parser as _;
    let config = frontier_bot_worker::Config::try_parse_from(["bot-worker"]).expect("defaults");
    assert_eq!(config.ack_wait, Duration::from_secs(3));
    assert_eq!(Settings::default().ack_wait, Duration::from_secs(3));
}
