//! A gateway's followers' chores, done for all of them at once.
//!
//! Every follow of a game on this gateway is registered here while it lasts. Each presence
//! interval one task sends game-session a single `Tick` for the whole gateway: every seated
//! player present in its game, and every game none of whose followers heard a frame in
//! the interval, with the last version relayed. game-session records the presence and
//! answers which of those quiet games are further on in Redis (a version written whose
//! event was never published: a game-session that died between its compare-and-set and
//! its publish); only their followers wake, to catch up from the log. An idle player so
//! costs a share of one call per gateway per interval, not a call (and a game read) of its
//! own. If the tick fails, every quiet follower catches up by itself, as it would have
//! alone (with its retries, then `unavailable` to its client).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use frontier_platform::{GameId, Shutdown};
use frontier_proto::gamesession::v1 as pb;
use frontier_rules::Color;

use crate::sessions::Sessions;

/// Entries of each kind sent in one `Tick` (game-session takes at most 5,000).
const TICK_CHUNK: usize = 2_000;

/// A game's id as the tick's request carries it, written straight into a string of its
/// size (not through `core::fmt`: once per entry of every tick).
fn id_text(game: &GameId) -> String {
    let mut text = String::with_capacity(uuid::fmt::Hyphenated::LENGTH);
    game.push_to(&mut text);
    text
}

/// One follow, as the tick sees it.
pub trait Followed: Send + Sync {
    /// The game followed.
    fn game(&self) -> GameId;
    /// The follower's seat, if it is a player of the game.
    fn seat(&self) -> Option<Color>;
    /// The follower's player id (for a game-session too old to take a `Tick`).
    fn player(&self) -> &str;
    /// Whether a frame came since the last call (and starts a new interval).
    fn heard_since_last(&self) -> bool;
    /// The last version relayed to the follower, if any.
    fn relayed(&self) -> Option<u64>;
    /// The game is further on than the follower has seen: catch up from the log.
    fn behind(&self);
}

/// The follows of this gateway.
#[derive(Clone, Default)]
pub struct Followers {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    next: AtomicU64,
    follows: Mutex<HashMap<u64, Weak<dyn Followed>>>,
}

