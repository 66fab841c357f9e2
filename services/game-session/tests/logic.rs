//! game-session's logic on the in-memory store and bus: fast, and the same code that runs
//! on Redis and NATS (the Redis/NATS adapters have their own tests against real servers).

use std::sync::Arc;

use frontier_game_session::bus::MemoryBus;
use frontier_game_session::error::SessionError;
use frontier_game_session::game::{Action, Player};
use frontier_game_session::service::{
    FixedLayout, GameService, NewBoard, Resume, Settings, SystemClock,
};
use frontier_game_session::store::{GameStore, MemoryStore};
use frontier_platform::{GameId, Namespace, PlayerId};
use frontier_protocol::{ErrorCode, GameEvent, ServerMessage};
use frontier_rules::{Color, Layout, Variant};

type Service = GameService<MemoryStore, MemoryBus>;

/// White's b1 is truly a queen; Black's b8 truly a queen; a1/a8 are pawns, etc.
const LAYOUT: &str = "PQBNBNRRPPPPPPP/pqbnbnrrppppppp";

fn service() -> Service {
    let ns = Namespace::new("logic").expect("valid");
    GameService::new(
        MemoryStore::new(),
        MemoryBus::new(ns, 1024),
        Arc::new(SystemClock),
        Arc::new(FixedLayout(Layout::from_canonical(LAYOUT).expect("valid"))),
        Settings::default(),
    )
}

fn player(name: &str, guest: bool) -> Player {
    Player {
        id: PlayerId::new().to_string(),
        name: name.to_owned(),
        guest,
        bot: false,
        bot_level: None,
    }
}

fn code_of(e: SessionError) -> ErrorCode {
    match e {
        SessionError::Client(code, _) => code,
        other => panic!("expected a client error, got {other:?}"),
    }
}

async fn started(svc: &Service, variant: Variant) -> (GameId, Player, Player) {
    let white = player("white", false);
    let black = player("black", false);
    let (game, code, color) = svc
        .create_board(NewBoard {
            creator: white.clone(),
            variant,
            color: Some(Color::White),
            rated: false,
            time_control: None,
            start_fen: None,
        })
        .await
        .expect("created");
    assert_eq!(color, Color::White);
    assert_eq!(code.len(), 6);
    assert!(code.bytes().all(|b| !b"01OI".contains(&b)), "{code}");
    let (joined, seat) = svc.join_board(black.clone(), &code).await.expect("joined");
    assert_eq!((joined, seat), (game, Color::Black));
    (game, white, black)
}

fn mv(uci: &str) -> Action {
    Action::Move(uci.to_owned(), None)
}

#[tokio::test]
async fn a_move_is_applied_once_and_versions_count_up() {
    let svc = service();
    let (game, white, black) = started(&svc, Variant::Standard).await;
    // v1 created, v2 started.
    assert_eq!(
        svc.act(&game, &white.id, "m1", None, &mv("e2e4"))
            .await
            .expect("ok"),
        (3, false)
    );
    // The same id again: not applied again.
    assert_eq!(
        svc.act(&game, &white.id, "m1", None, &mv("e2e4"))
            .await
            .expect("ok"),
        (3, true)
    );
    // A stale expected version: refused, nothing changes.
    let stale = svc
        .act(&game, &black.id, "b1", Some(2), &mv("e7e5"))
        .await
        .expect_err("stale");
    assert_eq!(code_of(stale), ErrorCode::StaleVersion);
    assert_eq!(
        svc.act(&game, &black.id, "b1", Some(3), &mv("e7e5"))
            .await
            .expect("ok"),
        (4, false)
    );
    let version = svc.view(&game, "").await.expect("view").version;
    assert_eq!(version, 4);
}

#[tokio::test]
async fn out_of_turn_and_outsiders_are_refused_without_change() {
    let svc = service();
    let (game, white, black) = started(&svc, Variant::Standard).await;
    let stranger = player("stranger", false);
    assert_eq!(
        code_of(
            svc.act(&game, &black.id, "", None, &mv("e7e5"))
                .await
                .expect_err("turn")
        ),
        ErrorCode::NotYourTurn
    );
    assert_eq!(
        code_of(
            svc.act(&game, &stranger.id, "", None, &mv("e2e4"))
                .await
                .expect_err("outsider")
        ),
        ErrorCode::NotInGame
    );
    assert_eq!(
        code_of(
            svc.act(&game, &white.id, "", None, &mv("e2e5"))
                .await
                .expect_err("illegal")
        ),
        ErrorCode::IllegalMove
    );
    assert_eq!(
        code_of(
            svc.act(&game, &white.id, "", None, &mv("zz"))
                .await
                .expect_err("syntax")
        ),
        ErrorCode::BadMove
    );
    assert_eq!(
        code_of(
            svc.act(&game, &white.id, "", None, &Action::AcceptDraw)
                .await
                .expect_err("no offer")
        ),
        ErrorCode::NoDrawOffer
    );
    let version = svc.view(&game, "").await.expect("view").version;
    assert_eq!(version, 2, "nothing changed");
}

