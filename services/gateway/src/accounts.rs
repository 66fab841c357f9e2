//! Accounts: guests and registered players, in Postgres ([`PgAccounts`]) or in memory
//! ([`MemoryAccounts`]), behind one trait. Passwords are hashed with Argon2id off the
//! async runtime.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use argon2::Argon2;
use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use frontier_platform::PlayerId;
use sqlx::PgPool;

/// A player account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    /// Id.
    pub id: PlayerId,
    /// Display name.
    pub name: String,
    /// Guest or registered.
    pub guest: bool,
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

async fn hash_password(password: String) -> Result<String, AccountError> {
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| AccountError::Storage(format!("hashing: {e}")))
    })
    .await
    .map_err(|e| AccountError::Storage(format!("hashing task: {e}")))?
}

async fn verify_password(password: String, hash: String) -> Result<bool, AccountError> {
    tokio::task::spawn_blocking(move || {
        let parsed = PasswordHash::new(&hash)
            .map_err(|e| AccountError::Storage(format!("stored hash: {e}")))?;
        Ok(Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok())
    })
    .await
    .map_err(|e| AccountError::Storage(format!("hashing task: {e}")))?
}

/// Checks a registration and hashes its password: the new account and its hash.
async fn prepare_registration(
    username: &str,
    password: &str,
) -> Result<(Account, String), AccountError> {
    check_username(username)?;
    check_password(username, password)?;
    let hash = hash_password(password.to_owned()).await?;
    Ok((
        Account {
            id: PlayerId::new(),
            name: username.to_owned(),
            guest: false,
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
}

/// Accounts in Postgres.
#[derive(Clone)]
pub struct PgAccounts {
    pool: PgPool,
}

/// The gateway's migrations (`migrations/gateway/`: accounts), embedded at build time (no
/// database needed to build), tracked in sqlx's default table `_sqlx_migrations`.
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/gateway");

impl PgAccounts {
    /// Uses this pool (run [`MIGRATOR`] first).
    pub fn new(pool: PgPool) -> PgAccounts {
        PgAccounts { pool }
    }
}

impl Accounts for PgAccounts {
    async fn create_guest(&self) -> Result<Account, AccountError> {
        let account = Account {
            id: PlayerId::new(),
            name: guest_name(),
            guest: true,
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
        let (account, hash) = prepare_registration(username, password).await?;
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
        let row: Option<(uuid::Uuid, String, Option<String>)> = sqlx::query_as(
            "SELECT id, username, password_hash FROM players WHERE username_key = $1 AND NOT guest",
        )
        .bind(username.to_ascii_lowercase())
        .fetch_optional(&self.pool)
        .await?;
        let Some((id, name, Some(hash))) = row else {
            return Err(AccountError::BadCredentials);
        };
        if verify_password(password.to_owned(), hash).await? {
            Ok(Account {
                id: PlayerId(id),
                name,
                guest: false,
            })
        } else {
            Err(AccountError::BadCredentials)
        }
    }

    async fn find(&self, id: PlayerId) -> Result<Option<Account>, AccountError> {
        let row: Option<(String, bool)> =
            sqlx::query_as("SELECT username, guest FROM players WHERE id = $1")
                .bind(id.0)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(name, guest)| Account { id, name, guest }))
    }
}

/// Accounts in memory (unit tests and the single-process mode).
#[derive(Clone, Default)]
pub struct MemoryAccounts {
    inner: Arc<Mutex<HashMap<String, (Account, String)>>>,
}

impl Accounts for MemoryAccounts {
    async fn create_guest(&self) -> Result<Account, AccountError> {
        Ok(Account {
            id: PlayerId::new(),
            name: guest_name(),
            guest: true,
        })
    }

    async fn register(&self, username: &str, password: &str) -> Result<Account, AccountError> {
        let (account, hash) = prepare_registration(username, password).await?;
        let mut map = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let key = username.to_ascii_lowercase();
        if map.contains_key(&key) {
            return Err(AccountError::UsernameTaken);
        }
        map.insert(key, (account.clone(), hash));
        Ok(account)
    }

    async fn login(&self, username: &str, password: &str) -> Result<Account, AccountError> {
        let entry = self
            .inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&username.to_ascii_lowercase())
            .cloned();
        let Some((account, hash)) = entry else {
            return Err(AccountError::BadCredentials);
        };
        if verify_password(password.to_owned(), hash).await? {
            Ok(account)
        } else {
            Err(AccountError::BadCredentials)
        }
    }

    /// Registered players only: guests are not kept in memory.
    async fn find(&self, id: PlayerId) -> Result<Option<Account>, AccountError> {
        Ok(self
            .inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .find(|(account, _)| account.id == id)
            .map(|(account, _)| account.clone()))
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
        let accounts = MemoryAccounts::default();
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
