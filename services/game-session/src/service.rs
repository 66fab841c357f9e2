//! The game-session service logic: load a game, apply a change with the domain core
//! (`game.rs`), render it per audience (`render.rs`), store it by compare-and-set
//! (retrying on a lost race), then publish what happened.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use frontier_platform::{GameId, PlayerId};
use frontier_protocol::{BotJob, BotLevel, ErrorCode};
use frontier_rules::{Audience, Color, RandomError, Shuffle, Variant};
use prost::Message as _;

use crate::bus::{AudienceFrames, EventBus};
use crate::error::SessionError;
use crate::game::{
    Action, Applied, Change, ClockSettings, Happened, LiveGame, NewGame, Player, TimeControlSpec,
};
use crate::store::{GameStore, OutboxJob, Stored, Write};
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
    /// How long a rematch offer stands (at most `finished_ttl`: the offer needs its game).
    pub rematch_ttl: Duration,
    /// Games whose last committed state this instance keeps for their next action (0: read
    /// every action's game from the store). See [`crate::cache`].
    pub state_cache: usize,
    /// The storage format written (`crate::storage`: 1, 2 or 3; read: all three).
    pub storage_format: u32,
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
            state_cache: crate::cache::DEFAULT_CAPACITY,
            storage_format: crate::storage::DEFAULT_FORMAT,
            absence_limit: Duration::from_secs(300),
            presence_timeout: Duration::from_secs(30),
            rematch_ttl: Duration::from_secs(600),
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

/// A game against the computer to start.
#[derive(Debug, Clone)]
pub struct NewComputerGame {
    /// The person.
    pub player: Player,
    /// The variant.
    pub variant: Variant,
    /// The computer's level.
    pub level: BotLevel,
    /// The person's colour; `None` for random.
    pub color: Option<Color>,
    /// The clock.
    pub time_control: Option<TimeControlSpec>,
    /// TEST ONLY (`test-hooks`): a standard or atomic start position other than the usual
    /// one (FEN). Not in the gRPC API: only in-process callers (tests) can set it.
    #[cfg(feature = "test-hooks")]
    pub start_fen: Option<String>,
}

/// One seat of a matchmade game.
#[derive(Debug, Clone)]
pub enum MatchSeat {
    /// A person.
    Person(Player),
    /// The computer at this level.
    Bot(BotLevel),
}

/// A matchmade game: two given seats, started at once.
#[derive(Debug, Clone)]
pub struct NewMatch {
    /// The match id, which becomes the game's id: a repeat of the request (a retry, or
    /// another matchmaking instance that took the pairing over) finds this game instead of
    /// making a second one.
    pub game: GameId,
    /// White.
    pub white: MatchSeat,
    /// Black.
    pub black: MatchSeat,
    /// The variant.
    pub variant: Variant,
    /// Rated (two registered people only).
    pub rated: bool,
    /// The clock.
    pub time_control: Option<TimeControlSpec>,
}

/// A stored change, ready to publish: its frames, and the bot job it put in the outbox.
#[derive(Debug)]
struct Committed {
    frames: Vec<AudienceFrames>,
    job: Option<OutboxJob>,
}

/// The job of the bot that `live` (at `version`, read at `now_ms`) leaves to act, if any:
/// its view is exactly the `game` frame's game for the bot's seat.
pub fn bot_job(game: &GameId, live: &LiveGame, version: u64, now_ms: i64) -> Option<OutboxJob> {
    let (color, bot) = live.bot_to_act()?;
    let level = bot.bot_level?;
    let game_id = game.to_string();
    let job = BotJob {
        job: BotJob::id_for(&game_id, version),
        game_id,
        version,
        player_id: bot.id.clone(),
        seat: color.name().to_owned(),
        level: level.name().to_owned(),
        view: render::view_wire(live, Audience::Player(color), now_ms),
        enqueued_at_ms: now_ms,
    };
    match serde_json::to_vec(&job) {
        Ok(payload) => Some(OutboxJob {
            id: job.job,
            payload: Bytes::from(payload),
        }),
        Err(e) => {
            tracing::error!(%game, error = %e, "a bot job could not be encoded");
            None
        }
    }
}

