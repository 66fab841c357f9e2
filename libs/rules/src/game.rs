//! A game in progress: the server's authoritative state for any variant, outcome
//! detection, and what each audience is told.
//!
//! Architecture Invariant: the only ways out of a [`Game`] are [`Game::view`] and
//! [`MoveReport::for_audience`], both of which take the [`Audience`] and include a captured
//! hidden piece's identity only for the player who captured it; plus
//! [`Game::published_shuffle`], which answers only once the game is over.

use std::fmt;

use crate::bitboard::Bitboard;
use crate::hidden::{
    Commitment, HiddenState, Landing, Layout, PublishedShuffle, RandomError, Shuffle,
};
use crate::position::{Move, MoveKind, MoveList, Position, Variant};
use crate::types::{ByColor, Color, Role, Square};
use crate::uci::{MoveError, UciMove};

/// Who is looking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Audience {
    /// The player of one colour.
    Player(Color),
    /// Anyone else: spectators, and anything shown to the public.
    Spectator,
}

/// Why a game was won.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WinReason {
    /// The loser is checkmated.
    Checkmate,
    /// Atomic: the loser's king exploded.
    KingExploded,
    /// The loser resigned.
    Resignation,
    /// The loser's clock ran out.
    Timeout,
    /// The loser stayed disconnected from an untimed game and the winner claimed it.
    Abandonment,
}

/// Why a game was drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DrawReason {
    /// The side to move has no legal move and is not in check.
    Stalemate,
    /// The same position occurred a third time.
    Repetition,
    /// 100 half-moves without capture, true-pawn move or hidden piece's move.
    FiftyMoves,
    /// Neither side can mate (judged publicly).
    InsufficientMaterial,
    /// Both players agreed.
    Agreement,
    /// A clock ran out while the opponent had no way to win.
    TimeoutVsInsufficientMaterial,
}

/// How a game ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// One side won.
    Win {
        /// The winner.
        winner: Color,
        /// Why.
        reason: WinReason,
    },
    /// Nobody won.
    Draw {
        /// Why.
        reason: DrawReason,
    },
    /// Ended before it really started: no result, no rating change.
    Aborted,
}

/// A hidden piece's identity, learned by the player who captured it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CapturedIdentity {
    /// Where it was captured (its start square: hidden pieces never move).
    pub square: Square,
    /// What it truly was.
    pub role: Role,
    /// The half-move (1-based) on which it was captured.
    pub ply: u32,
}

/// A piece revealed by a move, known to everyone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reveal {
    /// Where the revealed piece now stands.
    pub square: Square,
    /// What it is.
    pub role: Role,
}

/// A piece taken off the board by a capture, as everyone saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CapturedPiece {
    /// Where it stood.
    pub square: Square,
    /// Its role as the board showed it (apparent role if it was hidden).
    pub shown_role: Role,
    /// Whether it was still hidden.
    pub was_hidden: bool,
}

/// Why a game action was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlayError {
    /// The game has ended.
    #[error("the game is over")]
    GameOver,
    /// A promotion choice is awaited from the mover before anything else.
    #[error("a promotion choice is pending on {0}")]
    PromotionPending(Square),
    /// No promotion choice is awaited.
    #[error("no promotion choice is pending")]
    NoPromotionPending,
    /// The promotion role is not a queen, rook, bishop or knight.
    #[error("a pawn promotes to a queen, rook, bishop or knight")]
    InvalidPromotionRole,
    /// The move was refused.
    #[error(transparent)]
    Move(#[from] MoveError),
}

/// What one move did, for every audience. Read it through [`MoveReport::for_audience`].
#[derive(Clone, PartialEq, Eq)]
pub struct MoveReport {
    mover: Color,
    ply: u32,
    uci: UciMove,
    reveal: Option<Reveal>,
    captured: Option<CapturedPiece>,
    /// Secret: the identity of a captured hidden piece, for the capturer only.
    captured_identity: Option<Role>,
    exploded: Bitboard,
    promotion_pending: bool,
    completes_promotion: bool,
    outcome: Option<Outcome>,
}