#[tokio::test]
async fn boards_refuse_bad_joins() {
    let svc = service();
    let guest = player("guest", true);
    let owner = player("owner", false);
    let rated = NewBoard {
        creator: owner.clone(),
        variant: Variant::Atomic,
        color: None,
        rated: true,
        time_control: None,
        start_fen: None,
    };
    let err = svc
        .create_board(NewBoard {
            creator: guest.clone(),
            ..rated.clone()
        })
        .await
        .expect_err("guests cannot create rated boards");
    assert_eq!(code_of(err), ErrorCode::GuestRated);
    let (_, code, _) = svc.create_board(rated).await.expect("created");
    assert_eq!(
        code_of(svc.join_board(guest, &code).await.expect_err("guest")),
        ErrorCode::GuestRated
    );
    assert_eq!(
        code_of(svc.join_board(owner.clone(), &code).await.expect_err("own")),
        ErrorCode::OwnBoard
    );
    assert_eq!(
        code_of(
            svc.join_board(owner.clone(), "ZZZZZZ")
                .await
                .expect_err("unknown")
        ),
        ErrorCode::BoardNotFound
    );
    assert_eq!(
        code_of(
            svc.join_board(owner.clone(), "0OI1!!")
                .await
                .expect_err("bad code")
        ),
        ErrorCode::BoardNotFound
    );
    let second = player("second", false);
    let (game, _) = svc
        .join_board(second.clone(), &code.to_lowercase())
        .await
        .expect("codes are case-blind");
    // Joining again answers the seat already held; a third player finds it full.
    assert!(svc.join_board(second.clone(), &code).await.is_ok());
    assert_eq!(
        code_of(
            svc.join_board(player("third", false), &code)
                .await
                .expect_err("full")
        ),
        ErrorCode::BoardFull
    );
    svc.act(&game, &second.id, "", None, &Action::Resign)
        .await
        .expect("resign");
    assert_eq!(
        code_of(
            svc.join_board(player("late", false), &code)
                .await
                .expect_err("finished")
        ),
        ErrorCode::BoardFinished
    );
    let bad_clock = svc
        .create_board(NewBoard {
            creator: owner,
            variant: Variant::Standard,
            color: None,
            rated: false,
            time_control: Some(frontier_game_session::game::TimeControlSpec {
                initial_seconds: 30,
                increment_seconds: 0,
            }),
            start_fen: None,
        })
        .await
        .expect_err("30 s is below the minimum");
    assert_eq!(code_of(bad_clock), ErrorCode::BadTimeControl);
}

fn parse(frame: &[u8]) -> ServerMessage {
    serde_json::from_slice(frame).expect("frames are protocol messages")
}

