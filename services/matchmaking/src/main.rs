//! The matchmaking binary: configuration, telemetry, then `run`.

use clap::Parser as _;
use frontier_platform::Shutdown;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = frontier_matchmaking::Config::parse();
    let _telemetry = frontier_platform::telemetry::init("matchmaking")?;
    let shutdown = Shutdown::new();
    frontier_platform::shutdown::two_stage(shutdown.clone(), std::time::Duration::from_secs(20));
    frontier_matchmaking::run(config, shutdown).await
}
