//! rating across a failover of its Postgres: a throwaway primary with a synchronous
//! streaming standby (`frontier_testkit::postgres`), reached through one address (a
//! forwarder, as a Service in front of the current primary). While finished games stream
//! in, the primary is stopped at once, the standby promoted and the address switched to
//! it; the consumer, never restarted, carries on through its pool
//! (`frontier_platform::config::postgres_pool`), and every game is recorded and rated
//! exactly once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_nats::jetstream;
use frontier_platform::{Namespace, Shutdown};
use frontier_proto::games::v1::{FinishedGame, Player, Variant};
use frontier_rating::{ConsumerSettings, MIGRATOR, PgStore, consume};
use frontier_testkit::postgres::{Forwarder, StreamingPair};
use prost::Message as _;
use uuid::Uuid;

/// Games published in all, a third of them before the primary is lost, a third while
/// there is none, a third after the promotion.
const GAMES: usize = 90;
/// Players meeting in them.
const PLAYERS: usize = 8;

fn player(id: Uuid) -> Player {
    Player {
        id: id.to_string(),
        name: format!("p{}", &id.simple().to_string()[..6]),
        guest: false,
        bot: false,
        bot_level: 0,
    }
}

fn finished(white: Uuid, black: Uuid, result: &str, ended_at_ms: i64) -> FinishedGame {
    FinishedGame {
        game_id: Uuid::now_v7().to_string(),
        variant: Variant::Standard as i32,
        rated: true,
        white: Some(player(white)),
        black: Some(player(black)),
        result: result.to_owned(),
        outcome: format!("{result}-resignation"),
        created_at_ms: ended_at_ms - 1000,
        started_at_ms: ended_at_ms - 900,
        ended_at_ms,
        start_fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
        final_fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
        ..Default::default()
    }
}

/// Publishes games `range` of the schedule (as game-session does: message id = game id),
/// counting each player's games in `played`.
async fn publish(
    js: &jetstream::Context,
    ns: &Namespace,
    players: &[Uuid],
    range: std::ops::Range<usize>,
    played: &mut HashMap<Uuid, i32>,
) -> anyhow::Result<()> {
    for i in range {
        let (white, black) = (players[i % PLAYERS], players[(i * 3 + 1) % PLAYERS]);
        let (white, black) = if white == black {
            (white, players[(i + 1) % PLAYERS])
        } else {
            (white, black)
        };
        let result = ["white", "black", "draw"][i % 3];
        let game = finished(white, black, result, 1_800_000_000_000 + i as i64 * 1000);
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", game.game_id.as_str());
        js.publish_with_headers(
            ns.finished_games_subject(),
            headers,
            game.encode_to_vec().into(),
        )
        .await?
        .await?;
        *played.entry(white).or_default() += 1;
        *played.entry(black).or_default() += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_promoted_while_games_finish_records_and_rates_each_exactly_once()
-> anyhow::Result<()> {
    assert!(
        frontier_testkit::postgres::installed(),
        "no Postgres server binaries (initdb, pg_ctl): run the tests with `make test`, whose \
         scripts/test-services.sh installs them"
    );
    let pair = StreamingPair::start()?;
    let forwarder = Forwarder::start(pair.primary_port()).await?;
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres",
        forwarder.port()
    );
    let pool = frontier_platform::config::postgres_pool(&url, 8).await?;
    MIGRATOR.run(&pool).await?;

    let ns = Namespace::new(&frontier_testkit::unique_namespace()).map_err(anyhow::Error::msg)?;
    let nats = async_nats::connect(frontier_testkit::nats_url()).await?;
    let js = jetstream::new(nats.clone());
    frontier_platform::streams::ensure_finished_games(&js, &ns, 1)
        .await
        .map_err(anyhow::Error::msg)?;
    let settings = ConsumerSettings {
        ack_wait: Duration::from_secs(2),
        retry_base: Duration::from_millis(100),
        retry_cap: Duration::from_secs(1),
        ..ConsumerSettings::named("rating")
    };
    let stop = Shutdown::new();
    let consumer = {
        let (pool, nats, ns, stop) = (pool.clone(), nats.clone(), ns.clone(), stop.clone());
        tokio::spawn(async move {
            consume(
                PgStore::new(pool),
                nats,
                &ns,
                &settings,
                Arc::default(),
                stop,
            )
            .await
        })
    };

    // The pool never writes to a standby: a connection to one is refused.
    let standby_url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres",
        pair.standby_port()
    );
    let refused = frontier_platform::config::postgres_pool(&standby_url, 1).await;
    assert!(refused.is_err(), "a pool on the standby");

    let players: Vec<Uuid> = (0..PLAYERS).map(|_| Uuid::now_v7()).collect();
    let mut played = HashMap::new();
    publish(&js, &ns, &players, 0..GAMES / 3, &mut played).await?;
    eprintln!("stopping the primary at once");
    let lost_at = Instant::now();
    pair.kill_primary()?;
    publish(&js, &ns, &players, GAMES / 3..2 * GAMES / 3, &mut played).await?;
    pair.promote_standby()?;
    forwarder.switch(pair.standby_port());
    eprintln!(
        "standby promoted and the address switched after {:?}",
        lost_at.elapsed()
    );
    publish(&js, &ns, &players, 2 * GAMES / 3..GAMES, &mut played).await?;

    // Every game recorded, through the same pool, now on the promoted standby.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let recorded: Result<i64, _> = sqlx::query_scalar("SELECT count(*) FROM games")
            .fetch_one(&pool)
            .await;
        if recorded.as_ref().is_ok_and(|&n| n == GAMES as i64) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "games recorded: {recorded:?} of {GAMES} after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "every game recorded {:?} after the primary was lost",
        lost_at.elapsed()
    );
    // Exactly once: one row per game, two history rows per game, and each player's count
    // of rated games is the number of games it played.
    let history: i64 = sqlx::query_scalar("SELECT count(*) FROM rating_history")
        .fetch_one(&pool)
        .await?;
    assert_eq!(history, 2 * GAMES as i64);
    for (id, games) in &played {
        let rated: i32 = sqlx::query_scalar(
            "SELECT rated_games FROM ratings WHERE player_id = $1 AND variant = 'standard'",
        )
        .bind(id)
        .fetch_one(&pool)
        .await?;
        assert_eq!(rated, *games, "{id}");
    }
    let standby: bool = sqlx::query_scalar("SELECT pg_is_in_recovery()")
        .fetch_one(&pool)
        .await?;
    assert!(
        !standby,
        "the pool writes to the promoted standby, now a primary"
    );

    stop.trigger();
    let _ = tokio::time::timeout(Duration::from_secs(10), consumer).await;
    let _ = js.delete_stream(ns.finished_games_stream()).await;
    Ok(())
}
