//! Test and benchmark support: long games that never end on their own. Only in test
//! builds and builds with the `test-hooks` feature.

use frontier_rules::{Game, Position, Role, Variant};

/// `plies` legal moves of `variant` (standard or atomic) from the start position after
/// none of which the game is over — no mate, stalemate, repetition, fifty-move rule or
/// dead position on the way — picked by a seeded generator (the same seed gives the same
/// line). Quiet moves are preferred (material stays on the board), and pawn moves once
/// the half-move clock passes 60 (so the fifty-move rule never comes). `None` if no such
/// line was found from 64 seeds on.
pub fn long_line(variant: Variant, plies: usize, seed: u64) -> Option<Vec<String>> {
    (seed..seed + 64).find_map(|s| attempt(variant, plies, s))
}

fn attempt(variant: Variant, plies: usize, seed: u64) -> Option<Vec<String>> {
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        // xorshift64*: enough to pick moves.
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut game = Game::from_position(Position::new(variant));
    let mut line = Vec::with_capacity(plies);
    while line.len() < plies {
        let mut moves: Vec<_> = game.legal_moves().into_iter().collect();
        // Shuffle, then put the preferred moves first (a stable sort keeps the shuffle
        // within each rank).
        for i in (1..moves.len()).rev() {
            moves.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        let urgent = game.position().halfmoves() > 60;
        moves.sort_by_key(|m| match (m.role() == Role::Pawn, m.is_capture()) {
            (true, false) if urgent => 0,
            (_, false) => 1,
            (_, true) => 2,
        });
        let played = moves.iter().find_map(|m| {
            let mut after = game.clone();
            match after.play(m) {
                Ok(_) if after.outcome().is_none() && after.pending_promotion().is_none() => {
                    Some((after, m.to_uci().to_string()))
                }
                _ => None,
            }
        });
        let (after, uci) = played?;
        game = after;
        line.push(uci);
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_legal_does_not_end_and_is_the_same_for_the_same_seed() {
        let line = long_line(Variant::Standard, 420, 7).expect("found");
        assert_eq!(line.len(), 420);
        let mut game = Game::from_position(Position::new(Variant::Standard));
        for uci in &line {
            game.play_uci(uci).expect("legal");
            assert_eq!(game.outcome(), None, "after {uci}");
        }
        assert_eq!(long_line(Variant::Standard, 420, 7), Some(line));
    }
}
