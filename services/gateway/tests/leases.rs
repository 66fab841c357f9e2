//! The leases of connection slots on a real Redis: one refresh renews every slot this
//! gateway holds — more sets than one pipelined call takes, and a set of thousands of
//! members — and never puts back a member that left its set meanwhile.

use clap::Parser;
use frontier_gateway::limits::{LimitArgs, Limits, Slot};
use frontier_platform::Namespace;
use frontier_platform::redis_conn::RedisConn;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    limits: LimitArgs,
}

/// Redis's clock, in Unix ms.
async fn redis_now(conn: &mut redis::aio::MultiplexedConnection) -> anyhow::Result<i64> {
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(secs * 1000 + micros / 1000)
}

#[tokio::test]
async fn a_refresh_renews_every_held_slot_and_puts_back_no_member_that_left() -> anyhow::Result<()>
{
    let prefix = frontier_testkit::unique_namespace();
    let ns = Namespace::new(&prefix).map_err(anyhow::Error::msg)?;
    let redis = RedisConn::connect(&frontier_testkit::redis_url(), false).await?;
    let args = Args::parse_from([
        "gateway",
        "--ws-lease",
        "60s",
        "--ws-per-address",
        "5000",
        "--ws-per-player",
        "8",
    ]);
    let limits = Limits::new(Some(redis), ns.clone(), args.limits);
    // 2,500 connections from one address, each of its own player: 2,501 sets (six
    // pipelined calls).
    let ids: Vec<String> = (0..2500).map(|i| format!("conn-{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        limits
            .acquire(Slot::Address, "192.0.2.7", id)
            .await
            .map_err(|r| anyhow::anyhow!("address slot {i}: {r:?}"))?;
        limits
            .acquire(Slot::Player, &format!("player-{i}"), id)
            .await
            .map_err(|r| anyhow::anyhow!("player slot {i}: {r:?}"))?;
    }
    assert_eq!(limits.held_leases(), 5000);
    let address = ns.connections_key("addr", "192.0.2.7");
    let players: Vec<String> = (0..2500)
        .map(|i| ns.connections_key("player", &format!("player-{i}")))
        .collect();
    let mut conn = redis::Client::open(frontier_testkit::redis_url())?
        .get_multiplexed_async_connection()
        .await?;
    // Every lease made almost over: scores a second from now, sets expiring in 5 s.
    let soon = redis_now(&mut conn).await? + 1000;
    let mut pipe = redis::pipe();
    for key in players.iter().chain([&address]) {
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await?;
        let zadd = pipe.cmd("ZADD").arg(key).arg("XX");
        for m in &members {
            zadd.arg(soon).arg(m);
        }
        pipe.ignore();
        pipe.cmd("PEXPIRE").arg(key).arg(5000).ignore();
    }
    pipe.query_async::<()>(&mut conn).await?;
    // One connection's slots left Redis meanwhile (as a sweep of a lapsed lease would
    // take them), while this gateway still holds them.
    let gone = &ids[1234];
    let _: i64 = redis::cmd("ZREM")
        .arg(&address)
        .arg(gone)
        .query_async(&mut conn)
        .await?;
    let _: i64 = redis::cmd("ZREM")
        .arg(&players[1234])
        .arg(gone)
        .query_async(&mut conn)
        .await?;

    let before = redis_now(&mut conn).await?;
    limits.refresh_held().await;

    // Every member renewed to a lease from now, the one gone not put back.
    let scores: Vec<(String, i64)> = redis::cmd("ZRANGE")
        .arg(&address)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut conn)
        .await?;
    assert_eq!(scores.len(), 2499, "the address's set");
    assert!(scores.iter().all(|(m, _)| m != gone), "a member put back");
    for (member, score) in &scores {
        assert!(
            *score >= before + 60_000,
            "{member}: {score}, not renewed (before {before})"
        );
    }
    let ttl: i64 = redis::cmd("PTTL")
        .arg(&address)
        .query_async(&mut conn)
        .await?;
    assert!(ttl > 50_000, "the address's set expires in {ttl} ms");
    for (i, key) in players.iter().enumerate() {
        let scores: Vec<(String, i64)> = redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query_async(&mut conn)
            .await?;
        let ttl: i64 = redis::cmd("PTTL").arg(key).query_async(&mut conn).await?;
        if i == 1234 {
            // Its set emptied: nothing was put back in it, and no set was made.
            assert!(scores.is_empty(), "player {i}: {scores:?}");
            assert_eq!(ttl, -2, "player {i}'s emptied set exists again");
        } else {
            assert_eq!(scores.len(), 1, "player {i}");
            assert!(scores[0].1 >= before + 60_000, "player {i}: {scores:?}");
            assert!(ttl > 50_000, "player {i}'s set expires in {ttl} ms");
        }
    }
    // Clean up this test's keys.
    let _: i64 = redis::cmd("DEL")
        .arg(&address)
        .arg(&players)
        .query_async(&mut conn)
        .await?;
    Ok(())
}
