//! Attack tables: leapers computed at compile time, sliders by magic bitboards found once
//! at first use (a deterministic search, a few milliseconds), plus `between` and `line`.

use std::sync::LazyLock;

use crate::bitboard::Bitboard;
use crate::types::{Color, Square};

const fn leaper_table(deltas: &[(i8, i8)]) -> [u64; 64] {
    let mut table = [0u64; 64];
    let mut sq = 0;
    while sq < 64 {
        let file = (sq % 8) as i8;
        let rank = (sq / 8) as i8;
        let mut i = 0;
        let mut bb = 0u64;
        while i < deltas.len() {
            let f = file + deltas[i].0;
            let r = rank + deltas[i].1;
            if f >= 0 && f < 8 && r >= 0 && r < 8 {
                bb |= 1 << (r * 8 + f);
            }
            i += 1;
        }
        table[sq] = bb;
        sq += 1;
    }
    table
}

static KNIGHT: [u64; 64] = leaper_table(&[
    (1, 2),
    (2, 1),
    (2, -1),
    (1, -2),
    (-1, -2),
    (-2, -1),
    (-2, 1),
    (-1, 2),
]);
static KING: [u64; 64] = leaper_table(&[
    (1, 0),
    (1, 1),
    (0, 1),
    (-1, 1),
    (-1, 0),
    (-1, -1),
    (0, -1),
    (1, -1),
]);
static WHITE_PAWN: [u64; 64] = leaper_table(&[(-1, 1), (1, 1)]);
static BLACK_PAWN: [u64; 64] = leaper_table(&[(-1, -1), (1, -1)]);

const ROOK_DIRS: [(i8, i8); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];
const BISHOP_DIRS: [(i8, i8); 4] = [(1, 1), (1, -1), (-1, 1), (-1, -1)];

/// Squares a knight on `sq` attacks.
#[inline]
pub fn knight_attacks(sq: Square) -> Bitboard {
    Bitboard(KNIGHT[sq.idx()])
}

/// Squares a king on `sq` attacks.
#[inline]
pub fn king_attacks(sq: Square) -> Bitboard {
    Bitboard(KING[sq.idx()])
}

/// Squares a pawn of `color` on `sq` attacks (its diagonal captures).
#[inline]
pub fn pawn_attacks(color: Color, sq: Square) -> Bitboard {
    match color {
        Color::White => Bitboard(WHITE_PAWN[sq.idx()]),
        Color::Black => Bitboard(BLACK_PAWN[sq.idx()]),
    }
}

/// Squares a rook on `sq` attacks with the given occupancy.
#[inline]
pub fn rook_attacks(sq: Square, occupied: Bitboard) -> Bitboard {
    let t = &*TABLES;
    Bitboard(t.table[t.rook[sq.idx()].index(occupied.0)])
}

/// Squares a bishop on `sq` attacks with the given occupancy.
#[inline]
pub fn bishop_attacks(sq: Square, occupied: Bitboard) -> Bitboard {
    let t = &*TABLES;
    Bitboard(t.table[t.bishop[sq.idx()].index(occupied.0)])
}

/// Squares a queen on `sq` attacks with the given occupancy.
#[inline]
pub fn queen_attacks(sq: Square, occupied: Bitboard) -> Bitboard {
    rook_attacks(sq, occupied) | bishop_attacks(sq, occupied)
}

/// Squares strictly between `a` and `b` if they share a rank, file or diagonal; else empty.
#[inline]
pub fn between(a: Square, b: Square) -> Bitboard {
    Bitboard(TABLES.between[a.idx()][b.idx()])
}

/// The whole line (edge to edge) through `a` and `b` if they are aligned; else empty.
#[inline]
pub fn line(a: Square, b: Square) -> Bitboard {
    Bitboard(TABLES.line[a.idx()][b.idx()])
}

/// Whether `c` lies on the line through `a` and `b`.
#[inline]
pub fn aligned(a: Square, b: Square, c: Square) -> bool {
    line(a, b).contains(c)
}

