//! Perft: counting the leaves of the legal-move tree, the standard test of a move generator.

use crate::hidden::{HiddenState, Landing, Layout, landing};
use crate::position::{MoveList, Position};
use crate::types::Role;

/// Leaves at `depth`, counting the legal moves of the last ply without making them
/// ("bulk counting").
pub fn perft(pos: &Position, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut moves = MoveList::new();
    pos.legal_moves(&mut moves);
    if depth == 1 {
        return moves.len() as u64;
    }
    moves
        .iter()
        .map(|m| {
            let mut child = *pos;
            child.play_unchecked(m);
            perft(&child, depth - 1)
        })
        .sum()
}

/// Leaves at `depth`, making every move including those of the last ply.
pub fn perft_full(pos: &Position, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut moves = MoveList::new();
    pos.legal_moves(&mut moves);
    moves
        .iter()
        .map(|m| {
            let mut child = *pos;
            child.play_unchecked(m);
            perft_full(&child, depth - 1)
        })
        .sum()
}

/// Hidden-chess perft over the full server state: each move is applied with its reveal,
/// and a move whose piece turns out to be a pawn on its last rank counts once per
/// promotion choice (q, r, b, n). Leaves are bulk-counted.
pub fn perft_hidden(state: &HiddenState, depth: u32) -> u64 {
    hidden_nodes(&state.position, &state.layout, depth)
}

fn hidden_nodes(pos: &Position, layout: &Layout, depth: u32) -> u64 {
    if depth == 0 {
        return 1;
    }
    let mut moves = MoveList::new();
    pos.legal_moves(&mut moves);
    let mut nodes = 0;
    for m in &moves {
        let landing = landing(pos, layout, m);
        if depth == 1 {
            nodes += match landing {
                Landing::NeedsPromotion => Role::PROMOTIONS.len() as u64,
                Landing::Role(_) => 1,
            };
            continue;
        }
        let visit = |role: Role| {
            let mut child = *pos;
            child.make(m, role);
            hidden_nodes(&child, layout, depth - 1)
        };
        nodes += match landing {
            Landing::NeedsPromotion => Role::PROMOTIONS.into_iter().map(visit).sum(),
            Landing::Role(role) => visit(role),
        };
    }
    nodes
}

/// Per-move breakdown at the root ("divide"), for debugging against another generator.
pub fn divide(pos: &Position, depth: u32) -> Vec<(String, u64)> {
    let mut moves = MoveList::new();
    pos.legal_moves(&mut moves);
    moves
        .iter()
        .map(|m| {
            let mut child = *pos;
            child.play_unchecked(m);
            (m.to_string(), perft(&child, depth.saturating_sub(1)))
        })
        .collect()
}
