//! `frontier-rig`: the multi-instance rig for manual and load use (`make rig`). Starts
//! `--instances` (default 2) of every service as separate `frontier <service>` processes
//! on loopback, against the Redis, NATS and Postgres that `scripts/test-services.sh`
//! exports, prints the gateway addresses, and stops everything on Ctrl-C.
//!
//! Flags: `--instances N`, `--logs DIR` (each process's output; default: discarded),
//! `--bin PATH` (the `frontier` binary; default: next to this one). The database is
//! `FRONTIER_DATABASE_URL` if set, else a fresh one; the namespace `FRONTIER_NAMESPACE`,
//! else a fresh one.

use std::path::PathBuf;

use anyhow::Context as _;
use frontier_integration_tests::rig::{Rig, RigConfig};

fn usage() -> &'static str {
    "usage: frontier-rig [--instances N] [--logs DIR] [--bin PATH]"
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let here = std::env::current_exe()?;
    let mut bin = here
        .parent()
        .context("this binary's folder")?
        .join("frontier");
    let mut instances = 2;
    let mut logs = None;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--help" || flag == "-h" {
            println!("{}", usage());
            return Ok(());
        }
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value\n{}", usage()))?;
        match flag.as_str() {
            "--instances" => instances = value.parse().context("--instances")?,
            "--logs" => logs = Some(PathBuf::from(value)),
            "--bin" => bin = PathBuf::from(value),
            other => anyhow::bail!("unknown flag {other}\n{}", usage()),
        }
    }
    let database_url = match std::env::var("FRONTIER_DATABASE_URL") {
        Ok(url) => url,
        Err(_) => frontier_testkit::fresh_database().await?,
    };
    let namespace = std::env::var("FRONTIER_NAMESPACE")
        .unwrap_or_else(|_| frontier_testkit::unique_namespace());
    let jwt_secret = std::env::var("FRONTIER_JWT_SECRET")
        .unwrap_or_else(|_| format!("rig-secret-{}", uuid::Uuid::new_v4().simple()));
    let mut rig = Rig::start(RigConfig {
        bin,
        instances,
        redis_url: frontier_testkit::redis_url(),
        nats_url: frontier_testkit::nats_url(),
        database_url: database_url.clone(),
        namespace: namespace.clone(),
        jwt_secret,
        flags: Vec::new(),
        instance_flags: Vec::new(),
        logs: logs.clone(),
    })
    .await?;
    println!("\nThe rig is running (namespace {namespace}, database {database_url}).");
    for instance in &rig.instances {
        let listen = instance
            .listen
            .map_or_else(|| "-".to_owned(), |a| a.to_string());
        println!(
            "  {:<16} pid {:>7}  listen {:<21} admin {}",
            instance.label(),
            instance.pid().unwrap_or_default(),
            listen,
            instance.admin
        );
    }
    let gateways: Vec<String> = rig.gateways().iter().map(|a| a.to_string()).collect();
    println!("Gateways: {}", gateways.join(","));
    for g in &gateways {
        println!("  ws://{g}/ws/v1");
    }
    if let Some(dir) = &logs {
        println!("Logs in {}", dir.display());
    }
    println!("Press Ctrl-C to stop.");
    tokio::signal::ctrl_c().await?;
    rig.stop();
    Ok(())
}