/// A follow's place in [`Followers`]; dropping it removes the follow.
pub struct Registered {
    inner: Weak<Inner>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            inner.lock().remove(&self.id);
        }
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Weak<dyn Followed>>> {
        self.follows.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What one tick asks, gathered from the follows.
#[derive(Debug, Default, PartialEq)]
pub struct Gathered {
    /// Seats present, once each.
    pub present: Vec<(GameId, Color)>,
    /// Quiet games with the lowest version relayed to any of their followers.
    pub quiet: Vec<(GameId, u64)>,
}

impl Followers {
    /// Registers a follow for as long as the returned guard lives.
    pub fn add(&self, follow: Arc<dyn Followed>) -> Registered {
        let id = self.inner.next.fetch_add(1, Ordering::Relaxed);
        self.inner.lock().insert(id, Arc::downgrade(&follow));
        Registered {
            inner: Arc::downgrade(&self.inner),
            id,
        }
    }

    /// How many follows are registered.
    pub fn len(&self) -> usize {
        self.inner.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn live(&self) -> Vec<Arc<dyn Followed>> {
        self.inner
            .lock()
            .values()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// Starts an interval: the present seats and the quiet games. A quiet follow that has
    /// relayed nothing yet is told to catch up at once (there is no version to compare).
    pub fn gather(&self) -> (Gathered, Vec<Arc<dyn Followed>>) {
        let follows = self.live();
        // Each game's id as the number its bytes make read big-endian: it sorts as the
        // bytes do, and so as the id's lower-case hyphenated text, and compares in an
        // instruction where the bytes took a call.
        let mut present = Vec::with_capacity(follows.len());
        let mut quiet = Vec::new();
        let mut waiting = Vec::new();
        for f in follows {
            if let Some(color) = f.seat() {
                present.push((f.game().0.as_u128(), color));
            }
            if f.heard_since_last() {
                continue;
            }
            match f.relayed() {
                Some(v) => {
                    quiet.push((f.game().0.as_u128(), v));
                    waiting.push(f);
                }
                None => f.behind(),
            }
        }
        // Sorted, then each seat kept once and each game at its lowest version: no hash
        // set or map (which hashed every follow of the gateway every interval), and the
        // games in the order of their ids as text.
        present.sort_unstable();
        present.dedup();
        quiet.sort_unstable();
        quiet.dedup_by_key(|(game, _)| *game);
        let game = |id: u128| GameId(uuid::Uuid::from_u128(id));
        let gathered = Gathered {
            present: present.into_iter().map(|(g, c)| (game(g), c)).collect(),
            quiet: quiet.into_iter().map(|(g, v)| (game(g), v)).collect(),
        };
        (gathered, waiting)
    }

    /// One tick: gathers, asks game-session, wakes the followers of games found behind
    /// (every quiet one if game-session could not answer).
    pub async fn tick(&self, sessions: &Sessions) {
        let (gathered, quiet) = self.gather();
        if gathered.present.is_empty() && gathered.quiet.is_empty() {
            return;
        }
        let mut behind: HashSet<GameId> = HashSet::new();
        let mut failed = false;
        let (mut present, mut waiting) = (gathered.present.as_slice(), gathered.quiet.as_slice());
        while !present.is_empty() || !waiting.is_empty() {
            let (p, rest_p) = present.split_at(present.len().min(TICK_CHUNK));
            let (q, rest_q) = waiting.split_at(waiting.len().min(TICK_CHUNK));
            (present, waiting) = (rest_p, rest_q);
            let request = pb::TickRequest {
                present: p
                    .iter()
                    .map(|(game, color)| pb::SeatPresence {
                        game_id: id_text(game),
                        seat: frontier_platform::convert::seat_of(frontier_rules::Audience::Player(
                            *color,
                        )) as i32,
                    })
                    .collect(),
                quiet: q
                    .iter()
                    .map(|(game, version)| pb::GameVersion {
                        game_id: id_text(game),
                        version: *version,
                    })
                    .collect(),
            };
            match sessions.clone().tick(request).await {
                Ok(answer) => behind.extend(
                    answer
                        .into_inner()
                        .behind
                        .iter()
                        .filter_map(|g| g.parse::<GameId>().ok()),
                ),
                Err(status) if status.code() == tonic::Code::Unimplemented => {
                    // A game-session of an earlier release (a rolling upgrade): each seat's
                    // presence on its own, as that release's gateways did.
                    self.presence_one_by_one(sessions).await;
                    behind.extend(q.iter().map(|(g, _)| *g));
                    break;
                }
                Err(status) => {
                    tracing::debug!(%status, "the presence tick failed");
                    metrics::counter!("frontier_gateway_tick_errors_total").increment(1);
                    failed = true;
                    // This chunk's quiet games catch up on their own.
                    behind.extend(q.iter().map(|(g, _)| *g));
                }
            }
        }
        if failed {
            tracing::debug!("quiet followers catch up by themselves");
        }
        for f in quiet {
            if behind.contains(&f.game()) {
                f.behind();
            }
        }
    }

    /// Presence reported per seat (`Presence`), for a game-session that has no `Tick`.
    async fn presence_one_by_one(&self, sessions: &Sessions) {
        for f in self.live() {
            if f.seat().is_none() {
                continue;
            }
            let request = pb::PresenceRequest {
                game_id: f.game().to_string(),
                player_id: f.player().to_owned(),
            };
            if let Err(status) = sessions.clone().presence(request).await {
                tracing::debug!(%status, "presence report failed");
            }
        }
    }

    /// Ticks every `interval` until `shutdown`.
    pub async fn run(self, sessions: Sessions, interval: Duration, shutdown: Shutdown) {
        let mut tick = tokio::time::interval(interval.max(Duration::from_millis(10)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                _ = shutdown.wait() => return,
                _ = tick.tick() => {}
            }
            self.tick(&sessions).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    struct Fake {
        game: GameId,
        seat: Option<Color>,
        heard: AtomicBool,
        relayed: Option<u64>,
        woken: AtomicBool,
    }

    impl Followed for Fake {
        fn game(&self) -> GameId {
            self.game
        }
        fn seat(&self) -> Option<Color> {
            self.seat
        }
        fn player(&self) -> &str {
            "p"
        }
        fn heard_since_last(&self) -> bool {
            self.heard.swap(false, Ordering::AcqRel)
        }
        fn relayed(&self) -> Option<u64> {
            self.relayed
        }
        fn behind(&self) {
            self.woken.store(true, Ordering::Release);
        }
    }

    fn fake(game: GameId, seat: Option<Color>, heard: bool, relayed: Option<u64>) -> Arc<Fake> {
        Arc::new(Fake {
            game,
            seat,
            heard: AtomicBool::new(heard),
            relayed,
            woken: AtomicBool::new(false),
        })
    }

    #[test]
    fn a_tick_gathers_each_seat_once_and_each_quiet_game_at_its_lowest_version() {
        let followers = Followers::default();
        let (a, b) = (GameId::new(), GameId::new());
        let white = fake(a, Some(Color::White), false, Some(7));
        let white_again = fake(a, Some(Color::White), false, Some(5));
        let black = fake(a, Some(Color::Black), true, Some(7));
        let spectator = fake(b, None, true, Some(3));
        let fresh = fake(b, Some(Color::Black), false, None);
        let _guards: Vec<_> = [&white, &white_again, &black, &spectator, &fresh]
            .into_iter()
            .map(|f| followers.add(f.clone() as Arc<dyn Followed>))
            .collect();
        let (gathered, quiet) = followers.gather();
        let mut expected_present = vec![(a, Color::White), (a, Color::Black), (b, Color::Black)];
        expected_present.sort_unstable_by_key(|(g, c)| (g.to_string(), *c));
        assert_eq!(gathered.present, expected_present);
        assert_eq!(gathered.quiet, vec![(a, 5)], "b was heard; a's lowest is 5");
        assert_eq!(
            quiet.len(),
            2,
            "both of a's quiet followers wait for the answer"
        );
        assert!(
            fresh.woken.load(Ordering::Acquire),
            "a follow with nothing relayed catches up at once"
        );
        assert!(!white.woken.load(Ordering::Acquire));
        // The next interval: nobody heard anything.
        let (gathered, _) = followers.gather();
        assert_eq!(gathered.quiet.len(), 2, "a and b are both quiet now");
    }

    #[test]
    fn games_are_gathered_in_the_order_of_their_ids_as_text() {
        let followers = Followers::default();
        // Random (v4) ids as well as time-ordered (v7) ones: every byte varies.
        let games: Vec<GameId> = (0..64)
            .map(|i| {
                if i % 2 == 0 {
                    GameId(uuid::Uuid::new_v4())
                } else {
                    GameId::new()
                }
            })
            .collect();
        let follows: Vec<_> = games
            .iter()
            .flat_map(|&g| {
                [
                    fake(g, Some(Color::Black), false, Some(2)),
                    fake(g, Some(Color::White), false, Some(1)),
                ]
            })
            .collect();
        let _guards: Vec<_> = follows
            .iter()
            .map(|f| followers.add(f.clone() as Arc<dyn Followed>))
            .collect();
        let (gathered, _) = followers.gather();
        let mut present: Vec<(GameId, Color)> = games
            .iter()
            .flat_map(|&g| [(g, Color::White), (g, Color::Black)])
            .collect();
        present.sort_unstable_by_key(|(g, c)| (g.to_string(), *c));
        assert_eq!(gathered.present, present);
        let mut quiet: Vec<(GameId, u64)> = games.iter().map(|&g| (g, 1)).collect();
        quiet.sort_unstable_by_key(|(g, _)| g.to_string());
        assert_eq!(gathered.quiet, quiet);
    }

    #[test]
    fn a_tick_writes_each_game_id_as_its_text() {
        for game in [
            GameId::new(),
            GameId(uuid::Uuid::new_v4()),
            GameId(uuid::Uuid::max()),
        ] {
            assert_eq!(id_text(&game), game.to_string());
        }
    }

    #[test]
    fn a_dropped_follow_leaves_the_tick() {
        let followers = Followers::default();
        let f = fake(GameId::new(), Some(Color::White), false, Some(1));
        let guard = followers.add(f.clone() as Arc<dyn Followed>);
        assert_eq!(followers.len(), 1);
        drop(guard);
        assert!(followers.is_empty());
        let (gathered, quiet) = followers.gather();
        assert_eq!(gathered, Gathered::default());
        assert!(quiet.is_empty());
    }
}
