//! The pools: variant × time control × rated/casual, 42 in all.

use std::fmt;
use std::str::FromStr;

use frontier_rules::Variant;

/// A pool's time control: one of the seven the platform offers ([`PoolClock::ALL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PoolClock {
    minutes: u8,
    increment: u8,
}

impl PoolClock {
    /// The time controls of the pools: 1+0, 3+0, 3+2, 5+0, 10+0, 15+10, 30+0.
    pub const ALL: [PoolClock; 7] = [
        PoolClock::new_unchecked(1, 0),
        PoolClock::new_unchecked(3, 0),
        PoolClock::new_unchecked(3, 2),
        PoolClock::new_unchecked(5, 0),
        PoolClock::new_unchecked(10, 0),
        PoolClock::new_unchecked(15, 10),
        PoolClock::new_unchecked(30, 0),
    ];

    const fn new_unchecked(minutes: u8, increment: u8) -> PoolClock {
        PoolClock { minutes, increment }
    }

    /// The pool clock of `minutes` + `increment` seconds, if the platform has that pool.
    pub fn new(minutes: u32, increment: u32) -> Option<PoolClock> {
        PoolClock::ALL
            .into_iter()
            .find(|c| u32::from(c.minutes) == minutes && u32::from(c.increment) == increment)
    }

    /// Base time in minutes.
    pub fn minutes(self) -> u32 {
        u32::from(self.minutes)
    }

    /// Increment in seconds.
    pub fn increment(self) -> u32 {
        u32::from(self.increment)
    }
}

impl fmt::Display for PoolClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}+{}", self.minutes, self.increment)
    }
}

/// A pool: who may be paired with whom. Two tickets meet only in a pool both name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pool {
    /// The variant.
    pub variant: Variant,
    /// The time control.
    pub clock: PoolClock,
    /// Rated (registered players only) or casual.
    pub rated: bool,
}

impl Pool {
    /// Every pool, in a fixed order (variant, clock, casual before rated).
    pub fn all() -> impl Iterator<Item = Pool> {
        Variant::ALL.into_iter().flat_map(|variant| {
            PoolClock::ALL.into_iter().flat_map(move |clock| {
                [false, true].into_iter().map(move |rated| Pool {
                    variant,
                    clock,
                    rated,
                })
            })
        })
    }
}

/// The pool's key, `standard:3+2:rated` or `hidden:1+0:casual`: what Redis keys, metric
/// labels and configuration use.
impl fmt::Display for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.rated { "rated" } else { "casual" };
        write!(f, "{}:{}:{kind}", self.variant, self.clock)
    }
}

/// A string that is not a pool key; holds what was rejected (at most 64 characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a pool (e.g. `standard:3+2:rated`)")]
pub struct ParsePoolError(pub String);

impl FromStr for Pool {
    type Err = ParsePoolError;
    fn from_str(s: &str) -> Result<Pool, ParsePoolError> {
        let bad = || ParsePoolError(s.chars().take(64).collect());
        let mut parts = s.split(':');
        let (Some(variant), Some(clock), Some(kind), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let variant: Variant = variant.parse().map_err(|_| bad())?;
        let (minutes, increment) = clock.split_once('+').ok_or_else(bad)?;
        let clock = PoolClock::new(
            minutes.parse().map_err(|_| bad())?,
            increment.parse().map_err(|_| bad())?,
        )
        .ok_or_else(bad)?;
        let rated = match kind {
            "rated" => true,
            "casual" => false,
            _ => return Err(bad()),
        };
        Ok(Pool {
            variant,
            clock,
            rated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forty_two_pools_each_round_trips_through_its_key() {
        let pools: Vec<Pool> = Pool::all().collect();
        assert_eq!(pools.len(), 42);
        for pool in pools {
            assert_eq!(pool.to_string().parse::<Pool>(), Ok(pool));
        }
    }

    #[test]
    fn keys_that_name_no_pool_are_refused() {
        for key in [
            "",
            "standard:3+1:rated",
            "chess:3+0:rated",
            "standard:3+0",
            "standard:3+0:rated:x",
            "standard:3:rated",
            "standard:3+0:ranked",
            "standard:-3+0:rated",
        ] {
            assert!(key.parse::<Pool>().is_err(), "{key}");
        }
    }
}
