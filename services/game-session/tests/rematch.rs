//! Rematches on real Redis and NATS, with two game-session instances sharing them: an offer
//! made on one is accepted on the other, racing accepts make one game, both players hear
//! every change on their player subjects, lapses and refusals are typed.

use std::sync::Arc;
use std::time::Duration;

use frontier_game_session::bus::{NOTICE_HEADER, NatsBus};
use frontier_game_session::error::SessionError;
use frontier_game_session::game::{Action, Player, TimeControlSpec};
use frontier_game_session::rematch::{Lapse, RematchState};
use frontier_game_session::service::{
    GameService, MatchSeat, NewComputerGame, NewMatch, Settings, SystemClock,
};
use frontier_game_session::store::{GameStore, RedisStore};
use frontier_game_session::{service::RandomLayouts, storage};
use frontier_platform::{GameId, Namespace, PlayerId};
use frontier_protocol::{BotLevel, ErrorCode, ServerMessage};
use frontier_rules::{Color, Variant};
use futures_util::StreamExt as _;

type Service = Arc<GameService<RedisStore, NatsBus>>;

async fn instance(ns: &Namespace) -> Service {
    let store = RedisStore::connect(&frontier_testkit::redis_url(), ns.clone())
        .await
        .expect("Redis answers (run the tests with `make test`)");
    let bus = NatsBus::connect(&frontier_testkit::nats_url(), ns.clone())
        .await
        .expect("NATS with JetStream answers (run the tests with `make test`)");
    Arc::new(GameService::new(
        store,
        bus,
        Arc::new(SystemClock),
        Arc::new(RandomLayouts),
        Settings::default(),
    ))
}

async fn drop_streams(ns: &Namespace) {
    if let Ok(client) = async_nats::connect(frontier_testkit::nats_url()).await {
        let js = async_nats::jetstream::new(client);
        let _ = js.delete_stream(ns.finished_games_stream()).await;
        let _ = js.delete_stream(ns.bot_jobs_stream()).await;
    }
}

fn person(name: &str) -> Player {
    Player {
        id: PlayerId::new().to_string(),
        name: name.to_owned(),
        guest: false,
        bot: false,
        bot_level: None,
    }
}

/// A player's notices on their player subject, read as frames.
struct Notices(async_nats::Subscriber);

impl Notices {
    async fn follow(nats: &async_nats::Client, ns: &Namespace, player: &Player) -> Notices {
        let sub = nats
            .subscribe(ns.player_subject(&player.id))
            .await
            .expect("subscribe");
        nats.flush().await.expect("flush");
        // The SUB reaches the server before anything this test makes happen.
        let _ = nats.request("_probe.none", "".into()).await;
        Notices(sub)
    }

    async fn next(&mut self) -> ServerMessage {
        let message = tokio::time::timeout(Duration::from_secs(10), self.0.next())
            .await
            .expect("a notice within 10 s")
            .expect("subscription open");
        assert!(
            message
                .headers
                .as_ref()
                .and_then(|h| h.get(NOTICE_HEADER))
                .is_some(),
            "a rematch notice carries the notice header"
        );
        serde_json::from_slice(&message.payload).expect("a client-protocol frame")
    }

    /// Nothing more arrives before a marker published after everything the test did.
    async fn nothing_before(&mut self, nats: &async_nats::Client, subject: &str) {
        nats.publish(subject.to_owned(), "marker".into())
            .await
            .expect("publish");
        let message = tokio::time::timeout(Duration::from_secs(10), self.0.next())
            .await
            .expect("the marker within 10 s")
            .expect("subscription open");
        assert_eq!(
            message.payload.as_ref(),
            b"marker",
            "no further notice came: {:?}",
            String::from_utf8_lossy(&message.payload)
        );
    }
}

