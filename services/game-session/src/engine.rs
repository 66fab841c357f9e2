//! The domain core of game-session: a game's stored record (players, phase, the rules
//! state, the move record) and what each action does to it, rendered for each audience.
//! No I/O: the service loads, calls this, and compare-and-sets the result.

use bytes::Bytes;
use frontier_chessclock::{ChessClock, Expiry, LagTracker, TimeControl};
use frontier_proto::games::v1 as games;
use frontier_proto::gamesession::storage::v1 as storage;
use frontier_protocol::{
    AfterMove, ClocksWire, ErrorCode, EventRender, GameMeta, PlayerInfo, PublicMove, Status,
    render_event, render_view,
};
use frontier_rules::{
    Audience, ByColor, CapturedIdentity, Color, Game, GameSnapshot, MoveReport, Outcome, PlayError,
    Role, Shuffle, Square, UciMove, Variant,
};
use prost::Message as _;

use crate::bus::AudienceFrames;
use crate::error::SessionError;

/// How many action ids per seat are remembered for duplicate detection.
const RECENT_ACTIONS: usize = 32;

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
    pub fn time_control(&self, tc: games::TimeControl) -> TimeControl {
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

/// The outcome of applying an action.
#[derive(Debug)]
pub enum Applied {
    /// Applied.
    Done(Change),
    /// Not applied, but time had run out: the change ends the game on time and must be
    /// stored; the action is then refused with the error.
    TimedOut(Change, SessionError),
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

/// The result of an action: the event as each audience sees it, and whether the game ended.
#[derive(Debug, Clone)]
pub struct Change {
    /// The frames, already at the new version.
    pub frames: AudienceFrames,
    /// The game is over now.
    pub finished: bool,
}

/// A game's full server-side record.
pub struct Record {
    stored: storage::StoredGame,
    game: Game,
    clock: Option<ChessClock>,
}

fn color_of(code: u32) -> Color {
    if code == 2 {
        Color::Black
    } else {
        Color::White
    }
}

fn clock_from_stored(c: &storage::ClockState) -> ChessClock {
    ChessClock {
        tc: TimeControl {
            initial_ms: c.initial_ms,
            increment_ms: c.increment_ms,
        },
        remaining_ms: ByColor {
            white: c.white_ms,
            black: c.black_ms,
        },
        to_act: color_of(c.to_act),
        turn_started_ms: c.turn_started_ms,
        moved: ByColor {
            white: c.white_moved,
            black: c.black_moved,
        },
        first_move_limit_ms: c.first_move_limit_ms,
        lag: ByColor {
            white: LagTracker {
                quota_ms: c.white_quota_ms,
                gain_ms: c.gain_ms,
            },
            black: LagTracker {
                quota_ms: c.black_quota_ms,
                gain_ms: c.gain_ms,
            },
        },
        stopped: c.stopped,
    }
}

fn clock_to_stored(c: &ChessClock) -> storage::ClockState {
    storage::ClockState {
        initial_ms: c.tc.initial_ms,
        increment_ms: c.tc.increment_ms,
        white_ms: c.remaining_ms.white,
        black_ms: c.remaining_ms.black,
        to_act: color_code(c.to_act),
        turn_started_ms: c.turn_started_ms,
        white_moved: c.moved.white,
        black_moved: c.moved.black,
        first_move_limit_ms: c.first_move_limit_ms,
        white_quota_ms: c.lag.white.quota_ms,
        black_quota_ms: c.lag.black.quota_ms,
        gain_ms: c.lag.white.gain_ms,
        stopped: c.stopped,
    }
}

fn client(code: ErrorCode, message: impl Into<String>) -> SessionError {
    SessionError::Client(code, message.into())
}

/// Proto variant to rules variant.
pub fn variant_from_proto(v: i32) -> Option<Variant> {
    match games::Variant::try_from(v).ok()? {
        games::Variant::Standard => Some(Variant::Standard),
        games::Variant::Hidden => Some(Variant::Hidden),
        games::Variant::Atomic => Some(Variant::Atomic),
        games::Variant::Unspecified => None,
    }
}

/// Rules variant to proto variant.
pub fn variant_to_proto(v: Variant) -> games::Variant {
    match v {
        Variant::Standard => games::Variant::Standard,
        Variant::Hidden => games::Variant::Hidden,
        Variant::Atomic => games::Variant::Atomic,
    }
}

/// A proto player as the protocol shows it.
pub fn player_info(p: &games::Player) -> PlayerInfo {
    PlayerInfo {
        id: p.id.clone(),
        name: p.name.clone(),
        guest: p.guest,
        bot: p.bot,
    }
}

fn captured_to_stored(list: &[CapturedIdentity]) -> Vec<storage::CapturedIdentity> {
    list.iter()
        .map(|c| storage::CapturedIdentity {
            square: c.square.to_string(),
            role: c.role.char().to_string(),
            ply: c.ply,
        })
        .collect()
}

fn captured_from_stored(
    list: &[storage::CapturedIdentity],
) -> Result<Vec<CapturedIdentity>, SessionError> {
    list.iter()
        .map(|c| {
            Ok(CapturedIdentity {
                square: Square::parse(&c.square).ok_or_else(|| corrupt("captured square"))?,
                role: c
                    .role
                    .chars()
                    .next()
                    .and_then(Role::from_char)
                    .ok_or_else(|| corrupt("captured role"))?,
                ply: c.ply,
            })
        })
        .collect()
}

fn corrupt(what: &str) -> SessionError {
    SessionError::Corrupt(format!("stored game: bad {what}"))
}

fn role_from_name(name: &str) -> Option<Role> {
    Role::ALL.into_iter().find(|r| r.name() == name)
}

impl Record {
    /// A new private board, waiting for its second player (version 1 is its creation).
    #[allow(clippy::too_many_arguments)]
    pub fn new_board(
        id: &str,
        creator: games::Player,
        creator_color: Color,
        variant: Variant,
        rated: bool,
        time_control: Option<games::TimeControl>,
        shuffle: Option<Shuffle>,
        start: Option<frontier_rules::Position>,
        code: &str,
        now_ms: i64,
        clocks: ClockSettings,
    ) -> Record {
        let game = match (variant, shuffle, start) {
            (Variant::Hidden, Some(shuffle), _) => Game::new_hidden(shuffle),
            (_, _, Some(position)) => Game::from_position(position),
            _ => Game::from_position(frontier_rules::Position::new(variant)),
        };
        let start_fen = game.position().fen();
        let commitment = game.commitment().map(|c| c.to_hex()).unwrap_or_default();
        let (white, black) = match creator_color {
            Color::White => (Some(creator.clone()), None),
            Color::Black => (None, Some(creator.clone())),
        };
        let mut record = Record {
            stored: storage::StoredGame {
                id: id.to_owned(),
                variant: variant_to_proto(variant) as i32,
                rated,
                time_control,
                white,
                black,
                code: code.to_owned(),
                phase: storage::Phase::Waiting as i32,
                created_at_ms: now_ms,
                creator_id: creator.id,
                commitment,
                start_fen,
                ..Default::default()
            },
            game,
            // A timed board shows both clocks full and neither running while it waits; the
            // clocks that count start when the second player joins.
            clock: time_control.map(|tc| {
                let mut clock = ChessClock::start(clocks.time_control(tc), 0, now_ms);
                clock.stop(now_ms);
                clock
            }),
        };
        record.sync_snapshot();
        record
    }

    /// Reads a stored record.
    pub fn decode(bytes: &[u8]) -> Result<Record, SessionError> {
        let stored = storage::StoredGame::decode(bytes)
            .map_err(|e| SessionError::Corrupt(format!("stored game: {e}")))?;
        let variant = variant_from_proto(stored.variant).ok_or_else(|| corrupt("variant"))?;
        let shuffle = if stored.layout.is_empty() {
            None
        } else {
            let salt: [u8; 32] = stored
                .salt
                .as_slice()
                .try_into()
                .map_err(|_| corrupt("salt"))?;
            Some((stored.layout.clone(), salt))
        };
        let snapshot = GameSnapshot {
            variant,
            fen: stored.fen.clone(),
            shuffle,
            captured: ByColor {
                white: captured_from_stored(&stored.captured_by_white)?,
                black: captured_from_stored(&stored.captured_by_black)?,
            },
            history: stored.history.clone(),
            pending: if stored.pending.is_empty() {
                None
            } else {
                Some(
                    stored
                        .pending
                        .parse::<UciMove>()
                        .map_err(|_| corrupt("pending move"))?,
                )
            },
            outcome: (!stored.outcome.is_empty()).then(|| stored.outcome.clone()),
            ply: stored.ply,
        };
        let game = Game::restore(snapshot).map_err(|e| SessionError::Corrupt(e.to_string()))?;
        let clock = stored.clock.as_ref().map(clock_from_stored);
        Ok(Record {
            stored,
            game,
            clock,
        })
    }

    fn sync_snapshot(&mut self) {
        let snap = self.game.snapshot();
        let s = &mut self.stored;
        s.fen = snap.fen;
        if let Some((layout, salt)) = snap.shuffle {
            s.layout = layout;
            s.salt = salt.to_vec();
        }
        s.captured_by_white = captured_to_stored(&snap.captured.white);
        s.captured_by_black = captured_to_stored(&snap.captured.black);
        s.history = snap.history;
        s.pending = snap.pending.map(|m| m.to_string()).unwrap_or_default();
        s.outcome = snap.outcome.unwrap_or_default();
        s.ply = snap.ply;
        s.clock = self.clock.as_ref().map(clock_to_stored);
    }

    /// The next clock deadline (Unix ms) of a game being played.
    pub fn deadline(&self) -> Option<i64> {
        if self.status() != Status::Playing {
            return None;
        }
        self.clock.as_ref()?.deadline().map(|d| d.at_ms)
    }

    fn clocks(&self, now_ms: i64) -> Option<ClocksWire> {
        let reading = self.clock.as_ref()?.reading(now_ms);
        Some(ClocksWire {
            white_ms: reading.white_ms,
            black_ms: reading.black_ms,
            running: reading.running.map(|c| c.name().to_owned()),
            at: reading.at_ms,
        })
    }

    /// The stored form.
    pub fn encode(&mut self) -> Bytes {
        self.sync_snapshot();
        Bytes::from(self.stored.encode_to_vec())
    }

    /// The game's id.
    pub fn id(&self) -> &str {
        &self.stored.id
    }

    /// The share code.
    pub fn code(&self) -> &str {
        &self.stored.code
    }

    /// The rules game.
    pub fn game(&self) -> &Game {
        &self.game
    }

    /// Whether the game is over.
    pub fn is_finished(&self) -> bool {
        self.stored.phase == storage::Phase::Finished as i32
    }

    /// When the game started (Unix ms), 0 before.
    pub fn started_at_ms(&self) -> i64 {
        self.stored.started_at_ms
    }

    /// The seat of this player, or spectator.
    pub fn seat_of(&self, player_id: &str) -> Audience {
        if player_id.is_empty() {
            return Audience::Spectator;
        }
        for color in Color::ALL {
            if self.player(color).is_some_and(|p| p.id == player_id) {
                return Audience::Player(color);
            }
        }
        Audience::Spectator
    }

    fn player(&self, color: Color) -> Option<&games::Player> {
        match color {
            Color::White => self.stored.white.as_ref(),
            Color::Black => self.stored.black.as_ref(),
        }
    }

    fn recent(&mut self, color: Color) -> &mut Vec<storage::RecentAction> {
        match color {
            Color::White => &mut self.stored.recent_white,
            Color::Black => &mut self.stored.recent_black,
        }
    }

    /// The version at which this seat's action `id` was applied, if it was.
    pub fn applied_action(&self, color: Color, id: &str) -> Option<u64> {
        let list = match color {
            Color::White => &self.stored.recent_white,
            Color::Black => &self.stored.recent_black,
        };
        list.iter().find(|a| a.id == id).map(|a| a.version)
    }

    /// Remembers that this seat's action `id` produced `version`.
    pub fn remember_action(&mut self, color: Color, id: &str, version: u64) {
        if id.is_empty() {
            return;
        }
        let list = self.recent(color);
        list.push(storage::RecentAction {
            id: id.to_owned(),
            version,
        });
        if list.len() > RECENT_ACTIONS {
            let excess = list.len() - RECENT_ACTIONS;
            list.drain(..excess);
        }
    }

    fn status(&self) -> Status {
        match storage::Phase::try_from(self.stored.phase) {
            Ok(storage::Phase::Playing) => Status::Playing,
            Ok(storage::Phase::Finished) => Status::Finished,
            _ => Status::Waiting,
        }
    }

    fn meta(&self, now_ms: i64) -> GameMeta {
        GameMeta {
            variant: self.game.variant().name(),
            rated: self.stored.rated,
            clock: self
                .stored
                .time_control
                .map(|tc| frontier_protocol::ClockSpec {
                    minutes: tc.initial_seconds / 60,
                    increment: tc.increment_seconds,
                }),
            status: self.status(),
            white: self.stored.white.as_ref().map(player_info),
            black: self.stored.black.as_ref().map(player_info),
            draw_offer: match self.stored.draw_offer {
                1 => Some(Color::White),
                2 => Some(Color::Black),
                _ => None,
            },
            clocks: self.clocks(now_ms),
        }
    }

    fn public_moves(&self) -> Vec<PublicMove> {
        self.stored
            .moves
            .iter()
            .map(|m| PublicMove {
                uci: m.uci.clone(),
                reveal: Square::parse(&m.reveal_square).zip(role_from_name(&m.reveal_role)),
                captured: Square::parse(&m.captured_square)
                    .zip(role_from_name(&m.captured_role))
                    .map(|(sq, role)| (sq, role, m.captured_was_hidden)),
            })
            .collect()
    }

    /// The `game` frame for one audience at `version`, clocks read at `now_ms`.
    pub fn view_frame(&self, version: u64, audience: Audience, now_ms: i64) -> String {
        render_view(
            self.id(),
            version,
            &self.meta(now_ms),
            &self.game.view(audience),
            &self.public_moves(),
        )
    }

    fn frames(&self, version: u64, render: impl Fn(Audience) -> String) -> AudienceFrames {
        AudienceFrames {
            version,
            white: Bytes::from(render(Audience::Player(Color::White))),
            black: Bytes::from(render(Audience::Player(Color::Black))),
            public: Bytes::from(render(Audience::Spectator)),
        }
    }

    /// The frames of a non-move event at `version`.
    fn simple_event(&self, version: u64, event: &EventRender<'_>, now_ms: i64) -> AudienceFrames {
        let outcome = self.game.outcome();
        let shuffle = self.game.published_shuffle();
        let clocks = self.clocks(now_ms);
        self.frames(version, |_| {
            render_event(
                self.id(),
                version,
                event,
                outcome.as_ref(),
                shuffle.as_ref(),
                clocks.clone(),
            )
        })
    }

    /// The creation event (version 1).
    pub fn created_frames(&self) -> AudienceFrames {
        let (color, player) = match (&self.stored.white, &self.stored.black) {
            (Some(p), _) => (Color::White, player_info(p)),
            (None, Some(p)) => (Color::Black, player_info(p)),
            (None, None) => (
                Color::White,
                PlayerInfo {
                    id: String::new(),
                    name: String::new(),
                    guest: true,
                    bot: false,
                },
            ),
        };
        self.simple_event(
            1,
            &EventRender::Created {
                color,
                player: &player,
            },
            self.stored.created_at_ms,
        )
    }

    /// Seats `player` in the free colour; the game starts.
    pub fn join(
        &mut self,
        player: games::Player,
        version: u64,
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
            if self.status() == Status::Waiting {
                return Err(client(
                    ErrorCode::OwnBoard,
                    "you cannot join your own board",
                ));
            }
            // Joining again is answered with the seat already held.
            return Err(SessionError::AlreadySeated(color));
        }
        if self.status() != Status::Waiting {
            return Err(client(
                ErrorCode::BoardFull,
                "that board already has two players",
            ));
        }
        if self.stored.rated && player.guest {
            return Err(client(
                ErrorCode::GuestRated,
                "guests play casual games only; sign up to play rated",
            ));
        }
        let color = if self.stored.white.is_none() {
            self.stored.white = Some(player);
            Color::White
        } else {
            self.stored.black = Some(player);
            Color::Black
        };
        self.stored.phase = storage::Phase::Playing as i32;
        self.stored.started_at_ms = now_ms;
        self.clock = self.stored.time_control.map(|tc| {
            ChessClock::start(clocks.time_control(tc), clocks.first_move_limit_ms, now_ms)
        });
        let (Some(white), Some(black)) = (&self.stored.white, &self.stored.black) else {
            return Err(SessionError::Internal(
                "a started game has both players".into(),
            ));
        };
        let (white, black) = (player_info(white), player_info(black));
        let render = EventRender::Started {
            white: &white,
            black: &black,
            commitment: self.game.commitment().map(|c| c.to_hex()),
            fen: self.game.position().fen(),
        };
        let frames = self.simple_event(version, &render, now_ms);
        Ok((
            color,
            Change {
                frames,
                finished: false,
            },
        ))
    }

    /// Ends the game on time if its clock ran out by `now_ms` (version `version`).
    pub fn expire(&mut self, version: u64, now_ms: i64) -> Option<Change> {
        if self.status() != Status::Playing {
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
        Some(self.finish(version, now_ms, &EventRender::Ended))
    }

    /// Applies `seat`'s action, producing version `version`. If the clock ran out before
    /// the action arrived, the game ends on time instead and the action is refused.
    pub fn apply(
        &mut self,
        seat: Color,
        action: &Action,
        version: u64,
        now_ms: i64,
    ) -> Result<Applied, SessionError> {
        if let Some(change) = self.expire(version, now_ms) {
            return Ok(Applied::TimedOut(
                change,
                client(ErrorCode::GameOver, "too late: the game ended on time"),
            ));
        }
        self.apply_in_time(seat, action, version, now_ms)
            .map(Applied::Done)
    }

    fn apply_in_time(
        &mut self,
        seat: Color,
        action: &Action,
        version: u64,
        now_ms: i64,
    ) -> Result<Change, SessionError> {
        match self.status() {
            Status::Finished => return Err(client(ErrorCode::GameOver, "the game is over")),
            Status::Waiting if *action == Action::Abort => {
                self.game.abort().map_err(play_error)?;
                return Ok(self.finish(version, now_ms, &EventRender::Ended));
            }
            Status::Waiting => {
                return Err(client(
                    ErrorCode::GameNotStarted,
                    "the game has not started: waiting for the second player",
                ));
            }
            Status::Playing => {}
        }
        let change = match action {
            Action::Move(uci, move_time_ms) => {
                if self.game.side_to_act() != seat {
                    return Err(client(ErrorCode::NotYourTurn, "it is your opponent's turn"));
                }
                let report = self.game.play_uci(uci).map_err(play_error)?;
                // A move answers any standing draw offer: declined.
                self.stored.draw_offer = 0;
                // A move waiting for its promotion choice is not complete: the clock runs on.
                if !report.for_audience(Audience::Spectator).promotion_pending {
                    self.tick(now_ms, *move_time_ms);
                }
                self.record_move(&report, now_ms);
                self.move_change(&report, version, now_ms)
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
                if let Some(last) = self.stored.moves.last_mut() {
                    last.uci = report.for_audience(Audience::Spectator).uci.to_string();
                    last.clock_ms = clock_ms;
                }
                self.move_change(&report, version, now_ms)
            }
            Action::Resign => {
                self.game.resign(seat).map_err(play_error)?;
                self.finish(version, now_ms, &EventRender::Ended)
            }
            Action::OfferDraw => {
                let mine = color_code(seat);
                if self.stored.draw_offer == mine {
                    return Err(client(
                        ErrorCode::DrawAlreadyOffered,
                        "you already offered a draw",
                    ));
                }
                if self.stored.draw_offer == color_code(!seat) {
                    return self.accept_draw(version, now_ms);
                }
                self.stored.draw_offer = mine;
                Change {
                    frames: self.simple_event(version, &EventRender::DrawOffered(seat), now_ms),
                    finished: false,
                }
            }
            Action::AcceptDraw => {
                if self.stored.draw_offer != color_code(!seat) {
                    return Err(client(
                        ErrorCode::NoDrawOffer,
                        "your opponent has not offered a draw",
                    ));
                }
                return self.accept_draw(version, now_ms);
            }
            Action::DeclineDraw => {
                if self.stored.draw_offer != color_code(!seat) {
                    return Err(client(
                        ErrorCode::NoDrawOffer,
                        "your opponent has not offered a draw",
                    ));
                }
                self.stored.draw_offer = 0;
                Change {
                    frames: self.simple_event(version, &EventRender::DrawDeclined(seat), now_ms),
                    finished: false,
                }
            }
            Action::ClaimVictory {
                opponent_last_seen_ms,
                absence_limit_ms,
                presence_timeout_ms,
            } => {
                let last_seen = (*opponent_last_seen_ms).max(self.stored.started_at_ms);
                if self.clock.is_some() {
                    return Err(client(
                        ErrorCode::CannotClaim,
                        "a timed game ends on the clock, not by claim",
                    ));
                }
                if *opponent_last_seen_ms > 0
                    && now_ms - opponent_last_seen_ms < *presence_timeout_ms
                {
                    return Err(client(
                        ErrorCode::CannotClaim,
                        format!(
                            "your opponent is connected; a claim needs {} s of absence",
                            absence_limit_ms / 1000
                        ),
                    ));
                }
                if now_ms - last_seen < *absence_limit_ms {
                    return Err(client(
                        ErrorCode::CannotClaim,
                        format!(
                            "your opponent has been away {} s; a claim needs {} s",
                            (now_ms - last_seen).max(0) / 1000,
                            absence_limit_ms / 1000
                        ),
                    ));
                }
                self.game.claim_abandonment(seat).map_err(play_error)?;
                self.finish(version, now_ms, &EventRender::Ended)
            }
            Action::Abort => {
                if self.stored.moves.len() >= 2 {
                    return Err(client(
                        ErrorCode::CannotAbort,
                        "a game may be aborted only before both sides have moved",
                    ));
                }
                self.game.abort().map_err(play_error)?;
                self.finish(version, now_ms, &EventRender::Ended)
            }
        };
        Ok(change)
    }

    fn accept_draw(&mut self, version: u64, now_ms: i64) -> Result<Change, SessionError> {
        self.game.agree_draw().map_err(play_error)?;
        self.stored.draw_offer = 0;
        Ok(self.finish(version, now_ms, &EventRender::Ended))
    }

    fn finish(&mut self, version: u64, now_ms: i64, render: &EventRender<'_>) -> Change {
        self.mark_finished(now_ms);
        Change {
            frames: self.simple_event(version, render, now_ms),
            finished: true,
        }
    }

    fn mark_finished(&mut self, now_ms: i64) {
        self.stored.phase = storage::Phase::Finished as i32;
        self.stored.ended_at_ms = now_ms;
        self.stored.draw_offer = 0;
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
            tracing::warn!(%expiry, "a move passed the arrival check and then flagged");
        }
    }

    fn record_move(&mut self, report: &MoveReport, now_ms: i64) {
        // The server's record keeps the captured identity (secret until the end; the
        // finished-game record is public). Read it from the capturer's own event.
        let own = report.for_audience(Audience::Player(report.mover()));
        let started = self.stored.started_at_ms;
        self.stored.moves.push(games::MoveRecord {
            ply: own.ply,
            uci: own.uci.to_string(),
            reveal_square: own.reveal.map(|r| r.square.to_string()).unwrap_or_default(),
            reveal_role: own
                .reveal
                .map(|r| r.role.name().to_owned())
                .unwrap_or_default(),
            captured_square: own
                .captured
                .map(|c| c.square.to_string())
                .unwrap_or_default(),
            captured_role: own
                .captured
                .map(|c| c.shown_role.name().to_owned())
                .unwrap_or_default(),
            captured_was_hidden: own.captured.is_some_and(|c| c.was_hidden),
            captured_identity: own
                .captured_identity
                .map(|r| r.name().to_owned())
                .unwrap_or_default(),
            at_ms: u64::try_from(now_ms - started).unwrap_or_default(),
            clock_ms: self.clock.as_ref().map(|c| c.remaining_ms[report.mover()]),
        });
    }

    fn move_change(&mut self, report: &MoveReport, version: u64, now_ms: i64) -> Change {
        let finished = report.outcome().is_some();
        if finished {
            self.mark_finished(now_ms);
        }
        let outcome = self.game.outcome();
        let shuffle = self.game.published_shuffle();
        let clocks = self.clocks(now_ms);
        // The position after the move is public: worked out once, rendered three times.
        let after = AfterMove::of(&self.game.view(Audience::Spectator));
        let frames = self.frames(version, |audience| {
            let event = report.for_audience(audience);
            render_event(
                self.id(),
                version,
                &EventRender::Move {
                    event: &event,
                    after: &after,
                },
                outcome.as_ref(),
                shuffle.as_ref(),
                clocks.clone(),
            )
        });
        Change { frames, finished }
    }

    /// Whether this game, once over, is recorded: a game is one that started (both seats
    /// taken). A board aborted while it waited for its second player is not a game: it is
    /// not published, stored or counted anywhere (docs/protocol.md, dashboard).
    pub fn is_recorded(&self) -> bool {
        self.stored.white.is_some() && self.stored.black.is_some()
    }

    /// The finished-game record for the stream (once over; none for a game that never
    /// started, see [`Record::is_recorded`]).
    pub fn finished_record(&self) -> Option<games::FinishedGame> {
        if !self.is_recorded() {
            return None;
        }
        let outcome = self.game.outcome()?;
        let shuffle = self.game.published_shuffle();
        let result = match outcome {
            Outcome::Win { winner, .. } => winner.name(),
            Outcome::Draw { .. } => "draw",
            Outcome::Aborted => "aborted",
        };
        Some(games::FinishedGame {
            game_id: self.stored.id.clone(),
            variant: self.stored.variant,
            rated: self.stored.rated,
            time_control: self.stored.time_control,
            white: self.stored.white.clone(),
            black: self.stored.black.clone(),
            result: result.to_owned(),
            outcome: outcome.code(),
            moves: self.stored.moves.clone(),
            created_at_ms: self.stored.created_at_ms,
            started_at_ms: self.stored.started_at_ms,
            ended_at_ms: self.stored.ended_at_ms,
            initial_layout: shuffle
                .as_ref()
                .map(|s| s.layout.clone())
                .unwrap_or_default(),
            salt: shuffle.as_ref().map(|s| s.salt.clone()).unwrap_or_default(),
            commitment: self.stored.commitment.clone(),
            final_fen: self.game.view(Audience::Spectator).fen(),
            start_fen: self.stored.start_fen.clone(),
        })
    }
}

fn color_code(c: Color) -> u32 {
    match c {
        Color::White => 1,
        Color::Black => 2,
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
