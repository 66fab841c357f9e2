//! The same scenarios over both rating stores: [`MemoryStore`] (fast, no services) and
//! [`PgStore`] (real Postgres). Each scenario states what every store must do: a game id
//! seen twice changes nothing, Glicko-2 is applied the same way (idle time included),
//! casual, aborted and guest games are stored and not rated, bad records are refused as
//! invalid, game lists page newest first with no cursor on the last page, records read
//! back as they were received. Then the gRPC edge over a memory store: answers, and
//! refusals with their typed client error codes.

use std::sync::Arc;

use frontier_glicko2::{INITIAL, PROVISIONAL_RD, Score, rate_game};
use frontier_platform::grpc::refusal_code;
use frontier_platform::time::ManualClock;
use frontier_proto::games::v1::{
    FinishedGame, MoveRecord, Player, TimeControl, Variant as PbVariant,
};
use frontier_proto::rating::v1 as pb;
use frontier_protocol::ErrorCode;
use frontier_rating::grpc::RatingsService;
use frontier_rating::model::{Counts, Cursor, Standing, at};
use frontier_rating::{
    MIGRATOR, MemoryStore, PgStore, RatingStore, RecordError, Recorded, queries,
};
use frontier_rules::Variant;
use uuid::Uuid;

const NOW: i64 = 1_800_000_000_000;
const DAY_MS: i64 = 24 * 3_600_000;

fn player(id: Uuid, name: &str) -> Player {
    Player {
        id: id.to_string(),
        name: name.to_owned(),
        guest: false,
        bot: false,
        bot_level: 0,
    }
}

fn finished(white: Uuid, black: Uuid, result: &str, ended_at_ms: i64) -> FinishedGame {
    FinishedGame {
        game_id: Uuid::now_v7().to_string(),
        variant: PbVariant::Standard as i32,
        rated: true,
        time_control: Some(TimeControl {
            initial_seconds: 300,
            increment_seconds: 3,
        }),
        white: Some(player(white, "white")),
        black: Some(player(black, "black")),
        result: result.to_owned(),
        outcome: format!("{result}-resignation"),
        moves: vec![
            MoveRecord {
                ply: 1,
                uci: "e2e4".into(),
                at_ms: 1200,
                clock_ms: Some(301_800),
                ..Default::default()
            },
            MoveRecord {
                ply: 2,
                uci: "e7e5".into(),
                at_ms: 2500,
                clock_ms: Some(299_700),
                ..Default::default()
            },
        ],
        created_at_ms: ended_at_ms - 10_000,
        started_at_ms: ended_at_ms - 9_000,
        ended_at_ms,
        start_fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
        final_fen: "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2".into(),
        ..Default::default()
    }
}

