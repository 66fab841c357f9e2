//! Games against the computer on the in-memory store and bus (the same code as on Redis and
//! NATS; `bot_jobs.rs` runs the outbox and the stream on the real servers): bot seats,
//! the jobs a change leaves a bot, undo and its refusals, and the fairness of bot input —
//! a job depends on the bot's seat's view only, never on the layout.

use std::sync::Arc;

use frontier_game_session::bus::MemoryBus;
use frontier_game_session::error::SessionError;
use frontier_game_session::game::{Action, Player};
use frontier_game_session::service::{
    FixedLayout, GameService, NewBoard, NewComputerGame, Settings, SystemClock,
};
use frontier_game_session::store::MemoryStore;
use frontier_platform::{GameId, Namespace, PlayerId};
use frontier_protocol::{BotJob, BotLevel, ErrorCode, GameEvent, GameWire, ServerMessage};
use frontier_rules::{Color, Layout, Position, Square, Variant, hidden_start_squares};

type Service = GameService<MemoryStore, MemoryBus>;

const LAYOUT: &str = "PQBNBNRRPPPPPPP/pqbnbnrrppppppp";

fn service_with(layout: &str) -> Service {
    GameService::new(
        MemoryStore::new(),
        MemoryBus::new(Namespace::new("bots").expect("valid"), 1024),
        Arc::new(SystemClock),
        Arc::new(FixedLayout(Layout::from_canonical(layout).expect("valid"))),
        Settings::default(),
    )
}

fn service() -> Service {
    service_with(LAYOUT)
}

fn person(name: &str) -> Player {
    Player {
        id: PlayerId::new().to_string(),
        name: name.to_owned(),
        guest: true,
        bot: false,
        bot_level: None,
    }
}

fn mv(uci: &str) -> Action {
    Action::Move(uci.to_owned(), None)
}

fn code_of(e: SessionError) -> ErrorCode {
    match e {
        SessionError::Client(code, _) => code,
        other => panic!("expected a client error, got {other:?}"),
    }
}

async fn vs_computer(
    svc: &Service,
    variant: Variant,
    level: BotLevel,
    color: Color,
) -> (GameId, Player) {
    let me = person("me");
    let (game, seat, version) = svc
        .play_computer(NewComputerGame {
            player: me.clone(),
            variant,
            level,
            color: Some(color),
            time_control: None,
            start_fen: None,
        })
        .await
        .expect("started");
    assert_eq!((seat, version), (color, 2));
    (game, me)
}

/// The game as `player_id` sees it now.
async fn view(svc: &Service, game: &GameId, player_id: &str) -> (u64, GameWire) {
    let seen = svc.view(game, player_id).await.expect("view");
    match serde_json::from_str(&seen.frame).expect("json") {
        ServerMessage::Game { game, version, .. } => (version, *game),
        other => panic!("a game frame, got {other:?}"),
    }
}

/// The jobs queued so far, oldest first.
fn jobs(svc: &Service) -> Vec<BotJob> {
    let queue = svc.bus().jobs();
    std::iter::from_fn(|| queue.try_next())
        .map(|j| {
            let job: BotJob = serde_json::from_slice(&j.payload).expect("a job");
            assert_eq!(j.id, job.job, "the message id is the job id");
            job
        })
        .collect()
}

/// Acts as the bot would: the job's move, with the job's version and id.
async fn bot_plays(svc: &Service, job: &BotJob, uci: &str) -> u64 {
    let game: GameId = job.game_id.parse().expect("id");
    svc.act(&game, &job.player_id, &job.job, Some(job.version), &mv(uci))
        .await
        .expect("the bot's move")
        .0
}

