//! The public position and its legal moves, for all three variants.
//!
//! A [`Position`] holds only public information. In hidden chess a hidden piece stands on
//! the board as its apparent role and is marked in [`Position::hidden`]; every legality
//! question (moves, check, mate, stalemate) is answered from this alone, so legality can
//! never depend on, or leak, a hidden identity (RULES.md §2). Making a move that reveals a
//! piece needs the revealed role from outside — see `crate::hidden`.

use arrayvec::ArrayVec;

use crate::attacks::{self, aligned, between, king_attacks};
use crate::bitboard::Bitboard;
use crate::board::Board;
use crate::types::{CastlingSide, Color, Piece, Rank, Role, Square};
use crate::zobrist;

/// The three variants of RULES.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// FIDE chess (RULES.md §1).
    Standard,
    /// Hidden chess (RULES.md §2).
    Hidden,
    /// Atomic chess (RULES.md §3).
    Atomic,
}

impl Variant {
    /// All variants.
    pub const ALL: [Variant; 3] = [Variant::Standard, Variant::Hidden, Variant::Atomic];

    /// The protocol name: `standard`, `hidden` or `atomic`.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Standard => "standard",
            Variant::Hidden => "hidden",
            Variant::Atomic => "atomic",
        }
    }
}

impl std::str::FromStr for Variant {
    type Err = crate::ParseVariantError;
    fn from_str(s: &str) -> Result<Variant, Self::Err> {
        Variant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| crate::ParseVariantError(s.chars().take(32).collect()))
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What kind of move a [`Move`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MoveKind {
    /// Any move that is neither of the others (including promotions and captures).
    Normal,
    /// An en-passant capture.
    EnPassant,
    /// Castling; the move's squares are the king's, `rook` is where the rook (in hidden
    /// chess: the corner piece) starts.
    Castle {
        /// Which side.
        side: CastlingSide,
        /// The castling rook's square.
        rook: Square,
    },
}

/// A legal move of a position, as generated. `role` is the mover's role *as the board shows
/// it* (its apparent role if hidden). Castling is the king's move (`e1g1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Move {
    pub(crate) from: Square,
    pub(crate) to: Square,
    pub(crate) role: Role,
    pub(crate) capture: Option<Role>,
    pub(crate) promotion: Option<Role>,
    pub(crate) kind: MoveKind,
}

impl Move {
    /// Origin square.
    pub fn from(&self) -> Square {
        self.from
    }
    /// Destination square (the king's, for castling).
    pub fn to(&self) -> Square {
        self.to
    }
    /// The role of the moving piece as the board shows it.
    pub fn role(&self) -> Role {
        self.role
    }
    /// The role of the captured piece as the board shows it (a pawn for en passant).
    pub fn capture(&self) -> Option<Role> {
        self.capture
    }
    /// The promotion role: for a pawn's move to the last rank, or — in hidden chess — the
    /// choice sent in advance for a hidden piece that may turn out to be a pawn.
    pub fn promotion(&self) -> Option<Role> {
        self.promotion
    }
    /// The kind of move.
    pub fn kind(&self) -> MoveKind {
        self.kind
    }
    /// Whether the move captures.
    pub fn is_capture(&self) -> bool {
        self.capture.is_some()
    }
    /// The square of the captured piece (differs from `to` for en passant).
    pub fn capture_square(&self) -> Option<Square> {
        self.capture?;
        Some(match self.kind {
            MoveKind::EnPassant => Square::from_coords(self.to.file(), self.from.rank()),
            _ => self.to,
        })
    }
    /// The same move with another promotion role.
    pub(crate) fn with_promotion(self, promotion: Option<Role>) -> Move {
        Move { promotion, ..self }
    }
}

/// Upper bound on the moves generated (legal, or pseudo-legal before atomic filtering) from any
/// position that passes validation: at most 16 pieces a side, so at most 15 queen-like movers
/// (27 targets each) and a castling king (10).
pub const MAX_LEGAL_MOVES: usize = 15 * 27 + 10;

/// A stack-allocated list of moves: move generation never allocates.
pub type MoveList = ArrayVec<Move, MAX_LEGAL_MOVES>;

/// A position with every public fact: placement (apparent roles for hidden pieces), which
/// pieces are hidden, side to move, castling rights, en-passant square and move counters.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Position {
    pub(crate) variant: Variant,
    pub(crate) board: Board,
    pub(crate) turn: Color,
    /// Corner squares whose castling right still stands.
    pub(crate) castling: Bitboard,
    /// The square behind a true pawn that just moved two squares.
    pub(crate) ep_square: Option<Square>,
    pub(crate) halfmoves: u32,
    pub(crate) fullmoves: u32,
    pub(crate) hidden: Bitboard,
    /// Zobrist key of everything but the en-passant square (see [`Position::repetition_key`]).
    pub(crate) key: u64,
}

