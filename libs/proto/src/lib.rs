//! Generated gRPC and message code for Frontier's internal services, from `proto/`.
#![allow(missing_docs, unreachable_pub, clippy::all)]

/// `frontier.errors.v1`: client error codes as typed details of refused calls.
pub mod errors {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("frontier.errors.v1");
    }
}

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

/// `frontier.matchmaking.v1`: the matchmaking service.
pub mod matchmaking {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("frontier.matchmaking.v1");
    }
}

/// `frontier.rating.v1`: the rating service's read API (ratings, games, PGN).
pub mod rating {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("frontier.rating.v1");
    }
}

/// `frontier.fairplay.v1`: the fair-play service (moderation queue, decisions, marks).
pub mod fairplay {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("frontier.fairplay.v1");
    }
}

/// `Debug` for the messages that hold secrets: public facts only, never the layout, the
/// salt or a captured piece's identity (which are secret while the game is on).
mod redacted {
    use std::fmt;

    fn secret(present: bool) -> &'static str {
        if present { "<secret>" } else { "" }
    }

    impl fmt::Debug for super::gamesession::storage::v1::StoredGame {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("StoredGame")
                .field("id", &self.id)
                .field("variant", &self.variant)
                .field("phase", &self.phase)
                .field("ply", &self.ply)
                .field("layout", &secret(!self.layout.is_empty()))
                .field("salt", &secret(!self.salt.is_empty()))
                .finish_non_exhaustive()
        }
    }

    impl fmt::Debug for super::games::v1::FinishedGame {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("FinishedGame")
                .field("game_id", &self.game_id)
                .field("variant", &self.variant)
                .field("result", &self.result)
                .field("outcome", &self.outcome)
                .field("initial_layout", &secret(!self.initial_layout.is_empty()))
                .field("salt", &secret(!self.salt.is_empty()))
                .finish_non_exhaustive()
        }
    }

    impl fmt::Debug for super::games::v1::MoveRecord {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("MoveRecord")
                .field("ply", &self.ply)
                .field("uci", &self.uci)
                .field(
                    "captured_identity",
                    &secret(!self.captured_identity.is_empty()),
                )
                .finish_non_exhaustive()
        }
    }
}

/// A game-session client balanced over these URLs (connections are made lazily). Shared by
/// every service that calls game-session.
pub fn game_session_client(
    urls: &[String],
) -> Result<
    gamesession::v1::game_session_client::GameSessionClient<tonic::transport::Channel>,
    String,
> {
    game_session_channel(urls).map(gamesession::v1::game_session_client::GameSessionClient::new)
}

/// A channel balanced over these game-session URLs (connections are made lazily), for a
/// client with its own layers. One URL (one instance, or a Kubernetes Service in front of
/// several) gets a plain channel: a balancer over one endpoint only adds its own work to
/// every call (issue 29).
pub fn game_session_channel(urls: &[String]) -> Result<tonic::transport::Channel, String> {
    use tonic::transport::{Channel, Endpoint};
    let endpoints = urls
        .iter()
        .map(|u| {
            Endpoint::from_shared(u.clone())
                .map(|e| {
                    e.tcp_nodelay(true)
                        .connect_timeout(std::time::Duration::from_secs(3))
                })
                .map_err(|e| format!("game-session URL `{u}`: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    match <[Endpoint; 1]>::try_from(endpoints) {
        Ok([one]) => Ok(one.connect_lazy()),
        Err(endpoints) if endpoints.is_empty() => {
            Err("at least one game-session URL is needed".into())
        }
        Err(endpoints) => Ok(Channel::balance_list(endpoints.into_iter())),
    }
}

/// A client of the rating service's read API at this URL (connected lazily, on first use).
pub fn rating_client(
    url: &str,
) -> Result<rating::v1::ratings_client::RatingsClient<tonic::transport::Channel>, String> {
    rating_channel(url).map(rating::v1::ratings_client::RatingsClient::new)
}

/// A channel to the rating service at this URL (connected lazily), for a client with its
/// own layers.
pub fn rating_channel(url: &str) -> Result<tonic::transport::Channel, String> {
    let endpoint = tonic::transport::Endpoint::from_shared(url.to_owned())
        .map_err(|e| format!("rating URL `{url}`: {e}"))?
        .tcp_nodelay(true)
        .connect_timeout(std::time::Duration::from_secs(3));
    Ok(endpoint.connect_lazy())
}
