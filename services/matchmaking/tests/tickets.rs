//! The storage suite: the matchmaker over each ticket store — a real Redis (`on_redis`) and
//! memory (`in_memory`, as `frontier dev` runs it), the same tests on both: seeks, cancels,
//! the atomic pairing step across instances, and what happens when game creation fails.
//! game-session is stood in for by a recorder that is idempotent by match id, as the real
//! rpc is.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use frontier_matchmaking::{
    CreateError, GameMaker, MatchError, MatchRecord, MatchedNotice, Matchmaker, MemoryTickets,
    NoRatings, Notifier, RedisTickets, Seat, Seeker, Settings, TicketStore,
};
use frontier_pairing::{PairingConfig, Pool};
use frontier_platform::Namespace;
use frontier_platform::time::ManualClock;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Create,
    Unreachable,
    Refused,
    /// Creates the game but answers as if the outcome were unknown.
    CreateThenLose,
}

/// Games by match id; creating twice under one id finds the first.
#[derive(Clone)]
struct Games {
    made: Arc<Mutex<HashMap<String, (String, MatchRecord)>>>,
    calls: Arc<Mutex<usize>>,
    mode: Arc<Mutex<Mode>>,
}

impl Games {
    fn new() -> Games {
        Games {
            made: Arc::default(),
            calls: Arc::default(),
            mode: Arc::new(Mutex::new(Mode::Create)),
        }
    }
    fn set(&self, mode: Mode) {
        *self.mode.lock().expect("not poisoned") = mode;
    }
    fn records(&self) -> Vec<MatchRecord> {
        let made = self.made.lock().expect("not poisoned");
        made.values().map(|(_, r)| r.clone()).collect()
    }
}

impl GameMaker for Games {
    async fn create(&self, record: &MatchRecord) -> Result<String, CreateError> {
        *self.calls.lock().expect("not poisoned") += 1;
        let mode = *self.mode.lock().expect("not poisoned");
        match mode {
            Mode::Unreachable => return Err(CreateError::Unreachable("down".into())),
            Mode::Refused => return Err(CreateError::Refused("bad".into())),
            _ => {}
        }
        let game = {
            let mut made = self.made.lock().expect("not poisoned");
            made.entry(record.id.clone())
                .or_insert_with(|| (uuid::Uuid::new_v4().to_string(), record.clone()))
                .0
                .clone()
        };
        match mode {
            Mode::CreateThenLose => Err(CreateError::Unknown("timeout".into())),
            _ => Ok(game),
        }
    }
}

#[derive(Clone, Default)]
struct Inbox(Arc<Mutex<Vec<(String, MatchedNotice)>>>);

impl Notifier for Inbox {
    async fn notify(&self, player: &str, notice: &MatchedNotice) {
        self.0
            .lock()
            .expect("not poisoned")
            .push((player.to_owned(), notice.clone()));
    }
}

/// Where the tickets are kept: every instance of one world shares them.
trait Backend: Send + Sync + 'static {
    type Tickets: TicketStore;
    fn tickets(&self) -> impl std::future::Future<Output = Self::Tickets> + Send;
}

/// A real Redis, a namespace per world, a connection per instance.
struct OnRedis(Namespace);

impl Backend for OnRedis {
    type Tickets = RedisTickets;
    async fn tickets(&self) -> RedisTickets {
        let client = redis::Client::open(frontier_testkit::redis_url()).expect("Redis URL");
        let conn = redis::aio::ConnectionManager::new(client)
            .await
            .expect("Redis answers");
        RedisTickets::new(conn, &self.0)
    }
}

/// One in-memory store per world.
struct InMemory(MemoryTickets);

impl Backend for InMemory {
    type Tickets = MemoryTickets;
    async fn tickets(&self) -> MemoryTickets {
        self.0.clone()
    }
}

type Mm<B> = Matchmaker<Games, Inbox, NoRatings, <B as Backend>::Tickets>;

struct World<B> {
    clock: Arc<ManualClock>,
    games: Games,
    inbox: Inbox,
    backend: B,
}

impl World<OnRedis> {
    fn on_redis() -> World<OnRedis> {
        let ns = Namespace::new(&frontier_testkit::unique_namespace()).expect("a namespace");
        World::with(Arc::new(ManualClock::at(1_000_000)), OnRedis(ns))
    }
}

