//! The fair-play consumer on real JetStream and Postgres: rated games between an engine
//! player and an honest stand-in are screened and the engine player reported (through the
//! gRPC API); a casual game is skipped; an undecodable record and one whose moves do not
//! replay are terminated and counted, never retried; a game delivered twice is stored once.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use frontier_engine::{Decision, Level, Limits, Request, think};
use frontier_fairplay::{Replay, Settings, Thresholds};
use frontier_fairplay_service::{
    Analyser, ConsumerSettings, ConsumerStats, MIGRATOR, PgStore, RatingSource, consume,
    grpc::FairPlayService, serve_api,
};
use frontier_platform::time::SystemClock;
use frontier_platform::{Namespace, Shutdown};
use frontier_proto::fairplay::v1 as pb;
use frontier_proto::games::v1::{FinishedGame, MoveRecord, Player, Variant as PbVariant};
use frontier_rules::{Color, Variant};
use prost::Message as _;
use uuid::Uuid;

/// A standard game of `plies` plies: White by the engine at full strength, Black by the
/// Medium level; think times alike for both (2–6 s, from a seeded spread).
fn engine_game(seed: u64, plies: u32) -> Vec<MoveRecord> {
    let mut replay = Replay::start(Variant::Standard, "", None).expect("start");
    let mut moves = Vec::new();
    let mut at_ms = 0;
    let mut x = seed;
    while !replay.is_over() && replay.ply() < plies {
        let view = replay.mover_view().expect("view");
        let (level, nodes) = if replay.mover() == Color::White {
            (Level::Hard, Settings::default().nodes)
        } else {
            (Level::Medium, 20_000)
        };
        let thought = think(&Request {
            view: &view,
            level,
            clock: None,
            seed: seed ^ u64::from(replay.ply()) << 20,
            limits: Some(Limits {
                nodes: Some(nodes),
                deadline: None,
            }),
        })
        .expect("a decision");
        let Decision::Move(mv) = thought.decision else {
            panic!("no promotion is pending in standard chess");
        };
        let uci = mv.to_string();
        replay.play(&uci).expect("legal");
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        at_ms += 2_000 + (x >> 33) % 4_000;
        moves.push(MoveRecord {
            ply: replay.ply(),
            uci,
            at_ms,
            ..Default::default()
        });
    }
    moves
}

fn person(id: Uuid, name: &str) -> Player {
    Player {
        id: id.to_string(),
        name: name.to_owned(),
        ..Default::default()
    }
}

fn record(
    id: Uuid,
    white: Uuid,
    black: Uuid,
    rated: bool,
    moves: Vec<MoveRecord>,
    ended: i64,
) -> FinishedGame {
    FinishedGame {
        game_id: id.to_string(),
        variant: PbVariant::Standard as i32,
        rated,
        white: Some(person(white, "engine_user")),
        black: Some(person(black, "club_player")),
        result: "white".to_owned(),
        outcome: "white-resign".to_owned(),
        moves,
        created_at_ms: ended - 600_000,
        started_at_ms: ended - 600_000,
        ended_at_ms: ended,
        ..Default::default()
    }
}

