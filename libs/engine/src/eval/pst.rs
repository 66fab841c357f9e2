//! Piece-square bonuses, middle game and end game, from White's point of view (a Black
//! piece looks its square up mirrored). Written as small formulas over the distance to the
//! centre rather than 768 hand-typed numbers.

use frontier_rules::{Color, Role, Square};

/// Manhattan distance from the four centre squares, 0 (centre) to 6 (corner).
#[inline]
pub(crate) fn centre_distance(sq: Square) -> i32 {
    let f = i32::from(sq.file().index());
    let r = i32::from(sq.rank().index());
    let df = if f < 4 { 3 - f } else { f - 4 };
    let dr = if r < 4 { 3 - r } else { r - 4 };
    df + dr
}

/// Chebyshev distance between two squares.
#[inline]
pub(crate) fn distance(a: Square, b: Square) -> i32 {
    let df = (i32::from(a.file().index()) - i32::from(b.file().index())).abs();
    let dr = (i32::from(a.rank().index()) - i32::from(b.rank().index())).abs();
    df.max(dr)
}

const PAWN_ADVANCE_MG: [i32; 8] = [0, 0, 3, 8, 18, 32, 55, 0];
const PAWN_ADVANCE_EG: [i32; 8] = [0, 0, 8, 18, 32, 55, 85, 0];
const KING_BACK_RANK_MG: [i32; 8] = [15, 25, 10, -5, 0, 5, 25, 15];

/// The (middle game, end game) bonus of a `role` of `color` standing on `sq`.
#[inline]
pub(crate) fn bonus(color: Color, role: Role, sq: Square) -> (i32, i32) {
    let sq = match color {
        Color::White => sq,
        Color::Black => sq.flip_vertical(),
    };
    let r = usize::from(sq.rank().index());
    let f = sq.file().index();
    let cd = centre_distance(sq);
    match role {
        Role::Pawn => {
            let central = if (f == 3 || f == 4) && (r == 3 || r == 4) {
                15
            } else if (2..=5).contains(&f) && r >= 2 {
                4
            } else {
                0
            };
            (PAWN_ADVANCE_MG[r] + central, PAWN_ADVANCE_EG[r])
        }
        Role::Knight => (18 - 7 * cd, 12 - 5 * cd),
        Role::Bishop => (10 - 3 * cd + if r == 0 { -8 } else { 0 }, 8 - 3 * cd),
        Role::Rook => {
            let seventh = if r == 6 { 20 } else { 0 };
            let central = if (2..=5).contains(&f) { 4 } else { 0 };
            (seventh + central, seventh / 2)
        }
        Role::Queen => (4 - 2 * cd + if r == 0 { 0 } else { 2 }, 6 - 3 * cd),
        Role::King => {
            let mg = if r == 0 {
                KING_BACK_RANK_MG[usize::from(f)]
            } else {
                -25 * (r as i32).min(3)
            };
            (mg, 24 - 8 * cd)
        }
    }
}