/// A person's id must be a UUID and not a computer player's.
fn check_person(player: &Player) -> Result<(), SessionError> {
    match player.id.parse::<PlayerId>() {
        Ok(id) if id.bot_level().is_none() && !player.bot => Ok(()),
        Ok(_) => Err(client(
            ErrorCode::BadField,
            "a computer player cannot take this seat",
        )),
        Err(_) => Err(client(ErrorCode::BadField, "player id must be a UUID")),
    }
}

/// Share-code alphabet: no 0/O/1/I, so a code reads aloud without ambiguity.
pub const CODE_ALPHABET: &[u8; 32] = b"23456789ABCDEFGHJKLMNPQRSTUVWXYZ";

/// The service, generic over its storage and messaging.
pub struct GameService<S, B> {
    pub(crate) store: S,
    pub(crate) bus: B,
    pub(crate) clock: Arc<dyn Clock>,
    layouts: Arc<dyn LayoutSource>,
    pub(crate) settings: Settings,
    /// The states this instance last committed, for the next action on each game.
    cache: crate::cache::StateCache,
}

const MAX_ATTEMPTS: usize = 32;

/// What a player's action did.
#[derive(Debug, Clone)]
pub struct Acted {
    /// The version it produced (for a repeat, the version it produced then).
    pub version: u64,
    /// It was applied before (by its id): nothing changed now.
    pub duplicate: bool,
    /// When it was stored by this call: the event frame of `version` as the acting player's
    /// seat sees it — the frame their seat's subject carries — for the gateway to send with
    /// the ack. None for a repeat.
    pub frame: Option<Bytes>,
    /// The action ended the game (stored by this call).
    pub ended: bool,
}

/// How one attempt at a player's action ended.
enum Attempt {
    /// Stored at this version, with the actor's frame of it and whether it ended the game.
    Stored(u64, Bytes, bool),
    /// The same action (by id) was applied before, at this version.
    Repeated(u64),
    /// A change was stored (the clock ran out first) and the action refused.
    Refused(SessionError),
    /// Another write got in first.
    LostRace,
}

