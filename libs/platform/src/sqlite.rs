//! The embedded SQLite database of the single-process mode (`frontier dev`): one file that
//! the gateway's accounts and the rating service's games and ratings share, each owner
//! applying its own migrations (`migrations/sqlite/<owner>/`) and touching only its own
//! tables, as on Postgres.

use std::path::Path;
use std::str::FromStr as _;
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

/// Opens (creating if missing) the database at `path`: write-ahead logging (readers never
/// wait for the writer), `synchronous = NORMAL` (a commit survives a process crash; the
/// last commits may be lost on a power cut), foreign keys on, and a 5 s wait for the write
/// lock instead of failing at once.
pub async fn open(path: &Path) -> Result<SqlitePool, sqlx::Error> {
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(5));
    SqlitePoolOptions::new()
        .max_connections(4)
        .connect_with(options)
        .await
}

/// A private database in memory (tests, `--memory`): one connection, kept open, so every
/// query sees the same database.
pub async fn in_memory() -> Result<SqlitePool, sqlx::Error> {
    let options = SqliteConnectOptions::from_str("sqlite::memory:")?.foreign_keys(true);
    SqlitePoolOptions::new()
        .max_connections(1)
        .min_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_with(options)
        .await
}
