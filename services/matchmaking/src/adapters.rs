//! The seams' production adapters: `matched` notices on NATS, ratings from the rating
//! service, games from game-session.

use frontier_pairing::Pool;
use frontier_pairing::Ratings;
use frontier_platform::Namespace;
use frontier_platform::convert::{bot_level_to_proto, variant_from_proto, variant_to_proto};
use frontier_platform::grpc::refusal_code;
use frontier_platform::trace::{Traced, traced};
use frontier_proto::games::v1 as games;
use frontier_proto::gamesession::v1 as session;
use frontier_proto::gamesession::v1::game_session_client::GameSessionClient;
use frontier_proto::rating::v1 as rating;
use frontier_proto::rating::v1::ratings_client::RatingsClient;
use frontier_protocol::{BotLevel, ErrorCode};
use frontier_rules::Variant;
use prost::Message as _;

use crate::grpc::matched_to_proto;
use crate::matchmaker::{CreateError, GameMaker, MatchedNotice, Notifier, RatingSource};
use crate::ticket::{MatchRecord, Seat};

/// Publishes each notice, protobuf `frontier.matchmaking.v1.Matched`, on the player's
/// subject `<ns>.player.<id>`.
#[derive(Clone)]
pub struct NatsNotifier {
    nats: async_nats::Client,
    ns: Namespace,
}

impl NatsNotifier {
    /// Over this client, in this namespace.
    pub fn new(nats: async_nats::Client, ns: Namespace) -> NatsNotifier {
        NatsNotifier { nats, ns }
    }
}

impl Notifier for NatsNotifier {
    async fn notify(&self, player: &str, notice: &MatchedNotice) {
        let payload = matched_to_proto(notice).encode_to_vec();
        if let Err(e) = self
            .nats
            .publish(self.ns.player_subject(player), payload.into())
            .await
        {
            // At most once by design: the notice is kept for `status`.
            tracing::warn!(error = %e, "a matched notice was not published");
        }
    }
}

/// Publishes each notice as [`NatsNotifier`] does, on an in-process bus (`frontier dev`),
/// where the gateway's follower of `<ns>.player.<id>` picks it up.
#[derive(Clone)]
pub struct LocalNotifier {
    bus: frontier_platform::local_bus::LocalBus,
    ns: Namespace,
}

impl LocalNotifier {
    /// On this bus, in this namespace.
    pub fn new(bus: frontier_platform::local_bus::LocalBus, ns: Namespace) -> LocalNotifier {
        LocalNotifier { bus, ns }
    }
}

impl Notifier for LocalNotifier {
    async fn notify(&self, player: &str, notice: &MatchedNotice) {
        let payload = matched_to_proto(notice).encode_to_vec();
        self.bus
            .publish(self.ns.player_subject(player), 0, false, payload.into());
    }
}

/// How long a seek waits for the player's ratings.
const RATING_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);

/// Ratings from the rating service's `GetPlayer` (rounded to whole points).
#[derive(Clone)]
pub struct RatingServiceSource {
    client: RatingsClient<tonic::transport::Channel>,
}

impl RatingServiceSource {
    /// Over this client.
    pub fn new(client: RatingsClient<tonic::transport::Channel>) -> RatingServiceSource {
        RatingServiceSource { client }
    }
}

impl RatingSource for RatingServiceSource {
    async fn ratings(&self, player: &str) -> Option<Ratings> {
        let mut client = self.client.clone();
        let mut request = tonic::Request::new(rating::GetPlayerRequest {
            player_id: player.to_owned(),
        });
        // A seek does not wait long on ratings: past this, the player counts as 1500.
        request.set_timeout(RATING_TIMEOUT);
        let answer = client
            .get_player(request)
            .await
            .map_err(|status| tracing::warn!(%status, "ratings unavailable; counting 1500"))
            .ok()?
            .into_inner();
        let mut ratings = Ratings::NEW;
        for r in answer.ratings {
            if !r.rating.is_finite() {
                continue;
            }
            let points = r.rating.round().clamp(0.0, 4000.0) as i32;
            match variant_from_proto(r.variant) {
                Some(Variant::Standard) => ratings.standard = points,
                Some(Variant::Hidden) => ratings.hidden = points,
                Some(Variant::Atomic) => ratings.atomic = points,
                None => {}
            }
        }
        Some(ratings)
    }
}