pub(crate) fn client(code: ErrorCode, message: impl Into<String>) -> SessionError {
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
            cache: crate::cache::StateCache::new(settings.state_cache),
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

    pub(crate) async fn load(&self, game: &GameId) -> Result<(u64, storage::Loaded), SessionError> {
        let stored = self
            .store
            .load(game)
            .await?
            .ok_or_else(|| client(ErrorCode::GameNotFound, "no such game"))?;
        Ok((
            stored.version,
            storage::decode(&stored.state, &stored.moves)?,
        ))
    }

    /// Publishes a stored change; failures are logged, since subscribers fill gaps from the
    /// log, and finished records and bot jobs are retried from their outboxes.
    async fn publish(&self, game: &GameId, live: &LiveGame, committed: &Committed) {
        let publishing = std::time::Instant::now();
        self.publish_all(game, live, committed).await;
        stage(Stage::Publish).record(publishing.elapsed().as_secs_f64());
    }

    async fn publish_all(&self, game: &GameId, live: &LiveGame, committed: &Committed) {
        for frames in &committed.frames {
            if let Err(e) = self.bus.publish_game_event(game, frames).await {
                metrics::counter!("frontier_game_session_publish_errors_total", "kind" => "event")
                    .increment(1);
                tracing::warn!(%game, error = %e, "publishing a game event failed; subscribers will resume from the log");
            }
        }
        if let Some(job) = &committed.job {
            self.publish_job(live.info().variant, job).await;
        }
        if live.is_finished() {
            self.publish_finished(game, live).await;
        }
    }

    /// Enqueues a bot job and, once the queue acknowledged it, takes it out of the outbox.
    async fn publish_job(&self, variant: Variant, job: &OutboxJob) {
        match self
            .bus
            .publish_bot_job(variant, &job.id, job.payload.clone())
            .await
        {
            Ok(()) => {
                metrics::counter!("frontier_game_session_bot_jobs_enqueued_total", "variant" => variant.name())
                    .increment(1);
                if let Err(e) = self.store.bot_outbox_done(&job.id).await {
                    tracing::warn!(job = %job.id, error = %e, "clearing the bot-job outbox failed; the job will be sent again (deduplicated)");
                }
            }
            Err(e) => {
                metrics::counter!("frontier_game_session_publish_errors_total", "kind" => "bot_job")
                    .increment(1);
                tracing::warn!(job = %job.id, error = %e, "enqueueing a bot job failed; the outbox will retry");
            }
        }
    }

    /// Enqueues every bot job still in the outbox whose game is still at the job's version;
    /// a job for a version that is no longer current (the game moved on, ended or expired)
    /// is dropped and counted. Returns how many were sent.
    pub async fn flush_bot_outbox(&self) -> Result<usize, SessionError> {
        let mut sent = 0;
        let jobs = self.store.bot_outbox().await?;
        metrics::gauge!("frontier_game_session_outbox_entries", "outbox" => "bot_jobs")
            .set(jobs.len() as f64);
        for job in jobs {
            let current = match job.game_and_version() {
                Some((game, version)) => match self.store.load(&game).await? {
                    Some(stored) if stored.version == version => {
                        serde_json::from_slice::<BotJob>(&job.payload)
                            .ok()
                            .and_then(|j| j.view.variant.parse::<Variant>().ok())
                    }
                    _ => None,
                },
                None => None,
            };
            match current {
                Some(variant) => {
                    self.publish_job(variant, &job).await;
                    sent += 1;
                }
                None => {
                    metrics::counter!("frontier_game_session_bot_jobs_dropped_total", "reason" => "stale")
                        .increment(1);
                    self.store.bot_outbox_done(&job.id).await?;
                }
            }
        }
        Ok(sent)
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
        let games = self.store.outbox().await?;
        metrics::gauge!("frontier_game_session_outbox_entries", "outbox" => "finished")
            .set(games.len() as f64);
        for game in games {
            // A record goes out only once the replicas hold the end it records: the write
            // that ended the game may have been answered `unavailable` for want of them,
            // and a failover now would take back an end the stream had announced.
            if let Err(e) = self.store.replicated(&game).await {
                tracing::warn!(%game, error = %e, "a finished game's end is not on the replicas yet: next sweep");
                continue;
            }
            match self.store.load(&game).await? {
                Some(stored) => {
                    let live = storage::decode(&stored.state, &stored.moves)?;
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
        check_person(&board.creator)?;
        if let Some(tc) = &board.time_control
            && !tc.is_valid()
        {
            return Err(client(
                ErrorCode::BadTimeControl,
                "a clock is 1 to 60 minutes with an increment of 0 to 60 seconds",
            ));
        }
        let game = GameId::new();
        let now = self.clock.now_ms();
        let (mut live, color) = self.new_live(&game, &board, now)?;
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
        live.info.code = code.clone();
        let mut live = storage::Loaded::new(live);
        let created = Change {
            happened: Happened::Created,
            finished: false,
        };
        let frames = render::frames(&live, &created.happened, 1, now);
        let (state, moves) = storage::encode(&mut live, self.settings.storage_format);
        let stored = self
            .store
            .compare_and_set(Write {
                game,
                expected: 0,
                version: 1,
                state,
                moves,
                entries: vec![storage::log_entry(&frames)],
                finished_ttl: None,
                outbox: false,
                deadline: None,
                untimed: false,
                bot_job: None,
            })
            .await?;
        if stored {
            count(&live, &created);
        } else {
            return Err(SessionError::Internal(
                "a fresh game id was already taken".into(),
            ));
        }
        let committed = Committed {
            frames: vec![frames],
            job: None,
        };
        self.publish(&game, &live, &committed).await;
        Ok((game, code, color))
    }

    /// Starts a game against the computer: the person in the chosen colour, a bot of the
    /// chosen level in the other, started at once (versions 1, created, and 2, started, in
    /// one compare-and-set). Never rated. If the bot is to move, its job goes into the
    /// bot-job outbox with the game. Returns the game, the person's colour and the version.
    pub async fn play_computer(
        &self,
        new: NewComputerGame,
    ) -> Result<(GameId, Color, u64), SessionError> {
        let board = NewBoard {
            creator: new.player,
            variant: new.variant,
            color: new.color,
            rated: false,
            time_control: new.time_control,
            #[cfg(feature = "test-hooks")]
            start_fen: new.start_fen,
        };
        check_person(&board.creator)?;
        if let Some(tc) = &board.time_control
            && !tc.is_valid()
        {
            return Err(client(
                ErrorCode::BadTimeControl,
                "a clock is 1 to 60 minutes with an increment of 0 to 60 seconds",
            ));
        }
        let game = GameId::new();
        let now = self.clock.now_ms();
        // No share code: nobody can join a game against the computer.
        let (live, color) = self.new_live(&game, &board, now)?;
        let mut live = storage::Loaded::new(live);
        let created = Change {
            happened: Happened::Created,
            finished: false,
        };
        let created_frames = render::frames(&live, &created.happened, 1, now);
        let bot = Player::bot(PlayerId::bot(new.level).to_string(), new.level);
        let (_, started) = live.join(bot, now, self.settings.clocks)?;
        let started_frames = render::frames(&live, &started.happened, 2, now);
        let job = bot_job(&game, &live, 2, now);
        let (state, moves) = storage::encode(&mut live, self.settings.storage_format);
        let stored = self
            .store
            .compare_and_set(Write {
                game,
                expected: 0,
                version: 2,
                state,
                moves,
                entries: vec![
                    storage::log_entry(&created_frames),
                    storage::log_entry(&started_frames),
                ],
                finished_ttl: None,
                outbox: false,
                deadline: live.deadline(),
                untimed: live.clock().is_none(),
                bot_job: job.clone(),
            })
            .await?;
        if !stored {
            return Err(SessionError::Internal(
                "a fresh game id was already taken".into(),
            ));
        }
        count(&live, &created);
        count(&live, &started);
        let committed = Committed {
            frames: vec![created_frames, started_frames],
            job,
        };
        self.publish(&game, &live, &committed).await;
        Ok((game, color, 2))
    }

    /// Starts a matchmade game between two given seats at once (its `created` and
    /// `started` events in one compare-and-set at version 2), idempotent by match id: if the
    /// game already exists, nothing is made and its id and current version are returned
    /// (`false`: not created now). A bot seat gets its job through the outbox as in
    /// `play_computer`.
    pub async fn start_match(&self, new: NewMatch) -> Result<(GameId, u64, bool), SessionError> {
        let people: Vec<&Player> = [&new.white, &new.black]
            .into_iter()
            .filter_map(|s| match s {
                MatchSeat::Person(p) => Some(p),
                MatchSeat::Bot(_) => None,
            })
            .collect();
        for person in &people {
            check_person(person)?;
        }
        match people.as_slice() {
            [] => {
                return Err(client(
                    ErrorCode::BadField,
                    "a match needs at least one person",
                ));
            }
            [a, b] if a.id == b.id => {
                return Err(client(
                    ErrorCode::BadField,
                    "a player cannot meet themselves",
                ));
            }
            _ => {}
        }
        if new.rated {
            if people.len() < 2 {
                return Err(client(
                    ErrorCode::BadField,
                    "games against the computer are never rated",
                ));
            }
            if people.iter().any(|p| p.guest) {
                return Err(client(
                    ErrorCode::GuestRated,
                    "guests play casual games only; sign up to play rated",
                ));
            }
        }
        if let Some(tc) = &new.time_control
            && !tc.is_valid()
        {
            return Err(client(
                ErrorCode::BadTimeControl,
                "a clock is 1 to 60 minutes with an increment of 0 to 60 seconds",
            ));
        }
        if let Some(Stored { version, .. }) = self.store.load(&new.game).await? {
            self.store.replicated(&new.game).await?;
            return Ok((new.game, version, false));
        }
        let (creator, creator_color, joiner) = match (&new.white, &new.black) {
            (MatchSeat::Person(w), other) => (w.clone(), Color::White, other.clone()),
            (MatchSeat::Bot(_), MatchSeat::Person(b)) => {
                (b.clone(), Color::Black, new.white.clone())
            }
            (MatchSeat::Bot(_), MatchSeat::Bot(_)) => {
                return Err(client(
                    ErrorCode::BadField,
                    "a match needs at least one person",
                ));
            }
        };
        let board = NewBoard {
            creator,
            variant: new.variant,
            color: Some(creator_color),
            rated: new.rated,
            time_control: new.time_control,
            #[cfg(feature = "test-hooks")]
            start_fen: None,
        };
        let now = self.clock.now_ms();
        let (live, _) = self.new_live(&new.game, &board, now)?;
        let mut live = storage::Loaded::new(live);
        let created = Change {
            happened: Happened::Created,
            finished: false,
        };
        let created_frames = render::frames(&live, &created.happened, 1, now);
        let joiner = match joiner {
            MatchSeat::Person(p) => p,
            MatchSeat::Bot(level) => Player::bot(PlayerId::bot(level).to_string(), level),
        };
        let (_, started) = live.join(joiner, now, self.settings.clocks)?;
        let started_frames = render::frames(&live, &started.happened, 2, now);
        let job = bot_job(&new.game, &live, 2, now);
        let (state, moves) = storage::encode(&mut live, self.settings.storage_format);
        let stored = self
            .store
            .compare_and_set(Write {
                game: new.game,
                expected: 0,
                version: 2,
                state,
                moves,
                entries: vec![
                    storage::log_entry(&created_frames),
                    storage::log_entry(&started_frames),
                ],
                finished_ttl: None,
                outbox: false,
                deadline: live.deadline(),
                untimed: live.clock().is_none(),
                bot_job: job.clone(),
            })
            .await?;
        if !stored {
            // A concurrent repeat of this request made it first.
            let version = self
                .store
                .load(&new.game)
                .await?
                .ok_or_else(|| SessionError::Internal("a match's game vanished".into()))?
                .version;
            self.store.replicated(&new.game).await?;
            return Ok((new.game, version, false));
        }
        count(&live, &created);
        count(&live, &started);
        let committed = Committed {
            frames: vec![created_frames, started_frames],
            job,
        };
        self.publish(&new.game, &live, &committed).await;
        Ok((new.game, 2, true))
    }

    /// A new board's live game (not stored, without a share code yet) and the creator's
    /// colour.
    fn new_live(
        &self,
        game: &GameId,
        board: &NewBoard,
        now: i64,
    ) -> Result<(LiveGame, Color), SessionError> {
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
        let live = LiveGame::new_board(
            NewGame {
                id: game.to_string(),
                code: String::new(),
                creator: board.creator.clone(),
                creator_color: color,
                variant: board.variant,
                rated: board.rated,
                time_control: board.time_control,
                shuffle,
                start,
                now_ms: now,
            },
            self.settings.clocks,
        );
        Ok((live, color))
    }

    /// Joins a board by code.
    pub async fn join_board(
        &self,
        player: Player,
        code: &str,
    ) -> Result<(GameId, Color), SessionError> {
        self.join_board_as(player, code, false).await
    }

    /// Joins a board by code; with `casual_only` (a player fair play marked) a rated board
    /// is refused with `fair_play_restricted`.
    pub async fn join_board_as(
        &self,
        player: Player,
        code: &str,
        casual_only: bool,
    ) -> Result<(GameId, Color), SessionError> {
        let code = code.trim().to_ascii_uppercase();
        if code.len() != 6 || !code.bytes().all(|b| CODE_ALPHABET.contains(&b)) {
            return Err(client(ErrorCode::BoardNotFound, "no board has that code"));
        }
        check_person(&player)?;
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
            // After the board's own refusals (finished, full, own, guest): nothing is
            // stored for a refused join.
            if casual_only && live.info.rated {
                return Err(client(
                    ErrorCode::FairPlayRestricted,
                    "fair play restricted you to casual games; this board is rated",
                ));
            }
            if let Some(committed) = self.commit(&game, version, &mut live, &change, now).await? {
                self.publish(&game, &live, &committed).await;
                return Ok((game, color));
            }
        }
        Err(SessionError::Internal(
            "too much contention on this game".into(),
        ))
    }

    /// Renders `change` at the next version and stores it with the game if the game is
    /// still at `version` — with the job of a bot it leaves to act, in the same
    /// compare-and-set: the frames and job if it was stored, none if another instance got
    /// in first.
    async fn commit(
        &self,
        game: &GameId,
        version: u64,
        live: &mut storage::Loaded,
        change: &Change,
        now_ms: i64,
    ) -> Result<Option<Committed>, SessionError> {
        let rendering = std::time::Instant::now();
        let (frames, fen) = render::frames_and_fen(live, &change.happened, version + 1, now_ms);
        let job = bot_job(game, live, version + 1, now_ms);
        let (state, moves) = storage::encode_reusing(live, self.settings.storage_format, fen);
        let write = Write {
            game: *game,
            expected: version,
            version: version + 1,
            state,
            moves,
            entries: vec![storage::log_entry(&frames)],
            finished_ttl: change.finished.then_some(self.settings.finished_ttl),
            outbox: change.finished && live.is_recorded(),
            deadline: live.deadline(),
            untimed: live.clock().is_none(),
            bot_job: job.clone(),
        };
        let storing = std::time::Instant::now();
        stage(Stage::Render).record((storing - rendering).as_secs_f64());
        let stored: bool = self.store.compare_and_set(write).await?;
        stage(Stage::Store).record(storing.elapsed().as_secs_f64());
        if stored {
            count(live, change);
        } else {
            metrics::counter!("frontier_game_session_cas_conflicts_total").increment(1);
        }
        Ok(stored.then(|| Committed {
            frames: vec![frames],
            job,
        }))
    }

    /// The game as `player_id` may see it (spectator if not seated).
    pub async fn view(&self, game: &GameId, player_id: &str) -> Result<SeenView, SessionError> {
        let (version, live) = self.load(game).await?;
        let audience = live.seat_of(player_id);
        Ok(SeenView::of(&live, version, audience, self.clock.now_ms()))
    }

    /// Applies a player's action: the version it produced and whether it was a repeat.
    pub async fn act(
        &self,
        game: &GameId,
        player_id: &str,
        action_id: &str,
        expected_version: Option<u64>,
        action: &Action,
    ) -> Result<(u64, bool), SessionError> {
        self.act_seen(game, player_id, action_id, expected_version, action)
            .await
            .map(|acted| (acted.version, acted.duplicate))
    }

    /// Applies a player's action: what it did, with the actor's frame of the event it
    /// stored.
    pub async fn act_seen(
        &self,
        game: &GameId,
        player_id: &str,
        action_id: &str,
        expected_version: Option<u64>,
        action: &Action,
    ) -> Result<Acted, SessionError> {
        if action_id.len() > frontier_protocol::MAX_ID_BYTES {
            return Err(client(ErrorCode::BadField, "id is longer than 64 bytes"));
        }
        for attempt in 0..MAX_ATTEMPTS {
            // The first attempt may start from this instance's last commit; whatever it
            // decides on that state other than a stored change is decided again on the
            // store's (the cached state may be behind another instance's writes, and the
            // compare-and-set refuses any write made on it then).
            let cached = if attempt == 0 {
                self.cache.take(game)
            } else {
                None
            };
            let from_cache = cached.is_some();
            let (version, live) = match cached {
                Some(hit) => hit,
                None => {
                    let loading = std::time::Instant::now();
                    let loaded = self.load(game).await?;
                    stage(Stage::Load).record(loading.elapsed().as_secs_f64());
                    loaded
                }
            };
            let tried = self
                .try_act(
                    game,
                    player_id,
                    action_id,
                    expected_version,
                    action,
                    version,
                    live,
                )
                .await;
            match tried {
                Ok(Attempt::Stored(version, frame, ended)) => {
                    return Ok(Acted {
                        version,
                        duplicate: false,
                        frame: Some(frame),
                        ended,
                    });
                }
                Ok(Attempt::Refused(refusal)) => return Err(refusal),
                Ok(Attempt::Repeated(version)) => {
                    return Ok(Acted {
                        version,
                        duplicate: true,
                        frame: None,
                        ended: false,
                    });
                }
                Ok(Attempt::LostRace) => {
                    // Another instance changed the game. Reload and decide again.
                    tokio::task::yield_now().await;
                }
                Err(SessionError::Client(..)) if from_cache => {
                    metrics::counter!("frontier_game_session_state_cache_rechecks_total")
                        .increment(1);
                }
                Err(e) => return Err(e),
            }
        }
        Err(SessionError::Internal(
            "too much contention on this game".into(),
        ))
    }

    /// One attempt of [`act`](Self::act) on the game as read at `version`.
    #[allow(clippy::too_many_arguments)]
    async fn try_act(
        &self,
        game: &GameId,
        player_id: &str,
        action_id: &str,
        expected_version: Option<u64>,
        action: &Action,
        version: u64,
        mut live: storage::Loaded,
    ) -> Result<Attempt, SessionError> {
        let Audience::Player(seat) = live.seat_of(player_id) else {
            return Err(client(ErrorCode::NotInGame, "you do not play in this game"));
        };
        if !action_id.is_empty()
            && let Some(applied) = live.applied_action(seat, action_id)
        {
            // The attempt that applied it may have been answered `unavailable` for want of
            // replicas: the repeat is acknowledged only once they have it.
            self.store.replicated(game).await?;
            return Ok(Attempt::Repeated(applied));
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
                if let Some(committed) = self.commit(game, version, &mut live, &change, now).await?
                {
                    self.publish(game, &live, &committed).await;
                    let ended = live.is_finished();
                    self.cache.put(*game, next, live);
                    let own = committed
                        .frames
                        .last()
                        .map(|f| f.for_audience(Audience::Player(seat)).clone())
                        .unwrap_or_default();
                    return Ok(Attempt::Stored(next, own, ended));
                }
            }
            Applied::TimedOut(change, refusal) => {
                if let Some(committed) = self.commit(game, version, &mut live, &change, now).await?
                {
                    self.publish(game, &live, &committed).await;
                    return Ok(Attempt::Refused(refusal));
                }
            }
        }
        Ok(Attempt::LostRace)
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
                    if let Some(committed) =
                        self.commit(game, version, &mut live, &change, now).await?
                    {
                        self.publish(game, &live, &committed).await;
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

    /// A gateway's tick (see [`GameStore::tick`]): presence for every seat in `present`,
    /// and which of the `quiet` games are past the version the gateway relayed.
    pub async fn tick(
        &self,
        present: &[(GameId, frontier_rules::Color)],
        quiet: &[(GameId, u64)],
    ) -> Result<Vec<GameId>, SessionError> {
        Ok(self.store.tick(present, quiet, self.clock.now_ms()).await?)
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

/// A stage of an action in game-session, for `frontier_game_session_stage_seconds{stage}`:
/// `load` (a game read from the store: a cache miss), `render` (the audiences' frames and
/// the record encoded), `store` (the compare-and-set), `publish` (events, jobs and the
/// finished record sent).
#[derive(Clone, Copy)]
enum Stage {
    Load,
    Render,
    Store,
    Publish,
}

/// The stage's histogram, registered once (a lookup by name and label on every action
/// costs more than the recording).
fn stage(stage: Stage) -> &'static metrics::Histogram {
    static STAGES: std::sync::OnceLock<[metrics::Histogram; 4]> = std::sync::OnceLock::new();
    let all = STAGES.get_or_init(|| {
        ["load", "render", "store", "publish"]
            .map(|s| metrics::histogram!("frontier_game_session_stage_seconds", "stage" => s))
    });
    &all[stage as usize]
}