impl World<InMemory> {
    fn in_memory() -> World<InMemory> {
        let clock = Arc::new(ManualClock::at(1_000_000));
        World::with(clock.clone(), InMemory(MemoryTickets::new(clock)))
    }
}

impl<B: Backend> World<B> {
    fn with(clock: Arc<ManualClock>, backend: B) -> World<B> {
        World {
            clock,
            games: Games::new(),
            inbox: Inbox::default(),
            backend,
        }
    }

    async fn instance(&self, config: PairingConfig) -> Mm<B> {
        Matchmaker::new(
            self.backend.tickets().await,
            self.games.clone(),
            self.inbox.clone(),
            NoRatings,
            config,
            self.clock.clone(),
            Settings {
                interval: Duration::from_millis(50),
                lease: Duration::from_secs(5),
                grace: Duration::from_secs(10),
            },
        )
    }
}

/// Each named test, run on both stores.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod on_redis {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::World::on_redis()).await;
                }
            )*
        }
        mod in_memory {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(super::World::in_memory()).await;
                }
            )*
        }
    };
}

on_both_stores!(
    two_seekers_are_paired_and_both_told,
    seeks_are_checked_before_anything_is_stored,
    a_second_seek_replaces_the_first_and_cancel_removes_it,
    the_window_widens_with_the_injected_time,
    a_lone_seeker_gets_a_labelled_casual_bot_after_the_wait,
    a_failed_creation_returns_both_tickets_with_their_wait,
    an_unknown_outcome_is_created_once_by_whoever_takes_it_over,
    cancelling_during_creation_is_too_late_and_the_ticket_does_not_come_back,
    a_seek_lapses_after_the_grace_unless_the_player_is_back,
    three_instances_racing_never_put_a_player_in_two_games,
    an_instance_that_took_a_pairing_over_never_gives_it_up_on_unreachable,
    the_claimers_restore_is_fenced_by_its_lease,
    recent_waits_and_each_players_history_are_kept,
    a_cancel_after_the_game_exists_is_already_matched_not_nothing,
    status_says_matching_while_the_game_is_made_and_forgets_a_match_on_a_new_seek,
);

fn no_bots() -> PairingConfig {
    PairingConfig {
        bots: frontier_pairing::BotWaits {
            default_ms: 0,
            per_pool: Vec::new(),
        },
        ..PairingConfig::default()
    }
}

fn seeker(id: &str, guest: bool) -> Seeker {
    Seeker {
        id: id.to_owned(),
        name: id.to_owned(),
        guest,
    }
}

fn pool(key: &str) -> Pool {
    key.parse().expect("a pool key")
}

fn people(record: &MatchRecord) -> Vec<String> {
    [&record.white, &record.black]
        .into_iter()
        .filter_map(|s| match s {
            Seat::Player(p) => Some(p.id.clone()),
            Seat::Bot(_) => None,
        })
        .collect()
}

async fn two_seekers_are_paired_and_both_told<B: Backend>(world: World<B>) {
    let mm = world.instance(no_bots()).await;
    let p = pool("standard:3+0:casual");
    mm.seek(seeker("a", false), &[p]).await.expect("seek");
    let answer = mm.seek(seeker("b", true), &[p]).await.expect("seek");
    assert_eq!(answer.pools, vec!["standard:3+0:casual".to_owned()]);
    let report = mm.step(&mut || true).await.expect("step");
    assert_eq!((report.paired, report.created), (1, 1));
    let inbox = world.inbox.0.lock().expect("not poisoned").clone();
    assert_eq!(inbox.len(), 2);
    assert_eq!(inbox[0].1.game_id, inbox[1].1.game_id);
    assert_ne!(inbox[0].1.color, inbox[1].1.color);
    assert!(!inbox[0].1.opponent.bot && !inbox[0].1.rated);
    // Status after a reconnect finds the notice; the tickets are gone.
    let status = mm.status("a").await.expect("status");
    assert_eq!(status.seeking, None);
    assert_eq!(
        status.matched.map(|n| n.game_id),
        Some(inbox[0].1.game_id.clone())
    );
    assert_eq!(mm.step(&mut || true).await.expect("step").paired, 0);
}