async fn standing<S: RatingStore>(store: &S, player: Uuid) -> Option<Standing> {
    store
        .standings(player)
        .await
        .expect("standings")
        .into_iter()
        .find(|(v, _)| *v == Variant::Standard)
        .map(|(_, s)| s)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

async fn a_game_seen_twice_changes_nothing_the_second_time<S: RatingStore>(store: &S) {
    let (w, b) = (Uuid::now_v7(), Uuid::now_v7());
    let game = finished(w, b, "white", NOW);
    assert_eq!(
        store.record_game(&game).await.expect("recorded"),
        Recorded::Stored { rated: true }
    );
    let after_first = standing(store, w).await;
    assert_eq!(
        store.record_game(&game).await.expect("recorded"),
        Recorded::Duplicate
    );
    assert_eq!(standing(store, w).await, after_first);
    let expected = rate_game(INITIAL, 0.0, INITIAL, Score::Win);
    let s = after_first.expect("rated");
    assert!(close(s.rating.rating, expected.rating) && close(s.rating.rd, expected.rd));
    assert_eq!(s.rated_games, 1);
    assert_eq!(
        store
            .history(w, Variant::Standard)
            .await
            .expect("history")
            .len(),
        1
    );
}

async fn idle_time_grows_rd_before_the_next_game<S: RatingStore>(store: &S) {
    let (w, b) = (Uuid::now_v7(), Uuid::now_v7());
    store
        .record_game(&finished(w, b, "white", NOW))
        .await
        .expect("first");
    // Thirty days later, the same two: each is rated from its RD grown for the idle time,
    // against the other's grown RD.
    let later = NOW + 30 * DAY_MS;
    let (sw, sb) = (
        standing(store, w).await.expect("w"),
        standing(store, b).await.expect("b"),
    );
    let idle_hours = 30.0 * 24.0;
    let expected_w = rate_game(sw.rating, idle_hours, sb.as_of(at(later)), Score::Loss);
    let expected_b = rate_game(sb.rating, idle_hours, sw.as_of(at(later)), Score::Win);
    store
        .record_game(&finished(w, b, "black", later))
        .await
        .expect("second");
    let (nw, nb) = (
        standing(store, w).await.expect("w"),
        standing(store, b).await.expect("b"),
    );
    assert!(close(nw.rating.rating, expected_w.rating) && close(nw.rating.rd, expected_w.rd));
    assert!(close(nb.rating.rating, expected_b.rating) && close(nb.rating.rd, expected_b.rd));
    assert_eq!(nw.last_rated_at, Some(at(later)));
    let points = store.history(b, Variant::Standard).await.expect("history");
    assert_eq!(points.len(), 2);
    assert!(points[0].at < points[1].at, "oldest first");
}

async fn casual_aborted_and_guest_games_are_stored_not_rated<S: RatingStore>(store: &S) {
    let (w, b) = (Uuid::now_v7(), Uuid::now_v7());
    let mut casual = finished(w, b, "white", NOW);
    casual.rated = false;
    let mut aborted = finished(w, b, "aborted", NOW + 1);
    aborted.outcome = "aborted".into();
    let mut guest = finished(w, b, "black", NOW + 2);
    if let Some(p) = guest.white.as_mut() {
        p.guest = true;
    }
    let draw = {
        let mut g = finished(w, b, "draw", NOW + 3);
        g.rated = false;
        g
    };
    for g in [&casual, &aborted, &guest, &draw] {
        assert_eq!(
            store.record_game(g).await.expect("stored"),
            Recorded::Stored { rated: false }
        );
    }
    assert_eq!(standing(store, w).await, None, "no rating row");
    let counts = store.counts(w).await.expect("counts");
    assert_eq!(
        counts,
        vec![(
            Variant::Standard,
            Counts {
                games: 3,
                wins: 1,
                draws: 1,
                losses: 1
            }
        )],
        "aborted games count nowhere"
    );
    for g in [&casual, &aborted, &guest, &draw] {
        let id = Uuid::parse_str(&g.game_id).expect("uuid");
        assert!(store.game(id).await.expect("read").is_some());
    }
    // Any finished game counts, rated or not, aborted or not.
    let nobody = Uuid::now_v7();
    assert_eq!(
        store
            .players_with_games(&[nobody, b, w, b])
            .await
            .expect("players"),
        vec![b, w],
        "in the order asked, each once"
    );
}

/// Defence in depth: a game with a computer player is never rated, even when its record
/// says rated — whether the bot is flagged, or only recognisable by its fixed id.
async fn games_against_the_computer_are_never_rated<S: RatingStore>(store: &S) {
    let w = Uuid::now_v7();
    let hard = frontier_platform::PlayerId::bot(frontier_protocol::BotLevel::Hard).0;
    let mut flagged = finished(w, hard, "white", NOW);
    if let Some(p) = flagged.black.as_mut() {
        p.bot = true;
        p.bot_level = frontier_proto::games::v1::BotLevel::Hard as i32;
        p.name = "Frontier Bot · Hard".into();
    }
    let easy = frontier_platform::PlayerId::bot(frontier_protocol::BotLevel::Easy).0;
    let unflagged = finished(easy, w, "black", NOW + 1);
    for g in [&flagged, &unflagged] {
        assert!(g.rated, "the record says rated");
        assert_eq!(
            store.record_game(g).await.expect("stored"),
            Recorded::Stored { rated: false }
        );
    }
    assert_eq!(
        standing(store, w).await,
        None,
        "no rating row for the person"
    );
    assert_eq!(standing(store, hard).await, None, "nor for the bot");
    let id = Uuid::parse_str(&flagged.game_id).expect("uuid");
    assert_eq!(
        store.game(id).await.expect("read"),
        Some(flagged),
        "the bot's flag and level read back"
    );
}

async fn records_that_can_never_be_accepted_are_invalid<S: RatingStore>(store: &S) {
    let (w, b) = (Uuid::now_v7(), Uuid::now_v7());
    let mut bad_id = finished(w, b, "white", NOW);
    bad_id.game_id = "not-a-uuid".into();
    let mut no_variant = finished(w, b, "white", NOW);
    no_variant.variant = PbVariant::Unspecified as i32;
    let mut no_black = finished(w, b, "white", NOW);
    no_black.black = None;
    let mut bad_result = finished(w, b, "resigned", NOW);
    bad_result.outcome = "x".into();
    let mut endless = finished(w, b, "white", NOW);
    endless.time_control = Some(TimeControl {
        initial_seconds: u32::MAX,
        increment_seconds: 0,
    });
    for g in [bad_id, no_variant, no_black, bad_result, endless] {
        assert!(
            matches!(store.record_game(&g).await, Err(RecordError::Invalid(_))),
            "{g:?}"
        );
    }
    assert!(store.counts(w).await.expect("counts").is_empty());
}

async fn games_page_newest_first_and_the_last_page_has_no_cursor<S: RatingStore>(store: &S) {
    let (me, other) = (Uuid::now_v7(), Uuid::now_v7());
    let mut ids = Vec::new();
    for i in 0..5 {
        let mut g = finished(me, other, "white", NOW + i * 1000);
        g.variant = PbVariant::Atomic as i32;
        ids.push(g.game_id.clone());
        store.record_game(&g).await.expect("stored");
    }
    // Two games ending at the same millisecond are ordered by id.
    let mut tie = finished(other, me, "draw", NOW + 4000);
    tie.variant = PbVariant::Atomic as i32;
    store.record_game(&tie).await.expect("stored");
    let mut expected = ids.clone();
    expected.push(tie.game_id.clone());
    expected.sort_by_key(|id| {
        let i = ids.iter().position(|x| x == id).map_or(4, |p| p as i64);
        std::cmp::Reverse((i, Uuid::parse_str(id).expect("uuid")))
    });
    let player = me.to_string();
    let mut listed = Vec::new();
    let mut before: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = queries::games(store, &player, None, before.as_deref(), Some(2))
            .await
            .expect("page");
        pages += 1;
        listed.extend(page.games.iter().map(|g| g.id.to_string()));
        match page.next {
            Some(c) => before = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(listed, expected, "every game once, newest first");
    assert_eq!(
        pages, 3,
        "six games in pages of two: the full last page has no cursor"
    );
    let whole = queries::games(store, &player, None, None, Some(6))
        .await
        .expect("page");
    assert_eq!((whole.games.len(), whole.next), (6, None));
    let standard = queries::games(store, &player, Some(Variant::Standard), None, None)
        .await
        .expect("page");
    assert!(standard.games.is_empty());
    for (limit, before) in [(Some(0), None), (Some(101), None), (None, Some("nonsense"))] {
        assert!(matches!(
            queries::games(store, &player, None, before, limit).await,
            Err(queries::QueryError::BadField(_))
        ));
    }
    assert!(matches!(
        queries::games(store, "not-a-uuid", None, None, None).await,
        Err(queries::QueryError::PlayerNotFound)
    ));
    // A cursor is a position, so one made by hand after every game lists them all.
    let far = Cursor {
        ended: at(NOW + DAY_MS),
        id: Uuid::max(),
    };
    let all = queries::games(store, &player, None, Some(&far.to_string()), Some(100))
        .await
        .expect("page");
    assert_eq!(all.games.len(), 6);
}

async fn the_leaderboard_ranks_by_rating_with_the_latest_recorded_name<S: RatingStore>(store: &S) {
    let (a, b, c) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    let mut g = finished(a, b, "white", NOW);
    g.variant = PbVariant::Hidden as i32;
    store.record_game(&g).await.expect("stored");
    let mut g = finished(c, a, "black", NOW + 1000);
    g.variant = PbVariant::Hidden as i32;
    if let Some(p) = g.black.as_mut() {
        p.name = "ann".into();
    }
    store.record_game(&g).await.expect("stored");
    let board = store
        .leaderboard(Variant::Hidden, 400.0, 10)
        .await
        .expect("board");
    let order: Vec<Uuid> = board.iter().map(|l| l.player_id).collect();
    assert_eq!(order.first(), Some(&a), "two wins first");
    assert_eq!(board.len(), 3);
    assert_eq!(board[0].name, "ann", "the name of the latest rated game");
    assert_eq!(board[0].rated_games, 2);
    assert!(
        board.windows(2).all(|w| w[0].rating >= w[1].rating),
        "{board:?}"
    );
    assert_eq!(
        store
            .leaderboard(Variant::Hidden, 400.0, 1)
            .await
            .expect("board")
            .len(),
        1
    );
    // Nobody is past provisional after two games: the public leaderboard is empty.
    assert!(board.iter().all(|l| l.rd > PROVISIONAL_RD));
    assert!(
        queries::leaderboard(store, Some(Variant::Hidden), None)
            .await
            .expect("board")
            .is_empty()
    );
    assert!(matches!(
        queries::leaderboard(store, None, None).await,
        Err(queries::QueryError::BadField(_))
    ));
}

async fn records_read_back_as_received<S: RatingStore>(store: &S) {
    let (w, b) = (Uuid::now_v7(), Uuid::now_v7());
    let mut game = finished(w, b, "draw", NOW);
    game.moves[1].reveal_square = "e5".into();
    game.moves[1].reveal_role = "pawn".into();
    game.moves[0].clock_ms = None;
    store.record_game(&game).await.expect("stored");
    let id = Uuid::parse_str(&game.game_id).expect("uuid");
    assert_eq!(store.game(id).await.expect("read"), Some(game));
    assert_eq!(store.game(Uuid::now_v7()).await.expect("read"), None);
}

async fn every_scenario<S: RatingStore>(store: S) {
    a_game_seen_twice_changes_nothing_the_second_time(&store).await;
    idle_time_grows_rd_before_the_next_game(&store).await;
    casual_aborted_and_guest_games_are_stored_not_rated(&store).await;
    games_against_the_computer_are_never_rated(&store).await;
    records_that_can_never_be_accepted_are_invalid(&store).await;
    games_page_newest_first_and_the_last_page_has_no_cursor(&store).await;
    the_leaderboard_ranks_by_rating_with_the_latest_recorded_name(&store).await;
    records_read_back_as_received(&store).await;
}

#[tokio::test]
async fn the_memory_store_passes_every_scenario() {
    every_scenario(MemoryStore::new()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_postgres_store_passes_every_scenario() {
    let url = frontier_testkit::fresh_database().await.expect("Postgres");
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    MIGRATOR.run(&pool).await.expect("migrate");
    every_scenario(PgStore::new(pool)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_store_passes_every_scenario() {
    let pool = frontier_platform::sqlite::in_memory()
        .await
        .expect("SQLite");
    let store = frontier_rating::sqlite::SqliteStore::open(pool)
        .await
        .expect("migrate");
    every_scenario(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sqlite_store_keeps_everything_in_its_file_across_reopening() {
    let path = std::env::temp_dir().join(format!("frontier-rating-{}.db", Uuid::new_v4()));
    let store = frontier_rating::sqlite::SqliteStore::open(
        frontier_platform::sqlite::open(&path).await.expect("open"),
    )
    .await
    .expect("migrate");
    let (white, black) = (Uuid::now_v7(), Uuid::now_v7());
    let game = finished(white, black, "black", NOW);
    store.record_game(&game).await.expect("recorded");
    let standings = |s: frontier_rating::sqlite::SqliteStore, who: Uuid| async move {
        s.standings(who).await.expect("standings")
    };
    let before = (
        standings(store.clone(), white).await,
        standings(store.clone(), black).await,
    );
    drop(store);
    // Opened again: migrations already applied, the same rows.
    let again = frontier_rating::sqlite::SqliteStore::open(
        frontier_platform::sqlite::open(&path)
            .await
            .expect("reopen"),
    )
    .await
    .expect("migrations are idempotent");
    let after = (
        standings(again.clone(), white).await,
        standings(again.clone(), black).await,
    );
    assert_eq!(before, after);
    assert_eq!(before.0.len(), 1, "rated: {before:?}");
    assert_eq!(
        again.record_game(&game).await.expect("seen"),
        Recorded::Duplicate
    );
    let _ = std::fs::remove_file(&path);
}

#[tokio::test]
async fn the_read_api_answers_and_refuses_with_typed_codes() {
    let store = MemoryStore::new();
    let (w, b) = (Uuid::now_v7(), Uuid::now_v7());
    let game = finished(w, b, "black", NOW);
    store.record_game(&game).await.expect("stored");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let shutdown = frontier_platform::Shutdown::new();
    let clock = Arc::new(ManualClock::at(NOW));
    let server = tokio::spawn(frontier_rating::serve_api(
        listener,
        RatingsService::new(store, clock.clone()),
        shutdown.clone(),
    ));
    let mut client = frontier_proto::rating_client(&url).expect("client");

    let player = client
        .get_player(pb::GetPlayerRequest {
            player_id: b.to_string(),
        })
        .await
        .expect("player")
        .into_inner();
    let won = rate_game(INITIAL, 0.0, INITIAL, Score::Win);
    let standard = &player.ratings[0];
    assert_eq!(player.ratings.len(), 3);
    assert_eq!(standard.variant, PbVariant::Standard as i32);
    assert!(close(standard.rating, won.rating) && close(standard.rd, won.rd));
    assert_eq!(
        (standard.games, standard.wins, standard.provisional),
        (1, 1, true)
    );
    // Thirty days on, the RD served has grown with the idle time; the rating has not moved.
    clock.advance(30 * DAY_MS);
    let later = client
        .get_player(pb::GetPlayerRequest {
            player_id: b.to_string(),
        })
        .await
        .expect("player")
        .into_inner();
    let grown = Standing {
        rating: won,
        rated_games: 1,
        last_rated_at: Some(at(NOW)),
    }
    .as_of(at(NOW + 30 * DAY_MS));
    assert!(grown.rd > won.rd + 1.0);
    assert!(close(later.ratings[0].rd, grown.rd) && close(later.ratings[0].rating, won.rating));

    let page = client
        .list_player_games(pb::ListPlayerGamesRequest {
            player_id: w.to_string(),
            limit: Some(1),
            ..Default::default()
        })
        .await
        .expect("page")
        .into_inner();
    assert_eq!(page.games.len(), 1);
    assert_eq!(page.next, None, "one game, one page");

    let record = client
        .get_game(pb::GetGameRequest {
            game_id: game.game_id.clone(),
        })
        .await
        .expect("record")
        .into_inner();
    assert_eq!(record, game);
    let pgn = client
        .get_pgn(pb::GetGameRequest {
            game_id: game.game_id.clone(),
        })
        .await
        .expect("pgn")
        .into_inner()
        .text;
    for needle in [
        "[Result \"0-1\"]",
        "[TimeControl \"300+3\"]",
        "1. e4 e5 0-1",
    ] {
        assert!(pgn.contains(needle), "{needle} in\n{pgn}");
    }

    let refused = [
        (
            client
                .list_player_games(pb::ListPlayerGamesRequest {
                    player_id: w.to_string(),
                    before: Some("nonsense".into()),
                    ..Default::default()
                })
                .await,
            tonic::Code::InvalidArgument,
            ErrorCode::BadField,
        ),
        (
            client
                .list_player_games(pb::ListPlayerGamesRequest {
                    player_id: w.to_string(),
                    limit: Some(0),
                    ..Default::default()
                })
                .await,
            tonic::Code::InvalidArgument,
            ErrorCode::BadField,
        ),
        (
            client
                .list_player_games(pb::ListPlayerGamesRequest {
                    player_id: "nobody".into(),
                    ..Default::default()
                })
                .await,
            tonic::Code::NotFound,
            ErrorCode::PlayerNotFound,
        ),
    ];
    for (result, code, reason) in refused {
        let status = result.expect_err("refused");
        assert_eq!((status.code(), refusal_code(&status)), (code, Some(reason)));
    }
    for result in [
        client
            .get_game(pb::GetGameRequest {
                game_id: Uuid::now_v7().to_string(),
            })
            .await
            .map(|_| ()),
        client
            .get_pgn(pb::GetGameRequest {
                game_id: "not-a-uuid".into(),
            })
            .await
            .map(|_| ()),
    ] {
        let status = result.expect_err("refused");
        assert_eq!(
            (status.code(), refusal_code(&status)),
            (tonic::Code::NotFound, Some(ErrorCode::GameNotFound))
        );
    }
    let players = client
        .players_with_games(pb::PlayersWithGamesRequest {
            player_ids: vec![
                "not-a-uuid".into(),
                Uuid::now_v7().to_string(),
                w.to_string(),
            ],
        })
        .await
        .expect("players")
        .into_inner();
    assert_eq!(players.player_ids, vec![w.to_string()]);
    let status = client
        .players_with_games(pb::PlayersWithGamesRequest {
            player_ids: vec![w.to_string(); 1001],
        })
        .await
        .expect_err("too many");
    assert_eq!(refusal_code(&status), Some(ErrorCode::BadField));
    let status = client
        .rating_history(pb::RatingHistoryRequest {
            player_id: w.to_string(),
            variant: PbVariant::Unspecified as i32,
        })
        .await
        .expect_err("variant required");
    assert_eq!(refusal_code(&status), Some(ErrorCode::BadField));
    shutdown.trigger();
    server.await.expect("join").expect("served");
}
