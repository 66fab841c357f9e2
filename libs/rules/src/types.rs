//! Small value types of the board: colours, roles, pieces, squares and per-colour maps.

use std::fmt;
use std::ops::{Index, IndexMut, Not};

/// A side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Color {
    /// The side that moves first.
    White = 0,
    /// The side that moves second.
    Black = 1,
}

impl Color {
    /// Both colours, White first.
    pub const ALL: [Color; 2] = [Color::White, Color::Black];

    /// `w` or `b`, as in FEN.
    pub fn fen_char(self) -> char {
        match self {
            Color::White => 'w',
            Color::Black => 'b',
        }
    }

    /// Lower-case English name, as used in the protocol.
    pub fn name(self) -> &'static str {
        match self {
            Color::White => "white",
            Color::Black => "black",
        }
    }

    /// Picks `white` or `black` by colour.
    #[inline]
    pub fn fold<T>(self, white: T, black: T) -> T {
        match self {
            Color::White => white,
            Color::Black => black,
        }
    }

    /// The rank on which this side's pieces start (rank 1 for White, 8 for Black).
    #[inline]
    pub fn back_rank(self) -> Rank {
        self.fold(Rank(0), Rank(7))
    }

    /// The rank on which this side's pawns start.
    #[inline]
    pub fn pawn_rank(self) -> Rank {
        self.fold(Rank(1), Rank(6))
    }

    /// The rank on which this side's pawns promote.
    #[inline]
    pub fn promotion_rank(self) -> Rank {
        self.fold(Rank(7), Rank(0))
    }
}

impl Not for Color {
    type Output = Color;
    #[inline]
    fn not(self) -> Color {
        match self {
            Color::White => Color::Black,
            Color::Black => Color::White,
        }
    }
}

/// The kind of a piece, without its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// A pawn.
    Pawn = 0,
    /// A knight.
    Knight = 1,
    /// A bishop.
    Bishop = 2,
    /// A rook.
    Rook = 3,
    /// A queen.
    Queen = 4,
    /// A king.
    King = 5,
}

impl Role {
    /// All roles, pawn first.
    pub const ALL: [Role; 6] = [
        Role::Pawn,
        Role::Knight,
        Role::Bishop,
        Role::Rook,
        Role::Queen,
        Role::King,
    ];

    /// The roles a capture can take (a king is never captured).
    pub const CAPTURABLE: [Role; 5] = [
        Role::Pawn,
        Role::Knight,
        Role::Bishop,
        Role::Rook,
        Role::Queen,
    ];

    /// The roles a pawn may promote to, in the order perft and UIs list them.
    pub const PROMOTIONS: [Role; 4] = [Role::Queen, Role::Rook, Role::Bishop, Role::Knight];

    /// Lower-case letter (`p n b r q k`).
    pub fn char(self) -> char {
        match self {
            Role::Pawn => 'p',
            Role::Knight => 'n',
            Role::Bishop => 'b',
            Role::Rook => 'r',
            Role::Queen => 'q',
            Role::King => 'k',
        }
    }

    /// Parses a letter of either case.
    pub fn from_char(c: char) -> Option<Role> {
        Some(match c.to_ascii_lowercase() {
            'p' => Role::Pawn,
            'n' => Role::Knight,
            'b' => Role::Bishop,
            'r' => Role::Rook,
            'q' => Role::Queen,
            'k' => Role::King,
            _ => return None,
        })
    }

    /// Whether a pawn may promote to this role.
    pub fn is_promotion_target(self) -> bool {
        matches!(self, Role::Knight | Role::Bishop | Role::Rook | Role::Queen)
    }

    /// Lower-case English name, as used in the protocol.
    pub fn name(self) -> &'static str {
        match self {
            Role::Pawn => "pawn",
            Role::Knight => "knight",
            Role::Bishop => "bishop",
            Role::Rook => "rook",
            Role::Queen => "queen",
            Role::King => "king",
        }
    }
}

/// A coloured piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Piece {
    /// Its side.
    pub color: Color,
    /// Its kind.
    pub role: Role,
}

