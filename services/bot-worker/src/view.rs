//! A bot job turned into the engine's input: the job's `view` (the `game` frame of the
//! bot's seat) becomes a [`SeatView`], and the engine's [`Decision`] becomes the action
//! sent to game-session. Pure: no I/O, no clock of its own.
//!
//! Only what the job carries is used, and the job carries only what the seat may know
//! (`frontier_protocol::BotJob`): the public position, the public move list with its
//! reveals, and the identities this seat captured. Nothing here reads a layout.

use frontier_engine::{ClockInfo, Decision, Level, START_IDENTITIES, SeatView, ViewError};
use frontier_protocol::{BotJob, ClocksWire, GameWire};
use frontier_rules::{
    Audience, ByColor, Color, Game, Layout, Piece, Position, Role, Shuffle, Square, UciMove,
    Variant, hidden_start_mask, hidden_start_squares,
};

/// A job checked and ready for the engine.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// What the seat knows.
    pub view: SeatView,
    /// How strong to play.
    pub level: Level,
}

/// Why a job can never be done: it is terminated, never retried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// Not JSON of a bot job.
    #[error("undecodable job: {0}")]
    Undecodable(String),
    /// The variant is not `standard`, `hidden` or `atomic`.
    #[error("unknown variant `{0}`")]
    Variant(String),
    /// The level is not `easy`, `medium` or `hard`.
    #[error("unknown level `{0}`")]
    Level(String),
    /// The seat is not `white` or `black`.
    #[error("unknown seat `{0}`")]
    Seat(String),
    /// The view seats another player in the bot's seat.
    #[error("the {0} seat is not the job's player")]
    Player(&'static str),
    /// The job id is not `<game id>:<version>` of this job.
    #[error("job id `{0}` is not `<game id>:<version>` of its game and version")]
    JobId(String),
    /// The view is not of a game in play.
    #[error("the game is not in play (status `{0}`)")]
    NotPlaying(String),
    /// The position does not parse or breaks the rules of its variant.
    #[error("bad position: {0}")]
    Fen(String),
    /// It is not the bot's seat that is to act in the position.
    #[error("the {0} seat is not the one to act")]
    NotToAct(&'static str),
    /// A pending promotion that cannot be (bad square, wrong variant).
    #[error("bad pending promotion `{0}`")]
    Promotion(String),
    /// A reveal or a captured identity names no role a piece can have.
    #[error("move list: {0}")]
    MoveList(String),
    /// The reveals and captures account for more identities than a side has, or leave
    /// fewer than its hidden pieces. (The message names no role: it is derived from this
    /// seat's private captures.)
    #[error("the reveals and captures of the view cannot be accounted for")]
    Accounting,
}

impl JobError {
    /// The label of `frontier_bot_jobs_rejected_total{reason}`.
    pub fn reason(&self) -> &'static str {
        match self {
            JobError::Undecodable(_) => "undecodable",
            JobError::Variant(_) => "variant",
            JobError::Level(_) => "level",
            JobError::Seat(_) => "seat",
            JobError::Player(_) => "player",
            JobError::JobId(_) => "job_id",
            JobError::NotPlaying(_) => "not_playing",
            JobError::Fen(_) => "fen",
            JobError::NotToAct(_) => "not_to_act",
            JobError::Promotion(_) => "promotion",
            JobError::MoveList(_) => "move_list",
            JobError::Accounting => "accounting",
        }
    }
}

impl From<ViewError> for JobError {
    fn from(_: ViewError) -> JobError {
        JobError::Accounting
    }
}

/// Decodes a job from its message payload.
pub fn decode(payload: &[u8]) -> Result<BotJob, JobError> {
    serde_json::from_slice(payload).map_err(|e| JobError::Undecodable(e.to_string()))
}

/// `white` or `black`.
pub fn color_from_name(name: &str) -> Option<Color> {
    [Color::White, Color::Black]
        .into_iter()
        .find(|c| c.name() == name)
}

