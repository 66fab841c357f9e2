//! Results and ratings end to end: a rated hidden game played through the gateways is
//! recorded and rated by the rating service; the dashboard API pages, 404s and 400s.

mod common;

use common::{Client, Platform, get, post, start_game};
use frontier_glicko2::{INITIAL, Score, rate_game};
use futures_util::StreamExt as _;
use serde_json::{Value, json};

const LAYOUT: &str = "PQBRBRNNPPPPPPP/rnbqbrpnppppppp";

async fn register(p: &Platform, name: &str) -> anyhow::Result<(String, String)> {
    let (status, body) = post(
        p.gateways[0],
        "/api/register",
        &json!({"username": name, "password": "a long passphrase"}).to_string(),
    )
    .await?;
    anyhow::ensure!(status == 201, "{body}");
    Ok((
        body["token"].as_str().unwrap_or_default().to_owned(),
        body["player"]["id"].as_str().unwrap_or_default().to_owned(),
    ))
}

async fn json_get(p: &Platform, path: &str) -> anyhow::Result<(u16, Value)> {
    let (status, body) = get(p.gateways[1], path).await?;
    Ok((
        status,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rated_hidden_game_is_recorded_rated_and_served() -> anyhow::Result<()> {
    let p = Platform::start(2, 2, Some(LAYOUT)).await?;
    let nats = async_nats::connect(frontier_testkit::nats_url()).await?;
    let ns = frontier_platform::Namespace::new(&p.namespace).map_err(anyhow::Error::msg)?;
    let mut recorded = nats.subscribe(ns.recorded_games_subject()).await?;
    nats.flush().await?;
    frontier_testkit::nats_round_trip(&nats).await;
    let (alice_token, alice) = register(&p, "alice").await?;
    let (bob_token, bob) = register(&p, "bob").await?;
    let mut white = Client::with_token(p.gateways[0], "alice", &alice_token, &alice).await?;
    let mut black = Client::with_token(p.gateways[1], "bob", &bob_token, &bob).await?;
    white.send(json!({"type": "create_board", "id": "c", "variant": "hidden", "color": "white", "rated": true, "clock": {"minutes": 5, "increment": 0}})).await?;
    let created = white
        .until("created", |v| v["type"] == "board_created")
        .await?;
    let game = created["game_id"].as_str().unwrap_or_default().to_owned();
    black
        .send(json!({"type": "join_board", "id": "j", "code": created["code"]}))
        .await?;
    black
        .until("joined", |v| v["type"] == "board_joined")
        .await?;
    // While it is live, its record is not served.
    assert_eq!(json_get(&p, &format!("/api/games/{game}")).await?.0, 404);
    for (i, uci) in ["f2f3", "e7e5", "g2g4", "d8h4"].iter().enumerate() {
        let mover = if i % 2 == 0 { &mut white } else { &mut black };
        mover.play(&game, uci).await?;
    }
    let notice = tokio::time::timeout(common::WAIT, recorded.next())
        .await?
        .expect("notice");
    let notice: Value = serde_json::from_slice(&notice.payload)?;
    assert_eq!(
        (notice["game_id"].as_str(), notice["rated"].clone()),
        (Some(game.as_str()), json!(true))
    );

    let (status, player) = json_get(&p, &format!("/api/players/{bob}")).await?;
    assert_eq!(status, 200, "{player}");
    let won = rate_game(INITIAL, 0.0, INITIAL, Score::Win);
    let hidden = &player["ratings"]["hidden"];
    assert!(
        (hidden["rating"].as_f64().unwrap_or_default() - won.rating).abs() < 0.01,
        "{hidden}"
    );
    assert!(
        (hidden["rd"].as_f64().unwrap_or_default() - won.rd).abs() < 0.5,
        "{hidden}"
    );
    assert_eq!(
        (
            hidden["games"].clone(),
            hidden["wins"].clone(),
            hidden["provisional"].clone()
        ),
        (json!(1), json!(1), json!(true))
    );
    assert_eq!(player["ratings"]["standard"]["rating"], json!(1500.0));
    let (_, lost) = json_get(&p, &format!("/api/players/{alice}")).await?;
    assert_eq!(lost["ratings"]["hidden"]["losses"], json!(1));

    let (status, record) = json_get(&p, &format!("/api/games/{game}")).await?;
    assert_eq!(status, 200);
    assert_eq!(record["outcome"], "black-checkmate");
    assert_eq!(record["initial_layout"], LAYOUT);
    assert_eq!(record["moves"].as_array().map(Vec::len), Some(4));
    assert_eq!(
        frontier_rules::verify_shuffle(
            record["commitment"].as_str().unwrap_or_default(),
            record["salt"].as_str().unwrap_or_default(),
            LAYOUT
        ),
        Ok(())
    );
    let (status, pgn) = get(p.gateways[0], &format!("/api/games/{game}/pgn")).await?;
    assert_eq!(status, 200);
    for needle in [
        "[Variant \"Hidden\"]",
        &format!("[Layout \"{LAYOUT}\"]"),
        "[Result \"0-1\"]",
        "Qh4#",
        "{reveals queen on h4}",
        "0-1",
    ] {
        assert!(pgn.contains(needle), "{needle} in\n{pgn}");
    }
    let (status, history) = json_get(
        &p,
        &format!("/api/players/{bob}/rating-history?variant=hidden"),
    )
    .await?;
    assert_eq!(status, 200);
    assert_eq!(history["points"].as_array().map(Vec::len), Some(1));
    let (_, board) = json_get(&p, "/api/leaderboard?variant=hidden").await?;
    assert_eq!(
        board["players"],
        json!([]),
        "provisional players are not on the leaderboard"
    );
    p.stop().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn games_page_newest_first_and_bad_queries_are_refused() -> anyhow::Result<()> {
    let p = Platform::start(2, 1, None).await?;
    let nats = async_nats::connect(frontier_testkit::nats_url()).await?;
    let ns = frontier_platform::Namespace::new(&p.namespace).map_err(anyhow::Error::msg)?;
    let mut recorded = nats.subscribe(ns.recorded_games_subject()).await?;
    nats.flush().await?;
    frontier_testkit::nats_round_trip(&nats).await;
    let (token, me) = register(&p, "carol").await?;
    let mut carol = Client::with_token(p.gateways[0], "carol", &token, &me).await?;
    let mut other = Client::guest(p.gateways[1], "guest").await?;
    let mut ids = Vec::new();
    for _ in 0..5 {
        let game = start_game(&mut carol, &mut other, "atomic", "white").await?;
        carol
            .send(json!({"type": "resign", "id": format!("r{game}"), "game_id": game}))
            .await?;
        carol.ack(&format!("r{game}")).await?;
        tokio::time::timeout(common::WAIT, recorded.next())
            .await?
            .expect("recorded");
        ids.push(game);
    }
    let (status, page1) = json_get(&p, &format!("/api/players/{me}/games?limit=2")).await?;
    assert_eq!(status, 200);
    let next = page1["next"].as_str().unwrap_or_default().to_owned();
    let (_, page2) = json_get(
        &p,
        &format!("/api/players/{me}/games?limit=2&before={next}"),
    )
    .await?;
    let next2 = page2["next"].as_str().unwrap_or_default().to_owned();
    let (_, page3) = json_get(
        &p,
        &format!("/api/players/{me}/games?limit=2&before={next2}"),
    )
    .await?;
    let listed: Vec<String> = [&page1, &page2, &page3]
        .iter()
        .flat_map(|pg| pg["games"].as_array().cloned().unwrap_or_default())
        .filter_map(|g| g["id"].as_str().map(str::to_owned))
        .collect();
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(listed, newest_first, "every game once, newest first");
    assert!(
        page3.get("next").is_none(),
        "no `next` on the last page: {page3}"
    );
    // A full last page is the last page: no `next` leading to an empty one.
    let (_, whole) = json_get(&p, &format!("/api/players/{me}/games?limit=5")).await?;
    assert_eq!(whole["games"].as_array().map(Vec::len), Some(5));
    assert!(whole.get("next").is_none(), "{whole}");
    let (_, full) = json_get(
        &p,
        &format!("/api/players/{me}/games?limit=1&before={next2}"),
    )
    .await?;
    assert_eq!(full["games"].as_array().map(Vec::len), Some(1));
    assert!(full.get("next").is_none(), "{full}");
    let (_, filtered) = json_get(&p, &format!("/api/players/{me}/games?variant=standard")).await?;
    assert_eq!(filtered["games"], json!([]));

    for (path, code) in [
        (format!("/api/players/{me}/games?limit=0"), 400),
        (format!("/api/players/{me}/games?limit=abc"), 400),
        (format!("/api/players/{me}/games?variant=chess960"), 400),
        (format!("/api/players/{me}/games?before=nonsense"), 400),
        (format!("/api/players/{me}/rating-history"), 400),
        ("/api/leaderboard".to_owned(), 400),
        ("/api/leaderboard?variant=atomic&limit=1000".to_owned(), 400),
        (
            "/api/players/00000000-0000-7000-8000-000000000000".to_owned(),
            404,
        ),
        ("/api/players/not-a-uuid".to_owned(), 404),
        (
            "/api/games/00000000-0000-7000-8000-000000000000".to_owned(),
            404,
        ),
        (
            "/api/games/00000000-0000-7000-8000-000000000000/pgn".to_owned(),
            404,
        ),
    ] {
        let (status, body) = json_get(&p, &path).await?;
        assert_eq!(status, code, "{path}: {body}");
        assert!(body["error"]["code"].is_string(), "{path}: {body}");
    }
    p.stop().await;
    Ok(())
}
