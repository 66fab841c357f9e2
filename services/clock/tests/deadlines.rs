//! The deadline sets on a real Redis node: what a claim takes, across every shard, within
//! its limit; a claim's lease; a released claim.

use std::collections::HashSet;
use std::time::Duration;

use frontier_platform::deadlines::RedisDeadlines;
use frontier_platform::{GameId, Namespace};

#[tokio::test]
async fn claims_walk_every_shard_within_the_limit_and_a_lapsed_lease_is_claimed_again() {
    let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("valid");
    let deadlines = RedisDeadlines::connect(&frontier_testkit::redis_url(), ns)
        .await
        .expect("Redis (run the tests with `make test`)");
    // Forty games, which fall in most of the 16 shards, due at 100; one due later.
    let games: Vec<GameId> = (0..40).map(|_| GameId::new()).collect();
    for game in &games {
        deadlines.schedule(game, Some(100)).await.expect("schedule");
    }
    let later = GameId::new();
    deadlines
        .schedule(&later, Some(5_000))
        .await
        .expect("schedule");
    let lease = Duration::from_millis(1_000);

    assert!(
        deadlines
            .claim_due(99, lease, 100)
            .await
            .expect("claim")
            .is_empty()
    );
    let first = deadlines.claim_due(100, lease, 25).await.expect("claim");
    assert_eq!(first.len(), 25, "at most the limit");
    let second = deadlines.claim_due(100, lease, 25).await.expect("claim");
    assert_eq!(second.len(), 15, "the rest");
    assert!(
        deadlines
            .claim_due(100, lease, 25)
            .await
            .expect("claim")
            .is_empty()
    );
    let claimed: HashSet<GameId> = first.iter().chain(&second).map(|(g, _)| *g).collect();
    assert_eq!(
        claimed,
        games.iter().copied().collect(),
        "each due game once"
    );
    assert!(first.iter().chain(&second).all(|(_, at)| *at == 100));

    // One is handled (released); the others' leases lapse and they are claimed again (with
    // deadline 0: a re-claim), and the later deadline comes due in its turn.
    deadlines.release(&games[0]).await.expect("release");
    let again = deadlines.claim_due(1_101, lease, 100).await.expect("claim");
    let again_games: HashSet<GameId> = again.iter().map(|(g, _)| *g).collect();
    assert_eq!(again_games.len(), 39);
    assert!(
        !again_games.contains(&games[0]),
        "a released claim stays released"
    );
    assert!(again.iter().all(|(_, at)| *at == 0));
    let due_later = deadlines
        .claim_due(5_000, Duration::from_secs(60), 100)
        .await
        .expect("claim");
    assert!(due_later.contains(&(later, 5_000)), "{due_later:?}");
    assert_eq!(deadlines.tracked().await.expect("tracked"), 40);
}
