//! Tickets in memory, for the single-process mode (`frontier dev`): the same semantics as
//! the Redis scripts in [`store`](crate::store), each step done under one lock instead of
//! one script. A ticket waits in every pool it names exactly while no pairing holds it, so
//! the pools are not stored apart from the tickets.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use frontier_pairing::Pool;
use frontier_platform::time::Clock;

use crate::store::{
    Cancelled, HISTORY_TTL, LAPSED_PER_STEP, NOTICE_TTL, Placed, RECENT_COLORS, RECENT_WAITS,
    StoreError, TicketStore,
};
use crate::ticket::{MatchRecord, Seat, StoredTicket};

/// A stored ticket and what holds it.
struct Entry {
    ticket: StoredTicket,
    /// The match id of the pairing holding it.
    claimed: Option<String>,
    /// Cancelled while held: it does not come back if the pairing is given up.
    cancelled: bool,
}

/// A player's recent matchmade games.
struct History {
    opponent: String,
    /// Latest first, `true` for White.
    colors: VecDeque<bool>,
    /// When it is forgotten (Unix ms).
    expires_ms: u64,
}

#[derive(Default)]
struct State {
    /// By player, in player order (the order [`TicketStore::waiting`] answers in).
    tickets: BTreeMap<String, Entry>,
    /// Claimed pairings until their game exists.
    matches: HashMap<String, MatchRecord>,
    /// Match id → when an instance may next try to create its game.
    pending: HashMap<String, u64>,
    /// Player → (latest notice, expires at).
    notices: HashMap<String, (String, u64)>,
    /// Player → when their seek lapses.
    leaving: HashMap<String, u64>,
    /// Pool key → latest times to pair, newest first.
    waits: HashMap<String, VecDeque<u64>>,
    history: HashMap<String, History>,
}

/// The tickets in this process's memory. Cloning shares them.
#[derive(Clone)]
pub struct MemoryTickets {
    state: Arc<Mutex<State>>,
    clock: Arc<dyn Clock>,
}

