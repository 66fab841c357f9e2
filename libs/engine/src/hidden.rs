//! Hidden chess from one seat's view: determinisation.
//!
//! The seat knows the public position and, per side, the multiset of identities not yet
//! accounted for ([`SeatView::unaccounted`]); it does not know which hidden piece is which —
//! not even for its own pieces (RULES.md §2). The engine samples layouts consistent with
//! that view — each side's hidden pieces draw their identities from that side's pool,
//! uniformly, and the result must be a legal position as the rules library checks it — then
//! searches each sampled world with a share of the budget and aggregates the root scores.
//! Nothing here ever reads a server's layout: there is none to read.

use frontier_rules::{Color, HiddenState, Piece, Role};

use crate::SeatView;
use crate::rng::Rng;

/// Sampled identities by square (hidden squares only).
pub(crate) type SampledLayout = [Option<Role>; 64];

/// How many times a sample that the rules library rejects is drawn again.
const MAX_REDRAWS: usize = 16;

/// One layout drawn uniformly from the view's pools. `None` if no legal one was found
/// (never expected: a hidden piece on its start square is always a legal placement).
pub(crate) fn sample(view: &SeatView, rng: &mut Rng) -> Option<SampledLayout> {
    let pos = &view.position;
    for _ in 0..MAX_REDRAWS {
        let mut layout = [None; 64];
        for color in Color::ALL {
            let squares = pos.hidden() & pos.board().by_color(color);
            let mut pool = pool_of(view.unaccounted.get(color));
            // A partial Fisher–Yates: the first `squares.count()` entries are a uniform draw
            // without replacement.
            for (i, sq) in squares.enumerate() {
                if i >= pool.len() {
                    return None;
                }
                let j = i + rng.below((pool.len() - i) as u64) as usize;
                pool.swap(i, j);
                layout[sq.idx()] = Some(pool[i]);
            }
        }
        if is_legal(view, &layout) {
            return Some(layout);
        }
    }
    None
}

/// The identities of one side's pool, as a list.
fn pool_of(counts: &crate::RoleCounts) -> Vec<Role> {
    let mut out = Vec::with_capacity(15);
    for (role, &n) in Role::CAPTURABLE.iter().zip(counts.iter()) {
        out.extend(std::iter::repeat_n(*role, usize::from(n)));
    }
    out
}

/// Whether the true board this layout implies is a legal hidden-chess position for the
/// rules library (server notation: the true board plus the hidden squares).
fn is_legal(view: &SeatView, layout: &SampledLayout) -> bool {
    let pos = &view.position;
    let mut setup = pos.to_setup();
    for sq in pos.hidden() {
        if let (Some(color), Some(role)) = (setup.board.color_at(sq), layout[sq.idx()]) {
            setup.board.set(sq, Piece { color, role });
        }
    }
    let mut fen = String::with_capacity(96);
    setup.write_fen(&mut fen, true);
    HiddenState::from_server_fen(&fen).is_ok()
}
