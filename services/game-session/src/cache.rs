//! The last state this instance committed of each game it recently changed, so that the
//! next action on that game skips the store's read and the decoding of its whole record.
//!
//! Correctness does not rest on the cache: an action on a cached state is still stored by a
//! compare-and-set on its version, so if any other instance changed the game in between,
//! the write is refused, the entry is gone (it was taken out to be used), and the action
//! is decided again on a fresh read. An entry is taken out for use (never shared), put back
//! only after a successful write at the version it was written at, and never for a
//! finished game (whose key expires in the store; a read then says it is gone).

use std::collections::HashMap;
use std::sync::Mutex;

use frontier_platform::GameId;

use crate::storage::Loaded;

/// Games kept by default: each holds a game's live state (a few KiB for a long game).
pub const DEFAULT_CAPACITY: usize = 8192;

/// Committed states by game, bounded.
pub struct StateCache {
    games: Mutex<HashMap<GameId, (u64, Loaded)>>,
    capacity: usize,
}

impl StateCache {
    /// A cache of at most `capacity` games (0 disables it).
    pub fn new(capacity: usize) -> StateCache {
        StateCache {
            games: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// Takes `game`'s cached state and version out, if there is one.
    pub fn take(&self, game: &GameId) -> Option<(u64, Loaded)> {
        self.lock().remove(game)
    }

    /// Keeps `live`, just stored at `version`. When full, an arbitrary entry makes room.
    pub fn put(&self, game: GameId, version: u64, live: Loaded) {
        if self.capacity == 0 || live.is_finished() {
            return;
        }
        let mut games = self.lock();
        if games.len() >= self.capacity
            && !games.contains_key(&game)
            && let Some(evicted) = games.keys().next().copied()
        {
            games.remove(&evicted);
        }
        games.insert(game, (version, live));
    }

    /// Games cached now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<GameId, (u64, Loaded)>> {
        self.games.lock().unwrap_or_else(|e| e.into_inner())
    }
}
