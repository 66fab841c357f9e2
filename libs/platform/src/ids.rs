//! Newtype ids: a game id can never be passed where a player id is expected.

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

/// An id that is not a UUID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a valid id")]
pub struct ParseIdError(pub String);

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub Uuid);

        impl $name {
            /// A new random id (UUIDv7: time-ordered, so indexes stay compact).
            pub fn new() -> $name {
                $name(Uuid::now_v7())
            }
        }

        impl $name {
            /// Appends the id as its `Display` writes it (hyphenated, lower case), without
            /// the formatting machinery: keys and subjects of the move path are built so.
            pub fn push_to(&self, out: &mut String) {
                let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
                out.push_str(self.0.hyphenated().encode_lower(&mut text));
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }

        impl FromStr for $name {
            type Err = ParseIdError;
            fn from_str(s: &str) -> Result<Self, ParseIdError> {
                Uuid::parse_str(s)
                    .map($name)
                    .map_err(|_| ParseIdError(s.chars().take(40).collect()))
            }
        }
    };
}

id_type!(
    /// A game.
    GameId
);
id_type!(
    /// A player (registered, guest or bot).
    PlayerId
);

/// The fixed player ids of the computer players, one per level (the gateway never issues
/// them: it makes random UUIDv7 ids for accounts and guests).
const BOT_IDS: [(frontier_protocol::BotLevel, Uuid); 3] = [
    (
        frontier_protocol::BotLevel::Easy,
        Uuid::from_u128(0xb0710000_0000_4000_8000_000000000001),
    ),
    (
        frontier_protocol::BotLevel::Medium,
        Uuid::from_u128(0xb0710000_0000_4000_8000_000000000002),
    ),
    (
        frontier_protocol::BotLevel::Hard,
        Uuid::from_u128(0xb0710000_0000_4000_8000_000000000003),
    ),
];

impl PlayerId {
    /// The computer player of a level.
    pub fn bot(level: frontier_protocol::BotLevel) -> PlayerId {
        let uuid = BOT_IDS
            .iter()
            .find(|(l, _)| *l == level)
            .map_or(Uuid::nil(), |(_, id)| *id);
        PlayerId(uuid)
    }

    /// The level of a computer player's id; none for anyone else.
    pub fn bot_level(&self) -> Option<frontier_protocol::BotLevel> {
        BOT_IDS
            .iter()
            .find(|(_, id)| *id == self.0)
            .map(|(level, _)| *level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use frontier_protocol::BotLevel;

    #[test]
    fn each_level_has_its_own_fixed_bot_id() {
        let ids: Vec<PlayerId> = BotLevel::ALL.into_iter().map(PlayerId::bot).collect();
        for (level, id) in BotLevel::ALL.into_iter().zip(&ids) {
            assert_eq!(id.bot_level(), Some(level));
            assert_ne!(id.0, Uuid::nil());
        }
        assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
        assert_eq!(PlayerId::new().bot_level(), None);
    }
}
