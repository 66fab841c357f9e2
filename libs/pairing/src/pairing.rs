//! One pairing step: the waiting tickets and the time in, the pairs to make and the bot
//! fallbacks out.
//!
//! The rules, in order:
//! 1. Two tickets are **compatible** in a pool both name when they belong to two different
//!    players and each one's window (for its own wait) holds the other's rating in that
//!    variant ([`compatible`]).
//! 2. Pairs are chosen greedily, closest ratings first (ties: the longest-waiting pair
//!    first), each ticket at most once, in exactly one of its pools. A pair of players who
//!    met in their last matchmade game (a **rematch**) is considered only after every other
//!    pair: it is made only when neither has anyone else compatible left this step.
//! 3. Because every compatible pair is considered, no two compatible tickets are left
//!    waiting after a step (the matching is maximal).
//! 4. White goes to the player who had White less often recently; on a tie a coin decides.
//! 5. A ticket left unpaired that has waited at least its pool's bot wait (the first of its
//!    pools, in its order, where that holds) gets a bot of the level nearest its rating, in a
//!    casual game.

use std::collections::HashMap;
use std::hash::Hash;

use frontier_engine::Level;
use frontier_rules::{Color, Variant};

use crate::{PairingConfig, Pool, level_for_rating};

/// A player's rating in each variant, in whole points (a player without one: 1500).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ratings {
    /// Standard chess.
    pub standard: i32,
    /// Hidden chess.
    pub hidden: i32,
    /// Atomic chess.
    pub atomic: i32,
}

impl Ratings {
    /// Where every player starts: 1500 in each variant.
    pub const NEW: Ratings = Ratings {
        standard: 1500,
        hidden: 1500,
        atomic: 1500,
    };

    /// The rating in `variant`.
    pub fn get(&self, variant: Variant) -> i32 {
        match variant {
            Variant::Standard => self.standard,
            Variant::Hidden => self.hidden,
            Variant::Atomic => self.atomic,
        }
    }
}

/// A player waiting for a game, in one or several pools at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket<P> {
    /// Who waits.
    pub player: P,
    /// Where, in the player's order of preference.
    pub pools: Vec<Pool>,
    /// The player's ratings.
    pub ratings: Ratings,
    /// Since when (Unix milliseconds). A ticket returned to the pool keeps it.
    pub since_ms: u64,
    /// The opponent of the player's last matchmade game, if any.
    pub last_opponent: Option<P>,
    /// Recent games with White minus recent games with Black.
    pub white_balance: i32,
}

impl<P> Ticket<P> {
    /// How long the ticket has waited at `now_ms` (0 if `since_ms` is in the future: clocks
    /// of two instances may disagree a little).
    pub fn wait_ms(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.since_ms)
    }
}

/// Two tickets to put in one game. Indices are into the step's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    /// The pool they meet in.
    pub pool: Pool,
    /// The ticket that plays White.
    pub white: usize,
    /// The ticket that plays Black.
    pub black: usize,
}

/// A ticket that gets a bot. Bot games are casual, whatever the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BotMatch {
    /// The ticket (an index into the step's input).
    pub ticket: usize,
    /// The pool whose wait ran out: its variant and clock are the game's.
    pub pool: Pool,
    /// The bot's level.
    pub level: Level,
    /// The player's colour.
    pub color: Color,
}

/// What one step decided.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Step {
    /// Pairs of people.
    pub pairs: Vec<Pair>,
    /// Bot fallbacks.
    pub bots: Vec<BotMatch>,
}

/// Whether `a` and `b` may be paired in `pool` at `now_ms` (rule 1 of the module).
pub fn compatible<P: PartialEq>(
    a: &Ticket<P>,
    b: &Ticket<P>,
    pool: Pool,
    now_ms: u64,
    config: &PairingConfig,
) -> bool {
    if a.player == b.player || !a.pools.contains(&pool) || !b.pools.contains(&pool) {
        return false;
    }
    let difference =
        i64::from(a.ratings.get(pool.variant)).abs_diff(i64::from(b.ratings.get(pool.variant)));
    config.window.accepts(a.wait_ms(now_ms), difference)
        && config.window.accepts(b.wait_ms(now_ms), difference)
}

/// A candidate pair of one step.
struct Edge {
    rematch: bool,
    difference: u64,
    oldest_since: u64,
    pool_rank: usize,
    pool: Pool,
    a: usize,
    b: usize,
}

/// A pool's tickets as (rating in its variant, index), sorted.
type Members = Vec<(i32, usize)>;

/// Candidates considered per ticket and pool in the first pass (the nearest ratings).
const CANDIDATES: usize = 8;

/// Two different players whose windows both hold `difference`.
fn compatible_pair<P>(
    tickets: &[Ticket<P>],
    player_of: &[usize],
    a: usize,
    b: usize,
    difference: u64,
    now_ms: u64,
    config: &PairingConfig,
) -> bool {
    player_of[a] != player_of[b]
        && config
            .window
            .accepts(tickets[a].wait_ms(now_ms), difference)
        && config
            .window
            .accepts(tickets[b].wait_ms(now_ms), difference)
}

/// The two met in the last matchmade game of either.
fn rematch<P: PartialEq>(a: &Ticket<P>, b: &Ticket<P>) -> bool {
    a.last_opponent.as_ref() == Some(&b.player) || b.last_opponent.as_ref() == Some(&a.player)
}

