//! The gRPC edge of the read API (`frontier.rating.v1.Ratings`), generic over the store.
//! [`QueryError`] becomes a `tonic::Status` here and nowhere else: a refusal carrying its
//! client error code as a typed detail (frontier-platform's `grpc::refusal`), so callers
//! never parse a message. Internal causes are logged, never sent.

use frontier_platform::convert::{variant_from_proto, variant_to_proto};
use frontier_platform::grpc::refusal;
use frontier_platform::time::Clock;
use std::sync::Arc;

use frontier_proto::games::v1 as games;
use frontier_proto::rating::v1 as pb;
use frontier_proto::rating::v1::ratings_server::Ratings;
use frontier_protocol::ErrorCode;
use tonic::{Request, Response, Status};
use uuid::Uuid;

use crate::model::{GameLine, at, ms};
use crate::queries::{self, QueryError, provisional};
use crate::store::{RatingStore, StoreError};

/// The tonic service over a store.
pub struct RatingsService<S> {
    store: S,
    /// "Now" for ratings as of now (RD grows with idle time).
    clock: Arc<dyn Clock>,
}

impl<S: RatingStore> RatingsService<S> {
    /// Serves reads from `store`, with `clock` telling the time.
    pub fn new(store: S, clock: Arc<dyn Clock>) -> RatingsService<S> {
        RatingsService { store, clock }
    }

    /// The tonic server of this service.
    pub fn into_server(self) -> pb::ratings_server::RatingsServer<RatingsService<S>> {
        pb::ratings_server::RatingsServer::new(self)
    }
}

/// The status for an error.
pub fn status(e: QueryError) -> Status {
    match e {
        QueryError::BadField(message) => refusal(ErrorCode::BadField, message),
        QueryError::PlayerNotFound => refusal(ErrorCode::PlayerNotFound, "no such player"),
        QueryError::GameNotFound => {
            refusal(ErrorCode::GameNotFound, "no finished game has that id")
        }
        QueryError::Store(StoreError::Unavailable(cause)) => {
            tracing::error!(error = %cause, "records query failed");
            refusal(ErrorCode::Unavailable, "records are unavailable; try again")
        }
        QueryError::Store(StoreError::Corrupt(cause)) | QueryError::Render(cause) => {
            tracing::error!(error = %cause, "a stored game does not read back");
            refusal(ErrorCode::Internal, "could not render the game")
        }
    }
}

fn player(id: Uuid, name: String) -> games::Player {
    games::Player {
        id: id.to_string(),
        name,
        guest: false,
        bot: false,
        bot_level: games::BotLevel::Unspecified as i32,
    }
}

fn summary(line: GameLine) -> pb::GameSummary {
    pb::GameSummary {
        game_id: line.id.to_string(),
        variant: variant_to_proto(line.variant).into(),
        rated: line.rated,
        white: Some(player(line.white.0, line.white.1)),
        black: Some(player(line.black.0, line.black.1)),
        result: line.result,
        outcome: line.outcome,
        ended_at_ms: ms(line.ended),
    }
}

#[tonic::async_trait]
impl<S: RatingStore> Ratings for RatingsService<S> {
    async fn get_player(
        &self,
        request: Request<pb::GetPlayerRequest>,
    ) -> Result<Response<pb::PlayerRatings>, Status> {
        let r = request.into_inner();
        let now = at(self.clock.now_ms());
        let summaries = queries::player(&self.store, &r.player_id, now)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::PlayerRatings {
            player_id: r.player_id,
            ratings: summaries
                .into_iter()
                .map(|s| pb::VariantRating {
                    variant: variant_to_proto(s.variant).into(),
                    rating: s.rating.rating,
                    rd: s.rating.rd,
                    provisional: s.rating.is_provisional(),
                    games: s.counts.games,
                    wins: s.counts.wins,
                    draws: s.counts.draws,
                    losses: s.counts.losses,
                })
                .collect(),
        }))
    }

    async fn list_player_games(
        &self,
        request: Request<pb::ListPlayerGamesRequest>,
    ) -> Result<Response<pb::GamesPage>, Status> {
        let r = request.into_inner();
        let page = queries::games(
            &self.store,
            &r.player_id,
            variant_from_proto(r.variant),
            r.before.as_deref(),
            r.limit,
        )
        .await
        .map_err(status)?;
        Ok(Response::new(pb::GamesPage {
            games: page.games.into_iter().map(summary).collect(),
            next: page.next.map(|c| c.to_string()),
        }))
    }

    async fn rating_history(
        &self,
        request: Request<pb::RatingHistoryRequest>,
    ) -> Result<Response<pb::RatingHistoryResponse>, Status> {
        let r = request.into_inner();
        let points = queries::history(&self.store, &r.player_id, variant_from_proto(r.variant))
            .await
            .map_err(status)?;
        Ok(Response::new(pb::RatingHistoryResponse {
            points: points
                .into_iter()
                .map(|p| pb::RatingPoint {
                    game_id: p.game_id.to_string(),
                    rating: p.rating,
                    rd: p.rd,
                    provisional: provisional(p.rd),
                    at_ms: ms(p.at),
                })
                .collect(),
        }))
    }

    async fn leaderboard(
        &self,
        request: Request<pb::LeaderboardRequest>,
    ) -> Result<Response<pb::LeaderboardResponse>, Status> {
        let r = request.into_inner();
        let lines = queries::leaderboard(&self.store, variant_from_proto(r.variant), r.limit)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::LeaderboardResponse {
            players: lines
                .into_iter()
                .map(|l| pb::LeaderboardEntry {
                    player_id: l.player_id.to_string(),
                    name: l.name,
                    rating: l.rating,
                    rd: l.rd,
                    rated_games: l.rated_games,
                })
                .collect(),
        }))
    }

    async fn get_game(
        &self,
        request: Request<pb::GetGameRequest>,
    ) -> Result<Response<games::FinishedGame>, Status> {
        let game = queries::game(&self.store, &request.into_inner().game_id)
            .await
            .map_err(status)?;
        Ok(Response::new(game))
    }

    async fn get_pgn(
        &self,
        request: Request<pb::GetGameRequest>,
    ) -> Result<Response<pb::Pgn>, Status> {
        let text = queries::pgn(&self.store, &request.into_inner().game_id)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::Pgn { text }))
    }

    async fn players_with_games(
        &self,
        request: Request<pb::PlayersWithGamesRequest>,
    ) -> Result<Response<pb::PlayersWithGamesResponse>, Status> {
        let players = queries::players_with_games(&self.store, &request.into_inner().player_ids)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::PlayersWithGamesResponse {
            player_ids: players.iter().map(Uuid::to_string).collect(),
        }))
    }
}
