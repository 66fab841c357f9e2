//! Rematches: after a finished game between two people, either may offer one; when the
//! other accepts, a new game starts with the same settings and colours swapped.
//!
//! The offer lives next to the finished game in the store (Redis, with a TTL), so every
//! game-session instance sees it. The rematch's id is drawn when the offer is made and kept
//! with it; accepting marks the offer accepted in one step and makes the game through
//! [`GameService::start_match`] under that id, which is idempotent: two accepts racing on two
//! instances make one game, and only the call that made it publishes `rematch_started`. An
//! accepted offer stays until its TTL, so a repeat of either player's offer or accept
//! answers the same game. Both players hear of every change on their player subject
//! (`<ns>.player.<id>`), as client-protocol frames.

use bytes::Bytes;
use frontier_platform::GameId;
use frontier_protocol::{ErrorCode, ServerMessage, to_json};
use frontier_rules::{Audience, ByColor, Color};

use crate::bus::EventBus;
use crate::error::SessionError;
use crate::game::LiveGame;
use crate::service::{GameService, MatchSeat, NewMatch, client};
use crate::storage::Loaded;
use crate::store::{GameStore, RematchOffer};

/// Where a rematch stands after a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RematchState {
    /// An offer stands, by this colour (of the finished game).
    Offered(Color),
    /// No offer stands: the caller (this colour of the finished game) declined the
    /// opponent's offer (`declined`) or withdrew their own (`withdrawn`) now.
    Cancelled(Color, &'static str),
    /// The rematch exists: its id, and the caller's colour in it.
    Started(GameId, Color),
}

/// Why offers lapse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lapse {
    /// The player left the game.
    Left,
    /// The player went to quick match.
    Seeking,
}

impl Lapse {
    fn reason(self) -> &'static str {
        match self {
            Lapse::Left => "left",
            Lapse::Seeking => "seeking",
        }
    }
}

/// The players' ids of a finished game between two people (checked before).
fn player_ids(live: &LiveGame) -> ByColor<String> {
    ByColor::new_with(|c| live.player(c).map(|p| p.id.clone()).unwrap_or_default())
}

impl<S: GameStore, B: EventBus> GameService<S, B> {
    /// The finished game between two people in which `player_id` sits, and their colour;
    /// the typed refusal otherwise.
    async fn rematch_game(
        &self,
        game: &GameId,
        player_id: &str,
    ) -> Result<(Loaded, Color), SessionError> {
        let (_, live) = self.load(game).await?;
        let Audience::Player(seat) = live.seat_of(player_id) else {
            return Err(client(ErrorCode::NotInGame, "you do not play in this game"));
        };
        let people = Color::ALL
            .into_iter()
            .all(|c| live.player(c).is_some_and(|p| !p.bot));
        if !people {
            return Err(client(
                ErrorCode::RematchUnavailable,
                "a rematch is for a game between two people",
            ));
        }
        if !live.is_finished() {
            return Err(client(
                ErrorCode::GameNotOver,
                "a rematch can be offered once the game is over",
            ));
        }
        Ok((live, seat))
    }

    /// Tells both players of `live` a frame made for each colour.
    async fn tell_both(&self, live: &LiveGame, frame: impl Fn(Color) -> ServerMessage) {
        let ids = player_ids(live);
        for color in Color::ALL {
            let json = Bytes::from(to_json(&frame(color)));
            if let Err(e) = self.bus.publish_notice(&ids[color], json).await {
                metrics::counter!("frontier_game_session_publish_errors_total", "kind" => "notice")
                    .increment(1);
                tracing::warn!(error = %e, "publishing a rematch notice failed");
            }
        }
    }

    /// `player_id` offers a rematch of `game`. If the opponent's offer stands, this accepts
    /// it; if the rematch exists already, answers it.
    pub async fn offer_rematch(
        &self,
        game: &GameId,
        player_id: &str,
    ) -> Result<RematchState, SessionError> {
        let (live, seat) = self.rematch_game(game, player_id).await?;
        let mut standing = self.store.rematch(game).await?;
        if standing.is_none() {
            let offer = RematchOffer {
                by: seat,
                accepted: false,
                new_game: GameId::new(),
            };
            let ids = player_ids(&live);
            standing = self
                .store
                .offer_rematch(
                    game,
                    offer,
                    [&ids.white, &ids.black],
                    self.settings.rematch_ttl,
                )
                .await?;
            if standing.is_none() {
                metrics::counter!("frontier_game_session_rematches_total", "event" => "offered")
                    .increment(1);
                let game_id = game.to_string();
                self.tell_both(&live, |_| ServerMessage::RematchOffered {
                    id: None,
                    game_id: game_id.clone(),
                    by: seat.name().to_owned(),
                })
                .await;
                return Ok(RematchState::Offered(seat));
            }
        }
        match standing {
            Some(offer) if offer.accepted => self.start_rematch(game, &live, seat, offer).await,
            Some(offer) if offer.by == seat => Err(client(
                ErrorCode::RematchAlreadyOffered,
                "you already offered a rematch",
            )),
            // The opponent's offer stands: this accepts it.
            _ => self.accept(game, &live, seat).await,
        }
    }

