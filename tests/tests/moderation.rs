//! Fair play on the gateway (docs/protocol.md, Moderation): the moderation API against a
//! stand-in fair-play service served here (the gateway's behaviour only; the service's own
//! tests are its own) — no token 401, a non-moderator 403 `forbidden` at every endpoint, a
//! moderator's calls forwarded with its id and name, the service's refusals mapped by their
//! typed codes; `frontier admin grant-moderator` on Postgres (the claim after the next
//! sign-in; an unknown name refused); a marked player refused rated seeks, boards and joins
//! with `fair_play_restricted` while casual stays open; the leaderboard without marked
//! players; and fair play unreachable leaving play and the leaderboard alone.

mod common;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use common::{Client, Platform, login, register, request};
use frontier_platform::JwtKeys;
use frontier_platform::grpc::refusal;
use frontier_proto::fairplay::v1 as pb;
use frontier_protocol::ErrorCode;
use serde_json::{Value, json};
use tonic::{Request, Response, Status};

const REPORT: &str = "00000000-0000-4000-8000-000000000001";
const MISSING: &str = "00000000-0000-4000-8000-000000000404";
const DECIDED: &str = "00000000-0000-4000-8000-000000000409";
const BROKEN: &str = "00000000-0000-4000-8000-000000000503";

/// The stand-in fair-play service: marks as the test sets them, and every moderation call
/// recorded.
#[derive(Default)]
struct Fake {
    marked: Mutex<HashSet<String>>,
    decisions: Mutex<Vec<pb::DecideRequest>>,
    unmarks: Mutex<Vec<pb::UnmarkRequest>>,
    lists: Mutex<Vec<pb::ListReportsRequest>>,
}

#[derive(Clone, Default)]
struct FakeService(Arc<Fake>);

fn report(id: &str, status: &str) -> pb::Report {
    pb::Report {
        report_id: id.to_owned(),
        player_id: "00000000-0000-4000-8000-0000000000aa".into(),
        player_name: "suspect".into(),
        variant: frontier_proto::games::v1::Variant::Standard as i32,
        status: status.to_owned(),
        score: 91.5,
        reasons: vec![pb::Reason {
            code: "engine_agreement".into(),
            value: 0.93,
            threshold: 0.8,
            detail: "top-1 93% over 20 games".into(),
        }],
        games: 20,
        rating: 1510.0,
        created_at_ms: 1_700_000_000_000,
        updated_at_ms: 1_700_000_000_000,
        ..Default::default()
    }
}

fn by_id(id: &str) -> Result<(), Status> {
    match id {
        MISSING => Err(refusal(ErrorCode::ReportNotFound, "no report")),
        DECIDED => Err(refusal(ErrorCode::AlreadyDecided, "decided")),
        BROKEN => Err(refusal(ErrorCode::Unavailable, "storage down")),
        _ => Ok(()),
    }
}

#[tonic::async_trait]
impl pb::fair_play_server::FairPlay for FakeService {
    async fn list_reports(
        &self,
        request: Request<pb::ListReportsRequest>,
    ) -> Result<Response<pb::ReportsPage>, Status> {
        let r = request.into_inner();
        if r.limit > 100 {
            return Err(refusal(ErrorCode::BadField, "limit is 1 to 100"));
        }
        self.0.lists.lock().expect("lock").push(r);
        Ok(Response::new(pb::ReportsPage {
            reports: vec![report(REPORT, "open")],
            next_cursor: "page2".into(),
        }))
    }

