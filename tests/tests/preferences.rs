//! A registered player's preferences of the web client, kept in the account
//! (`GET`/`PUT /api/me/preferences`, docs/protocol.md): refused without a token, with a
//! bad, expired or foreign one, and for guests; oversized, malformed and unknown
//! preferences refused with their typed errors and nothing stored; a round trip through
//! Postgres, seen from a second login and from another gateway.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use common::{Platform, post, register, request};
use frontier_platform::{Claims, JwtKeys, PlayerId};
use serde_json::{Value, json};

const PATH: &str = "/api/me/preferences";

/// `method` on the preferences with this bearer token (none: no header): status and body.
async fn call(
    gw: std::net::SocketAddr,
    method: &str,
    token: Option<&str>,
    body: &str,
) -> anyhow::Result<(u16, Value)> {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| vec![("Authorization", a)])
        .unwrap_or_default();
    let response = request(gw, method, PATH, &headers, body).await?;
    Ok((response.status, response.body))
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preferences_are_kept_in_the_account_of_a_registered_player_only() -> anyhow::Result<()> {
    let p = Platform::start(2, 1, None).await?;
    let gw = p.gateways[0];
    let suffix = &PlayerId::new().to_string()[..6];
    let (token, id) = register(gw, &format!("prefs{suffix}")).await?;

    // Before any: an empty object.
    let (status, body) = call(gw, "GET", Some(&token), "").await?;
    assert_eq!((status, body.clone()), (200, json!({})), "{body}");

    // Unauthorised: no token, a bad scheme, garbage, an expired token, a foreign key's
    // token, a token for a player with no account, a guest's token.
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let ours = JwtKeys::new(common::JWT_SECRET.as_bytes(), Duration::from_secs(3600))
        .map_err(anyhow::Error::msg)?;
    let foreign = JwtKeys::new(
        b"some-other-platform-secret-0123456789",
        Duration::from_secs(3600),
    )
    .map_err(anyhow::Error::msg)?;
    let claims = Claims {
        sub: id.parse::<PlayerId>().context("player id")?,
        name: format!("prefs{suffix}"),
        guest: false,
        iat: now,
        exp: now + 3600,
        iss: "frontier".into(),
        moderator: false,
    };
    let expired = ours.sign(&Claims {
        iat: now - 7200,
        exp: now - 3600,
        ..claims.clone()
    })?;
    let wrong_key = foreign.sign(&claims)?;
    let nobody = ours.sign(&Claims {
        sub: PlayerId::new(),
        ..claims.clone()
    })?;
    let (guest_status, guest) = post(gw, "/api/guest", "").await?;
    assert_eq!(guest_status, 201);
    let guest_token = guest["token"].as_str().context("guest token")?.to_owned();
    let put_body = json!({"board": "marble"}).to_string();
    for method in ["GET", "PUT"] {
        let body = if method == "PUT" {
            put_body.as_str()
        } else {
            ""
        };
        let (status, answer) = call(gw, method, None, body).await?;
        assert_eq!(
            (status, code(&answer)),
            (401, "token_missing"),
            "{method} {answer}"
        );
        let raw = request(
            gw,
            method,
            PATH,
            &[("Authorization", &format!("Basic {token}"))],
            body,
        )
        .await?;
        assert_eq!(
            (raw.status, code(&raw.body)),
            (401, "token_malformed"),
            "{method}"
        );
        for (bad, expected) in [
            ("not-a-jwt", "token_malformed"),
            (expired.as_str(), "token_expired"),
            (wrong_key.as_str(), "token_invalid"),
            (nobody.as_str(), "token_invalid"),
        ] {
            let (status, answer) = call(gw, method, Some(bad), body).await?;
            assert_eq!(
                (status, code(&answer)),
                (401, expected),
                "{method} {answer}"
            );
        }
        let (status, answer) = call(gw, method, Some(&guest_token), body).await?;
        assert_eq!(
            (status, code(&answer)),
            (403, "registered_only"),
            "{method} {answer}"
        );
    }

    // Malformed, unknown or oversized: refused, typed, nothing stored.
    for (body, status, expected) in [
        ("{\"board\": \"marble\"", 400, "bad_json"),
        ("[\"marble\", \"pixel\"]", 400, "bad_field"),
        ("{\"board\": \"plaid\"}", 400, "bad_field"),
        ("{\"pieces\": \"wooden\"}", 400, "bad_field"),
        ("{\"view\": \"4d\"}", 400, "bad_field"),
        ("{\"muted\": \"yes\"}", 400, "bad_field"),
        ("{\"colour\": \"red\"}", 400, "bad_field"),
    ] {
        let (got, answer) = call(gw, "PUT", Some(&token), body).await?;
        assert_eq!((got, code(&answer)), (status, expected), "{body}: {answer}");
    }
    let padded = format!("{{\"board\": \"marble\"{}}}", " ".repeat(1100));
    let (status, answer) = call(gw, "PUT", Some(&token), &padded).await?;
    assert_eq!((status, code(&answer)), (413, "too_large"), "{answer}");
    let huge = format!("{{\"board\": \"{}\"}}", "x".repeat(5000));
    let (status, answer) = call(gw, "PUT", Some(&token), &huge).await?;
    assert_eq!((status, code(&answer)), (413, "too_large"), "{answer}");
    let (_, body) = call(gw, "GET", Some(&token), "").await?;
    assert_eq!(body, json!({}), "nothing was stored");

    // A round trip; a second one replaces the first; seen from a new login and from the
    // other gateway (both read Postgres).
    let chosen = json!({"board": "marble", "pieces": "pixel", "view": "3d", "muted": true});
    let (status, answer) = call(gw, "PUT", Some(&token), &chosen.to_string()).await?;
    assert_eq!((status, answer.clone()), (200, chosen.clone()), "{answer}");
    let (status, answer) = call(gw, "GET", Some(&token), "").await?;
    assert_eq!((status, answer), (200, chosen));
    let changed = json!({"board": "glacier", "pieces": "relief", "view": "2d", "muted": false});
    let (status, _) = call(gw, "PUT", Some(&token), &changed.to_string()).await?;
    assert_eq!(status, 200);
    let (status, login) = post(
        p.gateways[1],
        "/api/login",
        &json!({"username": format!("PREFS{suffix}"), "password": "a long passphrase"}).to_string(),
    )
    .await?;
    assert_eq!(status, 200, "{login}");
    let again = login["token"].as_str().context("token")?;
    let (status, answer) = call(p.gateways[1], "GET", Some(again), "").await?;
    assert_eq!((status, answer), (200, changed));
    // Fields may be left out (never chosen).
    let (status, answer) = call(gw, "PUT", Some(&token), "{\"muted\": true}").await?;
    assert_eq!((status, answer), (200, json!({"muted": true})));
    p.stop().await;
    Ok(())
}
