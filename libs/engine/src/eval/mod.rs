//! Static evaluation, in centipawns for the side to move, per variant:
//!
//! - standard: material and piece-square bonuses tapered between middle game and end
//!   game, mobility, bishop pair, pawn structure (passed, doubled, isolated), rooks on open
//!   files, a pawn shield for the king, and in a won end game a push of the lone king to
//!   the edge ("mop-up") so that mates are found;
//! - atomic: the same with atomic piece values plus [`atomic::terms`] (king exposure to a
//!   capture next to it, kings touching);
//! - hidden: the same as standard, but a hidden piece is worth the mean value of its side's
//!   identities still unaccounted for ([`crate::SeatView::unaccounted`]) — public
//!   information only — and takes no piece-square bonus, as it cannot be known.

mod atomic;
mod pst;

pub(crate) use atomic::explosion_gain;
pub(crate) use pst::distance;

use frontier_rules::{
    Bitboard, ByColor, Color, File, Position, Role, Square, Variant, bishop_attacks,
    knight_attacks, pawn_attacks, queen_attacks, rook_attacks,
};

use crate::RoleCounts;

/// Material (middle game, end game), pawn … queen, king 0.
const VALUE_MG: [i32; 6] = [90, 320, 335, 480, 960, 0];
const VALUE_EG: [i32; 6] = [115, 300, 320, 520, 960, 0];
/// Atomic values: minor pieces matter less (they die in every blast), pawns survive blasts.
const VALUE_ATOMIC: [i32; 6] = [110, 260, 290, 450, 900, 0];
/// Game phase weight of each role (24 at the start).
const PHASE: [i32; 6] = [0, 1, 1, 2, 4, 0];
const MOBILITY_MG: [i32; 6] = [0, 4, 4, 2, 1, 0];
const MOBILITY_EG: [i32; 6] = [0, 3, 4, 4, 2, 0];
const PASSED_EG: [i32; 8] = [0, 8, 14, 24, 42, 68, 105, 0];
const PASSED_MG: [i32; 8] = [0, 2, 5, 10, 18, 30, 45, 0];
const TEMPO: i32 = 10;

/// A piece's value for move ordering and quiescence pruning.
#[inline]
pub(crate) fn order_value(variant: Variant, role: Role) -> i32 {
    match variant {
        Variant::Atomic => VALUE_ATOMIC[role as usize],
        _ => VALUE_MG[role as usize],
    }
}

/// The evaluation of one search: the variant and, for hidden chess, what a hidden piece of
/// each side is worth.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Evaluator {
    variant: Variant,
    /// Hidden chess: the mean (middle game, end game) value of each side's unaccounted
    /// identities.
    hidden_value: ByColor<(i32, i32)>,
}

impl Evaluator {
    /// The evaluator of a variant; `unaccounted` gives hidden pieces their expected value.
    pub(crate) fn new(variant: Variant, unaccounted: &ByColor<RoleCounts>) -> Evaluator {
        let mean = |counts: &RoleCounts| {
            let n: i32 = counts.iter().map(|&c| i32::from(c)).sum();
            if n == 0 {
                return (0, 0);
            }
            let (mut mg, mut eg) = (0, 0);
            for (i, &c) in counts.iter().enumerate() {
                mg += VALUE_MG[i] * i32::from(c);
                eg += VALUE_EG[i] * i32::from(c);
            }
            (mg / n, eg / n)
        };
        Evaluator {
            variant,
            hidden_value: ByColor {
                white: mean(&unaccounted.white),
                black: mean(&unaccounted.black),
            },
        }
    }

    /// The score of `pos` for its side to move.
    pub(crate) fn evaluate(&self, pos: &Position) -> i32 {
        let white = self.white_score(pos);
        match pos.turn() {
            Color::White => white + TEMPO,
            Color::Black => -white + TEMPO,
        }
    }

    /// White's score minus Black's.
    fn white_score(&self, pos: &Position) -> i32 {
        let board = pos.board();
        let occupied = board.occupied();
        let hidden = pos.hidden();
        let atomic = self.variant == Variant::Atomic;
        let mut mg = [0i32; 2];
        let mut eg = [0i32; 2];
        let mut material = [0i32; 2];
        let mut phase = 0;
        let pawns = board.by_role(Role::Pawn);
        for color in Color::ALL {
            let c = color as usize;
            let ours = board.by_color(color);
            let our_pawns = pawns & ours;
            let their_pawns = pawns & !ours;
            let mut bishops = 0;
            for sq in ours {
                let Some(role) = board.role_at(sq) else {
                    continue;
                };
                let r = role as usize;
                phase += PHASE[r];
                if hidden.contains(sq) {
                    let (vm, ve) = *self.hidden_value.get(color);
                    mg[c] += vm;
                    eg[c] += ve;
                    material[c] += vm;
                    continue;
                }
                let (vm, ve) = if atomic {
                    (VALUE_ATOMIC[r], VALUE_ATOMIC[r])
                } else {
                    (VALUE_MG[r], VALUE_EG[r])
                };
                mg[c] += vm;
                eg[c] += ve;
                material[c] += vm;
                let (pm, pe) = pst::bonus(color, role, sq);
                mg[c] += pm;
                eg[c] += pe;
                let reach = match role {
                    Role::Knight => knight_attacks(sq),
                    Role::Bishop => {
                        bishops += 1;
                        bishop_attacks(sq, occupied)
                    }
                    Role::Rook => {
                        let file = Bitboard::file(sq.file());
                        if (file & our_pawns).is_empty() {
                            let open = (file & their_pawns).is_empty();
                            mg[c] += if open { 22 } else { 10 };
                            eg[c] += if open { 10 } else { 5 };
                        }
                        rook_attacks(sq, occupied)
                    }
                    Role::Queen => queen_attacks(sq, occupied),
                    Role::Pawn => {
                        self.pawn_terms(color, sq, our_pawns, their_pawns, &mut mg[c], &mut eg[c]);
                        Bitboard::EMPTY
                    }
                    Role::King => {
                        let shield = king_shield(color, sq) & our_pawns;
                        mg[c] += 9 * shield.count().min(3) as i32;
                        Bitboard::EMPTY
                    }
                };
                let mobility = (reach & !ours).count() as i32;
                mg[c] += MOBILITY_MG[r] * mobility;
                eg[c] += MOBILITY_EG[r] * mobility;
            }
            if bishops >= 2 {
                mg[c] += 30;
                eg[c] += 45;
            }
        }
        let phase = phase.min(24);
        let mut score = ((mg[0] - mg[1]) * phase + (eg[0] - eg[1]) * (24 - phase)) / 24;
        score += mop_up(pos, material[0] - material[1], phase);
        if atomic {
            score += atomic::terms(pos, material[0] - material[1]);
        }
        score
    }

