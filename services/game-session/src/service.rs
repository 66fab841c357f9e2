//! The game-session service logic: load a game, apply a change with the domain core
//! (`game.rs`), render it per audience (`render.rs`), store it by compare-and-set
//! (retrying on a lost race), then publish what happened.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use frontier_platform::{GameId, PlayerId};
use frontier_protocol::ErrorCode;
use frontier_rules::{Audience, Color, RandomError, Shuffle, Variant};
use prost::Message as _;

use crate::bus::{AudienceFrames, EventBus};
use crate::error::SessionError;
use crate::game::{
    Action, Applied, Change, ClockSettings, Happened, LiveGame, NewGame, Player, TimeControlSpec,
};
use crate::store::{GameStore, Write};
use crate::{record, render, storage};

pub use frontier_platform::time::{Clock, SystemClock};

/// Where hidden-chess shuffles come from.
pub trait LayoutSource: Send + Sync + 'static {
    /// A shuffle for a new game.
    fn shuffle(&self) -> Result<Shuffle, RandomError>;
}

/// Shuffles from the operating system's secure random source: the only source in
/// production.
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomLayouts;

impl LayoutSource for RandomLayouts {
    fn shuffle(&self) -> Result<Shuffle, RandomError> {
        Shuffle::random()
    }
}

/// TEST ONLY: every hidden game gets this layout (with a random salt). Set through
/// game-session's start-up configuration, never by anything a client can reach.
#[derive(Debug, Clone)]
pub struct FixedLayout(pub frontier_rules::Layout);

impl LayoutSource for FixedLayout {
    fn shuffle(&self) -> Result<Shuffle, RandomError> {
        Shuffle::with_random_salt(self.0.clone())
    }
}

/// Tunables.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How clocks start (the length of a "minute", the first-move limit).
    pub clocks: ClockSettings,
    /// How long a share code stays valid.
    pub code_ttl: Duration,
    /// How long a finished game stays in Redis (its record is in the stream by then).
    pub finished_ttl: Duration,
    /// Most events a resume returns before it sends the whole view instead.
    pub resume_max: usize,
    /// How long a player of a game without clock must be away before the opponent may
    /// claim the game.
    pub absence_limit: Duration,
    /// How long after its last presence report a player still counts as connected (the
    /// gateway reports every 10 s by default).
    pub presence_timeout: Duration,
    /// TEST ONLY (`test-hooks`): start positions (FEN) for new standard or atomic boards
    /// created without one, per variant. No client can reach it.
    #[cfg(feature = "test-hooks")]
    pub test_start_fens: Vec<(Variant, String)>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            clocks: ClockSettings::default(),
            code_ttl: Duration::from_secs(24 * 3600),
            finished_ttl: Duration::from_secs(3600),
            resume_max: 256,
            absence_limit: Duration::from_secs(300),
            presence_timeout: Duration::from_secs(30),
            #[cfg(feature = "test-hooks")]
            test_start_fens: Vec::new(),
        }
    }
}

/// A game as one audience sees it now.
#[derive(Debug, Clone)]
pub struct SeenView {
    /// The version it shows.
    pub version: u64,
    /// Whose view it is.
    pub audience: Audience,
    /// The `game` frame (JSON).
    pub frame: String,
    /// The game is over: nothing follows.
    pub ended: bool,
}

impl SeenView {
    /// `game` at `version` as `audience` sees it, clocks read at `now_ms`.
    fn of(game: &LiveGame, version: u64, audience: Audience, now_ms: i64) -> SeenView {
        SeenView {
            version,
            audience,
            frame: render::view_frame(game, version, audience, now_ms),
            ended: game.is_finished(),
        }
    }
}

/// One logged event for one audience.
#[derive(Debug, Clone)]
pub struct LoggedEvent {
    /// Its version.
    pub version: u64,
    /// The frame (JSON).
    pub json: Bytes,
    /// It ended the game.
    pub ended: bool,
}

/// What a resume returns.
#[derive(Debug, Clone)]
pub enum Resume {
    /// The missing events, in order.
    Events(Vec<LoggedEvent>),
    /// The whole view (the gap was too large, or the client was ahead).
    View(SeenView),
}