    async fn get_report(
        &self,
        request: Request<pb::GetReportRequest>,
    ) -> Result<Response<pb::ReportDetail>, Status> {
        let id = request.into_inner().report_id;
        by_id(&id)?;
        Ok(Response::new(pb::ReportDetail {
            report: Some(report(&id, "open")),
            games: vec![pb::AnalysedGame {
                game_id: "00000000-0000-4000-8000-000000000101".into(),
                color: "white".into(),
                opponent_name: "honest".into(),
                result: "white".into(),
                counted_moves: 1,
                top1: 1.0,
                moves: vec![pb::AnalysedMove {
                    ply: 21,
                    played: "e2e4".into(),
                    best: "e2e4".into(),
                    flagged: true,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }))
    }

    async fn decide(
        &self,
        request: Request<pb::DecideRequest>,
    ) -> Result<Response<pb::Report>, Status> {
        let r = request.into_inner();
        by_id(&r.report_id)?;
        let mut decided = report(
            &r.report_id,
            if r.action == "mark" {
                "marked"
            } else {
                "dismissed"
            },
        );
        decided.decided_by_id = r.moderator_id.clone();
        decided.decided_by_name = r.moderator_name.clone();
        decided.decided_at_ms = 1_700_000_001_000;
        decided.note = r.note.clone();
        if r.action == "mark" {
            self.0
                .marked
                .lock()
                .expect("lock")
                .insert(decided.player_id.clone());
        }
        self.0.decisions.lock().expect("lock").push(r);
        Ok(Response::new(decided))
    }

    async fn unmark(
        &self,
        request: Request<pb::UnmarkRequest>,
    ) -> Result<Response<pb::UnmarkResponse>, Status> {
        let r = request.into_inner();
        let was_marked = self.0.marked.lock().expect("lock").remove(&r.player_id);
        self.0.unmarks.lock().expect("lock").push(r);
        Ok(Response::new(pb::UnmarkResponse { was_marked }))
    }

    async fn is_marked(
        &self,
        request: Request<pb::IsMarkedRequest>,
    ) -> Result<Response<pb::IsMarkedResponse>, Status> {
        let id = request.into_inner().player_id;
        Ok(Response::new(pb::IsMarkedResponse {
            marked: self.0.marked.lock().expect("lock").contains(&id),
        }))
    }

    async fn marked_among(
        &self,
        request: Request<pb::MarkedAmongRequest>,
    ) -> Result<Response<pb::MarkedAmongResponse>, Status> {
        let marked = self.0.marked.lock().expect("lock");
        let player_ids = request
            .into_inner()
            .player_ids
            .into_iter()
            .filter(|p| marked.contains(p))
            .collect();
        Ok(Response::new(pb::MarkedAmongResponse { player_ids }))
    }

    async fn audit_log(
        &self,
        _request: Request<pb::AuditLogRequest>,
    ) -> Result<Response<pb::AuditLogResponse>, Status> {
        Ok(Response::new(pb::AuditLogResponse {
            entries: vec![pb::AuditEntry {
                action: "unmark".into(),
                player_id: "p".into(),
                player_name: "suspect".into(),
                moderator_id: "m".into(),
                moderator_name: "judge".into(),
                note: "appeal upheld".into(),
                at_ms: 5,
                ..Default::default()
            }],
            next_cursor: String::new(),
        }))
    }
}

/// Serves the stand-in on a port of its own: its URL.
async fn serve_fake(fake: FakeService) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let incoming = frontier_platform::inproc::Listener::from(listener).incoming();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(pb::fair_play_server::FairPlayServer::new(fake))
            .serve_with_incoming(incoming),
    );
    Ok(url)
}

fn keys() -> anyhow::Result<JwtKeys> {
    JwtKeys::new(common::JWT_SECRET.as_bytes(), Duration::from_secs(3600))
        .map_err(anyhow::Error::msg)
}

/// Every moderation endpoint: method, path, body.
const ENDPOINTS: &[(&str, &str, &str)] = &[
    ("GET", "/api/moderation/reports", ""),
    ("GET", "/api/moderation/reports?status=all&limit=5", ""),
    (
        "GET",
        "/api/moderation/reports/00000000-0000-4000-8000-000000000001",
        "",
    ),
    (
        "POST",
        "/api/moderation/reports/00000000-0000-4000-8000-000000000001/decision",
        r#"{"action":"mark","note":"x"}"#,
    ),
    (
        "POST",
        "/api/moderation/players/00000000-0000-4000-8000-0000000000aa/unmark",
        r#"{"note":"x"}"#,
    ),
    ("GET", "/api/moderation/log", ""),
];

async fn call(
    gw: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> anyhow::Result<(u16, Value)> {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| vec![("Authorization", a)])
        .unwrap_or_default();
    let r = request(gw, method, path, &headers, body).await?;
    Ok((r.status, r.body))
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

/// Grant, the claim at the next sign-in, every endpoint refused without it and forwarded
/// with it, refusals mapped, revocation at once, unknown names refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_moderators_reach_the_moderation_api_and_their_calls_are_forwarded_as_them()
-> anyhow::Result<()> {
    let fake = FakeService::default();
    let url = serve_fake(fake.clone()).await?;
    let p = Platform::start_with(1, 1, None, &[], &[("--fairplay-url", url.as_str())]).await?;
    let gw = p.gateways[0];
    let (before, judge_id) = register(gw, "Judge").await?;
    let (player, _) = register(gw, "Plain").await?;
    let (guest, _) = common::guest_token(gw).await?;

    // The operator's command, case-insensitive; an unknown name is an error.
    let grant = |name: &str| {
        frontier::admin::AdminCommand::GrantModerator(frontier::admin::ModeratorArgs {
            name: name.to_owned(),
            database_url: p.database_url.clone(),
        })
    };
    frontier::admin::run(grant("jUDGE")).await?;
    let unknown = frontier::admin::run(grant("nobody")).await;
    assert!(
        unknown
            .as_ref()
            .is_err_and(|e| e.to_string().contains("nobody")),
        "an unknown name is refused: {unknown:?}"
    );

    // The token issued before the grant has no claim; the next sign-in's has.
    let keys = keys()?;
    assert!(!keys.verify(&before)?.moderator);
    let judge = login(gw, "judge").await?;
    assert!(keys.verify(&judge)?.moderator);
    assert!(!keys.verify(&player)?.moderator);

    for (method, path, body) in ENDPOINTS {
        let (status, answer) = call(gw, method, path, None, body).await?;
        assert_eq!(
            (status, code(&answer)),
            (401, "token_missing"),
            "{method} {path}"
        );
        let (status, answer) = call(gw, method, path, Some("not.a.jwt"), body).await?;
        assert_eq!(
            (status, code(&answer)),
            (401, "token_malformed"),
            "{method} {path}"
        );
        for who in [&player, &guest, &before] {
            let (status, answer) = call(gw, method, path, Some(who), body).await?;
            assert_eq!(
                (status, code(&answer)),
                (403, "forbidden"),
                "{method} {path}: {answer}"
            );
        }
        let (status, answer) = call(gw, method, path, Some(&judge), body).await?;
        assert_eq!(status, 200, "{method} {path}: {answer}");
    }
    // Nothing reached the service but the moderator's calls.
    assert_eq!(fake.0.decisions.lock().expect("lock").len(), 1);
    assert_eq!(fake.0.lists.lock().expect("lock").len(), 2);

    // The queue: open by default, the filter and page passed on, the JSON of the protocol.
    let (_, page) = call(gw, "GET", "/api/moderation/reports", Some(&judge), "").await?;
    assert_eq!(page["next"], "page2");
    assert_eq!(page["reports"][0]["id"], REPORT);
    assert_eq!(page["reports"][0]["player"]["name"], "suspect");
    assert_eq!(page["reports"][0]["variant"], "standard");
    assert_eq!(page["reports"][0]["reasons"][0]["code"], "engine_agreement");
    assert_eq!(page["reports"][0]["decided"], Value::Null);
    let asked = fake.0.lists.lock().expect("lock").clone();
    assert_eq!(asked[0].status, "open");
    assert_eq!((asked[1].status.as_str(), asked[1].limit), ("all", 5));

    // A report's games and moves.
    let (_, detail) = call(
        gw,
        "GET",
        &format!("/api/moderation/reports/{REPORT}"),
        Some(&judge),
        "",
    )
    .await?;
    assert_eq!(detail["report"]["score"], 91.5);
    assert_eq!(detail["games"][0]["moves"][0]["flagged"], true);
    assert_eq!(detail["games"][0]["moves"][0]["skipped"], Value::Null);

    // The decision carries the moderator of the token, never one of the body.
    let decision = fake.0.decisions.lock().expect("lock")[0].clone();
    assert_eq!(
        (
            decision.moderator_id.as_str(),
            decision.moderator_name.as_str(),
            decision.action.as_str()
        ),
        (judge_id.as_str(), "Judge", "mark")
    );
    let unmark = fake.0.unmarks.lock().expect("lock")[0].clone();
    assert_eq!(unmark.moderator_id, judge_id);
    let (_, log) = call(gw, "GET", "/api/moderation/log", Some(&judge), "").await?;
    assert_eq!(log["entries"][0]["report_id"], Value::Null);
    assert_eq!(log["entries"][0]["moderator"]["name"], "judge");
    assert!(
        log.get("next").is_none(),
        "the last page has no next: {log}"
    );

    // Refusals by their typed codes, and the gateway's own checks.
    let decide = |id: &str| format!("/api/moderation/reports/{id}/decision");
    let long_note = json!({"action": "mark", "note": "n".repeat(501)}).to_string();
    let reports = "/api/moderation/reports";
    let cases: Vec<(&str, String, &str, u16, &str)> = vec![
        (
            "GET",
            format!("{reports}/{MISSING}"),
            "",
            404,
            "report_not_found",
        ),
        (
            "GET",
            format!("{reports}/not-a-uuid"),
            "",
            404,
            "report_not_found",
        ),
        (
            "POST",
            decide(DECIDED),
            r#"{"action":"dismiss"}"#,
            409,
            "already_decided",
        ),
        (
            "POST",
            decide(BROKEN),
            r#"{"action":"dismiss"}"#,
            503,
            "unavailable",
        ),
        (
            "POST",
            decide(REPORT),
            r#"{"action":"ban"}"#,
            400,
            "bad_field",
        ),
        (
            "POST",
            decide(REPORT),
            r#"{"action":"mark","moderator_id":"x"}"#,
            400,
            "bad_field",
        ),
        ("POST", decide(REPORT), &long_note, 400, "bad_field"),
        ("POST", decide(REPORT), "{", 400, "bad_json"),
        (
            "GET",
            format!("{reports}?status=closed"),
            "",
            400,
            "bad_field",
        ),
        ("GET", format!("{reports}?limit=1000"), "", 400, "bad_field"),
        ("GET", format!("{reports}?limit=x"), "", 400, "bad_field"),
    ];
    for (method, path, body, status, want) in cases {
        let (got, answer) = call(gw, method, &path, Some(&judge), body).await?;
        assert_eq!((got, code(&answer)), (status, want), "{method} {path}");
    }

    // Revoked: refused at once, even with the token that carries the claim.
    frontier::admin::run(frontier::admin::AdminCommand::RevokeModerator(
        frontier::admin::ModeratorArgs {
            name: "JUDGE".into(),
            database_url: p.database_url.clone(),
        },
    ))
    .await?;
    let (status, answer) = call(gw, "GET", "/api/moderation/log", Some(&judge), "").await?;
    assert_eq!((status, code(&answer)), (403, "forbidden"));
    assert!(!keys.verify(&login(gw, "Judge").await?)?.moderator);
    p.stop().await;
    Ok(())
}

/// Without `--fairplay-url` the moderation API is unavailable to moderators (and still
/// forbidden to others), and nobody is marked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_fair_play_a_moderator_is_told_it_is_unavailable() -> anyhow::Result<()> {
    let p = Platform::start(1, 1, None).await?;
    let gw = p.gateways[0];
    register(gw, "Judge").await?;
    let (player, _) = register(gw, "Plain").await?;
    frontier_gateway::accounts::set_moderator_at(&p.database_url, "judge", true).await?;
    let judge = login(gw, "judge").await?;
    for (method, path, body) in ENDPOINTS {
        let (status, answer) = call(gw, method, path, Some(&judge), body).await?;
        assert_eq!(
            (status, code(&answer)),
            (503, "unavailable"),
            "{method} {path}"
        );
        let (status, answer) = call(gw, method, path, Some(&player), body).await?;
        assert_eq!(
            (status, code(&answer)),
            (403, "forbidden"),
            "{method} {path}"
        );
    }
    p.stop().await;
    Ok(())
}

async fn error_code(client: &mut Client, id: &str) -> anyhow::Result<String> {
    let answer = client
        .until(&format!("answer to {id}"), |v| v["id"] == id)
        .await?;
    Ok(if answer["type"] == "error" {
        answer["code"].as_str().unwrap_or("?").to_owned()
    } else {
        answer["type"].as_str().unwrap_or("?").to_owned()
    })
}

/// A marked player: rated seeks, boards, joins and rematches refused with
/// `fair_play_restricted`, casual ones allowed; off the leaderboard. Fair play unreachable: everything allowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_marked_player_plays_casual_only_and_leaves_the_leaderboard() -> anyhow::Result<()> {
    let fake = FakeService::default();
    let url = serve_fake(fake.clone()).await?;
    let p =
        Platform::start_matchmade_with(1, 1, 1, &[], &[("--fairplay-url", url.as_str())]).await?;
    let gw = p.gateways[0];
    let (cheat_token, cheat) = register(gw, "Cheat").await?;
    let (honest_token, honest) = register(gw, "Honest").await?;
    let mut c = Client::with_token(gw, "cheat", &cheat_token, &cheat).await?;
    let mut h = Client::with_token(gw, "honest", &honest_token, &honest).await?;
    let clock = json!({"minutes": 5, "increment": 0});
    let board = |id: &str, rated: bool| json!({"type": "create_board", "id": id, "variant": "standard", "color": "white", "rated": rated, "clock": clock});
    // A rated game played before the mark, over.
    h.send(board("h0", true)).await?;
    let before = h.until("h0", |v| v["id"] == "h0").await?;
    c.send(json!({"type": "join_board", "id": "j0", "code": before["code"]}))
        .await?;
    assert_eq!(error_code(&mut c, "j0").await?, "board_joined");
    let rated_game = before["game_id"].as_str().context("game id")?.to_owned();
    c.send(json!({"type": "resign", "id": "r0", "game_id": rated_game}))
        .await?;
    assert_eq!(error_code(&mut c, "r0").await?, "ack");

    fake.0.marked.lock().expect("lock").insert(cheat.clone());
    // Its rematch would be rated: neither offered nor accepted by the marked player.
    c.send(json!({"type": "offer_rematch", "id": "o0", "game_id": rated_game}))
        .await?;
    assert_eq!(error_code(&mut c, "o0").await?, "fair_play_restricted");
    h.send(json!({"type": "offer_rematch", "id": "o1", "game_id": rated_game}))
        .await?;
    assert_eq!(error_code(&mut h, "o1").await?, "rematch_offered");
    c.send(json!({"type": "accept_rematch", "id": "a0", "game_id": rated_game}))
        .await?;
    assert_eq!(error_code(&mut c, "a0").await?, "fair_play_restricted");

    let seek = |id: &str, rated: bool| {
        json!({"type": "seek", "id": id, "pools": [
            {"variant": "standard", "clock": {"minutes": 3, "increment": 0}, "rated": rated},
        ]})
    };
    c.send(seek("s1", true)).await?;
    assert_eq!(error_code(&mut c, "s1").await?, "fair_play_restricted");
    c.send(seek("s2", false)).await?;
    assert_eq!(error_code(&mut c, "s2").await?, "seeking");
    c.send(json!({"type": "cancel_seek", "id": "s3"})).await?;
    error_code(&mut c, "s3").await?;

    c.send(board("b1", true)).await?;
    assert_eq!(error_code(&mut c, "b1").await?, "fair_play_restricted");
    c.send(board("b2", false)).await?;
    assert_eq!(error_code(&mut c, "b2").await?, "board_created");

    // Joins: the honest player's rated board refused, its casual one joined.
    h.send(board("h1", true)).await?;
    let rated = h.until("h1", |v| v["id"] == "h1").await?;
    h.send(board("h2", false)).await?;
    let casual = h.until("h2", |v| v["id"] == "h2").await?;
    c.send(json!({"type": "join_board", "id": "j1", "code": rated["code"]}))
        .await?;
    assert_eq!(error_code(&mut c, "j1").await?, "fair_play_restricted");
    c.send(json!({"type": "join_board", "id": "j2", "code": casual["code"]}))
        .await?;
    assert_eq!(error_code(&mut c, "j2").await?, "board_joined");
    // A casual game's rematch is casual: offered as usual.
    let casual_game = casual["game_id"].as_str().context("game id")?.to_owned();
    c.send(json!({"type": "resign", "id": "r2", "game_id": casual_game}))
        .await?;
    assert_eq!(error_code(&mut c, "r2").await?, "ack");
    c.send(json!({"type": "offer_rematch", "id": "o2", "game_id": casual_game}))
        .await?;
    assert_eq!(error_code(&mut c, "o2").await?, "rematch_offered");
    // The refused rated board still waits for someone else.
    let (other_token, other) = register(gw, "Other").await?;
    let mut o = Client::with_token(gw, "other", &other_token, &other).await?;
    o.send(json!({"type": "join_board", "id": "j3", "code": rated["code"]}))
        .await?;
    assert_eq!(error_code(&mut o, "j3").await?, "board_joined");

    // The leaderboard: both established (their rows set as the rating service keeps them),
    // the marked one left off.
    // The rated game recorded first (its ratings written), so that nothing overwrites the
    // rows below.
    let deadline = std::time::Instant::now() + common::WAIT;
    while common::get(gw, &format!("/api/games/{rated_game}"))
        .await?
        .0
        != 200
    {
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "the rated game was never recorded"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pool = sqlx::PgPool::connect(&p.database_url).await?;
    for (id, rating) in [(&cheat, 2400.0), (&honest, 1600.0)] {
        sqlx::query("INSERT INTO ratings (player_id, variant, rating, rd, volatility, rated_games) VALUES ($1, 'standard', $2, 50, 0.06, 30)
             ON CONFLICT (player_id, variant) DO UPDATE SET rating = EXCLUDED.rating, rd = EXCLUDED.rd")
            .bind(uuid::Uuid::parse_str(id)?)
            .bind(rating)
            .execute(&pool)
            .await?;
    }
    let board_ids = |body: &str| -> anyhow::Result<Vec<String>> {
        let v: Value = serde_json::from_str(body)?;
        Ok(v["players"]
            .as_array()
            .context("players")?
            .iter()
            .filter_map(|p| p["id"].as_str().map(str::to_owned))
            .collect())
    };
    let (status, body) = common::get(gw, "/api/leaderboard?variant=standard").await?;
    assert_eq!(status, 200, "{body}");
    assert_eq!(board_ids(&body)?, vec![honest.clone()]);
    // Unmarked: back on it.
    fake.0.marked.lock().expect("lock").clear();
    let (_, body) = common::get(gw, "/api/leaderboard?variant=standard").await?;
    assert_eq!(board_ids(&body)?, vec![cheat.clone(), honest.clone()]);
    p.stop().await;
    Ok(())
}

/// Fair play configured but not answering: rated play and the leaderboard go on (counted,
/// logged), the moderation API answers 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_play_unreachable_takes_no_play_down() -> anyhow::Result<()> {
    // A port nobody listens on.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        format!("http://{}", l.local_addr()?)
    };
    let p =
        Platform::start_matchmade_with(1, 1, 1, &[], &[("--fairplay-url", dead.as_str())]).await?;
    let gw = p.gateways[0];
    let (token, id) = register(gw, "Rated").await?;
    let mut c = Client::with_token(gw, "rated", &token, &id).await?;
    c.send(json!({"type": "create_board", "id": "b", "variant": "standard", "color": "white", "rated": true, "clock": {"minutes": 5, "increment": 0}}))
        .await?;
    assert_eq!(error_code(&mut c, "b").await?, "board_created");
    c.send(json!({"type": "seek", "id": "s", "pools": [{"variant": "standard", "clock": {"minutes": 3, "increment": 0}, "rated": true}]}))
        .await?;
    assert_eq!(error_code(&mut c, "s").await?, "seeking");
    let (status, body) = common::get(gw, "/api/leaderboard?variant=standard").await?;
    assert_eq!(status, 200, "{body}");
    register(gw, "Judge").await?;
    frontier_gateway::accounts::set_moderator_at(&p.database_url, "judge", true).await?;
    let judge = login(gw, "judge").await?;
    let (status, answer) = call(gw, "GET", "/api/moderation/reports", Some(&judge), "").await?;
    assert_eq!((status, code(&answer)), (503, "unavailable"));
    p.stop().await;
    Ok(())
}
