//! game-session on real Redis and NATS (JetStream): compare-and-set under races, events on
//! the shared or per-audience subjects, finished games in the stream exactly once.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use bytes::Bytes;
use frontier_game_session::bus::{EventBus, NatsBus};
use frontier_game_session::game::{Action, Player};
use frontier_game_session::service::{FixedLayout, GameService, NewBoard, Settings, SystemClock};
use frontier_game_session::storage::MovesWrite;
use frontier_game_session::store::{GameStore, OutboxJob, RedisStore, Write};
use frontier_platform::envelope::{Envelope, EventMetadata};
use frontier_platform::{GameId, Namespace, PlayerId};
use frontier_protocol::{GameEvent, ServerMessage};
use frontier_rules::{Audience, Color, Layout, Variant};
use futures_util::StreamExt as _;

const LAYOUT: &str = "PQBNBNRRPPPPPPP/pqbnbnrrppppppp";

async fn real_service(ns: &Namespace) -> GameService<RedisStore, NatsBus> {
    real_service_with(ns, Settings::default()).await
}

async fn real_service_with(ns: &Namespace, settings: Settings) -> GameService<RedisStore, NatsBus> {
    real_service_publishing(ns, settings, EventMetadata::default()).await
}

async fn real_service_publishing(
    ns: &Namespace,
    settings: Settings,
    metadata: EventMetadata,
) -> GameService<RedisStore, NatsBus> {
    let store = RedisStore::connect(&frontier_testkit::redis_url(), ns.clone())
        .await
        .expect("Redis answers (run the tests with `make test`)");
    let bus = NatsBus::connect(&frontier_testkit::nats_url(), ns.clone())
        .await
        .expect("NATS with JetStream answers (run the tests with `make test`)")
        .with_event_metadata(metadata);
    GameService::new(
        store,
        bus,
        Arc::new(SystemClock),
        Arc::new(FixedLayout(Layout::from_canonical(LAYOUT).expect("valid"))),
        settings,
    )
}

async fn drop_stream(ns: &Namespace) {
    if let Ok(client) = async_nats::connect(frontier_testkit::nats_url()).await {
        let _ = jetstream::new(client)
            .delete_stream(ns.finished_games_stream())
            .await;
    }
}

/// An untimed standard game made by White on `creator` and joined by Black on `joiner`
/// (two instances of one namespace, or the same one twice): the game and its players.
async fn standard_game(
    creator: &GameService<RedisStore, NatsBus>,
    joiner: &GameService<RedisStore, NatsBus>,
) -> (GameId, Player, Player) {
    let white = player("w");
    let black = player("b");
    let (game, code, _) = creator
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
    joiner
        .join_board(black.clone(), &code)
        .await
        .expect("joined");
    (game, white, black)
}

fn player(name: &str) -> Player {
    Player {
        id: PlayerId::new().to_string(),
        name: name.to_owned(),
        guest: false,
        bot: false,
        bot_level: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_and_set_lets_exactly_one_racer_win() {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let store = RedisStore::connect(&frontier_testkit::redis_url(), ns)
        .await
        .expect("Redis");
    let game = GameId::new();
    let first = Write {
        game,
        expected: 0,
        version: 1,
        state: Bytes::from_static(b"one"),
        entries: vec![Bytes::from_static(b"e1")],
        finished_ttl: None,
        outbox: false,
        deadline: None,
        untimed: false,
        bot_job: None,
        moves: Default::default(),
    };
    assert!(store.compare_and_set(first.clone()).await.expect("cas"));
    assert!(
        !store.compare_and_set(first).await.expect("cas"),
        "version 0 is gone"
    );
    let racers: Vec<_> = (0..16)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .compare_and_set(Write {
                        game,
                        expected: 1,
                        version: 2,
                        state: Bytes::from(format!("racer {i}")),
                        entries: vec![Bytes::from(format!("e2 by {i}"))],
                        finished_ttl: None,
                        outbox: false,
                        deadline: None,
                        untimed: false,
                        bot_job: None,
                        moves: Default::default(),
                    })
                    .await
                    .expect("cas")
            })
        })
        .collect();
    let mut winners = 0;
    for r in racers {
        winners += usize::from(r.await.expect("join"));
    }
    assert_eq!(winners, 1);
    let stored = store.load(&game).await.expect("load").expect("exists");
    assert_eq!(stored.version, 2);
    assert_eq!(
        store.log_after(&game, 0, 10).await.expect("log").len(),
        2,
        "one entry per version"
    );
}

