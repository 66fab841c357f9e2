//! Property tests of the pairing step: never a ticket (or a player) twice, never outside the
//! window for its wait, and no two compatible tickets left waiting after a step.

use std::collections::HashSet;

use frontier_pairing::{
    BotWaits, PairingConfig, Pool, Ratings, Ticket, WindowSchedule, compatible, pair,
};
use proptest::prelude::*;

const NOW: u64 = 1_000_000;

/// Six pools that overlap in variant and clock, so multi-pool tickets meet in several.
fn pools() -> Vec<Pool> {
    [
        "standard:3+0:casual",
        "standard:3+2:casual",
        "standard:3+0:rated",
        "hidden:3+0:casual",
        "atomic:1+0:casual",
        "hidden:30+0:rated",
    ]
    .iter()
    .map(|k| k.parse().expect("a pool key"))
    .collect()
}

fn ticket() -> impl Strategy<Value = Ticket<u8>> {
    (
        0u8..16,
        proptest::sample::subsequence(pools(), 1..=3),
        (600i32..2600, 600i32..2600, 600i32..2600),
        0u64..45_000,
        proptest::option::of(0u8..16),
        -3i32..=3,
    )
        .prop_map(
            |(player, pools, (standard, hidden, atomic), waited, last_opponent, white_balance)| {
                Ticket {
                    player,
                    pools,
                    ratings: Ratings {
                        standard,
                        hidden,
                        atomic,
                    },
                    since_ms: NOW - waited,
                    last_opponent,
                    white_balance,
                }
            },
        )
}

fn config() -> impl Strategy<Value = PairingConfig> {
    (50u32..200, 0u32..100, 5_000u64..40_000, 0u64..40_000).prop_map(
        |(initial, widen_per_second, full_after_ms, bot_ms)| PairingConfig {
            window: WindowSchedule {
                initial,
                widen_per_second,
                full_after_ms,
            },
            bots: BotWaits {
                default_ms: bot_ms,
                per_pool: vec![(pools()[0], 0)],
            },
        },
    )
}

/// The window, computed here from the schedule rather than through the code under test.
fn within_window(config: &PairingConfig, wait: u64, difference: u64) -> bool {
    let w = &config.window;
    wait >= w.full_after_ms
        || difference <= u64::from(w.initial) + u64::from(w.widen_per_second) * wait / 1000
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_twice_never_outside_the_window_never_two_compatible_left(
        tickets in proptest::collection::vec(ticket(), 0..40),
        rematches in proptest::collection::vec(any::<bool>(), 40),
        config in config(),
        coins in proptest::collection::vec(any::<bool>(), 64),
    ) {
        // Make immediate rematches common: a ticket's last opponent is often the player of
        // the next ticket.
        let mut tickets = tickets;
        let n = tickets.len();
        for i in 0..n {
            if rematches[i] {
                tickets[i].last_opponent = Some(tickets[(i + 1) % n].player);
            }
        }
        let mut coins = coins.into_iter().cycle();
        let step = pair(&tickets, NOW, &config, &mut || coins.next().unwrap_or(false));

        // Never a ticket twice, never a player twice.
        let mut used = HashSet::new();
        let mut players = HashSet::new();
        let matched = step
            .pairs
            .iter()
            .flat_map(|p| [p.white, p.black])
            .chain(step.bots.iter().map(|b| b.ticket));
        for i in matched {
            prop_assert!(used.insert(i), "ticket {i} matched twice");
            prop_assert!(players.insert(tickets[i].player), "player {} matched twice", tickets[i].player);
        }

        // Never outside the window for its wait, always in a pool both named.
        for p in &step.pairs {
            let (w, b) = (&tickets[p.white], &tickets[p.black]);
            prop_assert!(w.pools.contains(&p.pool) && b.pools.contains(&p.pool));
            prop_assert_ne!(w.player, b.player);
            let difference = i64::from(w.ratings.get(p.pool.variant))
                .abs_diff(i64::from(b.ratings.get(p.pool.variant)));
            prop_assert!(within_window(&config, NOW - w.since_ms, difference));
            prop_assert!(within_window(&config, NOW - b.since_ms, difference));
        }

        // A bot only after the pool's wait, and never in a pool where it is off.
        for bot in &step.bots {
            let t = &tickets[bot.ticket];
            prop_assert!(t.pools.contains(&bot.pool));
            let wait = config.bots.for_pool(bot.pool);
            prop_assert!(wait.is_some_and(|w| NOW - t.since_ms >= w));
            prop_assert!(bot.pool != pools()[0], "the fallback is off in the first pool");
        }

        // No two compatible tickets both left without a person (the matching is maximal):
        // every compatible pair of tickets that waited through this step was considered.
        let paired: HashSet<usize> = step.pairs.iter().flat_map(|p| [p.white, p.black]).collect();
        let paired_players: HashSet<u8> = paired.iter().map(|i| tickets[*i].player).collect();
        let left: Vec<usize> = (0..tickets.len())
            .filter(|i| !paired_players.contains(&tickets[*i].player))
            .collect();
        for (k, &i) in left.iter().enumerate() {
            for &j in &left[k + 1..] {
                for pool in Pool::all() {
                    prop_assert!(
                        !compatible(&tickets[i], &tickets[j], pool, NOW, &config),
                        "tickets {i} and {j} are compatible in {pool} and both left without a person"
                    );
                }
            }
        }
    }
}
