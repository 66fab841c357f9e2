//! FEN and hidden-FEN: parsing into an unchecked [`Setup`], validation into a [`Position`],
//! and printing.
//!
//! Hidden-FEN is FEN followed by a seventh field listing the hidden squares concatenated in
//! index order (`a1b1c1…`) or `-`. A *view* FEN shows hidden squares as their apparent role;
//! the *server* notation (see `crate::hidden`) shows the true board.

use std::fmt;

use crate::bitboard::Bitboard;
use crate::board::{Board, hidden_start_mask, start_role};
use crate::position::{Position, Variant};
use crate::types::{Color, File, Piece, Rank, Role, Square};

/// Longest FEN accepted, in bytes: a real FEN with a full hidden field is under 150.
pub const MAX_FEN_LEN: usize = 256;

/// The field of a FEN that a [`FenError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FenField {
    /// Piece placement.
    Placement,
    /// Side to move.
    Turn,
    /// Castling rights.
    Castling,
    /// En-passant square.
    EnPassant,
    /// Half-move clock.
    Halfmoves,
    /// Full-move number.
    Fullmoves,
    /// Hidden squares (hidden chess).
    Hidden,
}

impl fmt::Display for FenField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FenField::Placement => "placement",
            FenField::Turn => "side to move",
            FenField::Castling => "castling",
            FenField::EnPassant => "en passant",
            FenField::Halfmoves => "half-move clock",
            FenField::Fullmoves => "full-move number",
            FenField::Hidden => "hidden squares",
        })
    }
}

/// Why a FEN was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FenError {
    /// Nothing but white space.
    #[error("FEN is empty")]
    Empty,
    /// Longer than [`MAX_FEN_LEN`].
    #[error("FEN is {0} bytes long; at most 256 are accepted")]
    TooLong(usize),
    /// Too few or too many fields.
    #[error("FEN has {found} fields; expected 4 to {max}")]
    FieldCount {
        /// Fields found.
        found: usize,
        /// Most fields allowed for the variant.
        max: usize,
    },
    /// One field could not be read.
    #[error("FEN {field} field: {reason}")]
    Field {
        /// Which field.
        field: FenField,
        /// What was wrong, in words.
        reason: String,
    },
    /// The fields were read but describe an impossible position.
    #[error("invalid position: {0}")]
    Position(#[from] PositionError),
}

fn field_err(field: FenField, reason: impl Into<String>) -> FenError {
    FenError::Field {
        field,
        reason: reason.into(),
    }
}

/// Why a syntactically fine setup is not a valid position of its variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PositionError {
    /// A side has no king.
    #[error("{} has no king", .0.name())]
    MissingKing(Color),
    /// A side has more than one king.
    #[error("{} has more than one king", .0.name())]
    TooManyKings(Color),
    /// A pawn on a rank it may not stand on in this variant.
    #[error("a pawn stands on {0}, where this variant allows none")]
    PawnOnBackRank(Square),
    /// More pieces than a game can have.
    #[error("{} has more material than a game can produce", .0.name())]
    TooMuchMaterial(Color),
    /// An en-passant square that no double step can have produced.
    #[error("en-passant square {0} does not follow a pawn's double step")]
    InvalidEnPassant(Square),
    /// The side not to move is in check.
    #[error("the side not to move is in check")]
    OppositeCheck,
    /// Hidden squares in a variant without hidden pieces.
    #[error("only hidden chess has hidden pieces")]
    HiddenInWrongVariant,
    /// A hidden square that is not a non-king start square of the piece's colour.
    #[error("{0} cannot hold a hidden piece")]
    HiddenNotOnStartSquare(Square),
    /// A view shows a hidden piece as something other than its apparent role.
    #[error("the hidden piece on {0} must show the role that starts there")]
    HiddenNotApparent(Square),
}

