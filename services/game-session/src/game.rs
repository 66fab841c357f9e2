//! The domain core of game-session: a live game — the rules state, its clock, the seats,
//! the draw offer, the phase and the move record — and what each action does to it.
//!
//! No I/O and no transport or storage types: `storage.rs` maps a [`LiveGame`] to and from
//! the Redis format, `render.rs` turns what [`Happened`] into a frame per audience, and
//! `record.rs` makes the finished-game record for the stream. The service loads, calls
//! this, renders, and compare-and-sets.

use std::fmt;

use frontier_chessclock::{ChessClock, Expiry, TimeControl};
use frontier_protocol::{BotLevel, ErrorCode};
use frontier_rules::{
    Audience, ByColor, CapturedPiece, Color, Game, MoveReport, Outcome, PlayError, Position,
    Reveal, Role, Shuffle, Variant,
};

use crate::error::SessionError;

/// How many action ids per seat are remembered for duplicate detection.
pub const RECENT_ACTIONS: usize = 32;

/// A board's time control as chosen: whole minutes of base time (in seconds) and an
/// increment in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeControlSpec {
    /// Base time in seconds (a whole number of minutes).
    pub initial_seconds: u32,
    /// Increment per move in seconds.
    pub increment_seconds: u32,
}

impl TimeControlSpec {
    /// Whether this is a time control a board may have (whole minutes, and the protocol's
    /// one rule: `ClockSpec::is_valid`).
    pub fn is_valid(&self) -> bool {
        self.initial_seconds.is_multiple_of(60)
            && frontier_protocol::ClockSpec {
                minutes: self.initial_seconds / 60,
                increment: self.increment_seconds,
            }
            .is_valid()
    }
}

/// How clocks are set up when a timed game starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockSettings {
    /// Milliseconds in one "minute" of a time control: 60 000 in production; tests lower
    /// it through start-up configuration (never through the API) to get short clocks.
    pub ms_per_minute: u64,
    /// The first-move limit.
    pub first_move_limit_ms: u64,
}

impl ClockSettings {
    /// A board's time control in milliseconds.
    pub fn time_control(&self, tc: TimeControlSpec) -> TimeControl {
        TimeControl {
            initial_ms: u64::from(tc.initial_seconds) * self.ms_per_minute / 60,
            increment_ms: u64::from(tc.increment_seconds) * 1000,
        }
    }
}

impl Default for ClockSettings {
    fn default() -> Self {
        ClockSettings {
            ms_per_minute: 60_000,
            first_move_limit_ms: 30_000,
        }
    }
}

/// Someone seated at a board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Player {
    /// Player id (a UUID).
    pub id: String,
    /// Display name.
    pub name: String,
    /// A guest account.
    pub guest: bool,
    /// A computer player.
    pub bot: bool,
    /// A computer player's level.
    pub bot_level: Option<BotLevel>,
}

impl Player {
    /// The computer player of `level`, with its fixed id and its name.
    pub fn bot(id: String, level: BotLevel) -> Player {
        Player {
            id,
            name: level.bot_name().to_owned(),
            guest: false,
            bot: true,
            bot_level: Some(level),
        }
    }
}

/// Where a game is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Created; waiting for the second player.
    Waiting,
    /// Both seated.
    Playing,
    /// Over.
    Finished,
}

/// One move as the server's record keeps it. The identity of a captured hidden piece is
/// secret until the game ends (the finished record is public): `Debug` does not print it.
#[derive(Clone, PartialEq, Eq)]
pub struct PlayedMove {
    /// Half-move number (1-based).
    pub ply: u32,
    /// The move, with the promotion made.
    pub uci: frontier_rules::UciMove,
    /// A piece the move revealed.
    pub reveal: Option<Reveal>,
    /// The piece captured, as everyone saw it.
    pub captured: Option<CapturedPiece>,
    /// The captured hidden piece's true identity (secret while the game is on).
    pub captured_identity: Option<Role>,
    /// Milliseconds since the game started.
    pub at_ms: u64,
    /// The mover's remaining time after the move, in a timed game.
    pub clock_ms: Option<u64>,
}

impl fmt::Debug for PlayedMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlayedMove")
            .field("ply", &self.ply)
            .field("uci", &self.uci)
            .field("reveal", &self.reveal)
            .field("captured", &self.captured)
            .field(
                "captured_identity",
                &self.captured_identity.map(|_| "<secret>"),
            )
            .finish_non_exhaustive()
    }
}

