//! The matchmaker: seeks and cancels on the tickets (a [`TicketStore`]), and the pairing step that any
//! number of instances run at once.
//!
//! One step: lapse the seeks of players gone longer than the grace period; read every
//! waiting ticket; let the pure pairing library choose pairs and bot fallbacks; claim each
//! with one atomic script (a pairing that lost a race to another instance changes nothing
//! and is counted as a conflict); then create each claimed pairing's game through
//! [`GameMaker`], idempotent by match id. A created game settles the pairing (tickets done,
//! notices kept and published); a game-session that could not be reached gives it up (both
//! tickets back with their original wait); an answer that may have come after the game was
//! made leaves the pairing pending, and whichever instance next takes it over (after the
//! lease) asks again under the same match id — so a matchmaker that dies between pairing and
//! creating leaves a pairing that is created once, by someone else.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use frontier_pairing::{PairingConfig, Pool, Ratings, estimate_wait, pair};
use frontier_platform::time::Clock;
use serde::{Deserialize, Serialize};

use crate::store::{Cancelled, Placed, RedisTickets, StoreError, TicketStore};
use crate::ticket::{MatchRecord, Seat, Seeker, StoredTicket};

/// Games created at once by one instance.
pub const CONCURRENT_CREATIONS: usize = 64;

/// What became of one claimed pairing.
enum Settled {
    /// Its game exists and it is settled.
    Created,
    /// Given up; its tickets are back.
    Restored,
    /// Still pending (outcome unknown, or settled by someone else meanwhile).
    Pending,
}

/// Most pools one seek may name.
pub const MAX_POOLS_PER_SEEK: usize = 8;

/// Why a game could not be created.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CreateError {
    /// No game-session was reached: nothing was created. The pairing is given up.
    #[error("game-session unreachable: {0}")]
    Unreachable(String),
    /// game-session refused the pairing for good (a bad request): nothing was created.
    #[error("game-session refused: {0}")]
    Refused(String),
    /// The outcome is unknown (a timeout after sending): the game may exist. The pairing
    /// stays pending and is asked again under the same match id.
    #[error("game creation outcome unknown: {0}")]
    Unknown(String),
}

/// Starts matchmade games: game-session's `StartMatch`, idempotent by match id.
pub trait GameMaker: Send + Sync + 'static {
    /// Creates (or finds, for a match id already used) the game of `record`; its id.
    fn create(
        &self,
        record: &MatchRecord,
    ) -> impl Future<Output = Result<String, CreateError>> + Send;
}

/// Tells a player's connections (the per-player NATS subject).
pub trait Notifier: Send + Sync + 'static {
    /// Publishes `notice` (JSON) to `player`; at most once (a lost one is found by `status`).
    fn notify(&self, player: &str, notice: &MatchedNotice) -> impl Future<Output = ()> + Send;
}

/// A player's ratings (the rating service; 1500 where there is none).
pub trait RatingSource: Send + Sync + 'static {
    /// Ratings in each variant. On failure: `None`, and the seek uses 1500 (a seek is not
    /// refused because ratings are briefly unavailable).
    fn ratings(&self, player: &str) -> impl Future<Output = Option<Ratings>> + Send;
}

/// Every player is rated 1500 (no rating service configured).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRatings;

impl RatingSource for NoRatings {
    async fn ratings(&self, _player: &str) -> Option<Ratings> {
        Some(Ratings::NEW)
    }
}

/// The opponent in a `matched` notice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opponent {
    /// Player id (a bot's: the fixed id of its level, `PlayerId::bot`).
    pub id: String,
    /// Name (`Frontier Bot · Easy` for a bot).
    pub name: String,
    /// A guest.
    pub guest: bool,
    /// A bot: always labelled.
    pub bot: bool,
    /// A bot's level (`easy`, `medium`, `hard`).
    pub bot_level: Option<String>,
}