impl Piece {
    /// FEN letter: upper case for White.
    pub fn char(self) -> char {
        let c = self.role.char();
        match self.color {
            Color::White => c.to_ascii_uppercase(),
            Color::Black => c,
        }
    }

    /// Parses a FEN letter.
    pub fn from_char(c: char) -> Option<Piece> {
        let role = Role::from_char(c)?;
        let color = if c.is_ascii_uppercase() {
            Color::White
        } else {
            Color::Black
        };
        Some(Piece { color, role })
    }
}

/// A file, `a` (0) to `h` (7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct File(pub(crate) u8);

/// A rank, `1` (0) to `8` (7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rank(pub(crate) u8);

impl File {
    /// 0 for `a` to 7 for `h`.
    pub fn index(self) -> u8 {
        self.0
    }
    /// Parses `a`–`h`.
    pub fn from_char(c: char) -> Option<File> {
        matches!(c, 'a'..='h').then(|| File(c as u8 - b'a'))
    }
    /// `a`–`h`.
    pub fn char(self) -> char {
        (b'a' + self.0) as char
    }
}

impl Rank {
    /// 0 for rank 1 to 7 for rank 8.
    pub fn index(self) -> u8 {
        self.0
    }
    /// Parses `1`–`8`.
    pub fn from_char(c: char) -> Option<Rank> {
        matches!(c, '1'..='8').then(|| Rank(c as u8 - b'1'))
    }
    /// `1`–`8`.
    pub fn char(self) -> char {
        (b'1' + self.0) as char
    }
}

/// A square, `a1` (0) to `h8` (63), rank-major.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Square(u8);

macro_rules! squares {
    ($($name:ident = $idx:expr),* $(,)?) => {
        impl Square { $(
            #[allow(missing_docs)]
            pub const $name: Square = Square($idx);
        )* }
    };
}

squares! {
    A1 = 0, B1 = 1, C1 = 2, D1 = 3, E1 = 4, F1 = 5, G1 = 6, H1 = 7,
    A2 = 8, B2 = 9, C2 = 10, D2 = 11, E2 = 12, F2 = 13, G2 = 14, H2 = 15,
    A3 = 16, B3 = 17, C3 = 18, D3 = 19, E3 = 20, F3 = 21, G3 = 22, H3 = 23,
    A4 = 24, B4 = 25, C4 = 26, D4 = 27, E4 = 28, F4 = 29, G4 = 30, H4 = 31,
    A5 = 32, B5 = 33, C5 = 34, D5 = 35, E5 = 36, F5 = 37, G5 = 38, H5 = 39,
    A6 = 40, B6 = 41, C6 = 42, D6 = 43, E6 = 44, F6 = 45, G6 = 46, H6 = 47,
    A7 = 48, B7 = 49, C7 = 50, D7 = 51, E7 = 52, F7 = 53, G7 = 54, H7 = 55,
    A8 = 56, B8 = 57, C8 = 58, D8 = 59, E8 = 60, F8 = 61, G8 = 62, H8 = 63,
}

impl Square {
    /// The square with this index, if it is below 64.
    #[inline]
    pub const fn from_index(index: u8) -> Option<Square> {
        if index < 64 {
            Some(Square(index))
        } else {
            None
        }
    }

    /// The square with index `index & 63`: total, for loops over `0..64`.
    #[inline]
    pub(crate) const fn new_masked(index: u8) -> Square {
        Square(index & 63)
    }

    /// The square on this file and rank.
    #[inline]
    pub fn from_coords(file: File, rank: Rank) -> Square {
        Square(rank.0 * 8 + file.0)
    }

    /// 0 for `a1` to 63 for `h8`.
    #[inline]
    pub const fn index(self) -> u8 {
        self.0
    }

    /// As a `usize`, for indexing tables. The mask is a no-op (a square is below 64 by
    /// construction) that lets the compiler drop bounds checks on 64-entry tables.
    #[inline]
    pub const fn idx(self) -> usize {
        (self.0 & 63) as usize
    }

