//! Standard algebraic notation, for PGN. In hidden chess a hidden piece is written as the
//! piece it looks like (its apparent role), which is how it moved.

use crate::position::{Move, MoveKind, Position};
use crate::types::{CastlingSide, Role};

/// The SAN of a legal move of `pos`, without check or mate suffix (see [`san_suffix`]).
pub fn san(pos: &Position, m: &Move) -> String {
    let mut out = String::with_capacity(8);
    if let MoveKind::Castle { side, .. } = m.kind {
        return match side {
            CastlingSide::KingSide => "O-O".to_owned(),
            CastlingSide::QueenSide => "O-O-O".to_owned(),
        };
    }
    if m.role == Role::Pawn {
        if m.capture.is_some() {
            out.push(m.from.file().char());
        }
    } else {
        out.push(m.role.char().to_ascii_uppercase());
        // Disambiguate from other pieces of the same kind that can reach the same square.
        let others: Vec<Move> = pos
            .legal_move_list()
            .into_iter()
            .filter(|o| {
                o.role == m.role
                    && o.to == m.to
                    && o.from != m.from
                    && !matches!(o.kind, MoveKind::Castle { .. })
            })
            .collect();
        if !others.is_empty() {
            let same_file = others.iter().any(|o| o.from.file() == m.from.file());
            let same_rank = others.iter().any(|o| o.from.rank() == m.from.rank());
            if !same_file {
                out.push(m.from.file().char());
            } else if !same_rank {
                out.push(m.from.rank().char());
            } else {
                out.push(m.from.file().char());
                out.push(m.from.rank().char());
            }
        }
    }
    if m.capture.is_some() {
        out.push('x');
    }
    out.push_str(&m.to.to_string());
    if m.role == Role::Pawn
        && let Some(p) = m.promotion
    {
        out.push('=');
        out.push(p.char().to_ascii_uppercase());
    }
    out
}

/// `#` if the side to move in `after` is mated (or, atomic, its king exploded), `+` if it
/// is in check, else nothing.
pub fn san_suffix(after: &Position) -> &'static str {
    if after.exploded_king().is_some() {
        return "#";
    }
    if after.is_check() {
        if after.has_legal_move() { "+" } else { "#" }
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use crate::{Position, Variant};

    fn san_of(fen: &str, uci: &str) -> String {
        let pos = Position::from_fen(Variant::Standard, fen).expect("valid");
        let m = pos.parse_uci(uci).expect("legal");
        let mut after = pos;
        after.play_unchecked(&m);
        format!("{}{}", super::san(&pos, &m), super::san_suffix(&after))
    }

    #[test]
    fn writes_standard_algebraic_notation() {
        let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        assert_eq!(san_of(start, "e2e4"), "e4");
        assert_eq!(san_of(start, "g1f3"), "Nf3");
        assert_eq!(
            san_of(
                "rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2",
                "e4d5"
            ),
            "exd5"
        );
        assert_eq!(
            san_of("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1g1"),
            "O-O"
        );
        assert_eq!(
            san_of("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1c1"),
            "O-O-O"
        );
        assert_eq!(
            san_of("4k3/8/8/8/8/8/8/R3K2R w - - 0 1", "a1d1"),
            "Rd1",
            "the king blocks h1"
        );
        assert_eq!(san_of("4k3/8/8/8/8/8/8/R4RK1 w - - 0 1", "a1d1"), "Rad1");
        assert_eq!(san_of("4k3/8/8/8/8/R7/8/R3K3 w - - 0 1", "a1a2"), "R1a2");
        assert_eq!(san_of("4k3/P7/8/8/8/8/8/4K3 w - - 0 1", "a7a8q"), "a8=Q+");
        assert_eq!(
            san_of(
                "rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2",
                "d8h4"
            ),
            "Qh4#"
        );
    }
}
