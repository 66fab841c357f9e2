//! Bad input at the edge: every malformed, oversized, unauthorised, out-of-turn or forged
//! message gets its typed error, the connection stays usable, and the game is unchanged.
//! Also the account API's answers.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{Client, Platform, post, start_game};
use frontier_platform::{Claims, JwtKeys, PlayerId};
use serde_json::json;

async fn version_of(client: &mut Client, game: &str) -> anyhow::Result<u64> {
    client.discard_unread();
    client
        .send(json!({"type": "open", "id": "probe", "game_id": game}))
        .await?;
    let view = client
        .until("view", |v| v["type"] == "game" && v["game_id"] == game)
        .await?;
    Ok(view["version"].as_u64().unwrap_or_default())
}

async fn expect_error(client: &mut Client, raw: String, code: &str) -> anyhow::Result<()> {
    client.send_raw(raw.clone()).await?;
    let e = client
        .until(&format!("error {code}"), |v| v["type"] == "error")
        .await?;
    assert_eq!(e["code"], code, "for {raw:.80}: {e}");
    // Still usable.
    client.send(json!({"type": "ping", "id": "alive"})).await?;
    client
        .until("pong", |v| v["type"] == "pong" && v["id"] == "alive")
        .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_messages_get_typed_errors_and_change_nothing() -> anyhow::Result<()> {
    let p = Platform::start(1, 1, None).await?;
    let gw = p.gateways[0];
    let mut white = Client::guest(gw, "white").await?;
    let mut black = Client::guest(gw, "black").await?;
    let mut outsider = Client::guest(gw, "outsider").await?;
    let game = start_game(&mut white, &mut black, "standard", "white").await?;
    let before = version_of(&mut white, &game).await?;

    expect_error(&mut white, "{not json".into(), "bad_json").await?;
    expect_error(&mut white, "[1,2]".into(), "bad_json").await?;
    expect_error(&mut white, r#"{"type":"teleport"}"#.into(), "unknown_type").await?;
    expect_error(
        &mut white,
        r#"{"type":"move","game_id":"x"}"#.into(),
        "bad_field",
    )
    .await?;
    expect_error(
        &mut white,
        format!(r#"{{"type":"ping","id":"{}"}}"#, "x".repeat(3000)),
        "too_large",
    )
    .await?;
    expect_error(
        &mut white,
        format!(r#"{{"type":"ping","id":"{}"}}"#, "x".repeat(100)),
        "bad_field",
    )
    .await?;
    // Out of turn, illegal, malformed move, wrong game, someone else's game.
    let mv = |uci: &str| json!({"type": "move", "game_id": game, "uci": uci}).to_string();
    expect_error(&mut black, mv("e7e5"), "not_your_turn").await?;
    expect_error(&mut white, mv("e2e5"), "illegal_move").await?;
    expect_error(&mut white, mv("e2"), "bad_move").await?;
    expect_error(&mut outsider, mv("e2e4"), "not_in_game").await?;
    expect_error(
        &mut white,
        json!({"type": "move", "game_id": "00000000-0000-7000-8000-000000000000", "uci": "e2e4"})
            .to_string(),
        "game_not_found",
    )
    .await?;
    expect_error(
        &mut white,
        json!({"type": "move", "game_id": "nope", "uci": "e2e4"}).to_string(),
        "game_not_found",
    )
    .await?;
    expect_error(
        &mut black,
        json!({"type": "accept_draw", "game_id": game}).to_string(),
        "no_draw_offer",
    )
    .await?;
    expect_error(
        &mut white,
        json!({"type": "promote", "game_id": game, "role": "q"}).to_string(),
        "no_promotion_pending",
    )
    .await?;
    expect_error(
        &mut white,
        json!({"type": "auth", "token": "x"}).to_string(),
        "already_authenticated",
    )
    .await?;
    assert_eq!(
        version_of(&mut white, &game).await?,
        before,
        "nothing changed"
    );

    // The spectator's view is the public one.
    outsider
        .send(json!({"type": "open", "game_id": game}))
        .await?;
    let view = outsider
        .until("view", |v| v["type"] == "game" && v["game_id"] == game)
        .await?;
    assert_eq!(view["seat"], "spectator");
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_expired_and_foreign_tokens_are_refused() -> anyhow::Result<()> {
    let p = Platform::start(1, 1, None).await?;
    let gw = p.gateways[0];
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let claims = Claims {
        sub: PlayerId::new(),
        name: "mallory".into(),
        guest: false,
        iat: now,
        exp: now + 3600,
        iss: "frontier".into(),
        moderator: false,
    };
    let ours = JwtKeys::new(common::JWT_SECRET.as_bytes(), Duration::from_secs(3600))
        .map_err(anyhow::Error::msg)?;
    let foreign = JwtKeys::new(
        b"some-other-platform-secret-0123456789",
        Duration::from_secs(3600),
    )
    .map_err(anyhow::Error::msg)?;
    let expired = ours.sign(&Claims {
        iat: now - 7200,
        exp: now - 3600,
        ..claims.clone()
    })?;
    let wrong_key = foreign.sign(&claims)?;
    let valid = ours.sign(&claims)?;
    // Forged: a valid token's payload swapped for another player's, signature kept.
    let other = ours.sign(&Claims {
        sub: PlayerId::new(),
        ..claims.clone()
    })?;
    let parts: Vec<&str> = valid.split('.').collect();
    let other_parts: Vec<&str> = other.split('.').collect();
    let forged = format!("{}.{}.{}", parts[0], other_parts[1], parts[2]);
    let mut client = Client::connect(gw, "mallory").await?;
    for (token, code) in [
        (expired.as_str(), "token_expired"),
        (wrong_key.as_str(), "token_invalid"),
        (forged.as_str(), "token_invalid"),
        ("not-a-token", "token_malformed"),
        ("", "token_missing"),
    ] {
        client.send(json!({"type": "auth", "token": token})).await?;
        let e = client.until("error", |v| v["type"] == "error").await?;
        assert_eq!(e["code"], code, "{token:.20}");
    }
    // Unauthenticated commands are refused; the connection still works.
    client
        .send(json!({"type": "create_board", "id": "c", "variant": "standard", "color": "white"}))
        .await?;
    assert_eq!(client.error_for("c").await?["code"], "unauthenticated");
    client.send(json!({"type": "auth", "token": valid})).await?;
    client
        .until("authenticated", |v| v["type"] == "authenticated")
        .await?;
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_messages_is_rate_limited() -> anyhow::Result<()> {
    let p = Platform::start(1, 1, None).await?;
    let mut client = Client::guest(p.gateways[0], "flood").await?;
    // The default bucket holds 40 (the `auth` took one) and refills 20 a second: 200 pings
    // sent back to back cannot all pass however fast the machine.
    for i in 0..200 {
        client
            .send(json!({"type": "ping", "id": format!("p{i}")}))
            .await?;
    }
    let mut limited = 0;
    let mut answered = 0;
    while limited + answered < 200 {
        let v = client.next().await?;
        match v["type"].as_str() {
            Some("pong") => answered += 1,
            Some("error") if v["code"] == "rate_limited" => limited += 1,
            _ => {}
        }
    }
    assert!(
        limited > 0 && answered >= 39,
        "limited {limited}, answered {answered}"
    );
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accounts_register_log_in_and_refuse_clearly() -> anyhow::Result<()> {
    let p = Platform::start(1, 1, None).await?;
    let gw = p.gateways[0];
    let (status, body) = post(
        gw,
        "/api/register",
        r#"{"username":"Alice","password":"correct horse battery"}"#,
    )
    .await?;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["player"]["guest"], false);
    let (status, body) = post(
        gw,
        "/api/register",
        r#"{"username":"ALICE","password":"another good one"}"#,
    )
    .await?;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (409, json!("username_taken"))
    );
    let (status, body) = post(
        gw,
        "/api/register",
        r#"{"username":"bob","password":"short"}"#,
    )
    .await?;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (422, json!("weak_password"))
    );
    let (status, body) = post(
        gw,
        "/api/register",
        r#"{"username":"b","password":"long enough pass"}"#,
    )
    .await?;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (422, json!("bad_username"))
    );
    let (status, body) = post(gw, "/api/register", r#"{"username":"bob""#).await?;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!("bad_json"))
    );
    let (status, body) = post(
        gw,
        "/api/login",
        r#"{"username":"alice","password":"correct horse battery"}"#,
    )
    .await?;
    assert_eq!(status, 200, "{body}");
    let token = body["token"].as_str().unwrap_or_default().to_owned();
    let (status, body) = post(
        gw,
        "/api/login",
        r#"{"username":"alice","password":"wrong password!"}"#,
    )
    .await?;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (401, json!("bad_credentials"))
    );
    // A registered player may create a rated board; a guest may not.
    let mut alice = Client::with_token(gw, "alice", &token, "").await?;
    alice.send(json!({"type": "create_board", "id": "r", "variant": "hidden", "color": "random", "rated": true, "clock": {"minutes": 5, "increment": 3}})).await?;
    let created = alice
        .until("created", |v| v["type"] == "board_created")
        .await?;
    assert!(
        created["invite"]
            .as_str()
            .is_some_and(|i| i.starts_with("https://frontier.test/join/"))
    );
    let mut guest = Client::guest(gw, "guest").await?;
    guest
        .send(json!({"type": "join_board", "id": "j", "code": created["code"]}))
        .await?;
    assert_eq!(guest.error_for("j").await?["code"], "guest_rated");
    guest.send(json!({"type": "create_board", "id": "g", "variant": "standard", "color": "white", "rated": true})).await?;
    assert_eq!(guest.error_for("g").await?["code"], "guest_rated");
    guest.send(json!({"type": "create_board", "id": "t", "variant": "standard", "color": "white", "clock": {"minutes": 61}})).await?;
    assert_eq!(guest.error_for("t").await?["code"], "bad_time_control");
    guest
        .send(json!({"type": "join_board", "id": "u", "code": "ZZZZZZ"}))
        .await?;
    assert_eq!(guest.error_for("u").await?["code"], "board_not_found");
    alice
        .send(json!({"type": "join_board", "id": "own", "code": created["code"]}))
        .await?;
    assert_eq!(alice.error_for("own").await?["code"], "own_board");
    p.stop().await;
    Ok(())
}

/// Signing-key rotation without logging anyone out: a gateway given the keys
/// `default` (its old `--jwt-secret`), `old` and `new` accepts tokens of each, signs the
/// tokens it issues with the newest (`kid: new`), and refuses a token whose key has been
/// removed from the set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_rotation_keeps_old_tokens_signs_with_the_new_key_and_refuses_removed_keys()
-> anyhow::Result<()> {
    const OLD: &str = "old-key-old-key-old-key-old-key-0001";
    const NEW: &str = "new-key-new-key-new-key-new-key-0002";
    const REMOVED: &str = "removed-key-removed-key-removed-0003";
    let keys = format!("old:{OLD},new:{NEW}");
    let p = Platform::start_with(1, 1, None, &[], &[("--jwt-keys", &keys)]).await?;
    let gw = p.gateways[0];
    let hour = Duration::from_secs(3600);
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let claims = |name: &str| Claims {
        sub: PlayerId::new(),
        name: name.into(),
        guest: true,
        iat: now,
        exp: now + 3600,
        iss: "frontier".into(),
        moderator: false,
    };
    let signer = |id: &str, secret: &str| {
        JwtKeys::rotating(&[(id, secret.as_bytes())], hour).map_err(anyhow::Error::msg)
    };
    // Tokens issued before the rotation (by the old secret alone, and by key `old`).
    let before = JwtKeys::new(common::JWT_SECRET.as_bytes(), hour).map_err(anyhow::Error::msg)?;
    for (label, token) in [
        ("the old secret's", before.sign(&claims("a"))?),
        ("key old's", signer("old", OLD)?.sign(&claims("b"))?),
    ] {
        let mut c = Client::connect(gw, label).await?;
        c.send(json!({"type": "auth", "token": token})).await?;
        let reply = c.next().await?;
        assert_eq!(reply["type"], "authenticated", "{label} token: {reply}");
    }
    // A new token is signed with the newest key.
    let (status, body) = post(gw, "/api/guest", "").await?;
    assert_eq!(status, 201, "{body}");
    let issued = body["token"].as_str().unwrap_or_default();
    assert!(
        signer("new", NEW)?.verify(issued).is_ok(),
        "signed with key new"
    );
    assert!(signer("old", OLD)?.verify(issued).is_err());
    // A key no longer in the set: its tokens are refused.
    let removed = signer("gone", REMOVED)?.sign(&claims("c"))?;
    let mut c = Client::connect(gw, "removed").await?;
    c.send(json!({"type": "auth", "token": removed})).await?;
    let e = c.until("error", |v| v["type"] == "error").await?;
    assert_eq!(e["code"], "token_invalid");
    p.stop().await;
    Ok(())
}