async fn seeks_are_checked_before_anything_is_stored<B: Backend>(world: World<B>) {
    let mm = world.instance(no_bots()).await;
    let rated = pool("standard:3+0:rated");
    assert!(matches!(
        mm.seek(seeker("g", true), &[rated]).await,
        Err(MatchError::GuestRated)
    ));
    assert!(matches!(
        mm.seek(seeker("g", false), &[]).await,
        Err(MatchError::BadField(_))
    ));
    assert!(matches!(
        mm.seek(seeker("g", false), &[rated, rated]).await,
        Err(MatchError::BadField(_))
    ));
    let nine: Vec<Pool> = Pool::all().take(9).collect();
    assert!(matches!(
        mm.seek(seeker("g", false), &nine).await,
        Err(MatchError::BadField(_))
    ));
    assert_eq!(mm.status("g").await.expect("status").seeking, None);
}

async fn a_second_seek_replaces_the_first_and_cancel_removes_it<B: Backend>(world: World<B>) {
    let mm = world.instance(no_bots()).await;
    let (p1, p2) = (pool("standard:3+0:casual"), pool("hidden:3+0:casual"));
    assert!(
        !mm.seek(seeker("a", false), &[p1])
            .await
            .expect("seek")
            .replaced
    );
    assert!(
        mm.seek(seeker("a", false), &[p2])
            .await
            .expect("seek")
            .replaced
    );
    // b waits in the first pool: a left it.
    mm.seek(seeker("b", false), &[p1]).await.expect("seek");
    assert_eq!(mm.step(&mut || true).await.expect("step").paired, 0);
    assert!(mm.cancel("a").await.expect("cancel"));
    assert!(
        !mm.cancel("a").await.expect("cancel"),
        "nothing left to cancel"
    );
    mm.seek(seeker("c", false), &[p2]).await.expect("seek");
    assert_eq!(
        mm.step(&mut || true).await.expect("step").paired,
        0,
        "a is gone"
    );
}

async fn the_window_widens_with_the_injected_time<B: Backend>(world: World<B>) {
    let mm = world.instance(no_bots()).await;
    let p = pool("standard:3+0:casual");
    // Ratings come from the rating service; here the tickets carry 1500 each, so the
    // window is shown on ratings set through the store directly.
    mm.seek(seeker("a", false), &[p]).await.expect("seek");
    let (mut b, _) = {
        mm.seek(seeker("b", false), &[p]).await.expect("seek");
        mm.store()
            .ticket("b")
            .await
            .expect("read")
            .expect("a ticket")
    };
    b.generation = "g2".into();
    b.ratings = [1900, 1500, 1500];
    mm.store().seek(&b).await.expect("replace");
    assert_eq!(mm.step(&mut || true).await.expect("step").paired, 0);
    world.clock.advance(5_999);
    assert_eq!(mm.step(&mut || true).await.expect("step").paired, 0);
    world.clock.advance(1);
    assert_eq!(mm.step(&mut || true).await.expect("step").paired, 1);
}

async fn a_lone_seeker_gets_a_labelled_casual_bot_after_the_wait<B: Backend>(world: World<B>) {
    let mm = world.instance(PairingConfig::default()).await;
    mm.seek(seeker("a", false), &[pool("atomic:5+0:rated")])
        .await
        .expect("seek");
    world.clock.advance(19_999);
    assert_eq!(mm.step(&mut || true).await.expect("step").bots, 0);
    world.clock.advance(1);
    assert_eq!(mm.step(&mut || true).await.expect("step").bots, 1);
    let inbox = world.inbox.0.lock().expect("not poisoned").clone();
    assert_eq!(inbox.len(), 1);
    assert!(inbox[0].1.opponent.bot);
    assert!(!inbox[0].1.rated, "bot games are casual");
    assert_eq!(inbox[0].1.opponent.name, "Frontier Bot · Medium");
}

async fn a_failed_creation_returns_both_tickets_with_their_wait<B: Backend>(world: World<B>) {
    let mm = world.instance(no_bots()).await;
    let p = pool("standard:1+0:casual");
    mm.seek(seeker("a", false), &[p]).await.expect("seek");
    world.clock.advance(700);
    mm.seek(seeker("b", false), &[p]).await.expect("seek");
    let before = mm.status("a").await.expect("status").seeking;
    world.games.set(Mode::Unreachable);
    let report = mm.step(&mut || true).await.expect("step");
    assert_eq!((report.paired, report.restored, report.created), (1, 1, 0));
    assert_eq!(
        mm.status("a").await.expect("status").seeking,
        before,
        "same pools, same since"
    );
    world.games.set(Mode::Create);
    assert_eq!(mm.step(&mut || true).await.expect("step").created, 1);
}

