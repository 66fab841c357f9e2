//! One entry point that drives every parser of untrusted input, for the fuzz target and
//! the arbitrary-input property test: nothing may panic, and whatever parses must print
//! and parse back to the same thing.

use crate::{Game, HiddenState, Layout, Position, UciMove, Variant, verify_shuffle};

/// Feeds `input` to every parser; panics only if an invariant breaks (which is the bug a
/// fuzzer looks for). `input` may be `FEN|move` to also try a move against a position.
pub fn exercise_parsers(input: &str) {
    let (fen, mv) = input.split_once('|').unwrap_or((input, "e2e4"));
    for variant in Variant::ALL {
        if let Ok(pos) = Position::from_fen(variant, fen) {
            let printed = pos.fen();
            let again = Position::from_fen(variant, &printed)
                .unwrap_or_else(|e| panic!("printed FEN `{printed}` does not parse: {e}"));
            assert_eq!(again.fen(), printed, "FEN round trip");
            assert_eq!(
                again.repetition_key(),
                pos.repetition_key(),
                "same position"
            );
            // Only a position without secrets can play a move on its own.
            if let Ok(m) = pos.parse_uci(mv)
                && variant != Variant::Hidden
            {
                let mut after = pos;
                after.play_unchecked(&m);
                assert_eq!(after.key(), after.compute_key(), "incremental key");
            }
        }
    }
    if let Ok(state) = HiddenState::from_server_fen(fen) {
        let printed = state.server_fen();
        let again = HiddenState::from_server_fen(&printed)
            .unwrap_or_else(|e| panic!("printed server FEN `{printed}` does not parse: {e}"));
        assert_eq!(again.server_fen(), printed, "server FEN round trip");
        let mut game = Game::from_hidden_state(state);
        let _ = game.play_uci(mv);
    }
    if let Ok(uci) = input.parse::<UciMove>() {
        assert_eq!(uci.to_string().parse::<UciMove>().ok(), Some(uci));
    }
    if let Ok(layout) = Layout::from_canonical(input) {
        assert_eq!(
            Layout::from_canonical(&layout.canonical()).ok(),
            Some(layout)
        );
    }
    let mut words = input.split_whitespace();
    if let (Some(c), Some(s), Some(l)) = (words.next(), words.next(), words.next()) {
        let _ = verify_shuffle(c, s, l);
    }
}
