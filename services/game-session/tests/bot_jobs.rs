//! Bot jobs on real Redis and NATS (JetStream): each change that leaves a bot to act puts
//! its job in the Redis outbox in the same compare-and-set, and it reaches the work-queue
//! stream with the job id as message id (a repeat is dropped); a job whose publication
//! failed (a crash between the compare-and-set and the publish looks the same) is sent by
//! the sweeper later, and a job whose game moved on is dropped instead.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, consumer::pull};
use frontier_game_session::bus::{EventBus, NatsBus};
use frontier_game_session::game::{Action, Player};
use frontier_game_session::service::{GameService, NewComputerGame, Settings, SystemClock};
use frontier_game_session::store::{GameStore, RedisStore};
use frontier_platform::{GameId, Namespace, PlayerId};
use frontier_protocol::{BotJob, BotLevel};
use frontier_rules::{Color, Variant};
use futures_util::StreamExt as _;

type Service = GameService<RedisStore, NatsBus>;

async fn real_service(ns: &Namespace) -> Service {
    let store = RedisStore::connect(&frontier_testkit::redis_url(), ns.clone())
        .await
        .expect("Redis answers (run the tests with `make test`)");
    let bus = NatsBus::connect(&frontier_testkit::nats_url(), ns.clone())
        .await
        .expect("NATS with JetStream answers (run the tests with `make test`)");
    GameService::new(
        store,
        bus,
        Arc::new(SystemClock),
        Arc::new(frontier_game_session::service::RandomLayouts),
        Settings::default(),
    )
}

fn person() -> Player {
    Player {
        id: PlayerId::new().to_string(),
        name: "me".into(),
        guest: true,
        bot: false,
        bot_level: None,
    }
}

async fn start(svc: &Service, color: Color) -> (GameId, Player) {
    let me = person();
    let (game, _, _) = svc
        .play_computer(NewComputerGame {
            player: me.clone(),
            variant: Variant::Standard,
            level: BotLevel::Medium,
            color: Some(color),
            time_control: None,
            start_fen: None,
        })
        .await
        .expect("started");
    (game, me)
}

/// A pull consumer on the bot-job stream, as the workers have.
async fn consumer(svc: &Service, ns: &Namespace) -> jetstream::consumer::Consumer<pull::Config> {
    let js = svc.bus().jetstream();
    let stream = frontier_platform::streams::ensure_bot_jobs(&js, ns, 1)
        .await
        .expect("stream");
    stream
        .get_or_create_consumer(
            "test-worker",
            pull::Config {
                durable_name: Some("test-worker".into()),
                ..Default::default()
            },
        )
        .await
        .expect("consumer")
}

/// The next job on the stream, with its message id (acknowledged).
async fn next_job(c: &jetstream::consumer::Consumer<pull::Config>) -> (String, String, BotJob) {
    let mut batch = c
        .fetch()
        .max_messages(1)
        .expires(Duration::from_secs(10))
        .messages()
        .await
        .expect("fetch");
    let message = batch
        .next()
        .await
        .expect("a job within 10 s")
        .expect("message");
    let id = message
        .headers
        .as_ref()
        .and_then(|h| h.get("Nats-Msg-Id"))
        .map(|v| v.as_str().to_owned())
        .unwrap_or_default();
    let job: BotJob = serde_json::from_slice(&message.payload).expect("a job");
    message.ack().await.expect("ack");
    (message.subject.to_string(), id, job)
}

/// The sequence number of the last message the job stream stored (0: none, ever). Not
/// the count of messages it holds: a work queue removes an acknowledged message on its
/// own time, after the ack, so that count can still fall while a test looks.
async fn last_stored(svc: &Service, ns: &Namespace) -> u64 {
    let mut stream = svc
        .bus()
        .jetstream()
        .get_stream(ns.bot_jobs_stream())
        .await
        .expect("stream");
    stream.info().await.expect("info").state.last_sequence
}

