//! The gRPC edge: proto requests become service calls, and `SessionError` becomes a
//! `tonic::Status` here and nowhere else. Internal causes are logged, never sent. Each
//! handler's span (`game_session.<rpc>`, ids only) is a child of the request's span, whose
//! parent is the caller's trace context (`serve` sets `trace::grpc_server_span`).

use std::sync::Arc;

use frontier_platform::GameId;
use frontier_platform::convert::{bot_level_from_proto, seat_of, variant_from_proto};
use frontier_platform::grpc::refusal;
use frontier_proto::gamesession::v1 as pb;
use frontier_proto::gamesession::v1::game_session_server::GameSession;
use frontier_protocol::ErrorCode;
use frontier_rules::{Audience, Color, Role};
use tonic::{Request, Response, Status};

use crate::bus::EventBus;

/// Entries of each kind a gateway's tick may carry.
pub const TICK_MAX: usize = 5_000;
use crate::error::SessionError;
use crate::game::Action;
use crate::rematch::{Lapse, RematchState};
use crate::service::{GameService, MatchSeat, NewBoard, NewComputerGame, NewMatch, Resume};
use crate::store::{GameStore, StoreError};

/// The tonic service over a [`GameService`].
pub struct GrpcGameSession<S, B> {
    service: Arc<GameService<S, B>>,
}

impl<S, B> GrpcGameSession<S, B> {
    /// Wraps the service.
    pub fn new(service: Arc<GameService<S, B>>) -> Self {
        GrpcGameSession { service }
    }
}

/// What a rematch call asks for.
enum RematchStep {
    Offer,
    Accept,
    Decline,
}

impl<S: GameStore, B: EventBus> GrpcGameSession<S, B> {
    /// The three rematch rpcs: one game, one player, one step.
    async fn rematch(
        &self,
        request: Request<pb::RematchRequest>,
        step: RematchStep,
    ) -> Result<Response<pb::RematchResponse>, Status> {
        let r = request.into_inner();
        let game = game_id(&r.game_id)?;
        let player = r.player_id.as_str();
        let state = match step {
            RematchStep::Offer => self.service.offer_rematch(&game, player).await,
            RematchStep::Accept => self.service.accept_rematch(&game, player).await,
            RematchStep::Decline => self.service.decline_rematch(&game, player).await,
        }
        .map_err(status)?;
        Ok(Response::new(rematch_response(state)))
    }
}

/// [`status`] for an action on `game`: a failure (not a client's refusal) is logged inside
/// a `game_session.act` span naming the game when the handler's own span was not made (it
/// is trace-only: `telemetry::TRACE_ONLY_TARGET`).
fn act_status(game: &GameId, e: SessionError) -> Status {
    if matches!(e, SessionError::Client(..)) || !tracing::Span::current().is_disabled() {
        return status(e);
    }
    let _act = tracing::info_span!("game_session.act", game = %game).entered();
    status(e)
}

/// The status for an error: a refusal carries its client error code as a typed detail
/// (`frontier_platform::grpc`); internal causes are logged, never sent.
pub fn status(e: SessionError) -> Status {
    match e {
        SessionError::Client(code, message) => refusal(code, message),
        SessionError::AlreadySeated(_) => refusal(ErrorCode::Internal, "unexpected seat answer"),
        SessionError::Store(e @ StoreError::NotReplicated { .. }) => {
            metrics::counter!("frontier_game_session_unreplicated_writes_total").increment(1);
            tracing::warn!(error = %e, "a write not confirmed by the replicas: not acknowledged");
            refusal(ErrorCode::Unavailable, "game storage is unavailable")
        }
        SessionError::Store(e) => {
            tracing::error!(error = %e, "storage failure");
            refusal(ErrorCode::Unavailable, "game storage is unavailable")
        }
        SessionError::Bus(e) => {
            tracing::error!(error = %e, "messaging failure");
            refusal(ErrorCode::Unavailable, "messaging is unavailable")
        }
        SessionError::NewerFormat(format) => {
            tracing::warn!(format, "a game stored by a newer version: left to it");
            refusal(
                ErrorCode::Unavailable,
                "the game is being upgraded; try again",
            )
        }
        SessionError::Corrupt(e) | SessionError::Internal(e) => {
            tracing::error!(error = %e, "internal failure");
            refusal(ErrorCode::Internal, "something failed on the server")
        }
    }
}

fn bad(message: &str) -> Status {
    refusal(ErrorCode::BadField, message)
}

