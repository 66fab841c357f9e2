//! game-session on a Redis primary with a replica (throwaway `redis-server`s on loopback):
//! with `--redis-ack-replicas 1` a move is acknowledged only once the replica has it, and
//! one the replica does not confirm is answered `unavailable` — and acknowledged, never
//! applied twice, when the client sends it again under the same id.

use std::sync::Arc;
use std::time::Duration;

use frontier_game_session::bus::MemoryBus;
use frontier_game_session::error::SessionError;
use frontier_game_session::game::{Action, Player};
use frontier_game_session::service::{FixedLayout, GameService, NewBoard, Settings, SystemClock};
use frontier_game_session::store::{ACK_WRITERS, AckReplicas, RedisStore, StoreError};
use frontier_platform::{GameId, Namespace, PlayerId, RedisConn};
use frontier_protocol::ErrorCode;
use frontier_rules::{Color, Layout, Variant};
use frontier_testkit::replicas::ReplicatedRedis;

const LAYOUT: &str = "PQBNBNRRPPPPPPP/pqbnbnrrppppppp";

/// How long a write waits for the replica here: long enough for a loaded machine, short
/// enough that the refusals come quickly.
const ACK_TIMEOUT: Duration = Duration::from_secs(2);

async fn service_on(
    redis: &ReplicatedRedis,
    ns: &Namespace,
    replicas: u32,
) -> anyhow::Result<GameService<RedisStore, MemoryBus>> {
    let url = redis.url();
    let mut writers = Vec::new();
    for _ in 0..ACK_WRITERS {
        writers.push(RedisConn::connect(&url, false).await?);
    }
    let store = RedisStore::new(RedisConn::connect(&url, false).await?, ns.clone())
        .acknowledged_by(
            AckReplicas {
                replicas,
                timeout: ACK_TIMEOUT,
            },
            writers,
        );
    Ok(GameService::new(
        store,
        MemoryBus::new(ns.clone(), 1024),
        Arc::new(SystemClock),
        Arc::new(FixedLayout(Layout::from_canonical(LAYOUT)?)),
        Settings::default(),
    ))
}

fn player(name: &str) -> Player {
    Player {
        id: PlayerId::new().to_string(),
        name: name.to_owned(),
        guest: false,
        bot: false,
        bot_level: None,
    }
}