#[derive(Clone, Copy, Default)]
struct Magic {
    mask: u64,
    factor: u64,
    shift: u32,
    offset: usize,
}

impl Magic {
    #[inline]
    fn index(&self, occupied: u64) -> usize {
        self.offset + ((occupied & self.mask).wrapping_mul(self.factor) >> self.shift) as usize
    }
}

struct Tables {
    rook: [Magic; 64],
    bishop: [Magic; 64],
    table: Vec<u64>,
    between: Box<[[u64; 64]; 64]>,
    line: Box<[[u64; 64]; 64]>,
}

static TABLES: LazyLock<Tables> = LazyLock::new(Tables::build);

fn slide(sq: usize, occupied: u64, dirs: &[(i8, i8); 4]) -> u64 {
    let mut bb = 0;
    for &(df, dr) in dirs {
        let (mut f, mut r) = ((sq % 8) as i8, (sq / 8) as i8);
        loop {
            f += df;
            r += dr;
            if !(0..8).contains(&f) || !(0..8).contains(&r) {
                break;
            }
            let bit = 1u64 << (r * 8 + f);
            bb |= bit;
            if occupied & bit != 0 {
                break;
            }
        }
    }
    bb
}

/// The squares whose occupancy matters to a slider on `sq`: its rays without their last square.
fn relevant_mask(sq: usize, dirs: &[(i8, i8); 4]) -> u64 {
    let mut bb = 0;
    for &(df, dr) in dirs {
        let (mut f, mut r) = ((sq % 8) as i8, (sq / 8) as i8);
        loop {
            f += df;
            r += dr;
            let (nf, nr) = (f + df, r + dr);
            if !(0..8).contains(&nf) || !(0..8).contains(&nr) {
                break;
            }
            bb |= 1u64 << (r * 8 + f);
        }
    }
    bb
}

/// xorshift64*: a fixed-seed generator so the magic search is deterministic.
struct Prng(u64);

impl Prng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn sparse(&mut self) -> u64 {
        self.next() & self.next() & self.next()
    }
}

fn find_magics(dirs: &[(i8, i8); 4], table: &mut Vec<u64>, rng: &mut Prng) -> [Magic; 64] {
    let mut magics = [Magic::default(); 64];
    let mut occupancies = Vec::with_capacity(4096);
    let mut attacks = Vec::with_capacity(4096);
    let mut epoch = vec![0u32; 4096];
    let mut used = vec![0u64; 4096];
    let mut attempt = 0u32;
    for (sq, magic) in magics.iter_mut().enumerate() {
        let mask = relevant_mask(sq, dirs);
        let bits = mask.count_ones();
        occupancies.clear();
        attacks.clear();
        // Carry-Rippler enumeration of every subset of the mask.
        let mut subset = 0u64;
        loop {
            occupancies.push(subset);
            attacks.push(slide(sq, subset, dirs));
            subset = subset.wrapping_sub(mask) & mask;
            if subset == 0 {
                break;
            }
        }
        let size = 1usize << bits;
        let shift = 64 - bits;
        'search: loop {
            let factor = rng.sparse();
            if (mask.wrapping_mul(factor) >> 56).count_ones() < 6 {
                continue;
            }
            attempt += 1;
            for (occ, att) in occupancies.iter().zip(&attacks) {
                let i = (occ.wrapping_mul(factor) >> shift) as usize;
                if epoch[i] < attempt {
                    epoch[i] = attempt;
                    used[i] = *att;
                } else if used[i] != *att {
                    continue 'search;
                }
            }
            let offset = table.len();
            table.resize(offset + size, 0);
            for (occ, att) in occupancies.iter().zip(&attacks) {
                let i = (occ.wrapping_mul(factor) >> shift) as usize;
                table[offset + i] = *att;
            }
            *magic = Magic {
                mask,
                factor,
                shift,
                offset,
            };
            break;
        }
    }
    magics
}

