//! Matchmaking creating real games: game-session in-process on port 0 over a real Redis and
//! NATS, called through `StartMatch` by match id. The games are checked in game-session's
//! own records, not from matchmaking's word.

use std::sync::Arc;
use std::time::Duration;

use frontier_game_session::bus::NatsBus;
use frontier_game_session::service::{GameService, RandomLayouts, Settings as SessionSettings};
use frontier_game_session::store::RedisStore;
use frontier_matchmaking::{
    GameSessionMaker, MatchedNotice, Matchmaker, NoRatings, Notifier, RedisTickets, Seeker,
    Settings,
};
use frontier_pairing::{BotWaits, PairingConfig, Pool};
use frontier_platform::grpc::refusal_code;
use frontier_platform::time::ManualClock;
use frontier_platform::{Namespace, Shutdown};
use frontier_proto::games::v1 as games;
use frontier_proto::gamesession::v1 as session;
use frontier_proto::gamesession::v1::game_session_client::GameSessionClient;
use frontier_protocol::ErrorCode;
use frontier_rules::Audience;

#[derive(Clone, Default)]
struct Inbox(Arc<std::sync::Mutex<Vec<(String, MatchedNotice)>>>);

impl Notifier for Inbox {
    async fn notify(&self, player: &str, notice: &MatchedNotice) {
        self.0
            .lock()
            .expect("not poisoned")
            .push((player.to_owned(), notice.clone()));
    }
}

type Session = GameService<RedisStore, NatsBus>;

struct Env {
    ns: Namespace,
    sessions: Arc<Session>,
    url: String,
    shutdown: Shutdown,
    clock: Arc<ManualClock>,
    inbox: Inbox,
}