fn code(result: Result<RematchState, SessionError>) -> ErrorCode {
    match result {
        Err(SessionError::Client(code, _)) => code,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A rated 3+2 hidden game between `white` and `black`, started.
async fn started_game(service: &Service, white: &Player, black: &Player) -> GameId {
    let (game, _, created) = service
        .start_match(NewMatch {
            game: GameId::new(),
            white: MatchSeat::Person(white.clone()),
            black: MatchSeat::Person(black.clone()),
            variant: Variant::Hidden,
            rated: true,
            time_control: Some(TimeControlSpec {
                initial_seconds: 180,
                increment_seconds: 2,
            }),
        })
        .await
        .expect("a match starts");
    assert!(created);
    game
}

async fn resign(service: &Service, game: &GameId, player: &Player) {
    service
        .act(game, &player.id, "", None, &Action::Resign)
        .await
        .expect("resigns");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offer_on_one_instance_accepted_on_another_makes_one_game_with_colours_swapped() {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let (a, b) = (instance(&ns).await, instance(&ns).await);
    let nats = async_nats::connect(frontier_testkit::nats_url())
        .await
        .expect("NATS");
    let (white, black) = (person("Wanda"), person("Boris"));
    let mut to_white = Notices::follow(&nats, &ns, &white).await;
    let mut to_black = Notices::follow(&nats, &ns, &black).await;
    let game = started_game(&a, &white, &black).await;
    resign(&b, &game, &black).await;

    let offered = a.offer_rematch(&game, &white.id).await.expect("offered");
    assert_eq!(offered, RematchState::Offered(Color::White));
    for notices in [&mut to_white, &mut to_black] {
        assert_eq!(
            notices.next().await,
            ServerMessage::RematchOffered {
                id: None,
                game_id: game.to_string(),
                by: "white".into(),
            }
        );
    }
    assert_eq!(
        code(a.offer_rematch(&game, &white.id).await),
        ErrorCode::RematchAlreadyOffered,
        "an offer is made once"
    );
    assert_eq!(
        code(b.accept_rematch(&game, &white.id).await),
        ErrorCode::NoRematchOffer,
        "nobody accepts their own offer"
    );

    // Sixteen accepts racing on both instances: one game, the same answer for all.
    let racers: Vec<_> = (0..16)
        .map(|i| {
            let service = if i % 2 == 0 { a.clone() } else { b.clone() };
            let (game, black) = (game, black.id.clone());
            tokio::spawn(async move { service.accept_rematch(&game, &black).await })
        })
        .collect();
    let mut answers = Vec::new();
    for racer in racers {
        answers.push(racer.await.expect("joined").expect("accepted"));
    }
    let RematchState::Started(new_game, color) = answers[0].clone() else {
        panic!("an accept answers the started rematch: {:?}", answers[0]);
    };
    assert_eq!(color, Color::White, "Black of the last game plays White");
    assert!(answers.iter().all(|s| *s == answers[0]), "{answers:?}");
    assert_ne!(new_game, game);

    for (notices, colour) in [(&mut to_white, "black"), (&mut to_black, "white")] {
        assert_eq!(
            notices.next().await,
            ServerMessage::RematchStarted {
                id: None,
                game_id: game.to_string(),
                new_game_id: new_game.to_string(),
                color: colour.into(),
            }
        );
    }
    // Exactly one `rematch_started` reached each player, though sixteen accepts ran.
    to_white
        .nothing_before(&nats, &ns.player_subject(&white.id))
        .await;
    to_black
        .nothing_before(&nats, &ns.player_subject(&black.id))
        .await;

    // The rematch: same variant, clock and rating; colours swapped; started.
    let stored = a
        .store()
        .load(&new_game)
        .await
        .expect("loads")
        .expect("the rematch exists");
    assert_eq!(stored.version, 2, "created and started, once");
    let live = storage::decode(&stored.state, &stored.moves).expect("decodes");
    let info = live.info();
    assert_eq!(info.variant, Variant::Hidden);
    assert!(info.rated);
    assert_eq!(
        info.time_control,
        Some(TimeControlSpec {
            initial_seconds: 180,
            increment_seconds: 2
        })
    );
    assert_eq!(
        live.player(Color::White).map(|p| p.id.as_str()),
        Some(black.id.as_str())
    );
    assert_eq!(
        live.player(Color::Black).map(|p| p.id.as_str()),
        Some(white.id.as_str())
    );

    // Asked again, either player is answered the same rematch (nothing new is made).
    assert_eq!(
        b.offer_rematch(&game, &white.id).await.expect("answered"),
        RematchState::Started(new_game, Color::Black)
    );
    assert_eq!(
        a.accept_rematch(&game, &black.id).await.expect("answered"),
        RematchState::Started(new_game, Color::White)
    );
    drop_streams(&ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_accepts_tell_each_player_once() {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let (a, b) = (instance(&ns).await, instance(&ns).await);
    let nats = async_nats::connect(frontier_testkit::nats_url())
        .await
        .expect("NATS");
    let (white, black) = (person("Wanda"), person("Boris"));
    let game = started_game(&a, &white, &black).await;
    resign(&a, &game, &white).await;
    let mut to_white = Notices::follow(&nats, &ns, &white).await;
    b.offer_rematch(&game, &black.id).await.expect("offered");
    assert!(matches!(
        to_white.next().await,
        ServerMessage::RematchOffered { .. }
    ));
    let racers: Vec<_> = (0..8)
        .map(|i| {
            let service = if i % 2 == 0 { a.clone() } else { b.clone() };
            let (game, white) = (game, white.id.clone());
            tokio::spawn(async move { service.accept_rematch(&game, &white).await })
        })
        .collect();
    for racer in racers {
        racer.await.expect("joined").expect("accepted");
    }
    assert!(matches!(
        to_white.next().await,
        ServerMessage::RematchStarted { .. }
    ));
    to_white
        .nothing_before(&nats, &ns.player_subject(&white.id))
        .await;
    drop_streams(&ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offers_are_refused_where_no_rematch_can_be() {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let service = instance(&ns).await;
    let (white, black, watcher) = (person("Wanda"), person("Boris"), person("Vera"));
    let game = started_game(&service, &white, &black).await;
    assert_eq!(
        code(service.offer_rematch(&game, &white.id).await),
        ErrorCode::GameNotOver
    );
    resign(&service, &game, &white).await;
    assert_eq!(
        code(service.offer_rematch(&game, &watcher.id).await),
        ErrorCode::NotInGame,
        "a spectator offers nothing"
    );
    assert_eq!(
        code(service.accept_rematch(&game, &black.id).await),
        ErrorCode::NoRematchOffer
    );
    assert_eq!(
        code(service.decline_rematch(&game, &black.id).await),
        ErrorCode::NoRematchOffer
    );
    assert_eq!(
        code(service.offer_rematch(&GameId::new(), &white.id).await),
        ErrorCode::GameNotFound
    );

    let (computer, _, _) = service
        .play_computer(NewComputerGame {
            player: white.clone(),
            variant: Variant::Standard,
            level: BotLevel::Easy,
            color: Some(Color::White),
            time_control: None,
            start_fen: None,
        })
        .await
        .expect("a game against the computer");
    resign(&service, &computer, &white).await;
    assert_eq!(
        code(service.offer_rematch(&computer, &white.id).await),
        ErrorCode::RematchUnavailable,
        "no rematch against the computer"
    );
    drop_streams(&ns).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offers_lapse_when_a_player_seeks_or_leaves_and_can_be_declined() {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let (a, b) = (instance(&ns).await, instance(&ns).await);
    let nats = async_nats::connect(frontier_testkit::nats_url())
        .await
        .expect("NATS");
    let (white, black) = (person("Wanda"), person("Boris"));
    let mut to_white = Notices::follow(&nats, &ns, &white).await;
    let game = started_game(&a, &white, &black).await;
    resign(&a, &game, &white).await;

    // Declined by the other player: both told, and the offer is gone.
    a.offer_rematch(&game, &white.id).await.expect("offered");
    assert!(matches!(
        to_white.next().await,
        ServerMessage::RematchOffered { .. }
    ));
    assert_eq!(
        b.decline_rematch(&game, &black.id).await.expect("declined"),
        RematchState::Cancelled(Color::Black, "declined")
    );
    assert_eq!(
        to_white.next().await,
        ServerMessage::RematchCancelled {
            id: None,
            game_id: game.to_string(),
            by: "black".into(),
            reason: "declined".into(),
        }
    );
    assert_eq!(
        code(b.accept_rematch(&game, &black.id).await),
        ErrorCode::NoRematchOffer
    );

    // Black offers now; White going to quick match lapses it.
    b.offer_rematch(&game, &black.id).await.expect("offered");
    assert!(matches!(
        to_white.next().await,
        ServerMessage::RematchOffered { .. }
    ));
    assert_eq!(
        a.lapse_rematches(&white.id, None, Lapse::Seeking)
            .await
            .expect("lapsed"),
        1
    );
    assert_eq!(
        to_white.next().await,
        ServerMessage::RematchCancelled {
            id: None,
            game_id: game.to_string(),
            by: "white".into(),
            reason: "seeking".into(),
        }
    );
    assert_eq!(
        code(a.accept_rematch(&game, &white.id).await),
        ErrorCode::NoRematchOffer,
        "a lapsed offer cannot be accepted"
    );
    assert_eq!(
        a.lapse_rematches(&white.id, None, Lapse::Seeking)
            .await
            .expect("idempotent"),
        0
    );

    // An offer while the opponent's stands accepts it.
    a.offer_rematch(&game, &white.id).await.expect("offered");
    let RematchState::Started(new_game, color) =
        b.offer_rematch(&game, &black.id).await.expect("accepted")
    else {
        panic!("a crossing offer accepts");
    };
    assert_eq!(color, Color::White);
    assert!(a.store().load(&new_game).await.expect("loads").is_some());
    assert_eq!(
        a.lapse_rematches(&black.id, Some(game), Lapse::Left)
            .await
            .expect("nothing to lapse"),
        0,
        "an accepted offer does not lapse"
    );
    drop_streams(&ns).await;
}