/// Checks a job and builds the engine's input from its view.
pub fn prepare(job: &BotJob) -> Result<Prepared, JobError> {
    let variant: Variant = job
        .view
        .variant
        .parse()
        .map_err(|_| JobError::Variant(job.view.variant.clone()))?;
    let level: Level = job
        .level
        .parse()
        .map_err(|_| JobError::Level(job.level.clone()))?;
    let seat = color_from_name(&job.seat).ok_or_else(|| JobError::Seat(job.seat.clone()))?;
    if job.job != BotJob::id_for(&job.game_id, job.version) {
        return Err(JobError::JobId(job.job.clone()));
    }
    let seated = match seat {
        Color::White => &job.view.white,
        Color::Black => &job.view.black,
    };
    if seated.as_ref().is_some_and(|p| p.id != job.player_id) {
        return Err(JobError::Player(seat.name()));
    }
    let view = seat_view(variant, seat, &job.view)?;
    Ok(Prepared { view, level })
}

/// The seat's view of the game in `wire`.
pub fn seat_view(variant: Variant, seat: Color, wire: &GameWire) -> Result<SeatView, JobError> {
    if wire.status != "playing" {
        return Err(JobError::NotPlaying(wire.status.clone()));
    }
    if wire.turn != seat.name() {
        return Err(JobError::NotToAct(seat.name()));
    }
    let first = first_mover(seat, wire.pending_promotion.is_some(), wire.moves.len());
    let (position, pending, history) = match wire.pending_promotion.as_deref() {
        None => {
            let position =
                Position::from_fen(variant, &wire.fen).map_err(|e| JobError::Fen(e.to_string()))?;
            let history = history(variant, &position, first, wire);
            (position, None, history)
        }
        Some(square) => {
            let position = pending_position(variant, first, wire)
                .ok_or_else(|| JobError::Promotion(square.to_owned()))?;
            let sq = pending_square(seat, &position, square)?;
            (position, Some(sq), Vec::new())
        }
    };
    if position.turn() != seat {
        return Err(JobError::NotToAct(seat.name()));
    }
    if variant != Variant::Hidden {
        return Ok(SeatView::open(seat, position, history));
    }
    let reveals = reveals(first, wire)?;
    let own_captures = wire
        .captured_identities
        .iter()
        .map(|c| role(&c.role))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(SeatView::hidden(
        seat,
        position,
        pending,
        history,
        &reveals,
        &own_captures,
    )?)
}

/// The position shown while a promotion is pending: the revealed pawn on its last rank,
/// its mover to act. FEN cannot say it (a pawn on a last rank is no position), so it is
/// rebuilt by replaying the public move list, pending move last, and must render to the
/// view's FEN. Hidden chess only (elsewhere a promotion is chosen with the move).
fn pending_position(variant: Variant, first: Color, wire: &GameWire) -> Option<Position> {
    if variant != Variant::Hidden {
        return None;
    }
    let (game, _) = replay_hidden(first, wire)?;
    game.pending_promotion()?;
    let shown = game.view(Audience::Spectator).position;
    (shown.fen() == wire.fen).then_some(shown)
}

/// A pending promotion's square: the seat's own pawn on its last rank.
fn pending_square(seat: Color, position: &Position, square: &str) -> Result<Square, JobError> {
    let bad = || JobError::Promotion(square.to_owned());
    let sq = Square::parse(square).ok_or_else(bad)?;
    let piece = position.board().piece_at(sq).ok_or_else(bad)?;
    let ok = piece.color == seat && piece.role == Role::Pawn && sq.rank() == seat.promotion_rank();
    if ok { Ok(sq) } else { Err(bad()) }
}

fn role(name: &str) -> Result<Role, JobError> {
    frontier_platform::convert::role_from_name(name)
        .filter(|r| *r != Role::King)
        .ok_or_else(|| JobError::MoveList(format!("no identity `{name}`")))
}

/// The side that made the first move of the list, from the side to act now: that side
/// is to move after the last move, except while a promotion is pending, when the last
/// move's mover is still to act.
fn first_mover(to_act: Color, pending: bool, plies: usize) -> Color {
    let completed = plies - usize::from(pending && plies > 0);
    if completed.is_multiple_of(2) {
        to_act
    } else {
        !to_act
    }
}

/// The mover of move `i` (from 0).
fn mover(first: Color, i: usize) -> Color {
    if i.is_multiple_of(2) { first } else { !first }
}