/// The version of `game` that Redis node `i` holds (0 if none).
fn version_on(redis: &ReplicatedRedis, i: usize, ns: &Namespace, game: &GameId) -> u64 {
    redis
        .cli(i, &["HGET", &ns.game_state_key(game), "v"])
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn mv(uci: &str) -> Action {
    Action::Move(uci.into(), None)
}

/// Asserts that `result` is the refusal of a write the replicas did not confirm, and that a
/// client is told `unavailable` for it.
fn assert_not_replicated<T: std::fmt::Debug>(result: Result<T, SessionError>) {
    match result {
        Err(e @ SessionError::Store(StoreError::NotReplicated { .. })) => {
            let status = frontier_game_session::grpc::status(e);
            assert_eq!(
                frontier_platform::grpc::refusal_code(&status),
                Some(ErrorCode::Unavailable),
                "{status:?}"
            );
        }
        other => panic!("expected a write refused for want of replicas, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_is_acknowledged_only_once_the_replica_has_it() -> anyhow::Result<()> {
    let mut redis = ReplicatedRedis::start(1)?;
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).map_err(anyhow::Error::msg)?;
    let service = service_on(&redis, &ns, 1).await?;
    let (white, black) = (player("w"), player("b"));
    let (game, code, _) = service
        .create_board(NewBoard {
            creator: white.clone(),
            variant: Variant::Standard,
            color: Some(Color::White),
            rated: false,
            time_control: None,
            start_fen: None,
        })
        .await?;
    service.join_board(black.clone(), &code).await?;
    assert_eq!(
        version_on(&redis, 1, &ns, &game),
        2,
        "the join is on the replica"
    );

    // Each acknowledged move is on the replica the moment it is acknowledged.
    for (i, (seat, uci)) in [(&white, "e2e4"), (&black, "e7e5"), (&white, "g1f3")]
        .into_iter()
        .enumerate()
    {
        let (version, repeat) = service
            .act(&game, &seat.id, &format!("m{i}"), None, &mv(uci))
            .await?;
        assert!(!repeat);
        assert_eq!(version, 3 + i as u64);
        assert_eq!(version_on(&redis, 1, &ns, &game), version, "{uci}");
    }

    // The replica stopped (its connection open, nothing answering): the move is made on
    // the primary but not acknowledged.
    redis.pause(1)?;
    let paused = service.act(&game, &black.id, "m3", None, &mv("b8c6")).await;
    assert_not_replicated(paused);
    assert_eq!(version_on(&redis, 0, &ns, &game), 6, "made on the primary");
    redis.resume(1)?;
    // Sent again under its id once the replica runs: acknowledged as the repeat it is, at
    // the version it was made at, and the replica has it.
    let (version, repeat) = service
        .act(&game, &black.id, "m3", None, &mv("b8c6"))
        .await?;
    assert_eq!((version, repeat), (6, true), "applied once");
    assert_eq!(version_on(&redis, 1, &ns, &game), 6);

    // The replica gone: no move is acknowledged, and its repeat is not either.
    redis.kill(1)?;
    assert_not_replicated(service.act(&game, &white.id, "m4", None, &mv("f1b5")).await);
    assert_not_replicated(service.act(&game, &white.id, "m4", None, &mv("f1b5")).await);
    // Back (synchronised from the primary): the repeat is acknowledged, applied once.
    redis.restart(1)?;
    let (version, repeat) = service
        .act(&game, &white.id, "m4", None, &mv("f1b5"))
        .await?;
    assert_eq!((version, repeat), (7, true));
    assert_eq!(version_on(&redis, 1, &ns, &game), 7);
    Ok(())
}

/// A game whose end the replica has not confirmed is not announced to the stream by the
/// outbox sweeper (a failover could take the end back); once the replica has it, it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_game_goes_to_the_stream_only_once_the_replica_has_its_end() -> anyhow::Result<()>
{
    let redis = ReplicatedRedis::start(1)?;
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).map_err(anyhow::Error::msg)?;
    let service = service_on(&redis, &ns, 1).await?;
    let (white, black) = (player("w"), player("b"));
    let (game, code, _) = service
        .create_board(NewBoard {
            creator: white.clone(),
            variant: Variant::Standard,
            color: Some(Color::White),
            rated: false,
            time_control: None,
            start_fen: None,
        })
        .await?;
    service.join_board(black, &code).await?;
    service
        .act(&game, &white.id, "m0", None, &mv("e2e4"))
        .await?;
    redis.pause(1)?;
    assert_not_replicated(
        service
            .act(&game, &white.id, "r", None, &Action::Resign)
            .await,
    );
    assert_eq!(
        service.flush_outbox().await?,
        0,
        "not sent while unconfirmed"
    );
    assert!(service.bus().finished().is_empty());
    redis.resume(1)?;
    assert_eq!(service.flush_outbox().await?, 1);
    let finished = service.bus().finished();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0].0, game);
    Ok(())
}

/// With `--redis-ack-replicas 0` nothing waits: the same move is acknowledged with the
/// replica stopped (what a failover may then lose).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_acknowledging_replicas_a_move_is_acknowledged_by_the_primary_alone()
-> anyhow::Result<()> {
    let redis = ReplicatedRedis::start(1)?;
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).map_err(anyhow::Error::msg)?;
    let service = service_on(&redis, &ns, 0).await?;
    let (white, black) = (player("w"), player("b"));
    let (game, code, _) = service
        .create_board(NewBoard {
            creator: white.clone(),
            variant: Variant::Standard,
            color: Some(Color::White),
            rated: false,
            time_control: None,
            start_fen: None,
        })
        .await?;
    service.join_board(black, &code).await?;
    redis.pause(1)?;
    let (version, _) = service
        .act(&game, &white.id, "m0", None, &mv("e2e4"))
        .await?;
    assert_eq!(version, 3);
    redis.resume(1)?;
    Ok(())
}