/// Storage format 2 on Redis: a game's move records are a list of their own, appended one
/// per move. Two instances share one game, one writing format 1 (the default: the state
/// carries every move) and one format 2, neither caching (each move is read from Redis):
/// every move is read back whole whoever wrote the one before, the list holds exactly the
/// moves of the last format-2 write, and when the game ends the list expires with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn games_in_either_storage_format_are_played_on_by_the_other() {
    use frontier_proto::gamesession::storage::v1::StoredGame;
    use prost::Message as _;
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let settings = |storage_format| Settings {
        storage_format,
        state_cache: 0,
        ..Settings::default()
    };
    let one = real_service_with(&ns, settings(1)).await;
    let two = real_service_with(&ns, settings(2)).await;
    let line = frontier_game_session::testing::long_line(Variant::Standard, 24, 3).expect("a line");
    let (game, white, black) = standard_game(&two, &one).await;
    let mut redis = one.store().connection();
    let moves_key = ns.game_moves_key(&game);
    for (i, uci) in line.iter().enumerate() {
        // Three moves by one instance, three by the other.
        let (svc, format) = if (i / 3).is_multiple_of(2) {
            (&two, 2)
        } else {
            (&one, 1)
        };
        let seat = if i.is_multiple_of(2) { &white } else { &black };
        svc.act(&game, &seat.id, "", None, &Action::Move(uci.clone(), None))
            .await
            .expect(uci);
        let stored = one.store().load(&game).await.expect("load").expect("there");
        let state = StoredGame::decode(stored.state.as_ref()).expect("decodes");
        assert_eq!(state.format, format, "ply {}", i + 1);
        if format == 2 {
            assert!(state.moves.is_empty());
            assert_eq!(state.move_count as usize, i + 1);
            assert_eq!(stored.moves.len(), i + 1, "listed, ply {}", i + 1);
        } else {
            assert_eq!(state.moves.len(), i + 1);
        }
        for reader in [&one, &two] {
            let seen = reader.view(&game, "").await.expect("view");
            let ServerMessage::Game { game: g, .. } =
                serde_json::from_str(&seen.frame).expect("json")
            else {
                panic!("game frame");
            };
            let played: Vec<&str> = g.moves.iter().map(|m| m.uci.as_str()).collect();
            assert_eq!(played, line[..=i].to_vec(), "ply {}", i + 1);
        }
    }
    two.act(&game, &white.id, "", None, &Action::Resign)
        .await
        .expect("resign");
    let ttl: i64 = redis::cmd("TTL")
        .arg(&moves_key)
        .query_async(&mut redis)
        .await
        .expect("ttl");
    let limit = Settings::default().finished_ttl.as_secs() as i64;
    assert!(
        (1..=limit).contains(&ttl),
        "the move list expires with its game: {ttl}"
    );
    drop_stream(&ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_racing_on_one_game_apply_one_move() {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let a = Arc::new(real_service(&ns).await);
    let b = Arc::new(real_service(&ns).await);
    let (game, white, _) = standard_game(&a, &b).await;
    // Both instances try to play a different first move for White at once.
    let (e4, d4) = (
        Action::Move("e2e4".into(), None),
        Action::Move("d2d4".into(), None),
    );
    let (ra, rb) = tokio::join!(
        a.act(&game, &white.id, "x", None, &e4),
        b.act(&game, &white.id, "y", None, &d4),
    );
    let applied = [ra.is_ok(), rb.is_ok()].iter().filter(|&&ok| ok).count();
    assert_eq!(applied, 1, "{ra:?} {rb:?}");
    let seen = a.view(&game, "").await.expect("view");
    let (version, frame) = (seen.version, seen.frame);
    assert_eq!(version, 3);
    let ServerMessage::Game { game: g, .. } = serde_json::from_str(&frame).expect("json") else {
        panic!("game frame");
    };
    assert_eq!(g.moves.len(), 1);
    drop_stream(&ns).await;
}

/// Each instance keeps the state it last committed of a game for that game's next action
/// (`cache.rs`). When the other instance moved in between, that state is behind: whatever it
/// would decide other than a stored change — a stale version, not your turn — is decided
/// again on the store's state, and nothing is ever written from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_behind_on_a_game_decides_again_on_the_stored_state() {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let a = real_service(&ns).await;
    let b = real_service(&ns).await;
    let (game, white, black) = standard_game(&a, &a).await;
    let mv = |uci: &str| Action::Move(uci.into(), None);
    // v3 through A (A keeps v3), v4 through B.
    assert_eq!(
        a.act(&game, &white.id, "1", None, &mv("e2e4"))
            .await
            .expect("e4")
            .0,
        3
    );
    assert_eq!(
        b.act(&game, &black.id, "2", None, &mv("e7e5"))
            .await
            .expect("e5")
            .0,
        4
    );
    // A's state says version 3; the client rightly expects 4.
    let nf3 = a.act(&game, &white.id, "3", Some(4), &mv("g1f3")).await;
    assert_eq!(nf3.expect("a right expected version is accepted").0, 5);
    // A keeps v5 (Black to move); B plays Black's reply, so at A's v5 it is not White's
    // turn — but in the game it is.
    assert_eq!(
        b.act(&game, &black.id, "4", None, &mv("b8c6"))
            .await
            .expect("Nc6")
            .0,
        6
    );
    let bb5 = a.act(&game, &white.id, "5", None, &mv("f1b5")).await;
    assert_eq!(bb5.expect("White's turn in the stored game").0, 7);
    // A repeated action (same id) is answered from its recorded version, not applied again.
    assert_eq!(
        b.act(&game, &white.id, "5", None, &mv("f1b5"))
            .await
            .expect("repeat"),
        (7, true)
    );
    // A real refusal still reaches the client: Black's move on a stale state of A, then on
    // the stored one, is illegal both times.
    let refused = a.act(&game, &black.id, "6", None, &mv("e8e6")).await;
    assert!(refused.is_err(), "an illegal move is refused: {refused:?}");
    let seen = b.view(&game, "").await.expect("view");
    assert_eq!(seen.version, 7, "nothing was written from a stale state");
    let ServerMessage::Game { game: g, .. } = serde_json::from_str(&seen.frame).expect("json")
    else {
        panic!("game frame");
    };
    let played: Vec<&str> = g.moves.iter().map(|m| m.uci.as_str()).collect();
    assert_eq!(played, ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5"]);
    drop_stream(&ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identities_travel_only_on_the_entitled_subject_and_finished_games_reach_the_stream_once() {
    identities_travel_only_on_the_entitled_subject(EventMetadata::Headers).await;
}

/// The same with each event's metadata in an envelope in front of its frame
/// (`--event-metadata payload`): no event headers, and the frames are the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_metadata_in_the_payload_identities_travel_only_on_the_entitled_subject() {
    identities_travel_only_on_the_entitled_subject(EventMetadata::Payload).await;
}

async fn identities_travel_only_on_the_entitled_subject(metadata: EventMetadata) {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let svc = real_service_publishing(&ns, Settings::default(), metadata).await;
    let client = async_nats::connect(frontier_testkit::nats_url())
        .await
        .expect("NATS");
    let mut subs = Vec::new();
    let white = player("w");
    let black = player("b");
    let (game, code, _) = svc
        .create_board(NewBoard {
            creator: white.clone(),
            variant: Variant::Hidden,
            color: Some(Color::White),
            rated: false,
            time_control: None,
            start_fen: None,
        })
        .await
        .expect("created");
    for audience in [
        Audience::Player(Color::White),
        Audience::Player(Color::Black),
        Audience::Spectator,
    ] {
        subs.push((
            audience,
            client
                .subscribe(ns.game_follow_subject(&game, audience))
                .await
                .expect("sub"),
        ));
    }
    client.flush().await.expect("flush");
    frontier_testkit::nats_round_trip(&client).await;
    svc.join_board(black.clone(), &code).await.expect("joined");
    for (who, uci) in [(&white, "b1c3"), (&black, "a7a6"), (&white, "c3c7")] {
        svc.act(&game, &who.id, "", None, &Action::Move(uci.into(), None))
            .await
            .expect(uci);
    }
    svc.act(&game, &black.id, "", None, &Action::Resign)
        .await
        .expect("resign");
    for (audience, sub) in &mut subs {
        // Versions up to 6 (ended), in order, each once. (Version 1, the creation, may or
        // may not arrive: it was published around the time of subscribing.)
        let mut versions = Vec::new();
        let mut identity = None;
        while versions.last() != Some(&6) {
            let msg = tokio::time::timeout(Duration::from_secs(5), sub.next())
                .await
                .expect("events arrive")
                .expect("subscription open");
            let header = |name: &str| {
                msg.headers
                    .as_ref()
                    .and_then(|h| h.get(name))
                    .map(|v| v.as_str().to_owned())
            };
            let version_header = header(frontier_game_session::bus::VERSION_HEADER);
            let ended_header = header(frontier_game_session::bus::ENDED_HEADER);
            let (meta_version, ended, payload) = match metadata {
                EventMetadata::Headers => (
                    version_header.and_then(|v| v.parse::<u64>().ok()),
                    ended_header.is_some(),
                    msg.payload.clone(),
                ),
                EventMetadata::Payload => {
                    assert_eq!((version_header, ended_header), (None, None));
                    let (envelope, frame) =
                        Envelope::open(&msg.payload).expect("an envelope in front");
                    (Some(envelope.version), envelope.ended, frame)
                }
            };
            let frame: ServerMessage = serde_json::from_slice(&payload).expect("json");
            let ServerMessage::Event { version, event, .. } = frame else {
                panic!("event frames only");
            };
            assert_eq!(meta_version, Some(version));
            assert_eq!(ended, version == 6, "only the resignation ends the game");
            if let GameEvent::Move {
                captured_identity: Some(role),
                ..
            } = *event
            {
                identity = Some(role);
            }
            // The capture (version 5) differs between audiences: each audience's frame on
            // its own subject; everything else once, on the shared one.
            let expected = if version == 5 {
                ns.game_event_subject(&game, Some(*audience))
            } else {
                ns.game_event_subject(&game, None)
            };
            assert_eq!(msg.subject.as_str(), expected, "{audience:?} v{version}");
            versions.push(version);
        }
        let from = versions[0];
        assert!(from <= 2, "{audience:?}: {versions:?}");
        assert_eq!(versions, (from..=6).collect::<Vec<u64>>(), "{audience:?}");
        match audience {
            Audience::Player(Color::White) => assert_eq!(identity.as_deref(), Some("pawn")),
            _ => assert_eq!(identity, None, "{audience:?} must not learn the identity"),
        }
    }
    // The finished game is in the stream; publishing it again changes nothing.
    let js = jetstream::new(client.clone());
    let record = {
        use prost::Message as _;
        svc.bus()
            .publish_finished(
                &game,
                Bytes::from(
                    frontier_proto::games::v1::FinishedGame {
                        game_id: game.to_string(),
                        ..Default::default()
                    }
                    .encode_to_vec(),
                ),
            )
            .await
            .expect("duplicate publish is acknowledged");
        let mut stream = js
            .get_stream(ns.finished_games_stream())
            .await
            .expect("stream");
        let info = stream.info().await.expect("info");
        assert_eq!(info.state.messages, 1, "the duplicate was dropped");
        stream
            .get_last_raw_message_by_subject(&ns.finished_games_subject())
            .await
            .expect("message")
    };
    use prost::Message as _;
    let finished =
        frontier_proto::games::v1::FinishedGame::decode(record.payload.as_ref()).expect("record");
    assert_eq!(finished.game_id, game.to_string());
    assert_eq!(finished.outcome, "white-resignation");
    assert_eq!(finished.moves.len(), 3);
    assert_eq!(
        finished.moves[2].captured_identity, "pawn",
        "public in the record after the end"
    );
    assert!(svc.store().outbox().await.expect("outbox").is_empty());
    drop_stream(&ns).await;
}

/// The key layout in Redis is stamped by the first instance and checked by every one: a
/// fresh Redis gets this version's layout, the same layout passes, and a Redis stamped by
/// a newer version is refused at start (an old instance never reads or writes beside keys
/// it does not know) — and so is `game-session` itself, built on it.
#[tokio::test]
async fn the_key_layout_is_stamped_and_a_newer_one_refuses_to_start() {
    use clap::Parser as _;
    use frontier_game_session::store::{KEY_LAYOUT, LayoutError};
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("namespace");
    let store = RedisStore::connect(&frontier_testkit::redis_url(), ns.clone())
        .await
        .expect("Redis answers");
    assert_eq!(store.check_layout().await.expect("fresh"), KEY_LAYOUT);
    assert_eq!(store.check_layout().await.expect("the same"), KEY_LAYOUT);
    let mut conn = store.connection();
    let _: () = redis::cmd("SET")
        .arg(store.layout_key())
        .arg(KEY_LAYOUT + 1)
        .query_async(&mut conn)
        .await
        .expect("set");
    assert!(matches!(
        store.check_layout().await,
        Err(LayoutError::Newer(n)) if n == KEY_LAYOUT + 1
    ));
    let config = frontier_game_session::Config::try_parse_from([
        "game-session",
        "--redis-url",
        &frontier_testkit::redis_url(),
        "--nats-url",
        &frontier_testkit::nats_url(),
        "--namespace",
        ns.prefix(),
    ])
    .expect("flags");
    let refused = frontier_game_session::build(&config)
        .await
        .err()
        .expect("refused to start");
    assert!(
        format!("{refused:#}").contains("newer than this version"),
        "{refused:#}"
    );
}

/// Issue #30: a gateway's tick writes every present seat's presence and names the quiet
/// games that are further on than the version given (or gone), reading no game's state —
/// on Redis and in memory alike. On Redis a tick is pipelined, its replies read by
/// position: the ticks here hold more entries than one pipeline, and over the sixteen
/// minutes of the renewal cycle each presence record's expiry is renewed once, its
/// command among the others'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tick_records_presence_and_names_the_games_further_on() {
    use frontier_game_session::store::MemoryStore;
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let redis = RedisStore::connect(&frontier_testkit::redis_url(), ns.clone())
        .await
        .expect("Redis");
    let games = tick_on(&redis).await;
    // A tick's HSET makes a record that has none; each got its expiry in its minute.
    let mut conn = redis.connection();
    for game in &games {
        let ttl: i64 = redis::cmd("TTL")
            .arg(ns.presence_key(game))
            .query_async(&mut conn)
            .await
            .expect("ttl");
        assert!(
            ttl > 0,
            "{game}'s presence record has an expiry (TTL {ttl})"
        );
    }
    tick_on(&MemoryStore::default()).await;
}

/// A write of `game` from `version - 1` to `version` with placeholder state and log entry,
/// no deadline, and no outbox or bot job.
fn plain_write(game: GameId, version: u64, untimed: bool) -> Write {
    Write {
        game,
        expected: version - 1,
        version,
        state: Bytes::from(format!("v{version}")),
        entries: vec![Bytes::from(format!("e{version}"))],
        finished_ttl: None,
        outbox: false,
        deadline: None,
        untimed,
        bot_job: None,
        moves: Default::default(),
    }
}

/// Ticks `store` over games at versions 1 and 2 and checks what it names and records;
/// returns the games.
async fn tick_on<S: GameStore>(store: &S) -> Vec<GameId> {
    let write = |game, version: u64| plain_write(game, version, false);
    // Many games, over every shard, more entries than one pipeline takes (500): half at
    // version 1, half at version 2.
    let games: Vec<GameId> = (0..300).map(|_| GameId::new()).collect();
    for (i, game) in games.iter().enumerate() {
        assert!(store.compare_and_set(write(*game, 1)).await.expect("cas"));
        if i % 2 == 0 {
            assert!(store.compare_and_set(write(*game, 2)).await.expect("cas"));
        }
    }
    let gone = GameId::new();
    // Every gateway relayed version 1 of each; and a game that has no record.
    let mut quiet: Vec<(GameId, u64)> = games.iter().map(|g| (*g, 1)).collect();
    quiet.push((gone, 3));
    let present: Vec<(GameId, Color)> = games
        .iter()
        .flat_map(|g| [(*g, Color::White), (*g, Color::Black)])
        .collect();
    let mut expected: Vec<GameId> = games.iter().step_by(2).copied().collect();
    expected.push(gone);
    expected.sort_unstable_by_key(ToString::to_string);
    // A tick in each minute of the sixteen of the presence records' renewal cycle.
    let mut now_ms = 0;
    for minute in 0..16 {
        now_ms = minute * 60_000 + 1_234;
        let mut behind = store.tick(&present, &quiet, now_ms).await.expect("tick");
        behind.sort_unstable_by_key(ToString::to_string);
        assert_eq!(
            behind, expected,
            "minute {minute}: the games at version 2, and the one gone"
        );
    }
    for game in &games {
        let seen = store.presence(game).await.expect("presence");
        assert_eq!((seen.white, seen.black), (Some(now_ms), Some(now_ms)));
    }
    // Nothing quiet and nobody present: nothing to do, nothing behind.
    assert!(store.tick(&[], &[], 1).await.expect("tick").is_empty());
    games
}

/// The deadline scheduled for `game` in its shard's set, if any.
async fn scheduled_deadline(
    redis: &mut frontier_platform::RedisConn,
    ns: &Namespace,
    game: &GameId,
) -> Option<i64> {
    redis::cmd("ZSCORE")
        .arg(ns.deadlines_key(frontier_platform::Shard::of(game)))
        .arg(game.to_string())
        .query_async(redis)
        .await
        .expect("zscore")
}

/// Issue 29: a write of an untimed game leaves the game's deadline alone (one Redis call
/// less per move); a timed game's write drops a deadline it no longer has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untimed_write_leaves_the_deadline_alone_and_a_timed_one_drops_it() {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let store = RedisStore::connect(&frontier_testkit::redis_url(), ns.clone())
        .await
        .expect("Redis");
    let mut redis = store.connection();
    let game = GameId::new();
    let write = |version: u64, untimed: bool| plain_write(game, version, untimed);
    store
        .schedule(&game, Some(4_102_444_800_000))
        .await
        .expect("schedule");
    assert!(store.compare_and_set(write(1, true)).await.expect("cas"));
    assert_eq!(
        scheduled_deadline(&mut redis, &ns, &game).await,
        Some(4_102_444_800_000),
        "an untimed write touches no deadline"
    );
    assert!(store.compare_and_set(write(2, false)).await.expect("cas"));
    assert_eq!(
        scheduled_deadline(&mut redis, &ns, &game).await,
        None,
        "a timed write with no deadline drops it"
    );
}