#[tokio::test]
async fn play_computer_starts_a_game_against_a_labelled_bot() {
    let svc = service();
    let (game, me) = vs_computer(&svc, Variant::Standard, BotLevel::Hard, Color::White).await;
    let (version, g) = view(&svc, &game, "").await;
    assert_eq!((version, g.status.as_str()), (2, "playing"));
    assert!(!g.rated);
    let bot = g.black.expect("a bot in black");
    assert!(bot.bot);
    assert_eq!(bot.name, "Frontier Bot · Hard");
    assert_eq!(bot.id, PlayerId::bot(BotLevel::Hard).to_string());
    let human = g.white.expect("the person in white");
    assert!(!human.bot);
    assert_eq!(human.id, me.id);
    assert!(jobs(&svc).is_empty(), "the person moves first: no job");

    // The person moves: the bot owes the next move, and its job is exactly the game frame
    // of its seat.
    svc.act(&game, &me.id, "m1", None, &mv("e2e4"))
        .await
        .expect("moved");
    let queued = jobs(&svc);
    assert_eq!(queued.len(), 1);
    let job = &queued[0];
    assert_eq!(job.job, format!("{game}:3"));
    assert_eq!(
        (job.version, job.seat.as_str(), job.level.as_str()),
        (3, "black", "hard")
    );
    assert_eq!(job.player_id, bot.id);
    let (_, bot_view) = view(&svc, &game, &bot.id).await;
    assert_eq!(job.view, bot_view);

    // The bot's answer leaves the person to move: no job; the next move makes one again.
    assert_eq!(bot_plays(&svc, job, "e7e5").await, 4);
    assert!(jobs(&svc).is_empty());
    // The same job done twice applies once.
    let again = svc
        .act(
            &game,
            &job.player_id,
            &job.job,
            Some(job.version),
            &mv("e7e5"),
        )
        .await
        .expect("duplicate");
    assert_eq!(again, (4, true));
    svc.act(&game, &me.id, "m2", None, &mv("g1f3"))
        .await
        .expect("moved");
    assert_eq!(
        jobs(&svc).iter().map(|j| j.version).collect::<Vec<_>>(),
        [5]
    );
}

#[tokio::test]
async fn a_bot_playing_white_owes_the_first_move_at_once() {
    let svc = service();
    let (game, _me) = vs_computer(&svc, Variant::Atomic, BotLevel::Easy, Color::Black).await;
    let queued = jobs(&svc);
    assert_eq!(queued.len(), 1, "the job of version 2, made with the game");
    assert_eq!(queued[0].job, format!("{game}:2"));
    assert_eq!(queued[0].seat, "white");
    assert_eq!(queued[0].view.white.as_ref().map(|p| p.bot), Some(true));
    assert_eq!(queued[0].view.variant, "atomic");
}

#[tokio::test]
async fn no_person_is_seated_with_a_bot_id_or_flag() {
    let svc = service();
    let mut impostor = person("x");
    impostor.id = PlayerId::bot(BotLevel::Easy).to_string();
    for p in [
        impostor.clone(),
        Player {
            bot: true,
            ..person("y")
        },
    ] {
        let refused = svc
            .play_computer(NewComputerGame {
                player: p.clone(),
                variant: Variant::Standard,
                level: BotLevel::Easy,
                color: None,
                time_control: None,
                start_fen: None,
            })
            .await
            .expect_err("refused");
        assert_eq!(code_of(refused), ErrorCode::BadField);
        let refused = svc
            .create_board(NewBoard {
                creator: p,
                variant: Variant::Standard,
                color: None,
                rated: false,
                time_control: None,
                start_fen: None,
            })
            .await
            .expect_err("refused");
        assert_eq!(code_of(refused), ErrorCode::BadField);
    }
}

/// Plays `moves` alternately, the person first (White), the bot answering through its jobs;
/// returns the versions after each ply.
async fn play_pairs(svc: &Service, game: &GameId, me: &Player, moves: &[&str]) -> Vec<u64> {
    let mut versions = Vec::new();
    for pair in moves.chunks(2) {
        let v = svc
            .act(game, &me.id, "", None, &mv(pair[0]))
            .await
            .expect(pair[0])
            .0;
        versions.push(v);
        if let Some(reply) = pair.get(1) {
            let queued = jobs(svc);
            let job = queued.last().expect("a job for the bot");
            assert_eq!(job.version, v);
            versions.push(bot_plays(svc, job, reply).await);
        }
    }
    versions
}

