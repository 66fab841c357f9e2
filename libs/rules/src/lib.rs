//! The rules of standard, hidden and atomic chess (RULES.md): bitboards, legal move
//! generation that allocates nothing per node, Zobrist keys kept incrementally, FEN and UCI,
//! outcomes, and for hidden chess the server's secret state with per-audience views.
//!
//! No I/O and no async: the only outside call is the operating system's random source for
//! a hidden-chess shuffle.
//!
//! Start with [`Game`] for a game a server runs, or [`Position`] for move generation.

mod attacks;
mod bitboard;
mod board;
pub mod cases;
mod fen;
mod game;
mod hidden;
mod perft;
mod position;
pub mod robustness;
mod san;
mod types;
mod uci;
mod zobrist;

pub use attacks::{
    aligned, between, bishop_attacks, init as init_tables, king_attacks, knight_attacks, line,
    pawn_attacks, queen_attacks, rook_attacks,
};
pub use bitboard::Bitboard;
pub use board::{Board, hidden_start_mask, hidden_start_squares, piece_attacks, start_role};
pub use fen::{FenError, FenField, MAX_FEN_LEN, PositionError, Setup};
pub use game::{
    Audience, CapturedIdentity, CapturedPiece, DrawReason, Game, GameSnapshot, MoveEvent,
    MoveReport, Outcome, PlayError, RestoreError, Reveal, SnapshotRef, View, WinReason,
};
pub use hidden::{
    COMMITMENT_DOMAIN, Commitment, HiddenState, Layout, LayoutError, PublishedShuffle, RandomError,
    Shuffle, VerifyError, verify_shuffle,
};
pub use perft::{divide, perft, perft_full, perft_hidden};
pub use position::{MAX_LEGAL_MOVES, Move, MoveKind, MoveList, Position, Variant};
pub use san::{san, san_suffix};
pub use types::{ByColor, CastlingSide, Color, File, Piece, Rank, Role, Square};
pub use uci::{MoveError, UciMove};

/// A variant name that is not `standard`, `hidden` or `atomic`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown variant `{0}`: expected standard, hidden or atomic")]
pub struct ParseVariantError(pub String);