#[tokio::test]
async fn rated_games_are_screened_the_engine_player_reported_and_bad_records_set_aside() {
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

    let engine_user = Uuid::new_v4();
    let club_player = Uuid::new_v4();
    let made = std::time::Instant::now();
    let games: Vec<Vec<MoveRecord>> = (0..6).map(|i| engine_game(0xfa17 + i, 64)).collect();
    eprintln!("games played in {:?}", made.elapsed());
    let mut payloads: Vec<(String, Vec<u8>)> = Vec::new();
    let mut ended = 1_800_000_000_000;
    let mut first = None;
    for moves in &games {
        ended += 1_000;
        let id = Uuid::new_v4();
        first.get_or_insert(id);
        let game = record(id, engine_user, club_player, true, moves.clone(), ended);
        payloads.push((id.to_string(), game.encode_to_vec()));
    }
    // The first game again, under another message id (a republish the stream's
    // deduplication would not catch): stored once.
    let first = first.expect("a game");
    let again = payloads[0].1.clone();
    payloads.push((format!("{first}-again"), again));
    // A casual game: skipped.
    let casual = record(
        Uuid::new_v4(),
        engine_user,
        club_player,
        false,
        games[0].clone(),
        ended,
    );
    payloads.push((casual.game_id.clone(), casual.encode_to_vec()));
    // Undecodable, and moves that do not replay: terminated.
    payloads.push(("junk".to_owned(), b"\xff\xff not a record".to_vec()));
    let mut broken = games[1].clone();
    broken[3].uci = "e2e5".to_owned();
    let broken = record(
        Uuid::new_v4(),
        engine_user,
        club_player,
        true,
        broken,
        ended,
    );
    payloads.push((broken.game_id.clone(), broken.encode_to_vec()));
    for (id, payload) in &payloads {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", id.as_str());
        js.publish_with_headers(ns.finished_games_subject(), headers, payload.clone().into())
            .await
            .expect("publish")
            .await
            .expect("stored");
    }

    let stats = Arc::new(ConsumerStats::default());
    let stop = Shutdown::new();
    let store = PgStore::new(pool.clone(), Thresholds::default());
    let settings = ConsumerSettings {
        ack_wait: Duration::from_secs(5),
        concurrency: 2,
        ..ConsumerSettings::named("fairplay")
    };
    let analyser = Analyser {
        settings: Settings::default(),
        ratings: RatingSource::default(),
        clock: Arc::new(SystemClock),
    };
    let consumer = tokio::spawn(consume(
        store.clone(),
        nats.clone(),
        ns.clone(),
        settings,
        analyser,
        stats.clone(),
        stop.clone(),
    ));
    let wait = stats.wait_settled(payloads.len() as u64);
    tokio::pin!(wait);
    for _ in 0..24 {
        if tokio::time::timeout(Duration::from_secs(10), &mut wait)
            .await
            .is_ok()
        {
            break;
        }
        assert!(!consumer.is_finished(), "the consumer stopped early");
        eprintln!("settled so far: {:?}", stats.snapshot());
    }
    assert!(
        stats.settled.load(std::sync::atomic::Ordering::Relaxed) >= payloads.len() as u64,
        "every message settles within 240 s"
    );
    let [analysed, skipped, rejected, retries, set_aside, reports] = stats.snapshot();
    assert_eq!(analysed, 6, "each rated game once");
    assert_eq!(skipped, 2, "the casual game and the repeat");
    assert_eq!(rejected, 2, "the undecodable record and the broken one");
    assert_eq!((retries, set_aside), (0, 0));
    assert_eq!(reports, 1, "one report: the engine player's");

    // Terminated messages are not delivered again: the consumer has nothing pending.
    let mut info = js
        .get_stream(ns.finished_games_stream())
        .await
        .expect("stream")
        .get_consumer::<jetstream::consumer::pull::Config>("fairplay")
        .await
        .expect("consumer");
    let info = info.info().await.expect("info");
    assert_eq!((info.num_pending, info.num_ack_pending), (0, 0));

    // The report, as a moderator would read it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(serve_api(
        listener,
        FairPlayService::new(store, Arc::new(SystemClock)),
        stop.clone(),
    ));
    let mut client = pb::fair_play_client::FairPlayClient::connect(format!("http://{addr}"))
        .await
        .expect("connect");
    let page = client
        .list_reports(pb::ListReportsRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert_eq!(page.reports.len(), 1);
    let report = &page.reports[0];
    assert_eq!(report.player_id, engine_user.to_string());
    assert_eq!(report.status, "open");
    let detail = client
        .get_report(pb::GetReportRequest {
            report_id: report.report_id.clone(),
        })
        .await
        .expect("report")
        .into_inner();
    assert_eq!(detail.games.len(), 6);
    for game in &detail.games {
        assert_eq!(game.color, "white");
        assert!(game.counted_moves > 0);
        assert!(
            game.moves.iter().all(|m| m.ply % 2 == 1),
            "only the reported player's moves"
        );
        assert!(game.moves.iter().any(|m| m.skipped == "opening"));
    }
    stop.trigger();
    consumer
        .await
        .expect("joined")
        .expect("consumer ended cleanly");
}
