//! The rating binary: configuration, telemetry, then `run`.

use clap::Parser as _;
use frontier_platform::Shutdown;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = frontier_rating::Config::parse();
    let _telemetry = frontier_platform::telemetry::init("rating")?;
    let shutdown = Shutdown::new();
    shutdown.trip_on_signals();
    frontier_rating::run(config, shutdown).await
}
