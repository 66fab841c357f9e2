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

/// Two matchmaking instances behind one gateway, the first of which is dead (nothing
/// listens there): every seek, cancel and status is served by the live one. Before, the
/// gateway took one matchmaking URL, and losing its instance refused every seek
/// (`unavailable`) until it came back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_dead_matchmaking_instance_refuses_no_seek_another_can_serve() -> anyhow::Result<()> {
    let dead = {
        // A port that was free a moment ago and that nothing listens on now.
        let port = frontier_testkit::free_port()?;
        format!("http://127.0.0.1:{port}")
    };
    let platform = Platform::start_matchmade_with(
        1,
        1,
        1,
        &["--bot-after", "0"],
        &[("--matchmaking-url", &format!("{dead},{{matchmakers}}"))],
    )
    .await?;
    for i in 0..6 {
        let mut guest = Client::guest(platform.gateways[0], &format!("g{i}")).await?;
        guest
            .send(json!({"type": "seek", "id": "s", "pools": [pool("standard", 30, 0, false)]}))
            .await?;
        let answer = reply_to(&mut guest, "s").await?;
        assert_eq!(answer["type"], "seeking", "seek {i}: {answer}");
        guest.send(json!({"type": "status", "id": "st"})).await?;
        let status = reply_to(&mut guest, "st").await?;
        assert_eq!(status["type"], "status", "status {i}: {status}");
        guest
            .send(json!({"type": "cancel_seek", "id": "c"}))
            .await?;
        let cancelled = reply_to(&mut guest, "c").await?;
        assert_eq!(cancelled["cancelled"], true, "cancel {i}: {cancelled}");
    }
    platform.stop().await;
    Ok(())
}

/// `seeking` is answered as soon as matchmaking took the seek, without waiting for the
/// lapse of the player's rematch offers at game-session. Here the gateway's game-session
/// accepts connections and never answers: before, `seeking` never came.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn seeking_does_not_wait_for_game_session() -> anyhow::Result<()> {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let silent_url = format!("http://{}", silent.local_addr()?);
    let held = tokio::spawn(async move {
        let mut kept = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            kept.push(socket);
        }
    });
    let platform = Platform::start_matchmade_with(
        1,
        1,
        1,
        &["--bot-after", "0"],
        &[("--game-session-urls", &silent_url)],
    )
    .await?;
    let mut guest = Client::guest(platform.gateways[0], "g").await?;
    guest
        .send(json!({"type": "seek", "id": "s", "pools": [pool("atomic", 30, 0, false)]}))
        .await?;
    let answer = reply_to(&mut guest, "s").await?;
    assert_eq!(answer["type"], "seeking", "{answer}");
    held.abort();
    platform.stop().await;
    Ok(())
}

/// A cancel that arrives after the pairing's game exists answers `already_matched`, never
/// `seek_cancelled` with `cancelled: false` (which read as "you were not seeking" while the
/// game started); the `matched` notice is the player's either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancel_that_lost_the_race_to_a_pairing_is_already_matched() -> anyhow::Result<()> {
    let platform = Platform::start_matchmade(1, 1, 1, &["--bot-after", "0"]).await?;
    let mut alice = Client::guest(platform.gateways[0], "alice").await?;
    let mut bob = Client::guest(platform.gateways[0], "bob").await?;
    for c in [&mut alice, &mut bob] {
        c.send(json!({"type": "seek", "id": "s", "pools": [pool("hidden", 15, 10, false)]}))
            .await?;
        reply_to(c, "s").await?;
    }
    let m = matched(&mut alice).await?;
    alice
        .send(json!({"type": "cancel_seek", "id": "c"}))
        .await?;
    let answer = reply_to(&mut alice, "c").await?;
    assert_eq!(
        (answer["type"].clone(), answer["code"].clone()),
        (json!("error"), json!("already_matched")),
        "{answer}"
    );
    assert_eq!(matched(&mut bob).await?["game_id"], m["game_id"]);
    platform.stop().await;
    Ok(())
}

/// Both players' connections drop the instant after they seek, so they are paired while
/// away; both come back within the grace period and `status` gives each their game (or
/// says `matching`, and the `matched` notice follows), which they then play — it is not
/// left to be aborted at the first-move limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn players_dropped_at_the_pairing_get_their_game_from_status() -> anyhow::Result<()> {
    let platform = Platform::start_matchmade(2, 1, 2, &["--bot-after", "0"]).await?;
    let mut tokens = Vec::new();
    for (i, name) in ["white?", "black?"].into_iter().enumerate() {
        let (token, id) = common::guest_token(platform.gateways[i]).await?;
        let mut c = Client::with_token(platform.gateways[i], name, &token, &id).await?;
        c.send(json!({"type": "seek", "id": "s", "pools": [pool("standard", 10, 0, false)]}))
            .await?;
        reply_to(&mut c, "s").await?;
        c.close().await;
        tokens.push((token, id));
    }
    let mut games = Vec::new();
    let mut clients = Vec::new();
    for (i, (token, id)) in tokens.iter().enumerate() {
        // Back on the other gateway.
        let at = platform.gateways[1 - i];
        let mut c = Client::with_token(at, &format!("back{i}"), token, id).await?;
        c.send(json!({"type": "status", "id": "st"})).await?;
        let status = reply_to(&mut c, "st").await?;
        let notice = if status["matched"].is_null() {
            // Being made, or not yet paired: the `matched` notice comes here.
            anyhow::ensure!(
                status["matching"] == true || !status["seeking"].is_null(),
                "player {i} is neither seeking, being matched nor matched: {status}"
            );
            matched(&mut c).await?
        } else {
            // Told by `status` (the notice came while away): the client opens the game.
            let game = status["matched"]["game_id"].clone();
            c.send(json!({"type": "open", "id": "o", "game_id": game}))
                .await?;
            c.until("the game", |v| v["type"] == "game" && v["game_id"] == game)
                .await?;
            status["matched"].clone()
        };
        games.push((notice["game_id"].clone(), notice["color"].clone()));
        clients.push(c);
    }
    assert_eq!(games[0].0, games[1].0, "one game for both");
    let game = games[0].0.as_str().context("game id")?.to_owned();
    let white = if games[0].1 == "white" { 0 } else { 1 };
    let version = clients[white].play(&game, "e2e4").await?;
    clients[1 - white].event(&game, version).await?;
    platform.stop().await;
    Ok(())
}