    /// `player_id` accepts the opponent's rematch offer for `game`: the rematch starts (or,
    /// accepted already, is answered again).
    pub async fn accept_rematch(
        &self,
        game: &GameId,
        player_id: &str,
    ) -> Result<RematchState, SessionError> {
        let (live, seat) = self.rematch_game(game, player_id).await?;
        self.accept(game, &live, seat).await
    }

    async fn accept(
        &self,
        game: &GameId,
        live: &LiveGame,
        seat: Color,
    ) -> Result<RematchState, SessionError> {
        match self.store.accept_rematch(game, !seat).await? {
            Some(offer) => self.start_rematch(game, live, seat, offer).await,
            None => Err(client(
                ErrorCode::NoRematchOffer,
                "no rematch offer of your opponent's stands",
            )),
        }
    }

    /// Makes the accepted rematch (idempotent by its id): same variant, clock and rating,
    /// colours swapped. The call that made it tells both players.
    async fn start_rematch(
        &self,
        game: &GameId,
        live: &LiveGame,
        seat: Color,
        offer: RematchOffer,
    ) -> Result<RematchState, SessionError> {
        let person = |c: Color| {
            live.player(c)
                .cloned()
                .map(MatchSeat::Person)
                .ok_or_else(|| SessionError::Internal("a rematch lost a player".into()))
        };
        let info = live.info();
        let (new_game, _, created) = self
            .start_match(NewMatch {
                game: offer.new_game,
                white: person(Color::Black)?,
                black: person(Color::White)?,
                variant: info.variant,
                rated: info.rated,
                time_control: info.time_control,
            })
            .await?;
        if created {
            metrics::counter!("frontier_game_session_rematches_total", "event" => "started")
                .increment(1);
            let (game_id, new_game_id) = (game.to_string(), new_game.to_string());
            self.tell_both(live, |c| ServerMessage::RematchStarted {
                id: None,
                game_id: game_id.clone(),
                new_game_id: new_game_id.clone(),
                color: (!c).name().to_owned(),
            })
            .await;
        }
        Ok(RematchState::Started(new_game, !seat))
    }

    /// `player_id` declines the opponent's offer for `game`, or withdraws their own.
    pub async fn decline_rematch(
        &self,
        game: &GameId,
        player_id: &str,
    ) -> Result<RematchState, SessionError> {
        let (live, seat) = self.rematch_game(game, player_id).await?;
        let Some(offer) = self.store.drop_rematch(game).await? else {
            return Err(client(
                ErrorCode::NoRematchOffer,
                "no rematch offer stands for this game",
            ));
        };
        let reason = if offer.by == seat {
            "withdrawn"
        } else {
            "declined"
        };
        self.cancelled(game, &live, seat, reason).await;
        Ok(RematchState::Cancelled(seat, reason))
    }

    async fn cancelled(&self, game: &GameId, live: &LiveGame, by: Color, reason: &'static str) {
        metrics::counter!("frontier_game_session_rematches_total", "event" => reason).increment(1);
        let game_id = game.to_string();
        self.tell_both(live, |_| ServerMessage::RematchCancelled {
            id: None,
            game_id: game_id.clone(),
            by: by.name().to_owned(),
            reason: reason.to_owned(),
        })
        .await;
    }

    /// `player_id` left `game` (or every game of theirs, with none) or went to quick match:
    /// the offers standing there lapse (accepted ones stay). Returns how many lapsed.
    pub async fn lapse_rematches(
        &self,
        player_id: &str,
        game: Option<GameId>,
        why: Lapse,
    ) -> Result<u32, SessionError> {
        let games = match game {
            Some(game) => vec![game],
            None => self.store.rematch_games(player_id).await?,
        };
        let mut lapsed = 0;
        for game in games {
            let live = match self.load(&game).await {
                Ok((_, loaded)) => loaded,
                Err(SessionError::Client(ErrorCode::GameNotFound, _)) => continue,
                Err(e) => return Err(e),
            };
            let Audience::Player(seat) = live.seat_of(player_id) else {
                continue;
            };
            if self.store.drop_rematch(&game).await?.is_some() {
                lapsed += 1;
                self.cancelled(&game, &live, seat, why.reason()).await;
            }
        }
        Ok(lapsed)
    }
}