#[tokio::test]
async fn undo_takes_back_a_move_and_its_reply_in_standard_chess() {
    let svc = service();
    let (game, me) = vs_computer(&svc, Variant::Standard, BotLevel::Medium, Color::White).await;
    let mut watcher = svc.bus().subscribe();
    play_pairs(&svc, &game, &me, &["e2e4", "e7e5"]).await;
    let (v4, before) = view(&svc, &game, &me.id).await;
    assert_eq!(v4, 4);
    // Moves that lose castling rights and reset the half-move clock's meaning.
    play_pairs(&svc, &game, &me, &["e1e2", "e8e7"]).await;
    svc.act(&game, &me.id, "u1", Some(6), &Action::Undo)
        .await
        .expect("undone");
    let (v7, after) = view(&svc, &game, &me.id).await;
    assert_eq!(v7, 7, "one change, one version");
    assert_eq!(
        after.fen, before.fen,
        "castling rights, clocks and all as before"
    );
    assert!(after.fen.contains(" KQkq "), "{}", after.fen);
    assert_eq!((after.ply, after.moves.len()), (2, 2));
    assert_eq!(after.moves, before.moves);
    assert_eq!(after.turn, "white");
    // The undo event reaches every audience, spectators included: it reads the same for
    // all, so it goes once, on the subject every audience follows.
    let mut seen = Vec::new();
    while let Ok(m) = watcher.try_recv() {
        if m.version == 7 {
            seen.push(m);
        }
    }
    assert_eq!(seen.len(), 1, "one frame for every audience");
    assert!(
        seen[0].subject.ends_with(".white.black.public"),
        "{}",
        seen[0].subject
    );
    for m in &seen {
        let ServerMessage::Event { event, .. } = serde_json::from_slice(&m.payload).expect("json")
        else {
            panic!("an event");
        };
        let GameEvent::Undo {
            ply,
            taken_back,
            fen,
            turn,
            check,
        } = *event
        else {
            panic!("an undo event, got {event:?}");
        };
        assert_eq!(
            (ply, fen.as_str(), turn.as_str(), check),
            (2, before.fen.as_str(), "white", false)
        );
        assert_eq!(taken_back, ["e1e2", "e8e7"]);
    }
    // The person plays on from there; the bot gets a job for the new version only.
    svc.act(&game, &me.id, "", None, &mv("g1f3"))
        .await
        .expect("on");
    let queued = jobs(&svc);
    assert_eq!(queued.last().map(|j| j.version), Some(8));
    // A job for a version before the undo is stale, and that answer is final.
    let stale = svc
        .act(&game, &queued[0].player_id, "old-job", Some(5), &mv("b8c6"))
        .await
        .expect_err("stale");
    assert_eq!(code_of(stale), ErrorCode::StaleVersion);
}

#[tokio::test]
async fn undo_restores_the_repetition_history() {
    let svc = service();
    let (game, me) = vs_computer(&svc, Variant::Standard, BotLevel::Easy, Color::White).await;
    // The start position occurs a second time.
    play_pairs(&svc, &game, &me, &["g1f3", "g8f6", "f3g1", "f6g8"]).await;
    // Out again, then taken back: the start position is back, still seen twice.
    play_pairs(&svc, &game, &me, &["g1f3", "g8f6"]).await;
    svc.act(&game, &me.id, "", None, &Action::Undo)
        .await
        .expect("undone");
    // Had the undone plies stayed in the history, the knights' positions would repeat a
    // third time before the start position does.
    play_pairs(&svc, &game, &me, &["g1f3", "g8f6", "f3g1"]).await;
    let (_, g) = view(&svc, &game, &me.id).await;
    assert!(g.outcome.is_none(), "no threefold yet: {:?}", g.outcome);
    let job = jobs(&svc).pop().expect("the bot's turn");
    bot_plays(&svc, &job, "f6g8").await;
    let (_, g) = view(&svc, &game, &me.id).await;
    let outcome = g.outcome.expect("the start position a third time");
    assert_eq!(
        (outcome.result.as_str(), outcome.reason.as_str()),
        ("draw", "repetition")
    );
}

