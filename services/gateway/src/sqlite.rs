//! [`SqliteAccounts`]: accounts in the embedded SQLite database of the single-process mode
//! (`frontier dev`), the tables of `migrations/sqlite/gateway/` (those of
//! `migrations/gateway/` in SQLite's types). Same rules as [`PgAccounts`](crate::accounts::PgAccounts):
//! usernames unique case-insensitively among registered players, Argon2id on the hashing
//! pool, guests without password.

use frontier_platform::PlayerId;
use sqlx::SqlitePool;

use crate::accounts::{
    Account, AccountError, Accounts, guest_name, prepare_registration, verify_login,
};
use crate::hashing::HashPool;

/// The gateway's SQLite migrations (`migrations/sqlite/gateway/`), tracked in sqlx's
/// default table as on Postgres.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite/gateway");

/// Accounts in SQLite.
#[derive(Clone)]
pub struct SqliteAccounts {
    pool: SqlitePool,
    hasher: HashPool,
}

impl SqliteAccounts {
    /// Uses this pool, applying the gateway's migrations first, and this hashing pool.
    pub async fn open(
        pool: SqlitePool,
        hasher: HashPool,
    ) -> Result<SqliteAccounts, sqlx::migrate::MigrateError> {
        MIGRATOR.run(&pool).await?;
        Ok(SqliteAccounts { pool, hasher })
    }
}

/// Grants or revokes the moderator role of the registered player with this username
/// (case-insensitively) in `frontier dev`'s database (apply [`MIGRATOR`] first): its stored
/// name, or `Ok(None)` when there is none. See `accounts::set_moderator_pg`.
pub async fn set_moderator(
    pool: &SqlitePool,
    username: &str,
    moderator: bool,
) -> Result<Option<String>, AccountError> {
    let row: Option<(String,)> = sqlx::query_as(
        "UPDATE players SET moderator = $2 WHERE username_key = $1 AND NOT guest RETURNING username",
    )
    .bind(username.to_ascii_lowercase())
    .bind(moderator)
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|(name,)| name))
}

fn now_ms() -> i64 {
    let now = time::OffsetDateTime::now_utc();
    i64::try_from(now.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

impl Accounts for SqliteAccounts {
    fn hashing_saturated(&self) -> bool {
        self.hasher.saturated()
    }

    async fn create_guest(&self) -> Result<Account, AccountError> {
        let account = Account {
            id: PlayerId::new(),
            name: guest_name(),
            guest: true,
            moderator: false,
        };
        sqlx::query(
            "INSERT INTO players (id, username, username_key, guest, created_at_ms) VALUES ($1, $2, $3, true, $4)",
        )
        .bind(account.id.0)
        .bind(&account.name)
        .bind(account.name.to_ascii_lowercase())
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(account)
    }

    async fn register(&self, username: &str, password: &str) -> Result<Account, AccountError> {
        let (account, hash) = prepare_registration(&self.hasher, username, password).await?;
        sqlx::query(
            "INSERT INTO players (id, username, username_key, password_hash, guest, created_at_ms) VALUES ($1, $2, $3, $4, false, $5)",
        )
        .bind(account.id.0)
        .bind(username)
        .bind(username.to_ascii_lowercase())
        .bind(hash)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(account)
    }

    async fn login(&self, username: &str, password: &str) -> Result<Account, AccountError> {
        if username.len() > 64 || password.len() > 128 {
            return Err(AccountError::BadCredentials);
        }
        let row: Option<(uuid::Uuid, String, Option<String>, bool)> = sqlx::query_as(
            "SELECT id, username, password_hash, moderator FROM players WHERE username_key = $1 AND NOT guest",
        )
        .bind(username.to_ascii_lowercase())
        .fetch_optional(&self.pool)
        .await?;
        verify_login(&self.hasher, row, password).await
    }

    async fn find(&self, id: PlayerId) -> Result<Option<Account>, AccountError> {
        let row: Option<(String, bool, bool)> =
            sqlx::query_as("SELECT username, guest, moderator FROM players WHERE id = $1")
                .bind(id.0)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(name, guest, moderator)| Account {
            id,
            name,
            guest,
            moderator,
        }))
    }

    async fn preferences(&self, id: PlayerId) -> Result<Option<String>, AccountError> {
        let row: Option<(String,)> =
            sqlx::query_as("SELECT preferences FROM player_preferences WHERE player_id = $1")
                .bind(id.0)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(json,)| json))
    }

    async fn set_preferences(&self, id: PlayerId, json: &str) -> Result<(), AccountError> {
        sqlx::query(
            "INSERT INTO player_preferences (player_id, preferences, updated_at_ms) VALUES ($1, $2, $3)
             ON CONFLICT (player_id) DO UPDATE SET preferences = excluded.preferences, updated_at_ms = excluded.updated_at_ms",
        )
        .bind(id.0)
        .bind(json)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
