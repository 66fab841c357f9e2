//! The game-session service logic: load a game, apply a change with the engine, store it
//! by compare-and-set (retrying on a lost race), then publish what happened.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use frontier_platform::{GameId, PlayerId};
use frontier_proto::games::v1 as games;
use frontier_proto::gamesession::storage::v1 as storage;
use frontier_protocol::ErrorCode;
use frontier_rules::{Audience, Color, RandomError, Shuffle, Variant};
use prost::Message as _;

use crate::bus::{AudienceFrames, EventBus};
use crate::engine::{Action, Applied, Change, ClockSettings, Record};
use crate::error::SessionError;
use crate::store::{GameStore, Write};

/// Milliseconds since the Unix epoch. Injected so tests can control time.
pub trait Clock: Send + Sync + 'static {
    /// Now.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default()
    }
}

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
    /// TEST ONLY: start positions (FEN) for new standard or atomic boards created without
    /// one, per variant. Set only from a hidden start-up flag; no client can reach it.
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
            test_start_fens: Vec::new(),
        }
    }
}

/// What a resume returns.
#[derive(Debug, Clone)]
pub enum Resume {
    /// The missing events, in order.
    Events(Vec<(u64, Bytes)>),
    /// The whole view (the gap was too large, or the client was ahead).
    View(u64, String),
}