/// A position as written, not yet checked against the rules of a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// Placement as written (true roles, in the server notation of hidden chess).
    pub board: Board,
    /// Side to move.
    pub turn: Color,
    /// Corners with a castling right.
    pub castling: Bitboard,
    /// En-passant square.
    pub ep_square: Option<Square>,
    /// Half-move clock.
    pub halfmoves: u32,
    /// Full-move number.
    pub fullmoves: u32,
    /// Hidden squares (seventh field).
    pub hidden: Bitboard,
}

impl Setup {
    /// Parses 4 to 7 space-separated fields; a seventh (hidden squares) only if `allow_hidden`.
    pub fn parse(fen: &str, allow_hidden: bool) -> Result<Setup, FenError> {
        if fen.len() > MAX_FEN_LEN {
            return Err(FenError::TooLong(fen.len()));
        }
        let fields: arrayvec::ArrayVec<&str, 8> = {
            let mut v = arrayvec::ArrayVec::new();
            for part in fen.split_ascii_whitespace() {
                if v.try_push(part).is_err() {
                    break;
                }
            }
            v
        };
        let max = if allow_hidden { 7 } else { 6 };
        if fields.is_empty() {
            return Err(FenError::Empty);
        }
        let count = fen.split_ascii_whitespace().count();
        if !(4..=max).contains(&count) {
            return Err(FenError::FieldCount { found: count, max });
        }
        let board = parse_placement(fields[0])?;
        let turn = match fields[1] {
            "w" => Color::White,
            "b" => Color::Black,
            other => {
                return Err(field_err(
                    FenField::Turn,
                    format!("expected `w` or `b`, found `{}`", truncate(other)),
                ));
            }
        };
        let castling = parse_castling(fields[2], &board, allow_hidden)?;
        let ep_square = match fields[3] {
            "-" => None,
            s => Some(Square::parse(s).ok_or_else(|| {
                field_err(
                    FenField::EnPassant,
                    format!("expected a square or `-`, found `{}`", truncate(s)),
                )
            })?),
        };
        // With six or more fields, fields 5 and 6 are the counters; a hidden field may
        // also follow the four EPD fields directly when the counters are left out.
        let (counters, hidden_field) = match fields.len() {
            4 => (None, None),
            5 if allow_hidden && !fields[4].bytes().all(|b| b.is_ascii_digit()) => {
                (None, Some(fields[4]))
            }
            5 => {
                return Err(field_err(
                    FenField::Fullmoves,
                    "the half-move clock needs the full-move number after it",
                ));
            }
            6 => (Some((fields[4], fields[5])), None),
            _ => (Some((fields[4], fields[5])), Some(fields[6])),
        };
        let (halfmoves, fullmoves) = match counters {
            None => (0, 1),
            Some((h, f)) => (
                parse_counter(FenField::Halfmoves, h)?,
                parse_counter(FenField::Fullmoves, f)?.max(1),
            ),
        };
        let hidden = match hidden_field {
            None | Some("-") => Bitboard::EMPTY,
            Some(s) => parse_hidden(s)?,
        };
        Ok(Setup {
            board,
            turn,
            castling,
            ep_square,
            halfmoves,
            fullmoves,
            hidden,
        })
    }

    /// Writes the FEN of this setup; the hidden field only if `with_hidden`.
    pub fn write_fen(&self, out: &mut String, with_hidden: bool) {
        write_placement(&self.board, out);
        out.push(' ');
        out.push(self.turn.fen_char());
        out.push(' ');
        write_castling(&self.board, self.castling, self.hidden, out);
        out.push(' ');
        match self.ep_square {
            Some(sq) => sq.push_name(out),
            None => out.push('-'),
        }
        out.push(' ');
        write_number(self.halfmoves, out);
        out.push(' ');
        write_number(self.fullmoves, out);
        if with_hidden {
            out.push(' ');
            write_hidden(self.hidden, out);
        }
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(16).collect()
}

fn parse_counter(field: FenField, s: &str) -> Result<u32, FenError> {
    if s.is_empty() || s.len() > 6 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(field_err(
            field,
            format!("expected a number below 1000000, found `{}`", truncate(s)),
        ));
    }
    s.parse()
        .map_err(|_| field_err(field, "expected a number below 1000000"))
}

