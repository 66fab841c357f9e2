//! The game-session binary: configuration, telemetry, then `run`.

use clap::Parser as _;
use frontier_platform::Shutdown;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = frontier_game_session::Config::parse();
    let _telemetry = frontier_platform::telemetry::init("game-session")?;
    let shutdown = Shutdown::new();
    frontier_platform::shutdown::two_stage(shutdown.clone(), std::time::Duration::from_secs(20));
    frontier_game_session::run(config, shutdown).await
}
