//! The answer to a pending promotion (hidden chess: a hidden piece revealed as a pawn on its
//! last rank, RULES.md §2 "Promotion"): a queen, unless another choice mates or the queen
//! would stalemate.

use frontier_rules::{Color, Piece, Position, Role};

use crate::{Decision, SeatView, Thought};

/// The preference order: a queen first, an under-promotion only when it matters.
const ORDER: [Role; 4] = [Role::Queen, Role::Rook, Role::Bishop, Role::Knight];

/// Answers `view`'s pending promotion.
pub(crate) fn answer(view: &SeatView) -> Thought {
    let mut fallback = None;
    let mut choice = None;
    for role in ORDER {
        let Some(after) = promoted(view, role) else {
            continue;
        };
        if !after.has_legal_move() {
            if after.is_check() {
                choice = Some(role);
                break;
            }
            // Stalemate: a draw thrown away.
            continue;
        }
        fallback.get_or_insert(role);
    }
    Thought {
        decision: Decision::Promote(choice.or(fallback).unwrap_or(Role::Queen)),
        nodes: 0,
        depth: 0,
        score: 0,
    }
}

/// The public position after promoting to `role`, the opponent to move.
fn promoted(view: &SeatView, role: Role) -> Option<Position> {
    let sq = view.pending_promotion?;
    let pos = &view.position;
    let mut setup = pos.to_setup();
    setup.board.set(
        sq,
        Piece {
            color: view.seat,
            role,
        },
    );
    setup.turn = !view.seat;
    setup.ep_square = None;
    setup.halfmoves = 0;
    if view.seat == Color::Black {
        setup.fullmoves += 1;
    }
    Position::from_setup(pos.variant(), setup).ok()
}
