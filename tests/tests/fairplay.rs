//! Fair play end to end, on real Redis, NATS and Postgres: rated games played through a
//! gateway — twenty by an engine user (the engine at full strength choosing every move of
//! one side) against an honest stand-in, twenty between two honest stand-ins (the engine's
//! weaker levels, whose errors resemble a club player's) — screened by the fair-play
//! service from JetStream. The engine user is reported and nobody else is. Then the whole
//! moderation flow through the gateway: an operator grants the moderator role, the
//! moderator reads the queue and the report (the games, the flagged moves), marks the
//! player; the marked player is refused rated boards and rated pools and leaves the
//! leaderboard; the audit log names who decided and when; a non-moderator is refused at
//! every endpoint. The per-game scores are printed (docs/fairplay.md's false-positive
//! figures come from them).

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use common::{Client, Platform, login, register, request};
use frontier_engine::{Decision, Level, Limits, Request, think};
use frontier_fairplay::{Replay, Settings, Thresholds};
use frontier_fairplay_service::{
    Analyser, ConsumerSettings, ConsumerStats, MIGRATOR, PgStore, RatingSource, consume,
    grpc::FairPlayService, serve_api,
};
use frontier_platform::Shutdown;
use frontier_platform::time::SystemClock;
use frontier_rules::{Color, Role, Variant};
use serde_json::{Value, json};

/// Games per group.
const GAMES: usize = 20;
/// A game still going after this many plies is resigned by the side to move.
const MAX_PLIES: u32 = 64;

/// Who chooses a side's moves.
#[derive(Debug, Clone, Copy)]
enum Mind {
    /// The engine at full strength (Hard, at the analysis's own budget).
    Engine,
    /// An honest stand-in: a weaker level with its seeded imprecision.
    Honest(Level, u64),
}

fn decide(replay: &Replay, mind: Mind, seed: u64) -> anyhow::Result<String> {
    let view = replay.mover_view().map_err(|e| anyhow::anyhow!("{e}"))?;
    let (level, nodes) = match mind {
        Mind::Engine => (Level::Hard, Settings::default().nodes),
        Mind::Honest(level, nodes) => (level, nodes),
    };
    let thought = think(&Request {
        view: &view,
        level,
        clock: None,
        seed,
        limits: Some(Limits {
            nodes: Some(nodes),
            deadline: None,
        }),
    })?;
    match thought.decision {
        Decision::Move(m) => Ok(m.to_string()),
        Decision::Promote(_) => anyhow::bail!("no promotion is pending in standard chess"),
    }
}

async fn call(
    gw: SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    body: &str,
) -> anyhow::Result<(u16, Value)> {
    let auth = format!("Bearer {token}");
    let r = request(gw, method, path, &[("Authorization", auth.as_str())], body).await?;
    Ok((r.status, r.body))
}

