//! Piece placement: one bitboard per role and per colour.

use crate::attacks;
use crate::bitboard::Bitboard;
use crate::types::{Color, Piece, Role, Square};

/// Where the pieces stand. In hidden chess a hidden piece stands here as its *apparent*
/// role; true identities are never stored in a `Board` that belongs to a public position.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Board {
    by_role: [Bitboard; 6],
    by_color: [Bitboard; 2],
    occupied: Bitboard,
}

impl Board {
    /// A board with no pieces.
    pub fn empty() -> Board {
        Board::default()
    }

    /// The usual start position.
    pub fn standard() -> Board {
        let mut board = Board::empty();
        for sq in Square::all() {
            if let Some(role) = start_role(sq) {
                let color = if sq.rank().index() < 4 {
                    Color::White
                } else {
                    Color::Black
                };
                board.set(sq, Piece { color, role });
            }
        }
        board
    }

    /// Every occupied square.
    #[inline]
    pub fn occupied(&self) -> Bitboard {
        self.occupied
    }

    /// The squares of one colour's pieces.
    #[inline]
    pub fn by_color(&self, color: Color) -> Bitboard {
        self.by_color[color as usize]
    }

    /// The squares of one role's pieces, both colours.
    #[inline]
    pub fn by_role(&self, role: Role) -> Bitboard {
        self.by_role[role as usize]
    }

    /// The squares of one piece kind.
    #[inline]
    pub fn by_piece(&self, piece: Piece) -> Bitboard {
        self.by_color(piece.color) & self.by_role(piece.role)
    }

    /// Rooks and queens.
    #[inline]
    pub fn rooks_and_queens(&self) -> Bitboard {
        self.by_role(Role::Rook) | self.by_role(Role::Queen)
    }

    /// Bishops and queens.
    #[inline]
    pub fn bishops_and_queens(&self) -> Bitboard {
        self.by_role(Role::Bishop) | self.by_role(Role::Queen)
    }

    /// The square of `color`'s king, if it has exactly one.
    #[inline]
    pub fn king_of(&self, color: Color) -> Option<Square> {
        (self.by_role(Role::King) & self.by_color(color)).single_square()
    }

    /// The colour of the piece on `sq`.
    #[inline]
    pub fn color_at(&self, sq: Square) -> Option<Color> {
        if self.by_color[0].contains(sq) {
            Some(Color::White)
        } else if self.by_color[1].contains(sq) {
            Some(Color::Black)
        } else {
            None
        }
    }

    /// The role of the piece on `sq`.
    #[inline]
    pub fn role_at(&self, sq: Square) -> Option<Role> {
        if !self.occupied.contains(sq) {
            return None;
        }
        Role::ALL
            .into_iter()
            .find(|&role| self.by_role[role as usize].contains(sq))
    }

    /// The piece on `sq`.
    #[inline]
    pub fn piece_at(&self, sq: Square) -> Option<Piece> {
        Some(Piece {
            color: self.color_at(sq)?,
            role: self.role_at(sq)?,
        })
    }

    /// Puts a piece on an empty square.
    #[inline]
    pub(crate) fn put(&mut self, sq: Square, piece: Piece) {
        debug_assert!(!self.occupied.contains(sq), "put on an empty square");
        self.by_role[piece.role as usize].toggle(sq);
        self.by_color[piece.color as usize].toggle(sq);
        self.occupied.toggle(sq);
    }

    /// Takes a known piece off its square.
    #[inline]
    pub(crate) fn take(&mut self, sq: Square, piece: Piece) {
        debug_assert_eq!(
            self.piece_at(sq),
            Some(piece),
            "take the piece that is there"
        );
        self.by_role[piece.role as usize].toggle(sq);
        self.by_color[piece.color as usize].toggle(sq);
        self.occupied.toggle(sq);
    }

