//! `frontier.matchmaking.v1.Matchmaking` over a [`Matchmaker`]: the one place its errors
//! become a `tonic::Status` (a `refusal` with the client error code).

use std::sync::Arc;

use frontier_pairing::{Pool, PoolClock};
use frontier_platform::convert::{bot_level_to_proto, variant_from_proto};
use frontier_platform::grpc::refusal;
use frontier_proto::games::v1 as games;
use frontier_proto::matchmaking::v1 as pb;
use frontier_proto::matchmaking::v1::matchmaking_server::{Matchmaking, MatchmakingServer};
use frontier_protocol::ErrorCode;
use tonic::{Request, Response, Status};

use crate::matchmaker::{GameMaker, MatchError, MatchedNotice, Matchmaker, Notifier, RatingSource};
use crate::store::{RedisTickets, TicketStore};
use crate::ticket::Seeker;

/// The gRPC service.
pub struct MatchmakingService<G, N, R, T = RedisTickets> {
    matchmaker: Arc<Matchmaker<G, N, R, T>>,
}

impl<G: GameMaker, N: Notifier, R: RatingSource, T: TicketStore> MatchmakingService<G, N, R, T> {
    /// Over this matchmaker.
    pub fn new(matchmaker: Arc<Matchmaker<G, N, R, T>>) -> Self {
        MatchmakingService { matchmaker }
    }

    /// As a tonic server.
    pub fn into_server(self) -> MatchmakingServer<Self> {
        MatchmakingServer::new(self)
    }
}

fn status_of(error: MatchError) -> Status {
    match error {
        MatchError::BadField(message) => refusal(ErrorCode::BadField, message),
        MatchError::GuestRated => refusal(ErrorCode::GuestRated, error.to_string()),
        MatchError::AlreadyMatched => refusal(ErrorCode::AlreadyMatched, error.to_string()),
        MatchError::Store(e) => {
            tracing::error!(error = %e, "matchmaking storage failed");
            refusal(
                ErrorCode::Unavailable,
                "matchmaking is unavailable; try again",
            )
        }
    }
}

/// A pool from the wire, checked.
fn pool_of(p: &pb::Pool) -> Result<Pool, Status> {
    let variant = variant_from_proto(p.variant)
        .ok_or_else(|| refusal(ErrorCode::BadField, "pools: unknown variant"))?;
    let clock = PoolClock::new(p.minutes, p.increment).ok_or_else(|| {
        refusal(
            ErrorCode::BadField,
            "pools: the clocks are 1+0, 3+0, 3+2, 5+0, 10+0, 15+10 and 30+0",
        )
    })?;
    Ok(Pool {
        variant,
        clock,
        rated: p.rated,
    })
}

/// A notice on the wire.
pub fn matched_to_proto(n: &MatchedNotice) -> pb::Matched {
    pb::Matched {
        match_id: n.match_id.clone(),
        game_id: n.game_id.clone(),
        pool: n.pool.clone(),
        color: n.color.clone(),
        opponent: Some(games::Player {
            id: n.opponent.id.clone(),
            name: n.opponent.name.clone(),
            guest: n.opponent.guest,
            bot: n.opponent.bot,
            bot_level: n
                .opponent
                .bot_level
                .as_deref()
                .and_then(frontier_protocol::BotLevel::parse)
                .map_or(games::BotLevel::Unspecified, bot_level_to_proto)
                as i32,
        }),
        rated: n.rated,
    }
}

fn player_id(id: &str) -> Result<&str, Status> {
    if uuid::Uuid::parse_str(id).is_err() {
        return Err(refusal(ErrorCode::BadField, "player_id: not a UUID"));
    }
    Ok(id)
}

#[tonic::async_trait]
impl<G: GameMaker, N: Notifier, R: RatingSource, T: TicketStore> Matchmaking
    for MatchmakingService<G, N, R, T>
{
    async fn seek(
        &self,
        request: Request<pb::SeekRequest>,
    ) -> Result<Response<pb::SeekResponse>, Status> {
        let request = request.into_inner();
        let player = request
            .player
            .ok_or_else(|| refusal(ErrorCode::BadField, "player: missing"))?;
        player_id(&player.id)?;
        let pools = request
            .pools
            .iter()
            .map(pool_of)
            .collect::<Result<Vec<_>, _>>()?;
        let seeker = Seeker {
            id: player.id,
            name: player.name,
            guest: player.guest,
        };
        let answer = self
            .matchmaker
            .seek(seeker, &pools)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::SeekResponse {
            pools: answer.pools,
            estimated_wait_ms: answer.estimated_wait_ms,
            replaced: answer.replaced,
        }))
    }

    async fn cancel_seek(
        &self,
        request: Request<pb::PlayerRequest>,
    ) -> Result<Response<pb::CancelSeekResponse>, Status> {
        let request = request.into_inner();
        let cancelled = self
            .matchmaker
            .cancel(player_id(&request.player_id)?)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::CancelSeekResponse { cancelled }))
    }

    async fn status(
        &self,
        request: Request<pb::PlayerRequest>,
    ) -> Result<Response<pb::StatusResponse>, Status> {
        let request = request.into_inner();
        let status = self
            .matchmaker
            .status(player_id(&request.player_id)?)
            .await
            .map_err(status_of)?;
        let (pools, since_ms) = status.seeking.unwrap_or_default();
        Ok(Response::new(pb::StatusResponse {
            pools,
            since_ms,
            matched: status.matched.as_ref().map(matched_to_proto),
            matching: status.matching,
        }))
    }

    async fn leave(
        &self,
        request: Request<pb::PlayerRequest>,
    ) -> Result<Response<pb::LeaveResponse>, Status> {
        let request = request.into_inner();
        self.matchmaker
            .leave(player_id(&request.player_id)?)
            .await
            .map_err(status_of)?;
        Ok(Response::new(pb::LeaveResponse {}))
    }
}