    fn pawn_terms(
        &self,
        color: Color,
        sq: Square,
        our_pawns: Bitboard,
        their_pawns: Bitboard,
        mg: &mut i32,
        eg: &mut i32,
    ) {
        let file = sq.file();
        let file_bb = Bitboard::file(file);
        let neighbours = adjacent_files(file);
        if (our_pawns & file_bb).more_than_one() {
            *mg -= 6;
            *eg -= 12;
        }
        if (our_pawns & neighbours).is_empty() {
            *mg -= 8;
            *eg -= 10;
        }
        let ahead = front_span(color, sq) & (file_bb | neighbours);
        if (ahead & their_pawns).is_empty() {
            let rel = match color {
                Color::White => sq.rank().index(),
                Color::Black => 7 - sq.rank().index(),
            } as usize;
            *mg += PASSED_MG[rel];
            *eg += PASSED_EG[rel];
        }
    }
}

/// The files next to `file`.
fn adjacent_files(file: File) -> Bitboard {
    let f = file.index();
    let mut out = Bitboard::EMPTY;
    if f > 0 {
        out |= Bitboard(0x0101_0101_0101_0101 << (f - 1));
    }
    if f < 7 {
        out |= Bitboard(0x0101_0101_0101_0101 << (f + 1));
    }
    out
}

/// Every square strictly in front of `sq` for `color`, on any file.
fn front_span(color: Color, sq: Square) -> Bitboard {
    let r = u32::from(sq.rank().index());
    match color {
        Color::White if r < 7 => Bitboard(!0u64 << (8 * (r + 1))),
        Color::Black if r > 0 => Bitboard(!0u64 >> (8 * (8 - r))),
        _ => Bitboard::EMPTY,
    }
}

/// The three squares in front of the king (its pawn shield).
fn king_shield(color: Color, king: Square) -> Bitboard {
    let front = pawn_attacks(color, king);
    let ahead = match color {
        Color::White => king.offset(8),
        Color::Black => king.offset(-8),
    };
    match ahead {
        Some(sq) => front | sq,
        None => front,
    }
}

/// In a won end game, drive the losing king to the edge and bring the winning king close:
/// without it the search cannot see a mate that is more than a few moves away.
fn mop_up(pos: &Position, material: i32, phase: i32) -> i32 {
    if material.abs() < 250 || phase > 14 {
        return 0;
    }
    let board = pos.board();
    let (winner, sign) = if material > 0 {
        (Color::White, 1)
    } else {
        (Color::Black, -1)
    };
    let (Some(strong), Some(weak)) = (board.king_of(winner), board.king_of(!winner)) else {
        return 0;
    };
    let edge = pst::centre_distance(weak);
    let closeness = 14 - 2 * distance(strong, weak);
    let weight = 24 - phase;
    sign * (10 * edge + 4 * closeness) * weight / 24
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::START_IDENTITIES;

    fn eval(variant: Variant, fen: &str) -> i32 {
        let pos = Position::from_fen(variant, fen).expect("test FEN is valid");
        let pools = ByColor {
            white: START_IDENTITIES,
            black: START_IDENTITIES,
        };
        Evaluator::new(variant, &pools).evaluate(&pos)
    }

    #[test]
    fn start_position_is_balanced_and_symmetric() {
        let start = eval(
            Variant::Standard,
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        );
        assert_eq!(start, TEMPO);
        let hidden = eval(
            Variant::Hidden,
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        );
        assert_eq!(hidden, TEMPO);
    }

    #[test]
    fn an_extra_queen_is_worth_most_of_a_queen() {
        let up = eval(Variant::Standard, "4k3/8/8/8/8/8/8/3QK3 w - - 0 1");
        assert!(up > 800, "{up}");
        let down = eval(Variant::Standard, "4k3/8/8/8/8/8/8/3QK3 b - - 0 1");
        assert!(down < -800, "{down}");
    }

    #[test]
    fn atomic_penalises_an_attacked_piece_next_to_the_king() {
        // The knight on f2 sits next to White's king and Black's rook attacks it; on a2 it
        // is just as attacked but far from the king.
        let exposed = eval(Variant::Atomic, "4k3/8/8/8/8/8/5N1r/4K3 w - - 0 1");
        let safe = eval(Variant::Atomic, "4k3/8/8/8/8/8/N6r/4K3 w - - 0 1");
        assert!(exposed < safe - 150, "{exposed} vs {safe}");
    }
}
