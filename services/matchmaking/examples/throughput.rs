//! How many tickets one matchmaking instance handles a second, against a real Redis, for
//! docs/benchmarks.md: N seeks placed (64 at a time), then pairing steps until every ticket
//! is paired — each step reads every waiting ticket, pairs them, claims each pair with its
//! script and settles it. Games are "created" by a stand-in that answers at once, so this
//! measures matchmaking and Redis, not game-session.
//!
//! ```text
//! cargo run --release -p frontier-matchmaking --example throughput -- --tickets 20000
//! ```

use std::sync::Arc;
use std::time::Instant;

use frontier_matchmaking::{
    CreateError, GameMaker, MatchRecord, MatchedNotice, Matchmaker, NoRatings, Notifier,
    RedisTickets, Seeker, Settings,
};
use frontier_pairing::{BotWaits, PairingConfig, Pool};
use frontier_platform::Namespace;
use frontier_platform::time::SystemClock;

struct Instant_;

impl GameMaker for Instant_ {
    async fn create(&self, record: &MatchRecord) -> Result<String, CreateError> {
        Ok(record.id.clone())
    }
}

struct Nobody;

impl Notifier for Nobody {
    async fn notify(&self, _player: &str, _notice: &MatchedNotice) {}
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut tickets = 20_000usize;
    let mut redis_url = "redis://127.0.0.1:6379".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))?;
        match flag.as_str() {
            "--tickets" => tickets = value.parse()?,
            "--redis-url" => redis_url = value,
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    let ns =
        Namespace::new(&format!("bench-mm-{}", std::process::id())).map_err(anyhow::Error::msg)?;
    let conn = redis::aio::ConnectionManager::new(redis::Client::open(redis_url.as_str())?).await?;
    let matchmaker = Arc::new(Matchmaker::new(
        RedisTickets::new(conn.clone(), &ns),
        Instant_,
        Nobody,
        NoRatings,
        PairingConfig {
            bots: BotWaits {
                default_ms: 0,
                per_pool: Vec::new(),
            },
            ..PairingConfig::default()
        },
        Arc::new(SystemClock),
        Settings::default(),
    ));
    let pool: Pool = "standard:3+0:casual".parse()?;

    let started = Instant::now();
    let mut placed = 0;
    while placed < tickets {
        let batch = (tickets - placed).min(64);
        let mut set = tokio::task::JoinSet::new();
        for i in placed..placed + batch {
            let mm = matchmaker.clone();
            set.spawn(async move {
                mm.seek(
                    Seeker {
                        id: format!("{i:08}"),
                        name: format!("p{i}"),
                        guest: true,
                    },
                    &[pool],
                )
                .await
            });
        }
        while let Some(r) = set.join_next().await {
            r??;
        }
        placed += batch;
    }
    let seeking = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let mut steps = 0;
    let mut paired = 0;
    loop {
        let report = matchmaker.step(&mut || true).await?;
        steps += 1;
        paired += 2 * report.created;
        if report.paired == 0 {
            break;
        }
    }
    let pairing = started.elapsed().as_secs_f64();
    println!(
        "{tickets} tickets: seeks {:.0}/s; paired {paired} in {steps} steps, {:.0} tickets/s",
        tickets as f64 / seeking,
        paired as f64 / pairing
    );

    // Clean up the run's keys.
    let mut conn = conn;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}*", ns.prefix()))
        .query_async(&mut conn)
        .await?;
    for chunk in keys.chunks(500) {
        let _: i64 = redis::cmd("DEL").arg(chunk).query_async(&mut conn).await?;
    }
    Ok(())
}