impl Position {
    /// The start position of `variant`. For hidden chess every non-king piece is hidden.
    pub fn new(variant: Variant) -> Position {
        let board = Board::standard();
        let hidden = if variant == Variant::Hidden {
            crate::board::hidden_start_mask(Color::White)
                | crate::board::hidden_start_mask(Color::Black)
        } else {
            Bitboard::EMPTY
        };
        let mut pos = Position {
            variant,
            board,
            turn: Color::White,
            castling: Bitboard::from(Square::A1) | Square::H1 | Square::A8 | Square::H8,
            ep_square: None,
            halfmoves: 0,
            fullmoves: 1,
            hidden,
            key: 0,
        };
        pos.key = pos.compute_key();
        pos
    }

    /// The variant.
    #[inline]
    pub fn variant(&self) -> Variant {
        self.variant
    }
    /// The placement (apparent roles for hidden pieces).
    #[inline]
    pub fn board(&self) -> &Board {
        &self.board
    }
    /// The side to move.
    #[inline]
    pub fn turn(&self) -> Color {
        self.turn
    }
    /// The corner squares whose castling right stands.
    #[inline]
    pub fn castling_rights(&self) -> Bitboard {
        self.castling
    }
    /// Whether `color` may still castle to `side` (rights only; not whether it is legal now).
    pub fn has_castling_right(&self, color: Color, side: CastlingSide) -> bool {
        let Some(king) = self.board.king_of(color) else {
            return false;
        };
        (self.castling & Bitboard::rank(color.back_rank())).any(|rook| match side {
            CastlingSide::KingSide => rook > king,
            CastlingSide::QueenSide => rook < king,
        })
    }
    /// The square behind a true pawn that just moved two squares, capturable or not.
    #[inline]
    pub fn ep_square(&self) -> Option<Square> {
        self.ep_square
    }
    /// Half-moves since the last capture, true-pawn move or hidden piece's move.
    #[inline]
    pub fn halfmoves(&self) -> u32 {
        self.halfmoves
    }
    /// The move number, starting at 1 and incremented after Black moves.
    #[inline]
    pub fn fullmoves(&self) -> u32 {
        self.fullmoves
    }
    /// The squares of hidden pieces (hidden chess only; empty otherwise).
    #[inline]
    pub fn hidden(&self) -> Bitboard {
        self.hidden
    }
    /// The incremental Zobrist key, without en passant.
    #[inline]
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The key that decides repetition: the position as the players see it (hidden pieces
    /// differ from revealed ones), side to move, castling rights, and the en-passant square
    /// only when an en-passant capture is actually legal.
    pub fn repetition_key(&self) -> u64 {
        match self.legal_ep_square() {
            Some(sq) => self.key ^ zobrist::en_passant(sq),
            None => self.key,
        }
    }

    /// The Zobrist key computed from scratch (the incremental key must always equal it).
    pub fn compute_key(&self) -> u64 {
        let mut key = 0;
        for sq in self.board.occupied() {
            if let Some(piece) = self.board.piece_at(sq) {
                key ^= zobrist::piece(piece.color, piece.role, sq);
            }
        }
        for sq in self.hidden {
            key ^= zobrist::hidden(sq);
        }
        for sq in self.castling {
            key ^= zobrist::castling(sq);
        }
        if self.turn == Color::Black {
            key ^= zobrist::black_to_move();
        }
        key
    }

    /// The en-passant square if some legal move captures en passant.
    pub fn legal_ep_square(&self) -> Option<Square> {
        let ep = self.ep_square?;
        let mut moves = MoveList::new();
        self.gen_en_passant(Bitboard::FULL, Bitboard::FULL, &mut moves);
        let king = self.board.king_of(self.turn);
        moves
            .iter()
            .any(|m| match self.variant {
                Variant::Atomic => self.atomic_is_legal(m),
                _ => king.is_some_and(|k| self.ep_is_safe(m, k)),
            })
            .then_some(ep)
    }

    /// The pieces giving check to the side to move. In atomic chess a king touching the
    /// enemy king is never in check.
    pub fn checkers(&self) -> Bitboard {
        let Some(king) = self.board.king_of(self.turn) else {
            return Bitboard::EMPTY;
        };
        if self.variant == Variant::Atomic && self.kings_touch() {
            return Bitboard::EMPTY;
        }
        self.board
            .attackers_to(king, !self.turn, self.board.occupied())
    }

    /// Whether the side to move is in check.
    #[inline]
    pub fn is_check(&self) -> bool {
        self.checkers().nonempty()
    }

    fn kings_touch(&self) -> bool {
        match (
            self.board.king_of(Color::White),
            self.board.king_of(Color::Black),
        ) {
            (Some(w), Some(b)) => king_attacks(w).contains(b),
            _ => false,
        }
    }

    /// Atomic chess: the side whose king has exploded, if one has.
    pub fn exploded_king(&self) -> Option<Color> {
        if self.variant != Variant::Atomic {
            return None;
        }
        Color::ALL
            .into_iter()
            .find(|&c| (self.board.by_role(Role::King) & self.board.by_color(c)).is_empty())
    }

    /// All legal moves, appended to `moves`. A hidden piece's move is listed once, without
    /// promotion, whatever it turns out to be.
    pub fn legal_moves(&self, moves: &mut MoveList) {
        self.legal_moves_masked(Bitboard::FULL, Bitboard::FULL, moves);
    }

    /// The legal moves from `from` to `to`, appended to `moves`: none, one, a pawn's four
    /// promotions, or — only in a set-up position whose king stands beside its castling
    /// square — the king's step and its castling, in that order. The same moves as the full
    /// list has between those squares (not in its order), found without generating the
    /// rest. A move's square names pick one this way ([`Position::to_move`]).
    pub fn legal_moves_between(&self, from: Square, to: Square, moves: &mut MoveList) {
        self.legal_moves_masked(Bitboard::from(from), Bitboard::from(to), moves);
    }

    /// The legal moves of the pieces on `from` to the squares of `to`. Every generator
    /// below takes the two masks: the pieces it moves are ANDed with `from` and their
    /// destinations with `to`, so that a legal move is generated exactly when it is in the
    /// full list and its squares are in the masks (castling is the king's move to its
    /// g- or c-file square). Legality is judged move by move, so masking changes which
    /// moves are listed, never whether one is legal; the order may differ from the full
    /// list's (whose pin filter swaps moves about).
    fn legal_moves_masked(&self, from: Bitboard, to: Bitboard, moves: &mut MoveList) {
        match self.variant {
            Variant::Standard | Variant::Hidden => self.gen_standard(from, to, moves),
            Variant::Atomic => self.gen_atomic(from, to, moves),
        }
    }

    /// All legal moves, in a fresh list.
    pub fn legal_move_list(&self) -> MoveList {
        let mut moves = MoveList::new();
        self.legal_moves(&mut moves);
        moves
    }

    /// Whether the side to move has any legal move. Asked after every move (mate and
    /// stalemate): in standard and hidden chess a king with a safe square answers it from
    /// the king's moves alone — a safe king move is always legal (no pin holds the king;
    /// `gen_standard` keeps every one) — and only a king without one needs the full list.
    pub fn has_legal_move(&self) -> bool {
        if matches!(self.variant, Variant::Standard | Variant::Hidden)
            && let Some(king) = self.board.king_of(self.turn)
        {
            let mut kings = MoveList::new();
            self.gen_safe_king(king, !self.board.by_color(self.turn), &mut kings);
            if !kings.is_empty() {
                return true;
            }
        }
        // Generation never allocates and the list lives on the stack.
        !self.legal_move_list().is_empty()
    }

    // ---- move generation, standard and hidden ----

    fn gen_standard(&self, from: Bitboard, to: Bitboard, moves: &mut MoveList) {
        let us = self.turn;
        let Some(king) = self.board.king_of(us) else {
            return;
        };
        let ours = self.board.by_color(us);
        let checkers = self.board.attackers_to(king, !us, self.board.occupied());
        let start = moves.len();
        let king_moves = from.contains(king);
        if checkers.is_empty() {
            let target = !ours & to;
            self.gen_pieces(from, target, moves);
            self.gen_pawns(from, target, moves);
            if king_moves {
                self.gen_safe_king(king, target, moves);
                self.gen_castling(king, to, moves);
            }
        } else {
            if king_moves {
                self.gen_safe_king(king, !ours & to, moves);
            }
            if let Some(checker) = checkers.single_square() {
                let target = (between(king, checker) | checker) & to;
                self.gen_pieces(from, target, moves);
                self.gen_pawns(from, target, moves);
            }
        }
        let has_ep = self.gen_en_passant(from, to, moves);
        let blockers = self.slider_blockers(king) & ours;
        if blockers.nonempty() || has_ep {
            let mut i = start;
            while i < moves.len() {
                if self.is_safe(&moves[i], king, blockers) {
                    i += 1;
                } else {
                    moves.swap_remove(i);
                }
            }
        }
    }

    /// Our pieces that alone stand between our king and an enemy slider.
    fn slider_blockers(&self, king: Square) -> Bitboard {
        let them = self.board.by_color(!self.turn);
        let snipers = them
            & ((attacks::rook_attacks(king, Bitboard::EMPTY) & self.board.rooks_and_queens())
                | (attacks::bishop_attacks(king, Bitboard::EMPTY)
                    & self.board.bishops_and_queens()));
        let mut blockers = Bitboard::EMPTY;
        for sniper in snipers {
            let b = between(king, sniper) & self.board.occupied();
            if !b.more_than_one() {
                blockers |= b;
            }
        }
        blockers
    }

    #[inline]
    fn is_safe(&self, m: &Move, king: Square, blockers: Bitboard) -> bool {
        match m.kind {
            MoveKind::EnPassant => self.ep_is_safe(m, king),
            _ => !blockers.contains(m.from) || aligned(m.from, m.to, king),
        }
    }

    fn ep_is_safe(&self, m: &Move, king: Square) -> bool {
        let captured = Square::from_coords(m.to.file(), m.from.rank());
        let occupied = (self.board.occupied() ^ m.from ^ captured) | m.to;
        (self.board.attackers_to(king, !self.turn, occupied) & !Bitboard::from(captured)).is_empty()
    }

    #[inline]
    fn push_targets(&self, from: Square, role: Role, targets: Bitboard, moves: &mut MoveList) {
        let them = self.board.by_color(!self.turn);
        let quiet = Move {
            from,
            to: from,
            role,
            capture: None,
            promotion: None,
            kind: MoveKind::Normal,
        };
        for to in targets & !them {
            moves.push(Move { to, ..quiet });
        }
        let captures = targets & them;
        if captures.nonempty() {
            // By victim role: five bitboard ANDs instead of a role look-up per square.
            for victim in Role::CAPTURABLE {
                for to in captures & self.board.by_role(victim) {
                    moves.push(Move {
                        to,
                        capture: Some(victim),
                        ..quiet
                    });
                }
            }
        }
    }

    /// Knights, bishops, rooks and queens on `from` moving to `target`.
    fn gen_pieces(&self, from: Bitboard, target: Bitboard, moves: &mut MoveList) {
        let ours = self.board.by_color(self.turn) & from;
        let occupied = self.board.occupied();
        for from in ours & self.board.by_role(Role::Knight) {
            self.push_targets(
                from,
                Role::Knight,
                attacks::knight_attacks(from) & target,
                moves,
            );
        }
        for from in ours & self.board.by_role(Role::Bishop) {
            self.push_targets(
                from,
                Role::Bishop,
                attacks::bishop_attacks(from, occupied) & target,
                moves,
            );
        }
        for from in ours & self.board.by_role(Role::Rook) {
            self.push_targets(
                from,
                Role::Rook,
                attacks::rook_attacks(from, occupied) & target,
                moves,
            );
        }
        for from in ours & self.board.by_role(Role::Queen) {
            self.push_targets(
                from,
                Role::Queen,
                attacks::queen_attacks(from, occupied) & target,
                moves,
            );
        }
    }

    #[inline]
    fn push_pawn(&self, from: Square, to: Square, capture: Option<Role>, moves: &mut MoveList) {
        let m = Move {
            from,
            to,
            role: Role::Pawn,
            capture,
            promotion: None,
            kind: MoveKind::Normal,
        };
        if to.rank() == self.turn.promotion_rank() {
            for role in Role::PROMOTIONS {
                moves.push(m.with_promotion(Some(role)));
            }
        } else {
            moves.push(m);
        }
    }

    /// Pawn pushes and captures of the pawns on `from` to `target` (not en passant),
    /// set-wise. A pawn on its own back rank (hidden chess) steps one square; two only from
    /// its pawn rank.
    fn gen_pawns(&self, from: Bitboard, target: Bitboard, moves: &mut MoveList) {
        let us = self.turn;
        let them = self.board.by_color(!us);
        let empty = !self.board.occupied();
        let pawns = self.board.by_color(us) & self.board.by_role(Role::Pawn) & from;
        if pawns.is_empty() {
            return;
        }
        let (step, forward): (i8, fn(Bitboard) -> Bitboard) = match us {
            Color::White => (8, Bitboard::north),
            Color::Black => (-8, Bitboard::south),
        };
        // Diagonal captures: shift forward, then one file either way, never wrapping.
        const NOT_A: u64 = !0x0101_0101_0101_0101;
        const NOT_H: u64 = !0x8080_8080_8080_8080;
        let ahead = forward(pawns);
        for (shifted, file_step) in [
            (Bitboard((ahead.0 & NOT_H) << 1), 1i8),
            (Bitboard((ahead.0 & NOT_A) >> 1), -1i8),
        ] {
            let caps = shifted & them & target;
            if caps.is_empty() {
                continue;
            }
            for victim in Role::CAPTURABLE {
                for to in caps & self.board.by_role(victim) {
                    let from = Square::new_masked((to.index() as i8 - step - file_step) as u8);
                    self.push_pawn(from, to, Some(victim), moves);
                }
            }
        }
        let single = ahead & empty;
        let double = forward(forward(pawns & Bitboard::rank(us.pawn_rank())) & empty) & empty;
        for to in single & target {
            self.push_pawn(
                Square::new_masked((to.index() as i8 - step) as u8),
                to,
                None,
                moves,
            );
        }
        for to in double & target {
            self.push_pawn(
                Square::new_masked((to.index() as i8 - 2 * step) as u8),
                to,
                None,
                moves,
            );
        }
    }

    /// En-passant captures by the pawns on `from` when `to` holds the square, unchecked
    /// for pins; returns whether any was generated.
    fn gen_en_passant(&self, from: Bitboard, to: Bitboard, moves: &mut MoveList) -> bool {
        let Some(ep) = self.ep_square.filter(|&ep| to.contains(ep)) else {
            return false;
        };
        let us = self.turn;
        let capturers = attacks::pawn_attacks(!us, ep)
            & self.board.by_color(us)
            & self.board.by_role(Role::Pawn)
            & from;
        for from in capturers {
            moves.push(Move {
                from,
                to: ep,
                role: Role::Pawn,
                capture: Some(Role::Pawn),
                promotion: None,
                kind: MoveKind::EnPassant,
            });
        }
        capturers.nonempty()
    }

    fn gen_safe_king(&self, king: Square, target: Bitboard, moves: &mut MoveList) {
        let us = self.turn;
        let occupied = self.board.occupied() ^ king;
        for to in king_attacks(king) & target {
            if self.board.attackers_to(to, !us, occupied).is_empty() {
                let capture = self.board.role_at(to);
                moves.push(Move {
                    from: king,
                    to,
                    role: Role::King,
                    capture,
                    promotion: None,
                    kind: MoveKind::Normal,
                });
            }
        }
    }

    /// Castling moves whose squares are free, with the squares the king passes over
    /// (its destination included). Rights are rook squares (X-FEN): the king goes to the
    /// g- or c-file and the rook to the f- or d-file, and every square either crosses or
    /// lands on must be empty but for the two of them.
    /// Only the castlings whose king square is in `to` are given.
    fn castling_candidates(
        &self,
        king: Square,
        to: Bitboard,
    ) -> impl Iterator<Item = (Move, Bitboard)> {
        let back = self.turn.back_rank();
        let occupied = self.board.occupied();
        (self.castling & Bitboard::rank(back)).filter_map(move |rook| {
            let side = if rook > king {
                CastlingSide::KingSide
            } else {
                CastlingSide::QueenSide
            };
            let king_to = Square::from_coords(side.king_to_file(), back);
            let rook_to = Square::from_coords(side.rook_to_file(), back);
            let king_path = between(king, king_to) | king_to;
            let rook_path = between(rook, rook_to) | rook_to;
            let others = occupied ^ king ^ rook;
            (to.contains(king_to) && (others & (king_path | rook_path)).is_empty()).then_some((
                Move {
                    from: king,
                    to: king_to,
                    role: Role::King,
                    capture: None,
                    promotion: None,
                    kind: MoveKind::Castle { side, rook },
                },
                king_path,
            ))
        })
    }

    /// Castling (called only when not in check) to the king's squares in `to`: the king may
    /// not pass through or land on an attacked square. In hidden chess the corner piece is
    /// the hidden apparent rook.
    fn gen_castling(&self, king: Square, to: Bitboard, moves: &mut MoveList) {
        let them = !self.turn;
        let without_king = self.board.occupied() ^ king;
        for (m, king_path) in self.castling_candidates(king, to) {
            let MoveKind::Castle { side, rook } = m.kind else {
                continue;
            };
            let rook_to = Square::from_coords(side.rook_to_file(), self.turn.back_rank());
            // The rook may have shielded the king's destination along the back rank.
            let landed = (without_king ^ rook) | rook_to;
            if king_path
                .into_iter()
                .all(|sq| self.board.attackers_to(sq, them, without_king).is_empty())
                && self.board.attackers_to(m.to, them, landed).is_empty()
            {
                moves.push(m);
            }
        }
    }

    // ---- atomic ----

    fn gen_atomic(&self, from: Bitboard, to: Bitboard, moves: &mut MoveList) {
        if self.exploded_king().is_some() {
            return;
        }
        let us = self.turn;
        let Some(king) = self.board.king_of(us) else {
            return;
        };
        let start = moves.len();
        let ours = self.board.by_color(us);
        self.gen_pieces(from, !ours & to, moves);
        self.gen_pawns(from, !ours & to, moves);
        self.gen_en_passant(from, to, moves);
        if from.contains(king) {
            // A king never captures: it would be caught in its own explosion.
            for dest in king_attacks(king) & !self.board.occupied() & to {
                moves.push(Move {
                    from: king,
                    to: dest,
                    role: Role::King,
                    capture: None,
                    promotion: None,
                    kind: MoveKind::Normal,
                });
            }
            self.gen_atomic_castling(king, to, moves);
        }
        let mut i = start;
        while i < moves.len() {
            if self.atomic_is_legal(&moves[i]) {
                i += 1;
            } else {
                moves.swap_remove(i);
            }
        }
    }

    /// Whether `sq` counts as attacked for the king's castling path in atomic chess: squares
    /// next to the enemy king are safe, since no enemy piece can capture there without
    /// exploding its own king.
    fn atomic_path_attacked(&self, path: Bitboard, occupied: Bitboard) -> bool {
        let them = !self.turn;
        let mut path = path;
        if let Some(enemy_king) = self.board.king_of(them) {
            path &= !king_attacks(enemy_king);
        }
        path.into_iter()
            .any(|sq| self.board.attackers_to(sq, them, occupied).nonempty())
    }

    fn gen_atomic_castling(&self, king: Square, to: Bitboard, moves: &mut MoveList) {
        let occupied = self.board.occupied();
        for (m, king_path) in self.castling_candidates(king, to) {
            let MoveKind::Castle { side, rook } = m.kind else {
                continue;
            };
            let rook_to = Square::from_coords(side.rook_to_file(), self.turn.back_rank());
            let landing_occupied = (occupied ^ king ^ rook) | rook_to;
            if !self.atomic_path_attacked(king_path | king, occupied ^ king)
                && !self.atomic_path_attacked(Bitboard::from(m.to), landing_occupied)
            {
                moves.push(m);
            }
        }
    }

    /// Atomic legality of a pseudo-legal move: the mover's king survives, and either the
    /// enemy king explodes, or the kings touch, or the mover's king is not attacked.
    fn atomic_is_legal(&self, m: &Move) -> bool {
        let mut after = *self;
        after.make_atomic_board_only(m);
        let us = self.turn;
        let Some(our_king) = after.board.king_of(us) else {
            return false;
        };
        let Some(their_king) = after.board.king_of(!us) else {
            return true;
        };
        king_attacks(our_king).contains(their_king)
            || after
                .board
                .attackers_to(our_king, !us, after.board.occupied())
                .is_empty()
    }

    /// The board part of an atomic move, for the legality test.
    fn make_atomic_board_only(&mut self, m: &Move) {
        self.move_pieces(m, Self::plain_landing(m));
        if m.capture.is_some() {
            self.explode(m.to);
        }
    }

    // ---- making moves ----

    /// Plays a legal move of a standard or atomic position (or a hidden position where the
    /// mover and, for castling, the corner piece are not hidden).
    ///
    /// The move must come from [`Position::legal_moves`] or [`Position::parse_uci`] of this
    /// very position; anything else leaves the position inconsistent.
    pub fn play_unchecked(&mut self, m: &Move) {
        self.make(m, Self::plain_landing(m));
    }

    /// Plays a legal move with `landed` as the role that arrives: for a hidden mover its
    /// true role (or, for a pawn reaching its last rank, the promotion), for castling the
    /// corner piece's true role. For a search over an assumed layout (the computer player
    /// samples layouts consistent with its seat's view; it never sees the server's): the
    /// caller supplies the identity, so nothing secret is read here. Allocation-free.
    ///
    /// The move must come from [`Position::legal_moves`] of this very position, and
    /// `landed` must be a role the move can bring (`m.role()`/its promotion when the mover
    /// is not hidden); anything else leaves the position inconsistent.
    #[inline]
    pub fn play_revealing(&mut self, m: &Move, landed: Role) {
        self.make(m, landed);
    }

    /// The role that arrives when nothing is hidden: the rook when castling, else the
    /// promotion or the mover.
    #[inline]
    fn plain_landing(m: &Move) -> Role {
        match m.kind {
            MoveKind::Castle { .. } => Role::Rook,
            _ => m.promotion.unwrap_or(m.role),
        }
    }

    /// Plays `m` with `landed` as the role that arrives: the mover's role on `to` for
    /// ordinary moves (its true role if it was hidden, or its promotion), or the corner
    /// piece's role on its castling square. Hidden markers of the squares involved go.
    pub(crate) fn make(&mut self, m: &Move, landed: Role) {
        let us = self.turn;
        // The fifty-move counter resets on a capture, a true pawn's move, and any move of a
        // hidden piece — including the corner piece that castling moves.
        let moves_hidden = self.hidden.contains(m.from)
            || matches!(m.kind, MoveKind::Castle { rook, .. } if self.hidden.contains(rook));
        let reset = m.capture.is_some() || m.role == Role::Pawn || moves_hidden;
        // Castling rights: anything leaving or arriving on a corner, or the king moving.
        if self.castling.nonempty() {
            let mut lost = self.castling & (Bitboard::from(m.from) | m.to);
            if m.role == Role::King {
                lost |= self.castling & Bitboard::rank(us.back_rank());
            }
            for sq in lost {
                self.key ^= zobrist::castling(sq);
            }
            self.castling ^= lost;
        }
        self.ep_square = None;
        self.move_pieces(m, landed);
        if self.variant == Variant::Atomic && m.capture.is_some() {
            self.explode(m.to);
        }
        if m.role == Role::Pawn
            && landed == Role::Pawn
            && m.from.index().abs_diff(m.to.index()) == 16
        {
            self.ep_square = Square::from_index((m.from.index() + m.to.index()) / 2);
        }
        self.halfmoves = if reset { 0 } else { self.halfmoves + 1 };
        if us == Color::Black {
            self.fullmoves += 1;
        }
        self.turn = !us;
        self.key ^= zobrist::black_to_move();
    }

    #[inline]
    fn take_piece(&mut self, sq: Square, piece: Piece) {
        self.board.take(sq, piece);
        self.key ^= zobrist::piece(piece.color, piece.role, sq);
        if self.hidden.contains(sq) {
            self.hidden.discard(sq);
            self.key ^= zobrist::hidden(sq);
        }
    }

    #[inline]
    fn put_piece(&mut self, sq: Square, piece: Piece) {
        self.board.put(sq, piece);
        self.key ^= zobrist::piece(piece.color, piece.role, sq);
    }

    fn move_pieces(&mut self, m: &Move, landed: Role) {
        let us = self.turn;
        let them = !us;
        match m.kind {
            MoveKind::Castle { side, rook: corner } => {
                let rook_to = Square::from_coords(side.rook_to_file(), us.back_rank());
                self.take_piece(
                    m.from,
                    Piece {
                        color: us,
                        role: Role::King,
                    },
                );
                self.take_piece(
                    corner,
                    Piece {
                        color: us,
                        role: Role::Rook,
                    },
                );
                self.put_piece(
                    m.to,
                    Piece {
                        color: us,
                        role: Role::King,
                    },
                );
                self.put_piece(
                    rook_to,
                    Piece {
                        color: us,
                        role: landed,
                    },
                );
            }
            MoveKind::Normal | MoveKind::EnPassant => {
                if let (Some(role), Some(sq)) = (m.capture, m.capture_square()) {
                    self.take_piece(sq, Piece { color: them, role });
                }
                // The mover in one go: leave `from`, arrive on `to` as `landed`.
                self.board.shift_piece(us, m.role, m.from, landed, m.to);
                self.key ^= zobrist::piece(us, m.role, m.from) ^ zobrist::piece(us, landed, m.to);
                if self.hidden.contains(m.from) {
                    self.hidden.discard(m.from);
                    self.key ^= zobrist::hidden(m.from);
                }
            }
        }
    }

    /// Atomic explosion on `at`: the capturing piece and every non-pawn piece around go.
    fn explode(&mut self, at: Square) {
        let blast =
            (king_attacks(at) & self.board.occupied() & !self.board.by_role(Role::Pawn)) | at;
        for sq in blast {
            if let Some(piece) = self.board.piece_at(sq) {
                self.take_piece(sq, piece);
                if piece.role == Role::King {
                    let rights = self.castling & Bitboard::rank(piece.color.back_rank());
                    for corner in rights {
                        self.key ^= zobrist::castling(corner);
                    }
                    self.castling ^= rights;
                }
            }
            if self.castling.contains(sq) {
                self.castling.discard(sq);
                self.key ^= zobrist::castling(sq);
            }
        }
    }

    // ---- material ----

    /// Whether the game is drawn by insufficient material right now, judged from public
    /// information (RULES.md §1–3): standard K v K, K+B v K, K+N v K, K+B v K+B with
    /// same-coloured bishops; hidden the same once no hidden piece is left; atomic only
    /// bare kings.
    pub fn is_insufficient_material(&self) -> bool {
        let b = &self.board;
        match self.variant {
            Variant::Atomic => b.occupied() == b.by_role(Role::King),
            Variant::Hidden if self.hidden.nonempty() => false,
            Variant::Standard | Variant::Hidden => {
                let others = b.occupied() & !b.by_role(Role::King);
                let minors = b.by_role(Role::Bishop) | b.by_role(Role::Knight);
                if others.is_empty() {
                    return true;
                }
                if others.count() == 1 {
                    return (others & minors).nonempty();
                }
                let bishops = b.by_role(Role::Bishop);
                others.count() == 2
                    && others == bishops
                    && (bishops & b.by_color(Color::White)).count() == 1
                    && ((bishops & Bitboard::DARK_SQUARES).is_empty()
                        || (bishops & Bitboard::LIGHT_SQUARES).is_empty())
            }
        }
    }

    /// Whether `color` has no way at all to win, for a flag fall (RULES.md §5): standard as
    /// lichess judges it; hidden the same but never while a hidden piece stands; atomic a
    /// bare king.
    pub fn has_insufficient_material(&self, color: Color) -> bool {
        let b = &self.board;
        let ours = b.by_color(color);
        let theirs = b.by_color(!color);
        match self.variant {
            Variant::Atomic => ours == ours & b.by_role(Role::King),
            Variant::Hidden if self.hidden.nonempty() => false,
            Variant::Standard | Variant::Hidden => {
                let heavy = b.by_role(Role::Pawn) | b.by_role(Role::Rook) | b.by_role(Role::Queen);
                if (ours & heavy).nonempty() {
                    return false;
                }
                if (ours & b.by_role(Role::Knight)).nonempty() {
                    // One lone knight, and nothing on the other side that could block its
                    // own king into a mate.
                    return ours.count() <= 2
                        && (theirs & !b.by_role(Role::King) & !b.by_role(Role::Queen)).is_empty();
                }
                if (ours & b.by_role(Role::Bishop)).nonempty() {
                    let bishops = b.by_role(Role::Bishop);
                    let same_colour = (bishops & Bitboard::DARK_SQUARES).is_empty()
                        || (bishops & Bitboard::LIGHT_SQUARES).is_empty();
                    return same_colour
                        && b.by_role(Role::Pawn).is_empty()
                        && b.by_role(Role::Knight).is_empty();
                }
                true
            }
        }
    }

    /// The rank of `sq` relative to `color` (0 = its back rank).
    pub(crate) fn relative_rank(color: Color, sq: Square) -> Rank {
        match color {
            Color::White => sq.rank(),
            Color::Black => sq.flip_vertical().rank(),
        }
    }
}