async fn an_unknown_outcome_is_created_once_by_whoever_takes_it_over<B: Backend>(world: World<B>) {
    let first = world.instance(no_bots()).await;
    let second = world.instance(no_bots()).await;
    let p = pool("standard:1+0:casual");
    first.seek(seeker("a", false), &[p]).await.expect("seek");
    first.seek(seeker("b", false), &[p]).await.expect("seek");
    world.games.set(Mode::CreateThenLose);
    let report = first.step(&mut || true).await.expect("step");
    assert_eq!((report.paired, report.created), (1, 0));
    // Meanwhile the players can neither seek again nor be paired again.
    assert!(matches!(
        first.seek(seeker("a", false), &[p]).await,
        Err(MatchError::AlreadyMatched)
    ));
    world.games.set(Mode::Create);
    assert_eq!(
        second.retry_pending().await.expect("retry").created,
        0,
        "leased"
    );
    world.clock.advance(5_000);
    assert_eq!(second.retry_pending().await.expect("retry").created, 1);
    assert_eq!(world.games.records().len(), 1, "one game for one pairing");
    assert_eq!(*world.games.calls.lock().expect("not poisoned"), 2);
    assert_eq!(second.retry_pending().await.expect("retry").created, 0);
}

async fn cancelling_during_creation_is_too_late_and_the_ticket_does_not_come_back<B: Backend>(
    world: World<B>,
) {
    let mm = world.instance(no_bots()).await;
    let p = pool("standard:1+0:casual");
    mm.seek(seeker("a", false), &[p]).await.expect("seek");
    mm.seek(seeker("b", false), &[p]).await.expect("seek");
    world.games.set(Mode::CreateThenLose);
    mm.step(&mut || true).await.expect("step");
    assert!(matches!(
        mm.cancel("a").await,
        Err(MatchError::AlreadyMatched)
    ));
    // The pairing is refused for good and given up: a stays out, b is back.
    world.games.set(Mode::Refused);
    world.clock.advance(5_000);
    assert_eq!(mm.retry_pending().await.expect("retry").restored, 1);
    assert_eq!(mm.status("a").await.expect("status").seeking, None);
    assert!(mm.status("b").await.expect("status").seeking.is_some());
}

/// A cancel that lost the race to a pairing whose game already exists: before, the ticket
/// was simply gone and the cancel answered "nothing to cancel" (`cancelled: false`) while
/// the game started; now it is `already_matched`. A player with no seek at all still gets
/// `false`.
async fn a_cancel_after_the_game_exists_is_already_matched_not_nothing<B: Backend>(
    world: World<B>,
) {
    let mm = world.instance(no_bots()).await;
    let p = pool("atomic:3+0:casual");
    mm.seek(seeker("a", false), &[p]).await.expect("seek");
    mm.seek(seeker("b", false), &[p]).await.expect("seek");
    assert_eq!(mm.step(&mut || true).await.expect("step").created, 1);
    assert!(
        matches!(mm.cancel("a").await, Err(MatchError::AlreadyMatched)),
        "a cancel after the pairing's game exists"
    );
    assert!(matches!(
        mm.cancel("b").await,
        Err(MatchError::AlreadyMatched)
    ));
    assert!(!mm.cancel("nobody").await.expect("cancel"));
    // A new seek, cancelled: its cancel is a plain cancel, and the next one finds nothing.
    mm.seek(seeker("a", false), &[p]).await.expect("seek again");
    assert!(mm.cancel("a").await.expect("cancel"));
    assert!(!mm.cancel("a").await.expect("cancel"));
}

/// `status` while the latest seek's game is being made says `matching` (not "no seek, no
/// match", which left a reconnected player believing nothing stood), and a match is only
/// reported for the latest seek: after a new seek, the older game is not offered again.
async fn status_says_matching_while_the_game_is_made_and_forgets_a_match_on_a_new_seek<
    B: Backend,
