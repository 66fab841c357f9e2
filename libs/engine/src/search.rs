//! The search: iterative deepening principal variation search (negamax alpha-beta) with a
//! transposition table, quiescence search, check extension, late move reductions, and move
//! ordering by TT move, captures (MVV-LVA; atomic: what the explosion gains), killers and
//! history. Stops on a node budget (deterministic) or a deadline.
//!
//! Positions are copied and made (a [`Position`] is a small `Copy` value); nothing is
//! allocated per node. In hidden chess the search runs on one *determinised* world: a
//! layout the caller sampled from the seat's view ([`crate::hidden`]), consulted only for
//! what a hidden piece turns out to be when it moves.

use std::time::Instant;

use frontier_rules::{MAX_LEGAL_MOVES, Move, MoveKind, MoveList, Position, Role, Variant};

use crate::eval::{self, Evaluator};
use crate::tt::{Bound, MoveKey, Table};

/// The score of a mate at the root; a mate `n` plies away scores `MATE - n`.
pub(crate) const MATE: i32 = 30_000;
/// Scores beyond this are mates.
pub(crate) const MATE_BOUND: i32 = MATE - 1_000;
const INF: i32 = 31_000;
/// Deepest ply the search reaches (quiescence included).
const MAX_PLY: usize = 96;
/// Deepest iteration.
pub(crate) const MAX_DEPTH: u32 = 64;

/// How much one search may spend.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Nodes (quiescence included).
    pub(crate) nodes: u64,
    /// Wall-clock cut-off, checked every 1024 nodes.
    pub(crate) deadline: Option<Instant>,
}

/// A root move and its score for the side to move. With a margin (see
/// [`Search::run`]) scores within the margin of the best are exact, the others upper bounds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RootMove {
    pub(crate) mv: Move,
    pub(crate) score: i32,
}

/// What one search found.
#[derive(Debug, Clone)]
pub(crate) struct RootResult {
    /// Every root move, best first.
    pub(crate) moves: Vec<RootMove>,
    /// The deepest fully completed iteration.
    pub(crate) depth: u32,
    /// Nodes searched.
    pub(crate) nodes: u64,
}

/// One search over one (possibly determinised) world.
pub(crate) struct Search<'a> {
    eval: Evaluator,
    variant: Variant,
    /// Hidden chess: the sampled identity of each hidden piece, by square.
    layout: Option<&'a [Option<Role>; 64]>,
    tt: &'a mut Table,
    /// Mixed into TT keys so that searches of different sampled worlds never share entries.
    salt: u64,
    nodes: u64,
    budget: Budget,
    stopped: bool,
    killers: [[MoveKey; 2]; MAX_PLY],
    history: Box<[[[i32; 64]; 64]; 2]>,
    /// Repetition keys of the game before the root, then of the current path.
    keys: Vec<u64>,
}

/// The key that decides repetition (and keys the TT).
#[inline]
fn rep_key(pos: &Position) -> u64 {
    if pos.ep_square().is_some() {
        pos.repetition_key()
    } else {
        pos.key()
    }
}

#[inline]
fn to_tt(score: i32, ply: usize) -> i32 {
    if score > MATE_BOUND {
        score + ply as i32
    } else if score < -MATE_BOUND {
        score - ply as i32
    } else {
        score
    }
}

#[inline]
fn from_tt(score: i32, ply: usize) -> i32 {
    if score > MATE_BOUND {
        score - ply as i32
    } else if score < -MATE_BOUND {
        score + ply as i32
    } else {
        score
    }
}

