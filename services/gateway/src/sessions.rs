//! The gRPC client of game-session, with its errors turned into client error codes. Every
//! call carries the caller's trace context (`frontier_platform::trace`).

use frontier_platform::GameId;
use frontier_platform::trace::{Traced, traced};
use frontier_proto::gamesession::v1::game_session_client::GameSessionClient;
use frontier_protocol::ErrorCode;

/// A client error from game-session (or its absence).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The code.
    pub code: ErrorCode,
    /// The text for people.
    pub message: String,
}

impl From<tonic::Status> for Refusal {
    fn from(status: tonic::Status) -> Self {
        // A refusal carries its client code as a typed detail; its message is for people.
        if let Some(code) = frontier_platform::grpc::refusal_code(&status)
            && code != ErrorCode::Internal
        {
            return Refusal {
                code,
                message: status.message().to_owned(),
            };
        }
        let cut_off = cut_off(&status);
        if cut_off {
            tracing::warn!(status = %status, "a game-session call was cut off");
        }
        let retry = cut_off
            || matches!(
                status.code(),
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded | tonic::Code::Cancelled
            );
        if retry {
            Refusal {
                code: ErrorCode::Unavailable,
                message: "the game service is unavailable; try again".to_owned(),
            }
        } else {
            tracing::error!(status = %status, "game-session failed");
            Refusal {
                code: ErrorCode::Internal,
                message: "something failed on the server".to_owned(),
            }
        }
    }
}

impl Refusal {
    /// `status` as a refusal, logged (when it is a failure rather than a refusal) inside a
    /// `gateway.command` span with the command's kind and game if the current span was not
    /// created: a game action's span is trace-only (`ws::Connection::on_command`), so without
    /// trace export the log line gets its context here, on the failure path only.
    pub fn logged(status: tonic::Status, kind: &'static str, game: &GameId) -> Refusal {
        let refusal = frontier_platform::grpc::refusal_code(&status)
            .is_some_and(|code| code != ErrorCode::Internal);
        if refusal || !tracing::Span::current().is_disabled() {
            return Refusal::from(status);
        }
        let _command = tracing::info_span!("gateway.command", kind, game = %game).entered();
        Refusal::from(status)
    }
}

/// Whether a call was cut off by the transport (the instance died mid-call: the connection
/// reset): it comes back as `Unknown` with the transport's error as its source, where an
/// `Unknown` the server sent has none. Like `Unavailable`, a "try again".
pub fn cut_off(status: &tonic::Status) -> bool {
    status.code() == tonic::Code::Unknown && std::error::Error::source(status).is_some()
}

/// A balanced client over one or more game-session instances; each request carries the
/// trace context of the span that makes it.
pub type Sessions = GameSessionClient<Traced>;

/// Connects lazily to these game-session URLs, balancing requests across them.
pub fn connect(urls: &[String]) -> anyhow::Result<Sessions> {
    let channel = frontier_proto::game_session_channel(urls).map_err(anyhow::Error::msg)?;
    Ok(GameSessionClient::new(traced(channel)))
}

/// `white`, `black` or `spectator`.
pub fn seat_name(seat: i32) -> &'static str {
    use frontier_platform::convert::{audience_name, audience_of_seat};
    audience_name(audience_of_seat(seat))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_cut_off_by_the_transport_is_unavailable_not_internal() {
        let reset = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let cut = tonic::Status::from_error(Box::new(reset));
        assert_eq!(cut.code(), tonic::Code::Unknown);
        assert_eq!(Refusal::from(cut).code, ErrorCode::Unavailable);
        // An `Unknown` the server sent is a failure on the server.
        assert_eq!(
            Refusal::from(tonic::Status::unknown("boom")).code,
            ErrorCode::Internal
        );
    }
}
