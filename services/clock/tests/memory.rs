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
