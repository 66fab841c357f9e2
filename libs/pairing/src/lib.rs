//! Matchmaking's pairing logic, pure: given the waiting tickets and the time, which pairs to
//! make and which players get a bot. No I/O, no async, no clock of its own (the time is an
//! argument, in Unix milliseconds) and no random source of its own (a coin is passed in).
//!
//! - [`pool`]: the pools players seek in (variant × time control × rated/casual).
//! - [`config`]: the rating window and how it widens with the wait, the bot fallback's wait
//!   per pool, the rating each bot level stands for.
//! - [`pairing`]: tickets, one pairing step ([`pair`]), the wait estimate.

pub mod config;
pub mod pairing;
pub mod pool;

pub use config::{BotWaits, PairingConfig, WindowSchedule, level_for_rating, level_rating};
pub use pairing::{BotMatch, Pair, Ratings, Step, Ticket, compatible, estimate_wait, pair};
pub use pool::{ParsePoolError, Pool, PoolClock};
