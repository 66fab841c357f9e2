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

/// `frontier.rating.v1`: the rating service's read API (ratings, games, PGN).
pub mod rating {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("frontier.rating.v1");
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
    if endpoints.is_empty() {
        return Err("at least one game-session URL is needed".into());
    }
    Ok(
        gamesession::v1::game_session_client::GameSessionClient::new(Channel::balance_list(
            endpoints.into_iter(),
        )),
    )
}

/// A client of the rating service's read API at this URL (connected lazily, on first use).
pub fn rating_client(
    url: &str,
) -> Result<rating::v1::ratings_client::RatingsClient<tonic::transport::Channel>, String> {
    let endpoint = tonic::transport::Endpoint::from_shared(url.to_owned())
        .map_err(|e| format!("rating URL `{url}`: {e}"))?
        .tcp_nodelay(true)
        .connect_timeout(std::time::Duration::from_secs(3));
    Ok(rating::v1::ratings_client::RatingsClient::new(
        endpoint.connect_lazy(),
    ))
}

/// The typed reason a rating-service status carries in its details (`Unspecified` when it
/// carries none, e.g. a transport failure before the service answered).
pub fn rating_error_reason(status: &tonic::Status) -> rating::v1::ErrorReason {
    use prost::Message as _;
    rating::v1::ErrorDetail::decode(status.details())
        .ok()
        .and_then(|d| rating::v1::ErrorReason::try_from(d.reason).ok())
        .unwrap_or(rating::v1::ErrorReason::Unspecified)
}
