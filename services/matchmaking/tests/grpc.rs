//! The gRPC API on port 0 over a real Redis and NATS: typed refusals, and two seekers paired
//! by the running pairing loop, each told on their own NATS subject.

use std::sync::Arc;
use std::time::Duration;

use frontier_matchmaking::{
    CreateError, GameMaker, MatchRecord, Matchmaker, NatsNotifier, NoRatings, RedisTickets,
    Service, Settings,
};
use frontier_pairing::PairingConfig;
use frontier_platform::grpc::refusal_code;
use frontier_platform::time::SystemClock;
use frontier_platform::{Namespace, Shutdown};
use frontier_proto::games::v1 as games;
use frontier_proto::matchmaking::v1 as pb;
use frontier_proto::matchmaking::v1::matchmaking_client::MatchmakingClient;
use frontier_protocol::ErrorCode;
use futures_util::StreamExt as _;
use prost::Message as _;

/// Stands in for game-session's StartMatch: one game id per match id.
struct Games;

impl GameMaker for Games {
    async fn create(&self, record: &MatchRecord) -> Result<String, CreateError> {
        Ok(format!("game-of-{}", record.id))
    }
}

fn player(guest: bool) -> games::Player {
    games::Player {
        id: uuid::Uuid::new_v4().to_string(),
        name: "someone".into(),
        guest,
        bot: false,
        bot_level: 0,
    }
}

fn pool(variant: games::Variant, minutes: u32, increment: u32, rated: bool) -> pb::Pool {
    pb::Pool {
        variant: variant as i32,
        minutes,
        increment,
        rated,
    }
}

#[tokio::test]
async fn seek_over_grpc_is_checked_paired_and_announced_on_nats() {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("a namespace");
    let conn = redis::aio::ConnectionManager::new(
        redis::Client::open(frontier_testkit::redis_url()).expect("Redis URL"),
    )
    .await
    .expect("Redis answers");
    let nats = async_nats::connect(frontier_testkit::nats_url())
        .await
        .expect("NATS answers");
    let matchmaker = Matchmaker::new(
        RedisTickets::new(conn, &ns),
        Games,
        NatsNotifier::new(nats.clone(), ns.clone()),
        NoRatings,
        PairingConfig::default(),
        Arc::new(SystemClock),
        Settings {
            interval: Duration::from_millis(20),
            ..Settings::default()
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("an address");
    let shutdown = Shutdown::new();
    let server = tokio::spawn(Service::from_parts(matchmaker).serve(listener, shutdown.clone()));
    let mut client = MatchmakingClient::connect(format!("http://{addr}"))
        .await
        .expect("the server answers");

    // Typed refusals, and nothing stored.
    let guest = player(true);
    let refused = client
        .seek(pb::SeekRequest {
            player: Some(guest.clone()),
            pools: vec![pool(games::Variant::Standard, 3, 0, true)],
        })
        .await
        .expect_err("a guest in a rated pool");
    assert_eq!(refusal_code(&refused), Some(ErrorCode::GuestRated));
    for pools in [
        vec![],
        vec![pool(games::Variant::Standard, 4, 0, false)],
        vec![pool(games::Variant::Unspecified, 3, 0, false)],
        vec![
            pool(games::Variant::Hidden, 3, 0, false),
            pool(games::Variant::Hidden, 3, 0, false),
        ],
    ] {
        let refused = client
            .seek(pb::SeekRequest {
                player: Some(guest.clone()),
                pools,
            })
            .await
            .expect_err("a bad seek");
        assert_eq!(refusal_code(&refused), Some(ErrorCode::BadField));
    }
    let status = client
        .status(pb::PlayerRequest {
            player_id: guest.id.clone(),
        })
        .await
        .expect("status")
        .into_inner();
    assert!(status.pools.is_empty());

    // Two seekers: each told on their own subject.
    let (a, b) = (player(false), player(true));
    let mut a_inbox = nats
        .subscribe(ns.player_subject(&a.id))
        .await
        .expect("subscribe");
    let mut b_inbox = nats
        .subscribe(ns.player_subject(&b.id))
        .await
        .expect("subscribe");
    nats.flush().await.expect("flush");
    for (p, pools) in [
        (&a, vec![pool(games::Variant::Atomic, 3, 2, false)]),
        (
            &b,
            vec![
                pool(games::Variant::Hidden, 3, 2, false),
                pool(games::Variant::Atomic, 3, 2, false),
            ],
        ),
    ] {
        let answer = client
            .seek(pb::SeekRequest {
                player: Some(p.clone()),
                pools,
            })
            .await
            .expect("seek")
            .into_inner();
        assert!(!answer.replaced);
    }
    let to_a =
        pb::Matched::decode(a_inbox.next().await.expect("a notice").payload).expect("a Matched");
    let to_b =
        pb::Matched::decode(b_inbox.next().await.expect("a notice").payload).expect("a Matched");
    assert_eq!(to_a.game_id, to_b.game_id);
    assert_eq!(to_a.pool, "atomic:3+2:casual");
    assert_eq!(
        to_a.opponent.as_ref().map(|o| o.id.as_str()),
        Some(b.id.as_str())
    );
    assert_ne!(to_a.color, to_b.color);
    // After a reconnect, status has it too.
    let status = client
        .status(pb::PlayerRequest {
            player_id: b.id.clone(),
        })
        .await
        .expect("status")
        .into_inner();
    assert_eq!(status.matched.map(|m| m.game_id), Some(to_b.game_id));

    shutdown.trigger();
    server.await.expect("joined").expect("served");
}
