//! UCI move notation (`e2e4`, `e7e8q`, castling as the king's move `e1g1`) and matching a
//! written move against the legal moves of a position.

use std::fmt;
use std::str::FromStr;

use crate::Move;
use crate::position::{MoveKind, MoveList, Position, Variant};
use crate::types::{Role, Square};

/// A move as written: two squares and an optional promotion letter. Not yet checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct UciMove {
    /// Origin.
    pub from: Square,
    /// Destination.
    pub to: Square,
    /// Promotion letter, if any.
    pub promotion: Option<Role>,
}

/// Why a written move was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoveError {
    /// Not of the form `e2e4` / `e7e8q`.
    #[error("`{0}` is not a move in UCI notation (like `e2e4` or `e7e8q`)")]
    Syntax(String),
    /// The side to move has no piece on the origin square.
    #[error("no piece of the side to move on {0}")]
    NoPiece(Square),
    /// Not a legal move in this position.
    #[error("{0} is not a legal move here")]
    Illegal(UciMove),
    /// A pawn reaching the last rank must say what it becomes.
    #[error("{0} reaches the last rank: add the promotion piece (q, r, b or n)")]
    PromotionRequired(UciMove),
    /// A promotion letter on a move that cannot promote, or to a king or pawn.
    #[error("{0} cannot promote")]
    PromotionNotAllowed(UciMove),
}

impl FromStr for UciMove {
    type Err = MoveError;

    fn from_str(s: &str) -> Result<UciMove, MoveError> {
        let syntax = || MoveError::Syntax(s.chars().take(16).collect());
        if !(4..=5).contains(&s.len()) || !s.is_ascii() {
            return Err(syntax());
        }
        let from = Square::parse(&s[0..2]).ok_or_else(syntax)?;
        let to = Square::parse(&s[2..4]).ok_or_else(syntax)?;
        let promotion = match s.as_bytes().get(4) {
            None => None,
            Some(&b) => match Role::from_char(b as char) {
                Some(role) if b.is_ascii_lowercase() && role.is_promotion_target() => Some(role),
                _ => return Err(syntax()),
            },
        };
        if from == to {
            return Err(syntax());
        }
        Ok(UciMove {
            from,
            to,
            promotion,
        })
    }
}

impl UciMove {
    /// The move as at most five ASCII bytes, and how many (a move is written several times
    /// on every move of a live game: its record, its event).
    fn ascii(&self) -> ([u8; 5], usize) {
        let mut text = [0u8; 5];
        text[..2].copy_from_slice(&self.from.name());
        text[2..4].copy_from_slice(&self.to.name());
        let len = match self.promotion {
            Some(role) => {
                text[4] = role.char() as u8;
                5
            }
            None => 4,
        };
        (text, len)
    }

    /// Appends the move in UCI notation, without the formatting machinery.
    pub fn push_to(&self, out: &mut String) {
        let (text, len) = self.ascii();
        if let Ok(text) = std::str::from_utf8(&text[..len]) {
            out.push_str(text);
        }
    }
}

impl fmt::Display for UciMove {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One write of the move's bytes.
        let (text, len) = self.ascii();
        f.write_str(std::str::from_utf8(&text[..len]).map_err(|_| fmt::Error)?)
    }
}

impl Move {
    /// The move in UCI notation.
    pub fn to_uci(&self) -> UciMove {
        UciMove {
            from: self.from,
            to: self.to,
            promotion: self.promotion,
        }
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_uci(), f)
    }
}

impl Position {
    /// Finds the legal move written as `uci`.
    ///
    /// In hidden chess a hidden piece that may reach its last rank (say the a1 "rook" going
    /// to a8) may carry a promotion letter: the choice made in advance, used only if it turns
    /// out to be a pawn. Every decision here uses public information only.
    ///
    /// A king's step and its castling can share both squares only in a set-up position
    /// (Chess960-like, the king beside its castling square): the step is the move named
    /// then, as [`Position::legal_moves_between`] lists it first.
    pub fn to_move(&self, uci: &UciMove) -> Result<Move, MoveError> {
        if !self.board.by_color(self.turn).contains(uci.from) {
            return Err(MoveError::NoPiece(uci.from));
        }
        // Only the moves between the two squares are generated (a pawn's four promotions at
        // most), not the whole list.
        let mut moves = MoveList::new();
        self.legal_moves_between(uci.from, uci.to, &mut moves);
        let mut same_squares = moves.iter().peekable();
        let Some(&first) = same_squares.peek().copied() else {
            return Err(MoveError::Illegal(*uci));
        };
        if first.promotion.is_some() {
            // A pawn's promotion: the letter picks one of the four generated moves.
            let Some(role) = uci.promotion else {
                return Err(MoveError::PromotionRequired(*uci));
            };
            return same_squares
                .find(|m| m.promotion == Some(role))
                .copied()
                .ok_or(MoveError::PromotionNotAllowed(*uci));
        }
        match uci.promotion {
            None => Ok(first),
            Some(role) => {
                let advance_choice_allowed = self.variant == Variant::Hidden
                    && self.hidden.contains(first.from)
                    && first.kind == MoveKind::Normal
                    && first.to.rank() == self.turn.promotion_rank()
                    && role.is_promotion_target();
                if advance_choice_allowed {
                    Ok(first.with_promotion(Some(role)))
                } else {
                    Err(MoveError::PromotionNotAllowed(*uci))
                }
            }
        }
    }

    /// Parses and finds a legal move in one step.
    pub fn parse_uci(&self, uci: &str) -> Result<Move, MoveError> {
        self.to_move(&uci.parse()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every square's name, and a move with and without a promotion, written as UCI
    /// reads them back.
    #[test]
    fn moves_and_squares_are_written_as_they_are_read() {
        for file in 'a'..='h' {
            for rank in '1'..='8' {
                let name = format!("{file}{rank}");
                let sq = Square::parse(&name).expect("a square");
                assert_eq!(sq.to_string(), name);
            }
        }
        for text in ["e2e4", "a7a8q", "h2h1n", "e1g1", "b7c8r", "g2h1b"] {
            let m: UciMove = text.parse().expect("a move");
            assert_eq!(m.to_string(), text);
        }
    }
}