/// A board to create.
#[derive(Debug, Clone)]
pub struct NewBoard {
    /// The creator.
    pub creator: Player,
    /// The variant.
    pub variant: Variant,
    /// The creator's colour; `None` for random.
    pub color: Option<Color>,
    /// Rated or casual.
    pub rated: bool,
    /// The clock.
    pub time_control: Option<TimeControlSpec>,
    /// TEST ONLY (`test-hooks`): a standard or atomic start position other than the usual
    /// one (FEN). Not in the gRPC API: only in-process callers (tests) can set it.
    #[cfg(feature = "test-hooks")]
    pub start_fen: Option<String>,
}

/// Share-code alphabet: no 0/O/1/I, so a code reads aloud without ambiguity.
pub const CODE_ALPHABET: &[u8; 32] = b"23456789ABCDEFGHJKLMNPQRSTUVWXYZ";

/// The service, generic over its storage and messaging.
pub struct GameService<S, B> {
    store: S,
    bus: B,
    clock: Arc<dyn Clock>,
    layouts: Arc<dyn LayoutSource>,
    settings: Settings,
}

const MAX_ATTEMPTS: usize = 32;

fn client(code: ErrorCode, message: impl Into<String>) -> SessionError {
    SessionError::Client(code, message.into())
}

/// The traffic metrics of a stored change: boards, games started and finished, moves, by
/// variant (moves/s and games live follow from their rates and differences).
fn count(live: &LiveGame, change: &Change) {
    let variant = live.info().variant.name();
    match &change.happened {
        Happened::Created => {
            metrics::counter!("frontier_game_session_boards_created_total", "variant" => variant)
                .increment(1);
        }
        Happened::Started => {
            metrics::counter!("frontier_game_session_games_started_total", "variant" => variant)
                .increment(1);
        }
        Happened::Moved(_) => moves_counter(live.info().variant).increment(1),
        _ => {}
    }
    if change.finished {
        metrics::counter!("frontier_game_session_games_finished_total", "variant" => variant)
            .increment(1);
    }
}

/// The moves counter of a variant, registered once (moves are the hot path).
fn moves_counter(variant: Variant) -> &'static metrics::Counter {
    static COUNTERS: std::sync::OnceLock<[metrics::Counter; 3]> = std::sync::OnceLock::new();
    let counters = COUNTERS.get_or_init(|| {
        Variant::ALL
            .map(|v| metrics::counter!("frontier_game_session_moves_total", "variant" => v.name()))
    });
    let index = Variant::ALL.iter().position(|v| *v == variant).unwrap_or(0);
    &counters[index]
}

fn random_code() -> Result<String, SessionError> {
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes)
        .map_err(|e| SessionError::Internal(format!("random source: {e}")))?;
    Ok(bytes
        .iter()
        .map(|b| CODE_ALPHABET[(*b & 31) as usize] as char)
        .collect())
}

fn random_color() -> Result<Color, SessionError> {
    let mut byte = [0u8; 1];
    getrandom::fill(&mut byte)
        .map_err(|e| SessionError::Internal(format!("random source: {e}")))?;
    Ok(if byte[0] & 1 == 0 {
        Color::White
    } else {
        Color::Black
    })
}