/// What a board is, fixed when it is created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardInfo {
    /// The game id.
    pub id: String,
    /// The share code.
    pub code: String,
    /// The variant.
    pub variant: Variant,
    /// Rated or casual.
    pub rated: bool,
    /// The clock, or none.
    pub time_control: Option<TimeControlSpec>,
    /// Who created it.
    pub creator_id: String,
    /// Hidden chess: the commitment to the shuffle (hex); empty otherwise.
    pub commitment: String,
    /// The start position (FEN).
    pub start_fen: String,
    /// When it was created (Unix ms).
    pub created_at_ms: i64,
}

/// A live game: everything game-session knows about one board.
pub struct LiveGame {
    pub(crate) info: BoardInfo,
    pub(crate) seats: ByColor<Option<Player>>,
    pub(crate) phase: Phase,
    pub(crate) game: Game,
    pub(crate) clock: Option<ChessClock>,
    pub(crate) moves: Vec<PlayedMove>,
    pub(crate) draw_offer: Option<Color>,
    /// Per seat, the last [`RECENT_ACTIONS`] action ids and the versions they produced.
    pub(crate) recent: ByColor<Vec<(String, u64)>>,
    pub(crate) started_at_ms: i64,
    pub(crate) ended_at_ms: i64,
}

impl fmt::Debug for LiveGame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The rules game and the move record hold secrets; print only public facts.
        f.debug_struct("LiveGame")
            .field("id", &self.info.id)
            .field("variant", &self.info.variant)
            .field("phase", &self.phase)
            .field("ply", &self.game.ply())
            .finish_non_exhaustive()
    }
}

/// A player action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A move in UCI, with the client's reported thinking time.
    Move(String, Option<u64>),
    /// A promotion choice.
    Promote(Role),
    /// Resignation.
    Resign,
    /// Draw offer (accepts a standing offer by the opponent).
    OfferDraw,
    /// Acceptance of the opponent's draw offer.
    AcceptDraw,
    /// Refusal of the opponent's draw offer.
    DeclineDraw,
    /// Abort (fewer than two moves made, or the board still waiting).
    Abort,
    /// Take back the player's last move and the computer's reply.
    Undo,
    /// Claim a game without clock whose opponent was last seen at the given time (filled
    /// in by the service from presence records).
    ClaimVictory {
        /// When the opponent was last seen connected (Unix ms).
        opponent_last_seen_ms: i64,
        /// How long an absence must last.
        absence_limit_ms: i64,
        /// How long after its last presence report a player still counts as connected.
        presence_timeout_ms: i64,
    },
}

/// What an action did to the game: the event to render for each audience.
#[derive(Debug)]
pub enum Happened {
    /// The board was created.
    Created,
    /// The second player joined; the game started.
    Started,
    /// A move (or a promotion choice completing one).
    Moved(MoveReport),
    /// A draw was offered by this side.
    DrawOffered(Color),
    /// This side declined the opponent's draw offer.
    DrawDeclined(Color),
    /// The player took back their last move and the computer's reply (these, in order).
    Undone(Vec<String>),
    /// The game ended without a move (resignation, agreement, abort, time, abandonment).
    Ended,
}

/// The result of an action: what happened, and whether the game is over now.
#[derive(Debug)]
pub struct Change {
    /// What happened.
    pub happened: Happened,
    /// The game is over now.
    pub finished: bool,
}

impl Change {
    fn going_on(happened: Happened) -> Change {
        Change {
            happened,
            finished: false,
        }
    }
}

/// The outcome of applying an action.
#[derive(Debug)]
pub enum Applied {
    /// Applied.
    Done(Change),
    /// Not applied, but time had run out: the change ends the game on time and must be
    /// stored; the action is then refused with the error.
    TimedOut(Change, SessionError),
}

fn client(code: ErrorCode, message: impl Into<String>) -> SessionError {
    SessionError::Client(code, message.into())
}

/// What a new board is.
#[derive(Debug)]
pub struct NewGame {
    /// The game id.
    pub id: String,
    /// The share code.
    pub code: String,
    /// The creator.
    pub creator: Player,
    /// The creator's colour.
    pub creator_color: Color,
    /// The variant.
    pub variant: Variant,
    /// Rated or casual.
    pub rated: bool,
    /// The clock, or none.
    pub time_control: Option<TimeControlSpec>,
    /// Hidden chess: the shuffle.
    pub shuffle: Option<Shuffle>,
    /// Standard or atomic: a start position other than the usual one.
    pub start: Option<Position>,
    /// Now (Unix ms).
    pub now_ms: i64,
}

