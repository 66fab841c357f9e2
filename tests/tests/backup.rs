//! Backup and restore (docs/runbook.md): rated games are played and rated, the database is
//! dumped with `pg_dump -Fc` and restored with `pg_restore` into a fresh database, and a
//! rating service started on the restored one serves every game, rating and history as the
//! original does; every table holds the same rows.

mod common;

use std::net::SocketAddr;

use anyhow::Context as _;
use clap::Parser as _;
use common::{Client, Platform, get, post, start_game};
use frontier_proto::games::v1::Variant;
use frontier_proto::rating::v1 as pb;
use serde_json::json;

async fn register(at: SocketAddr, name: &str) -> anyhow::Result<(String, String)> {
    let username = format!("{name}{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let body = json!({"username": username, "password": "a long passphrase"}).to_string();
    let (status, reply) = post(at, "/api/register", &body).await?;
    anyhow::ensure!(status == 201, "{reply}");
    Ok((
        reply["token"].as_str().context("token")?.to_owned(),
        reply["player"]["id"].as_str().context("id")?.to_owned(),
    ))
}

/// Every row of every table of the public schema, as JSON text, sorted.
async fn rows(url: &str) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let pool = sqlx::PgPool::connect(url).await?;
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
    )
    .fetch_all(&pool)
    .await?;
    let mut all = Vec::new();
    for table in tables {
        let mut rows: Vec<String> =
            // The table names come from the catalogue, not from input.
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT to_jsonb(t)::text FROM \"{table}\" t"
            )))
                .fetch_all(&pool)
                .await?;
        rows.sort();
        all.push((table, rows));
    }
    pool.close().await;
    Ok(all)
}

fn run(program: &str, args: &[&str]) -> anyhow::Result<()> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("{program} runs (PostgreSQL's client tools)"))?;
    anyhow::ensure!(
        out.status.success(),
        "{program}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dump_restored_into_a_fresh_database_serves_every_game_and_rating() -> anyhow::Result<()>
{
    let p = Platform::start(1, 1, None).await?;
    let gw = p.gateways[0];
    let (ta, alice) = register(gw, "alice").await?;
    let (tb, bob) = register(gw, "bob").await?;
    let mut a = Client::with_token(gw, "alice", &ta, &alice).await?;
    let mut b = Client::with_token(gw, "bob", &tb, &bob).await?;
    // Three rated games, colours alternating, each a fool's mate.
    let mut games = Vec::new();
    for round in 0..3 {
        let (white, black) = if round % 2 == 0 {
            (&mut a, &mut b)
        } else {
            (&mut b, &mut a)
        };
        white
            .send(json!({"type": "create_board", "id": "c", "variant": "standard", "color": "white", "rated": true, "clock": {"minutes": 5, "increment": 0}}))
            .await?;
        let created = white
            .until("created", |v| v["type"] == "board_created")
            .await?;
        let game = created["game_id"].as_str().context("game")?.to_owned();
        black
            .send(json!({"type": "join_board", "id": "j", "code": created["code"]}))
            .await?;
        black
            .until("joined", |v| v["type"] == "board_joined")
            .await?;
        for (i, uci) in ["f2f3", "e7e5", "g2g4", "d8h4"].iter().enumerate() {
            let mover = if i % 2 == 0 { &mut *white } else { &mut *black };
            mover.play(&game, uci).await?;
        }
        games.push(game);
    }
    // And one casual game, resigned.
    let casual = start_game(&mut a, &mut b, "atomic", "white").await?;
    a.send(json!({"type": "resign", "id": "r", "game_id": casual}))
        .await?;
    a.ack("r").await?;
    games.push(casual);
    // Until every game is recorded.
    let deadline = tokio::time::Instant::now() + common::WAIT;
    for game in &games {
        while get(gw, &format!("/api/games/{game}")).await?.0 != 200 {
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "{game} not recorded"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    let dump = std::env::temp_dir().join(format!("frontier-backup-{}.dump", p.namespace));
    let dump_path = dump.to_str().context("a UTF-8 path")?;
    run("pg_dump", &["-Fc", "-f", dump_path, &p.database_url])?;
    let restored = frontier_testkit::fresh_database().await?;
    run(
        "pg_restore",
        &["--no-owner", "--exit-on-error", "-d", &restored, dump_path],
    )?;
    let _ = std::fs::remove_file(&dump);
    assert_eq!(
        rows(&restored).await?,
        rows(&p.database_url).await?,
        "every table holds the same rows"
    );

    // The rating service started on the restored database (its migrations find them done).
    let namespace = frontier_testkit::unique_namespace();
    let config = frontier_rating::Config::try_parse_from([
        "rating",
        "--database-url",
        &restored,
        "--nats-url",
        &p.servers.nats,
        "--namespace",
        &namespace,
    ])?;
    let service = frontier_rating::build(&config).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let restored_url = format!("http://{}", listener.local_addr()?);
    let shutdown = frontier_platform::Shutdown::new();
    let task = tokio::spawn(service.serve(listener, shutdown.clone()));
    let mut original = frontier_proto::rating_client(&p.rating_url).map_err(anyhow::Error::msg)?;
    let mut copy = frontier_proto::rating_client(&restored_url).map_err(anyhow::Error::msg)?;
    for game in &games {
        let request = pb::GetGameRequest {
            game_id: game.clone(),
        };
        assert_eq!(
            copy.get_game(request.clone()).await?.into_inner(),
            original.get_game(request).await?.into_inner(),
            "game {game}"
        );
    }
    for player in [&alice, &bob] {
        let request = pb::ListPlayerGamesRequest {
            player_id: player.clone(),
            variant: Variant::Unspecified as i32,
            before: None,
            limit: Some(100),
        };
        let page = copy.list_player_games(request.clone()).await?.into_inner();
        assert_eq!(page.games.len(), games.len());
        assert_eq!(
            page,
            original.list_player_games(request).await?.into_inner()
        );
        let request = pb::RatingHistoryRequest {
            player_id: player.clone(),
            variant: Variant::Standard as i32,
        };
        let history = copy.rating_history(request.clone()).await?.into_inner();
        assert_eq!(history.points.len(), 3, "three rated games");
        assert_eq!(
            history,
            original.rating_history(request).await?.into_inner()
        );
        // Ratings as of now: the RD grows with the time since the last game, read a moment
        // apart here, so it is compared to a millionth.
        let request = pb::GetPlayerRequest {
            player_id: player.clone(),
        };
        let (c, o) = (
            copy.get_player(request.clone()).await?.into_inner(),
            original.get_player(request).await?.into_inner(),
        );
        assert_eq!(c.ratings.len(), o.ratings.len());
        for (c, o) in c.ratings.iter().zip(&o.ratings) {
            assert_eq!(
                (c.variant, c.rating, c.games, c.wins, c.draws, c.losses),
                (o.variant, o.rating, o.games, o.wins, o.draws, o.losses)
            );
            assert!((c.rd - o.rd).abs() < 1e-6, "{} vs {}", c.rd, o.rd);
        }
    }
    shutdown.trigger();
    task.await??;
    p.stop().await;
    Ok(())
}
