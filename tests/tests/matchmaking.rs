//! Quick match end to end: two gateways, two game-sessions, three matchmaking instances and
//! a rating service on the real Redis, NATS and Postgres, driven over WebSocket.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context as _;
use common::{Client, Platform, post};
use frontier_matchmaking::TicketStore as _;
use serde_json::{Value, json};

/// A registered player (rated pools are theirs only).
async fn registered(addr: SocketAddr, name: &str) -> anyhow::Result<Client> {
    let username = format!("p{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let body = json!({"username": username, "password": "Tr0ub4dor-and-3"}).to_string();
    let (status, reply) = post(addr, "/api/register", &body).await?;
    anyhow::ensure!(status == 201, "register: {status} {reply}");
    let token = reply["token"].as_str().context("token")?;
    let id = reply["player"]["id"].as_str().context("id")?;
    Client::with_token(addr, name, token, id).await
}

fn pool(variant: &str, minutes: u32, increment: u32, rated: bool) -> Value {
    json!({"variant": variant, "clock": {"minutes": minutes, "increment": increment}, "rated": rated})
}

async fn reply_to(client: &mut Client, id: &str) -> anyhow::Result<Value> {
    client.until(id, |v| v["id"] == id).await
}

async fn matched(client: &mut Client) -> anyhow::Result<Value> {
    client.until("matched", |v| v["type"] == "matched").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_players_on_two_gateways_are_paired_told_everywhere_and_play() -> anyhow::Result<()> {
    let platform = Platform::start_matchmade(2, 2, 3, &["--bot-after", "0"]).await?;
    let mut alice = registered(platform.gateways[0], "alice").await?;
    let mut bob = registered(platform.gateways[1], "bob").await?;
    alice
        .send(json!({"type": "seek", "id": "s1", "pools": [pool("atomic", 3, 2, true), pool("hidden", 3, 2, true)]}))
        .await?;
    let seeking = reply_to(&mut alice, "s1").await?;
    assert_eq!(seeking["type"], "seeking", "{seeking}");
    assert_eq!(seeking["pools"].as_array().map(Vec::len), Some(2));
    assert_eq!(seeking["replaced"], false);
    bob.send(json!({"type": "seek", "id": "s2", "pools": [pool("hidden", 3, 2, true)]}))
        .await?;
    assert_eq!(reply_to(&mut bob, "s2").await?["type"], "seeking");
    let to_alice = matched(&mut alice).await?;
    let to_bob = matched(&mut bob).await?;
    assert_eq!(to_alice["game_id"], to_bob["game_id"]);
    assert_eq!(
        to_alice["pool"],
        pool("hidden", 3, 2, true),
        "matched in the pool both named"
    );
    assert_eq!(to_alice["rated"], true);
    assert_eq!(to_alice["opponent"]["id"], bob.player_id.as_str());
    assert_eq!(to_alice["opponent"]["bot"], false);
    assert_ne!(to_alice["color"], to_bob["color"]);
    let game = to_alice["game_id"].as_str().context("game id")?.to_owned();
    // The game opens on its own, and it has started.
    for client in [&mut alice, &mut bob] {
        let view = client
            .until("the game", |v| {
                v["type"] == "game" && v["game_id"] == game.as_str()
            })
            .await?;
        assert_eq!(view["game"]["status"], "playing");
        assert_eq!(view["game"]["rated"], true);
    }
    let (white, black) = if to_alice["color"] == "white" {
        (&mut alice, &mut bob)
    } else {
        (&mut bob, &mut alice)
    };
    white.play(&game, "e2e4").await?;
    black.play(&game, "e7e5").await?;
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_connection_of_the_player_is_told() -> anyhow::Result<()> {
    let platform = Platform::start_matchmade(2, 1, 3, &["--bot-after", "0"]).await?;
    let (status, reg) = post(
        platform.gateways[0],
        "/api/register",
        &json!({"username": format!("p{}", &uuid::Uuid::new_v4().simple().to_string()[..12]), "password": "Tr0ub4dor-and-3"}).to_string(),
    )
    .await?;
    anyhow::ensure!(status == 201, "{reg}");
    let token = reg["token"].as_str().context("token")?;
    let id = reg["player"]["id"].as_str().context("id")?;
    let mut here = Client::with_token(platform.gateways[0], "here", token, id).await?;
    let mut there = Client::with_token(platform.gateways[1], "there", token, id).await?;
    let mut other = Client::guest(platform.gateways[1], "other").await?;
    here.send(json!({"type": "seek", "id": "a", "pools": [pool("standard", 1, 0, false)]}))
        .await?;
    reply_to(&mut here, "a").await?;
    other
        .send(json!({"type": "seek", "id": "b", "pools": [pool("standard", 1, 0, false)]}))
        .await?;
    reply_to(&mut other, "b").await?;
    let a = matched(&mut here).await?;
    let b = matched(&mut there).await?;
    assert_eq!(a, b, "the same notice on both connections");
    assert_eq!(a["opponent"]["guest"], true);
    there.send(json!({"type": "status", "id": "st"})).await?;
    let status = reply_to(&mut there, "st").await?;
    assert_eq!(status["matched"]["game_id"], a["game_id"]);
    assert_eq!(status["seeking"], Value::Null);
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lone_player_gets_a_labelled_casual_bot() -> anyhow::Result<()> {
    let platform = Platform::start_matchmade(1, 1, 1, &["--bot-after", "300ms"]).await?;
    let mut alice = registered(platform.gateways[0], "alice").await?;
    alice
        .send(json!({"type": "seek", "id": "s", "pools": [pool("standard", 5, 0, true)]}))
        .await?;
    reply_to(&mut alice, "s").await?;
    let m = matched(&mut alice).await?;
    assert_eq!(m["opponent"]["bot"], true);
    assert_eq!(
        m["rated"], false,
        "bot games are casual, said before the game starts"
    );
    assert!(
        m["opponent"]["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("Frontier Bot"))
    );
    let game = m["game_id"].as_str().context("game id")?;
    let view = alice
        .until("the game", |v| v["type"] == "game" && v["game_id"] == game)
        .await?;
    let bot_side = if m["color"] == "white" {
        "black"
    } else {
        "white"
    };
    assert_eq!(
        view["game"][bot_side]["bot"], true,
        "labelled in the game too"
    );
    assert_eq!(view["game"]["rated"], false);
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_duplicate_and_guest_rated_seeks_are_refused_typed_and_cancel_works()
-> anyhow::Result<()> {
    let platform = Platform::start_matchmade(1, 1, 1, &["--bot-after", "0"]).await?;
    let mut guest = Client::guest(platform.gateways[0], "guest").await?;
    let refusals = [
        (json!([pool("standard", 3, 0, true)]), "guest_rated"),
        (json!([]), "bad_field"),
        (json!([pool("chess", 3, 0, false)]), "bad_field"),
        (json!([pool("standard", 4, 0, false)]), "bad_field"),
        (
            json!([pool("standard", 3, 0, false), pool("standard", 3, 0, false)]),
            "bad_field",
        ),
        (json!("standard"), "bad_field"),
    ];
    for (i, (pools, code)) in refusals.iter().enumerate() {
        let id = format!("bad{i}");
        guest
            .send(json!({"type": "seek", "id": id, "pools": pools}))
            .await?;
        let reply = reply_to(&mut guest, &id).await?;
        assert_eq!(reply["type"], "error", "{reply}");
        assert_eq!(reply["code"], *code, "{pools}: {reply}");
    }
    guest.send(json!({"type": "status", "id": "st"})).await?;
    assert_eq!(
        reply_to(&mut guest, "st").await?["seeking"],
        Value::Null,
        "nothing stored"
    );

    guest
        .send(json!({"type": "seek", "id": "ok", "pools": [pool("atomic", 10, 0, false)]}))
        .await?;
    assert_eq!(reply_to(&mut guest, "ok").await?["replaced"], false);
    guest
        .send(json!({"type": "seek", "id": "ok2", "pools": [pool("atomic", 15, 10, false)]}))
        .await?;
    assert_eq!(
        reply_to(&mut guest, "ok2").await?["replaced"],
        true,
        "a second seek replaces"
    );
    guest.send(json!({"type": "status", "id": "st2"})).await?;
    let status = reply_to(&mut guest, "st2").await?;
    assert_eq!(
        status["seeking"]["pools"],
        json!([pool("atomic", 15, 10, false)])
    );
    guest
        .send(json!({"type": "cancel_seek", "id": "c"}))
        .await?;
    let cancelled = reply_to(&mut guest, "c").await?;
    assert_eq!(
        (cancelled["type"].clone(), cancelled["cancelled"].clone()),
        (json!("seek_cancelled"), json!(true))
    );
    guest
        .send(json!({"type": "cancel_seek", "id": "c2"}))
        .await?;
    assert_eq!(reply_to(&mut guest, "c2").await?["cancelled"], false);
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_disconnect_removes_the_ticket_after_the_grace() -> anyhow::Result<()> {
    let platform =
        Platform::start_matchmade(1, 1, 1, &["--bot-after", "0", "--grace", "100ms"]).await?;
    let guest = Client::guest(platform.gateways[0], "leaver").await?;
    let player = guest.player_id.clone();
    let mut guest = guest;
    guest
        .send(json!({"type": "seek", "id": "s", "pools": [pool("hidden", 30, 0, false)]}))
        .await?;
    reply_to(&mut guest, "s").await?;
    guest.close().await;
    // Read the ticket where matchmaking keeps it until it is gone.
    let ns = frontier_platform::Namespace::new(&platform.namespace).map_err(anyhow::Error::msg)?;
    let conn =
        redis::aio::ConnectionManager::new(redis::Client::open(frontier_testkit::redis_url())?)
            .await?;
    let tickets = frontier_matchmaking::RedisTickets::new(conn, &ns);
    tokio::time::timeout(Duration::from_secs(20), async {
        while tickets.ticket(&player).await.ok().flatten().is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .context("the ticket of a player who left is removed")?;
    platform.stop().await;
    Ok(())
}