impl LiveGame {
    /// A new private board, waiting for its second player (version 1 is its creation).
    pub fn new_board(new: NewGame, clocks: ClockSettings) -> LiveGame {
        let game = match (new.variant, new.shuffle, new.start) {
            (Variant::Hidden, Some(shuffle), _) => Game::new_hidden(shuffle),
            (_, _, Some(position)) => Game::from_position(position),
            (variant, _, _) => Game::from_position(Position::new(variant)),
        };
        let mut seats = ByColor::new_with(|_| None);
        seats[new.creator_color] = Some(new.creator.clone());
        LiveGame {
            info: BoardInfo {
                id: new.id,
                code: new.code,
                variant: new.variant,
                rated: new.rated,
                time_control: new.time_control,
                creator_id: new.creator.id,
                commitment: game.commitment().map(|c| c.to_hex()).unwrap_or_default(),
                start_fen: game.position().fen(),
                created_at_ms: new.now_ms,
            },
            seats,
            phase: Phase::Waiting,
            game,
            // A timed board shows both clocks full and neither running while it waits; the
            // clocks that count start when the second player joins.
            clock: new.time_control.map(|tc| {
                let mut clock = ChessClock::start(clocks.time_control(tc), 0, new.now_ms);
                clock.stop(new.now_ms);
                clock
            }),
            moves: Vec::new(),
            draw_offer: None,
            recent: ByColor::new_with(|_| Vec::new()),
            started_at_ms: 0,
            ended_at_ms: 0,
        }
    }

    /// What the board is.
    pub fn info(&self) -> &BoardInfo {
        &self.info
    }

    /// The rules game.
    pub fn game(&self) -> &Game {
        &self.game
    }

    /// The clock, in a timed game.
    pub fn clock(&self) -> Option<&ChessClock> {
        self.clock.as_ref()
    }

    /// Where the game is in its life.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The player in a seat.
    pub fn player(&self, color: Color) -> Option<&Player> {
        self.seats[color].as_ref()
    }

    /// The move record.
    pub fn moves(&self) -> &[PlayedMove] {
        &self.moves
    }

    /// A standing draw offer, by this side.
    pub fn draw_offer(&self) -> Option<Color> {
        self.draw_offer
    }

    /// When the game started (Unix ms), 0 before.
    pub fn started_at_ms(&self) -> i64 {
        self.started_at_ms
    }

    /// When the game ended (Unix ms), 0 before.
    pub fn ended_at_ms(&self) -> i64 {
        self.ended_at_ms
    }

    /// Whether the game is over.
    pub fn is_finished(&self) -> bool {
        self.phase == Phase::Finished
    }

    /// Whether this game, once over, is recorded: a game is one that started (both seats
    /// taken). A board aborted while it waited for its second player is not a game: it is
    /// not published, stored or counted anywhere (docs/protocol.md, dashboard).
    pub fn is_recorded(&self) -> bool {
        self.seats.white.is_some() && self.seats.black.is_some()
    }

    /// The next clock deadline (Unix ms) of a game being played.
    pub fn deadline(&self) -> Option<i64> {
        if self.phase != Phase::Playing {
            return None;
        }
        self.clock.as_ref()?.deadline().map(|d| d.at_ms)
    }

    /// The bot that is to act now (its move, or its promotion choice), with its seat: only
    /// in a game being played.
    pub fn bot_to_act(&self) -> Option<(Color, &Player)> {
        if self.phase != Phase::Playing || self.game.outcome().is_some() {
            return None;
        }
        let color = self.game.side_to_act();
        self.player(color)
            .filter(|p| p.bot)
            .map(|player| (color, player))
    }

    /// Whether a computer player sits in this game.
    pub fn has_bot(&self) -> bool {
        Color::ALL
            .into_iter()
            .any(|c| self.player(c).is_some_and(|p| p.bot))
    }

    /// The seat of this player, or spectator.
    pub fn seat_of(&self, player_id: &str) -> Audience {
        if player_id.is_empty() {
            return Audience::Spectator;
        }
        Color::ALL
            .into_iter()
            .find(|&c| self.player(c).is_some_and(|p| p.id == player_id))
            .map_or(Audience::Spectator, Audience::Player)
    }

