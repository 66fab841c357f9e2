//! The same gateway, game-session and rating code on in-memory adapters only (no Redis,
//! NATS or Postgres): the wiring the single-process mode will use.

mod common;

use std::sync::Arc;
use std::time::Duration;

use clap::Parser as _;
use common::{Client, start_game};
use frontier_game_session::bus::MemoryBus;
use frontier_game_session::service::{GameService, RandomLayouts, Settings, SystemClock};
use frontier_game_session::store::MemoryStore;
use frontier_gateway::accounts::MemoryAccounts;
use frontier_gateway::hashing::HashPool;
use frontier_gateway::hub::{Hub, LocalSource};
use frontier_gateway::limits::Limits;
use frontier_platform::local_bus::LocalBus;
use frontier_platform::{JwtKeys, Namespace, Shutdown};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_plays_through_in_memory_adapters() -> anyhow::Result<()> {
    let ns = Namespace::new("memory").map_err(anyhow::Error::msg)?;
    let bus = LocalBus::new(1024);
    let shutdown = Shutdown::new();
    let service = Arc::new(GameService::new(
        MemoryStore::new(),
        MemoryBus::on(ns.clone(), bus.clone()),
        Arc::new(SystemClock),
        Arc::new(RandomLayouts),
        Settings::default(),
    ));
    // The gateway's defaults (no Redis: the limits let everything through).
    let limit_args =
        frontier_gateway::Config::try_parse_from(["gateway", "--jwt-secret", common::JWT_SECRET])?
            .limits;
    let grpc = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let grpc_addr = grpc.local_addr()?;
    // Bot jobs go to the in-process work queue; this test takes them off as a worker would.
    let jobs = service.bus().jobs();
    let core = service.clone();
    tokio::spawn(
        frontier_game_session::Service::from_parts(service, Duration::from_secs(1))
            .serve(grpc, shutdown.clone()),
    );
    let state = Arc::new(frontier_gateway::AppState {
        accounts: MemoryAccounts::new(HashPool::new(1, 16)?),
        ratings: None,
        fairplay: None,
        matchmaking: None,
        jwt: JwtKeys::new(common::JWT_SECRET.as_bytes(), Duration::from_secs(3600))
            .map_err(anyhow::Error::msg)?,
        sessions: frontier_gateway::sessions::connect(&[format!("http://{grpc_addr}")])?,
        hub: Hub::new(Box::new(LocalSource(bus.clone()))),
        followers: Default::default(),
        notices: {
            let notices = frontier_gateway::notices::PlayerNotices::new(&ns);
            notices.local(&bus, frontier_gateway::notices::LocalKind::Frames);
            notices
        },
        limits: Limits::disabled(ns.clone(), limit_args),
        readiness: frontier_platform::admin::Readiness::new(),
        ns,
        settings: frontier_gateway::Settings {
            public_url: "http://frontier.test".into(),
            rate_per_second: 20.0,
            rate_burst: 40,
            auth_timeout: Duration::from_secs(10),
            outbound_queue: 512,
            presence_interval: Duration::from_secs(10),
            rematch_grace: Duration::from_secs(10),
        },
        shutdown: shutdown.clone(),
        connections: tokio_util::task::TaskTracker::new(),
    });
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = http.local_addr()?;
    tokio::spawn(frontier_gateway::Service::from_state(state).serve(http, shutdown.clone()));

    let mut white = Client::guest(addr, "white").await?;
    let mut black = Client::guest(addr, "black").await?;
    let game = start_game(&mut white, &mut black, "hidden", "white").await?;
    let v = white.play(&game, "e2e4").await?;
    let e = black.event(&game, v).await?;
    assert_eq!(e["event"]["uci"], "e2e4");
    assert!(e["event"]["reveal"]["role"].is_string());
    black
        .send(json!({"type": "resign", "id": "r", "game_id": game}))
        .await?;
    let v = black.ack("r").await?["version"]
        .as_u64()
        .unwrap_or_default();
    assert_eq!(
        white.event(&game, v).await?["outcome"]["reason"],
        "resignation"
    );
    // A game against the computer: the bot (White) owes the first move; its job is on the
    // in-process queue, and acting on it moves the bot.
    let mut me = Client::guest(addr, "me").await?;
    me.send(json!({"type": "play_computer", "id": "pc", "variant": "standard", "level": "easy", "color": "black"}))
        .await?;
    let created = me
        .until("game_created", |v| v["type"] == "game_created")
        .await?;
    let bot_game = created["game_id"].as_str().unwrap_or_default().to_owned();
    // The game opens (before the bot moves: the test is the bot).
    let opened = me.until("view", |v| v["type"] == "game").await?;
    assert_eq!(opened["game"]["white"]["bot"], true);
    let job = tokio::time::timeout(common::WAIT, jobs.next()).await?;
    let job: frontier_protocol::BotJob = serde_json::from_slice(&job.payload)?;
    assert_eq!(
        (job.game_id.as_str(), job.version, job.seat.as_str()),
        (bot_game.as_str(), 2, "white")
    );
    let game_id: frontier_platform::GameId = bot_game.parse()?;
    core.act(
        &game_id,
        &job.player_id,
        &job.job,
        Some(job.version),
        &frontier_game_session::game::Action::Move("e2e4".into(), None),
    )
    .await?;
    let moved = me.event(&bot_game, 3).await?;
    assert_eq!(
        (
            moved["event"]["uci"].as_str(),
            moved["event"]["color"].as_str()
        ),
        (Some("e2e4"), Some("white"))
    );
    // Records are the rating service's: a gateway without its URL answers 503, clearly.
    let (status, _) = common::get(addr, "/api/leaderboard?variant=hidden").await?;
    assert_eq!(status, 503);
    shutdown.trigger();
    Ok(())
}