/// What a player is told when matched (the gateway's `matched` frame).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchedNotice {
    /// The match id.
    pub match_id: String,
    /// The game.
    pub game_id: String,
    /// The pool key it was paired in.
    pub pool: String,
    /// `white` or `black`.
    pub color: String,
    /// Who plays the other side.
    pub opponent: Opponent,
    /// Rated (never against a bot).
    pub rated: bool,
}

/// Refusals of a seek or cancel; the gRPC edge maps each to a client error code.
#[derive(Debug, thiserror::Error)]
pub enum MatchError {
    /// No pool, too many, a duplicate, or one that does not exist.
    #[error("{0}")]
    BadField(String),
    /// A guest asked for a rated pool.
    #[error("guests play casual games only")]
    GuestRated,
    /// The player was just paired and the game is being created.
    #[error("you have just been matched; your game is starting")]
    AlreadyMatched,
    /// Redis failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a seek answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeekAnswer {
    /// The pools, as keys.
    pub pools: Vec<String>,
    /// Median time to pair of recent pairings in the pools (ms), if any.
    pub estimated_wait_ms: Option<u64>,
    /// It replaced a standing seek.
    pub replaced: bool,
}

/// A player's state, for `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The pools of the standing seek and since when (Unix ms), if any.
    pub seeking: Option<(Vec<String>, u64)>,
    /// The `matched` notice of the player's latest seek, of the last 10 minutes.
    pub matched: Option<MatchedNotice>,
    /// The latest seek has been paired and its game is being made.
    pub matching: bool,
}

/// Timing of the steps.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Between pairing steps.
    pub interval: Duration,
    /// How long a pairing is left to its instance before another may create its game.
    pub lease: Duration,
    /// How long a seek outlives its player's last connection.
    pub grace: Duration,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            interval: Duration::from_millis(100),
            lease: Duration::from_secs(5),
            grace: Duration::from_secs(10),
        }
    }
}

/// What one step did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepReport {
    /// Pairs of people claimed.
    pub paired: usize,
    /// Bot fallbacks claimed.
    pub bots: usize,
    /// Claims that lost a race to another instance.
    pub conflicts: usize,
    /// Games created (this step's pairings and earlier ones taken over).
    pub created: usize,
    /// Pairings given up (tickets back in their pools).
    pub restored: usize,
    /// Seeks lapsed after their player left.
    pub lapsed: usize,
}

/// The matchmaker of one instance, over its ticket store `T`.
pub struct Matchmaker<G, N, R, T = RedisTickets> {
    store: T,
    games: G,
    notifier: N,
    ratings: R,
    config: PairingConfig,
    clock: Arc<dyn Clock>,
    settings: Settings,
}

fn now(clock: &dyn Clock) -> u64 {
    u64::try_from(clock.now_ms()).unwrap_or_default()
}

impl<G: GameMaker, N: Notifier, R: RatingSource, T: TicketStore> Matchmaker<G, N, R, T> {
    /// Over these parts.
    pub fn new(
        store: T,
        games: G,
        notifier: N,
        ratings: R,
        config: PairingConfig,
        clock: Arc<dyn Clock>,
        settings: Settings,
    ) -> Self {
        Matchmaker {
            store,
            games,
            notifier,
            ratings,
            config,
            clock,
            settings,
        }
    }

    /// The settings.
    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// The tickets.
    pub fn store(&self) -> &T {
        &self.store
    }