/// Plays `GAMES` rated games between `a` (White in even games) and `b`, each move chosen
/// from the position both sides see, through the gateway.
async fn play_series(
    a: &mut Client,
    a_mind: Mind,
    b: &mut Client,
    b_mind: Mind,
    seed: u64,
) -> anyhow::Result<()> {
    for g in 0..GAMES {
        let (white, black, white_mind, black_mind) = if g % 2 == 0 {
            (&mut *a, &mut *b, a_mind, b_mind)
        } else {
            (&mut *b, &mut *a, b_mind, a_mind)
        };
        let id = format!("b{g}");
        white
            .send(
                json!({"type": "create_board", "id": id, "variant": "standard",
                "color": "white", "rated": true, "clock": {"minutes": 30, "increment": 0}}),
            )
            .await?;
        let created = white.until("board", |v| v["id"] == id.as_str()).await?;
        anyhow::ensure!(created["type"] == "board_created", "game {g}: {created}");
        let game = created["game_id"].as_str().context("game id")?.to_owned();
        black
            .send(json!({"type": "join_board", "id": format!("j{g}"), "code": created["code"]}))
            .await?;
        let joined = black
            .until("joined", |v| v["id"] == format!("j{g}").as_str())
            .await?;
        anyhow::ensure!(joined["type"] == "board_joined", "game {g}: {joined}");
        let mut replay = Replay::start(Variant::Standard, "", None).map_err(anyhow::Error::msg)?;
        while !replay.is_over() && replay.ply() < MAX_PLIES {
            let (mind, player) = if replay.mover() == Color::White {
                (white_mind, &mut *white)
            } else {
                (black_mind, &mut *black)
            };
            let move_seed = seed ^ ((g as u64) << 32) ^ u64::from(replay.ply());
            let (uci, back) = tokio::task::spawn_blocking(move || {
                let uci = decide(&replay, mind, move_seed);
                (uci, replay)
            })
            .await?;
            replay = back;
            let ply = replay.ply();
            let uci = uci.with_context(|| format!("game {g} ply {ply}: deciding"))?;
            let id = format!("g{g}p{ply}");
            player
                .send(json!({"type": "move", "id": id, "game_id": game, "uci": uci}))
                .await?;
            let answer = player
                .until("its answer", |v| v["id"] == id.as_str())
                .await
                .with_context(|| format!("game {g} ply {ply}: playing {uci}"))?;
            anyhow::ensure!(
                answer["type"] == "ack",
                "game {g} ply {ply}: {uci}: {answer}"
            );
            replay
                .play(&uci)
                .map_err(|e| anyhow::anyhow!("game {g} ply {ply}: replaying {uci}: {e}"))?;
        }
        if !replay.is_over() {
            // The side with less material resigns (the side to move on equal material).
            let board = replay.position().board();
            let material = |c: Color| -> u32 {
                [
                    (Role::Pawn, 1),
                    (Role::Knight, 3),
                    (Role::Bishop, 3),
                    (Role::Rook, 5),
                    (Role::Queen, 9),
                ]
                .iter()
                .map(|&(role, value)| value * (board.by_color(c) & board.by_role(role)).count())
                .sum()
            };
            let (w, b) = (material(Color::White), material(Color::Black));
            let white_resigns = w < b || (w == b && replay.mover() == Color::White);
            let loser = if white_resigns {
                &mut *white
            } else {
                &mut *black
            };
            loser
                .send(json!({"type": "resign", "id": format!("r{g}"), "game_id": game}))
                .await?;
            loser
                .until("resigned", |v| v["id"] == format!("r{g}").as_str())
                .await?;
        }
        white.discard_unread();
        black.discard_unread();
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_use_is_reported_honest_play_is_not_and_a_moderator_marks_the_player()
-> anyhow::Result<()> {
    // The fair-play service: its own database, its API first (the gateway names it).
    let fair_db = frontier_testkit::fresh_database().await?;
    let pool = sqlx::PgPool::connect(&fair_db).await?;
    MIGRATOR.run(&pool).await?;
    let store = PgStore::new(pool, Thresholds::default());
    let stop = Shutdown::new();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let fair_url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(serve_api(
        listener,
        FairPlayService::new(store.clone(), Arc::new(SystemClock)),
        stop.clone(),
    ));
    // The stand-ins play faster than people: more than 20 messages a second.
    let gateway_flags = [
        ("--fairplay-url", fair_url.as_str()),
        ("--ws-rate", "1000"),
        ("--ws-burst", "1000"),
    ];
    let p = Platform::start_matchmade_with(1, 1, 1, &[], &gateway_flags).await?;
    let gw = p.gateways[0];
    let stats = Arc::new(ConsumerStats::default());
    let consumer = {
        let nats = frontier_platform::streams::connect(&frontier_testkit::nats_url())
            .await
            .map_err(anyhow::Error::msg)?;
        let ns = frontier_platform::Namespace::new(&p.namespace).map_err(anyhow::Error::msg)?;
        tokio::spawn(consume(
            store,
            nats,
            ns,
            ConsumerSettings {
                concurrency: 2,
                ..ConsumerSettings::named("fairplay")
            },
            Analyser {
                settings: Settings::default(),
                ratings: RatingSource::connect(&p.rating_url).map_err(anyhow::Error::msg)?,
                clock: Arc::new(SystemClock),
            },
            stats.clone(),
            stop.clone(),
        ))
    };

    let mut players = Vec::new();
    for name in ["EngineUser", "ClubA", "ClubB", "ClubC"] {
        let (token, id) = register(gw, name).await?;
        players.push((Client::with_token(gw, name, &token, &id).await?, id, token));
    }
    let engine_id = players[0].1.clone();
    let honest_token = players[1].2.clone();
    let [
        (mut engine, ..),
        (mut club_a, ..),
        (mut club_b, ..),
        (mut club_c, ..),
    ] = <[_; 4]>::try_from(players).map_err(|_| anyhow::anyhow!("four players"))?;
    let engine_games = play_series(
        &mut engine,
        Mind::Engine,
        &mut club_a,
        Mind::Honest(Level::Medium, 20_000),
        0xe9,
    );
    let honest_games = play_series(
        &mut club_b,
        Mind::Honest(Level::Easy, 5_000),
        &mut club_c,
        Mind::Honest(Level::Medium, 20_000),
        0x90,
    );
    let (e, h) = tokio::join!(engine_games, honest_games);
    e.context("the engine user's games")?;
    h.context("the honest games")?;

    // Every game screened once.
    tokio::time::timeout(
        Duration::from_secs(600),
        stats.wait_settled(2 * GAMES as u64),
    )
    .await
    .context("every finished game screened")?;
    let [analysed, skipped, rejected, retries, set_aside, _] = stats.snapshot();
    assert_eq!(
        (analysed, skipped, rejected, retries, set_aside),
        (2 * GAMES as u64, 0, 0, 0, 0)
    );

    // The moderator: granted by the operator's command, the role in the next token.
    register(gw, "Judge").await?;
    frontier::admin::run(frontier::admin::AdminCommand::GrantModerator(
        frontier::admin::ModeratorArgs {
            name: "judge".to_owned(),
            database_url: p.database_url.clone(),
        },
    ))
    .await?;
    let judge = login(gw, "Judge").await?;

    // The queue holds one report, the engine user's, and nobody else was ever reported.
    let (status, all) = call(gw, "GET", "/api/moderation/reports?status=all", &judge, "").await?;
    assert_eq!(status, 200, "{all}");
    let reports = all["reports"].as_array().context("reports")?;
    for r in reports {
        println!(
            "report: {} score {:.1} reasons {}",
            r["player"]["name"],
            r["score"].as_f64().unwrap_or(0.0),
            r["reasons"]
        );
    }
    assert_eq!(reports.len(), 1, "only the engine user is reported: {all}");
    let report = &reports[0];
    assert_eq!(report["player"]["id"], engine_id.as_str());
    assert_eq!(report["status"], "open");
    let report_id = report["id"].as_str().context("report id")?.to_owned();
    let (status, detail) = call(
        gw,
        "GET",
        &format!("/api/moderation/reports/{report_id}"),
        &judge,
        "",
    )
    .await?;
    assert_eq!(status, 200, "{detail}");
    let games = detail["games"].as_array().context("games")?;
    assert!(!games.is_empty());
    let flagged: usize = games
        .iter()
        .map(|g| {
            g["moves"]
                .as_array()
                .map_or(0, |m| m.iter().filter(|m| m["flagged"] == true).count())
        })
        .sum();
    assert!(flagged > 0, "the report shows the moves that drove it");

    // Every player's screened games, for the record (docs/fairplay.md).
    let fair = sqlx::PgPool::connect(&fair_db).await?;
    let rows: Vec<(String, f64, f64, f64, i32)> = sqlx::query_as(
        "SELECT player_name, score, top1, acpl, counted FROM fairplay_games ORDER BY player_name, ended_at",
    )
    .fetch_all(&fair)
    .await?;
    for (name, score, top1, acpl, counted) in &rows {
        println!("game: {name} score {score:.1} top1 {top1:.2} acpl {acpl:.1} counted {counted}");
    }
    // Each player's verdict over their last ten games, as the service keeps it.
    type Row = (
        String,
        f64,
        i32,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        i32,
        i32,
        i32,
    );
    let stats: Vec<Row> = sqlx::query_as(
        "SELECT player_name, rating, counted, top1, acpl, near_best, think_cv, fast_best_complex, \
         slow_only_moves, score, timed, complex, only_moves FROM fairplay_games \
         ORDER BY ended_at DESC",
    )
    .fetch_all(&fair)
    .await?;
    for name in ["EngineUser", "ClubA", "ClubB", "ClubC"] {
        let latest: Vec<frontier_fairplay::GameSummary> = stats
            .iter()
            .filter(|r| r.0 == name)
            .take(10)
            .map(|r| frontier_fairplay::GameSummary {
                rating: r.1,
                stats: frontier_fairplay::GameStats {
                    counted: u32::try_from(r.2).unwrap_or(0),
                    top1: r.3,
                    acpl: r.4,
                    near_best: r.5,
                    think_cv: r.6,
                    fast_best_complex: r.7,
                    slow_only_moves: r.8,
                    score: r.9,
                    timed: u32::try_from(r.10).unwrap_or(0),
                    complex: u32::try_from(r.11).unwrap_or(0),
                    only_moves: u32::try_from(r.12).unwrap_or(0),
                },
            })
            .collect();
        let verdict = frontier_fairplay::aggregate(&latest, &Thresholds::default());
        println!(
            "verdict: {name} rating {:.0} score {:.1} report {} reasons {:?}",
            latest.first().map_or(0.0, |g| g.rating),
            verdict.score,
            verdict.report,
            verdict.reasons.iter().map(|r| r.code).collect::<Vec<_>>()
        );
    }

    // A non-moderator is refused at every endpoint.
    let endpoints = [
        ("GET", "/api/moderation/reports".to_owned(), ""),
        ("GET", format!("/api/moderation/reports/{report_id}"), ""),
        (
            "POST",
            format!("/api/moderation/reports/{report_id}/decision"),
            r#"{"action":"dismiss","note":"x"}"#,
        ),
        (
            "POST",
            format!("/api/moderation/players/{engine_id}/unmark"),
            r#"{"note":"x"}"#,
        ),
        ("GET", "/api/moderation/log".to_owned(), ""),
    ];
    for (method, path, body) in &endpoints {
        let (status, reply) = call(gw, method, path, &honest_token, body).await?;
        assert_eq!(
            (status, reply["error"]["code"].as_str()),
            (403, Some("forbidden")),
            "{method} {path}"
        );
    }

    // Before the mark the engine user is on the leaderboard. Twenty games leave a rating
    // provisional (RD above 110), so its row is made established as the rating service
    // would keep it after many more games.
    let rating_db = sqlx::PgPool::connect(&p.database_url).await?;
    sqlx::query("UPDATE ratings SET rd = 60 WHERE player_id = $1::uuid AND variant = 'standard'")
        .bind(&engine_id)
        .execute(&rating_db)
        .await?;
    let on_board = |body: &Value| {
        body["players"]
            .as_array()
            .is_some_and(|l| l.iter().any(|e| e["id"] == engine_id.as_str()))
    };
    let (_, board_before) = common::get(gw, "/api/leaderboard?variant=standard").await?;
    let board_before: Value = serde_json::from_str(&board_before)?;
    assert!(on_board(&board_before), "{board_before}");

    // Mark.
    let (status, decided) = call(
        gw,
        "POST",
        &format!("/api/moderation/reports/{report_id}/decision"),
        &judge,
        r#"{"action":"mark","note":"engine agreement far beyond the rating"}"#,
    )
    .await?;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["status"], "marked");
    let (status, again) = call(
        gw,
        "POST",
        &format!("/api/moderation/reports/{report_id}/decision"),
        &judge,
        r#"{"action":"dismiss","note":""}"#,
    )
    .await?;
    assert_eq!(
        (status, again["error"]["code"].as_str()),
        (409, Some("already_decided"))
    );

    // The marked player: rated boards and rated pools refused, casual allowed.
    engine
        .send(
            json!({"type": "create_board", "id": "rated", "variant": "standard",
            "color": "white", "rated": true, "clock": {"minutes": 5, "increment": 0}}),
        )
        .await?;
    let refused = engine.until("rated", |v| v["id"] == "rated").await?;
    assert_eq!(refused["code"], "fair_play_restricted", "{refused}");
    engine
        .send(json!({"type": "seek", "id": "seek", "pools": [
            {"variant": "standard", "clock": {"minutes": 3, "increment": 0}, "rated": true}]}))
        .await?;
    let refused = engine.until("seek", |v| v["id"] == "seek").await?;
    assert_eq!(refused["code"], "fair_play_restricted", "{refused}");
    engine
        .send(
            json!({"type": "create_board", "id": "casual", "variant": "standard",
            "color": "white", "rated": false}),
        )
        .await?;
    let casual = engine.until("casual", |v| v["id"] == "casual").await?;
    assert_eq!(casual["type"], "board_created", "{casual}");

    // Off the leaderboard.
    let (_, board_after) = common::get(gw, "/api/leaderboard?variant=standard").await?;
    let board_after: Value = serde_json::from_str(&board_after)?;
    assert!(!on_board(&board_after), "{board_after}");

    // The audit log: who decided, what, when.
    let (status, log) = call(gw, "GET", "/api/moderation/log", &judge, "").await?;
    assert_eq!(status, 200, "{log}");
    let entries = log["entries"].as_array().context("entries")?;
    assert_eq!(entries.len(), 1, "{log}");
    assert_eq!(entries[0]["action"], "mark");
    assert_eq!(entries[0]["player"]["id"], engine_id.as_str());
    assert_eq!(entries[0]["moderator"]["name"], "Judge");
    assert_eq!(entries[0]["report_id"], report_id.as_str());
    assert!(entries[0]["at"].as_i64().is_some_and(|t| t > 0), "{log}");

    stop.trigger();
    consumer.await??;
    p.stop().await;
    Ok(())
}
