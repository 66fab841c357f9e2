//! The finished-game record that game-session appends to the JetStream stream of finished
//! games (`frontier.games.v1.FinishedGame`): public once the game is over, so it carries
//! the shuffle and the identities of captured hidden pieces.

use frontier_platform::convert::variant_to_proto;
use frontier_proto::games::v1 as games;
use frontier_rules::{Audience, Outcome};

use crate::game::LiveGame;

/// The record of a game that is over; none for a game still going on, or for a board
/// that never started (see [`LiveGame::is_recorded`]).
pub fn finished_record(game: &LiveGame) -> Option<games::FinishedGame> {
    if !game.is_recorded() {
        return None;
    }
    let outcome = game.outcome()?;
    let shuffle = game.game().published_shuffle();
    let result = match outcome {
        Outcome::Win { winner, .. } => winner.name(),
        Outcome::Draw { .. } => "draw",
        Outcome::Aborted => "aborted",
    };
    let info = game.info();
    Some(games::FinishedGame {
        game_id: info.id.clone(),
        variant: variant_to_proto(info.variant) as i32,
        rated: info.rated,
        time_control: info.time_control.map(Into::into),
        white: game.player(frontier_rules::Color::White).map(Into::into),
        black: game.player(frontier_rules::Color::Black).map(Into::into),
        result: result.to_owned(),
        outcome: outcome.code(),
        moves: game.moves().iter().map(Into::into).collect(),
        created_at_ms: info.created_at_ms,
        started_at_ms: game.started_at_ms(),
        ended_at_ms: game.ended_at_ms(),
        initial_layout: shuffle
            .as_ref()
            .map(|s| s.layout.clone())
            .unwrap_or_default(),
        salt: shuffle.as_ref().map(|s| s.salt.clone()).unwrap_or_default(),
        commitment: info.commitment.clone(),
        final_fen: game.game().view(Audience::Spectator).fen(),
        start_fen: info.start_fen.clone(),
    })
}