    /// Places `seeker`'s seek in `pools` (replacing a standing one).
    pub async fn seek(&self, seeker: Seeker, pools: &[Pool]) -> Result<SeekAnswer, MatchError> {
        if pools.is_empty() {
            return Err(MatchError::BadField("pools: name at least one pool".into()));
        }
        if pools.len() > MAX_POOLS_PER_SEEK {
            return Err(MatchError::BadField(format!(
                "pools: at most {MAX_POOLS_PER_SEEK}"
            )));
        }
        let mut seen = HashSet::new();
        if let Some(dup) = pools.iter().find(|p| !seen.insert(**p)) {
            return Err(MatchError::BadField(format!("pools: {dup} is named twice")));
        }
        if seeker.guest && pools.iter().any(|p| p.rated) {
            return Err(MatchError::GuestRated);
        }
        let ratings = self.ratings.ratings(&seeker.id).await.unwrap_or_else(|| {
            metrics::counter!("frontier_matchmaking_rating_lookup_failures_total").increment(1);
            Ratings::NEW
        });
        let (last_opponent, white_balance) = self.store.history(&seeker.id).await?;
        let keys: Vec<String> = pools.iter().map(|p| p.to_string()).collect();
        let ticket = StoredTicket {
            generation: uuid::Uuid::new_v4().to_string(),
            seeker,
            pools: keys.clone(),
            ratings: [ratings.standard, ratings.hidden, ratings.atomic],
            since_ms: now(&*self.clock),
            last_opponent,
            white_balance,
        };
        let replaced = match self.store.seek(&ticket).await? {
            Placed::Matching => return Err(MatchError::AlreadyMatched),
            Placed::Replaced => true,
            Placed::New => false,
        };
        let mut recent = Vec::new();
        for key in &keys {
            recent.extend(self.store.recent_waits(key).await?);
        }
        Ok(SeekAnswer {
            pools: keys,
            estimated_wait_ms: estimate_wait(&recent),
            replaced,
        })
    }

    /// Cancels the player's seek: `true` if one stood and is gone.
    pub async fn cancel(&self, player: &str) -> Result<bool, MatchError> {
        match self.store.cancel(player, None).await? {
            Cancelled::Cancelled => {
                metrics::counter!("frontier_matchmaking_cancellations_total", "reason" => "cancel")
                    .increment(1);
                Ok(true)
            }
            Cancelled::TooLate | Cancelled::Matched => Err(MatchError::AlreadyMatched),
            Cancelled::Nothing => Ok(false),
        }
    }

    /// The player's seek and latest notice; a status also means the player is connected, so
    /// a pending lapse is called off.
    pub async fn status(&self, player: &str) -> Result<Status, MatchError> {
        self.store.stay(player).await?;
        let ticket = self.store.ticket(player).await?;
        let matching = ticket.as_ref().is_some_and(|(_, claimed)| *claimed);
        let seeking = ticket
            .filter(|(_, claimed)| !claimed)
            .map(|(t, _)| (t.pools, t.since_ms));
        let matched = match self.store.notice(player).await? {
            Some(json) => serde_json::from_str(&json).ok(),
            None => None,
        };
        Ok(Status {
            seeking,
            matched,
            matching,
        })
    }

    /// The player's last connection closed: their seek lapses after the grace period.
    pub async fn leave(&self, player: &str) -> Result<(), MatchError> {
        let at = now(&*self.clock) + self.settings.grace.as_millis() as u64;
        self.store.leave(player, at).await?;
        Ok(())
    }