#[tokio::test]
async fn a_captured_hidden_identity_goes_only_to_the_capturer() {
    let svc = service();
    let mut events = svc.bus().subscribe();
    let (game, white, black) = started(&svc, Variant::Hidden).await;
    // b1 (looks like a knight, truly a queen) goes to c3, revealing a queen, and then takes
    // the hidden piece on c7 (it looks like a pawn and is one).
    for (who, uci) in [(&white, "b1c3"), (&black, "a7a6"), (&white, "c3c7")] {
        svc.act(&game, &who.id, "", None, &mv(uci))
            .await
            .expect(uci);
    }
    let mut capture_frames = Vec::new();
    while let Ok(e) = events.try_recv() {
        if e.version == 5 {
            capture_frames.push((e.subject.clone(), parse(&e.payload)));
        } else {
            // The moves before read alike for everyone: one frame, on the shared subject.
            assert!(
                e.subject.ends_with(".white.black.public"),
                "version {}: {}",
                e.version,
                e.subject
            );
        }
    }
    assert_eq!(capture_frames.len(), 3, "one frame per audience");
    let mut audiences: Vec<String> = capture_frames
        .iter()
        .map(|(s, _)| s.rsplitn(4, '.').take(3).collect::<Vec<_>>().join(" "))
        .collect();
    audiences.sort_unstable();
    assert_eq!(
        audiences,
        ["- - white", "- black -", "public - -"],
        "each on its audience's own subject (last tokens, last first)"
    );
    for (subject, frame) in capture_frames {
        let ServerMessage::Event { event, .. } = frame else {
            panic!("an event");
        };
        let GameEvent::Move {
            captured_identity,
            captured,
            ..
        } = *event
        else {
            panic!("a move");
        };
        assert_eq!(captured.map(|c| c.hidden), Some(true));
        if subject.ends_with(".white.-.-") {
            assert_eq!(
                captured_identity.as_deref(),
                Some("pawn"),
                "c7 is a pawn in LAYOUT"
            );
        } else {
            assert_eq!(captured_identity, None, "{subject} must not learn it");
        }
    }
    // Views: only White's lists the identity.
    for (who, expect) in [(&white.id, 1usize), (&black.id, 0), (&String::new(), 0)] {
        let frame = svc.view(&game, who).await.expect("view").frame;
        let ServerMessage::Game { game: g, .. } = parse(frame.as_bytes()) else {
            panic!("a game frame");
        };
        assert_eq!(g.captured_identities.len(), expect);
        assert!(g.shuffle.is_none());
    }
}

#[tokio::test]
async fn resume_returns_the_missing_events_of_the_seat_or_the_view() {
    let svc = service();
    let (game, white, black) = started(&svc, Variant::Standard).await;
    for (who, uci) in [(&white, "e2e4"), (&black, "e7e5"), (&white, "g1f3")] {
        svc.act(&game, &who.id, "", None, &mv(uci))
            .await
            .expect(uci);
    }
    let (_, resume) = svc.resume(&game, &black.id, 3, 0).await.expect("resume");
    let Resume::Events(frames) = resume else {
        panic!("events expected");
    };
    assert_eq!(
        frames.iter().map(|e| e.version).collect::<Vec<_>>(),
        vec![4, 5]
    );
    let (_, resume) = svc.resume(&game, &black.id, 0, 2).await.expect("resume");
    assert!(
        matches!(resume, Resume::View(ref v) if v.version == 5),
        "gap larger than max: the view"
    );
    let (_, resume) = svc.resume(&game, &black.id, 9, 0).await.expect("resume");
    assert!(
        matches!(resume, Resume::View(ref v) if v.version == 5),
        "ahead of the game: the view"
    );
    let (_, resume) = svc.resume(&game, &black.id, 5, 0).await.expect("resume");
    assert!(matches!(resume, Resume::Events(ref f) if f.is_empty()));
}

#[tokio::test]
async fn a_finished_game_reaches_the_stream_once() {
    let svc = service();
    let (game, white, black) = started(&svc, Variant::Hidden).await;
    svc.act(&game, &white.id, "", None, &mv("e2e4"))
        .await
        .expect("move");
    svc.act(&game, &black.id, "", None, &Action::OfferDraw)
        .await
        .expect("offer");
    assert_eq!(
        code_of(
            svc.act(&game, &black.id, "", None, &Action::OfferDraw)
                .await
                .expect_err("again")
        ),
        ErrorCode::DrawAlreadyOffered
    );
    svc.act(&game, &white.id, "", None, &Action::AcceptDraw)
        .await
        .expect("accept");
    assert_eq!(
        code_of(
            svc.act(&game, &white.id, "", None, &mv("d2d4"))
                .await
                .expect_err("over")
        ),
        ErrorCode::GameOver
    );
    assert!(
        svc.store().outbox().await.expect("outbox").is_empty(),
        "acknowledged"
    );
    assert_eq!(svc.flush_outbox().await.expect("sweep"), 0);
    let finished = svc.bus().finished();
    assert_eq!(finished.len(), 1);
    use prost::Message as _;
    let record =
        frontier_proto::games::v1::FinishedGame::decode(finished[0].1.as_ref()).expect("record");
    assert_eq!(record.outcome, "draw-agreement");
    assert_eq!(record.initial_layout, LAYOUT);
    assert_eq!(
        frontier_rules::verify_shuffle(&record.commitment, &record.salt, &record.initial_layout),
        Ok(())
    );
    assert_eq!(record.moves.len(), 1);
    assert_eq!(record.moves[0].reveal_role, "pawn");
}

