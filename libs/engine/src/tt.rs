//! The transposition table: search results keyed by the position's Zobrist key, one
//! allocation per decision, none per node.

use frontier_rules::{Move, Role};

/// What a stored score is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// The exact score.
    Exact,
    /// At least this (a beta cut-off).
    Lower,
    /// At most this (no move raised alpha).
    Upper,
}

/// A move packed in 16 bits: from, to and promotion. Enough to find it again in the legal
/// move list of the same position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct MoveKey(u16);

impl MoveKey {
    /// The key of `m`.
    #[inline]
    pub(crate) fn of(m: &Move) -> MoveKey {
        let promo = match m.promotion() {
            None => 0,
            Some(Role::Knight) => 1,
            Some(Role::Bishop) => 2,
            Some(Role::Rook) => 3,
            Some(_) => 4,
        };
        MoveKey(
            u16::from(m.from().index()) | (u16::from(m.to().index()) << 6) | (promo << 12) | 0x8000,
        )
    }

    /// No move.
    pub(crate) const NONE: MoveKey = MoveKey(0);
}

#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    key: u64,
    mv: MoveKey,
    score: i16,
    depth: i8,
    bound: u8,
}

/// A hit: the stored move, score, depth and bound.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hit {
    pub(crate) mv: MoveKey,
    pub(crate) score: i32,
    pub(crate) depth: i32,
    pub(crate) bound: Bound,
}

/// A fixed-size, always-replace-if-deeper-or-different table.
pub(crate) struct Table {
    entries: Vec<Entry>,
    mask: usize,
}

impl Table {
    /// A table of `2^bits` entries (16 bytes each).
    pub(crate) fn new(bits: u32) -> Table {
        let size = 1usize << bits;
        Table {
            entries: vec![Entry::default(); size],
            mask: size - 1,
        }
    }

    /// The entry for `key`, if one is stored.
    #[inline]
    pub(crate) fn probe(&self, key: u64) -> Option<Hit> {
        let e = self.entries[(key as usize) & self.mask];
        (e.key == key && e.bound != 0).then(|| Hit {
            mv: e.mv,
            score: i32::from(e.score),
            depth: i32::from(e.depth),
            bound: match e.bound {
                1 => Bound::Exact,
                2 => Bound::Lower,
                _ => Bound::Upper,
            },
        })
    }

    /// Stores a result, replacing the slot unless it holds a deeper result of the same key.
    #[inline]
    pub(crate) fn store(&mut self, key: u64, mv: MoveKey, score: i32, depth: i32, bound: Bound) {
        let slot = &mut self.entries[(key as usize) & self.mask];
        if slot.key == key && i32::from(slot.depth) > depth && bound != Bound::Exact {
            return;
        }
        let mv = if mv == MoveKey::NONE && slot.key == key {
            slot.mv
        } else {
            mv
        };
        *slot = Entry {
            key,
            mv,
            score: score.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16,
            depth: depth.clamp(0, 127) as i8,
            bound: match bound {
                Bound::Exact => 1,
                Bound::Lower => 2,
                Bound::Upper => 3,
            },
        };
    }
}