    /// Its file.
    #[inline]
    pub fn file(self) -> File {
        File(self.0 & 7)
    }

    /// Its rank.
    #[inline]
    pub fn rank(self) -> Rank {
        Rank(self.0 >> 3)
    }

    /// The square mirrored top to bottom (`a1` ↔ `a8`).
    #[inline]
    pub fn flip_vertical(self) -> Square {
        Square(self.0 ^ 56)
    }

    /// The square `delta` steps away in index order, if it is on the board.
    #[inline]
    pub fn offset(self, delta: i8) -> Option<Square> {
        let i = self.0 as i16 + delta as i16;
        (0..64).contains(&i).then_some(Square(i as u8))
    }

    /// Whether the square is light (`h1` is light).
    pub fn is_light(self) -> bool {
        (self.0 / 8 + self.0 % 8) % 2 == 1
    }

    /// Iterates over all 64 squares, `a1` first.
    pub fn all() -> impl Iterator<Item = Square> {
        (0..64u8).map(Square)
    }

    /// Parses `a1`–`h8` from exactly two bytes.
    pub fn parse(s: &str) -> Option<Square> {
        let mut chars = s.chars();
        let file = File::from_char(chars.next()?)?;
        let rank = Rank::from_char(chars.next()?)?;
        chars
            .next()
            .is_none()
            .then(|| Square::from_coords(file, rank))
    }
}

impl Square {
    /// Its name (`e4`) as two ASCII bytes: written straight into a buffer where a move or
    /// a FEN is written on every move of a live game.
    #[inline]
    pub fn name(self) -> [u8; 2] {
        [b'a' + (self.0 & 7), b'1' + (self.0 >> 3)]
    }

    /// Appends its name (`e4`), without the formatting machinery.
    #[inline]
    pub fn push_name(self, out: &mut String) {
        let [file, rank] = self.name();
        out.push(char::from(file));
        out.push(char::from(rank));
    }
}

impl fmt::Display for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        f.write_str(std::str::from_utf8(&name).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A value for each colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ByColor<T> {
    /// White's value.
    pub white: T,
    /// Black's value.
    pub black: T,
}

impl<T> ByColor<T> {
    /// Builds the pair from a function of the colour.
    pub fn new_with(mut f: impl FnMut(Color) -> T) -> ByColor<T> {
        ByColor {
            white: f(Color::White),
            black: f(Color::Black),
        }
    }

    /// The value of one colour.
    #[inline]
    pub fn get(&self, color: Color) -> &T {
        match color {
            Color::White => &self.white,
            Color::Black => &self.black,
        }
    }

    /// The value of one colour, mutably.
    #[inline]
    pub fn get_mut(&mut self, color: Color) -> &mut T {
        match color {
            Color::White => &mut self.white,
            Color::Black => &mut self.black,
        }
    }
}

impl<T> Index<Color> for ByColor<T> {
    type Output = T;
    #[inline]
    fn index(&self, color: Color) -> &T {
        self.get(color)
    }
}

impl<T> IndexMut<Color> for ByColor<T> {
    #[inline]
    fn index_mut(&mut self, color: Color) -> &mut T {
        self.get_mut(color)
    }
}

/// The two sides of the board a king may castle to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CastlingSide {
    /// Towards the h-file (`O-O`).
    KingSide,
    /// Towards the a-file (`O-O-O`).
    QueenSide,
}

impl CastlingSide {
    /// File the king lands on.
    pub fn king_to_file(self) -> File {
        match self {
            CastlingSide::KingSide => File(6),
            CastlingSide::QueenSide => File(2),
        }
    }
    /// File the rook (or corner piece) lands on.
    pub fn rook_to_file(self) -> File {
        match self {
            CastlingSide::KingSide => File(5),
            CastlingSide::QueenSide => File(3),
        }
    }
    /// File of the corner the rook starts on.
    pub fn rook_from_file(self) -> File {
        match self {
            CastlingSide::KingSide => File(7),
            CastlingSide::QueenSide => File(0),
        }
    }
}