fn game_id(s: &str) -> Result<GameId, Status> {
    s.parse()
        .map_err(|_| refusal(ErrorCode::GameNotFound, "no such game"))
}

fn color_choice(value: i32) -> Result<Option<Color>, Status> {
    match pb::ColorChoice::try_from(value) {
        Ok(pb::ColorChoice::White) => Ok(Some(Color::White)),
        Ok(pb::ColorChoice::Black) => Ok(Some(Color::Black)),
        Ok(pb::ColorChoice::Random) => Ok(None),
        _ => Err(bad("color must be white, black or random")),
    }
}

fn action_of(action: Option<pb::act_request::Action>) -> Result<Action, Status> {
    use pb::act_request::Action as A;
    Ok(match action.ok_or_else(|| bad("an action is required"))? {
        A::Move(m) => Action::Move(m.uci, m.move_time_ms),
        A::Promote(p) => {
            let role = match p.role.as_str() {
                "q" | "queen" => Role::Queen,
                "r" | "rook" => Role::Rook,
                "b" | "bishop" => Role::Bishop,
                "n" | "knight" => Role::Knight,
                _ => return Err(bad("promotion role must be q, r, b or n")),
            };
            Action::Promote(role)
        }
        A::Resign(_) => Action::Resign,
        A::OfferDraw(_) => Action::OfferDraw,
        A::AcceptDraw(_) => Action::AcceptDraw,
        A::DeclineDraw(_) => Action::DeclineDraw,
        A::Abort(_) => Action::Abort,
        A::Undo(_) => Action::Undo,
        A::ClaimVictory(_) => Action::ClaimVictory {
            opponent_last_seen_ms: 0,
            absence_limit_ms: 0,
            presence_timeout_ms: 0,
        },
    })
}

/// A rematch's state as the rpcs answer it.
fn rematch_response(state: RematchState) -> pb::RematchResponse {
    match state {
        RematchState::Offered(by) => pb::RematchResponse {
            offered_by: seat_of(Audience::Player(by)) as i32,
            ..Default::default()
        },
        RematchState::Cancelled(seat, reason) => pb::RematchResponse {
            seat: seat_of(Audience::Player(seat)) as i32,
            cancelled: reason.to_owned(),
            ..Default::default()
        },
        RematchState::Started(game, color) => pb::RematchResponse {
            new_game_id: game.to_string(),
            seat: seat_of(Audience::Player(color)) as i32,
            ..Default::default()
        },
    }
}

#[tonic::async_trait]
impl<S: GameStore, B: EventBus> GameSession for GrpcGameSession<S, B> {
    #[tracing::instrument(name = "game_session.create_board", skip_all)]
    async fn create_board(
        &self,
        request: Request<pb::CreateBoardRequest>,
    ) -> Result<Response<pb::CreateBoardResponse>, Status> {
        let r = request.into_inner();
        let creator = r.creator.ok_or_else(|| bad("creator is required"))?;
        let variant = variant_from_proto(r.variant)
            .ok_or_else(|| bad("variant must be standard, hidden or atomic"))?;
        let color = color_choice(r.color)?;
        let (game, code, color) = self
            .service
            .create_board(NewBoard {
                creator: (&creator).into(),
                variant,
                color,
                rated: r.rated,
                time_control: r.time_control.map(Into::into),
                #[cfg(feature = "test-hooks")]
                start_fen: None,
            })
            .await
            .map_err(status)?;
        Ok(Response::new(pb::CreateBoardResponse {
            game_id: game.to_string(),
            code,
            seat: seat_of(Audience::Player(color)) as i32,
        }))
    }

    #[tracing::instrument(name = "game_session.play_computer", skip_all)]
    async fn play_computer(
        &self,
        request: Request<pb::PlayComputerRequest>,
    ) -> Result<Response<pb::PlayComputerResponse>, Status> {
        let r = request.into_inner();
        let player = r.player.ok_or_else(|| bad("player is required"))?;
        let variant = variant_from_proto(r.variant)
            .ok_or_else(|| bad("variant must be standard, hidden or atomic"))?;
        let level = bot_level_from_proto(r.level)
            .ok_or_else(|| bad("level must be easy, medium or hard"))?;
        let color = color_choice(r.color)?;
        let (game, color, version) = self
            .service
            .play_computer(NewComputerGame {
                player: (&player).into(),
                variant,
                level,
                color,
                time_control: r.time_control.map(Into::into),
                #[cfg(feature = "test-hooks")]
                start_fen: None,
            })
            .await
            .map_err(status)?;
        Ok(Response::new(pb::PlayComputerResponse {
            game_id: game.to_string(),
            seat: seat_of(Audience::Player(color)) as i32,
            version,
        }))
    }