>(
    world: World<B>,
) {
    let mm = world.instance(no_bots()).await;
    let p = pool("hidden:3+0:casual");
    mm.seek(seeker("a", false), &[p]).await.expect("seek");
    mm.seek(seeker("b", false), &[p]).await.expect("seek");
    world.games.set(Mode::CreateThenLose);
    mm.step(&mut || true).await.expect("step");
    let status = mm.status("a").await.expect("status");
    assert!(status.matching, "the game is being made");
    assert_eq!((status.seeking, status.matched), (None, None));
    // The instance that takes the pairing over makes the game.
    world.games.set(Mode::Create);
    world.clock.advance(5_000);
    mm.retry_pending().await.expect("retry");
    let status = mm.status("a").await.expect("status");
    assert!(!status.matching);
    assert!(status.matched.is_some(), "the latest seek's game");
    mm.seek(seeker("a", false), &[p]).await.expect("a new seek");
    let status = mm.status("a").await.expect("status");
    assert!(status.seeking.is_some());
    assert_eq!(status.matched, None, "the older game is not the new seek's");
}

async fn a_seek_lapses_after_the_grace_unless_the_player_is_back<B: Backend>(world: World<B>) {
    let mm = world.instance(no_bots()).await;
    let p = pool("standard:10+0:casual");
    mm.seek(seeker("a", false), &[p]).await.expect("seek");
    mm.seek(seeker("b", false), &[pool("hidden:10+0:casual")])
        .await
        .expect("seek");
    mm.leave("a").await.expect("leave");
    mm.leave("b").await.expect("leave");
    world.clock.advance(9_000);
    mm.status("b").await.expect("b reconnects");
    world.clock.advance(1_000);
    assert_eq!(mm.step(&mut || true).await.expect("step").lapsed, 1);
    assert_eq!(mm.status("a").await.expect("status").seeking, None);
    assert!(mm.status("b").await.expect("status").seeking.is_some());
}

async fn three_instances_racing_never_put_a_player_in_two_games<B: Backend>(world: World<B>) {
    let instances = [
        Arc::new(world.instance(no_bots()).await),
        Arc::new(world.instance(no_bots()).await),
        Arc::new(world.instance(no_bots()).await),
    ];
    let pools = [
        pool("standard:3+0:casual"),
        pool("standard:3+2:casual"),
        pool("hidden:3+0:casual"),
    ];
    let mut expected = HashSet::new();
    for i in 0..300 {
        let mine: Vec<Pool> = match i % 4 {
            0 => vec![pools[0]],
            1 => vec![pools[0], pools[1]],
            2 => vec![pools[1], pools[2]],
            _ => vec![pools[2], pools[0]],
        };
        instances[i % 3]
            .seek(seeker(&format!("p{i}"), false), &mine)
            .await
            .expect("seek");
        expected.insert(format!("p{i}"));
    }
    let mut rounds = tokio::task::JoinSet::new();
    for mm in &instances {
        let mm = mm.clone();
        rounds.spawn(async move {
            let mut conflicts = 0;
            for _ in 0..5 {
                conflicts += mm.step(&mut || true).await.expect("step").conflicts;
            }
            conflicts
        });
    }
    while let Some(done) = rounds.join_next().await {
        done.expect("a step task");
    }
    // Checked from the games made, not from the service's word.
    let mut seen = HashSet::new();
    for record in world.games.records() {
        for player in people(&record) {
            assert!(seen.insert(player.clone()), "{player} is in two games");
        }
    }
    assert_eq!(seen, expected, "300 compatible seekers are all paired");
}

async fn an_instance_that_took_a_pairing_over_never_gives_it_up_on_unreachable<B: Backend>(
    world: World<B>,
) {
    let first = world.instance(no_bots()).await;
    let second = world.instance(no_bots()).await;
    let p = pool("standard:1+0:casual");
    first.seek(seeker("a", false), &[p]).await.expect("seek");
    first.seek(seeker("b", false), &[p]).await.expect("seek");
    // The claimer's call may still be in flight: whoever takes over must not give the
    // tickets back on a connection failure of its own.
    world.games.set(Mode::CreateThenLose);
    first.step(&mut || true).await.expect("step");
    world.games.set(Mode::Unreachable);
    world.clock.advance(5_000);
    let report = second.retry_pending().await.expect("retry");
    assert_eq!((report.created, report.restored), (0, 0));
    assert_eq!(second.status("a").await.expect("status").seeking, None);
    world.games.set(Mode::Create);
    world.clock.advance(5_000);
    assert_eq!(second.retry_pending().await.expect("retry").created, 1);
    assert_eq!(world.games.records().len(), 1);
}

