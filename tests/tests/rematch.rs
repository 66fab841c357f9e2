//! Rematch end to end: two gateways, two game-sessions (gateway `i` talks to game-session
//! `i` only), a matchmaking instance and a rating service on the real Redis, NATS and
//! Postgres, driven over WebSocket.

mod common;

use std::net::SocketAddr;

use anyhow::Context as _;
use common::{Client, Platform, post};
use serde_json::{Value, json};

/// A registered player's token and id (rated games are theirs only).
async fn register(addr: SocketAddr) -> anyhow::Result<(String, String)> {
    let username = format!("p{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
    let body = json!({"username": username, "password": "Tr0ub4dor-and-3"}).to_string();
    let (status, reply) = post(addr, "/api/register", &body).await?;
    anyhow::ensure!(status == 201, "register: {status} {reply}");
    Ok((
        reply["token"].as_str().context("token")?.to_owned(),
        reply["player"]["id"].as_str().context("id")?.to_owned(),
    ))
}

async fn registered(addr: SocketAddr, name: &str) -> anyhow::Result<Client> {
    let (token, id) = register(addr).await?;
    Client::with_token(addr, name, &token, &id).await
}

async fn reply_to(client: &mut Client, id: &str) -> anyhow::Result<Value> {
    client.until(id, |v| v["id"] == id).await
}

/// The next notice of `kind` about `game` without an `id` (a notice, not an answer).
async fn notice(client: &mut Client, kind: &str, game: &str) -> anyhow::Result<Value> {
    client
        .until(kind, |v| {
            v["type"] == kind && v["game_id"] == game && v.get("id").is_none()
        })
        .await
}

/// A rated atomic 5+3 board: `white` creates it, `black` joins; both see it start.
async fn rated_game(white: &mut Client, black: &mut Client) -> anyhow::Result<String> {
    white
        .send(
            json!({"type": "create_board", "id": "c", "variant": "atomic", "color": "white",
                     "rated": true, "clock": {"minutes": 5, "increment": 3}}),
        )
        .await?;
    let created = reply_to(white, "c").await?;
    anyhow::ensure!(created["type"] == "board_created", "{created}");
    let game = created["game_id"].as_str().context("game")?.to_owned();
    let code = created["code"].as_str().context("code")?.to_owned();
    black
        .send(json!({"type": "join_board", "id": "j", "code": code}))
        .await?;
    anyhow::ensure!(reply_to(black, "j").await?["type"] == "board_joined");
    for c in [white, black] {
        c.reached(&game, 2).await?;
    }
    Ok(game)
}

/// `player` resigns `game`; the game is over once the ack came.
async fn resign(player: &mut Client, game: &str) -> anyhow::Result<()> {
    player
        .send(json!({"type": "resign", "id": "r", "game_id": game}))
        .await?;
    let ack = reply_to(player, "r").await?;
    anyhow::ensure!(ack["type"] == "ack", "{ack}");
    Ok(())
}

async fn send(client: &mut Client, kind: &str, id: &str, game: &str) -> anyhow::Result<Value> {
    client
        .send(json!({"type": kind, "id": id, "game_id": game}))
        .await?;
    reply_to(client, id).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn offered_on_one_gateway_accepted_on_the_other_both_told_and_the_new_game_opens()
-> anyhow::Result<()> {
    let platform = Platform::start_matchmade(2, 2, 1, &["--bot-after", "0"]).await?;
    let mut alice = registered(platform.gateways[0], "alice").await?;
    let (bob_token, bob_id) = register(platform.gateways[1]).await?;
    let mut bob = Client::with_token(platform.gateways[1], "bob", &bob_token, &bob_id).await?;
    // Bob's second connection, on the other gateway: it is told too.
    let mut bob_too =
        Client::with_token(platform.gateways[0], "bob-too", &bob_token, &bob_id).await?;
    let game = rated_game(&mut alice, &mut bob).await?;
    resign(&mut bob, &game).await?;

    let offered = send(&mut alice, "offer_rematch", "o1", &game).await?;
    assert_eq!(offered["type"], "rematch_offered", "{offered}");
    assert_eq!(offered["by"], "white");
    for client in [&mut bob, &mut bob_too] {
        let told = notice(client, "rematch_offered", &game).await?;
        assert_eq!(told["by"], "white", "{told}");
    }

    let started = send(&mut bob, "accept_rematch", "a1", &game).await?;
    assert_eq!(started["type"], "rematch_started", "{started}");
    assert_eq!(
        started["color"], "white",
        "Black of the last game plays White"
    );
    let new_game = started["new_game_id"]
        .as_str()
        .context("new game")?
        .to_owned();
    assert_ne!(new_game, game);
    let to_alice = notice(&mut alice, "rematch_started", &game).await?;
    assert_eq!(to_alice["new_game_id"], new_game.as_str());
    assert_eq!(to_alice["color"], "black");
    let to_bob_too = notice(&mut bob_too, "rematch_started", &game).await?;
    assert_eq!(to_bob_too["new_game_id"], new_game.as_str());
    assert_eq!(to_bob_too["color"], "white");

    // The new game opens on every connection: same settings, colours swapped, started.
    let alice_id = alice.player_id.clone();
    for client in [&mut alice, &mut bob, &mut bob_too] {
        let view = client
            .until("the rematch", |v| {
                v["type"] == "game" && v["game_id"] == new_game.as_str()
            })
            .await?;
        let g = &view["game"];
        assert_eq!(g["variant"], "atomic", "{view}");
        assert_eq!(g["rated"], true);
        assert_eq!(g["clock"], json!({"minutes": 5, "increment": 3}));
        assert_eq!(g["status"], "playing");
        assert_eq!(g["white"]["id"], bob_id.as_str());
        assert_eq!(g["black"]["id"], alice_id.as_str());
    }
    bob.play(&new_game, "e2e4").await?;
    alice.play(&new_game, "e7e5").await?;
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn accepts_racing_on_two_gateways_make_one_game() -> anyhow::Result<()> {
    let platform = Platform::start_matchmade(2, 2, 1, &["--bot-after", "0"]).await?;
    let mut alice = registered(platform.gateways[0], "alice").await?;
    let (token, id) = register(platform.gateways[1]).await?;
    let mut bob_a = Client::with_token(platform.gateways[0], "bob-a", &token, &id).await?;
    let mut bob_b = Client::with_token(platform.gateways[1], "bob-b", &token, &id).await?;
    let game = rated_game(&mut alice, &mut bob_b).await?;
    resign(&mut alice, &game).await?;
    send(&mut alice, "offer_rematch", "o", &game).await?;
    // Both of Bob's connections accept at once, on different gateways and game-sessions.
    for client in [&mut bob_a, &mut bob_b] {
        client
            .send(json!({"type": "accept_rematch", "id": "acc", "game_id": game}))
            .await?;
    }
    let a = reply_to(&mut bob_a, "acc").await?;
    let b = reply_to(&mut bob_b, "acc").await?;
    assert_eq!(a["type"], "rematch_started", "{a}");
    assert_eq!(b["type"], "rematch_started", "{b}");
    assert_eq!(
        a["new_game_id"], b["new_game_id"],
        "one game for both accepts"
    );
    let new_game = a["new_game_id"].as_str().context("new game")?;
    // It was made once: its view is at version 2 (created and started, nothing twice).
    let alice_id = alice.player_id.clone();
    let view = alice
        .until("the rematch", |v| {
            v["type"] == "game" && v["game_id"] == new_game
        })
        .await?;
    assert_eq!(view["version"], 2, "{view}");
    assert_eq!(
        view["game"]["white"]["id"],
        id.as_str(),
        "Bob plays White now"
    );
    assert_eq!(view["game"]["black"]["id"], alice_id.as_str());
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_offer_lapses_when_a_player_seeks_closes_the_game_or_leaves() -> anyhow::Result<()> {
    // A short rematch grace, so that a disconnect lapses the offer soon.
    let platform = Platform::start_matchmade_with(
        2,
        2,
        1,
        &["--bot-after", "0"],
        &[("--rematch-grace", "200ms")],
    )
    .await?;
    let mut alice = registered(platform.gateways[0], "alice").await?;
    let mut bob = registered(platform.gateways[1], "bob").await?;
    let game = rated_game(&mut alice, &mut bob).await?;
    resign(&mut alice, &game).await?;

    // Bob goes to quick match: Alice's offer lapses, and both are told.
    send(&mut alice, "offer_rematch", "o1", &game).await?;
    notice(&mut bob, "rematch_offered", &game).await?;
    bob.send(json!({"type": "seek", "id": "s", "pools": [
        {"variant": "standard", "clock": {"minutes": 30, "increment": 0}}]}))
        .await?;
    assert_eq!(reply_to(&mut bob, "s").await?["type"], "seeking");
    for client in [&mut alice, &mut bob] {
        let lapsed = notice(client, "rematch_cancelled", &game).await?;
        assert_eq!(lapsed["reason"], "seeking", "{lapsed}");
        assert_eq!(lapsed["by"], "black");
    }
    let refused = send(&mut bob, "accept_rematch", "a1", &game).await?;
    assert_eq!(refused["code"], "no_rematch_offer", "{refused}");
    bob.send(json!({"type": "cancel_seek", "id": "cs"})).await?;
    assert_eq!(reply_to(&mut bob, "cs").await?["type"], "seek_cancelled");

    // Bob offers; Alice closes the game: it lapses.
    send(&mut bob, "offer_rematch", "o2", &game).await?;
    notice(&mut alice, "rematch_offered", &game).await?;
    let closed = send(&mut alice, "close", "cl", &game).await?;
    assert_eq!(closed["type"], "closed");
    let lapsed = notice(&mut bob, "rematch_cancelled", &game).await?;
    assert_eq!(lapsed["reason"], "left", "{lapsed}");
    assert_eq!(lapsed["by"], "white");

    // Alice offers, then her only connection closes: after the grace it lapses.
    send(&mut alice, "offer_rematch", "o3", &game).await?;
    notice(&mut bob, "rematch_offered", &game).await?;
    alice.close().await;
    let lapsed = notice(&mut bob, "rematch_cancelled", &game).await?;
    assert_eq!(lapsed["reason"], "left", "{lapsed}");
    assert_eq!(lapsed["by"], "white");

    // Declined: the offerer is told.
    let mut alice = registered(platform.gateways[0], "alice-2").await?;
    let other = rated_game(&mut alice, &mut bob).await?;
    resign(&mut bob, &other).await?;
    send(&mut alice, "offer_rematch", "o4", &other).await?;
    let declined = send(&mut bob, "decline_rematch", "d", &other).await?;
    assert_eq!(declined["type"], "rematch_cancelled", "{declined}");
    assert_eq!(declined["reason"], "declined");
    let told = notice(&mut alice, "rematch_cancelled", &other).await?;
    assert_eq!(told["reason"], "declined");
    assert_eq!(told["by"], "black");
    platform.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn offers_that_cannot_be_are_refused_with_typed_errors() -> anyhow::Result<()> {
    let platform = Platform::start(2, 2, None).await?;
    let mut alice = registered(platform.gateways[0], "alice").await?;
    let mut bob = registered(platform.gateways[1], "bob").await?;
    let mut carol = Client::guest(platform.gateways[1], "carol").await?;
    let game = rated_game(&mut alice, &mut bob).await?;
    let error = send(&mut alice, "offer_rematch", "early", &game).await?;
    assert_eq!(error["code"], "game_not_over", "{error}");
    assert_eq!(error["game_id"], game.as_str());
    resign(&mut alice, &game).await?;
    let error = send(&mut carol, "offer_rematch", "spectator", &game).await?;
    assert_eq!(error["code"], "not_in_game", "{error}");
    send(&mut alice, "offer_rematch", "once", &game).await?;
    let error = send(&mut alice, "offer_rematch", "twice", &game).await?;
    assert_eq!(error["code"], "rematch_already_offered", "{error}");
    let error = send(&mut alice, "accept_rematch", "own", &game).await?;
    assert_eq!(error["code"], "no_rematch_offer", "{error}");
    let error = send(&mut alice, "offer_rematch", "junk", "not-a-game").await?;
    assert_eq!(error["code"], "game_not_found", "{error}");

    alice
        .send(
            json!({"type": "play_computer", "id": "pc", "variant": "standard",
                     "level": "easy", "color": "white"}),
        )
        .await?;
    let created = reply_to(&mut alice, "pc").await?;
    let computer = created["game_id"].as_str().context("game")?.to_owned();
    resign(&mut alice, &computer).await?;
    let error = send(&mut alice, "offer_rematch", "bot", &computer).await?;
    assert_eq!(error["code"], "rematch_unavailable", "{error}");
    platform.stop().await;
    Ok(())
}
