//! Generated gRPC and message code for Frontier's internal services, from `proto/`.
#![allow(missing_docs, unreachable_pub, clippy::all)]

/// `frontier.games.v1`: players, variants, time controls, finished-game records.
pub mod games {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("frontier.games.v1");
    }
}

/// `frontier.gamesession.v1`: the game-session service.
pub mod gamesession {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("frontier.gamesession.v1");
    }
    /// game-session's internal storage format.
    pub mod storage {
        /// Version 1.
        pub mod v1 {
            tonic::include_proto!("frontier.gamesession.storage.v1");
        }
    }
}