async fn the_claimers_restore_is_fenced_by_its_lease<B: Backend>(world: World<B>) {
    let mm = world.instance(no_bots()).await;
    let p = pool("standard:1+0:casual");
    mm.seek(seeker("a", false), &[p]).await.expect("seek");
    mm.seek(seeker("b", false), &[p]).await.expect("seek");
    let mut stored = Vec::new();
    for id in ["a", "b"] {
        stored.push(
            mm.store()
                .ticket(id)
                .await
                .expect("read")
                .expect("a ticket")
                .0,
        );
    }
    let record = MatchRecord {
        id: uuid::Uuid::now_v7().to_string(),
        pool: p.to_string(),
        rated: false,
        white: Seat::Player(stored[0].seeker.clone()),
        black: Seat::Player(stored[1].seeker.clone()),
        tickets: stored,
        paired_at_ms: 1_000_000,
    };
    assert!(mm.store().claim(&record, 1_005_000).await.expect("claim"));
    assert!(
        !mm.store().claim(&record, 1_005_000).await.expect("claim"),
        "claimed once"
    );
    // Another instance takes it over after the lease: the claimer's late give-up is refused.
    let taken = mm
        .store()
        .due(1_005_000, Duration::from_secs(5), 10)
        .await
        .expect("due");
    assert_eq!(taken.len(), 1);
    assert!(
        !mm.store()
            .restore(&record, Some(1_005_000))
            .await
            .expect("restore")
    );
    assert_eq!(mm.status("a").await.expect("status").seeking, None);
    // The new holder's lease is the fence now.
    assert!(
        mm.store()
            .restore(&record, Some(1_010_000))
            .await
            .expect("restore")
    );
    assert!(mm.status("a").await.expect("status").seeking.is_some());
}

async fn recent_waits_and_each_players_history_are_kept<B: Backend>(world: World<B>) {
    let mm = world.instance(no_bots()).await;
    let p = pool("standard:5+0:casual");
    mm.seek(seeker("a", false), &[p]).await.expect("seek");
    world.clock.advance(1_000);
    mm.seek(seeker("b", false), &[p]).await.expect("seek");
    world.clock.advance(500);
    // `true`: the coin gives White to the first ticket of an even pair.
    assert_eq!(mm.step(&mut || true).await.expect("step").created, 1);
    let mut waits = mm
        .store()
        .recent_waits(&p.to_string())
        .await
        .expect("waits");
    waits.sort_unstable();
    assert_eq!(waits, vec![500, 1_500]);
    let inbox = world.inbox.0.lock().expect("not poisoned").clone();
    let white = inbox
        .iter()
        .find(|(_, n)| n.color == "white")
        .map(|(player, _)| player.clone())
        .expect("someone has White");
    let black = if white == "a" { "b" } else { "a" };
    assert_eq!(
        mm.store().history(&white).await.expect("history"),
        (Some(black.to_owned()), 1)
    );
    assert_eq!(
        mm.store().history(black).await.expect("history"),
        (Some(white.clone()), -1)
    );
    // The next seek carries them, and its answer estimates the wait from the pool's waits.
    let answer = mm.seek(seeker(&white, false), &[p]).await.expect("seek");
    assert!(answer.estimated_wait_ms.is_some());
    let (ticket, claimed) = mm
        .store()
        .ticket(&white)
        .await
        .expect("read")
        .expect("a ticket");
    assert!(!claimed);
    assert_eq!(
        (ticket.last_opponent.as_deref(), ticket.white_balance),
        (Some(black), 1)
    );
    let counts = mm.store().waiting_per_pool().await.expect("counts");
    assert_eq!(
        counts.iter().find(|(q, _)| *q == p).map(|(_, n)| *n),
        Some(1)
    );
    assert_eq!(counts.iter().map(|(_, n)| n).sum::<u64>(), 1);
}

/// Redis expires a notice by its key's TTL (wall-clock time); memory by the injected clock,
/// which is what this checks.
#[tokio::test]
async fn in_memory_a_notice_is_kept_for_ten_minutes_then_forgotten() {
    let world = World::in_memory();
    let mm = world.instance(no_bots()).await;
    let p = pool("hidden:3+2:casual");
    mm.seek(seeker("a", false), &[p]).await.expect("seek");
    mm.seek(seeker("b", false), &[p]).await.expect("seek");
    assert_eq!(mm.step(&mut || true).await.expect("step").created, 1);
    world.clock.advance(599_999);
    assert!(mm.status("a").await.expect("status").matched.is_some());
    world.clock.advance(1);
    assert_eq!(mm.status("a").await.expect("status").matched, None);
    assert_eq!(mm.status("b").await.expect("status").matched, None);
}