impl fmt::Debug for MoveReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Debug output shows the public event only.
        fmt::Debug::fmt(&self.for_audience(Audience::Spectator), f)
    }
}

/// One move as one audience sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveEvent {
    /// Who moved.
    pub mover: Color,
    /// The half-move number of this move (1-based).
    pub ply: u32,
    /// The move; with the promotion actually made when there was one.
    pub uci: UciMove,
    /// A piece revealed by the move (the mover, or the corner piece when castling).
    pub reveal: Option<Reveal>,
    /// The piece captured, as everyone saw it.
    pub captured: Option<CapturedPiece>,
    /// The captured hidden piece's true identity: present only in the capturer's event.
    pub captured_identity: Option<Role>,
    /// Atomic: the squares emptied by the explosion, besides the mover's origin.
    pub exploded: Bitboard,
    /// The mover revealed a pawn on its last rank and must now choose a promotion.
    pub promotion_pending: bool,
    /// This event is the promotion choice completing an earlier pending move.
    pub completes_promotion: bool,
    /// The game ended with this move.
    pub outcome: Option<Outcome>,
}

impl MoveReport {
    /// The event as `audience` may see it.
    pub fn for_audience(&self, audience: Audience) -> MoveEvent {
        let captured_identity = match audience {
            Audience::Player(color) if color == self.mover => self.captured_identity,
            _ => None,
        };
        MoveEvent {
            mover: self.mover,
            ply: self.ply,
            uci: self.uci,
            reveal: self.reveal,
            captured: self.captured,
            captured_identity,
            exploded: self.exploded,
            promotion_pending: self.promotion_pending,
            completes_promotion: self.completes_promotion,
            outcome: self.outcome,
        }
    }

    /// Who moved.
    pub fn mover(&self) -> Color {
        self.mover
    }

    /// How the game ended with this move, if it did.
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }
}

/// A game as one audience sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// Who this view is for.
    pub audience: Audience,
    /// The public position. While a promotion is pending it shows the revealed pawn on its
    /// last rank with the mover still to move.
    pub position: Position,
    /// The square of a pawn awaiting its promotion choice.
    pub pending_promotion: Option<Square>,
    /// Identities this audience captured (empty for spectators).
    pub captured_identities: Vec<CapturedIdentity>,
    /// Hidden chess: the commitment to the shuffle, shown from the start.
    pub commitment: Option<Commitment>,
    /// The outcome, once there is one.
    pub outcome: Option<Outcome>,
    /// Hidden chess, once the game is over: the shuffle, to check against the commitment.
    pub shuffle: Option<PublishedShuffle>,
}

impl View {
    /// The view's FEN (hidden chess: with hidden squares as their apparent roles).
    pub fn fen(&self) -> String {
        self.position.fen()
    }
}

#[derive(Clone)]
struct Secret {
    state: HiddenState,
    shuffle: Option<Shuffle>,
    captured: ByColor<Vec<CapturedIdentity>>,
}

/// The server's authoritative game.
#[derive(Clone)]
pub struct Game {
    position: Position,
    secret: Option<Secret>,
    /// Repetition keys since the last irreversible move, current position last.
    history: Vec<u64>,
    pending: Option<Move>,
    outcome: Option<Outcome>,
    ply: u32,
}

impl fmt::Debug for Game {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Game")
            .field("fen", &self.position.fen())
            .field("ply", &self.ply)
            .field("pending", &self.pending.map(|m| m.to_uci()))
            .field("outcome", &self.outcome)
            .finish_non_exhaustive()
    }
}

impl Game {
    /// A new game from the start position; hidden chess gets a fresh random shuffle from
    /// the operating system's secure random source.
    pub fn new(variant: Variant) -> Result<Game, RandomError> {
        Ok(match variant {
            Variant::Hidden => Game::new_hidden(Shuffle::random()?),
            _ => Game::from_position(Position::new(variant)),
        })
    }

    /// A new hidden-chess game with this shuffle.
    pub fn new_hidden(shuffle: Shuffle) -> Game {
        let state = HiddenState::new(shuffle.layout().clone());
        Game::with_secret(Secret {
            state,
            shuffle: Some(shuffle),
            captured: ByColor::default(),
        })
    }