/// Ratings are looked up only if a rating service is configured.
#[derive(Clone)]
pub enum Ratingsource {
    /// The rating service.
    Service(RatingServiceSource),
    /// Everyone 1500.
    None,
}

impl RatingSource for Ratingsource {
    async fn ratings(&self, player: &str) -> Option<Ratings> {
        match self {
            Ratingsource::Service(s) => s.ratings(player).await,
            Ratingsource::None => Some(Ratings::NEW),
        }
    }
}

/// Creates games with game-session's `StartMatch`, under the match id (so a repeat finds
/// the first game).
#[derive(Clone)]
pub struct GameSessionMaker {
    client: GameSessionClient<Traced>,
}

impl GameSessionMaker {
    /// Over these game-session URLs (connected lazily).
    pub fn new(urls: &[String]) -> Result<GameSessionMaker, String> {
        let channel = frontier_proto::game_session_channel(urls)?;
        Ok(GameSessionMaker {
            client: GameSessionClient::new(traced(channel)),
        })
    }

    /// Over this client (an in-process game-session in `frontier dev`).
    pub fn over(client: GameSessionClient<Traced>) -> GameSessionMaker {
        GameSessionMaker { client }
    }
}

/// A seat as game-session takes it.
fn match_seat(seat: &Seat) -> Result<session::MatchSeat, CreateError> {
    Ok(session::MatchSeat {
        seat: Some(match seat {
            Seat::Player(p) => session::match_seat::Seat::Player(games::Player {
                id: p.id.clone(),
                name: p.name.clone(),
                guest: p.guest,
                bot: false,
                bot_level: games::BotLevel::Unspecified as i32,
            }),
            Seat::Bot(level) => {
                let level = BotLevel::parse(level)
                    .ok_or_else(|| CreateError::Refused(format!("unknown bot level `{level}`")))?;
                session::match_seat::Seat::Bot(bot_level_to_proto(level) as i32)
            }
        }),
    })
}

/// Whether a failed call certainly never reached a game-session: the connection was
/// refused. Anything else (a reset, a timeout) may have come after the game was made.
fn never_sent(status: &tonic::Status) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        source = e.source();
    }
    false
}

impl GameMaker for GameSessionMaker {
    async fn create(&self, record: &MatchRecord) -> Result<String, CreateError> {
        let pool: Pool = record
            .pool
            .parse()
            .map_err(|e| CreateError::Refused(format!("{e}")))?;
        let request = session::StartMatchRequest {
            match_id: record.id.clone(),
            variant: variant_to_proto(pool.variant) as i32,
            rated: record.rated,
            time_control: Some(games::TimeControl {
                initial_seconds: pool.clock.minutes() * 60,
                increment_seconds: pool.clock.increment(),
            }),
            white: Some(match_seat(&record.white)?),
            black: Some(match_seat(&record.black)?),
        };
        let mut request = tonic::Request::new(request);
        request.set_timeout(CREATE_TIMEOUT);
        let mut client = self.client.clone();
        match client.start_match(request).await {
            Ok(answer) => Ok(answer.into_inner().game_id),
            Err(status) => match refusal_code(&status) {
                Some(ErrorCode::BadField | ErrorCode::GuestRated | ErrorCode::BadTimeControl) => {
                    Err(CreateError::Refused(status.message().to_owned()))
                }
                None if never_sent(&status) => Err(CreateError::Unreachable(status.to_string())),
                _ => Err(CreateError::Unknown(status.to_string())),
            },
        }
    }
}

/// How long one `StartMatch` call may take before its outcome counts as unknown.
const CREATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