    /// The version at which this seat's action `id` was applied, if it was.
    pub fn applied_action(&self, color: Color, id: &str) -> Option<u64> {
        self.recent[color]
            .iter()
            .find(|(a, _)| a == id)
            .map(|(_, v)| *v)
    }

    /// Remembers that this seat's action `id` produced `version`.
    pub fn remember_action(&mut self, color: Color, id: &str, version: u64) {
        if id.is_empty() {
            return;
        }
        let list = &mut self.recent[color];
        list.push((id.to_owned(), version));
        if list.len() > RECENT_ACTIONS {
            let excess = list.len() - RECENT_ACTIONS;
            list.drain(..excess);
        }
    }

    /// Seats `player` in the free colour; the game starts.
    pub fn join(
        &mut self,
        player: Player,
        now_ms: i64,
        clocks: ClockSettings,
    ) -> Result<(Color, Change), SessionError> {
        if self.is_finished() {
            return Err(client(
                ErrorCode::BoardFinished,
                "that board's game is over",
            ));
        }
        if let Audience::Player(color) = self.seat_of(&player.id) {
            if self.phase == Phase::Waiting {
                return Err(client(
                    ErrorCode::OwnBoard,
                    "you cannot join your own board",
                ));
            }
            // Joining again is answered with the seat already held.
            return Err(SessionError::AlreadySeated(color));
        }
        if self.phase != Phase::Waiting {
            return Err(client(
                ErrorCode::BoardFull,
                "that board already has two players",
            ));
        }
        if self.info.rated && player.guest {
            return Err(client(
                ErrorCode::GuestRated,
                "guests play casual games only; sign up to play rated",
            ));
        }
        let color = if self.seats.white.is_none() {
            Color::White
        } else {
            Color::Black
        };
        self.seats[color] = Some(player);
        self.phase = Phase::Playing;
        self.started_at_ms = now_ms;
        self.clock = self.info.time_control.map(|tc| {
            ChessClock::start(clocks.time_control(tc), clocks.first_move_limit_ms, now_ms)
        });
        Ok((color, Change::going_on(Happened::Started)))
    }

    /// Ends the game on time if its clock ran out by `now_ms`.
    pub fn expire(&mut self, now_ms: i64) -> Option<Change> {
        if self.phase != Phase::Playing {
            return None;
        }
        let expiry = self.clock.as_ref()?.expired(now_ms)?;
        let ended = match expiry {
            Expiry::Flag(color) => self.game.flag(color),
            Expiry::FirstMove(_) => self.game.abort(),
        };
        if ended.is_err() {
            return None;
        }
        Some(self.finish(now_ms))
    }

    /// Applies `seat`'s action at `now_ms`. If the clock ran out before the action arrived,
    /// the game ends on time instead and the action is refused.
    pub fn apply(
        &mut self,
        seat: Color,
        action: &Action,
        now_ms: i64,
    ) -> Result<Applied, SessionError> {
        if let Some(change) = self.expire(now_ms) {
            return Ok(Applied::TimedOut(
                change,
                client(ErrorCode::GameOver, "too late: the game ended on time"),
            ));
        }
        self.apply_in_time(seat, action, now_ms).map(Applied::Done)
    }