/// Every public reveal as (owner, true role). The revealing move's mover owns the revealed
/// piece: only a side's own hidden pieces are revealed by its moves (the piece that moved,
/// or the corner piece it castled with).
fn reveals(first: Color, wire: &GameWire) -> Result<Vec<(Color, Role)>, JobError> {
    wire.moves
        .iter()
        .enumerate()
        .filter_map(|(i, m)| m.reveal.as_ref().map(|r| (i, r)))
        .map(|(i, r)| Ok((mover(first, i), role(&r.role)?)))
        .collect()
}

/// Repetition keys of the positions before this one since the last irreversible move,
/// oldest first, rebuilt by replaying the public move list from the variant's start
/// position. Empty when the list does not lead from the start to this very position (a
/// game that began elsewhere): the engine then sees no repetition before its root.
fn history(variant: Variant, position: &Position, first: Color, wire: &GameWire) -> Vec<u64> {
    let keys = if variant == Variant::Hidden {
        replay_hidden(first, wire)
            .filter(|(game, _)| game.position().fen() == position.fen())
            .map(|(_, keys)| keys)
    } else {
        replay_open(variant, position, wire)
    };
    let Some(mut keys) = keys else {
        return Vec::new();
    };
    let since_irreversible = usize::try_from(position.halfmoves()).unwrap_or(usize::MAX);
    let keep = keys.len().min(since_irreversible);
    keys.split_off(keys.len() - keep)
}

/// The repetition keys before each move of a standard or atomic list, if it leads from
/// the start position to `position`.
fn replay_open(variant: Variant, position: &Position, wire: &GameWire) -> Option<Vec<u64>> {
    let mut replay = Position::new(variant);
    let mut keys = Vec::with_capacity(wire.moves.len());
    for m in &wire.moves {
        let mv = replay.parse_uci(&m.uci).ok()?;
        keys.push(replay.repetition_key());
        replay.play_unchecked(&mv);
    }
    (replay.fen() == position.fen()).then_some(keys)
}

/// A hidden-chess list replayed from the start, with the repetition keys before each
/// move. A hidden piece arrives as its true role, so the rules replay a hidden game only
/// under a layout: any layout that agrees with every public reveal gives the same public
/// positions (what a hidden piece truly is shows nowhere until it moves, and then the list
/// says it), so one is made up from the reveals alone. It is the bot's own invention, used
/// for public positions only.
fn replay_hidden(first: Color, wire: &GameWire) -> Option<(Game, Vec<u64>)> {
    if first != Color::White {
        return None;
    }
    let layout = layout_agreeing_with_reveals(first, wire)?;
    let mut game = Game::new_hidden(Shuffle::new(layout, [0; 32]));
    let mut keys = Vec::with_capacity(wire.moves.len());
    for m in &wire.moves {
        keys.push(game.position().repetition_key());
        game.play_uci(&m.uci).ok()?;
    }
    Some((game, keys))
}

/// A layout in which every publicly revealed piece is what it revealed as, and the other
/// start squares take the side's remaining identities in any order.
fn layout_agreeing_with_reveals(first: Color, wire: &GameWire) -> Option<Layout> {
    let mut fixed: [Option<Role>; 64] = [None; 64];
    let mut left = ByColor {
        white: START_IDENTITIES,
        black: START_IDENTITIES,
    };
    for (i, m) in wire.moves.iter().enumerate() {
        let Some(r) = &m.reveal else { continue };
        let mover = mover(first, i);
        let uci: UciMove = m.uci.parse().ok()?;
        let now_on = Square::parse(&r.square)?;
        // The mover itself was revealed (a hidden piece moves from its start square), or,
        // castling, the corner piece: the rook-like piece on the side the king went.
        let start = if now_on == uci.to {
            uci.from
        } else {
            let corner_file = if uci.to.file() > uci.from.file() {
                7
            } else {
                0
            };
            hidden_start_squares(mover)
                .into_iter()
                .find(|sq| sq.rank() == mover.back_rank() && sq.file().index() == corner_file)?
        };
        let role = role(&r.role).ok()?;
        if !hidden_start_mask(mover).contains(start) || fixed[start.idx()].is_some() {
            return None;
        }
        let count = left.get_mut(mover).get_mut(role as usize)?;
        *count = count.checked_sub(1)?;
        fixed[start.idx()] = Some(role);
    }
    let mut canonical = String::with_capacity(31);
    for color in [Color::White, Color::Black] {
        if color == Color::Black {
            canonical.push('/');
        }
        let counts = left.get_mut(color);
        for sq in hidden_start_squares(color) {
            let role = match fixed[sq.idx()] {
                Some(role) => role,
                None => {
                    let free = Role::CAPTURABLE
                        .into_iter()
                        .find(|r| counts[*r as usize] > 0)?;
                    counts[free as usize] -= 1;
                    free
                }
            };
            canonical.push(Piece { color, role }.char());
        }
    }
    Layout::from_canonical(&canonical).ok()
}

