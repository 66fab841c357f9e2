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