impl MemoryTickets {
    /// Empty; `clock` expires notices and histories as Redis's key expiry would.
    pub fn new(clock: Arc<dyn Clock>) -> MemoryTickets {
        MemoryTickets {
            state: Arc::default(),
            clock,
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.clock.now_ms()).unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves the state as one whole step left it: every
        // step checks first and then writes without anything that can fail in between.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl TicketStore for MemoryTickets {
    async fn seek(&self, ticket: &StoredTicket) -> Result<Placed, StoreError> {
        let mut state = self.lock();
        let player = &ticket.seeker.id;
        let replaced = match state.tickets.get(player) {
            Some(current) if current.claimed.is_some() => return Ok(Placed::Matching),
            Some(_) => Placed::Replaced,
            None => Placed::New,
        };
        state.tickets.insert(
            player.clone(),
            Entry {
                ticket: ticket.clone(),
                claimed: None,
                cancelled: false,
            },
        );
        state.leaving.remove(player);
        // A new seek: the last one's notice is forgotten (as the Redis store does).
        state.notices.remove(player);
        Ok(replaced)
    }

    async fn cancel(
        &self,
        player: &str,
        generation: Option<&str>,
    ) -> Result<Cancelled, StoreError> {
        let now = self.now_ms();
        let mut state = self.lock();
        state.leaving.remove(player);
        let Some(current) = state.tickets.get_mut(player) else {
            let matched = generation.is_none()
                && state.notices.get(player).is_some_and(|(_, exp)| *exp > now);
            return Ok(if matched {
                Cancelled::Matched
            } else {
                Cancelled::Nothing
            });
        };
        if generation.is_some_and(|g| g != current.ticket.generation) {
            return Ok(Cancelled::Nothing);
        }
        if current.claimed.is_some() {
            current.cancelled = true;
            return Ok(Cancelled::TooLate);
        }
        state.tickets.remove(player);
        Ok(Cancelled::Cancelled)
    }

    async fn ticket(&self, player: &str) -> Result<Option<(StoredTicket, bool)>, StoreError> {
        let state = self.lock();
        Ok(state
            .tickets
            .get(player)
            .map(|e| (e.ticket.clone(), e.claimed.is_some())))
    }

    async fn waiting(&self) -> Result<Vec<StoredTicket>, StoreError> {
        let state = self.lock();
        Ok(state
            .tickets
            .values()
            .filter(|e| e.claimed.is_none())
            .map(|e| e.ticket.clone())
            .collect())
    }

    async fn claim(&self, record: &MatchRecord, retry_at_ms: u64) -> Result<bool, StoreError> {
        let mut state = self.lock();
        let all_there = record.tickets.iter().all(|t| {
            state
                .tickets
                .get(&t.seeker.id)
                .is_some_and(|e| e.ticket.generation == t.generation && e.claimed.is_none())
        });
        if !all_there {
            return Ok(false);
        }
        for t in &record.tickets {
            if let Some(entry) = state.tickets.get_mut(&t.seeker.id) {
                entry.claimed = Some(record.id.clone());
            }
        }
        state.matches.insert(record.id.clone(), record.clone());
        state.pending.insert(record.id.clone(), retry_at_ms);
        Ok(true)
    }

    async fn finish(
        &self,
        record: &MatchRecord,
        notices: &[(String, String)],
        now_ms: u64,
    ) -> Result<bool, StoreError> {
        let expires = self.now_ms().saturating_add(ms(NOTICE_TTL));
        let mut state = self.lock();
        if state.matches.remove(&record.id).is_none() {
            return Ok(false);
        }
        state.pending.remove(&record.id);
        for (player, notice) in notices {
            if state
                .tickets
                .get(player)
                .is_some_and(|e| e.claimed.as_deref() == Some(record.id.as_str()))
            {
                state.tickets.remove(player);
            }
            state
                .notices
                .insert(player.clone(), (notice.clone(), expires));
        }
        let waits = state.waits.entry(record.pool.clone()).or_default();
        for ticket in &record.tickets {
            waits.push_front(now_ms.saturating_sub(ticket.since_ms));
        }
        waits.truncate(RECENT_WAITS);
        let forget_at = self.now_ms().saturating_add(ms(HISTORY_TTL));
        let seats = [
            (&record.white, true, &record.black),
            (&record.black, false, &record.white),
        ];
        for (seat, white, other) in seats {
            let Seat::Player(seeker) = seat else { continue };
            let opponent = match other {
                Seat::Player(p) => p.id.clone(),
                Seat::Bot(level) => format!("bot:{level}"),
            };
            let history = state
                .history
                .entry(seeker.id.clone())
                .or_insert_with(|| History {
                    opponent: String::new(),
                    colors: VecDeque::new(),
                    expires_ms: 0,
                });
            if history.expires_ms <= self.now_ms() {
                history.colors.clear();
            }
            history.opponent = opponent;
            history.colors.push_front(white);
            history.colors.truncate(RECENT_COLORS);
            history.expires_ms = forget_at;
        }
        Ok(true)
    }

    async fn restore(
        &self,
        record: &MatchRecord,
        lease_until: Option<u64>,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        if !state.matches.contains_key(&record.id) {
            return Ok(false);
        }
        if let Some(lease) = lease_until
            && state.pending.get(&record.id) != Some(&lease)
        {
            return Ok(false);
        }
        for t in &record.tickets {
            let held = state
                .tickets
                .get(&t.seeker.id)
                .filter(|e| e.claimed.as_deref() == Some(record.id.as_str()))
                .map(|e| e.cancelled);
            match held {
                Some(true) => {
                    state.tickets.remove(&t.seeker.id);
                }
                Some(false) => {
                    // Back in its pools, with the wait it had (its since is unchanged).
                    if let Some(entry) = state.tickets.get_mut(&t.seeker.id) {
                        entry.claimed = None;
                    }
                }
                None => {}
            }
        }
        state.matches.remove(&record.id);
        state.pending.remove(&record.id);
        Ok(true)
    }

    async fn due(
        &self,
        now_ms: u64,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<MatchRecord>, StoreError> {
        let mut state = self.lock();
        let mut due: Vec<(u64, String)> = state
            .pending
            .iter()
            .filter(|(_, at)| **at <= now_ms)
            .map(|(id, at)| (*at, id.clone()))
            .collect();
        due.sort();
        due.truncate(limit);
        let mut records = Vec::with_capacity(due.len());
        for (_, id) in due {
            match state.matches.get(&id) {
                Some(record) => {
                    records.push(record.clone());
                    state.pending.insert(id, now_ms.saturating_add(ms(lease)));
                }
                None => {
                    state.pending.remove(&id);
                }
            }
        }
        Ok(records)
    }

    async fn notice(&self, player: &str) -> Result<Option<String>, StoreError> {
        let now = self.now_ms();
        let mut state = self.lock();
        match state.notices.get(player) {
            Some((notice, expires)) if *expires > now => Ok(Some(notice.clone())),
            Some(_) => {
                state.notices.remove(player);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    async fn history(&self, player: &str) -> Result<(Option<String>, i32), StoreError> {
        let now = self.now_ms();
        let state = self.lock();
        Ok(match state.history.get(player) {
            Some(h) if h.expires_ms > now => (
                Some(h.opponent.clone()),
                h.colors.iter().map(|w| if *w { 1 } else { -1 }).sum(),
            ),
            _ => (None, 0),
        })
    }

    async fn recent_waits(&self, pool: &str) -> Result<Vec<u64>, StoreError> {
        let state = self.lock();
        Ok(state
            .waits
            .get(pool)
            .map(|w| w.iter().copied().collect())
            .unwrap_or_default())
    }

    async fn leave(&self, player: &str, at_ms: u64) -> Result<(), StoreError> {
        self.lock().leaving.insert(player.to_owned(), at_ms);
        Ok(())
    }

    async fn stay(&self, player: &str) -> Result<(), StoreError> {
        self.lock().leaving.remove(player);
        Ok(())
    }

    async fn lapsed(&self, now_ms: u64) -> Result<Vec<String>, StoreError> {
        let state = self.lock();
        let mut lapsed: Vec<(u64, &String)> = state
            .leaving
            .iter()
            .filter(|(_, at)| **at <= now_ms)
            .map(|(player, at)| (*at, player))
            .collect();
        lapsed.sort();
        Ok(lapsed
            .into_iter()
            .take(LAPSED_PER_STEP)
            .map(|(_, p)| p.clone())
            .collect())
    }

    async fn waiting_per_pool(&self) -> Result<Vec<(Pool, u64)>, StoreError> {
        let state = self.lock();
        let mut counts: HashMap<&str, u64> = HashMap::new();
        for entry in state.tickets.values().filter(|e| e.claimed.is_none()) {
            for pool in &entry.ticket.pools {
                *counts.entry(pool.as_str()).or_default() += 1;
            }
        }
        Ok(Pool::all()
            .map(|p| {
                let n = counts.get(p.to_string().as_str()).copied().unwrap_or(0);
                (p, n)
            })
            .collect())
    }
}
