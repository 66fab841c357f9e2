//! game-session's one error type, turned into a gRPC status in one place (`grpc.rs`).

use frontier_protocol::ErrorCode;
use frontier_rules::Color;

use crate::bus::BusError;
use crate::store::StoreError;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The client asked for something the rules or the game's state refuse.
    #[error("{0}: {1}")]
    Client(ErrorCode, String),
    /// A repeated join by a seated player (not an error to the client: the seat is answered).
    #[error("already seated as {0:?}")]
    AlreadySeated(Color),
    /// Storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Messaging failed.
    #[error(transparent)]
    Bus(#[from] BusError),
    /// Stored data could not be read.
    #[error("{0}")]
    Corrupt(String),
    /// A game stored in a newer format than this instance reads (a rolling upgrade in
    /// progress): left as it is, and the caller told to try again (`unavailable`).
    #[error("stored in format {0}, newer than this version's")]
    NewerFormat(u32),
    /// A bug or an exhausted retry.
    #[error("{0}")]
    Internal(String),
}