/// White's a1 is truly a pawn and a2 a knight; Black's a7 is a knight.
const PROMOTION_LAYOUT: &str = "PNBQBRRNPPPPPPP/rbbqnrpnppppppp";

#[tokio::test]
async fn a_pending_promotion_is_answered_by_the_mover_only() {
    let ns = Namespace::new("logic").expect("valid");
    let svc = GameService::new(
        MemoryStore::new(),
        MemoryBus::new(ns, 1024),
        Arc::new(SystemClock),
        Arc::new(FixedLayout(
            Layout::from_canonical(PROMOTION_LAYOUT).expect("valid"),
        )),
        Settings::default(),
    );
    let (game, white, black) = started(&svc, Variant::Hidden).await;
    // The a2 and a7 "pawns" turn out to be knights and jump away, opening the a-file; the
    // a1 "rook" then takes on a8 and reveals a pawn on its last rank.
    for (who, uci) in [
        (&white, "a2a3"),
        (&black, "a7a6"),
        (&white, "a3b5"),
        (&black, "a6c5"),
    ] {
        svc.act(&game, &who.id, "", None, &mv(uci))
            .await
            .expect(uci);
    }
    svc.act(&game, &white.id, "", None, &mv("a1a8"))
        .await
        .expect("a1a8");
    let frame = svc.view(&game, &black.id).await.expect("view").frame;
    let ServerMessage::Game { game: g, .. } = parse(frame.as_bytes()) else {
        panic!("a game frame");
    };
    assert_eq!(g.pending_promotion.as_deref(), Some("a8"));
    assert_eq!(g.turn, "white", "the mover's clock keeps running");
    assert_eq!(
        code_of(
            svc.act(&game, &black.id, "", None, &mv("h7h6"))
                .await
                .expect_err("wait")
        ),
        ErrorCode::NotYourTurn
    );
    assert_eq!(
        code_of(
            svc.act(
                &game,
                &black.id,
                "",
                None,
                &Action::Promote(frontier_rules::Role::Queen)
            )
            .await
            .expect_err("not black's")
        ),
        ErrorCode::NoPromotionPending
    );
    assert_eq!(
        code_of(
            svc.act(&game, &white.id, "", None, &mv("e2e4"))
                .await
                .expect_err("choose first")
        ),
        ErrorCode::PromotionPending
    );
    svc.act(
        &game,
        &white.id,
        "p",
        None,
        &Action::Promote(frontier_rules::Role::Knight),
    )
    .await
    .expect("promote");
    let frame = svc.view(&game, "").await.expect("view").frame;
    let ServerMessage::Game { game: g, .. } = parse(frame.as_bytes()) else {
        panic!("a game frame");
    };
    assert_eq!(g.pending_promotion, None);
    assert_eq!(g.turn, "black");
    assert_eq!(g.moves.last().map(|m| m.uci.as_str()), Some("a1a8n"));
    assert!(g.fen.starts_with('N'), "{}", g.fen);
}

#[tokio::test]
async fn a_board_aborted_while_waiting_is_not_recorded() {
    let svc = service();
    let creator = player("creator", true);
    let (game, _, _) = svc
        .create_board(NewBoard {
            creator: creator.clone(),
            variant: Variant::Standard,
            color: Some(Color::Black),
            rated: false,
            time_control: None,
            start_fen: None,
        })
        .await
        .expect("created");
    assert_eq!(
        svc.act(&game, &creator.id, "a", None, &Action::Abort)
            .await
            .expect("aborted"),
        (2, false)
    );
    assert!(
        svc.store().outbox().await.expect("outbox").is_empty(),
        "never in the outbox"
    );
    assert_eq!(svc.flush_outbox().await.expect("sweep"), 0);
    assert!(
        svc.bus().finished().is_empty(),
        "no finished-game record for a board that never started"
    );
    // A started game aborted before both sides moved is still a game: recorded.
    let (game, white, _) = started(&svc, Variant::Standard).await;
    svc.act(&game, &white.id, "a", None, &Action::Abort)
        .await
        .expect("aborted");
    assert_eq!(svc.bus().finished().len(), 1);
}