/// Issue 29: the compare-and-set passes only the keys and arguments a write uses. A write
/// that uses every option at once — two log entries, a cut of the move list and records
/// after it, a deadline, the finished outbox, a bot job and an expiry — applies each to
/// its own key, and a plain write after it touches none of the optional ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_with_every_option_applies_each_and_a_plain_one_none() {
    every_option_applies_each(false).await;
}

/// The same in storage format 3, where the log and the records are fields of the game's
/// hash: and there is then no other key of the game.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_hash_layout_a_write_with_every_option_applies_each_and_a_plain_one_none() {
    every_option_applies_each(true).await;
}

async fn every_option_applies_each(hashed: bool) {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let store = RedisStore::connect(&frontier_testkit::redis_url(), ns.clone())
        .await
        .expect("Redis");
    let mut redis = store.connection();
    let game = GameId::new();
    let keys = ns.game_keys(&game);
    // The records the game's hash holds before a write, in the hash layout.
    let held = |n: u64| hashed.then_some(n);
    let expiring = |mut redis: frontier_platform::RedisConn| {
        let keys = keys.clone();
        async move {
            for key in [&keys.state, &keys.log, &keys.moves] {
                let ttl: i64 = redis::cmd("TTL")
                    .arg(key)
                    .query_async(&mut redis)
                    .await
                    .expect("ttl");
                if hashed && key != &keys.state {
                    assert_eq!(ttl, -2, "{key} is never made in the hash layout");
                } else {
                    assert!((1..=600).contains(&ttl), "{key} expires: {ttl}");
                }
            }
        }
    };
    // Three records listed; the write cuts to one and appends two.
    let mut first = plain_write(game, 1, true);
    first.moves = MovesWrite {
        trim_to: None,
        append: vec![Bytes::from("m1"), Bytes::from("m2"), Bytes::from("m3")],
        hashed: held(0),
    };
    assert!(store.compare_and_set(first).await.expect("cas"));
    let job = OutboxJob {
        id: format!("{game}:3"),
        payload: Bytes::from("{\"job\":1}"),
    };
    let every = Write {
        game,
        expected: 1,
        version: 3,
        state: Bytes::from("v3"),
        entries: vec![Bytes::from("e2"), Bytes::from("e3")],
        finished_ttl: Some(std::time::Duration::from_secs(600)),
        outbox: true,
        deadline: Some(4_102_444_800_000),
        untimed: false,
        bot_job: Some(job.clone()),
        moves: MovesWrite {
            trim_to: Some(1),
            append: vec![Bytes::from("m2b"), Bytes::from("m3b")],
            hashed: held(3),
        },
    };
    assert!(store.compare_and_set(every).await.expect("cas"));
    let stored = store.load(&game).await.expect("load").expect("stored");
    assert_eq!((stored.version, stored.state), (3, Bytes::from("v3")));
    assert_eq!(
        stored.moves,
        vec![Bytes::from("m1"), Bytes::from("m2b"), Bytes::from("m3b")],
        "cut to one record, then two appended"
    );
    let log = store.log_after(&game, 0, 10).await.expect("log");
    assert_eq!(
        log,
        vec![Bytes::from("e1"), Bytes::from("e2"), Bytes::from("e3")]
    );
    assert_eq!(
        scheduled_deadline(&mut redis, &ns, &game).await,
        Some(4_102_444_800_000)
    );
    assert!(store.outbox().await.expect("outbox").contains(&game));
    let jobs = store.bot_outbox().await.expect("bot outbox");
    assert!(
        jobs.iter()
            .any(|j| j.id == job.id && j.payload == job.payload)
    );
    expiring(redis.clone()).await;

    // A plain untimed write: the deadline, outboxes and expiry are left as they were.
    store.outbox_done(&game).await.expect("outbox done");
    store
        .bot_outbox_done(&job.id)
        .await
        .expect("bot outbox done");
    let mut plain = plain_write(game, 4, true);
    plain.moves.append = vec![Bytes::from("m4")];
    plain.moves.hashed = held(3);
    assert!(store.compare_and_set(plain).await.expect("cas"));
    assert!(!store.outbox().await.expect("outbox").contains(&game));
    assert!(store.bot_outbox().await.expect("bot outbox").is_empty());
    assert_eq!(
        scheduled_deadline(&mut redis, &ns, &game).await,
        Some(4_102_444_800_000)
    );
    expiring(redis.clone()).await;
    let stored = store.load(&game).await.expect("load").expect("stored");
    assert_eq!(stored.moves.len(), 4);
    assert_eq!(
        store.log_after(&game, 3, 10).await.expect("log"),
        vec![Bytes::from("e4")]
    );
    if !hashed {
        return;
    }
    // Cut to two records with none after: the two beyond are gone from the hash, which
    // then holds the version, the state, the count, five log entries and two records.
    let mut cut = plain_write(game, 5, true);
    cut.moves = MovesWrite {
        trim_to: Some(2),
        append: Vec::new(),
        hashed: held(4),
    };
    assert!(store.compare_and_set(cut).await.expect("cas"));
    let stored = store.load(&game).await.expect("load").expect("stored");
    assert_eq!(stored.moves, vec![Bytes::from("m1"), Bytes::from("m2b")]);
    let mut fields: Vec<String> = redis::cmd("HKEYS")
        .arg(&keys.state)
        .query_async(&mut redis)
        .await
        .expect("hkeys");
    fields.sort_unstable();
    assert_eq!(
        fields,
        ["e1", "e2", "e3", "e4", "e5", "n", "r1", "r2", "s", "v"]
    );
    // The log from a version on, up to the newest; none past it.
    assert_eq!(
        store.log_after(&game, 3, 10).await.expect("log"),
        vec![Bytes::from("e4"), Bytes::from("e5")]
    );
    assert!(store.log_after(&game, 5, 10).await.expect("log").is_empty());
    // A write with no record (a draw offer's) leaves the records alone; a timed game's
    // plain writes schedule its next deadline, and drop it when it has none.
    let mut offer = plain_write(game, 6, true);
    offer.moves.hashed = held(2);
    assert!(store.compare_and_set(offer).await.expect("cas"));
    let mut timed = plain_write(game, 7, false);
    timed.deadline = Some(4_102_444_900_000);
    timed.moves.append = vec![Bytes::from("m3c")];
    timed.moves.hashed = held(2);
    assert!(store.compare_and_set(timed).await.expect("cas"));
    assert_eq!(
        scheduled_deadline(&mut redis, &ns, &game).await,
        Some(4_102_444_900_000)
    );
    let mut over = plain_write(game, 8, false);
    over.moves.hashed = held(3);
    assert!(store.compare_and_set(over).await.expect("cas"));
    assert_eq!(scheduled_deadline(&mut redis, &ns, &game).await, None);
    let stored = store.load(&game).await.expect("load").expect("stored");
    assert_eq!(stored.version, 8);
    assert_eq!(
        stored.moves,
        vec![Bytes::from("m1"), Bytes::from("m2b"), Bytes::from("m3c")]
    );
    assert_eq!(
        store.log_after(&game, 5, 10).await.expect("log"),
        vec![Bytes::from("e6"), Bytes::from("e7"), Bytes::from("e8")]
    );
    // A stale writer loses, and changes nothing.
    let mut stale = plain_write(game, 8, true);
    stale.moves.hashed = held(3);
    stale.moves.append = vec![Bytes::from("stale")];
    assert!(!store.compare_and_set(stale).await.expect("cas"));
    assert_eq!(
        store
            .load(&game)
            .await
            .expect("load")
            .expect("stored")
            .moves
            .len(),
        3
    );
}

