//! Acting on game-session: the bot's decision sent as its player's `Act`, with the job's
//! version as `expected_version` and the job id as the action id, so a job acted on twice
//! (redelivered after a worker died, or published twice) applies at most once. The
//! answer is sorted once, here, into applied, final refusals and transient failures.

use frontier_platform::trace::{Traced, traced};
use frontier_proto::gamesession::v1 as pb;
use frontier_proto::gamesession::v1::game_session_client::GameSessionClient;
use frontier_protocol::ErrorCode;

use crate::view::BotAction;

/// One action of a bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActCall {
    /// The game.
    pub game_id: String,
    /// The bot's player id.
    pub player_id: String,
    /// The job id: game-session's duplicate detection key.
    pub action_id: String,
    /// The version the decision was made at.
    pub expected_version: u64,
    /// The move or promotion choice.
    pub action: BotAction,
}

/// What game-session did with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acted {
    /// Applied now, producing this version.
    Applied(u64),
    /// Applied before (same action id), producing this version; nothing changed now.
    Duplicate(u64),
}

/// Why it was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActError {
    /// game-session answered with a final refusal (`stale_version`, `game_over`,
    /// `not_your_turn`, …): trying again cannot change the answer.
    #[error("refused: {}", .0.as_str())]
    Refused(ErrorCode),
    /// game-session could not be reached or failed: worth trying again later.
    #[error("game-session unavailable: {0}")]
    Transient(String),
}

/// Acts for bots.
pub trait Sessions: Clone + Send + Sync + 'static {
    /// Sends one action.
    fn act(&self, call: ActCall) -> impl Future<Output = Result<Acted, ActError>> + Send;
}

/// Connects lazily to these game-session URLs, balancing calls across them; each call
/// carries the caller's trace context.
pub fn sessions(urls: &[String]) -> anyhow::Result<GameSessionClient<Traced>> {
    let channel = frontier_proto::game_session_channel(urls).map_err(anyhow::Error::msg)?;
    Ok(GameSessionClient::new(traced(channel)))
}

impl Sessions for GameSessionClient<Traced> {
    #[tracing::instrument(name = "bot.act", skip_all, fields(game = %call.game_id, version = call.expected_version))]
    async fn act(&self, call: ActCall) -> Result<Acted, ActError> {
        let action = match call.action {
            BotAction::Move(uci) => pb::act_request::Action::Move(pb::MoveAction {
                uci,
                move_time_ms: None,
            }),
            BotAction::Promote(role) => {
                pb::act_request::Action::Promote(pb::PromoteAction { role })
            }
        };
        let request = pb::ActRequest {
            game_id: call.game_id,
            player_id: call.player_id,
            client_action_id: call.action_id,
            expected_version: Some(call.expected_version),
            action: Some(action),
        };
        let mut client = self.clone();
        match GameSessionClient::act(&mut client, request).await {
            Ok(response) => {
                let response = response.into_inner();
                Ok(if response.duplicate {
                    Acted::Duplicate(response.version)
                } else {
                    Acted::Applied(response.version)
                })
            }
            Err(status) => Err(classify(&status)),
        }
    }
}

/// A refused call carries its client error code as a typed detail; every code but the
/// server's own trouble is final. A status without one (connection refused, timeout, a
/// crash) is transient.
pub fn classify(status: &tonic::Status) -> ActError {
    match frontier_platform::grpc::refusal_code(status) {
        Some(code) if !is_transient(code) => ActError::Refused(code),
        _ => ActError::Transient(format!("{:?}: {}", status.code(), status.message())),
    }
}

fn is_transient(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::Unavailable | ErrorCode::Internal | ErrorCode::RateLimited
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use frontier_platform::grpc::refusal;

    #[test]
    fn refusals_are_final_and_trouble_is_transient() {
        for code in [
            ErrorCode::StaleVersion,
            ErrorCode::GameOver,
            ErrorCode::NotYourTurn,
            ErrorCode::IllegalMove,
        ] {
            assert_eq!(classify(&refusal(code, "no")), ActError::Refused(code));
        }
        for status in [
            refusal(ErrorCode::Unavailable, "down"),
            refusal(ErrorCode::Internal, "oops"),
            tonic::Status::unavailable("connection refused"),
            tonic::Status::deadline_exceeded("slow"),
        ] {
            assert!(
                matches!(classify(&status), ActError::Transient(_)),
                "{status:?}"
            );
        }
    }
}
