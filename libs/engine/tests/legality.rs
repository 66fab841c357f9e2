//! Property: whatever the variant, position, level and seed, the engine's decision is one
//! the rules accept — over random playouts, with small node budgets.

use frontier_engine::{Decision, Level, Limits, Request, SeatView, think};
use frontier_rules::{Audience, Color, Game, Layout, Role, Shuffle, Variant};
use proptest::prelude::*;

const IDENTITIES: &str = "PPPPPPPPNNBBRRQ";

fn layout() -> impl Strategy<Value = String> {
    let side = || Just(IDENTITIES.chars().collect::<Vec<_>>()).prop_shuffle();
    (side(), side()).prop_map(|(w, b)| {
        let white: String = w.into_iter().collect();
        let black: String = b.into_iter().map(|c| c.to_ascii_lowercase()).collect();
        format!("{white}/{black}")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn never_returns_an_illegal_decision(
        variant in prop::sample::select(Variant::ALL.to_vec()),
        layout in layout(),
        picks in prop::collection::vec(any::<u16>(), 0..60),
        level in prop::sample::select(Level::ALL.to_vec()),
        seed in any::<u64>(),
    ) {
        let mut game = match variant {
            Variant::Hidden => Game::new_hidden(Shuffle::new(
                Layout::from_canonical(&layout).expect("a shuffle is a layout"),
                [0; 32],
            )),
            other => Game::from_position(frontier_rules::Position::new(other)),
        };
        let mut reveals: Vec<(Color, Role)> = Vec::new();
        let mut captures: [Vec<Role>; 2] = [Vec::new(), Vec::new()];
        // A random playout, with pending promotions answered by a queen.
        for pick in picks {
            if game.outcome().is_some() {
                break;
            }
            let report = if game.pending_promotion().is_some() {
                game.choose_promotion(Role::Queen).expect("a pending promotion")
            } else {
                let moves = game.legal_moves();
                let m = moves[usize::from(pick) % moves.len()];
                game.play(&m).expect("a generated move is legal")
            };
            let public = report.for_audience(Audience::Spectator);
            if let Some(reveal) = public.reveal {
                reveals.push((public.mover, reveal.role));
            }
            if let Some(role) = report.for_audience(Audience::Player(public.mover)).captured_identity {
                captures[public.mover as usize].push(role);
            }
        }
        prop_assume!(game.outcome().is_none());
        let seat = game.side_to_act();
        let seen = game.view(Audience::Player(seat));
        let view = match variant {
            Variant::Hidden => SeatView::hidden(
                seat,
                seen.position,
                seen.pending_promotion,
                Vec::new(),
                &reveals,
                &captures[seat as usize],
            )
            .expect("a real game's view accounts correctly"),
            _ => SeatView::open(seat, seen.position, Vec::new()),
        };
        let thought = think(&Request {
            view: &view,
            level,
            clock: None,
            seed,
            limits: Some(Limits { nodes: Some(400), deadline: None }),
        })
        .expect("the seat is to act and the game is not over");
        match thought.decision {
            Decision::Move(m) => {
                game.play(&m).expect("the engine's move is legal");
            }
            Decision::Promote(role) => {
                game.choose_promotion(role).expect("the engine's promotion is valid");
            }
        }
    }
}