/// The default of `--redis-ack-replicas` comes from what the primary reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_replicas_of_a_primary_are_counted() -> anyhow::Result<()> {
    let redis = ReplicatedRedis::start(1)?;
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).map_err(anyhow::Error::msg)?;
    let store = RedisStore::new(RedisConn::connect(&redis.url(), false).await?, ns.clone());
    assert_eq!(store.replicas_per_master().await?, 1);
    let url = format!("redis://127.0.0.1:{}", redis.port(1));
    let on_replica = RedisStore::new(RedisConn::connect(&url, false).await?, ns);
    assert_eq!(
        on_replica.replicas_per_master().await?,
        0,
        "a replica has none"
    );
    Ok(())
}

/// Redis's CPU time so far (`used_cpu_sys` + `used_cpu_user`, seconds) on node `i`.
fn cpu_seconds(redis: &ReplicatedRedis, i: usize) -> f64 {
    let info = redis.cli(i, &["INFO", "cpu"]).unwrap_or_default();
    info.lines()
        .filter_map(|l| {
            let (name, value) = l.trim().split_once(':')?;
            matches!(name, "used_cpu_sys" | "used_cpu_user")
                .then(|| value.parse::<f64>().ok())
                .flatten()
        })
        .sum()
}

/// What waiting for a replica costs a move: `cargo test -p frontier-game-session --test
/// replicas -- --ignored --nocapture` prints the time per move (one at a time, so each is
/// a full round trip) and the primary's CPU per move, with `--redis-ack-replicas` 0 and 1,
/// twice each, on a primary and a replica on loopback.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a check: prints what WAIT costs per move"]
async fn what_acknowledging_after_a_replica_costs_a_move() -> anyhow::Result<()> {
    const GAMES: usize = 100;
    let redis = ReplicatedRedis::start(1)?;
    for replicas in [0, 1, 0, 1] {
        let ns =
            Namespace::new(&frontier_testkit::unique_namespace()).map_err(anyhow::Error::msg)?;
        let service = service_on(&redis, &ns, replicas).await?;
        let mut times = Vec::new();
        let cpu_before = cpu_seconds(&redis, 0);
        for _ in 0..GAMES {
            let (white, black) = (player("w"), player("b"));
            let (game, code, _) = service
                .create_board(NewBoard {
                    creator: white.clone(),
                    variant: Variant::Standard,
                    color: Some(Color::White),
                    rated: false,
                    time_control: None,
                    start_fen: None,
                })
                .await?;
            service.join_board(black.clone(), &code).await?;
            for (i, (seat, uci)) in [
                (&white, "g1f3"),
                (&black, "g8f6"),
                (&white, "f3g1"),
                (&black, "f6g8"),
            ]
            .into_iter()
            .enumerate()
            {
                let start = std::time::Instant::now();
                service
                    .act(&game, &seat.id, &format!("m{i}"), None, &mv(uci))
                    .await?;
                times.push(start.elapsed());
            }
        }
        let cpu = cpu_seconds(&redis, 0) - cpu_before;
        times.sort();
        let mean = times.iter().sum::<Duration>() / times.len() as u32;
        eprintln!(
            "--redis-ack-replicas {replicas}: a move p50 {:?}, p99 {:?}, mean {mean:?}; \
             primary CPU {:.1} µs per write ({} writes)",
            times[times.len() / 2],
            times[times.len() * 99 / 100],
            cpu * 1e6 / (GAMES * 6) as f64,
            GAMES * 6,
        );
    }
    Ok(())
}