    /// A standard or atomic game from a position (a hidden position needs its layout: use
    /// [`Game::from_hidden_state`]).
    pub fn from_position(position: Position) -> Game {
        debug_assert!(position.variant() != Variant::Hidden || position.hidden().is_empty());
        let mut game = Game {
            position,
            secret: None,
            history: Vec::new(),
            pending: None,
            outcome: None,
            ply: 0,
        };
        if position.variant() == Variant::Hidden {
            game.secret = Some(Secret {
                state: HiddenState {
                    position,
                    layout: Layout::unshuffled(),
                },
                shuffle: None,
                captured: ByColor::default(),
            });
        }
        game.history.push(position.repetition_key());
        game.outcome = game.judge();
        game
    }

    /// A hidden game from a server state (no commitment: tests and analysis).
    pub fn from_hidden_state(state: HiddenState) -> Game {
        Game::with_secret(Secret {
            state,
            shuffle: None,
            captured: ByColor::default(),
        })
    }

    fn with_secret(secret: Secret) -> Game {
        let position = secret.state.position;
        let mut game = Game {
            position,
            secret: Some(secret),
            history: vec![position.repetition_key()],
            pending: None,
            outcome: None,
            ply: 0,
        };
        game.outcome = game.judge();
        game
    }

    /// The variant.
    pub fn variant(&self) -> Variant {
        self.position.variant()
    }

    /// The public position (before a pending move; see [`View::position`]).
    pub fn position(&self) -> &Position {
        &self.position
    }

    /// The side whose action is awaited: the side to move, or the mover of a pending
    /// promotion (whose clock keeps running).
    pub fn side_to_act(&self) -> Color {
        self.position.turn()
    }

    /// Half-moves completed.
    pub fn ply(&self) -> u32 {
        self.ply
    }

    /// The outcome, once the game has ended.
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// The square of a pawn awaiting its promotion choice.
    pub fn pending_promotion(&self) -> Option<Square> {
        self.pending.map(|m| m.to)
    }

    /// The legal moves now (none while the game is over or a promotion is pending).
    pub fn legal_moves(&self) -> MoveList {
        if self.outcome.is_some() || self.pending.is_some() {
            return MoveList::new();
        }
        self.position.legal_move_list()
    }

    /// The commitment to the shuffle (hidden games started with one).
    pub fn commitment(&self) -> Option<Commitment> {
        self.secret
            .as_ref()
            .and_then(|s| s.shuffle.as_ref())
            .map(Shuffle::commitment)
    }

    /// The shuffle with its salt, only once the game is over.
    pub fn published_shuffle(&self) -> Option<PublishedShuffle> {
        self.outcome?;
        self.secret.as_ref()?.shuffle.as_ref().map(Shuffle::publish)
    }

    /// The game as `audience` may see it.
    pub fn view(&self, audience: Audience) -> View {
        let captured_identities = match (audience, &self.secret) {
            (Audience::Player(color), Some(secret)) => secret.captured[color].clone(),
            _ => Vec::new(),
        };
        let position = match self.pending {
            None => self.position,
            Some(m) => {
                // Show the revealed pawn on its last rank, the mover still to move.
                let mut shown = self.position;
                shown.make(&m, Role::Pawn);
                shown.turn = self.position.turn;
                shown.fullmoves = self.position.fullmoves;
                shown
            }
        };
        View {
            audience,
            position,
            pending_promotion: self.pending_promotion(),
            captured_identities,
            commitment: self.commitment(),
            outcome: self.outcome,
            shuffle: self.published_shuffle(),
        }
    }

    /// Plays a move written in UCI.
    pub fn play_uci(&mut self, uci: &str) -> Result<MoveReport, PlayError> {
        let uci: UciMove = uci.parse()?;
        self.play_parsed(&uci)
    }

    /// Plays a parsed UCI move.
    pub fn play_parsed(&mut self, uci: &UciMove) -> Result<MoveReport, PlayError> {
        self.check_can_move()?;
        let m = self.position.to_move(uci)?;
        Ok(self.play_legal(&m))
    }