impl<S: GameStore, B: EventBus> GameService<S, B> {
    /// A service over this store and bus.
    pub fn new(
        store: S,
        bus: B,
        clock: Arc<dyn Clock>,
        layouts: Arc<dyn LayoutSource>,
        settings: Settings,
    ) -> Self {
        GameService {
            store,
            bus,
            clock,
            layouts,
            settings,
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The bus.
    pub fn bus(&self) -> &B {
        &self.bus
    }

    async fn load(&self, game: &GameId) -> Result<(u64, storage::Loaded), SessionError> {
        let (version, bytes) = self
            .store
            .load(game)
            .await?
            .ok_or_else(|| client(ErrorCode::GameNotFound, "no such game"))?;
        Ok((version, storage::decode(&bytes)?))
    }

    /// Publishes a stored change; failures are logged, since subscribers fill gaps from the
    /// log and finished records are retried from the outbox.
    async fn publish(&self, game: &GameId, live: &LiveGame, frames: &AudienceFrames) {
        if let Err(e) = self.bus.publish_game_event(game, frames).await {
            metrics::counter!("frontier_game_session_publish_errors_total", "kind" => "event")
                .increment(1);
            tracing::warn!(%game, error = %e, "publishing a game event failed; subscribers will resume from the log");
        }
        if live.is_finished() {
            self.publish_finished(game, live).await;
        }
    }

    async fn publish_finished(&self, game: &GameId, live: &LiveGame) {
        let Some(finished) = record::finished_record(live) else {
            // Nothing to record (a board that never started). Such a game never enters the
            // outbox; one left there by an older version leaves it here.
            if let Err(e) = self.store.outbox_done(game).await {
                tracing::warn!(%game, error = %e, "clearing the outbox failed");
            }
            return;
        };
        match self
            .bus
            .publish_finished(game, Bytes::from(finished.encode_to_vec()))
            .await
        {
            Ok(()) => {
                if let Err(e) = self.store.outbox_done(game).await {
                    tracing::warn!(%game, error = %e, "clearing the outbox failed; the record will be sent again (deduplicated)");
                }
            }
            Err(e) => {
                metrics::counter!("frontier_game_session_publish_errors_total", "kind" => "finished")
                    .increment(1);
                tracing::warn!(%game, error = %e, "publishing a finished game failed; the outbox will retry");
            }
        }
    }

    /// Re-publishes every finished game still in the outbox; returns how many were sent.
    pub async fn flush_outbox(&self) -> Result<usize, SessionError> {
        let mut sent = 0;
        for game in self.store.outbox().await? {
            match self.store.load(&game).await? {
                Some((_, bytes)) => {
                    let live = storage::decode(&bytes)?;
                    self.publish_finished(&game, &live).await;
                    sent += 1;
                }
                None => {
                    tracing::error!(%game, "a finished game expired before its record reached the stream");
                    self.store.outbox_done(&game).await?;
                }
            }
        }
        Ok(sent)
    }

    /// Creates a private board.
    pub async fn create_board(
        &self,
        board: NewBoard,
    ) -> Result<(GameId, String, Color), SessionError> {
        if board.rated && board.creator.guest {
            return Err(client(
                ErrorCode::GuestRated,
                "guests play casual games only; sign up to play rated",
            ));
        }
        if board.creator.id.parse::<PlayerId>().is_err() {
            return Err(client(ErrorCode::BadField, "creator id must be a UUID"));
        }
        if let Some(tc) = &board.time_control
            && !tc.is_valid()
        {
            return Err(client(
                ErrorCode::BadTimeControl,
                "a clock is 1 to 60 minutes with an increment of 0 to 60 seconds",
            ));
        }
        let color = match board.color {
            Some(c) => c,
            None => random_color()?,
        };
        let shuffle = match board.variant {
            Variant::Hidden => Some(
                self.layouts
                    .shuffle()
                    .map_err(|e| SessionError::Internal(e.to_string()))?,
            ),
            _ => None,
        };
        #[cfg(feature = "test-hooks")]
        let start_fen = board.start_fen.as_ref().or_else(|| {
            self.settings
                .test_start_fens
                .iter()
                .find(|(v, _)| *v == board.variant)
                .map(|(_, fen)| fen)
        });
        #[cfg(not(feature = "test-hooks"))]
        let start_fen: Option<&String> = None;
        let start = match start_fen {
            Some(fen) if board.variant != Variant::Hidden => Some(
                frontier_rules::Position::from_fen(board.variant, fen)
                    .map_err(|e| client(ErrorCode::BadField, e.to_string()))?,
            ),
            Some(_) => {
                return Err(client(
                    ErrorCode::BadField,
                    "hidden games start from the start position",
                ));
            }
            None => None,
        };
        let game = GameId::new();
        let mut code = random_code()?;
        let mut tries = 0;
        while !self
            .store
            .reserve_code(&code, &game, self.settings.code_ttl)
            .await?
        {
            tries += 1;
            if tries > 16 {
                return Err(SessionError::Internal(
                    "could not find a free share code".into(),
                ));
            }
            code = random_code()?;
        }
        let now = self.clock.now_ms();
        let mut live = storage::Loaded::new(LiveGame::new_board(
            NewGame {
                id: game.to_string(),
                code: code.clone(),
                creator: board.creator,
                creator_color: color,
                variant: board.variant,
                rated: board.rated,
                time_control: board.time_control,
                shuffle,
                start,
                now_ms: now,
            },
            self.settings.clocks,
        ));
        let created = Change {
            happened: Happened::Created,
            finished: false,
        };
        let frames = render::frames(&live, &created.happened, 1, now);
        let stored = self
            .store
            .compare_and_set(Write {
                game,
                expected: 0,
                version: 1,
                state: storage::encode(&mut live),
                entries: vec![storage::log_entry(&frames)],
                finished_ttl: None,
                outbox: false,
                deadline: None,
            })
            .await?;
        if stored {
            count(&live, &created);
        } else {
            return Err(SessionError::Internal(
                "a fresh game id was already taken".into(),
            ));
        }
        self.publish(&game, &live, &frames).await;
        Ok((game, code, color))
    }

    /// Joins a board by code.
    pub async fn join_board(
        &self,
        player: Player,
        code: &str,
    ) -> Result<(GameId, Color), SessionError> {
        let code = code.trim().to_ascii_uppercase();
        if code.len() != 6 || !code.bytes().all(|b| CODE_ALPHABET.contains(&b)) {
            return Err(client(ErrorCode::BoardNotFound, "no board has that code"));
        }
        if player.id.parse::<PlayerId>().is_err() {
            return Err(client(ErrorCode::BadField, "player id must be a UUID"));
        }
        let game = self
            .store
            .resolve_code(&code)
            .await?
            .ok_or_else(|| client(ErrorCode::BoardNotFound, "no board has that code"))?;
        for _ in 0..MAX_ATTEMPTS {
            let (version, mut live) = self.load(&game).await?;
            let now = self.clock.now_ms();
            let (color, change) = match live.join(player.clone(), now, self.settings.clocks) {
                Err(SessionError::AlreadySeated(color)) => return Ok((game, color)),
                other => other?,
            };
            if let Some(frames) = self.commit(&game, version, &mut live, &change, now).await? {
                self.publish(&game, &live, &frames).await;
                return Ok((game, color));
            }
        }
        Err(SessionError::Internal(
            "too much contention on this game".into(),
        ))
    }

    /// Renders `change` at the next version and stores it with the game if the game is
    /// still at `version`: the frames if it was stored, none if another instance got in
    /// first.
    async fn commit(
        &self,
        game: &GameId,
        version: u64,
        live: &mut storage::Loaded,
        change: &Change,
        now_ms: i64,
    ) -> Result<Option<AudienceFrames>, SessionError> {
        let frames = render::frames(live, &change.happened, version + 1, now_ms);
        let stored: bool = self
            .store
            .compare_and_set(Write {
                game: *game,
                expected: version,
                version: version + 1,
                state: storage::encode(live),
                entries: vec![storage::log_entry(&frames)],
                finished_ttl: change.finished.then_some(self.settings.finished_ttl),
                outbox: change.finished && live.is_recorded(),
                deadline: live.deadline(),
            })
            .await?;
        if stored {
            count(live, change);
        } else {
            metrics::counter!("frontier_game_session_cas_conflicts_total").increment(1);
        }
        Ok(stored.then_some(frames))
    }

    /// The game as `player_id` may see it (spectator if not seated).
    pub async fn view(&self, game: &GameId, player_id: &str) -> Result<SeenView, SessionError> {
        let (version, live) = self.load(game).await?;
        let audience = live.seat_of(player_id);
        Ok(SeenView::of(&live, version, audience, self.clock.now_ms()))
    }

    /// Applies a player's action.
    pub async fn act(
        &self,
        game: &GameId,
        player_id: &str,
        action_id: &str,
        expected_version: Option<u64>,
        action: &Action,
    ) -> Result<(u64, bool), SessionError> {
        if action_id.len() > frontier_protocol::MAX_ID_BYTES {
            return Err(client(ErrorCode::BadField, "id is longer than 64 bytes"));
        }
        for _ in 0..MAX_ATTEMPTS {
            let (version, mut live) = self.load(game).await?;
            let Audience::Player(seat) = live.seat_of(player_id) else {
                return Err(client(ErrorCode::NotInGame, "you do not play in this game"));
            };
            if !action_id.is_empty()
                && let Some(applied) = live.applied_action(seat, action_id)
            {
                return Ok((applied, true));
            }
            if let Some(expected) = expected_version
                && expected != version
            {
                return Err(client(
                    ErrorCode::StaleVersion,
                    format!("the game is at version {version}, not {expected}"),
                ));
            }
            let next = version + 1;
            let claim;
            let action = match action {
                Action::ClaimVictory { .. } => {
                    let seen = self.store.presence(game).await?;
                    claim = Action::ClaimVictory {
                        opponent_last_seen_ms: seen[!seat].unwrap_or(0),
                        absence_limit_ms: self.settings.absence_limit.as_millis() as i64,
                        presence_timeout_ms: self.settings.presence_timeout.as_millis() as i64,
                    };
                    &claim
                }
                other => other,
            };
            let now = self.clock.now_ms();
            match live.apply(seat, action, now)? {
                Applied::Done(change) => {
                    live.remember_action(seat, action_id, next);
                    if let Some(frames) =
                        self.commit(game, version, &mut live, &change, now).await?
                    {
                        self.publish(game, &live, &frames).await;
                        return Ok((next, false));
                    }
                }
                Applied::TimedOut(change, refusal) => {
                    if let Some(frames) =
                        self.commit(game, version, &mut live, &change, now).await?
                    {
                        self.publish(game, &live, &frames).await;
                        return Err(refusal);
                    }
                }
            }
            // Lost the race: another instance changed the game. Reload and decide again.
            tokio::task::yield_now().await;
        }
        Err(SessionError::Internal(
            "too much contention on this game".into(),
        ))
    }

    /// A clock service found `game`'s deadline due: ends the game on time if its clock
    /// really ran out, else schedules its current deadline again. Returns whether it ended
    /// and the deadline now scheduled.
    pub async fn expire_clock(&self, game: &GameId) -> Result<(bool, Option<i64>), SessionError> {
        for _ in 0..MAX_ATTEMPTS {
            let (version, mut live) = match self.load(game).await {
                Ok(loaded) => loaded,
                Err(SessionError::Client(ErrorCode::GameNotFound, _)) => {
                    self.store.schedule(game, None).await?;
                    return Ok((false, None));
                }
                Err(e) => return Err(e),
            };
            let now = self.clock.now_ms();
            match live.expire(now) {
                Some(change) => {
                    if let Some(frames) =
                        self.commit(game, version, &mut live, &change, now).await?
                    {
                        self.publish(game, &live, &frames).await;
                        return Ok((true, None));
                    }
                }
                None => {
                    let deadline = live.deadline();
                    self.store.schedule(game, deadline).await?;
                    return Ok((false, deadline));
                }
            }
        }
        Err(SessionError::Internal(
            "too much contention on this game".into(),
        ))
    }

    /// Records that `player_id` is connected to `game` (a no-op for spectators).
    pub async fn presence(&self, game: &GameId, player_id: &str) -> Result<(), SessionError> {
        let (_, live) = self.load(game).await?;
        if let Audience::Player(color) = live.seat_of(player_id) {
            self.store
                .touch_presence(game, color, self.clock.now_ms())
                .await?;
        }
        Ok(())
    }

    /// Events after `after`, for `player_id`'s seat; or the whole view.
    pub async fn resume(
        &self,
        game: &GameId,
        player_id: &str,
        after: u64,
        max: usize,
    ) -> Result<(Audience, Resume), SessionError> {
        let max = if max == 0 {
            self.settings.resume_max
        } else {
            max.min(self.settings.resume_max)
        };
        let (version, live) = self.load(game).await?;
        let audience = live.seat_of(player_id);
        let now = self.clock.now_ms();
        let full = || Resume::View(SeenView::of(&live, version, audience, now));
        if after > version || version - after > max as u64 {
            return Ok((audience, full()));
        }
        let entries = self
            .store
            .log_after(game, after, (version - after) as usize)
            .await?;
        if entries.len() as u64 != version - after {
            return Ok((audience, full()));
        }
        let mut frames = Vec::with_capacity(entries.len());
        for entry in entries {
            let entry = storage::decode_log_entry(&entry)?;
            frames.push(LoggedEvent {
                version: entry.version,
                json: entry.for_audience(audience).clone(),
                ended: entry.ended,
            });
        }
        Ok((audience, Resume::Events(frames)))
    }
}