/// The pair of `a` and `b` in `pool`, White to who had it less often (else the coin).
fn colours<P>(
    tickets: &[Ticket<P>],
    pool: Pool,
    a: usize,
    b: usize,
    coin: &mut dyn FnMut() -> bool,
) -> Pair {
    let a_white = match tickets[a].white_balance.cmp(&tickets[b].white_balance) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => coin(),
    };
    let (white, black) = if a_white { (a, b) } else { (b, a) };
    Pair { pool, white, black }
}

/// One pairing step over `tickets` at `now_ms` (the rules of the module). `coin` is asked
/// for a random bit whenever the colours are otherwise even.
pub fn pair<P: Eq + Hash>(
    tickets: &[Ticket<P>],
    now_ms: u64,
    config: &PairingConfig,
    coin: &mut dyn FnMut() -> bool,
) -> Step {
    // Each ticket's player as a small number: a player holding two tickets (the service
    // never lets that happen) is still put in one game at most.
    let mut players: HashMap<&P, usize> = HashMap::with_capacity(tickets.len());
    let player_of: Vec<usize> = tickets
        .iter()
        .map(|t| {
            let next = players.len();
            *players.entry(&t.player).or_insert(next)
        })
        .collect();
    let mut edges = Vec::new();
    // Each pool's members, sorted by rating, kept for the sweep below.
    let mut pools: Vec<(Pool, Members)> = Vec::new();
    for (pool_rank, pool) in Pool::all().enumerate() {
        let mut members: Vec<(i32, usize)> = tickets
            .iter()
            .enumerate()
            .filter(|(_, t)| t.pools.contains(&pool))
            .map(|(i, t)| (t.ratings.get(pool.variant), i))
            .collect();
        if members.len() < 2 {
            continue;
        }
        members.sort_unstable();
        for (k, &(low_rating, a)) in members.iter().enumerate() {
            let a_wait = tickets[a].wait_ms(now_ms);
            let mut candidates = 0;
            for &(high_rating, b) in &members[k + 1..] {
                let difference = i64::from(high_rating).abs_diff(i64::from(low_rating));
                // Sorted by rating: once `a`'s window is passed, it stays passed; and the
                // nearest few are enough candidates (the sweep below keeps the step
                // maximal), so a crowd of equal ratings costs n·K, not n².
                if candidates >= CANDIDATES || !config.window.accepts(a_wait, difference) {
                    break;
                }
                if !compatible_pair(tickets, &player_of, a, b, difference, now_ms, config) {
                    continue;
                }
                candidates += 1;
                edges.push(Edge {
                    rematch: rematch(&tickets[a], &tickets[b]),
                    difference,
                    oldest_since: tickets[a].since_ms.min(tickets[b].since_ms),
                    pool_rank,
                    pool,
                    a: a.min(b),
                    b: a.max(b),
                });
            }
        }
        pools.push((pool, members));
    }
    edges.sort_unstable_by_key(|e| {
        (
            e.rematch,
            e.difference,
            e.oldest_since,
            e.a,
            e.b,
            e.pool_rank,
        )
    });

    let mut taken = vec![false; players.len()];
    let mut step = Step::default();
    for edge in edges {
        let (pa, pb) = (player_of[edge.a], player_of[edge.b]);
        if taken[pa] || taken[pb] {
            continue;
        }
        taken[pa] = true;
        taken[pb] = true;
        step.pairs
            .push(colours(tickets, edge.pool, edge.a, edge.b, coin));
    }

    // The sweep: any two tickets still free and compatible are paired (first without
    // rematches, then with), so no compatible pair is left waiting whatever the cap.
    for allow_rematch in [false, true] {
        for (pool, members) in &pools {
            for (k, &(low_rating, a)) in members.iter().enumerate() {
                if taken[player_of[a]] {
                    continue;
                }
                let a_wait = tickets[a].wait_ms(now_ms);
                for &(high_rating, b) in &members[k + 1..] {
                    let difference = i64::from(high_rating).abs_diff(i64::from(low_rating));
                    if !config.window.accepts(a_wait, difference) {
                        break;
                    }
                    if taken[player_of[b]]
                        || !compatible_pair(tickets, &player_of, a, b, difference, now_ms, config)
                        || (!allow_rematch && rematch(&tickets[a], &tickets[b]))
                    {
                        continue;
                    }
                    taken[player_of[a]] = true;
                    taken[player_of[b]] = true;
                    step.pairs.push(colours(tickets, *pool, a, b, coin));
                    break;
                }
            }
        }
    }

    for (i, ticket) in tickets.iter().enumerate() {
        if taken[player_of[i]] {
            continue;
        }
        let wait = ticket.wait_ms(now_ms);
        let Some(pool) = ticket.pools.iter().copied().find(|pool| {
            config
                .bots
                .for_pool(*pool)
                .is_some_and(|bot_wait| wait >= bot_wait)
        }) else {
            continue;
        };
        taken[player_of[i]] = true;
        let color = match ticket.white_balance.cmp(&0) {
            std::cmp::Ordering::Greater => Color::Black,
            std::cmp::Ordering::Less => Color::White,
            std::cmp::Ordering::Equal if coin() => Color::White,
            std::cmp::Ordering::Equal => Color::Black,
        };
        step.bots.push(BotMatch {
            ticket: i,
            pool,
            level: level_for_rating(ticket.ratings.get(pool.variant)),
            color,
        });
    }
    step
}

/// The wait a new ticket can expect, from the times to pair of recent pairings in its pool
/// (milliseconds): their median, or `None` without any.
pub fn estimate_wait(recent_ms: &[u64]) -> Option<u64> {
    if recent_ms.is_empty() {
        return None;
    }
    let mut sorted = recent_ms.to_vec();
    sorted.sort_unstable();
    Some(sorted[sorted.len() / 2])
}