/// Storage format 3 on real Redis, played by the service: a game made by an instance told
/// to write 3 keeps its log and records in its hash (no other key), is played on in format
/// 3 by an instance told 1, answers a resume from its hash's log, and expires whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_in_format_3_lives_in_its_hash_and_stays_there() {
    use frontier_proto::gamesession::storage::v1::StoredGame;
    use prost::Message as _;
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let three = real_service_with(
        &ns,
        Settings {
            storage_format: 3,
            ..Settings::default()
        },
    )
    .await;
    let one = real_service(&ns).await;
    let line = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"];
    let (game, white, black) = standard_game(&three, &three).await;
    let mut redis = three.store().connection();
    let keys = ns.game_keys(&game);
    for (i, uci) in line.iter().enumerate() {
        let svc = if i % 2 == 0 { &three } else { &one };
        let seat = if i % 2 == 0 { &white } else { &black };
        svc.act(
            &game,
            &seat.id,
            "",
            None,
            &Action::Move(uci.to_string(), None),
        )
        .await
        .expect(uci);
        let stored = one.store().load(&game).await.expect("load").expect("there");
        let state = StoredGame::decode(stored.state.as_ref()).expect("decodes");
        assert_eq!(state.format, 3, "ply {}", i + 1);
        assert_eq!(state.move_count as usize, i + 1);
        assert_eq!(stored.moves.len(), i + 1, "ply {}", i + 1);
        let seen = one.view(&game, "").await.expect("view");
        let ServerMessage::Game { game: g, .. } = serde_json::from_str(&seen.frame).expect("json")
        else {
            panic!("game frame");
        };
        let played: Vec<&str> = g.moves.iter().map(|m| m.uci.as_str()).collect();
        assert_eq!(played, line[..=i].to_vec(), "ply {}", i + 1);
    }
    for key in [&keys.log, &keys.moves] {
        let exists: i64 = redis::cmd("EXISTS")
            .arg(key)
            .query_async(&mut redis)
            .await
            .expect("exists");
        assert_eq!(exists, 0, "{key} is not made in format 3");
    }
    // A player two versions behind is sent the two events from the hash's log.
    let version = one
        .store()
        .load(&game)
        .await
        .expect("load")
        .expect("there")
        .version;
    let (_, resume) = one
        .resume(&game, &white.id, version - 2, 0)
        .await
        .expect("resume");
    let frontier_game_session::service::Resume::Events(events) = resume else {
        panic!("events, not the whole view");
    };
    assert_eq!(
        events.iter().map(|e| e.version).collect::<Vec<_>>(),
        vec![version - 1, version]
    );
    one.act(&game, &white.id, "", None, &Action::Resign)
        .await
        .expect("resign");
    let ttl: i64 = redis::cmd("TTL")
        .arg(&keys.state)
        .query_async(&mut redis)
        .await
        .expect("ttl");
    let limit = Settings::default().finished_ttl.as_secs() as i64;
    assert!((1..=limit).contains(&ttl), "the game expires: {ttl}");
    drop_stream(&ns).await;
}