#[tokio::test]
async fn no_type_holding_a_secret_prints_it_through_debug() {
    use frontier_game_session::storage;
    use prost::Message as _;
    let svc = service();
    let (game, white, black) = started(&svc, Variant::Hidden).await;
    // White's b1 is truly a queen: it moves as a knight and is revealed where it lands;
    // then it takes Black's hidden c7, whose identity only White learns (the server's
    // record keeps it).
    for (who, uci) in [(&white, "b1c3"), (&black, "h7h6"), (&white, "c3c7")] {
        svc.act(&game, &who.id, "", None, &mv(uci))
            .await
            .expect("legal");
    }
    let loaded = svc
        .store()
        .load(&game)
        .await
        .expect("load")
        .expect("stored");
    let bytes = loaded.state.clone();
    let live = storage::decode(&bytes, &loaded.moves).expect("decodes");
    let stored = frontier_proto::gamesession::storage::v1::StoredGame::decode(bytes.as_ref())
        .expect("decodes");
    assert!(!stored.layout.is_empty() && !stored.salt.is_empty());
    let salt_hex: String = stored.salt.iter().map(|b| format!("{b:02x}")).collect();
    let printed = [
        format!("{live:?}"),
        format!("{stored:?}"),
        format!("{:?}", live.game()),
        format!("{:?}", stored.moves),
        format!("{:?}", live.moves()),
    ];
    for text in &printed {
        assert!(!text.contains(&stored.layout), "layout in {text}");
        assert!(!text.contains(&salt_hex), "salt in {text}");
        assert!(
            !text.contains(&format!("{:?}", stored.salt)),
            "salt in {text}"
        );
    }
    // The finished record is public once the game is over, yet its Debug still prints no
    // secret: records go to logs by id.
    svc.act(&game, &white.id, "", None, &Action::Resign)
        .await
        .expect("resign");
    let finished = svc.bus().finished();
    let record =
        frontier_proto::games::v1::FinishedGame::decode(finished[0].1.as_ref()).expect("record");
    assert_eq!(record.initial_layout, LAYOUT);
    let text = format!("{record:?}");
    assert!(
        !text.contains(LAYOUT) && !text.contains(&record.salt),
        "{text}"
    );
}

#[tokio::test]
async fn refusals_cross_grpc_with_a_typed_code() {
    use frontier_proto::gamesession::v1 as pb;
    use frontier_proto::gamesession::v1::game_session_server::GameSessionServer;
    let svc = Arc::new(service());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(GameSessionServer::new(
                frontier_game_session::grpc::GrpcGameSession::new(svc),
            ))
            .serve_with_incoming(tokio_stream_of(listener)),
    );
    let mut client =
        frontier_proto::game_session_client(&[format!("http://{addr}")]).expect("client");
    let unknown = client
        .act(pb::ActRequest {
            game_id: GameId::new().to_string(),
            player_id: PlayerId::new().to_string(),
            client_action_id: String::new(),
            expected_version: None,
            action: Some(pb::act_request::Action::Resign(pb::Resign {})),
        })
        .await
        .expect_err("no such game");
    assert_eq!(
        frontier_platform::grpc::refusal_code(&unknown),
        Some(ErrorCode::GameNotFound)
    );
    assert_eq!(unknown.code(), tonic::Code::NotFound);
    assert_eq!(
        unknown.message(),
        "no such game",
        "the message is text only"
    );
    let bad = client
        .create_board(pb::CreateBoardRequest::default())
        .await
        .expect_err("no creator");
    assert_eq!(
        frontier_platform::grpc::refusal_code(&bad),
        Some(ErrorCode::BadField)
    );
    server.abort();
}

fn tokio_stream_of(
    listener: tokio::net::TcpListener,
) -> impl futures_util::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    futures_util::stream::unfold(listener, |listener| async move {
        Some((listener.accept().await.map(|(s, _)| s), listener))
    })
}