fn finished_game(white: &str, black: &str) -> frontier_proto::games::v1::FinishedGame {
    use frontier_proto::games::v1::{FinishedGame, MoveRecord, Player, TimeControl, Variant};
    let player = |id: &str, name: &str| Player {
        id: id.to_owned(),
        name: name.to_owned(),
        guest: false,
        bot: false,
        bot_level: 0,
    };
    FinishedGame {
        game_id: uuid::Uuid::now_v7().to_string(),
        variant: Variant::Standard as i32,
        rated: true,
        time_control: Some(TimeControl {
            initial_seconds: 300,
            increment_seconds: 3,
        }),
        white: Some(player(white, "ann")),
        black: Some(player(black, "bea")),
        result: "white".into(),
        outcome: "white-resignation".into(),
        moves: vec![MoveRecord {
            ply: 1,
            uci: "e2e4".into(),
            at_ms: 900,
            clock_ms: Some(302_100),
            ..Default::default()
        }],
        created_at_ms: 1_800_000_000_000,
        started_at_ms: 1_800_000_001_000,
        ended_at_ms: 1_800_000_060_000,
        start_fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
        final_fen: "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1".into(),
        ..Default::default()
    }
}

async fn json_get(addr: std::net::SocketAddr, path: &str) -> anyhow::Result<(u16, Value)> {
    let (status, body) = common::get(addr, path).await?;
    Ok((
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_is_served_from_the_rating_service_and_the_gateways_accounts()
-> anyhow::Result<()> {
    // The rating service's read API over its in-memory store, holding one finished game.
    let store = frontier_rating::MemoryStore::new();
    let rating_shutdown = Shutdown::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let rating_url = format!("http://{}", listener.local_addr()?);
    let rating = tokio::spawn(frontier_rating::serve_api(
        listener,
        frontier_rating::grpc::RatingsService::new(
            store.clone(),
            Arc::new(frontier_platform::time::SystemClock),
        ),
        rating_shutdown.clone(),
    ));
    let shutdown = Shutdown::new();
    let state = Arc::new(frontier_gateway::AppState {
        accounts: MemoryAccounts::new(HashPool::new(1, 16)?),
        ratings: Some(frontier_gateway::records::connect(&rating_url).map_err(anyhow::Error::msg)?),
        fairplay: None,
        matchmaking: None,
        jwt: JwtKeys::new(common::JWT_SECRET.as_bytes(), Duration::from_secs(3600))
            .map_err(anyhow::Error::msg)?,
        // No game is played here: game-session is never called.
        sessions: frontier_gateway::sessions::connect(&["http://127.0.0.1:9".to_owned()])?,
        hub: Hub::new(Box::new(LocalSource(LocalBus::new(16)))),
        followers: Default::default(),
        notices: frontier_gateway::notices::PlayerNotices::new(
            &Namespace::new("memory").map_err(anyhow::Error::msg)?,
        ),
        readiness: frontier_platform::admin::Readiness::new(),
        limits: Limits::disabled(
            Namespace::new("memory").map_err(anyhow::Error::msg)?,
            frontier_gateway::Config::try_parse_from([
                "gateway",
                "--jwt-secret",
                common::JWT_SECRET,
            ])?
            .limits,
        ),
        ns: Namespace::new("memory").map_err(anyhow::Error::msg)?,
        settings: frontier_gateway::Settings {
            public_url: "http://frontier.test".into(),
            rate_per_second: 20.0,
            rate_burst: 40,
            auth_timeout: Duration::from_secs(10),
            outbound_queue: 512,
            presence_interval: Duration::from_secs(10),
            rematch_grace: Duration::from_secs(10),
        },
        shutdown: shutdown.clone(),
        connections: tokio_util::task::TaskTracker::new(),
    });
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = http.local_addr()?;
    tokio::spawn(frontier_gateway::Service::from_state(state).serve(http, shutdown.clone()));
    let mut ids = Vec::new();
    for name in ["ann", "bea"] {
        let (status, body) = common::post(
            addr,
            "/api/register",
            &json!({"username": name, "password": "a long passphrase"}).to_string(),
        )
        .await?;
        anyhow::ensure!(status == 201, "{body}");
        ids.push(body["player"]["id"].as_str().unwrap_or_default().to_owned());
    }
    let game = finished_game(&ids[0], &ids[1]);
    use frontier_rating::RatingStore as _;
    store.record_game(&game).await?;

    // Name and guest flag from the gateway's accounts, the rest from the rating service.
    let (status, ann) = json_get(addr, &format!("/api/players/{}", ids[0])).await?;
    assert_eq!(status, 200, "{ann}");
    assert_eq!(
        (&ann["name"], &ann["guest"]),
        (&json!("ann"), &json!(false))
    );
    let won = frontier_glicko2::rate_game(
        frontier_glicko2::INITIAL,
        0.0,
        frontier_glicko2::INITIAL,
        frontier_glicko2::Score::Win,
    );
    let standard = &ann["ratings"]["standard"];
    assert_eq!(
        standard["rating"],
        json!((won.rating * 100.0).round() / 100.0)
    );
    assert_eq!(
        (
            &standard["games"],
            &standard["wins"],
            &standard["provisional"]
        ),
        (&json!(1), &json!(1), &json!(true))
    );
    assert_eq!(ann["ratings"]["hidden"]["rating"], json!(1500.0));
    // An id with no account is no player, whatever the rating service would say.
    let (status, body) = json_get(addr, &format!("/api/players/{}", uuid::Uuid::now_v7())).await?;
    assert_eq!(
        (status, &body["error"]["code"]),
        (404, &json!("player_not_found"))
    );

    let (status, page) = json_get(addr, &format!("/api/players/{}/games", ids[1])).await?;
    assert_eq!(status, 200);
    assert_eq!(
        page,
        json!({"games": [{
            "id": game.game_id, "variant": "standard", "rated": true,
            "white": {"id": ids[0], "name": "ann"}, "black": {"id": ids[1], "name": "bea"},
            "result": "white", "outcome": "white-resignation", "ended_at": 1_800_000_060_000i64,
        }]}),
        "one page, no next"
    );
    let (status, record) = json_get(addr, &format!("/api/games/{}", game.game_id)).await?;
    assert_eq!(status, 200);
    assert_eq!(record["clock"], json!({"minutes": 5, "increment": 3}));
    assert_eq!(
        record["moves"],
        json!([{"ply": 1, "uci": "e2e4", "reveal_square": "", "reveal_role": "",
                "captured_square": "", "captured_role": "", "captured_was_hidden": false,
                "captured_identity": "", "at_ms": 900, "clock_ms": 302_100}])
    );
    assert_eq!(
        record["black"],
        json!({"id": ids[1], "name": "bea", "guest": false, "bot": false})
    );
    let (status, pgn) = common::get(addr, &format!("/api/games/{}/pgn", game.game_id)).await?;
    assert_eq!(status, 200);
    assert!(
        pgn.contains("[White \"ann\"]") && pgn.contains("1. e4 1-0"),
        "{pgn}"
    );

    // The rating service's refusals keep their documented HTTP form.
    for (path, status, code) in [
        (
            format!("/api/players/{}/games?before=nonsense", ids[0]),
            400,
            "bad_field",
        ),
        (
            format!("/api/players/{}/games?limit=101", ids[0]),
            400,
            "bad_field",
        ),
        (
            format!("/api/players/{}/rating-history", ids[0]),
            400,
            "bad_field",
        ),
        (
            format!("/api/games/{}", uuid::Uuid::now_v7()),
            404,
            "game_not_found",
        ),
        (
            "/api/games/not-a-uuid/pgn".to_owned(),
            404,
            "game_not_found",
        ),
    ] {
        let (got, body) = json_get(addr, &path).await?;
        assert_eq!(
            (got, &body["error"]["code"]),
            (status, &json!(code)),
            "{path}"
        );
    }
    // With the rating service gone, the dashboard is unavailable, clearly.
    rating_shutdown.trigger();
    rating.await??;
    let (status, body) = json_get(addr, "/api/leaderboard?variant=standard").await?;
    assert_eq!(
        (status, &body["error"]["code"]),
        (503, &json!("unavailable"))
    );
    shutdown.trigger();
    Ok(())
}
