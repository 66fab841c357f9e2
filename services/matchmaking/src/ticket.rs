//! A ticket and a pairing as matchmaking stores them (JSON in Redis), and their conversion
//! into the pure pairing library's types.

use frontier_pairing::{Pool, Ratings, Ticket};
use serde::{Deserialize, Serialize};

/// Who seeks: as the gateway authenticated them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seeker {
    /// Player id (UUID).
    pub id: String,
    /// Display name.
    pub name: String,
    /// A guest (casual pools only).
    pub guest: bool,
}

/// A waiting player's ticket. A new seek makes a new ticket with a new `generation`; the
/// atomic steps in Redis act on a ticket only if its generation is still the one they read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredTicket {
    /// Unique per seek (UUID v4).
    pub generation: String,
    /// Who.
    pub seeker: Seeker,
    /// Pool keys, in the player's order of preference.
    pub pools: Vec<String>,
    /// Ratings in standard, hidden, atomic (whole points; 1500 without one).
    pub ratings: [i32; 3],
    /// When the player started waiting (Unix ms); kept when a ticket returns to its pools.
    pub since_ms: u64,
    /// The opponent of the player's last matchmade game.
    pub last_opponent: Option<String>,
    /// Recent games with White minus recent games with Black.
    pub white_balance: i32,
}

impl StoredTicket {
    /// The ticket for the pairing step (pool keys that no longer parse are dropped: a
    /// ticket stored by a newer version with pools this one does not know).
    pub fn for_pairing(&self) -> Ticket<String> {
        Ticket {
            player: self.seeker.id.clone(),
            pools: self.pools.iter().filter_map(|p| p.parse().ok()).collect(),
            ratings: Ratings {
                standard: self.ratings[0],
                hidden: self.ratings[1],
                atomic: self.ratings[2],
            },
            since_ms: self.since_ms,
            last_opponent: self.last_opponent.clone(),
            white_balance: self.white_balance,
        }
    }
}

/// One seat of a matchmade game.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Seat {
    /// A person.
    Player(Seeker),
    /// The computer at this level (`easy`, `medium`, `hard`).
    Bot(String),
}

/// A pairing claimed in Redis, until its game exists (or it is given up and its tickets go
/// back). Its id is the match id game-session creates the game under, at most once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchRecord {
    /// Match id (UUID v7).
    pub id: String,
    /// The pool key it was paired in.
    pub pool: String,
    /// Rated (never against a bot).
    pub rated: bool,
    /// White.
    pub white: Seat,
    /// Black.
    pub black: Seat,
    /// The tickets it took (one or two), as they were: returned as they were on failure.
    pub tickets: Vec<StoredTicket>,
    /// When it was paired (Unix ms).
    pub paired_at_ms: u64,
}

impl MatchRecord {
    /// The pool.
    pub fn pool(&self) -> Option<Pool> {
        self.pool.parse().ok()
    }
}