    /// Plays a move from [`Game::legal_moves`], checked again here.
    pub fn play(&mut self, m: &Move) -> Result<MoveReport, PlayError> {
        self.play_parsed(&m.to_uci())
    }

    fn check_can_move(&self) -> Result<(), PlayError> {
        if self.outcome.is_some() {
            return Err(PlayError::GameOver);
        }
        if let Some(m) = self.pending {
            return Err(PlayError::PromotionPending(m.to));
        }
        Ok(())
    }

    /// Plays a move known to be legal now.
    fn play_legal(&mut self, m: &Move) -> MoveReport {
        let mover = self.position.turn;
        let before = self.position.board().occupied();
        let mut report = MoveReport {
            mover,
            ply: self.ply + 1,
            uci: m.to_uci(),
            reveal: None,
            captured: m
                .capture_square()
                .zip(m.capture)
                .map(|(square, shown_role)| CapturedPiece {
                    square,
                    shown_role,
                    was_hidden: self.position.hidden.contains(square),
                }),
            captured_identity: None,
            exploded: Bitboard::EMPTY,
            promotion_pending: false,
            completes_promotion: false,
            outcome: None,
        };
        match &mut self.secret {
            None => {
                report.uci.promotion = m.promotion;
                self.position.play_unchecked(m);
            }
            Some(secret) => {
                if let Some(square) = m.capture_square()
                    && let Some(role) = secret.state.revealed(square)
                {
                    report.captured_identity = Some(role);
                    secret.captured[mover].push(CapturedIdentity {
                        square,
                        role,
                        ply: self.ply + 1,
                    });
                }
                let reveal_square = match m.kind {
                    MoveKind::Castle { side, rook } => secret
                        .state
                        .revealed(rook)
                        .map(|_| Square::from_coords(side.rook_to_file(), mover.back_rank())),
                    _ => secret.state.revealed(m.from).map(|_| m.to),
                };
                match secret.state.landing(m) {
                    Landing::NeedsPromotion => {
                        report.reveal = Some(Reveal {
                            square: m.to,
                            role: Role::Pawn,
                        });
                        report.promotion_pending = true;
                        report.uci.promotion = None;
                        self.pending = Some(*m);
                        return report;
                    }
                    Landing::Role(role) => {
                        let castling = matches!(m.kind, MoveKind::Castle { .. });
                        let true_role = secret.state.revealed(m.from).unwrap_or(m.role);
                        let promoted = !castling
                            && true_role == Role::Pawn
                            && m.to.rank() == mover.promotion_rank();
                        report.uci.promotion = promoted.then_some(role);
                        report.reveal = reveal_square.map(|square| Reveal {
                            square,
                            role: if castling { role } else { true_role },
                        });
                        secret.state.make(m, role);
                        self.position = secret.state.position;
                    }
                }
            }
        }
        if self.position.variant() == Variant::Atomic && m.capture.is_some() {
            report.exploded = before & !self.position.board().occupied() & !Bitboard::from(m.from);
        }
        report.outcome = self.complete_move();
        report
    }

    /// Answers a pending promotion (hidden chess).
    pub fn choose_promotion(&mut self, role: Role) -> Result<MoveReport, PlayError> {
        if self.outcome.is_some() {
            return Err(PlayError::GameOver);
        }
        let m = self.pending.ok_or(PlayError::NoPromotionPending)?;
        if !role.is_promotion_target() {
            return Err(PlayError::InvalidPromotionRole);
        }
        let secret = self
            .secret
            .as_mut()
            .expect("a promotion is pending only in hidden games, which have a secret");
        secret.state.make(&m, role);
        self.position = secret.state.position;
        self.pending = None;
        let mover = !self.position.turn;
        let mut report = MoveReport {
            mover,
            ply: self.ply + 1,
            uci: m.with_promotion(Some(role)).to_uci(),
            reveal: None,
            captured: None,
            captured_identity: None,
            exploded: Bitboard::EMPTY,
            promotion_pending: false,
            completes_promotion: true,
            outcome: None,
        };
        report.outcome = self.complete_move();
        Ok(report)
    }

