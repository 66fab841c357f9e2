//! The same gateway and game-session code on in-memory adapters only (no Redis, NATS or
//! Postgres): the wiring the single-process mode will use.

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
use serde_json::json;

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
    tokio::spawn(frontier_game_session::serve(
        grpc,
        service,
        Duration::from_secs(1),
        shutdown.clone(),
    ));
    let state = Arc::new(frontier_gateway::AppState {
        accounts: MemoryAccounts::new(HashPool::new(1, 16)?),
        records: None,
        jwt: JwtKeys::new(common::JWT_SECRET.as_bytes(), Duration::from_secs(3600))
            .map_err(anyhow::Error::msg)?,
        sessions: frontier_gateway::sessions::connect(&[format!("http://{grpc_addr}")])?,
        hub: Hub::new(Box::new(LocalSource(bus)), 1024),
        limits: Limits::disabled(ns.clone(), limit_args),
        ns,
        settings: frontier_gateway::Settings {
            public_url: "http://frontier.test".into(),
            rate_per_second: 20.0,
            rate_burst: 40,
            auth_timeout: Duration::from_secs(10),
            outbound_queue: 512,
            presence_interval: Duration::from_secs(10),
        },
        shutdown: shutdown.clone(),
    });
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = http.local_addr()?;
    tokio::spawn(frontier_gateway::serve(http, state));

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
    // Records need Postgres: without it the dashboard answers 503, clearly.
    let (status, _) = common::get(addr, "/api/leaderboard?variant=hidden").await?;
    assert_eq!(status, 503);
    shutdown.trigger();
    Ok(())
}
