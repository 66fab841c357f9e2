//! [`MemoryStore`]: the rating store in memory, for fast tests and the single-process
//! mode. Behaves as [`PgStore`](crate::pg::PgStore) does: one lock makes each game's
//! filing and rating all or nothing, as Postgres's transaction does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use frontier_proto::games::v1::FinishedGame;
use frontier_rules::Variant;
use uuid::Uuid;

use crate::model::{
    CheckedGame, Counts, Cursor, GameLine, GameResult, HistoryPoint, LeaderLine, RecordError,
    Recorded, Standing, rate_pair,
};
use crate::store::{RatingStore, StoreError, check, distinct_where};

#[derive(Default)]
struct State {
    games: HashMap<Uuid, (FinishedGame, CheckedGame)>,
    ratings: HashMap<(Uuid, Variant), Standing>,
    /// Kept in order: by time, then game id.
    history: HashMap<(Uuid, Variant), Vec<HistoryPoint>>,
}

/// Games, ratings and histories in memory (cheap to clone: clones share one store).
#[derive(Clone, Default)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves no half-done game: every change is made
        // after all checks, without anything that can panic in between.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn name_of(game: &FinishedGame, player: Uuid, checked: &CheckedGame) -> String {
    let side = if checked.white == player {
        &game.white
    } else {
        &game.black
    };
    side.as_ref().map(|p| p.name.clone()).unwrap_or_default()
}

impl RatingStore for MemoryStore {
    async fn record_game(&self, game: &FinishedGame) -> Result<Recorded, RecordError> {
        let checked = check(game)?;
        let mut state = self.lock();
        if state.games.contains_key(&checked.id) {
            return Ok(Recorded::Duplicate);
        }
        state.games.insert(checked.id, (game.clone(), checked));
        if checked.rateable {
            let white_key = (checked.white, checked.variant);
            let black_key = (checked.black, checked.variant);
            let white = state.ratings.get(&white_key).copied().unwrap_or_default();
            let black = state.ratings.get(&black_key).copied().unwrap_or_default();
            let (new_white, new_black) = rate_pair(&checked, &white, &black);
            for (key, before, after) in
                [(white_key, white, new_white), (black_key, black, new_black)]
            {
                state.ratings.insert(
                    key,
                    Standing {
                        rating: after,
                        rated_games: before.rated_games + 1,
                        last_rated_at: Some(checked.ended),
                    },
                );
                let points = state.history.entry(key).or_default();
                points.push(HistoryPoint {
                    game_id: checked.id,
                    rating: after.rating,
                    rd: after.rd,
                    at: checked.ended,
                });
                points.sort_by_key(|p| (p.at, p.game_id));
            }
        }
        Ok(Recorded::Stored {
            rated: checked.rateable,
        })
    }

    async fn standings(&self, player: Uuid) -> Result<Vec<(Variant, Standing)>, StoreError> {
        let state = self.lock();
        Ok(Variant::ALL
            .into_iter()
            .filter_map(|v| state.ratings.get(&(player, v)).map(|s| (v, *s)))
            .collect())
    }

    async fn counts(&self, player: Uuid) -> Result<Vec<(Variant, Counts)>, StoreError> {
        let state = self.lock();
        let mut counts: HashMap<Variant, Counts> = HashMap::new();
        for (_, g) in state.games.values() {
            if g.white != player && g.black != player {
                continue;
            }
            let c = counts.entry(g.variant).or_default();
            let won = (g.result == GameResult::White && g.white == player)
                || (g.result == GameResult::Black && g.black == player);
            let lost = (g.result == GameResult::White && g.black == player)
                || (g.result == GameResult::Black && g.white == player);
            c.games += u64::from(g.result != GameResult::Aborted);
            c.wins += u64::from(won);
            c.draws += u64::from(g.result == GameResult::Draw);
            c.losses += u64::from(lost);
        }
        Ok(counts.into_iter().collect())
    }

    async fn games(
        &self,
        player: Uuid,
        variant: Option<Variant>,
        before: Option<Cursor>,
        limit: usize,
    ) -> Result<Vec<GameLine>, StoreError> {
        let state = self.lock();
        let mut lines: Vec<GameLine> = state
            .games
            .values()
            .filter(|(_, g)| g.white == player || g.black == player)
            .filter(|(_, g)| variant.is_none_or(|v| v == g.variant))
            .filter(|(_, g)| before.is_none_or(|c| c.precedes(g.ended, g.id)))
            .map(|(game, g)| GameLine {
                id: g.id,
                variant: g.variant,
                rated: game.rated,
                white: (g.white, name_of(game, g.white, g)),
                black: (g.black, name_of(game, g.black, g)),
                result: game.result.clone(),
                outcome: game.outcome.clone(),
                ended: g.ended,
            })
            .collect();
        lines.sort_by_key(|l| std::cmp::Reverse((l.ended, l.id)));
        lines.truncate(limit);
        Ok(lines)
    }

    async fn history(
        &self,
        player: Uuid,
        variant: Variant,
    ) -> Result<Vec<HistoryPoint>, StoreError> {
        Ok(self
            .lock()
            .history
            .get(&(player, variant))
            .cloned()
            .unwrap_or_default())
    }

    async fn leaderboard(
        &self,
        variant: Variant,
        max_rd: f64,
        limit: usize,
    ) -> Result<Vec<LeaderLine>, StoreError> {
        let state = self.lock();
        let mut lines: Vec<LeaderLine> = state
            .ratings
            .iter()
            .filter(|((_, v), s)| *v == variant && s.rating.rd <= max_rd)
            .map(|((player, _), s)| {
                let name = state
                    .history
                    .get(&(*player, variant))
                    .and_then(|points| points.last())
                    .and_then(|p| state.games.get(&p.game_id))
                    .map(|(game, g)| name_of(game, *player, g))
                    .unwrap_or_default();
                LeaderLine {
                    player_id: *player,
                    name,
                    rating: s.rating.rating,
                    rd: s.rating.rd,
                    rated_games: s.rated_games,
                }
            })
            .collect();
        lines.sort_by(|a, b| {
            b.rating
                .total_cmp(&a.rating)
                .then(a.player_id.cmp(&b.player_id))
        });
        lines.truncate(limit);
        Ok(lines)
    }

    async fn players_with_games(&self, players: &[Uuid]) -> Result<Vec<Uuid>, StoreError> {
        let state = self.lock();
        Ok(distinct_where(players, |p| {
            state
                .games
                .values()
                .any(|(_, g)| g.white == *p || g.black == *p)
        }))
    }

    async fn game(&self, id: Uuid) -> Result<Option<FinishedGame>, StoreError> {
        Ok(self.lock().games.get(&id).map(|(game, _)| game.clone()))
    }
}