    /// Book-keeping after a completed move: ply, repetition history, outcome.
    fn complete_move(&mut self) -> Option<Outcome> {
        self.ply += 1;
        if self.position.halfmoves() == 0 {
            self.history.clear();
        }
        self.history.push(self.position.repetition_key());
        self.outcome = self.judge();
        self.outcome
    }

    /// The outcome decided by the position alone, if any.
    fn judge(&self) -> Option<Outcome> {
        let pos = &self.position;
        if let Some(loser) = pos.exploded_king() {
            return Some(Outcome::Win {
                winner: !loser,
                reason: WinReason::KingExploded,
            });
        }
        if !pos.has_legal_move() {
            return Some(if pos.is_check() {
                Outcome::Win {
                    winner: !pos.turn(),
                    reason: WinReason::Checkmate,
                }
            } else {
                Outcome::Draw {
                    reason: DrawReason::Stalemate,
                }
            });
        }
        let reason = if pos.is_insufficient_material() {
            DrawReason::InsufficientMaterial
        } else if self.repetitions() >= 3 {
            DrawReason::Repetition
        } else if pos.halfmoves() >= 100 {
            DrawReason::FiftyMoves
        } else {
            return None;
        };
        Some(Outcome::Draw { reason })
    }

    /// How often the current position has occurred.
    pub fn repetitions(&self) -> usize {
        let Some(&current) = self.history.last() else {
            return 0;
        };
        self.history.iter().filter(|&&k| k == current).count()
    }

    fn end(&mut self, outcome: Outcome) -> Result<Outcome, PlayError> {
        if self.outcome.is_some() {
            return Err(PlayError::GameOver);
        }
        self.pending = None;
        self.outcome = Some(outcome);
        Ok(outcome)
    }

    /// `color` resigns.
    pub fn resign(&mut self, color: Color) -> Result<Outcome, PlayError> {
        self.end(Outcome::Win {
            winner: !color,
            reason: WinReason::Resignation,
        })
    }

    /// Both players agreed to a draw.
    pub fn agree_draw(&mut self) -> Result<Outcome, PlayError> {
        self.end(Outcome::Draw {
            reason: DrawReason::Agreement,
        })
    }

    /// `color`'s clock ran out: a loss, or a draw if the opponent has no way at all to win
    /// (RULES.md §5, judged publicly).
    pub fn flag(&mut self, color: Color) -> Result<Outcome, PlayError> {
        let outcome = if self.position.has_insufficient_material(!color) {
            Outcome::Draw {
                reason: DrawReason::TimeoutVsInsufficientMaterial,
            }
        } else {
            Outcome::Win {
                winner: !color,
                reason: WinReason::Timeout,
            }
        };
        self.end(outcome)
    }

    /// The game is aborted (no result).
    pub fn abort(&mut self) -> Result<Outcome, PlayError> {
        self.end(Outcome::Aborted)
    }

    /// `winner` claims an untimed game its opponent abandoned.
    pub fn claim_abandonment(&mut self, winner: Color) -> Result<Outcome, PlayError> {
        self.end(Outcome::Win {
            winner,
            reason: WinReason::Abandonment,
        })
    }

    /// Hidden chess: the server state in its storage notation (secret; storage only).
    pub fn server_fen(&self) -> Option<String> {
        self.secret.as_ref().map(|s| s.state.server_fen())
    }
}

impl Outcome {
    /// A stable code for records and the protocol: `white-checkmate`, `black-timeout`,
    /// `draw-repetition`, `aborted`, …
    pub fn code(&self) -> String {
        match self {
            Outcome::Win { winner, reason } => format!("{}-{}", winner.name(), reason.code()),
            Outcome::Draw { reason } => format!("draw-{}", reason.code()),
            Outcome::Aborted => "aborted".to_owned(),
        }
    }

    /// The winner, if any.
    pub fn winner(&self) -> Option<Color> {
        match self {
            Outcome::Win { winner, .. } => Some(*winner),
            _ => None,
        }
    }
}

