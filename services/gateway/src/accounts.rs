//! Accounts: guests and registered players, in Postgres ([`PgAccounts`]) or in memory
//! ([`MemoryAccounts`]), behind one trait. Passwords are hashed with Argon2id on the
//! bounded [`HashPool`], off the async runtime. Guests expire: [`expire_guests`] (asking
//! the rating service which of them have games).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use std::time::Duration;

use frontier_platform::PlayerId;
use sqlx::PgPool;

use crate::hashing::{HashError, HashPool};

/// A player account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// Id.
    pub id: PlayerId,
    /// Display name.
    pub name: String,
    /// Guest or registered.
    pub guest: bool,
    /// A fair-play moderator (granted by `frontier admin grant-moderator`; never a guest).
    pub moderator: bool,
}

/// Why an account operation failed.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// The username is taken (case-insensitively).
    #[error("that username is taken")]
    UsernameTaken,
    /// The username is not acceptable.
    #[error("{0}")]
    BadUsername(&'static str),
    /// The password is too weak.
    #[error("{0}")]
    WeakPassword(&'static str),
    /// Wrong username or password.
    #[error("wrong username or password")]
    BadCredentials,
    /// Password hashing is saturated: refused at once, try again shortly.
    #[error("too many logins right now; try again shortly")]
    Busy,
    /// The database failed.
    #[error("account storage: {0}")]
    Storage(String),
}

impl From<sqlx::Error> for AccountError {
    fn from(e: sqlx::Error) -> Self {
        // A unique violation is a taken name (two registrations racing); anything else is
        // a storage failure.
        if let sqlx::Error::Database(db) = &e
            && db.is_unique_violation()
        {
            return AccountError::UsernameTaken;
        }
        AccountError::Storage(e.to_string())
    }
}

/// Checks a username: 3–20 ASCII letters, digits, `_` or `-`, starting with a letter, and
/// not starting with "guest" (reserved for generated guest names).
pub fn check_username(name: &str) -> Result<(), AccountError> {
    if !(3..=20).contains(&name.len()) {
        return Err(AccountError::BadUsername(
            "a username is 3 to 20 characters",
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(AccountError::BadUsername(
            "a username uses letters, digits, _ and - only",
        ));
    }
    if !name.as_bytes()[0].is_ascii_alphabetic() {
        return Err(AccountError::BadUsername("a username starts with a letter"));
    }
    if name.to_ascii_lowercase().starts_with("guest") {
        return Err(AccountError::BadUsername(
            "usernames starting with \"guest\" are reserved",
        ));
    }
    Ok(())
}

const COMMON_PASSWORDS: &[&str] = &[
    "password",
    "password1",
    "12345678",
    "123456789",
    "1234567890",
    "qwertyui",
    "qwerty123",
    "iloveyou",
    "11111111",
    "abc12345",
    "chess123",
    "letmein1",
    "sunshine",
    "football",
];

/// Checks a password: 8 to 128 characters, not all one character, not containing the
/// username, not a well-known password.
pub fn check_password(username: &str, password: &str) -> Result<(), AccountError> {
    let chars = password.chars().count();
    if chars < 8 {
        return Err(AccountError::WeakPassword(
            "a password has at least 8 characters",
        ));
    }
    if password.len() > 128 {
        return Err(AccountError::WeakPassword(
            "a password has at most 128 bytes",
        ));
    }
    let mut it = password.chars();
    let first = it.next();
    if it.all(|c| Some(c) == first) {
        return Err(AccountError::WeakPassword(
            "a password is not one character repeated",
        ));
    }
    let lower = password.to_lowercase();
    if lower.contains(&username.to_ascii_lowercase()) {
        return Err(AccountError::WeakPassword(
            "a password does not contain the username",
        ));
    }
    if COMMON_PASSWORDS.contains(&lower.as_str()) {
        return Err(AccountError::WeakPassword("that password is too common"));
    }
    Ok(())
}

impl From<HashError> for AccountError {
    fn from(e: HashError) -> Self {
        match e {
            HashError::Busy => AccountError::Busy,
            HashError::Failed(cause) => AccountError::Storage(cause),
        }
    }
}

/// Checks a registration and hashes its password: the new account and its hash.
pub(crate) async fn prepare_registration(
    hasher: &HashPool,
    username: &str,
    password: &str,
) -> Result<(Account, String), AccountError> {
    check_username(username)?;
    check_password(username, password)?;
    let hash = hasher.hash(password.to_owned()).await?;
    Ok((
        Account {
            id: PlayerId::new(),
            name: username.to_owned(),
            guest: false,
            moderator: false,
        },
        hash,
    ))
}

/// A generated guest name: `Guest` and five digits.
pub fn guest_name() -> String {
    let mut bytes = [0u8; 4];
    let _ = getrandom::fill(&mut bytes);
    format!("Guest{:05}", u32::from_le_bytes(bytes) % 100_000)
}

/// The end of a login: the stored registered player found by username (id, name, password
/// hash, moderator), if any, checked against `password` on the hashing pool.
pub(crate) async fn verify_login(
    hasher: &HashPool,
    row: Option<(uuid::Uuid, String, Option<String>, bool)>,
    password: &str,
) -> Result<Account, AccountError> {
    let Some((id, name, Some(hash), moderator)) = row else {
        return Err(AccountError::BadCredentials);
    };
    if hasher.verify(password.to_owned(), hash).await? {
        Ok(Account {
            id: PlayerId(id),
            name,
            guest: false,
            moderator,
        })
    } else {
        Err(AccountError::BadCredentials)
    }
}

/// Account storage.
pub trait Accounts: Send + Sync + 'static {
    /// Creates a guest.
    fn create_guest(&self) -> impl Future<Output = Result<Account, AccountError>> + Send;
    /// Registers a player.
    fn register(
        &self,
        username: &str,
        password: &str,
    ) -> impl Future<Output = Result<Account, AccountError>> + Send;
    /// Checks credentials.
    fn login(
        &self,
        username: &str,
        password: &str,
    ) -> impl Future<Output = Result<Account, AccountError>> + Send;
    /// The account with this id, if there is one (the dashboard's name and guest flag).
    fn find(
        &self,
        id: PlayerId,
    ) -> impl Future<Output = Result<Option<Account>, AccountError>> + Send;
    /// Whether password hashing would refuse a job now (login and registration are then
    /// refused before any other work).
    fn hashing_saturated(&self) -> bool;
    /// A player's stored preferences of the web client: the JSON object last stored with
    /// [`Accounts::set_preferences`], if any.
    fn preferences(
        &self,
        id: PlayerId,
    ) -> impl Future<Output = Result<Option<String>, AccountError>> + Send;
    /// Stores a player's preferences (a JSON object the caller validated), replacing any
    /// before them.
    fn set_preferences(
        &self,
        id: PlayerId,
        json: &str,
    ) -> impl Future<Output = Result<(), AccountError>> + Send;
}

/// Accounts in Postgres.
#[derive(Clone)]
pub struct PgAccounts {
    pool: PgPool,
    hasher: HashPool,
}

/// The gateway's migrations (`migrations/gateway/`: accounts), embedded at build time (no
/// database needed to build), tracked in sqlx's default table `_sqlx_migrations`.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/gateway");

impl PgAccounts {
    /// Uses this pool (run [`MIGRATOR`] first) and this hashing pool.
    pub fn new(pool: PgPool, hasher: HashPool) -> PgAccounts {
        PgAccounts { pool, hasher }
    }
}

impl Accounts for PgAccounts {
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
            "INSERT INTO players (id, username, username_key, guest) VALUES ($1, $2, $3, true)",
        )
        .bind(account.id.0)
        .bind(&account.name)
        .bind(account.name.to_ascii_lowercase())
        .execute(&self.pool)
        .await?;
        Ok(account)
    }

    async fn register(&self, username: &str, password: &str) -> Result<Account, AccountError> {
        let (account, hash) = prepare_registration(&self.hasher, username, password).await?;
        sqlx::query(
            "INSERT INTO players (id, username, username_key, password_hash, guest) VALUES ($1, $2, $3, $4, false)",
        )
        .bind(account.id.0)
        .bind(username)
        .bind(username.to_ascii_lowercase())
        .bind(hash)
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
            sqlx::query_as("SELECT preferences::text FROM player_preferences WHERE player_id = $1")
                .bind(id.0)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(json,)| json))
    }

    async fn set_preferences(&self, id: PlayerId, json: &str) -> Result<(), AccountError> {
        sqlx::query(
            "INSERT INTO player_preferences (player_id, preferences, updated_at) VALUES ($1, $2::jsonb, now())
             ON CONFLICT (player_id) DO UPDATE SET preferences = EXCLUDED.preferences, updated_at = now()",
        )
        .bind(id.0)
        .bind(json)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

/// Removes guests created more than `older_than` ago that have no finished game, in
/// batches of `batch`, oldest first; returns how many were removed. Which guests have a
/// finished game is the rating service's to say (it owns the games): each batch of
/// candidates is checked with its `PlayersWithGames`, and guests with a game are kept, so
/// their games stay linked to a player page. Safe to run on several gateways at once: a
/// guest deleted twice is deleted once, and each pass walks the candidates in order
/// instead of revisiting the kept ones.
pub async fn expire_guests(
    pool: &PgPool,
    ratings: &crate::records::RatingClient,
    older_than: Duration,
    batch: i64,
) -> Result<u64, AccountError> {
    let age_ms = i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
    let batch = batch.max(1);
    let mut removed = 0;
    let mut after: Option<(time::OffsetDateTime, uuid::Uuid)> = None;
    loop {
        let candidates: Vec<(uuid::Uuid, time::OffsetDateTime)> = sqlx::query_as(
            "SELECT id, created_at FROM players
             WHERE guest
               AND created_at < now() - make_interval(secs => $1::double precision / 1000)
               AND ($2::timestamptz IS NULL OR (created_at, id) > ($2, $3))
             ORDER BY created_at, id
             LIMIT $4",
        )
        .bind(age_ms)
        .bind(after.map(|(at, _)| at))
        .bind(after.map(|(_, id)| id))
        .bind(batch)
        .fetch_all(pool)
        .await?;
        let Some(last) = candidates.last() else {
            return Ok(removed);
        };
        after = Some((last.1, last.0));
        let asked: Vec<String> = candidates.iter().map(|(id, _)| id.to_string()).collect();
        let with_games = ratings
            .clone()
            .players_with_games(frontier_proto::rating::v1::PlayersWithGamesRequest {
                player_ids: asked,
            })
            .await
            .map_err(|status| {
                AccountError::Storage(format!("rating service: {}", status.message()))
            })?
            .into_inner()
            .player_ids;
        let idle: Vec<uuid::Uuid> = candidates
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| !with_games.contains(&id.to_string()))
            .collect();
        removed += sqlx::query("DELETE FROM players WHERE guest AND id = ANY($1)")
            .bind(&idle)
            .execute(pool)
            .await?
            .rows_affected();
        if (candidates.len() as i64) < batch {
            return Ok(removed);
        }
    }
}