#[tokio::test]
async fn undo_in_atomic_chess_restores_the_exploded_pieces() {
    let svc = service();
    let (game, me) = vs_computer(&svc, Variant::Atomic, BotLevel::Easy, Color::White).await;
    play_pairs(&svc, &game, &me, &["e2e4", "d7d5"]).await;
    let (_, before) = view(&svc, &game, &me.id).await;
    // A capture explodes on d5; the bot answers.
    play_pairs(&svc, &game, &me, &["e4d5", "g8f6"]).await;
    let (_, exploded) = view(&svc, &game, &me.id).await;
    assert_ne!(exploded.fen, before.fen);
    svc.act(&game, &me.id, "", None, &Action::Undo)
        .await
        .expect("undone");
    let (_, after) = view(&svc, &game, &me.id).await;
    assert_eq!(after.fen, before.fen);
    assert_eq!(after.ply, 2);
}

#[tokio::test]
async fn undo_is_refused_where_it_is_not_allowed_and_changes_nothing() {
    let svc = service();
    // Nothing to take back yet.
    let (game, me) = vs_computer(&svc, Variant::Standard, BotLevel::Easy, Color::White).await;
    assert_eq!(
        try_undo(&svc, game, &me.id).await,
        ErrorCode::UndoNotAllowed
    );
    // Not the person's turn (the bot has not answered).
    svc.act(&game, &me.id, "", None, &mv("e2e4"))
        .await
        .expect("moved");
    assert_eq!(
        try_undo(&svc, game, &me.id).await,
        ErrorCode::UndoNotAllowed
    );
    // The bot itself, a spectator.
    let bot = PlayerId::bot(BotLevel::Easy).to_string();
    assert_eq!(try_undo(&svc, game, &bot).await, ErrorCode::UndoNotAllowed);
    assert_eq!(
        try_undo(&svc, game, &PlayerId::new().to_string()).await,
        ErrorCode::NotInGame
    );
    // The person playing Black with only the bot's first move on the board.
    let (game, me) = vs_computer(&svc, Variant::Standard, BotLevel::Easy, Color::Black).await;
    let job = jobs(&svc).pop().expect("the bot's first move");
    bot_plays(&svc, &job, "e2e4").await;
    assert_eq!(
        try_undo(&svc, game, &me.id).await,
        ErrorCode::UndoNotAllowed
    );
    // Hidden chess has no undo.
    let (game, me) = vs_computer(&svc, Variant::Hidden, BotLevel::Easy, Color::White).await;
    svc.act(&game, &me.id, "", None, &mv("e2e4"))
        .await
        .expect("moved");
    let job = jobs(&svc).pop().expect("a job");
    bot_plays(&svc, &job, "e7e5").await;
    assert_eq!(
        try_undo(&svc, game, &me.id).await,
        ErrorCode::UndoNotAllowed
    );
    // Against a person, casual or rated.
    for rated in [false, true] {
        let (white, black) = (
            person("w"),
            Player {
                guest: false,
                ..person("b")
            },
        );
        let white = Player {
            guest: false,
            ..white
        };
        let (game, code, _) = svc
            .create_board(NewBoard {
                creator: white.clone(),
                variant: Variant::Standard,
                color: Some(Color::White),
                rated,
                time_control: None,
                start_fen: None,
            })
            .await
            .expect("board");
        svc.join_board(black.clone(), &code).await.expect("joined");
        svc.act(&game, &white.id, "", None, &mv("e2e4"))
            .await
            .expect("e4");
        svc.act(&game, &black.id, "", None, &mv("e7e5"))
            .await
            .expect("e5");
        assert_eq!(
            try_undo(&svc, game, &white.id).await,
            ErrorCode::UndoNotAllowed
        );
    }
}

/// Tries an undo; asserts that it was refused without changing the game; its code.
async fn try_undo(svc: &Service, game: GameId, who: &str) -> ErrorCode {
    let before = svc.view(&game, "").await.expect("view");
    let e = svc
        .act(&game, who, "undo", None, &Action::Undo)
        .await
        .expect_err("refused");
    let after = svc.view(&game, "").await.expect("view");
    assert_eq!(before.version, after.version, "nothing changed");
    assert_eq!(before.frame, after.frame, "nothing changed");
    code_of(e)
}