impl WinReason {
    /// `checkmate`, `king-exploded`, `resignation`, `timeout` or `abandonment`.
    pub fn code(self) -> &'static str {
        match self {
            WinReason::Checkmate => "checkmate",
            WinReason::KingExploded => "king-exploded",
            WinReason::Resignation => "resignation",
            WinReason::Timeout => "timeout",
            WinReason::Abandonment => "abandonment",
        }
    }
}

impl DrawReason {
    /// `stalemate`, `repetition`, `fifty-moves`, `insufficient-material`, `agreement` or
    /// `timeout-vs-insufficient-material`.
    pub fn code(self) -> &'static str {
        match self {
            DrawReason::Stalemate => "stalemate",
            DrawReason::Repetition => "repetition",
            DrawReason::FiftyMoves => "fifty-moves",
            DrawReason::InsufficientMaterial => "insufficient-material",
            DrawReason::Agreement => "agreement",
            DrawReason::TimeoutVsInsufficientMaterial => "timeout-vs-insufficient-material",
        }
    }
}

impl Game {
    /// Hidden chess: the full server state (crate-internal, for perft over a game).
    pub(crate) fn hidden_state(&self) -> Option<&HiddenState> {
        self.secret.as_ref().map(|s| &s.state)
    }
}

/// Everything needed to rebuild a [`Game`] exactly: the server's storage form of a game.
/// Secret (it holds the server notation and the shuffle): storage only, never for a client.
#[derive(Clone, PartialEq, Eq)]
pub struct GameSnapshot {
    /// The variant.
    pub variant: Variant,
    /// The position's FEN; for hidden chess the server notation (true board, hidden squares).
    pub fen: String,
    /// Hidden chess: the canonical layout and salt the game started with, if any.
    pub shuffle: Option<(String, [u8; 32])>,
    /// Identities each side captured.
    pub captured: ByColor<Vec<CapturedIdentity>>,
    /// Repetition keys since the last irreversible move.
    pub history: Vec<u64>,
    /// A move waiting for its promotion choice.
    pub pending: Option<UciMove>,
    /// The outcome, as [`Outcome::code`].
    pub outcome: Option<String>,
    /// Half-moves completed.
    pub ply: u32,
}

impl fmt::Debug for GameSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GameSnapshot(<secret>)")
    }
}

/// Why a snapshot could not be restored (corrupt storage, or a bug).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// The FEN does not parse.
    #[error("stored FEN: {0}")]
    Fen(#[from] crate::fen::FenError),
    /// The stored layout does not parse.
    #[error("stored layout: {0}")]
    Layout(#[from] crate::hidden::LayoutError),
    /// The pending move is not legal in the stored position.
    #[error("stored pending move: {0}")]
    Pending(#[from] MoveError),
    /// The stored outcome code is unknown.
    #[error("stored outcome `{0}` is unknown")]
    Outcome(String),
}

/// No captured identities (the storage form of a game that is not hidden chess).
static NO_CAPTURES: ByColor<Vec<CapturedIdentity>> = ByColor {
    white: Vec::new(),
    black: Vec::new(),
};

/// A [`GameSnapshot`] that borrows what the game holds instead of copying it: for a
/// caller that encodes the storage form straight away (game-session, on every move) and
/// would only drop the copies. Secret like the snapshot: storage only.
pub struct SnapshotRef<'a> {
    /// The variant.
    pub variant: Variant,
    /// The position's FEN; for hidden chess the server notation (see [`GameSnapshot::fen`]).
    pub fen: String,
    /// Hidden chess: the canonical layout and salt the game started with, if any.
    pub shuffle: Option<(String, [u8; 32])>,
    /// Identities each side captured.
    pub captured: &'a ByColor<Vec<CapturedIdentity>>,
    /// Repetition keys since the last irreversible move.
    pub history: &'a [u64],
    /// A move waiting for its promotion choice.
    pub pending: Option<UciMove>,
    /// The outcome.
    pub outcome: Option<Outcome>,
    /// Half-moves completed.
    pub ply: u32,
}

impl fmt::Debug for SnapshotRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SnapshotRef(<secret>)")
    }
}