async fn drop_streams(ns: &Namespace) {
    if let Ok(client) = async_nats::connect(frontier_testkit::nats_url()).await {
        let js = jetstream::new(client);
        let _ = js.delete_stream(ns.bot_jobs_stream()).await;
        let _ = js.delete_stream(ns.finished_games_stream()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_change_that_leaves_the_bot_to_act_enqueues_its_job_once() {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let svc = real_service(&ns).await;
    let jobs = consumer(&svc, &ns).await;
    // The bot plays White: its first job comes with the game.
    let (game, me) = start(&svc, Color::Black).await;
    let (subject, id, job) = next_job(&jobs).await;
    assert_eq!(subject, ns.bot_jobs_subject("standard"));
    assert_eq!(id, format!("{game}:2"));
    assert_eq!((job.job.as_str(), job.version), (id.as_str(), 2));
    assert_eq!(job.player_id, PlayerId::bot(BotLevel::Medium).to_string());
    assert!(
        svc.store().bot_outbox().await.expect("outbox").is_empty(),
        "acknowledged, so out of the outbox"
    );
    // The worker acts; the person answers; the next job.
    svc.act(
        &game,
        &job.player_id,
        &job.job,
        Some(job.version),
        &Action::Move("e2e4".into(), None),
    )
    .await
    .expect("bot move");
    svc.act(&game, &me.id, "", None, &Action::Move("e7e5".into(), None))
        .await
        .expect("person move");
    let (_, id, job) = next_job(&jobs).await;
    assert_eq!((id, job.version), (format!("{game}:4"), 4));
    assert_eq!(job.view.moves.len(), 2);

    // The same job again is dropped by the stream's duplicate window.
    let before = last_stored(&svc, &ns).await;
    svc.bus()
        .publish_bot_job(
            Variant::Standard,
            &job.job,
            bytes::Bytes::from(serde_json::to_vec(&job).expect("json")),
        )
        .await
        .expect("published");
    // A stored copy would have taken the next sequence number.
    assert_eq!(
        last_stored(&svc, &ns).await,
        before,
        "the copy was not stored"
    );
    let mut batch = jobs
        .fetch()
        .max_messages(1)
        .expires(Duration::from_millis(500))
        .messages()
        .await
        .expect("fetch");
    assert!(batch.next().await.is_none(), "no second copy of the job");
    drop_streams(&ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_could_not_be_published_is_sent_by_the_sweeper() {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let svc = real_service(&ns).await;
    let (game, me) = start(&svc, Color::White).await;
    // The stream is gone: the publish after the compare-and-set fails, exactly as if the
    // instance had died between the two.
    let js = svc.bus().jetstream();
    js.delete_stream(ns.bot_jobs_stream())
        .await
        .expect("deleted");
    svc.act(&game, &me.id, "", None, &Action::Move("d2d4".into(), None))
        .await
        .expect("moved");
    let waiting = svc.store().bot_outbox().await.expect("outbox");
    assert_eq!(
        waiting.iter().map(|j| j.id.clone()).collect::<Vec<_>>(),
        [format!("{game}:3")],
        "the job stayed in the outbox"
    );
    // The stream is back (a restarted instance creates it); the sweeper sends the job.
    let jobs = consumer(&svc, &ns).await;
    assert_eq!(svc.flush_bot_outbox().await.expect("sweep"), 1);
    let (_, id, job) = next_job(&jobs).await;
    assert_eq!((id.as_str(), job.version), (waiting[0].id.as_str(), 3));
    assert!(svc.store().bot_outbox().await.expect("outbox").is_empty());
    drop_streams(&ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_game_moved_on_is_dropped_not_sent() {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let svc = real_service(&ns).await;
    let (game, me) = start(&svc, Color::White).await;
    let js = svc.bus().jetstream();
    js.delete_stream(ns.bot_jobs_stream())
        .await
        .expect("deleted");
    svc.act(&game, &me.id, "", None, &Action::Move("d2d4".into(), None))
        .await
        .expect("moved");
    assert_eq!(svc.store().bot_outbox().await.expect("outbox").len(), 1);
    // The person resigns before the job went out: the job's version is no longer current.
    svc.act(&game, &me.id, "", None, &Action::Resign)
        .await
        .expect("resigned");
    let _jobs = consumer(&svc, &ns).await;
    assert_eq!(svc.flush_bot_outbox().await.expect("sweep"), 0);
    assert!(svc.store().bot_outbox().await.expect("outbox").is_empty());
    assert_eq!(last_stored(&svc, &ns).await, 0, "nothing was sent");
    drop_streams(&ns).await;
}