    /// One pairing step (the module's description). `coin` decides even colours.
    pub async fn step(
        &self,
        coin: &mut (dyn FnMut() -> bool + Send),
    ) -> Result<StepReport, StoreError> {
        let mut report = StepReport::default();
        let now_ms = now(&*self.clock);
        for player in self.store.lapsed(now_ms).await? {
            if self.store.cancel(&player, None).await? == Cancelled::Cancelled {
                report.lapsed += 1;
                metrics::counter!("frontier_matchmaking_cancellations_total", "reason" => "disconnect")
                    .increment(1);
            }
            self.store.stay(&player).await?;
        }

        let stored = self.store.waiting().await?;
        let tickets: Vec<_> = stored.iter().map(StoredTicket::for_pairing).collect();
        let step = pair(&tickets, now_ms, &self.config, coin);
        let retry_at = now_ms + self.settings.lease.as_millis() as u64;
        let mut candidates = Vec::new();
        for p in &step.pairs {
            let (white, black) = (&stored[p.white], &stored[p.black]);
            let record = MatchRecord {
                id: uuid::Uuid::now_v7().to_string(),
                pool: p.pool.to_string(),
                rated: p.pool.rated,
                white: Seat::Player(white.seeker.clone()),
                black: Seat::Player(black.seeker.clone()),
                tickets: vec![white.clone(), black.clone()],
                paired_at_ms: now_ms,
            };
            candidates.push(record);
        }
        for b in &step.bots {
            let ticket = &stored[b.ticket];
            let me = Seat::Player(ticket.seeker.clone());
            let bot = Seat::Bot(b.level.name().to_owned());
            let (white, black) = match b.color {
                frontier_rules::Color::White => (me, bot),
                frontier_rules::Color::Black => (bot, me),
            };
            let record = MatchRecord {
                id: uuid::Uuid::now_v7().to_string(),
                pool: b.pool.to_string(),
                rated: false,
                white,
                black,
                tickets: vec![ticket.clone()],
                paired_at_ms: now_ms,
            };
            candidates.push(record);
        }
        // Claims are independent scripts: sent CONCURRENT_CREATIONS at a time, they share
        // the connection's pipeline instead of waiting one round trip each.
        let mut claimed = Vec::new();
        for chunk in candidates.chunks(CONCURRENT_CREATIONS) {
            let mut claims = Vec::with_capacity(chunk.len());
            for record in chunk {
                claims.push(self.store.claim(record, retry_at));
            }
            let outcomes = futures_util::future::join_all(claims).await;
            for (record, outcome) in chunk.iter().zip(outcomes) {
                if !outcome? {
                    report.conflicts += 1;
                    metrics::counter!("frontier_matchmaking_conflicts_total").increment(1);
                    continue;
                }
                if record.tickets.len() == 1 {
                    report.bots += 1;
                    metrics::counter!("frontier_matchmaking_bot_fallbacks_total", "pool" => record.pool.clone())
                        .increment(1);
                } else {
                    report.paired += 1;
                }
                claimed.push(record.clone());
            }
        }
        self.settle_all(
            &claimed,
            Attempt::First {
                lease_until: retry_at,
            },
            &mut report,
        )
        .await?;
        Ok(report)
    }

    /// Takes over pairings whose game is due (left by an instance that died, or whose
    /// creation's outcome was unknown) and creates them under their match id.
    pub async fn retry_pending(&self) -> Result<StepReport, StoreError> {
        let mut report = StepReport::default();
        let now_ms = now(&*self.clock);
        let due = self.store.due(now_ms, self.settings.lease, 64).await?;
        self.settle_all(&due, Attempt::TakeOver, &mut report)
            .await?;
        Ok(report)
    }

    /// Creates the games of `records`, [`CONCURRENT_CREATIONS`] at a time.
    async fn settle_all(
        &self,
        records: &[MatchRecord],
        attempt: Attempt,
        report: &mut StepReport,
    ) -> Result<(), StoreError> {
        for chunk in records.chunks(CONCURRENT_CREATIONS) {
            let mut creations = Vec::with_capacity(chunk.len());
            for record in chunk {
                creations.push(self.settle(record, attempt));
            }
            for outcome in futures_util::future::join_all(creations).await {
                match outcome? {
                    Settled::Created => report.created += 1,
                    Settled::Restored => report.restored += 1,
                    Settled::Pending => {}
                }
            }
        }
        Ok(())
    }