fn parse_placement(s: &str) -> Result<Board, FenError> {
    let mut board = Board::empty();
    let ranks: Vec<&str> = s.split('/').collect();
    if ranks.len() != 8 {
        return Err(field_err(
            FenField::Placement,
            format!("expected 8 ranks separated by `/`, found {}", ranks.len()),
        ));
    }
    for (i, rank_str) in ranks.iter().enumerate() {
        let rank = Rank(7 - i as u8);
        let mut file = 0u8;
        for c in rank_str.chars() {
            if let Some(d) = c.to_digit(10).filter(|d| (1..=8).contains(d)) {
                file += d as u8;
            } else if let Some(piece) = Piece::from_char(c) {
                if file < 8 {
                    board.set(Square::from_coords(File(file), rank), piece);
                }
                file += 1;
            } else {
                return Err(field_err(
                    FenField::Placement,
                    format!(
                        "unexpected character `{}` on rank {}",
                        c.escape_default(),
                        rank.char()
                    ),
                ));
            }
            if file > 8 {
                break;
            }
        }
        if file != 8 {
            return Err(field_err(
                FenField::Placement,
                format!("rank {} does not have exactly 8 squares", rank.char()),
            ));
        }
    }
    Ok(board)
}

/// Castling rights are rook squares. `K`/`Q` (`k`/`q`) name the outermost rook of that
/// colour on the king's side / queen's side of its king on the back rank (X-FEN); a file
/// letter `A`–`H` (`a`–`h`) names the rook on that file (Shredder-FEN). Rights whose king
/// or rook is missing are dropped by [`Position::from_setup`]. In hidden chess `K`/`Q` are
/// always the corners: the corner piece castles whatever it truly is.
fn parse_castling(s: &str, board: &Board, hidden_chess: bool) -> Result<Bitboard, FenError> {
    if s == "-" {
        return Ok(Bitboard::EMPTY);
    }
    let mut rights = Bitboard::EMPTY;
    for c in s.chars() {
        let color = if c.is_ascii_uppercase() {
            Color::White
        } else {
            Color::Black
        };
        let back = Bitboard::rank(color.back_rank());
        let rooks = board.by_piece(Piece {
            color,
            role: Role::Rook,
        }) & back;
        let king = (board.by_piece(Piece {
            color,
            role: Role::King,
        }) & back)
            .first();
        let corner = |file: u8| Square::from_coords(File(file), color.back_rank());
        let sq = match c.to_ascii_lowercase() {
            'k' if hidden_chess => corner(7),
            'q' if hidden_chess => corner(0),
            'k' => king
                .and_then(|k| rooks.filter(|&r| r > k).last())
                .unwrap_or(corner(7)),
            'q' => king
                .and_then(|k| rooks.into_iter().find(|&r| r < k))
                .unwrap_or(corner(0)),
            f @ 'a'..='h' => corner(f as u8 - b'a'),
            _ => {
                return Err(field_err(
                    FenField::Castling,
                    format!("expected letters of `KQkq` or `-`, found `{}`", truncate(s)),
                ));
            }
        };
        if rights.contains(sq) {
            return Err(field_err(
                FenField::Castling,
                format!("`{c}` appears twice"),
            ));
        }
        rights.add(sq);
    }
    Ok(rights)
}

