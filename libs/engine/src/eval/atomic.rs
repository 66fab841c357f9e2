//! Atomic chess terms: what matters where every capture explodes (RULES.md §3).
//!
//! A capture on a square next to a king explodes that king, so a piece standing next to its
//! own king is a liability once the enemy attacks it, and the enemy's pieces next to *its*
//! king are targets. Kings that touch are safe from each other: a capture next to both
//! kings would explode the capturer's king too, so it is illegal.

use frontier_rules::{Bitboard, Color, Position, Role, king_attacks};

/// Penalty for each of our pieces next to our king that the enemy attacks (a capture there
/// wins the game for the enemy if it is its move).
const EXPOSED_NEIGHBOUR: i32 = 220;
/// Extra penalty when the side with the threat is to move: it simply wins.
const THREAT_TO_MOVE: i32 = 700;
/// Penalty per piece of ours standing next to our king at all (a future target).
const CROWDED_KING: i32 = 12;
/// Bonus for the side with less material when the kings touch: a known drawing resource.
const KINGS_TOUCH_DEFENCE: i32 = 60;

/// The atomic terms for White, minus Black's.
pub(crate) fn terms(pos: &Position, material_white_minus_black: i32) -> i32 {
    let board = pos.board();
    let (Some(wk), Some(bk)) = (board.king_of(Color::White), board.king_of(Color::Black)) else {
        return 0;
    };
    let touching = king_attacks(wk).contains(bk);
    let mut score = 0;
    for (color, king, enemy_king, sign) in [(Color::White, wk, bk, 1), (Color::Black, bk, wk, -1)] {
        let around = king_attacks(king);
        let neighbours = around & board.by_color(color);
        score -= sign * CROWDED_KING * neighbours.count() as i32;
        // Squares where a capture explodes our king but not the capturer's.
        let targets = neighbours & !king_attacks(enemy_king) & !Bitboard::from(enemy_king);
        let mut exposed = 0;
        for sq in targets {
            let attackers =
                board.attackers_to(sq, !color, board.occupied()) & !board.by_role(Role::King);
            if attackers.nonempty() {
                exposed += 1;
            }
        }
        // A king that an enemy piece itself touches: capturing that piece is illegal for us
        // (our own king would go), but nothing is lost by it standing there.
        if exposed > 0 {
            score -= sign * EXPOSED_NEIGHBOUR * exposed;
            if pos.turn() != color {
                score -= sign * THREAT_TO_MOVE;
            }
        }
    }
    if touching {
        if material_white_minus_black < 0 {
            score += KINGS_TOUCH_DEFENCE;
        } else if material_white_minus_black > 0 {
            score -= KINGS_TOUCH_DEFENCE;
        }
    }
    score
}

/// What a capture on `to` from `from` gains in material for the mover: the enemy pieces
/// the blast removes minus the mover's own (the capturer included). An enemy king in the
/// blast wins the game, shown as a very large gain.
pub(crate) fn explosion_gain(
    pos: &Position,
    from: frontier_rules::Square,
    capture_square: frontier_rules::Square,
    to: frontier_rules::Square,
    value: impl Fn(Role) -> i32,
) -> i32 {
    let board = pos.board();
    let us = pos.turn();
    let occupied = board.occupied() ^ from;
    let blast = (king_attacks(to) & occupied & !board.by_role(Role::Pawn)) | capture_square;
    let mut gain = -value(board.role_at(from).unwrap_or(Role::Pawn));
    for sq in blast {
        if let Some(piece) = board.piece_at(sq) {
            if piece.role == Role::King {
                if piece.color != us {
                    return 20_000;
                }
                continue;
            }
            let v = value(piece.role);
            gain += if piece.color == us { -v } else { v };
        }
    }
    gain
}
