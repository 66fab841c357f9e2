//! Levels and time: what each level may spend, how it errs on purpose, and the share of
//! its clock a bot may use.
//!
//! | level  | nodes                                   | time cap | imprecision: seeded softmax over the moves within a margin of the best | hidden samples |
//! |--------|-----------------------------------------|----------|-------------------------------------------------------|----|
//! | Easy   | 3 000 (atomic 1 000, hidden 1 500)                    | 0.15 s   | margin 150 cp, T = 60 cp (atomic, hidden: 200 cp, T = 80 cp)  | 2 |
//! | Medium | 40 000 (hidden 6 000)                  | 0.8 s    | margin 30 cp, T = 12 cp (hidden: 80 cp, T = 30 cp)    | 3 |
//! | Hard   | 400 000 (hidden 500 000)                | 2.5 s    | none: the best move                                   | 6 |
//!
//! The node budget is the primary limit, so a level plays the same move for the same
//! request and seed on any machine; the time cap only protects a slow or busy machine.
//! With a clock the time is further capped by the fair share [`fair_share`]:
//! remaining/30 + increment/2, and never more than a third of what remains — so a bot
//! cannot flag in a game of one minute or more. A forced mate is always played, whatever
//! the level.

use std::time::Duration;

use frontier_rules::{Move, Variant};

use crate::rng::Rng;
use crate::search::MATE_BOUND;
use crate::{ClockInfo, Level};

/// What a level spends and how it picks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Profile {
    /// Node budget of the whole decision (all samples together in hidden chess).
    pub(crate) nodes: u64,
    /// Wall-clock cap of one decision.
    pub(crate) time_cap: Duration,
    /// Moves within this many centipawns of the best may be picked.
    pub(crate) margin: i32,
    /// Softmax temperature in centipawns (0: always the best).
    pub(crate) temperature: f64,
    /// Hidden chess: layouts sampled per decision.
    pub(crate) samples: usize,
    /// log2 of the transposition table's entries.
    pub(crate) tt_bits: u32,
}

impl Level {
    /// What this level spends in `variant`. The variants differ where the ladder showed they
    /// must: atomic games turn on one blunder, so Easy there searches less and errs more;
    /// hidden games carry luck (unknown identities), so Easy and Medium there are held
    /// further below Hard.
    pub(crate) fn profile(self, variant: Variant) -> Profile {
        match (self, variant) {
            (Level::Easy, Variant::Atomic) => Profile {
                nodes: 1_000,
                time_cap: Duration::from_millis(150),
                margin: 200,
                temperature: 80.0,
                samples: 2,
                tt_bits: 14,
            },
            (Level::Easy, Variant::Hidden) => Profile {
                nodes: 1_500,
                time_cap: Duration::from_millis(150),
                margin: 200,
                temperature: 80.0,
                samples: 2,
                tt_bits: 14,
            },
            (Level::Easy, _) => Profile {
                nodes: 3_000,
                time_cap: Duration::from_millis(150),
                margin: 150,
                temperature: 60.0,
                samples: 2,
                tt_bits: 14,
            },
            (Level::Medium, Variant::Hidden) => Profile {
                nodes: 6_000,
                time_cap: Duration::from_millis(800),
                margin: 80,
                temperature: 30.0,
                samples: 3,
                tt_bits: 16,
            },
            (Level::Medium, _) => Profile {
                nodes: 40_000,
                time_cap: Duration::from_millis(800),
                margin: 30,
                temperature: 12.0,
                samples: 4,
                tt_bits: 16,
            },
            (Level::Hard, Variant::Hidden) => Profile {
                nodes: 500_000,
                time_cap: Duration::from_millis(2_500),
                margin: 0,
                temperature: 0.0,
                samples: 6,
                tt_bits: 18,
            },
            (Level::Hard, _) => Profile {
                nodes: 400_000,
                time_cap: Duration::from_millis(2_500),
                margin: 0,
                temperature: 0.0,
                samples: 6,
                tt_bits: 18,
            },
        }
    }

    /// The node budget of one decision at this level in `variant`.
    pub fn node_budget(self, variant: Variant) -> u64 {
        self.profile(variant).nodes
    }

    /// The wall-clock cap of one decision at this level (the same in every variant).
    pub fn time_cap(self) -> Duration {
        self.profile(Variant::Standard).time_cap
    }
}

/// The most a bot may think with this clock: remaining/30 + increment/2, and never more
/// than a third of the remaining time.
pub fn fair_share(clock: &ClockInfo) -> Duration {
    let share = clock.remaining_ms / 30 + clock.increment_ms / 2;
    Duration::from_millis(share.min(clock.remaining_ms / 3))
}

/// The wall-clock time a decision at `level` may take: the level's cap, and with a clock
/// no more than [`fair_share`].
pub fn time_allocation(level: Level, clock: Option<&ClockInfo>) -> Duration {
    let cap = level.time_cap();
    match clock {
        Some(clock) => cap.min(fair_share(clock)),
        None => cap,
    }
}

/// Picks among scored moves (best first): the best for a precise level, else a seeded
/// softmax over the moves within the margin. A forced mate is always taken.
pub(crate) fn choose(moves: &[(Move, i32)], profile: &Profile, rng: &mut Rng) -> usize {
    let Some(&(_, best)) = moves.first() else {
        return 0;
    };
    if profile.temperature <= 0.0 || best > MATE_BOUND {
        return 0;
    }
    let weights: Vec<f64> = moves
        .iter()
        .take_while(|(_, s)| *s >= best - profile.margin)
        .map(|(_, s)| (f64::from(s - best) / profile.temperature).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let mut x = rng.unit() * total;
    for (i, w) in weights.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fair_share_is_a_thirtieth_plus_half_the_increment_capped_by_a_third() {
        let c = ClockInfo {
            remaining_ms: 60_000,
            increment_ms: 0,
        };
        assert_eq!(fair_share(&c), Duration::from_millis(2_000));
        let c = ClockInfo {
            remaining_ms: 900,
            increment_ms: 10_000,
        };
        assert_eq!(fair_share(&c), Duration::from_millis(300));
    }

    #[test]
    fn allocation_never_exceeds_the_fair_share_or_the_level_cap() {
        for level in Level::ALL {
            for remaining_ms in [0, 1, 50, 999, 10_000, 60_000, 180_000, 3_600_000] {
                for increment_ms in [0, 1_000, 2_000, 30_000] {
                    let clock = ClockInfo {
                        remaining_ms,
                        increment_ms,
                    };
                    let t = time_allocation(level, Some(&clock));
                    assert!(t <= fair_share(&clock));
                    assert!(t <= level.time_cap());
                    assert!(t.as_millis() as u64 * 3 <= remaining_ms + 2);
                }
            }
        }
    }

    #[test]
    fn a_one_minute_game_without_increment_never_flags() {
        // Spending the allocation on every move, the clock never reaches zero.
        for level in Level::ALL {
            let mut remaining_ms: u64 = 60_000;
            for _ in 0..500 {
                let t = time_allocation(
                    level,
                    Some(&ClockInfo {
                        remaining_ms,
                        increment_ms: 0,
                    }),
                );
                remaining_ms -= t.as_millis() as u64;
            }
            assert!(remaining_ms > 0);
        }
    }
}