fn parse_hidden(s: &str) -> Result<Bitboard, FenError> {
    let bytes = s.as_bytes();
    if !bytes.len().is_multiple_of(2) || bytes.len() > 64 || !s.is_ascii() {
        return Err(field_err(
            FenField::Hidden,
            "expected squares written one after another (`a1b1c2`) or `-`",
        ));
    }
    let mut hidden = Bitboard::EMPTY;
    for pair in bytes.chunks_exact(2) {
        let text = std::str::from_utf8(pair).unwrap_or("??");
        let sq = Square::parse(text).ok_or_else(|| {
            field_err(
                FenField::Hidden,
                format!("`{}` is not a square", text.escape_default()),
            )
        })?;
        if hidden.contains(sq) {
            return Err(field_err(FenField::Hidden, format!("{sq} appears twice")));
        }
        hidden.add(sq);
    }
    Ok(hidden)
}

pub(crate) fn write_placement(board: &Board, out: &mut String) {
    // Every square's letter, filled from the twelve piece sets (a FEN is written on every
    // move of a live game: asking the board square by square cost most of it).
    let mut letters = [0u8; 64];
    for color in Color::ALL {
        for role in Role::ALL {
            let piece = Piece { color, role };
            let letter = piece.char() as u8;
            for sq in board.by_piece(piece) {
                letters[sq.idx()] = letter;
            }
        }
    }
    // 64 squares and 7 slashes at most.
    let mut placement = [0u8; 71];
    let mut n = 0;
    for rank in letters.chunks_exact(8).rev() {
        let mut empty = 0u8;
        for &letter in rank {
            if letter == 0 {
                empty += 1;
                continue;
            }
            if empty > 0 {
                placement[n] = b'0' + empty;
                n += 1;
                empty = 0;
            }
            placement[n] = letter;
            n += 1;
        }
        if empty > 0 {
            placement[n] = b'0' + empty;
            n += 1;
        }
        placement[n] = b'/';
        n += 1;
    }
    // The last rank written (the first) has no slash after it.
    push_ascii(&placement[..n.saturating_sub(1)], out);
}

/// Appends bytes known to be ASCII.
fn push_ascii(bytes: &[u8], out: &mut String) {
    if let Ok(text) = std::str::from_utf8(bytes) {
        out.push_str(text);
    }
}

/// A counter in decimal, without the formatting machinery.
fn write_number(mut n: u32, out: &mut String) {
    let mut digits = [0u8; 10];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    push_ascii(&digits[start..], out);
}

/// `KQkq` for outermost rooks, the rook's file letter otherwise, `-` for none.
fn write_castling(board: &Board, castling: Bitboard, hidden: Bitboard, out: &mut String) {
    if castling.is_empty() {
        out.push('-');
    }
    for color in Color::ALL {
        let back = Bitboard::rank(color.back_rank());
        let rights = castling & back;
        let rooks = board.by_piece(Piece {
            color,
            role: Role::Rook,
        }) & back;
        let king = board.king_of(color);
        // King side first, then queen side, as FEN writes them.
        let mut ordered: arrayvec::ArrayVec<Square, 8> = rights.collect();
        ordered.reverse();
        for rook in ordered {
            // A hidden corner piece is the castling piece whatever it truly is.
            let outermost = hidden.contains(rook)
                || king.is_some_and(|k| {
                    if rook > k {
                        rooks.filter(|&r| r > k).last() == Some(rook)
                    } else {
                        rooks.into_iter().find(|&r| r < k) == Some(rook)
                    }
                });
            let c = match (outermost, king.is_some_and(|k| rook > k)) {
                (true, true) => 'k',
                (true, false) => 'q',
                (false, _) => rook.file().char(),
            };
            out.push(match color {
                Color::White => c.to_ascii_uppercase(),
                Color::Black => c,
            });
        }
    }
}

pub(crate) fn write_hidden(hidden: Bitboard, out: &mut String) {
    if hidden.is_empty() {
        out.push('-');
    }
    for sq in hidden {
        sq.push_name(out);
    }
}

impl Position {
    /// Parses a FEN of `variant`. For hidden chess this is a *view* FEN: hidden squares
    /// show their apparent role (the server's true-board notation is parsed by
    /// `HiddenState::from_server_fen`).
    pub fn from_fen(variant: Variant, fen: &str) -> Result<Position, FenError> {
        let setup = Setup::parse(fen, variant == Variant::Hidden)?;
        Ok(Position::from_setup(variant, setup)?)
    }