#[tokio::test]
async fn the_in_memory_store_keeps_rematch_offers_as_redis_does() {
    use frontier_game_session::rematch::{Lapse, RematchState};
    let svc = service();
    let mut notices = svc.bus().subscribe();
    let (game, white, black) = started(&svc, Variant::Atomic).await;
    svc.act(&game, &white.id, "", None, &Action::Resign)
        .await
        .expect("resigns");
    assert_eq!(
        svc.offer_rematch(&game, &black.id).await.expect("offered"),
        RematchState::Offered(Color::Black)
    );
    assert_eq!(
        code_of(
            svc.offer_rematch(&game, &black.id)
                .await
                .expect_err("refused")
        ),
        ErrorCode::RematchAlreadyOffered
    );
    assert_eq!(
        svc.lapse_rematches(&black.id, None, Lapse::Seeking)
            .await
            .expect("lapses"),
        1
    );
    assert_eq!(
        code_of(
            svc.accept_rematch(&game, &white.id)
                .await
                .expect_err("refused")
        ),
        ErrorCode::NoRematchOffer
    );
    svc.offer_rematch(&game, &black.id)
        .await
        .expect("offered again");
    let RematchState::Started(rematch, color) = svc
        .accept_rematch(&game, &white.id)
        .await
        .expect("accepted")
    else {
        panic!("the rematch starts");
    };
    assert_eq!(color, Color::Black, "White of the last game plays Black");
    assert_eq!(
        svc.accept_rematch(&game, &black.id)
            .await
            .expect("answered"),
        RematchState::Started(rematch, Color::White),
        "a repeat answers the same rematch"
    );
    // The notices went to each player's subject, in order, once each.
    let ns = Namespace::new("logic").expect("valid");
    let mut told = Vec::new();
    while let Ok(m) = notices.try_recv() {
        if m.subject == ns.player_subject(&white.id) {
            let frame: ServerMessage = serde_json::from_slice(&m.payload).expect("a frame");
            told.push(frame);
        }
    }
    let kinds: Vec<&str> = told
        .iter()
        .map(|f| match f {
            ServerMessage::RematchOffered { .. } => "offered",
            ServerMessage::RematchCancelled { .. } => "cancelled",
            ServerMessage::RematchStarted { .. } => "started",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["offered", "cancelled", "offered", "started"]);
}

/// A stored game carries its format: a game written before formats were numbered (0) is
/// read and played on (and rewritten in this version's format); a game written in a newer
/// format than this version's is left as it is and the move answered as a typed error
/// (`NewerFormat`, `unavailable` to the client): an instance of the old version during a
/// rolling upgrade never rewrites, and so never drops, what it cannot read.
#[tokio::test]
async fn a_stored_games_format_is_read_when_older_and_left_alone_when_newer() {
    use frontier_game_session::storage;
    use frontier_game_session::store::Write;
    use frontier_proto::gamesession::storage::v1::StoredGame;
    use prost::Message as _;
    let svc = service();
    let (game, white, black) = started(&svc, Variant::Standard).await;
    svc.act(&game, &white.id, "", None, &mv("e2e4"))
        .await
        .expect("legal");
    let rewrite = |format: u32| {
        let svc = &svc;
        async move {
            let loaded = svc
                .store()
                .load(&game)
                .await
                .expect("load")
                .expect("stored");
            let version = loaded.version;
            let mut stored = StoredGame::decode(loaded.state.as_ref()).expect("decodes");
            stored.format = format;
            let state = bytes::Bytes::from(stored.encode_to_vec());
            let written = svc
                .store()
                .compare_and_set(Write {
                    game,
                    expected: version,
                    version: version + 1,
                    state: state.clone(),
                    entries: vec![bytes::Bytes::new()],
                    finished_ttl: None,
                    outbox: false,
                    deadline: None,
                    untimed: false,
                    bot_job: None,
                    moves: Default::default(),
                })
                .await
                .expect("written");
            assert!(written);
            state
        }
    };
    let format_now = || async {
        let loaded = svc
            .store()
            .load(&game)
            .await
            .expect("load")
            .expect("stored");
        StoredGame::decode(loaded.state.as_ref())
            .expect("decodes")
            .format
    };
    assert_eq!(
        format_now().await,
        storage::DEFAULT_FORMAT,
        "this version writes its default format"
    );
    // Newer: refused, typed, and the stored bytes untouched.
    let newer = rewrite(storage::NEWEST + 1).await;
    let refused = svc
        .act(&game, &black.id, "", None, &mv("e7e5"))
        .await
        .expect_err("a newer format is not this version's to play");
    assert!(
        matches!(refused, SessionError::NewerFormat(f) if f == storage::NEWEST + 1),
        "{refused:?}"
    );
    let kept = svc
        .store()
        .load(&game)
        .await
        .expect("load")
        .expect("stored")
        .state;
    assert_eq!(kept, newer, "left as it was");
    // Older (0): read, played, and written back in this version's format.
    rewrite(0).await;
    svc.act(&game, &black.id, "", None, &mv("e7e5"))
        .await
        .expect("an older format is read");
    assert_eq!(format_now().await, storage::DEFAULT_FORMAT);
}