/// The squares whose true identities differ between two layouts.
fn differing_squares(a: &str, b: &str) -> Vec<Square> {
    let (aw, ab) = a.split_once('/').expect("two sides");
    let (bw, bb) = b.split_once('/').expect("two sides");
    let mut out = Vec::new();
    for (color, x, y) in [(Color::White, aw, bw), (Color::Black, ab, bb)] {
        for (i, (p, q)) in x.chars().zip(y.chars()).enumerate() {
            if p != q {
                out.push(hidden_start_squares(color)[i]);
            }
        }
    }
    out
}

/// A job with the facts that differ between games by construction (ids, enqueue time)
/// normalised.
fn normalised(job: &BotJob) -> Vec<u8> {
    let mut job = job.clone();
    job.job = format!("GAME:{}", job.version);
    job.game_id = "GAME".into();
    job.enqueued_at_ms = 0;
    if let Some(w) = job.view.white.as_mut().filter(|p| !p.bot) {
        w.id = "PERSON".into();
    }
    if let Some(b) = job.view.black.as_mut().filter(|p| !p.bot) {
        b.id = "PERSON".into();
    }
    // The commitment is a salted hash of each game's own shuffle: different by design.
    job.view.commitment = None;
    serde_json::to_vec(&job).expect("json")
}

/// A move that keeps two games' public histories alike: it neither moves nor captures a
/// piece whose identity differs between their layouts (so reveals and captured identities
/// are the same). A deterministic function of the public position.
fn alike_move(fen: &str, differ: &[Square]) -> Option<String> {
    let position = Position::from_fen(Variant::Hidden, fen).expect("view fen");
    position
        .legal_move_list()
        .iter()
        .filter(|m| !differ.contains(&m.from()) && !differ.contains(&m.to()))
        .map(|m| m.to_string())
        .min()
}

#[tokio::test]
async fn two_layouts_with_one_public_history_give_byte_identical_bot_jobs() {
    // The same pieces, some of them swapped, on both sides.
    let a = LAYOUT;
    let b = "QPNBBNRRPPPPPPP/qpnbbnrrppppppp";
    let differ = differing_squares(a, b);
    assert_eq!(differ.len(), 8);
    let (svc_a, svc_b) = (service_with(a), service_with(b));
    let (game_a, me_a) = vs_computer(&svc_a, Variant::Hidden, BotLevel::Hard, Color::White).await;
    let (game_b, me_b) = vs_computer(&svc_b, Variant::Hidden, BotLevel::Hard, Color::White).await;
    let mut compared = 0;
    for _ in 0..20 {
        let (_, g) = view(&svc_a, &game_a, "").await;
        if g.outcome.is_some() {
            break;
        }
        let Some(uci) = alike_move(&g.fen, &differ) else {
            break;
        };
        svc_a
            .act(&game_a, &me_a.id, "", None, &mv(&uci))
            .await
            .expect("a");
        svc_b
            .act(&game_b, &me_b.id, "", None, &mv(&uci))
            .await
            .expect("b");
        let (ja, jb) = (jobs(&svc_a), jobs(&svc_b));
        if ja.is_empty() && jb.is_empty() {
            break; // the game ended
        }
        assert_eq!((ja.len(), jb.len()), (1, 1));
        assert_eq!(
            String::from_utf8(normalised(&ja[0])).expect("utf8"),
            String::from_utf8(normalised(&jb[0])).expect("utf8"),
            "after {uci}"
        );
        compared += 1;
        // The bot's move, chosen from its job alone.
        let Some(reply) = alike_move(&ja[0].view.fen, &differ) else {
            break;
        };
        bot_plays(&svc_a, &ja[0], &reply).await;
        bot_plays(&svc_b, &jb[0], &reply).await;
    }
    assert!(compared >= 10, "{compared} jobs compared");
}
