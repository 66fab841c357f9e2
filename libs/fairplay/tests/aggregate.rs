//! The verdict over a player's games: rating as context, minimum evidence, reasons.

use frontier_fairplay::{GameStats, GameSummary, Thresholds, aggregate};

fn stats(top1: f64, acpl: f64, near_best: f64) -> GameStats {
    GameStats {
        counted: 25,
        top1,
        acpl,
        near_best,
        think_cv: 0.8,
        fast_best_complex: 0.2,
        slow_only_moves: 0.0,
        score: 0.0,
        timed: 30,
        complex: 10,
        only_moves: 0,
    }
}

fn games(s: GameStats, rating: f64, n: usize) -> Vec<GameSummary> {
    vec![GameSummary { stats: s, rating }; n]
}

const ENGINE_LIKE: (f64, f64, f64) = (0.85, 4.0, 0.95);
const BORDERLINE: (f64, f64, f64) = (0.62, 22.0, 0.72);
const CLUB: (f64, f64, f64) = (0.30, 45.0, 0.55);

#[test]
fn the_same_stats_score_lower_or_equal_for_a_higher_rating() {
    let t = Thresholds::default();
    for (top1, acpl, near) in [ENGINE_LIKE, BORDERLINE, CLUB] {
        let mut before = f64::INFINITY;
        for rating in (600..=3000).step_by(100) {
            let v = aggregate(&games(stats(top1, acpl, near), f64::from(rating), 10), &t);
            assert!(
                v.score <= before + 1e-9,
                "{top1}/{acpl}: score rose from {before} to {} at rating {rating}",
                v.score
            );
            before = v.score;
        }
    }
    // Not vacuous: for borderline play the rating decides.
    let low = aggregate(
        &games(stats(BORDERLINE.0, BORDERLINE.1, BORDERLINE.2), 1200.0, 10),
        &t,
    );
    let high = aggregate(
        &games(stats(BORDERLINE.0, BORDERLINE.1, BORDERLINE.2), 2400.0, 10),
        &t,
    );
    assert!(
        low.score > high.score + 10.0,
        "{} vs {}",
        low.score,
        high.score
    );
}

#[test]
fn the_engine_thresholds_rise_with_the_rating() {
    let t = Thresholds::default();
    let threshold = |rating: f64, code: &str| {
        aggregate(&games(stats(0.99, 0.5, 0.99), rating, 10), &t)
            .reasons
            .iter()
            .find(|r| r.code == code)
            .map(|r| r.threshold)
            .expect("the reason is given")
    };
    assert!(threshold(2000.0, "engine_agreement") > threshold(1500.0, "engine_agreement"));
    assert!(threshold(2000.0, "near_best_share") > threshold(1500.0, "near_best_share"));
    // Less loss is expected of a stronger player: the loss threshold falls.
    assert!(threshold(2000.0, "low_centipawn_loss") < threshold(1500.0, "low_centipawn_loss"));
}

#[test]
fn engine_like_play_is_reported_with_its_reasons_heaviest_first() {
    let v = aggregate(
        &games(
            stats(ENGINE_LIKE.0, ENGINE_LIKE.1, ENGINE_LIKE.2),
            1800.0,
            10,
        ),
        &Thresholds::default(),
    );
    assert!(v.report);
    assert!((0.0..=100.0).contains(&v.score) && v.score >= Thresholds::default().report_score);
    assert_eq!(v.games, 10);
    let codes: Vec<&str> = v.reasons.iter().map(|r| r.code).collect();
    assert_eq!(codes[0], "engine_agreement", "{codes:?}");
    assert!(codes.contains(&"low_centipawn_loss") && codes.contains(&"near_best_share"));
    for r in &v.reasons {
        assert!(!r.detail.is_empty());
    }
}

#[test]
fn club_play_is_not_reported_and_gives_no_engine_reason() {
    let v = aggregate(
        &games(stats(CLUB.0, CLUB.1, CLUB.2), 1500.0, 10),
        &Thresholds::default(),
    );
    assert!(!v.report);
    assert!(v.reasons.iter().all(|r| r.code != "engine_agreement"));
}

#[test]
fn too_few_games_or_moves_never_report() {
    let t = Thresholds::default();
    let s = stats(ENGINE_LIKE.0, ENGINE_LIKE.1, ENGINE_LIKE.2);
    let few_games = aggregate(&games(s, 1500.0, t.min_games as usize - 1), &t);
    assert!(!few_games.report);
    assert!(
        few_games.score >= t.report_score,
        "the score is there, the evidence is not"
    );
    let thin = GameStats { counted: 3, ..s };
    assert!(!aggregate(&games(thin, 1500.0, 10), &t).report);
    let none = aggregate(&[], &t);
    assert!(!none.report);
    assert_eq!((none.score, none.games), (0.0, 0));
}

#[test]
fn time_signals_alone_never_report() {
    let t = Thresholds::default();
    let machine_timed = GameStats {
        think_cv: 0.02,
        fast_best_complex: 1.0,
        slow_only_moves: 1.0,
        only_moves: 5,
        ..stats(CLUB.0, CLUB.1, CLUB.2)
    };
    let v = aggregate(&games(machine_timed, 1500.0, 10), &t);
    let codes: Vec<&str> = v.reasons.iter().map(|r| r.code).collect();
    assert!(codes.contains(&"steady_think_time") && codes.contains(&"slow_only_moves"));
    assert!(!v.report, "time alone is no proof: {v:?}");
    // The same timing on top of engine-like moves adds to the score.
    let engine = stats(ENGINE_LIKE.0, ENGINE_LIKE.1, ENGINE_LIKE.2);
    let plain = aggregate(&games(engine, 1500.0, 10), &t).score;
    let timed = aggregate(
        &games(
            GameStats {
                think_cv: 0.02,
                ..engine
            },
            1500.0,
            10,
        ),
        &t,
    )
    .score;
    assert!(timed > plain);
}