/// Grants (`true`) or revokes (`false`) the fair-play moderator role of the registered
/// player with this username (case-insensitively): the player's name as stored, or
/// `Ok(None)` when no registered player has that name. The operator's command (`frontier
/// admin grant-moderator`); the role reaches the player's tokens at its next sign-in.
pub async fn set_moderator_pg(
    pool: &PgPool,
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

/// [`set_moderator_pg`] or its SQLite twin on the accounts database at `database_url`
/// (`postgres://…`, or `sqlite:PATH` for `frontier dev`'s `frontier.db`), applying the
/// gateway's migrations first (so the role's column exists whichever gateway version ran
/// there last).
pub async fn set_moderator_at(
    database_url: &str,
    username: &str,
    moderator: bool,
) -> anyhow::Result<Option<String>> {
    use anyhow::Context as _;
    if let Some(path) = database_url.strip_prefix("sqlite:") {
        let path = path.strip_prefix("//").unwrap_or(path);
        if !std::path::Path::new(path).exists() {
            anyhow::bail!("no database at {path}");
        }
        let pool = frontier_platform::sqlite::open(std::path::Path::new(path))
            .await
            .with_context(|| format!("opening {path}"))?;
        crate::sqlite::MIGRATOR
            .run(&pool)
            .await
            .context("applying the gateway's migrations")?;
        let name = crate::sqlite::set_moderator(&pool, username, moderator).await;
        pool.close().await;
        return Ok(name?);
    }
    let pool = frontier_platform::config::postgres_pool(database_url, 1)
        .await
        .context("connecting to Postgres")?;
    MIGRATOR
        .run(&pool)
        .await
        .context("applying the gateway's migrations")?;
    let name = set_moderator_pg(&pool, username, moderator).await;
    pool.close().await;
    Ok(name?)
}

/// Accounts in memory (unit tests and `frontier dev --memory`): guests and registered
/// players alike, for as long as the process lives.
#[derive(Clone)]
pub struct MemoryAccounts {
    inner: Arc<Mutex<MemoryInner>>,
    hasher: HashPool,
}

#[derive(Default)]
struct MemoryInner {
    /// Every account by id.
    by_id: HashMap<PlayerId, Account>,
    /// Registered players: lower-cased username → (id, password hash).
    registered: HashMap<String, (PlayerId, String)>,
    /// Stored preferences by player (the JSON object).
    preferences: HashMap<PlayerId, String>,
}

impl MemoryAccounts {
    /// No accounts yet; passwords hashed on `hasher`.
    pub fn new(hasher: HashPool) -> MemoryAccounts {
        MemoryAccounts {
            inner: Arc::default(),
            hasher,
        }
    }

    /// Grants or revokes the moderator role of the registered player with this username
    /// (case-insensitively): its stored name, or `None` when there is none (tests and
    /// `frontier dev --memory`, which has no operator command: its accounts die with it).
    pub fn set_moderator(&self, username: &str, moderator: bool) -> Option<String> {
        let mut inner = self.lock();
        let id = inner.registered.get(&username.to_ascii_lowercase())?.0;
        let account = inner.by_id.get_mut(&id)?;
        account.moderator = moderator;
        Some(account.name.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryInner> {
        // Every change is one insertion per map, made together: a poisoned lock is whole.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Accounts for MemoryAccounts {
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
        self.lock().by_id.insert(account.id, account.clone());
        Ok(account)
    }

    async fn register(&self, username: &str, password: &str) -> Result<Account, AccountError> {
        let (account, hash) = prepare_registration(&self.hasher, username, password).await?;
        let mut inner = self.lock();
        let key = username.to_ascii_lowercase();
        if inner.registered.contains_key(&key) {
            return Err(AccountError::UsernameTaken);
        }
        inner.registered.insert(key, (account.id, hash));
        inner.by_id.insert(account.id, account.clone());
        Ok(account)
    }

    async fn login(&self, username: &str, password: &str) -> Result<Account, AccountError> {
        let row = {
            let inner = self.lock();
            inner
                .registered
                .get(&username.to_ascii_lowercase())
                .and_then(|(id, hash)| {
                    let account = inner.by_id.get(id)?;
                    Some((
                        id.0,
                        account.name.clone(),
                        Some(hash.clone()),
                        account.moderator,
                    ))
                })
        };
        verify_login(&self.hasher, row, password).await
    }

    async fn find(&self, id: PlayerId) -> Result<Option<Account>, AccountError> {
        Ok(self.lock().by_id.get(&id).cloned())
    }

    async fn preferences(&self, id: PlayerId) -> Result<Option<String>, AccountError> {
        Ok(self.lock().preferences.get(&id).cloned())
    }

    async fn set_preferences(&self, id: PlayerId, json: &str) -> Result<(), AccountError> {
        self.lock().preferences.insert(id, json.to_owned());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usernames_and_passwords_are_checked() {
        assert!(check_username("ann").is_ok());
        assert!(check_username("an").is_err());
        assert!(check_username("1ann").is_err());
        assert!(check_username("an n").is_err());
        assert!(check_username("GuestStar").is_err());
        assert!(check_password("ann", "correct horse").is_ok());
        assert!(check_password("ann", "short").is_err());
        assert!(check_password("ann", "aaaaaaaaaa").is_err());
        assert!(check_password("ann", "xxANNxx12").is_err());
        assert!(check_password("ann", "Password").is_err());
    }

    #[tokio::test]
    async fn memory_accounts_register_and_log_in() {
        let accounts = MemoryAccounts::new(HashPool::new(1, 4).expect("a hashing thread"));
        let a = accounts
            .register("Ann", "correct horse")
            .await
            .expect("registered");
        assert!(matches!(
            accounts.register("ANN", "battery staple").await,
            Err(AccountError::UsernameTaken)
        ));
        assert_eq!(
            accounts
                .login("ann", "correct horse")
                .await
                .expect("login")
                .id,
            a.id
        );
        assert!(matches!(
            accounts.login("ann", "wrong one!").await,
            Err(AccountError::BadCredentials)
        ));
        assert!(accounts.create_guest().await.expect("guest").guest);
    }
}