    fn apply_in_time(
        &mut self,
        seat: Color,
        action: &Action,
        now_ms: i64,
    ) -> Result<Change, SessionError> {
        match self.phase {
            Phase::Finished => return Err(client(ErrorCode::GameOver, "the game is over")),
            Phase::Waiting if *action == Action::Abort => {
                self.game.abort().map_err(play_error)?;
                return Ok(self.finish(now_ms));
            }
            Phase::Waiting => {
                return Err(client(
                    ErrorCode::GameNotStarted,
                    "the game has not started: waiting for the second player",
                ));
            }
            Phase::Playing => {}
        }
        let change = match action {
            Action::Move(uci, move_time_ms) => {
                if self.game.side_to_act() != seat {
                    return Err(client(ErrorCode::NotYourTurn, "it is your opponent's turn"));
                }
                let report = self.game.play_uci(uci).map_err(play_error)?;
                // A move answers any standing draw offer: declined.
                self.draw_offer = None;
                // A move waiting for its promotion choice is not complete: the clock runs on.
                if !report.for_audience(Audience::Spectator).promotion_pending {
                    self.tick(now_ms, *move_time_ms);
                }
                self.record_move(&report, now_ms);
                self.moved(report, now_ms)
            }
            Action::Promote(role) => {
                if self.game.pending_promotion().is_none() || self.game.side_to_act() != seat {
                    return Err(client(
                        ErrorCode::NoPromotionPending,
                        "no promotion choice is awaited from you",
                    ));
                }
                let report = self.game.choose_promotion(*role).map_err(play_error)?;
                self.tick(now_ms, None);
                let clock_ms = self.clock.as_ref().map(|c| c.remaining_ms[seat]);
                if let Some(last) = self.moves.last_mut() {
                    last.uci = report.for_audience(Audience::Spectator).uci;
                    last.clock_ms = clock_ms;
                }
                self.moved(report, now_ms)
            }
            Action::Resign => {
                self.game.resign(seat).map_err(play_error)?;
                self.finish(now_ms)
            }
            Action::OfferDraw => {
                if self.draw_offer == Some(seat) {
                    return Err(client(
                        ErrorCode::DrawAlreadyOffered,
                        "you already offered a draw",
                    ));
                }
                if self.draw_offer == Some(!seat) {
                    return self.accept_draw(now_ms);
                }
                self.draw_offer = Some(seat);
                Change::going_on(Happened::DrawOffered(seat))
            }
            Action::AcceptDraw => {
                if self.draw_offer != Some(!seat) {
                    return Err(client(
                        ErrorCode::NoDrawOffer,
                        "your opponent has not offered a draw",
                    ));
                }
                return self.accept_draw(now_ms);
            }
            Action::DeclineDraw => {
                if self.draw_offer != Some(!seat) {
                    return Err(client(
                        ErrorCode::NoDrawOffer,
                        "your opponent has not offered a draw",
                    ));
                }
                self.draw_offer = None;
                Change::going_on(Happened::DrawDeclined(seat))
            }
            Action::Undo => self.undo(seat)?,
            Action::ClaimVictory {
                opponent_last_seen_ms,
                absence_limit_ms,
                presence_timeout_ms,
            } => {
                if self.player(!seat).is_some_and(|p| p.bot) {
                    return Err(client(
                        ErrorCode::CannotClaim,
                        "the computer is never away; resign or play on",
                    ));
                }
                self.check_claim(
                    now_ms,
                    *opponent_last_seen_ms,
                    *absence_limit_ms,
                    *presence_timeout_ms,
                )?;
                self.game.claim_abandonment(seat).map_err(play_error)?;
                self.finish(now_ms)
            }
            Action::Abort => {
                if self.moves.len() >= 2 {
                    return Err(client(
                        ErrorCode::CannotAbort,
                        "a game may be aborted only before both sides have moved",
                    ));
                }
                self.game.abort().map_err(play_error)?;
                self.finish(now_ms)
            }
        };
        Ok(change)
    }

    /// Takes back `seat`'s last move and the computer's reply: the game returns to the
    /// position before the player's last move, rebuilt by replaying the moves before it from
    /// the start position (so the repetition history, castling rights and half-move clock
    /// are as they were). Clocks are not refunded; a standing draw offer is cleared.
    fn undo(&mut self, seat: Color) -> Result<Change, SessionError> {
        let refuse = |message: &str| Err(client(ErrorCode::UndoNotAllowed, message));
        if self.player(seat).is_some_and(|p| p.bot) {
            return refuse("the computer does not take moves back");
        }
        if !self.player(!seat).is_some_and(|p| p.bot) {
            return refuse("undo is only for games against the computer");
        }
        if self.info.rated {
            return refuse("a rated game has no undo");
        }
        if self.info.variant == Variant::Hidden {
            return refuse("hidden chess has no undo");
        }
        if self.game.side_to_act() != seat || self.game.pending_promotion().is_some() {
            return refuse("undo only on your turn, after the computer replied");
        }
        let keep = match self.moves.len().checked_sub(2) {
            Some(keep) => keep,
            None => return refuse("there is no move of yours and reply to take back"),
        };
        let start = Position::from_fen(self.info.variant, &self.info.start_fen)
            .map_err(|e| SessionError::Corrupt(format!("start position: {e}")))?;
        let mut game = Game::from_position(start);
        for m in &self.moves[..keep] {
            game.play_parsed(&m.uci)
                .map_err(|e| SessionError::Corrupt(format!("replaying {}: {e}", m.uci)))?;
        }
        if game.side_to_act() != seat || game.outcome().is_some() {
            return Err(SessionError::Corrupt(
                "the replayed position is not the player's turn".into(),
            ));
        }
        let taken_back = self.moves[keep..]
            .iter()
            .map(|m| m.uci.to_string())
            .collect();
        self.game = game;
        self.moves.truncate(keep);
        self.draw_offer = None;
        Ok(Change::going_on(Happened::Undone(taken_back)))
    }