async fn env() -> Env {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("a namespace");
    let store = RedisStore::connect(&frontier_testkit::redis_url(), ns.clone())
        .await
        .expect("Redis");
    let bus = NatsBus::connect(&frontier_testkit::nats_url(), ns.clone())
        .await
        .expect("NATS");
    let sessions = Arc::new(GameService::new(
        store,
        bus,
        Arc::new(frontier_platform::time::SystemClock),
        Arc::new(RandomLayouts),
        SessionSettings::default(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    let shutdown = Shutdown::new();
    tokio::spawn(
        frontier_game_session::Service::from_parts(sessions.clone(), Duration::from_secs(1))
            .serve(listener, shutdown.clone()),
    );
    Env {
        ns,
        sessions,
        url,
        shutdown,
        clock: Arc::new(ManualClock::at(1_000_000)),
        inbox: Inbox::default(),
    }
}

impl Env {
    async fn matchmaker(
        &self,
        url: &str,
        config: PairingConfig,
    ) -> Matchmaker<GameSessionMaker, Inbox, NoRatings> {
        let conn = redis::aio::ConnectionManager::new(
            redis::Client::open(frontier_testkit::redis_url()).expect("Redis URL"),
        )
        .await
        .expect("Redis answers");
        Matchmaker::new(
            RedisTickets::new(conn, &self.ns),
            GameSessionMaker::new(&[url.to_owned()]).expect("a game-session URL"),
            self.inbox.clone(),
            NoRatings,
            config,
            self.clock.clone(),
            Settings::default(),
        )
    }

    /// The `game` frame of `game` as the public sees it, from game-session's record.
    async fn public_view(&self, game: &str) -> serde_json::Value {
        let view = self
            .sessions
            .view(&game.parse().expect("a game id"), "")
            .await
            .expect("the game exists");
        assert_eq!(view.audience, Audience::Spectator);
        serde_json::from_str(&view.frame).expect("a JSON frame")
    }
}

fn seeker(guest: bool) -> Seeker {
    Seeker {
        id: uuid::Uuid::new_v4().to_string(),
        name: "someone".into(),
        guest,
    }
}

fn no_bots() -> PairingConfig {
    PairingConfig {
        bots: BotWaits {
            default_ms: 0,
            per_pool: Vec::new(),
        },
        ..PairingConfig::default()
    }
}

#[tokio::test]
async fn two_seekers_get_one_started_game_with_the_pools_settings() {
    let env = env().await;
    let mm = env.matchmaker(&env.url, no_bots()).await;
    let pool: Pool = "hidden:3+2:rated".parse().expect("a pool");
    let (a, b) = (seeker(false), seeker(false));
    mm.seek(a.clone(), &[pool]).await.expect("seek");
    mm.seek(b.clone(), &[pool]).await.expect("seek");
    let report = mm.step(&mut || true).await.expect("step");
    assert_eq!(report.created, 1);
    let notices = env.inbox.0.lock().expect("not poisoned").clone();
    assert_eq!(notices.len(), 2);
    let game = notices[0].1.game_id.clone();
    assert_eq!(game, notices[0].1.match_id, "the game's id is the match id");
    let frame = env.public_view(&game).await;
    let g = &frame["game"];
    assert_eq!(g["status"], "playing");
    assert_eq!(g["variant"], "hidden");
    assert_eq!(g["rated"], true);
    assert_eq!(g["clock"]["minutes"], 3);
    assert_eq!(g["clock"]["increment"], 2);
    let seated: Vec<&str> = [&g["white"]["id"], &g["black"]["id"]]
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    let (white, black) = if notices[0].1.color == "white" {
        (&notices[0].0, &notices[1].0)
    } else {
        (&notices[1].0, &notices[0].0)
    };
    assert_eq!(seated, vec![white.as_str(), black.as_str()]);
    env.shutdown.trigger();
}

#[tokio::test]
async fn a_lone_seeker_plays_a_labelled_casual_bot() {
    let env = env().await;
    let mm = env.matchmaker(&env.url, PairingConfig::default()).await;
    let a = seeker(true);
    mm.seek(a.clone(), &["atomic:1+0:casual".parse().expect("a pool")])
        .await
        .expect("seek");
    env.clock.advance(20_000);
    assert_eq!(mm.step(&mut || false).await.expect("step").created, 1);
    let notices = env.inbox.0.lock().expect("not poisoned").clone();
    let notice = &notices[0].1;
    assert!(notice.opponent.bot && !notice.rated);
    let g = env.public_view(&notice.game_id).await["game"].clone();
    let bot_side = if notice.color == "white" {
        "black"
    } else {
        "white"
    };
    assert_eq!(
        g[bot_side]["bot"], true,
        "labelled as a bot in the game itself"
    );
    assert_eq!(g[bot_side]["name"], notice.opponent.name.as_str());
    assert_eq!(g["rated"], false);
    assert_eq!(g["status"], "playing");
    env.shutdown.trigger();
}

#[tokio::test]
async fn with_game_session_down_both_tickets_go_back_with_their_wait() {
    let env = env().await;
    // A port nobody listens on: connections are refused, so nothing was sent.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let down = format!("http://{}", closed.local_addr().expect("an address"));
    drop(closed);
    let mm = env.matchmaker(&down, no_bots()).await;
    let pool: Pool = "standard:5+0:casual".parse().expect("a pool");
    let (a, b) = (seeker(false), seeker(true));
    mm.seek(a.clone(), &[pool]).await.expect("seek");
    env.clock.advance(1_500);
    mm.seek(b.clone(), &[pool]).await.expect("seek");
    let before = (
        mm.status(&a.id).await.expect("status").seeking,
        mm.status(&b.id).await.expect("status").seeking,
    );
    let report = mm.step(&mut || true).await.expect("step");
    assert_eq!((report.paired, report.created, report.restored), (1, 0, 1));
    let after = (
        mm.status(&a.id).await.expect("status").seeking,
        mm.status(&b.id).await.expect("status").seeking,
    );
    assert_eq!(after, before, "same pools, same original since");
    // game-session is back: the next step pairs them.
    let up = env.matchmaker(&env.url, no_bots()).await;
    assert_eq!(up.step(&mut || true).await.expect("step").created, 1);
    env.shutdown.trigger();
}

fn person(p: &Seeker) -> session::MatchSeat {
    session::MatchSeat {
        seat: Some(session::match_seat::Seat::Player(games::Player {
            id: p.id.clone(),
            name: p.name.clone(),
            guest: p.guest,
            bot: false,
            bot_level: 0,
        })),
    }
}

#[tokio::test]
async fn start_match_is_idempotent_by_match_id_and_refuses_bad_seats() {
    let env = env().await;
    let mut client = GameSessionClient::connect(env.url.clone())
        .await
        .expect("game-session answers");
    let (a, b, guest) = (seeker(false), seeker(false), seeker(true));
    let request = |white: session::MatchSeat, black: session::MatchSeat, rated: bool| {
        session::StartMatchRequest {
            match_id: uuid::Uuid::now_v7().to_string(),
            variant: games::Variant::Standard as i32,
            rated,
            time_control: Some(games::TimeControl {
                initial_seconds: 180,
                increment_seconds: 0,
            }),
            white: Some(white),
            black: Some(black),
        }
    };
    let first = request(person(&a), person(&b), true);
    let made = client
        .start_match(first.clone())
        .await
        .expect("created")
        .into_inner();
    assert_eq!(
        (made.game_id.as_str(), made.version, made.created),
        (first.match_id.as_str(), 2, true)
    );
    let again = client
        .start_match(first.clone())
        .await
        .expect("a repeat")
        .into_inner();
    assert_eq!(
        (again.game_id, again.created),
        (made.game_id, false),
        "a retry creates none"
    );

    let bot = session::MatchSeat {
        seat: Some(session::match_seat::Seat::Bot(games::BotLevel::Easy as i32)),
    };
    for (bad, code) in [
        (request(person(&a), person(&a), false), ErrorCode::BadField),
        (request(person(&a), bot.clone(), true), ErrorCode::BadField),
        (
            request(bot.clone(), bot.clone(), false),
            ErrorCode::BadField,
        ),
        (
            request(person(&guest), person(&b), true),
            ErrorCode::GuestRated,
        ),
        (
            session::StartMatchRequest {
                match_id: "not-a-uuid".into(),
                ..request(person(&a), person(&b), false)
            },
            ErrorCode::BadField,
        ),
    ] {
        let id = bad.match_id.clone();
        let refused = client.start_match(bad).await.expect_err("refused");
        assert_eq!(refusal_code(&refused), Some(code));
        if let Ok(game) = id.parse() {
            assert!(
                env.sessions.view(&game, "").await.is_err(),
                "a refused match makes no game"
            );
        }
    }
    env.shutdown.trigger();
}
