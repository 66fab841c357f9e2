//! Zobrist keys, generated at compile time from a fixed seed.
//!
//! A hidden piece hashes as its apparent piece *and* a per-square "hidden" key, so a hidden
//! piece and a revealed piece of the same apparent type never hash alike (RULES.md §2,
//! repetition).

use crate::types::{Color, Role, Square};

const fn splitmix(state: u64) -> (u64, u64) {
    let state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (state, z ^ (z >> 31))
}

const N: usize = 12 * 64 + 64 + 64 + 8 + 1;

const KEYS: [u64; N] = {
    let mut keys = [0u64; N];
    let mut state = 0x4652_4f4e_5449_4552; // "FRONTIER"
    let mut i = 0;
    while i < N {
        let (s, k) = splitmix(state);
        state = s;
        keys[i] = k;
        i += 1;
    }
    keys
};

const HIDDEN: usize = 12 * 64;
const CASTLING: usize = HIDDEN + 64;
const EP: usize = CASTLING + 64;
const TURN: usize = EP + 8;

/// Piece-square keys, by `color * 6 + role`, then square: index arithmetic the compiler
/// can bound, so a look-up is a plain load.
static PIECE_KEYS: [[u64; 64]; 12] = {
    let mut table = [[0u64; 64]; 12];
    let mut i = 0;
    while i < 12 * 64 {
        table[i / 64][i % 64] = KEYS[i];
        i += 1;
    }
    table
};

/// Key of a piece on a square.
#[inline]
pub(crate) fn piece(color: Color, role: Role, sq: Square) -> u64 {
    PIECE_KEYS[color as usize * 6 + role as usize][sq.idx()]
}

/// Key added while the piece on `sq` is hidden.
#[inline]
pub(crate) fn hidden(sq: Square) -> u64 {
    KEYS[HIDDEN + sq.idx()]
}

/// Key of a castling right, by the square of its corner piece.
#[inline]
pub(crate) fn castling(corner: Square) -> u64 {
    KEYS[CASTLING + corner.idx()]
}

/// Key of a capturable en-passant square, by file.
#[inline]
pub(crate) fn en_passant(sq: Square) -> u64 {
    KEYS[EP + sq.file().index() as usize]
}

/// Key added when Black is to move.
#[inline]
pub(crate) fn black_to_move() -> u64 {
    KEYS[TURN]
}