    /// Checks a setup against the rules of `variant`.
    pub fn from_setup(variant: Variant, setup: Setup) -> Result<Position, PositionError> {
        let board = &setup.board;
        // Hidden squares.
        if variant != Variant::Hidden && setup.hidden.nonempty() {
            return Err(PositionError::HiddenInWrongVariant);
        }
        for sq in setup.hidden {
            let color = board
                .color_at(sq)
                .ok_or(PositionError::HiddenNotOnStartSquare(sq))?;
            if !hidden_start_mask(color).contains(sq) {
                return Err(PositionError::HiddenNotOnStartSquare(sq));
            }
            if board.role_at(sq) != start_role(sq) {
                return Err(PositionError::HiddenNotApparent(sq));
            }
        }
        check_material(variant, board)?;
        // Castling rights that cannot stand (no king on its start square, or no rook —
        // in hidden chess no hidden piece — in the corner) are dropped, as lichess and
        // shakmaty do: they change nothing a player could do.
        let mut setup = setup;
        for rook in setup.castling {
            let color = if rook.rank() == Rank(0) {
                Color::White
            } else {
                Color::Black
            };
            let king = board.king_of(color);
            let rook_ok = board.piece_at(rook)
                == Some(Piece {
                    color,
                    role: Role::Rook,
                });
            let ok = match variant {
                // Hidden chess castles only from the start: king on the e-file, the hidden
                // apparent rook in its corner.
                Variant::Hidden => {
                    rook_ok
                        && setup.hidden.contains(rook)
                        && matches!(rook.file().index(), 0 | 7)
                        && king == Some(Square::from_coords(File(4), color.back_rank()))
                }
                _ => rook_ok && king.is_some_and(|k| k.rank() == color.back_rank()),
            };
            if !ok {
                setup.castling.discard(rook);
            }
        }
        // En passant.
        if let Some(ep) = setup.ep_square {
            let us = setup.turn;
            let step: i8 = us.fold(8, -8);
            let ok = Position::relative_rank(us, ep) == Rank(5)
                && !board.occupied().contains(ep)
                && ep
                    .offset(step)
                    .is_some_and(|origin| !board.occupied().contains(origin))
                && ep.offset(-step).is_some_and(|pawn_sq| {
                    board.piece_at(pawn_sq)
                        == Some(Piece {
                            color: !us,
                            role: Role::Pawn,
                        })
                        && !setup.hidden.contains(pawn_sq)
                });
            if !ok {
                return Err(PositionError::InvalidEnPassant(ep));
            }
        }
        let mut pos = Position {
            variant,
            board: setup.board,
            turn: setup.turn,
            castling: setup.castling,
            ep_square: setup.ep_square,
            halfmoves: setup.halfmoves,
            fullmoves: setup.fullmoves,
            hidden: setup.hidden,
            key: 0,
        };
        // The side not to move may not be in check (atomic: unless the kings touch).
        let them = !pos.turn;
        if let (Some(their_king), Some(our_king)) = (board.king_of(them), board.king_of(pos.turn)) {
            let touching = crate::attacks::king_attacks(their_king).contains(our_king);
            let attacked = board
                .attackers_to(their_king, pos.turn, board.occupied())
                .nonempty();
            if attacked && !(variant == Variant::Atomic && touching) {
                return Err(PositionError::OppositeCheck);
            }
        }
        pos.key = pos.compute_key();
        Ok(pos)
    }

    /// The unchecked setup of this position (apparent roles for hidden pieces).
    pub fn to_setup(&self) -> Setup {
        Setup {
            board: self.board,
            turn: self.turn,
            castling: self.castling,
            ep_square: self.legal_ep_square(),
            halfmoves: self.halfmoves,
            fullmoves: self.fullmoves,
            hidden: self.hidden,
        }
    }

