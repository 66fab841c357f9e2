//! The fair-play stores, Postgres (a database of its own) and memory, through one set of
//! scenarios: a player whose recent games agree with the engine gets one open report that
//! follows their later games; a game stored twice changes nothing; decisions are logged
//! with who and when and cannot be made twice; a marked player is marked until unmarked; a
//! dismissed report does not come straight back.

use frontier_fairplay::{GameStats, Thresholds};
use frontier_fairplay_service::model::{
    Action, Moderator, NEW_GAMES_AFTER_DECISION, SideRecord, Status, StatusFilter, WINDOW,
};
use frontier_fairplay_service::store::{DecideError, FairPlayStore};
use frontier_fairplay_service::{MIGRATOR, MemoryStore, PgStore};
use frontier_rules::Variant;
use uuid::Uuid;

fn stats(engine: bool) -> GameStats {
    if engine {
        GameStats {
            counted: 30,
            top1: 0.93,
            acpl: 4.0,
            near_best: 0.97,
            think_cv: 0.2,
            fast_best_complex: 0.8,
            slow_only_moves: 0.5,
            score: 95.0,
            timed: 28,
            complex: 10,
            only_moves: 4,
        }
    } else {
        GameStats {
            counted: 30,
            top1: 0.40,
            acpl: 70.0,
            near_best: 0.50,
            think_cv: 0.9,
            fast_best_complex: 0.1,
            slow_only_moves: 0.0,
            score: 5.0,
            timed: 28,
            complex: 10,
            only_moves: 4,
        }
    }
}

fn side(player: Uuid, name: &str, ended_at_ms: i64, engine: bool) -> SideRecord {
    SideRecord {
        game_id: Uuid::new_v4(),
        player_id: player,
        player_name: name.to_owned(),
        variant: Variant::Standard,
        color: "white",
        opponent_name: "someone".to_owned(),
        result: "white".to_owned(),
        rating: 1500.0,
        ended_at_ms,
        stats: stats(engine),
        moves: Vec::new(),
    }
}

fn moderator() -> Moderator {
    Moderator {
        id: Uuid::new_v4(),
        name: "mod".to_owned(),
    }
}

async fn scenarios<S: FairPlayStore>(store: S) {
    let cheat = Uuid::new_v4();
    let honest = Uuid::new_v4();
    let mut t = 1_000_000;
    let mut first_report = None;
    for _ in 0..WINDOW {
        t += 1000;
        let a = side(cheat, "cheat", t, true);
        let b = side(honest, "honest", t, false);
        let recorded = store.record(&[a.clone(), b], t).await.expect("recorded");
        assert_eq!(recorded.stored, 2);
        if first_report.is_none() {
            first_report = recorded.opened.first().copied();
        } else {
            assert!(recorded.opened.is_empty(), "one open report per player");
        }
        // The same game again changes nothing.
        let again = store.record(&[a], t).await.expect("recorded");
        assert_eq!(again.stored, 0);
        assert!(again.opened.is_empty() && again.updated.is_empty());
    }
    let report_id = first_report.expect("the engine player was reported");
    let open = store
        .reports(StatusFilter::Only(Status::Open), None, 10)
        .await
        .expect("reports");
    assert_eq!(open.len(), 1, "only the engine player is reported");
    let report = &open[0];
    assert_eq!((report.id, report.player_id), (report_id, cheat));
    assert!(!report.reasons.is_empty(), "a report says why");
    assert_eq!(report.game_ids.len(), WINDOW, "it covers the latest games");
    let (_, games) = store.report(report_id).await.expect("read").expect("found");
    assert_eq!(games.len(), WINDOW);
    assert!(games.iter().all(|g| g.player_id == cheat));
    assert!(
        games
            .windows(2)
            .all(|w| w[0].ended_at_ms >= w[1].ended_at_ms),
        "newest first"
    );

    // Dismiss: logged, cannot be decided again, not reopened by the next few games.
    let m = moderator();
    let dismissed_at = t + 1;
    let dismissed = store
        .decide(
            report_id,
            Action::Dismiss,
            &m,
            "looks like preparation",
            dismissed_at,
        )
        .await
        .expect("decided");
    assert_eq!(dismissed.status, Status::Dismissed);
    assert_eq!(dismissed.decided, Some((m.clone(), dismissed_at)));
    assert!(matches!(
        store.decide(report_id, Action::Mark, &m, "", t + 2).await,
        Err(DecideError::AlreadyDecided)
    ));
    assert!(matches!(
        store
            .decide(Uuid::new_v4(), Action::Mark, &m, "", t + 2)
            .await,
        Err(DecideError::NotFound)
    ));
    let mut reopened = None;
    for i in 0..NEW_GAMES_AFTER_DECISION {
        t += 1000;
        let recorded = store
            .record(&[side(cheat, "cheat", t, true)], t)
            .await
            .expect("recorded");
        if i + 1 < NEW_GAMES_AFTER_DECISION {
            assert!(
                recorded.opened.is_empty(),
                "not straight back after a dismissal"
            );
        } else {
            reopened = recorded.opened.first().copied();
        }
    }
    let second = reopened.expect("reported again after enough new games");

    // Mark: the player is marked, the decision logged.
    let marked = store
        .decide(second, Action::Mark, &m, "engine", t + 5)
        .await
        .expect("decided");
    assert_eq!(marked.status, Status::Marked);
    assert_eq!(
        store
            .marked_among(&[honest, cheat, cheat])
            .await
            .expect("read"),
        vec![cheat]
    );
    // A marked player is not reported again.
    t += 1000;
    let recorded = store
        .record(&[side(cheat, "cheat", t, true)], t)
        .await
        .expect("recorded");
    assert!(recorded.opened.is_empty());

    // Unmark: logged; a second unmark changes nothing.
    assert!(
        store
            .unmark(cheat, &m, "appeal upheld", t + 10)
            .await
            .expect("unmark")
    );
    assert!(!store.unmark(cheat, &m, "", t + 11).await.expect("unmark"));
    assert!(store.marked_among(&[cheat]).await.expect("read").is_empty());

    let log = store.audit_log(None, 10).await.expect("log");
    let actions: Vec<&str> = log.iter().map(|e| e.action).collect();
    assert_eq!(actions, ["unmark", "mark", "dismiss"], "newest first");
    assert!(log.iter().all(|e| e.moderator == m && e.player_id == cheat));
    assert_eq!(log[2].note, "looks like preparation");
    assert_eq!(log[2].at_ms, dismissed_at);
    let older = store.audit_log(Some(log[0].seq), 10).await.expect("log");
    assert_eq!(older.len(), 2, "the cursor pages");

    let all = store
        .reports(StatusFilter::All, None, 10)
        .await
        .expect("reports");
    assert_eq!(all.len(), 2);
    assert_eq!(store.open_reports().await.expect("count"), 0);
}

#[tokio::test]
async fn the_memory_store_keeps_the_queue_as_documented() {
    scenarios(MemoryStore::new(Thresholds::default())).await;
}

#[tokio::test]
async fn the_postgres_store_keeps_the_queue_as_documented() {
    let url = frontier_testkit::fresh_database().await.expect("Postgres");
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    MIGRATOR.run(&pool).await.expect("migrate");
    scenarios(PgStore::new(pool, Thresholds::default())).await;
}