impl Tables {
    fn build() -> Tables {
        let mut rng = Prng(0x9e37_79b9_7f4a_7c15);
        let mut table = Vec::with_capacity(102_400 + 5_248);
        let rook = find_magics(&ROOK_DIRS, &mut table, &mut rng);
        let bishop = find_magics(&BISHOP_DIRS, &mut table, &mut rng);
        table.shrink_to_fit();
        let mut between = Box::new([[0u64; 64]; 64]);
        let mut line = Box::new([[0u64; 64]; 64]);
        for a in 0..64 {
            for dirs in [&ROOK_DIRS, &BISHOP_DIRS] {
                let empty_rays = slide(a, 0, dirs);
                for b in 0..64 {
                    if a == b || empty_rays & (1 << b) == 0 {
                        continue;
                    }
                    let from_b = slide(b, 0, dirs);
                    line[a][b] = (empty_rays & from_b) | (1 << a) | (1 << b);
                    between[a][b] = slide(a, 1 << b, dirs) & slide(b, 1 << a, dirs);
                }
            }
        }
        // `line` above holds the crossing of both stars; keep only the shared ray.
        for a in 0..64 {
            for b in 0..64 {
                if line[a][b] == 0 {
                    continue;
                }
                let (fa, ra) = ((a % 8) as i8, (a / 8) as i8);
                let (fb, rb) = ((b % 8) as i8, (b / 8) as i8);
                let (df, dr) = ((fb - fa).signum(), (rb - ra).signum());
                let mut bb = 1u64 << a;
                for sign in [1i8, -1] {
                    let (mut f, mut r) = (fa, ra);
                    loop {
                        f += df * sign;
                        r += dr * sign;
                        if !(0..8).contains(&f) || !(0..8).contains(&r) {
                            break;
                        }
                        bb |= 1u64 << (r * 8 + f);
                    }
                }
                line[a][b] = bb;
            }
        }
        Tables {
            rook,
            bishop,
            table,
            between,
            line,
        }
    }
}

/// Forces the tables to be built now rather than on first use.
pub fn init() {
    LazyLock::force(&TABLES);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sliders_match_slow_generation_on_random_occupancies() {
        let mut rng = Prng(12345);
        for _ in 0..2000 {
            let occ = rng.next() & rng.next();
            for sq in Square::all() {
                assert_eq!(
                    rook_attacks(sq, Bitboard(occ)).0,
                    slide(sq.idx(), occ, &ROOK_DIRS)
                );
                assert_eq!(
                    bishop_attacks(sq, Bitboard(occ)).0,
                    slide(sq.idx(), occ, &BISHOP_DIRS)
                );
            }
        }
    }

    #[test]
    fn between_and_line() {
        assert_eq!(
            between(Square::A1, Square::H8).count(),
            6,
            "b2..g7 lie between a1 and h8"
        );
        assert!(between(Square::A1, Square::B2).is_empty());
        assert!(between(Square::A1, Square::B8).is_empty());
        assert_eq!(line(Square::B2, Square::D4).count(), 8);
        assert!(
            aligned(Square::A1, Square::H8, Square::new_masked(27)),
            "d4 is on the long diagonal"
        );
        assert!(
            !aligned(Square::A1, Square::H8, Square::new_masked(28)),
            "e4 is not"
        );
        assert_eq!(
            line(Square::E1, Square::E2),
            Bitboard::file(Square::E1.file())
        );
        assert!(line(Square::A1, Square::B8).is_empty());
    }

    #[test]
    fn leapers() {
        assert_eq!(knight_attacks(Square::B1).count(), 3);
        assert_eq!(king_attacks(Square::E1).count(), 5);
        assert_eq!(pawn_attacks(Color::White, Square::A2).count(), 1);
        assert_eq!(pawn_attacks(Color::Black, Square::H7).count(), 1);
    }
}