/// The bot's clock for the engine: its remaining time as read when the job was made,
/// less the time since that reading if its clock was running then (the time the job
/// waited in the queue and in this worker is the bot's own time). `None` in a game
/// without a clock.
pub fn clock_info(wire: &GameWire, seat: Color, now_ms: i64) -> Option<ClockInfo> {
    let spec = wire.clock.as_ref()?;
    let increment_ms = u64::from(spec.increment) * 1000;
    let remaining_ms = match &wire.clocks {
        Some(ClocksWire {
            white_ms,
            black_ms,
            running,
            at,
        }) => {
            let read = if seat == Color::White {
                *white_ms
            } else {
                *black_ms
            };
            let since = if running.as_deref() == Some(seat.name()) {
                u64::try_from(now_ms.saturating_sub(*at)).unwrap_or(0)
            } else {
                0
            };
            read.saturating_sub(since)
        }
        None => u64::from(spec.minutes) * 60_000,
    };
    Some(ClockInfo {
        remaining_ms,
        increment_ms,
    })
}

/// The seed of a job's every random choice: FNV-1a of the job id, so the same job (on any
/// worker, delivered any number of times) gets the same decision.
pub fn seed(job_id: &str) -> u64 {
    job_id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// What the bot sends to game-session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BotAction {
    /// A move in UCI.
    Move(String),
    /// A promotion choice: `q`, `r`, `b` or `n`.
    Promote(String),
}