impl Game {
    /// The storage form of this game.
    pub fn snapshot(&self) -> GameSnapshot {
        let SnapshotRef {
            variant,
            fen,
            shuffle,
            captured,
            history,
            pending,
            outcome,
            ply,
        } = self.snapshot_ref();
        GameSnapshot {
            variant,
            fen,
            shuffle,
            captured: captured.clone(),
            history: history.to_vec(),
            pending,
            outcome: outcome.map(|o| o.code()),
            ply,
        }
    }

    /// The storage form of this game, borrowed where the game holds it.
    pub fn snapshot_ref(&self) -> SnapshotRef<'_> {
        self.snapshot_ref_reusing(None)
    }

    /// [`snapshot_ref`](Self::snapshot_ref), taking `view_fen` — this game's FEN as a
    /// view of it writes it now ([`View::fen`]), if the caller has just written one — as
    /// the stored FEN where the two are the same: a game without a secret stores its
    /// position's FEN, which every audience's view shows (and it never has a pending
    /// promotion). A hidden game stores its server FEN, written here whatever is given.
    /// A FEN of another position would be stored as given: debug builds check it.
    pub fn snapshot_ref_reusing(&self, view_fen: Option<String>) -> SnapshotRef<'_> {
        let (fen, shuffle, captured) = match &self.secret {
            Some(secret) => (
                secret.state.server_fen(),
                secret
                    .shuffle
                    .as_ref()
                    .map(|s| (s.layout().canonical(), s.salt())),
                &secret.captured,
            ),
            None => {
                let fen = match view_fen {
                    Some(fen) => {
                        debug_assert_eq!(fen, self.position.fen(), "another position's FEN");
                        fen
                    }
                    None => self.position.fen(),
                };
                (fen, None, &NO_CAPTURES)
            }
        };
        SnapshotRef {
            variant: self.variant(),
            fen,
            shuffle,
            captured,
            history: &self.history,
            pending: self.pending.map(|m| m.to_uci()),
            outcome: self.outcome,
            ply: self.ply,
        }
    }

    /// Rebuilds a game from its storage form.
    pub fn restore(snapshot: GameSnapshot) -> Result<Game, RestoreError> {
        let (position, secret) = match snapshot.variant {
            Variant::Hidden => {
                let state = HiddenState::from_server_fen(&snapshot.fen)?;
                let shuffle = match snapshot.shuffle {
                    Some((layout, salt)) => {
                        Some(Shuffle::new(Layout::from_canonical(&layout)?, salt))
                    }
                    None => None,
                };
                (
                    state.position,
                    Some(Secret {
                        state,
                        shuffle,
                        captured: snapshot.captured,
                    }),
                )
            }
            variant => (Position::from_fen(variant, &snapshot.fen)?, None),
        };
        let pending = match snapshot.pending {
            Some(uci) => Some(position.to_move(&uci)?),
            None => None,
        };
        let outcome = match snapshot.outcome {
            Some(code) => Some(Outcome::from_code(&code).ok_or(RestoreError::Outcome(code))?),
            None => None,
        };
        Ok(Game {
            position,
            secret,
            history: snapshot.history,
            pending,
            outcome,
            ply: snapshot.ply,
        })
    }
}

impl Outcome {
    /// Parses [`Outcome::code`].
    pub fn from_code(code: &str) -> Option<Outcome> {
        if code == "aborted" {
            return Some(Outcome::Aborted);
        }
        if let Some(reason) = code.strip_prefix("draw-") {
            let reason = [
                DrawReason::Stalemate,
                DrawReason::Repetition,
                DrawReason::FiftyMoves,
                DrawReason::InsufficientMaterial,
                DrawReason::Agreement,
                DrawReason::TimeoutVsInsufficientMaterial,
            ]
            .into_iter()
            .find(|r| r.code() == reason)?;
            return Some(Outcome::Draw { reason });
        }
        let (winner, reason) = code.split_once('-')?;
        let winner = Color::ALL.into_iter().find(|c| c.name() == winner)?;
        let reason = [
            WinReason::Checkmate,
            WinReason::KingExploded,
            WinReason::Resignation,
            WinReason::Timeout,
            WinReason::Abandonment,
        ]
        .into_iter()
        .find(|r| r.code() == reason)?;
        Some(Outcome::Win { winner, reason })
    }
}