/// A board to create.
#[derive(Debug, Clone)]
pub struct NewBoard {
    /// The creator.
    pub creator: games::Player,
    /// The variant.
    pub variant: Variant,
    /// The creator's colour; `None` for random.
    pub color: Option<Color>,
    /// Rated or casual.
    pub rated: bool,
    /// The clock.
    pub time_control: Option<games::TimeControl>,
    /// TEST ONLY: a standard or atomic start position other than the usual one (FEN).
    /// Not in the gRPC API: only in-process callers (tests) can set it.
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

fn log_entry(frames: &AudienceFrames) -> Bytes {
    Bytes::from(
        storage::LogEntry {
            version: frames.version,
            white: frames.white.to_vec(),
            black: frames.black.to_vec(),
            public: frames.public.to_vec(),
        }
        .encode_to_vec(),
    )
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

    async fn load(&self, game: &GameId) -> Result<(u64, Record), SessionError> {
        let (version, bytes) = self
            .store
            .load(game)
            .await?
            .ok_or_else(|| client(ErrorCode::GameNotFound, "no such game"))?;
        Ok((version, Record::decode(&bytes)?))
    }

    /// Publishes a stored change; failures are logged, since subscribers fill gaps from the
    /// log and finished records are retried from the outbox.
    async fn publish(&self, game: &GameId, record: &Record, change: &Change) {
        if let Err(e) = self.bus.publish_game_event(game, &change.frames).await {
            tracing::warn!(%game, error = %e, "publishing a game event failed; subscribers will resume from the log");
        }
        if change.finished {
            self.publish_finished(game, record).await;
        }
    }

    async fn publish_finished(&self, game: &GameId, record: &Record) {
        let Some(finished) = record.finished_record() else {
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
                    let record = Record::decode(&bytes)?;
                    self.publish_finished(&game, &record).await;
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
            && (!tc.initial_seconds.is_multiple_of(60)
                || !(60..=3600).contains(&tc.initial_seconds)
                || tc.increment_seconds > 60)
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
        let start_fen = board.start_fen.as_ref().or_else(|| {
            self.settings
                .test_start_fens
                .iter()
                .find(|(v, _)| *v == board.variant)
                .map(|(_, fen)| fen)
        });
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
        let mut record = Record::new_board(
            &game.to_string(),
            board.creator,
            color,
            board.variant,
            board.rated,
            board.time_control,
            shuffle,
            start,
            &code,
            self.clock.now_ms(),
            self.settings.clocks,
        );
        let frames = record.created_frames();
        let stored = self
            .store
            .compare_and_set(Write {
                game,
                expected: 0,
                version: 1,
                state: record.encode(),
                entries: vec![log_entry(&frames)],
                finished_ttl: None,
                outbox: false,
                deadline: None,
            })
            .await?;
        if !stored {
            return Err(SessionError::Internal(
                "a fresh game id was already taken".into(),
            ));
        }
        let change = Change {
            frames,
            finished: false,
        };
        self.publish(&game, &record, &change).await;
        Ok((game, code, color))
    }

    /// Joins a board by code.
    pub async fn join_board(
        &self,
        player: games::Player,
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
            let (version, mut record) = self.load(&game).await?;
            let next = version + 1;
            let (color, change) = match record.join(
                player.clone(),
                next,
                self.clock.now_ms(),
                self.settings.clocks,
            ) {
                Err(SessionError::AlreadySeated(color)) => return Ok((game, color)),
                other => other?,
            };
            if self.commit(&game, version, &mut record, &change).await? {
                self.publish(&game, &record, &change).await;
                return Ok((game, color));
            }
        }
        Err(SessionError::Internal(
            "too much contention on this game".into(),
        ))
    }

    async fn commit(
        &self,
        game: &GameId,
        version: u64,
        record: &mut Record,
        change: &Change,
    ) -> Result<bool, SessionError> {
        Ok(self
            .store
            .compare_and_set(Write {
                game: *game,
                expected: version,
                version: change.frames.version,
                state: record.encode(),
                entries: vec![log_entry(&change.frames)],
                finished_ttl: change.finished.then_some(self.settings.finished_ttl),
                outbox: change.finished && record.is_recorded(),
                deadline: record.deadline(),
            })
            .await?)
    }

    /// The game as `player_id` may see it (spectator if not seated).
    pub async fn view(
        &self,
        game: &GameId,
        player_id: &str,
    ) -> Result<(u64, Audience, String), SessionError> {
        let (version, record) = self.load(game).await?;
        let audience = record.seat_of(player_id);
        Ok((
            version,
            audience,
            record.view_frame(version, audience, self.clock.now_ms()),
        ))
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
            let (version, mut record) = self.load(game).await?;
            let Audience::Player(seat) = record.seat_of(player_id) else {
                return Err(client(ErrorCode::NotInGame, "you do not play in this game"));
            };
            if !action_id.is_empty()
                && let Some(applied) = record.applied_action(seat, action_id)
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
            match record.apply(seat, action, next, self.clock.now_ms())? {
                Applied::Done(change) => {
                    record.remember_action(seat, action_id, next);
                    if self.commit(game, version, &mut record, &change).await? {
                        self.publish(game, &record, &change).await;
                        return Ok((next, false));
                    }
                }
                Applied::TimedOut(change, refusal) => {
                    if self.commit(game, version, &mut record, &change).await? {
                        self.publish(game, &record, &change).await;
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
            let (version, mut record) = match self.load(game).await {
                Ok(loaded) => loaded,
                Err(SessionError::Client(ErrorCode::GameNotFound, _)) => {
                    self.store.schedule(game, None).await?;
                    return Ok((false, None));
                }
                Err(e) => return Err(e),
            };
            let next = version + 1;
            match record.expire(next, self.clock.now_ms()) {
                Some(change) => {
                    if self.commit(game, version, &mut record, &change).await? {
                        self.publish(game, &record, &change).await;
                        return Ok((true, None));
                    }
                }
                None => {
                    let deadline = record.deadline();
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
        let (_, record) = self.load(game).await?;
        if let Audience::Player(color) = record.seat_of(player_id) {
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
        let (version, record) = self.load(game).await?;
        let audience = record.seat_of(player_id);
        let now = self.clock.now_ms();
        let full = || Resume::View(version, record.view_frame(version, audience, now));
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
            let entry = storage::LogEntry::decode(entry.as_ref())
                .map_err(|e| SessionError::Corrupt(format!("log entry: {e}")))?;
            let bytes = match audience {
                Audience::Player(Color::White) => entry.white,
                Audience::Player(Color::Black) => entry.black,
                Audience::Spectator => entry.public,
            };
            frames.push((entry.version, Bytes::from(bytes)));
        }
        Ok((audience, Resume::Events(frames)))
    }
}