    /// Creates one pairing's game and settles the pairing by the answer.
    ///
    /// Giving a pairing up is safe only when no call for it can still create its game.
    /// `Refused` is final for every call. `Unreachable` (the request never left) is final
    /// only for this call: the claimer gives up only while its own lease still holds (no
    /// one took over, so no other call is in flight — the restore script checks the lease
    /// as a fencing token); an instance that took over never gives up on `Unreachable`
    /// (the claimer's call may still be in flight) and the pairing stays pending until
    /// game-session answers.
    async fn settle(&self, record: &MatchRecord, attempt: Attempt) -> Result<Settled, StoreError> {
        match self.games.create(record).await {
            Ok(game_id) => {
                let notices = notices(record, &game_id);
                let encoded: Vec<(String, String)> = notices
                    .iter()
                    .map(|(player, n)| {
                        (player.clone(), serde_json::to_string(n).unwrap_or_default())
                    })
                    .collect();
                let now_ms = now(&*self.clock);
                let finished = self.store.finish(record, &encoded, now_ms).await?;
                if finished {
                    for ticket in &record.tickets {
                        let wait = now_ms.saturating_sub(ticket.since_ms) as f64 / 1000.0;
                        metrics::histogram!("frontier_matchmaking_time_to_pair_seconds", "pool" => record.pool.clone())
                            .record(wait);
                    }
                }
                // Published after the notices are kept: a player who misses this one
                // finds it with `status`.
                for (player, notice) in &notices {
                    self.notifier.notify(player, notice).await;
                }
                Ok(if finished {
                    Settled::Created
                } else {
                    Settled::Pending
                })
            }
            Err(CreateError::Unknown(why)) => {
                tracing::warn!(match_id = %record.id, %why, "game creation outcome unknown; retried after the lease");
                Ok(Settled::Pending)
            }
            Err(e) => {
                let fence = match (&e, attempt) {
                    (CreateError::Refused(_), _) => Some(None),
                    (CreateError::Unreachable(_), Attempt::First { lease_until }) => {
                        Some(Some(lease_until))
                    }
                    _ => None,
                };
                let Some(fence) = fence else {
                    tracing::warn!(match_id = %record.id, error = %e, "game not created; retried after the lease");
                    return Ok(Settled::Pending);
                };
                if self.store.restore(record, fence).await? {
                    tracing::warn!(match_id = %record.id, error = %e, "game not created; tickets returned");
                    metrics::counter!("frontier_matchmaking_restored_total").increment(1);
                    Ok(Settled::Restored)
                } else {
                    Ok(Settled::Pending)
                }
            }
        }
    }
}

/// Who is creating a pairing's game.
#[derive(Debug, Clone, Copy)]
enum Attempt {
    /// The instance that claimed it, whose lease runs until `lease_until`.
    First {
        /// The lease set by the claim (Unix ms): the restore's fencing token.
        lease_until: u64,
    },
    /// An instance that took it over after a lease ran out.
    TakeOver,
}

/// Each person's notice of a created game.
pub fn notices(record: &MatchRecord, game_id: &str) -> Vec<(String, MatchedNotice)> {
    let seats = [
        (&record.white, "white", &record.black),
        (&record.black, "black", &record.white),
    ];
    seats
        .into_iter()
        .filter_map(|(seat, color, other)| {
            let Seat::Player(me) = seat else { return None };
            let opponent = match other {
                Seat::Player(p) => Opponent {
                    id: p.id.clone(),
                    name: p.name.clone(),
                    guest: p.guest,
                    bot: false,
                    bot_level: None,
                },
                Seat::Bot(level) => {
                    let level = frontier_protocol::BotLevel::parse(level)
                        .unwrap_or(frontier_protocol::BotLevel::Medium);
                    Opponent {
                        id: frontier_platform::PlayerId::bot(level).to_string(),
                        name: level.bot_name().to_owned(),
                        guest: false,
                        bot: true,
                        bot_level: Some(level.name().to_owned()),
                    }
                }
            };
            Some((
                me.id.clone(),
                MatchedNotice {
                    match_id: record.id.clone(),
                    game_id: game_id.to_owned(),
                    pool: record.pool.clone(),
                    color: color.to_owned(),
                    opponent,
                    rated: record.rated,
                },
            ))
        })
        .collect()
}