    /// The FEN of this position; for hidden chess the view FEN with its seventh field.
    /// The en-passant square is written only when an en-passant capture is legal.
    pub fn fen(&self) -> String {
        let mut out = String::with_capacity(96);
        self.to_setup()
            .write_fen(&mut out, self.variant == Variant::Hidden);
        out
    }
}

/// Kings, pawns on forbidden ranks and piece counts.
pub(crate) fn check_material(variant: Variant, board: &Board) -> Result<(), PositionError> {
    for color in Color::ALL {
        let kings = board.by_piece(Piece {
            color,
            role: Role::King,
        });
        // Atomic chess: a position whose king has exploded is a finished game, and one
        // may write it down; both kings gone cannot happen.
        let exploded = variant == Variant::Atomic
            && board
                .by_piece(Piece {
                    color: !color,
                    role: Role::King,
                })
                .nonempty();
        if kings.is_empty() && !exploded {
            return Err(PositionError::MissingKing(color));
        }
        if kings.more_than_one() {
            return Err(PositionError::TooManyKings(color));
        }
        let pawns = board.by_piece(Piece {
            color,
            role: Role::Pawn,
        });
        // Hidden chess lets a pawn stand on its own back rank; no variant lets one stand on
        // its promotion rank.
        let forbidden = match variant {
            Variant::Hidden => Bitboard::rank(color.promotion_rank()),
            _ => Bitboard::BACKRANKS,
        };
        if let Some(sq) = (pawns & forbidden).first() {
            return Err(PositionError::PawnOnBackRank(sq));
        }
        let ours = board.by_color(color);
        let count = |role| (ours & board.by_role(role)).count();
        let promoted = count(Role::Queen).saturating_sub(1)
            + count(Role::Rook).saturating_sub(2)
            + count(Role::Bishop).saturating_sub(2)
            + count(Role::Knight).saturating_sub(2);
        // A view of hidden chess shows apparent roles, which need not add up like true
        // ones; the 16-piece bound (which bounds move generation) holds for every variant.
        let realistic = variant == Variant::Hidden
            || (count(Role::Pawn) <= 8 && count(Role::Pawn) + promoted <= 8);
        if ours.count() > 16 || !realistic {
            return Err(PositionError::TooMuchMaterial(color));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FENs written back exactly as read: every kind of placement run, both colours'
    /// castling rights (outermost and by file), an en-passant square that can be taken,
    /// counters of one to six digits, and hidden chess's seventh field.
    #[test]
    fn a_fen_is_written_back_exactly_as_read() {
        let cases = [
            (
                Variant::Standard,
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
            ),
            (
                Variant::Standard,
                "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
            ),
            (Variant::Standard, "8/8/8/8/8/8/8/K6k b - - 99 100"),
            (Variant::Standard, "7k/8/8/8/8/8/8/K7 w - - 12 999999"),
            (
                Variant::Standard,
                "r3k1rr/ppppppp1/8/8/8/8/PPPPPPP1/R3KR1R b FQgq - 5 42",
            ),
            (
                Variant::Atomic,
                "rnb1kbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNB1KBNR w KQkq - 0 3",
            ),
        ];
        for (variant, fen) in cases {
            let position = Position::from_fen(variant, fen).expect("a valid FEN");
            assert_eq!(position.fen(), fen, "{variant:?}");
        }
    }

    /// A hidden chess view FEN (its seventh field lists the hidden squares) is written
    /// back exactly as read.
    #[test]
    fn a_hidden_view_fen_is_written_back_exactly_as_read() {
        let fen = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 \
                   a1b1c1d1f1g1h1a2b2c2d2e2f2g2h2a7b7c7d7e7f7g7h7a8b8c8d8f8g8h8";
        let position = Position::from_fen(Variant::Hidden, fen).expect("a valid view FEN");
        assert_eq!(position.fen(), fen);
    }
}
