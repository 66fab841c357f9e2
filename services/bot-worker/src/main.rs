//! The bot-worker binary: configuration, telemetry, then `run`.

use clap::Parser as _;
use frontier_platform::Shutdown;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = frontier_bot_worker::Config::parse();
    let _telemetry = frontier_platform::telemetry::init("bot-worker")?;
    let shutdown = Shutdown::new();
    frontier_platform::shutdown::two_stage(shutdown.clone(), std::time::Duration::from_secs(20));
    frontier_bot_worker::run(config, shutdown).await
}
