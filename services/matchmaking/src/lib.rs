//! The matchmaking service: quick-match seeks in pools, paired by rating (a person first,
//! then a clearly labelled bot), on any number of instances with tickets in Redis.
//!
//! `ticket` (the stored forms), `store` (Redis: tickets, pools and the atomic steps — why a
//! script and not a lease is written there), `matchmaker` (seek, cancel, status, the
//! pairing step and game creation over seams: [`GameMaker`], [`Notifier`],
//! [`RatingSource`]).

pub mod matchmaker;
pub mod store;
pub mod ticket;

pub use matchmaker::{
    CreateError, GameMaker, MatchError, MatchedNotice, Matchmaker, NoRatings, Notifier, Opponent,
    RatingSource, SeekAnswer, Settings, Status, StepReport, notices,
};
pub use store::{Cancelled, Placed, RedisTickets, StoreError};
pub use ticket::{MatchRecord, Seat, Seeker, StoredTicket};
