//! The pairing step's choices, case by case: closest ratings first, the window widening with
//! the wait, no immediate rematch while others wait, colours, the bot fallback.

use frontier_engine::Level;
use frontier_pairing::{BotWaits, PairingConfig, Pool, Ratings, Step, Ticket, pair};
use frontier_rules::Color;

const NOW: u64 = 100_000;

fn pool(key: &str) -> Pool {
    key.parse().expect("a pool key")
}

fn ticket(player: &'static str, rating: i32, waited_ms: u64) -> Ticket<&'static str> {
    Ticket {
        player,
        pools: vec![pool("standard:3+0:casual")],
        ratings: Ratings {
            standard: rating,
            ..Ratings::NEW
        },
        since_ms: NOW - waited_ms,
        last_opponent: None,
        white_balance: 0,
    }
}

fn no_bots() -> PairingConfig {
    PairingConfig {
        bots: BotWaits {
            default_ms: 0,
            per_pool: Vec::new(),
        },
        ..PairingConfig::default()
    }
}

fn step(tickets: &[Ticket<&'static str>], config: &PairingConfig) -> Step {
    pair(tickets, NOW, config, &mut || true)
}

/// The pairs as sorted player names, for comparison.
fn pairs(tickets: &[Ticket<&'static str>], step: &Step) -> Vec<[&'static str; 2]> {
    let mut out: Vec<[&str; 2]> = step
        .pairs
        .iter()
        .map(|p| {
            let mut pair = [tickets[p.white].player, tickets[p.black].player];
            pair.sort_unstable();
            pair
        })
        .collect();
    out.sort_unstable();
    out
}

#[test]
fn the_closest_ratings_are_paired_first() {
    let tickets = [
        ticket("a", 1500, 0),
        ticket("b", 1580, 0),
        ticket("c", 1510, 0),
        ticket("d", 1590, 0),
    ];
    assert_eq!(
        pairs(&tickets, &step(&tickets, &no_bots())),
        vec![["a", "c"], ["b", "d"]]
    );
}

#[test]
fn the_window_widens_with_the_wait() {
    // 400 points apart: outside ±100 at first, inside after 6 s (±400) for both.
    let config = no_bots();
    for (waited, paired) in [(0, false), (5_000, false), (5_999, false), (6_000, true)] {
        let tickets = [ticket("a", 1500, waited), ticket("b", 1900, waited)];
        assert_eq!(
            !step(&tickets, &config).pairs.is_empty(),
            paired,
            "after {waited} ms"
        );
    }
    // Both windows must hold the other: a newcomer's ±100 keeps it from a long waiter.
    let tickets = [ticket("a", 1500, 20_000), ticket("b", 1900, 0)];
    assert!(step(&tickets, &config).pairs.is_empty());
    // After 30 s the window is the whole pool, for both.
    let tickets = [ticket("a", 800, 30_000), ticket("b", 2700, 30_000)];
    assert_eq!(step(&tickets, &config).pairs.len(), 1);
}

#[test]
fn no_immediate_rematch_while_someone_else_is_compatible() {
    let mut a = ticket("a", 1500, 0);
    a.last_opponent = Some("b");
    let tickets = [a.clone(), ticket("b", 1500, 0), ticket("c", 1550, 0)];
    assert_eq!(
        pairs(&tickets, &step(&tickets, &no_bots())),
        vec![["a", "c"]]
    );
    // Alone together, they play again.
    let tickets = [a, ticket("b", 1500, 0)];
    assert_eq!(
        pairs(&tickets, &step(&tickets, &no_bots())),
        vec![["a", "b"]]
    );
}

#[test]
fn white_goes_to_who_had_it_less_often_else_the_coin() {
    let mut a = ticket("a", 1500, 0);
    a.white_balance = 2;
    let tickets = [a, ticket("b", 1500, 0)];
    let s = step(&tickets, &no_bots());
    assert_eq!(tickets[s.pairs[0].white].player, "b");

    let tickets = [ticket("a", 1500, 0), ticket("b", 1500, 0)];
    for coin in [true, false] {
        let s = pair(&tickets, NOW, &no_bots(), &mut || coin);
        let white = tickets[s.pairs[0].white].player;
        assert_eq!(white == "a", coin, "the coin decides an even balance");
    }
}

#[test]
fn a_ticket_in_several_pools_is_paired_in_one() {
    let mut a = ticket("a", 1500, 0);
    a.pools = vec![pool("standard:3+0:casual"), pool("hidden:3+0:casual")];
    let mut b = ticket("b", 1500, 0);
    b.pools = vec![pool("hidden:3+0:casual")];
    let c = ticket("c", 1500, 0);
    let tickets = [a, b, c];
    let s = step(&tickets, &no_bots());
    // a can meet b (hidden) or c (standard); either way one of them waits on.
    assert_eq!(s.pairs.len(), 1);
    let p = s.pairs[0];
    assert!(tickets[p.white].pools.contains(&p.pool) && tickets[p.black].pools.contains(&p.pool));
}

#[test]
fn a_lone_player_gets_a_bot_after_the_wait_at_the_nearest_level() {
    let config = PairingConfig::default();
    let alone = [ticket("a", 1900, 19_999)];
    assert_eq!(step(&alone, &config), Step::default());
    let alone = [ticket("a", 1900, 20_000)];
    let s = step(&alone, &config);
    assert_eq!(s.pairs, vec![]);
    assert_eq!(s.bots.len(), 1);
    assert_eq!(s.bots[0].level, Level::Hard);
    assert_eq!(s.bots[0].pool, pool("standard:3+0:casual"));

    // More Whites recently: the player gets Black against the bot.
    let mut a = ticket("a", 900, 25_000);
    a.white_balance = 1;
    let s = step(&[a], &config);
    assert_eq!(
        (s.bots[0].level, s.bots[0].color),
        (Level::Easy, Color::Black)
    );

    // A person is always preferred, however long the wait.
    let tickets = [ticket("a", 1500, 40_000), ticket("b", 2500, 40_000)];
    let s = step(&tickets, &config);
    assert_eq!((s.pairs.len(), s.bots.len()), (1, 0));

    // A wait of 0 turns the fallback off in that pool.
    let off = PairingConfig {
        bots: BotWaits {
            default_ms: 20_000,
            per_pool: vec![(pool("standard:3+0:casual"), 0)],
        },
        ..PairingConfig::default()
    };
    assert_eq!(step(&[ticket("a", 1500, 60_000)], &off), Step::default());
}
