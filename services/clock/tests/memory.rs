//! The clock on the in-memory adapters (the single-process wiring): game-session's memory
//! store schedules deadlines into the shared in-memory queue, and a clock instance claims
//! and fires them through game-session in the same process. Time is injected.

use std::sync::Arc;
use std::time::Duration;

use frontier_clock::{Expirer, Scheduler, SeamError, Settings};
use frontier_game_session::bus::MemoryBus;
use frontier_game_session::game::{Action, ClockSettings, Player, TimeControlSpec};
use frontier_game_session::service::{GameService, NewBoard, RandomLayouts};
use frontier_game_session::store::MemoryStore;
use frontier_platform::deadlines::MemoryDeadlines;
use frontier_platform::time::ManualClock;
use frontier_platform::{GameId, Namespace, PlayerId};
use frontier_rules::{Color, Variant};

type Service = GameService<MemoryStore, MemoryBus>;

/// game-session in the same process.
#[derive(Clone)]
struct InProcess(Arc<Service>);

impl Expirer for InProcess {
    async fn expire(&self, game: GameId) -> Result<bool, SeamError> {
        self.0
            .expire_clock(&game)
            .await
            .map(|(ended, _)| ended)
            .map_err(|e| SeamError(e.to_string()))
    }
}

fn player(name: &str) -> Player {
    Player {
        id: PlayerId::new().to_string(),
        name: name.to_owned(),
        guest: true,
        bot: false,
        bot_level: None,
    }
}

const T0: i64 = 1_800_000_000_000;

#[tokio::test]
async fn a_flag_falls_on_the_in_memory_adapters() {
    let time = Arc::new(ManualClock::at(T0));
    let deadlines = MemoryDeadlines::new();
    let service = Arc::new(GameService::new(
        MemoryStore::with_deadlines(deadlines.clone()),
        MemoryBus::new(Namespace::new("mem").expect("valid"), 64),
        time.clone(),
        Arc::new(RandomLayouts),
        frontier_game_session::Settings {
            clocks: ClockSettings::default(),
            ..Default::default()
        },
    ));
    let clock = Scheduler::new(
        deadlines.clone(),
        InProcess(service.clone()),
        time.clone(),
        Settings::default(),
    );
    let (white, black) = (player("w"), player("b"));
    let (game, code, _) = service
        .create_board(NewBoard {
            creator: white.clone(),
            variant: Variant::Standard,
            color: Some(Color::White),
            rated: false,
            time_control: Some(TimeControlSpec {
                initial_seconds: 60,
                increment_seconds: 0,
            }),
            start_fen: None,
        })
        .await
        .expect("created");
    service
        .join_board(black.clone(), &code)
        .await
        .expect("joined");
    for (who, uci) in [(&white, "e2e4"), (&black, "e7e5")] {
        service
            .act(&game, &who.id, "", None, &Action::Move(uci.into(), None))
            .await
            .expect("legal");
    }
    // White's minute runs from now: nothing is due a millisecond before the flag.
    assert_eq!(deadlines.scheduled(&game), Some(T0 + 60_000));
    time.set(T0 + 59_999);
    assert_eq!(clock.poll().await.expect("poll"), 0);
    time.set(T0 + 60_000);
    assert_eq!(clock.poll().await.expect("poll"), 1, "fired once");
    let view = service.view(&game, "").await.expect("view").frame;
    let view: serde_json::Value = serde_json::from_str(&view).expect("json");
    assert_eq!(view["game"]["outcome"]["reason"], "timeout", "{view}");
    assert_eq!(deadlines.tracked(), 0, "released and nothing scheduled");
    time.advance(Duration::from_secs(5).as_millis() as i64);
    assert_eq!(clock.poll().await.expect("poll"), 0);
}

/// Fires nothing itself: tells which games the clock fired, and when.
#[derive(Clone)]
struct Recorder(tokio::sync::mpsc::UnboundedSender<(GameId, std::time::Instant)>);

impl Expirer for Recorder {
    async fn expire(&self, game: GameId) -> Result<bool, SeamError> {
        let _ = self.0.send((game, std::time::Instant::now()));
        Ok(true)
    }
}

/// The in-memory queue, counting the clock's looks.
struct Counting {
    inner: MemoryDeadlines,
    looks: Arc<std::sync::atomic::AtomicUsize>,
}

impl frontier_clock::DeadlineQueue for Counting {
    async fn claim_due(
        &self,
        now_ms: i64,
        lease: Duration,
        limit: usize,
    ) -> Result<frontier_platform::deadlines::Claims, SeamError> {
        self.looks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(self.inner.claim(now_ms, lease, limit))
    }

    async fn release(&self, game: &GameId) -> Result<(), SeamError> {
        self.inner.release(game);
        Ok(())
    }

    async fn tracked(&self) -> Result<u64, SeamError> {
        Ok(self.inner.tracked())
    }
}

/// Issue #30: an idle clock sleeps (no look every 20 ms) until its next deadline or a
/// nudge. Its longest sleep is set to a minute here, so that only the nudge can explain a
/// deadline fired within the test's patience; and it is fired at its time, not before.
#[tokio::test]
async fn an_idle_clock_sleeps_until_its_next_deadline_or_a_nudge() {
    use frontier_platform::time::{Clock as _, SystemClock};
    let deadlines = MemoryDeadlines::new();
    let (tx, mut fired) = tokio::sync::mpsc::unbounded_channel();
    let looks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let queue = Counting {
        inner: deadlines.clone(),
        looks: looks.clone(),
    };
    let clock = Scheduler::new(
        queue,
        Recorder(tx),
        Arc::new(SystemClock),
        Settings {
            max_sleep: Duration::from_secs(60),
            ..Settings::default()
        },
    )
    .with_nudge(deadlines.nudge());
    let stop = frontier_platform::Shutdown::new();
    tokio::spawn(clock.run(stop.clone()));
    // Nothing scheduled: after its first look the clock sleeps (a poll every 20 ms would
    // have looked about 15 times by now). Nothing to await: what is checked is that
    // nothing happens.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(fired.try_recv().is_err());
    let idle_looks = looks.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(idle_looks, 1, "an idle clock looked {idle_looks} times");
    // A deadline 300 ms ahead: written, it nudges the sleeping clock, which then sleeps
    // until exactly then.
    let game = GameId::new();
    let written = std::time::Instant::now();
    let at = SystemClock.now_ms() + 300;
    deadlines.schedule(&game, Some(at));
    let (got, when) = tokio::time::timeout(Duration::from_secs(30), fired.recv())
        .await
        .expect("fired within 30 s: the nudge woke the clock")
        .expect("fired");
    assert_eq!(got, game);
    assert!(
        when.duration_since(written) >= Duration::from_millis(295),
        "fired {:?} after being written for 300 ms ahead",
        when.duration_since(written)
    );
    stop.trigger();
}