    fn check_claim(
        &self,
        now_ms: i64,
        opponent_last_seen_ms: i64,
        absence_limit_ms: i64,
        presence_timeout_ms: i64,
    ) -> Result<(), SessionError> {
        if self.clock.is_some() {
            return Err(client(
                ErrorCode::CannotClaim,
                "a timed game ends on the clock, not by claim",
            ));
        }
        if opponent_last_seen_ms > 0 && now_ms - opponent_last_seen_ms < presence_timeout_ms {
            return Err(client(
                ErrorCode::CannotClaim,
                format!(
                    "your opponent is connected; a claim needs {} s of absence",
                    absence_limit_ms / 1000
                ),
            ));
        }
        let last_seen = opponent_last_seen_ms.max(self.started_at_ms);
        if now_ms - last_seen < absence_limit_ms {
            return Err(client(
                ErrorCode::CannotClaim,
                format!(
                    "your opponent has been away {} s; a claim needs {} s",
                    (now_ms - last_seen).max(0) / 1000,
                    absence_limit_ms / 1000
                ),
            ));
        }
        Ok(())
    }

    fn accept_draw(&mut self, now_ms: i64) -> Result<Change, SessionError> {
        self.game.agree_draw().map_err(play_error)?;
        Ok(self.finish(now_ms))
    }

    fn finish(&mut self, now_ms: i64) -> Change {
        self.mark_finished(now_ms);
        Change {
            happened: Happened::Ended,
            finished: true,
        }
    }

    fn mark_finished(&mut self, now_ms: i64) {
        self.phase = Phase::Finished;
        self.ended_at_ms = now_ms;
        self.draw_offer = None;
        if let Some(clock) = &mut self.clock {
            clock.stop(now_ms);
        }
    }

    /// A completed move on the clock. Time was checked on arrival (`apply`), so this
    /// cannot flag; if it ever did, the clock keeps the side at zero and the next check
    /// ends the game.
    fn tick(&mut self, now_ms: i64, move_time_ms: Option<u64>) {
        if let Some(clock) = &mut self.clock
            && let Err(expiry) = clock.complete_move(now_ms, move_time_ms)
        {
            tracing::warn!(game = %self.info.id, %expiry, "a move passed the arrival check and then flagged");
        }
    }

    fn record_move(&mut self, report: &MoveReport, now_ms: i64) {
        // The server's record keeps the captured identity (secret until the end; the
        // finished-game record is public). Read it from the capturer's own event.
        let own = report.for_audience(Audience::Player(report.mover()));
        self.moves.push(PlayedMove {
            ply: own.ply,
            uci: own.uci,
            reveal: own.reveal,
            captured: own.captured,
            captured_identity: own.captured_identity,
            at_ms: u64::try_from(now_ms - self.started_at_ms).unwrap_or_default(),
            clock_ms: self.clock.as_ref().map(|c| c.remaining_ms[report.mover()]),
        });
    }

    fn moved(&mut self, report: MoveReport, now_ms: i64) -> Change {
        let finished = report.outcome().is_some();
        if finished {
            self.mark_finished(now_ms);
        }
        Change {
            happened: Happened::Moved(report),
            finished,
        }
    }

    /// The outcome, once over.
    pub fn outcome(&self) -> Option<Outcome> {
        self.game.outcome()
    }
}

/// Rules errors as client errors. None of these texts can carry a secret: they are built
/// from the written move and public facts only.
fn play_error(e: PlayError) -> SessionError {
    use frontier_rules::MoveError;
    let code = match &e {
        PlayError::GameOver => ErrorCode::GameOver,
        PlayError::PromotionPending(_) => ErrorCode::PromotionPending,
        PlayError::NoPromotionPending => ErrorCode::NoPromotionPending,
        PlayError::InvalidPromotionRole => ErrorCode::BadField,
        PlayError::Move(MoveError::Syntax(_)) => ErrorCode::BadMove,
        PlayError::Move(MoveError::PromotionRequired(_)) => ErrorCode::PromotionRequired,
        PlayError::Move(_) => ErrorCode::IllegalMove,
    };
    client(code, e.to_string())
}