    #[tracing::instrument(name = "game_session.offer_rematch", skip_all)]
    async fn offer_rematch(
        &self,
        request: Request<pb::RematchRequest>,
    ) -> Result<Response<pb::RematchResponse>, Status> {
        self.rematch(request, RematchStep::Offer).await
    }

    #[tracing::instrument(name = "game_session.accept_rematch", skip_all)]
    async fn accept_rematch(
        &self,
        request: Request<pb::RematchRequest>,
    ) -> Result<Response<pb::RematchResponse>, Status> {
        self.rematch(request, RematchStep::Accept).await
    }

    #[tracing::instrument(name = "game_session.decline_rematch", skip_all)]
    async fn decline_rematch(
        &self,
        request: Request<pb::RematchRequest>,
    ) -> Result<Response<pb::RematchResponse>, Status> {
        self.rematch(request, RematchStep::Decline).await
    }

    #[tracing::instrument(name = "game_session.lapse_rematches", skip_all)]
    async fn lapse_rematches(
        &self,
        request: Request<pb::LapseRematchesRequest>,
    ) -> Result<Response<pb::LapseRematchesResponse>, Status> {
        let r = request.into_inner();
        let game = match r.game_id.as_str() {
            "" => None,
            id => Some(game_id(id)?),
        };
        let why = match pb::LapseReason::try_from(r.reason) {
            Ok(pb::LapseReason::Left) => Lapse::Left,
            Ok(pb::LapseReason::Seeking) => Lapse::Seeking,
            _ => return Err(bad("reason must be left or seeking")),
        };
        if r.player_id.is_empty() {
            return Err(bad("player_id is required"));
        }
        let lapsed = self
            .service
            .lapse_rematches(&r.player_id, game, why)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::LapseRematchesResponse { lapsed }))
    }

    #[tracing::instrument(name = "game_session.start_match", skip_all)]
    async fn start_match(
        &self,
        request: Request<pb::StartMatchRequest>,
    ) -> Result<Response<pb::StartMatchResponse>, Status> {
        let r = request.into_inner();
        let game: GameId = r
            .match_id
            .parse()
            .map_err(|_| bad("match_id must be a UUID"))?;
        let variant = variant_from_proto(r.variant)
            .ok_or_else(|| bad("variant must be standard, hidden or atomic"))?;
        let seat = |s: Option<pb::MatchSeat>, which: &str| -> Result<MatchSeat, Status> {
            match s.and_then(|s| s.seat) {
                Some(pb::match_seat::Seat::Player(p)) => Ok(MatchSeat::Person((&p).into())),
                Some(pb::match_seat::Seat::Bot(level)) => bot_level_from_proto(level)
                    .map(MatchSeat::Bot)
                    .ok_or_else(|| bad(&format!("{which}: level must be easy, medium or hard"))),
                None => Err(bad(&format!("{which} is required"))),
            }
        };
        let (game, version, created) = self
            .service
            .start_match(NewMatch {
                game,
                white: seat(r.white, "white")?,
                black: seat(r.black, "black")?,
                variant,
                rated: r.rated,
                time_control: r.time_control.map(Into::into),
            })
            .await
            .map_err(status)?;
        Ok(Response::new(pb::StartMatchResponse {
            game_id: game.to_string(),
            version,
            created,
        }))
    }

    #[tracing::instrument(name = "game_session.join_board", skip_all)]
    async fn join_board(
        &self,
        request: Request<pb::JoinBoardRequest>,
    ) -> Result<Response<pb::JoinBoardResponse>, Status> {
        let r = request.into_inner();
        let player = r.player.ok_or_else(|| bad("player is required"))?;
        let (game, color) = self
            .service
            .join_board_as((&player).into(), &r.code, r.casual_only)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::JoinBoardResponse {
            game_id: game.to_string(),
            seat: seat_of(Audience::Player(color)) as i32,
        }))
    }

    #[tracing::instrument(name = "game_session.get_view", skip_all)]
    async fn get_view(
        &self,
        request: Request<pb::GetViewRequest>,
    ) -> Result<Response<pb::ViewResponse>, Status> {
        let r = request.into_inner();
        let game = game_id(&r.game_id)?;
        let view = self
            .service
            .view(&game, &r.player_id)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::ViewResponse {
            game_id: r.game_id,
            version: view.version,
            seat: seat_of(view.audience) as i32,
            frame: view.frame.into_bytes(),
            ended: view.ended,
        }))
    }

    // Trace-only (`frontier::trace_only`, `telemetry::TRACE_ONLY_TARGET`): without trace
    // export the span is not made on every move; a failure is logged in one made then.
    #[tracing::instrument(
        target = "frontier::trace_only",
        name = "game_session.act",
        skip_all,
        fields(game = %request.get_ref().game_id)
    )]
    async fn act(
        &self,
        request: Request<pb::ActRequest>,
    ) -> Result<Response<pb::ActResponse>, Status> {
        let r = request.into_inner();
        let game = game_id(&r.game_id)?;
        let action = action_of(r.action)?;
        let acted = self
            .service
            .act_seen(
                &game,
                &r.player_id,
                &r.client_action_id,
                r.expected_version,
                &action,
            )
            .await
            .map_err(|e| act_status(&game, e))?;
        Ok(Response::new(pb::ActResponse {
            version: acted.version,
            duplicate: acted.duplicate,
            frame: acted.frame.unwrap_or_default(),
            ended: acted.ended,
        }))
    }

    #[tracing::instrument(name = "game_session.expire_clock", skip_all, fields(game = %request.get_ref().game_id))]
    async fn expire_clock(
        &self,
        request: Request<pb::ExpireClockRequest>,
    ) -> Result<Response<pb::ExpireClockResponse>, Status> {
        let r = request.into_inner();
        let game = game_id(&r.game_id)?;
        let (ended, next) = self.service.expire_clock(&game).await.map_err(status)?;
        Ok(Response::new(pb::ExpireClockResponse {
            ended,
            next_deadline_ms: next.unwrap_or(0),
        }))
    }

    async fn presence(
        &self,
        request: Request<pb::PresenceRequest>,
    ) -> Result<Response<pb::PresenceResponse>, Status> {
        let r = request.into_inner();
        let game = game_id(&r.game_id)?;
        self.service
            .presence(&game, &r.player_id)
            .await
            .map_err(status)?;
        Ok(Response::new(pb::PresenceResponse {}))
    }

    async fn tick(
        &self,
        request: Request<pb::TickRequest>,
    ) -> Result<Response<pb::TickResponse>, Status> {
        let r = request.into_inner();
        if r.present.len() > TICK_MAX || r.quiet.len() > TICK_MAX {
            return Err(Status::invalid_argument(format!(
                "at most {TICK_MAX} entries of each kind a tick"
            )));
        }
        let mut present = Vec::with_capacity(r.present.len());
        for p in &r.present {
            let Audience::Player(color) = frontier_platform::convert::audience_of_seat(p.seat)
            else {
                return Err(Status::invalid_argument("a present seat is white or black"));
            };
            present.push((game_id(&p.game_id)?, color));
        }
        let quiet = r
            .quiet
            .iter()
            .map(|q| Ok((game_id(&q.game_id)?, q.version)))
            .collect::<Result<Vec<_>, Status>>()?;
        let behind = self.service.tick(&present, &quiet).await.map_err(status)?;
        Ok(Response::new(pb::TickResponse {
            behind: behind.iter().map(ToString::to_string).collect(),
        }))
    }

    #[tracing::instrument(name = "game_session.resume", skip_all)]
    async fn resume(
        &self,
        request: Request<pb::ResumeRequest>,
    ) -> Result<Response<pb::ResumeResponse>, Status> {
        let r = request.into_inner();
        let game = game_id(&r.game_id)?;
        let (audience, resume) = self
            .service
            .resume(&game, &r.player_id, r.after_version, r.max_events as usize)
            .await
            .map_err(status)?;
        let result = match resume {
            Resume::Events(frames) => pb::resume_response::Result::Events(pb::Events {
                frames: frames
                    .into_iter()
                    .map(|e| pb::Frame {
                        version: e.version,
                        json: e.json.to_vec(),
                        ended: e.ended,
                    })
                    .collect(),
            }),
            Resume::View(view) => pb::resume_response::Result::View(pb::ViewResponse {
                game_id: r.game_id,
                version: view.version,
                seat: seat_of(view.audience) as i32,
                frame: view.frame.into_bytes(),
                ended: view.ended,
            }),
        };
        Ok(Response::new(pb::ResumeResponse {
            seat: seat_of(audience) as i32,
            result: Some(result),
        }))
    }
}
