//! The rating binary: configuration, telemetry, then `run`.

use clap::Parser as _;
use frontier_platform::Shutdown;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = frontier_rating::Config::parse();
    let _telemetry = frontier_platform::telemetry::init("rating")?;
    let shutdown = Shutdown::new();
    frontier_platform::shutdown::two_stage(shutdown.clone(), std::time::Duration::from_secs(20));
    frontier_rating::run(config, shutdown).await
}