impl<'a> Search<'a> {
    /// A search of one world. `history` holds the repetition keys of the positions before
    /// the root; `layout` is the sampled world of a hidden-chess search.
    pub(crate) fn new(
        eval: Evaluator,
        variant: Variant,
        layout: Option<&'a [Option<Role>; 64]>,
        tt: &'a mut Table,
        salt: u64,
        budget: Budget,
        history: &[u64],
    ) -> Search<'a> {
        let mut keys = Vec::with_capacity(history.len() + MAX_PLY + 2);
        keys.extend_from_slice(history);
        Search {
            eval,
            variant,
            layout,
            tt,
            salt,
            nodes: 0,
            budget,
            stopped: false,
            killers: [[MoveKey::NONE; 2]; MAX_PLY],
            history: Box::new([[[0; 64]; 64]; 2]),
            keys,
        }
    }

    /// Plays `m` on `pos`: in a determinised world a hidden mover lands as its sampled
    /// identity (a pawn on its last rank promotes to a queen), a hidden corner piece
    /// castles as its sampled identity.
    #[inline]
    fn play(&self, pos: &mut Position, m: &Move) {
        match self.layout {
            None => pos.play_unchecked(m),
            Some(layout) => {
                let hidden = pos.hidden();
                let landed = match m.kind() {
                    MoveKind::Castle { rook, .. } => {
                        if hidden.contains(rook) {
                            layout[rook.idx()].unwrap_or(Role::Rook)
                        } else {
                            Role::Rook
                        }
                    }
                    MoveKind::Normal | MoveKind::EnPassant => {
                        if hidden.contains(m.from()) {
                            let role = layout[m.from().idx()].unwrap_or(m.role());
                            if role == Role::Pawn && m.to().rank() == pos.turn().promotion_rank() {
                                m.promotion().unwrap_or(Role::Queen)
                            } else {
                                role
                            }
                        } else {
                            m.promotion().unwrap_or(m.role())
                        }
                    }
                };
                pos.play_revealing(m, landed);
            }
        }
    }

    #[inline]
    fn count_node(&mut self) {
        self.nodes += 1;
        if self.nodes >= self.budget.nodes {
            self.stopped = true;
        } else if self.nodes & 1023 == 0
            && let Some(deadline) = self.budget.deadline
            && Instant::now() >= deadline
        {
            self.stopped = true;
        }
    }

    /// A draw by rule on the path: fifty moves, repetition (once is enough in the search),
    /// or insufficient material.
    fn is_draw(&self, pos: &Position, key: u64) -> bool {
        if pos.halfmoves() >= 100 || pos.is_insufficient_material() {
            return true;
        }
        let len = self.keys.len();
        let reach = (pos.halfmoves() as usize).min(len);
        let mut back = 2;
        while back <= reach {
            if self.keys[len - back] == key {
                return true;
            }
            back += 2;
        }
        false
    }

    /// Ordering score of a move: TT move, then winning captures and promotions, killers,
    /// history.
    fn order_score(&self, pos: &Position, m: &Move, tt_move: MoveKey, ply: usize) -> i32 {
        let key = MoveKey::of(m);
        if key == tt_move {
            return 2_000_000;
        }
        if let Some(victim) = m.capture() {
            let gain = self.capture_gain(pos, m, victim);
            return 1_000_000 + gain;
        }
        if let Some(promo) = m.promotion() {
            return 900_000 + eval::order_value(self.variant, promo);
        }
        if ply < MAX_PLY && self.killers[ply][0] == key {
            return 800_000;
        }
        if ply < MAX_PLY && self.killers[ply][1] == key {
            return 799_000;
        }
        self.history[pos.turn() as usize][m.from().idx()][m.to().idx()]
    }

    /// MVV-LVA, or in atomic chess the material the explosion gains.
    #[inline]
    fn capture_gain(&self, pos: &Position, m: &Move, victim: Role) -> i32 {
        let variant = self.variant;
        if variant == Variant::Atomic {
            let sq = m.capture_square().unwrap_or(m.to());
            eval::explosion_gain(pos, m.from(), sq, m.to(), |r| eval::order_value(variant, r))
        } else {
            10 * eval::order_value(variant, victim) - eval::order_value(variant, m.role()) / 10
        }
    }

    fn negamax(
        &mut self,
        pos: &Position,
        depth: i32,
        mut alpha: i32,
        beta: i32,
        ply: usize,
    ) -> i32 {
        let pv = beta - alpha > 1;
        if let Some(loser) = pos.exploded_king() {
            return if loser == pos.turn() {
                -MATE + ply as i32
            } else {
                MATE - ply as i32
            };
        }
        let key = rep_key(pos);
        if self.is_draw(pos, key) {
            return 0;
        }
        let alpha_floor = -MATE + ply as i32;
        let beta_ceiling = MATE - ply as i32 - 1;
        if alpha_floor >= beta || beta_ceiling <= alpha {
            return alpha.max(alpha_floor).min(beta_ceiling);
        }
        if depth <= 0 || ply >= MAX_PLY - 1 {
            return self.quiesce(pos, alpha, beta, ply);
        }
        self.count_node();
        if self.stopped {
            return 0;
        }
        let tt_key = key ^ self.salt;
        let mut tt_move = MoveKey::NONE;
        if let Some(hit) = self.tt.probe(tt_key) {
            tt_move = hit.mv;
            if !pv && hit.depth >= depth {
                let s = from_tt(hit.score, ply);
                match hit.bound {
                    Bound::Exact => return s,
                    Bound::Lower if s >= beta => return s,
                    Bound::Upper if s <= alpha => return s,
                    _ => {}
                }
            }
        }
        let mut moves = MoveList::new();
        pos.legal_moves(&mut moves);
        let in_check = pos.is_check();
        if moves.is_empty() {
            return if in_check { -MATE + ply as i32 } else { 0 };
        }
        let depth = if in_check { depth + 1 } else { depth };
        let mut scores = [0i32; MAX_LEGAL_MOVES];
        for (s, m) in scores.iter_mut().zip(moves.iter()) {
            *s = self.order_score(pos, m, tt_move, ply);
        }
        let n = moves.len();
        let original_alpha = alpha;
        let mut best = -INF;
        let mut best_move = MoveKey::NONE;
        self.keys.push(key);
        for i in 0..n {
            let mut pick = i;
            for j in i + 1..n {
                if scores[j] > scores[pick] {
                    pick = j;
                }
            }
            moves.swap(i, pick);
            scores.swap(i, pick);
            let m = moves[i];
            let mut child = *pos;
            self.play(&mut child, &m);
            let quiet = !m.is_capture() && m.promotion().is_none();
            let score = if i == 0 {
                -self.negamax(&child, depth - 1, -beta, -alpha, ply + 1)
            } else {
                let reduction = if depth >= 3 && quiet && !in_check && i >= 3 && !child.is_check() {
                    if i >= 10 && depth >= 5 { 2 } else { 1 }
                } else {
                    0
                };
                let mut s =
                    -self.negamax(&child, depth - 1 - reduction, -alpha - 1, -alpha, ply + 1);
                if s > alpha && reduction > 0 {
                    s = -self.negamax(&child, depth - 1, -alpha - 1, -alpha, ply + 1);
                }
                if s > alpha && s < beta {
                    s = -self.negamax(&child, depth - 1, -beta, -alpha, ply + 1);
                }
                s
            };
            if self.stopped {
                self.keys.pop();
                return 0;
            }
            if score > best {
                best = score;
                best_move = MoveKey::of(&m);
                if score > alpha {
                    alpha = score;
                    if alpha >= beta {
                        if quiet {
                            let k = MoveKey::of(&m);
                            if self.killers[ply][0] != k {
                                self.killers[ply][1] = self.killers[ply][0];
                                self.killers[ply][0] = k;
                            }
                            let h = &mut self.history[pos.turn() as usize][m.from().idx()]
                                [m.to().idx()];
                            *h = (*h + depth * depth).min(700_000);
                        }
                        break;
                    }
                }
            }
        }
        self.keys.pop();
        let bound = if best >= beta {
            Bound::Lower
        } else if best > original_alpha {
            Bound::Exact
        } else {
            Bound::Upper
        };
        self.tt
            .store(tt_key, best_move, to_tt(best, ply), depth, bound);
        best
    }

    fn quiesce(&mut self, pos: &Position, mut alpha: i32, beta: i32, ply: usize) -> i32 {
        self.count_node();
        if self.stopped {
            return 0;
        }
        if let Some(loser) = pos.exploded_king() {
            return if loser == pos.turn() {
                -MATE + ply as i32
            } else {
                MATE - ply as i32
            };
        }
        if ply >= MAX_PLY - 1 {
            return self.eval.evaluate(pos);
        }
        let in_check = pos.is_check();
        let stand = if in_check {
            -MATE + ply as i32
        } else {
            let stand = self.eval.evaluate(pos);
            if stand >= beta {
                return stand;
            }
            alpha = alpha.max(stand);
            stand
        };
        let mut moves = MoveList::new();
        pos.legal_moves(&mut moves);
        if moves.is_empty() {
            return if in_check { -MATE + ply as i32 } else { 0 };
        }
        let mut scores = [0i32; MAX_LEGAL_MOVES];
        let mut n = 0;
        for i in 0..moves.len() {
            let m = moves[i];
            let tactical = m.is_capture() || m.promotion() == Some(Role::Queen);
            if !in_check && !tactical {
                continue;
            }
            let gain = match m.capture() {
                Some(victim) => self.capture_gain(pos, &m, victim),
                None => eval::order_value(self.variant, Role::Queen),
            };
            // Delta pruning: a capture that cannot lift the score near alpha is skipped.
            if !in_check && stand + self.max_gain(&m, gain) + 200 < alpha {
                continue;
            }
            moves[n] = m;
            scores[n] = gain;
            n += 1;
        }
        let mut best = stand;
        for i in 0..n {
            let mut pick = i;
            for j in i + 1..n {
                if scores[j] > scores[pick] {
                    pick = j;
                }
            }
            moves.swap(i, pick);
            scores.swap(i, pick);
            let m = moves[i];
            let mut child = *pos;
            self.play(&mut child, &m);
            let score = -self.quiesce(&child, -beta, -alpha, ply + 1);
            if self.stopped {
                return 0;
            }
            if score > best {
                best = score;
                if score > alpha {
                    alpha = score;
                    if alpha >= beta {
                        break;
                    }
                }
            }
        }
        best
    }

    /// The most a capture can gain, for delta pruning: the victim (standard, hidden) or the
    /// explosion's gain (atomic).
    #[inline]
    fn max_gain(&self, m: &Move, gain: i32) -> i32 {
        match (self.variant, m.capture()) {
            (Variant::Atomic, _) => gain,
            (_, Some(victim)) => {
                eval::order_value(self.variant, victim)
                    + m.promotion()
                        .map_or(0, |p| eval::order_value(self.variant, p))
            }
            (_, None) => gain,
        }
    }

    /// Iterative deepening over `root_moves` (the legal moves of `pos`) up to `max_depth`.
    ///
    /// With `margin` 0 the root is a principal variation search: only the best score is
    /// exact. With a margin every move is searched with the window (best − margin, ∞), so
    /// the scores of all moves within the margin of the best are exact — what the
    /// imprecise levels and the hidden-chess aggregation need.
    pub(crate) fn run(
        &mut self,
        pos: &Position,
        root_moves: &[Move],
        max_depth: u32,
        margin: i32,
    ) -> RootResult {
        let mut list: Vec<RootMove> = root_moves
            .iter()
            .map(|&mv| RootMove { mv, score: 0 })
            .collect();
        let mut order: Vec<(i32, usize)> = list
            .iter()
            .enumerate()
            .map(|(i, rm)| (-self.order_score(pos, &rm.mv, MoveKey::NONE, 0), i))
            .collect();
        order.sort();
        list = order.iter().map(|&(_, i)| list[i]).collect();
        let root_key = rep_key(pos);
        let mut completed = 0;
        for depth in 1..=max_depth.min(MAX_DEPTH) {
            let mut best = -INF;
            let mut done = 0;
            let mut fresh = Vec::with_capacity(list.len());
            self.keys.push(root_key);
            for (i, rm) in list.iter().enumerate() {
                let mut child = *pos;
                self.play(&mut child, &rm.mv);
                let d = depth as i32 - 1;
                let score = if i == 0 {
                    -self.negamax(&child, d, -INF, INF, 1)
                } else if margin == 0 {
                    let mut s = -self.negamax(&child, d, -best - 1, -best, 1);
                    if s > best && !self.stopped {
                        s = -self.negamax(&child, d, -INF, -best, 1);
                    }
                    s
                } else {
                    let lower = best - margin;
                    -self.negamax(&child, d, -INF, -lower, 1)
                };
                if self.stopped {
                    break;
                }
                fresh.push(score);
                best = best.max(score);
                done += 1;
            }
            self.keys.pop();
            if done == 0 {
                break;
            }
            // Moves this iteration did not reach keep their older score, but never above
            // what the completed ones found.
            for (i, rm) in list.iter_mut().enumerate() {
                rm.score = match fresh.get(i) {
                    Some(&s) => s,
                    None => rm.score.min(best - 1),
                };
            }
            list.sort_by_key(|rm| -rm.score);
            if done == list.len() {
                completed = depth;
            }
            if self.stopped {
                break;
            }
            // A forced mate found with room to spare: deeper iterations change nothing.
            if best.abs() > MATE_BOUND && (MATE - best.abs()) < depth as i32 {
                break;
            }
        }
        RootResult {
            moves: list,
            depth: completed,
            nodes: self.nodes,
        }
    }
}