impl From<Decision> for BotAction {
    fn from(decision: Decision) -> BotAction {
        match decision {
            Decision::Move(m) => BotAction::Move(m.to_string()),
            Decision::Promote(role) => BotAction::Promote(role.char().to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use frontier_protocol::{
        ClockSpec, GameMeta, MoveWire, PlayerInfo, PublicMove, ServerMessage, Status, render_view,
    };

    /// A game played by the rules, and its public move list as game-session keeps it.
    struct Played {
        game: Game,
        moves: Vec<PublicMove>,
    }

    impl Played {
        fn new(variant: Variant) -> Played {
            Played {
                game: Game::new(variant).expect("a game"),
                moves: Vec::new(),
            }
        }

        /// A hidden game with this (secret, server-side) layout.
        fn hidden(layout: &str) -> Played {
            let layout = Layout::from_canonical(layout).expect("a test layout");
            Played {
                game: Game::new_hidden(Shuffle::new(layout, [7; 32])),
                moves: Vec::new(),
            }
        }

        fn play(mut self, ucis: &[&str]) -> Played {
            for uci in ucis {
                let report = self.game.play_uci(uci).expect("a legal test move");
                let e = report.for_audience(Audience::Spectator);
                self.moves.push(PublicMove {
                    uci: e.uci.to_string(),
                    reveal: e.reveal.map(|r| (r.square, r.role)),
                    captured: e.captured.map(|c| (c.square, c.shown_role, c.was_hidden)),
                });
            }
            self
        }

        fn promote(mut self, role: Role) -> Played {
            let report = self.game.choose_promotion(role).expect("a pending choice");
            if let Some(last) = self.moves.last_mut() {
                last.uci = report.for_audience(Audience::Spectator).uci.to_string();
            }
            self
        }

        /// The `game` frame `seat` receives, through the renderer game-session uses.
        fn frame(&self, seat: Color) -> GameWire {
            let meta = GameMeta {
                variant: self.game.variant().name(),
                rated: false,
                clock: None,
                status: Status::Playing,
                white: None,
                black: None,
                draw_offer: None,
                clocks: None,
            };
            let json = render_view(
                "g1",
                7,
                &meta,
                &self.game.view(Audience::Player(seat)),
                &self.moves,
            );
            match serde_json::from_str(&json).expect("a frame") {
                ServerMessage::Game { game, .. } => *game,
                other => panic!("not a game frame: {other:?}"),
            }
        }
    }

    fn job(seat: &str, level: &str, view: GameWire) -> BotJob {
        BotJob {
            job: BotJob::id_for("g1", 7),
            game_id: "g1".to_owned(),
            version: 7,
            player_id: "p1".to_owned(),
            seat: seat.to_owned(),
            level: level.to_owned(),
            view,
            enqueued_at_ms: 0,
        }
    }

    #[test]
    fn a_standard_view_rebuilds_the_repetition_history_since_the_last_irreversible_move() {
        // After 1. e4 e5 (irreversible) the knights go out and back: the current position
        // stood once before, four plies ago — right after 1... e5.
        let played =
            Played::new(Variant::Standard).play(&["e2e4", "e7e5", "g1f3", "b8c6", "f3g1", "c6b8"]);
        let prepared =
            prepare(&job("white", "medium", played.frame(Color::White))).expect("a good job");
        assert_eq!(prepared.level, Level::Medium);
        assert_eq!(prepared.view.seat, Color::White);
        assert_eq!(&prepared.view.position, played.game.position());
        let now = played.game.position().repetition_key();
        assert_eq!(prepared.view.history.len(), 4);
        assert_eq!(prepared.view.history[0], now);
        assert!(prepared.view.history[1..].iter().all(|k| *k != now));
    }

    #[test]
    fn an_atomic_view_replays_its_explosions() {
        // 1. e4 d5 2. exd5 explodes d5's neighbourhood; then quiet knight moves.
        let played = Played::new(Variant::Atomic).play(&["e2e4", "d7d5", "e4d5", "g8f6", "g1f3"]);
        let prepared =
            prepare(&job("black", "easy", played.frame(Color::Black))).expect("a good job");
        assert_eq!(prepared.view.variant(), Variant::Atomic);
        assert_eq!(prepared.view.history.len(), 2);
    }

    #[test]
    fn a_view_that_did_not_start_from_the_start_position_has_no_history() {
        let mut w = Played::new(Variant::Standard).frame(Color::White);
        w.fen = "4k3/8/8/8/8/8/8/4K2R w K - 3 40".to_owned();
        w.moves = ["e1f1", "e8d8"]
            .iter()
            .map(|u| MoveWire {
                uci: (*u).to_owned(),
                reveal: None,
                captured: None,
            })
            .collect();
        let prepared = prepare(&job("white", "easy", w)).expect("a good job");
        assert!(prepared.view.history.is_empty());
    }

    #[test]
    fn impossible_jobs_are_refused_with_their_reason() {
        let w = Played::new(Variant::Standard).frame(Color::White);
        let with = |f: &dyn Fn(&mut GameWire)| {
            let mut w = w.clone();
            f(&mut w);
            job("white", "easy", w)
        };
        let cases = [
            (job("white", "expert", w.clone()), "level"),
            (job("green", "easy", w.clone()), "seat"),
            (job("black", "easy", w.clone()), "not_to_act"),
            (with(&|w| w.variant = "crazyhouse".to_owned()), "variant"),
            (with(&|w| w.fen = "not a fen".to_owned()), "fen"),
            (
                with(&|w| w.fen = "8/8/8/8/8/8/8/8 w - - 0 1".to_owned()),
                "fen",
            ),
            (with(&|w| w.status = "finished".to_owned()), "not_playing"),
            (
                with(&|w| w.pending_promotion = Some("e2".to_owned())),
                "promotion",
            ),
            (
                BotJob {
                    job: "g1:6".to_owned(),
                    ..job("white", "easy", w.clone())
                },
                "job_id",
            ),
            (
                with(&|w| {
                    w.white = Some(PlayerInfo {
                        id: "someone else".to_owned(),
                        name: "x".to_owned(),
                        guest: false,
                        bot: true,
                    })
                }),
                "player",
            ),
        ];
        for (job, reason) in cases {
            let refused = prepare(&job).expect_err("an impossible job");
            assert_eq!(refused.reason(), reason, "{refused}");
        }
        assert_eq!(
            decode(b"{not json").expect_err("garbage").reason(),
            "undecodable"
        );
    }

    /// The layouts of the hidden game below, in `hidden_start_squares` order (back rank a→h
    /// without the king, then the pawn rank a→h). White: b1 a bishop, d2 the queen, e2 a
    /// pawn. Black: d7 and a7 pawns, d8 a rook, g7 a knight.
    const LAYOUT: &str = "RBNPBNRPPPQPPPP/qnbrbprppppppnp";

    /// Moves by apparent role; each first move of a hidden piece reveals it.
    const HIDDEN_GAME: [&str; 12] = [
        "e2e4", // White's e2: a pawn
        "d7d5", // Black's d7: a pawn
        "e4d5", // a revealed pawn takes a revealed pawn
        "d8d5", // Black's d8 takes back and shows a rook
        "b1c3", // White's b1: a bishop
        "d5d2", // the rook takes White's hidden d2: Black alone learns it was the queen
        "c3g7", // the bishop takes Black's hidden g7: White alone learns it was a knight
        "a7a6", // Black's a7: a pawn
        "g7h6", "d2d3", "h6g7", "d3d2", // back and forth: the position after a6 again
    ];

    #[test]
    fn hidden_accounting_takes_reveals_by_their_movers_and_own_captures_by_the_other_side() {
        // White's seat after the whole game: reveals of both sides, and its own capture of
        // Black's g7 knight counted against Black; Black's capture of the d2 queen unknown.
        let played = Played::hidden(LAYOUT).play(&HIDDEN_GAME);
        let frame = played.frame(Color::White);
        assert_eq!(frame.captured_identities.len(), 1);
        let view = seat_view(Variant::Hidden, Color::White, &frame).expect("a consistent view");
        // Counts are pawn, knight, bishop, rook, queen.
        assert_eq!(view.unaccounted.white, [7, 2, 1, 2, 1]);
        assert_eq!(view.unaccounted.black, [6, 1, 2, 1, 1]);
        assert_eq!(&view.position, played.game.position());
        // Black's seat after 5. Bh6: it knows the d2 queen, not the g7 knight.
        let played = Played::hidden(LAYOUT).play(&HIDDEN_GAME[..9]);
        let frame = played.frame(Color::Black);
        let view = seat_view(Variant::Hidden, Color::Black, &frame).expect("a consistent view");
        assert_eq!(view.unaccounted.white, [7, 2, 1, 2, 0]);
        assert_eq!(view.unaccounted.black, [6, 2, 2, 1, 1]);
    }

    #[test]
    fn a_hidden_view_rebuilds_its_repetition_history_from_the_reveals_alone() {
        // After 4... a6 (irreversible: a hidden piece moved) the bishop and the rook go
        // back and forth; the current position stood four plies ago.
        let played = Played::hidden(LAYOUT).play(&HIDDEN_GAME);
        let frame = played.frame(Color::White);
        let view = seat_view(Variant::Hidden, Color::White, &frame).expect("a consistent view");
        let now = played.game.position().repetition_key();
        assert_eq!(view.history.len(), 4);
        assert_eq!(view.history[0], now);
        assert!(view.history[1..].iter().all(|k| *k != now));
    }

    #[test]
    fn castling_reveals_the_corner_piece_and_the_replay_follows_it() {
        // White's h1 piece is truly the queen: castling short reveals it on f1. Then the
        // knights go out and back, and the position after castling stands again.
        let played = Played::hidden("RNBRBNQPPPPPPPP/rnbqbnrpppppppp").play(&[
            "e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "e1g1", "f6g8", "f3h4", "g8f6", "h4f3",
        ]);
        let castle = played.moves[6].reveal.expect("castling reveals the corner");
        assert_eq!(castle.1, Role::Queen);
        let frame = played.frame(Color::Black);
        let view = seat_view(Variant::Hidden, Color::Black, &frame).expect("a consistent view");
        assert_eq!(view.unaccounted.white, [7, 1, 1, 2, 0]);
        let now = played.game.position().repetition_key();
        assert_eq!(view.history.len(), 4);
        assert_eq!(view.history[0], now);
    }

    #[test]
    fn reveals_that_cannot_be_accounted_for_are_refused_without_naming_a_role() {
        let played = Played::hidden(LAYOUT).play(&HIDDEN_GAME[..2]);
        let mut frame = played.frame(Color::White);
        // A forged list: Black revealing a queen twice (a side has one).
        let queen = frontier_protocol::RevealWire {
            square: "d5".to_owned(),
            role: "queen".to_owned(),
        };
        frame.moves[1].reveal = Some(queen.clone());
        frame.moves.push(frame.moves[0].clone());
        frame.moves.push(MoveWire {
            reveal: Some(queen),
            ..frame.moves[1].clone()
        });
        let refused =
            seat_view(Variant::Hidden, Color::White, &frame).expect_err("two black queens");
        assert_eq!(refused, JobError::Accounting);
        assert!(!refused.to_string().contains("queen"));
    }

    #[test]
    fn a_pending_promotion_asks_the_engine_for_a_promotion_choice() {
        // White's a1 piece is truly a pawn, its a2 piece a rook. The a2 rook clears the
        // a-file (taking Black's hidden a7), then the rook-like a1 runs up to a8, takes the
        // hidden piece there and reveals a pawn on its last rank: the choice is pending,
        // White still to act.
        let played = Played::hidden("PNBQBNRRPPPPPPP/rnbqbnrpppppppp")
            .play(&["a2a4", "b7b5", "a4a7", "b5b4", "a7b7", "b4b3", "a1a8"]);
        let frame = played.frame(Color::White);
        assert_eq!(frame.pending_promotion.as_deref(), Some("a8"));
        let prepared = prepare(&job("white", "hard", frame)).expect("a good job");
        assert_eq!(prepared.view.pending_promotion, Square::parse("a8"));
        // White revealed a rook and a pawn; White's seat captured Black's a7 and a8.
        assert_eq!(prepared.view.unaccounted.white, [7, 2, 2, 1, 1]);
        assert_eq!(prepared.view.unaccounted.black, [6, 2, 2, 1, 1]);
        let thought = frontier_engine::think(&frontier_engine::Request {
            view: &prepared.view,
            level: prepared.level,
            clock: None,
            seed: seed("g1:7"),
            limits: None,
        })
        .expect("the engine decides");
        let action = BotAction::from(thought.decision);
        let BotAction::Promote(letter) = &action else {
            panic!("a move instead of a promotion choice: {action:?}");
        };
        let chosen = letter
            .chars()
            .next()
            .and_then(Role::from_char)
            .expect("a role letter");
        // The rules (game-session's) take the choice.
        let done = played.promote(chosen);
        assert_eq!(done.game.pending_promotion(), None);
    }

    #[test]
    fn the_bots_clock_runs_from_the_reading_when_it_is_the_one_running() {
        let mut w = Played::new(Variant::Standard).frame(Color::White);
        assert_eq!(clock_info(&w, Color::White, 5_000), None);
        w.clock = Some(ClockSpec {
            minutes: 3,
            increment: 2,
        });
        w.clocks = Some(ClocksWire {
            white_ms: 60_000,
            black_ms: 50_000,
            running: Some("white".to_owned()),
            at: 1_000,
        });
        let info = |seat, now| clock_info(&w, seat, now).expect("a timed game");
        assert_eq!(
            info(Color::White, 4_000),
            ClockInfo {
                remaining_ms: 57_000,
                increment_ms: 2_000
            }
        );
        // Black's clock is not running: its reading stands.
        assert_eq!(info(Color::Black, 4_000).remaining_ms, 50_000);
        // Never below zero.
        assert_eq!(info(Color::White, 1_000_000).remaining_ms, 0);
    }

    #[test]
    fn the_seed_is_a_function_of_the_job_id() {
        assert_eq!(seed("g:3"), seed("g:3"));
        assert_ne!(seed("g:3"), seed("g:4"));
    }
}