    /// Moves `color`'s `role` from `from` to the empty square `to`, arriving as `landed`.
    #[inline]
    pub(crate) fn shift_piece(
        &mut self,
        color: Color,
        role: Role,
        from: Square,
        landed: Role,
        to: Square,
    ) {
        debug_assert_eq!(self.piece_at(from), Some(Piece { color, role }));
        debug_assert!(!self.occupied.contains(to), "the destination was emptied");
        let (f, t) = (Bitboard::from(from), Bitboard::from(to));
        self.by_role[role as usize] ^= f;
        self.by_role[landed as usize] ^= t;
        self.by_color[color as usize] ^= f | t;
        self.occupied ^= f | t;
    }

    /// Replaces whatever is on `sq` with `piece`.
    pub fn set(&mut self, sq: Square, piece: Piece) {
        self.remove(sq);
        self.put(sq, piece);
    }

    /// Removes and returns whatever stands on `sq`.
    pub fn remove(&mut self, sq: Square) -> Option<Piece> {
        let piece = self.piece_at(sq)?;
        self.take(sq, piece);
        Some(piece)
    }

    /// The pieces of `attacker` that attack `sq`, with the given occupancy for sliders.
    #[inline]
    pub fn attackers_to(&self, sq: Square, attacker: Color, occupied: Bitboard) -> Bitboard {
        self.by_color(attacker)
            & ((attacks::rook_attacks(sq, occupied) & self.rooks_and_queens())
                | (attacks::bishop_attacks(sq, occupied) & self.bishops_and_queens())
                | (attacks::knight_attacks(sq) & self.by_role(Role::Knight))
                | (attacks::king_attacks(sq) & self.by_role(Role::King))
                | (attacks::pawn_attacks(!attacker, sq) & self.by_role(Role::Pawn)))
    }

    /// The squares attacked by the piece on `sq` (pawns: their captures).
    pub fn attacks_from(&self, sq: Square) -> Bitboard {
        match self.piece_at(sq) {
            None => Bitboard::EMPTY,
            Some(piece) => piece_attacks(piece, sq, self.occupied),
        }
    }
}

/// The squares a piece on `sq` attacks with the given occupancy.
#[inline]
pub fn piece_attacks(piece: Piece, sq: Square, occupied: Bitboard) -> Bitboard {
    match piece.role {
        Role::Pawn => attacks::pawn_attacks(piece.color, sq),
        Role::Knight => attacks::knight_attacks(sq),
        Role::Bishop => attacks::bishop_attacks(sq, occupied),
        Role::Rook => attacks::rook_attacks(sq, occupied),
        Role::Queen => attacks::queen_attacks(sq, occupied),
        Role::King => attacks::king_attacks(sq),
    }
}

/// The role that normally starts on `sq` — in hidden chess, the apparent role of a hidden
/// piece standing there. `None` off the four start ranks.
pub fn start_role(sq: Square) -> Option<Role> {
    match sq.rank().index() {
        1 | 6 => Some(Role::Pawn),
        0 | 7 => Some(match sq.file().index() {
            0 | 7 => Role::Rook,
            1 | 6 => Role::Knight,
            2 | 5 => Role::Bishop,
            3 => Role::Queen,
            _ => Role::King,
        }),
        _ => None,
    }
}

/// The fifteen non-king start squares of `color`, in the canonical order used by layouts:
/// the back rank a→h without the king's square, then the pawn rank a→h.
pub fn hidden_start_squares(color: Color) -> [Square; 15] {
    let back = color.back_rank().index() * 8;
    let pawns = color.pawn_rank().index() * 8;
    let mut out = [Square::A1; 15];
    let mut i = 0;
    for f in [0u8, 1, 2, 3, 5, 6, 7] {
        out[i] = Square::new_masked(back + f);
        i += 1;
    }
    for f in 0..8u8 {
        out[i] = Square::new_masked(pawns + f);
        i += 1;
    }
    out
}

/// All thirty squares on which a hidden piece may stand.
pub fn hidden_start_mask(color: Color) -> Bitboard {
    hidden_start_squares(color).into_iter().collect()
}
