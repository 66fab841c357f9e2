//! The accounts stores — Postgres (production), SQLite (`frontier dev`) and memory — pass
//! the same scenarios, the moderator role included.

use frontier_gateway::accounts::{AccountError, Accounts, MemoryAccounts, PgAccounts};
use frontier_gateway::hashing::HashPool;
use frontier_gateway::sqlite::SqliteAccounts;

fn hasher() -> HashPool {
    HashPool::new(2, 16).expect("hashing threads")
}

async fn every_scenario<A: Accounts>(accounts: A) {
    // Registration, then login with any case of the name.
    let alice = accounts
        .register("Alice", "a long passphrase")
        .await
        .expect("registered");
    assert!(!alice.guest);
    let again = accounts
        .login("alice", "a long passphrase")
        .await
        .expect("logged in");
    assert_eq!((again.id, again.name.as_str()), (alice.id, "Alice"));
    // A taken name, whatever its case.
    assert!(matches!(
        accounts.register("ALICE", "another long one").await,
        Err(AccountError::UsernameTaken)
    ));
    // Wrong password, unknown name, oversized input: one answer.
    for (name, password) in [
        ("alice", "not the passphrase"),
        ("nobody", "a long passphrase"),
        ("alice", &"x".repeat(200)[..]),
    ] {
        assert!(
            matches!(
                accounts.login(name, password).await,
                Err(AccountError::BadCredentials)
            ),
            "{name}"
        );
    }
    // Weak passwords and bad names are refused before storage.
    assert!(matches!(
        accounts.register("bob", "short").await,
        Err(AccountError::WeakPassword(_))
    ));
    assert!(matches!(
        accounts.register("guest42", "a long passphrase").await,
        Err(AccountError::BadUsername(_))
    ));
    // Guests: no password, cannot log in, found by id.
    let guest = accounts.create_guest().await.expect("guest");
    assert!(guest.guest);
    assert!(matches!(
        accounts.login(&guest.name, "a long passphrase").await,
        Err(AccountError::BadCredentials)
    ));
    let found = accounts.find(guest.id).await.expect("find");
    assert_eq!(found.map(|a| (a.name, a.guest)), Some((guest.name, true)));
    let found = accounts.find(alice.id).await.expect("find");
    assert_eq!(found.map(|a| a.guest), Some(false));
    // Preferences: none at first; stored; replaced whole.
    assert_eq!(accounts.preferences(alice.id).await.expect("read"), None);
    accounts
        .set_preferences(alice.id, r#"{"board":"marble","view":"3d"}"#)
        .await
        .expect("stored");
    accounts
        .set_preferences(alice.id, r#"{"muted":true}"#)
        .await
        .expect("replaced");
    let stored = accounts
        .preferences(alice.id)
        .await
        .expect("read")
        .expect("stored preferences");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&stored).expect("JSON"),
        serde_json::json!({"muted": true})
    );
    assert_eq!(accounts.preferences(guest.id).await.expect("read"), None);
    assert_eq!(
        accounts
            .find(frontier_platform::PlayerId::new())
            .await
            .expect("find"),
        None
    );
}

/// The moderator role: none at registration; granted by name (any case), seen by login
/// and `find`; revoked; never for guests or unknown names (`set` grants or revokes by name
/// and answers the stored name).
async fn moderator_scenario<A, F, Fut>(accounts: A, set: F)
where
    A: Accounts,
    F: Fn(String, bool) -> Fut,
    Fut: std::future::Future<Output = Option<String>>,
{
    let judge = accounts
        .register("Judge", "a long passphrase")
        .await
        .expect("registered");
    assert!(!judge.moderator);
    let guest = accounts.create_guest().await.expect("guest");
    assert!(!guest.moderator);
    assert_eq!(set("jUdGe".into(), true).await.as_deref(), Some("Judge"));
    let login = accounts
        .login("judge", "a long passphrase")
        .await
        .expect("login");
    assert!(login.moderator);
    let found = accounts.find(judge.id).await.expect("find").expect("there");
    assert!(found.moderator);
    assert_eq!(set(guest.name.clone(), true).await, None);
    assert_eq!(set("nobody".into(), true).await, None);
    assert_eq!(set("JUDGE".into(), false).await.as_deref(), Some("Judge"));
    assert!(
        !accounts
            .login("judge", "a long passphrase")
            .await
            .expect("login")
            .moderator
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_accounts_pass_every_scenario() {
    every_scenario(MemoryAccounts::new(hasher())).await;
    let accounts = MemoryAccounts::new(hasher());
    let handle = accounts.clone();
    moderator_scenario(accounts, |name, on| {
        let handle = handle.clone();
        async move { handle.set_moderator(&name, on) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_accounts_pass_every_scenario() {
    let pool = frontier_platform::sqlite::in_memory()
        .await
        .expect("SQLite");
    every_scenario(
        SqliteAccounts::open(pool.clone(), hasher())
            .await
            .expect("migrate"),
    )
    .await;
    let fresh = frontier_platform::sqlite::in_memory()
        .await
        .expect("SQLite");
    let accounts = SqliteAccounts::open(fresh.clone(), hasher())
        .await
        .expect("migrate");
    moderator_scenario(accounts, |name, on| {
        let pool = fresh.clone();
        async move {
            frontier_gateway::sqlite::set_moderator(&pool, &name, on)
                .await
                .expect("stored")
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_accounts_pass_every_scenario() {
    let url = frontier_testkit::fresh_database().await.expect("Postgres");
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    frontier_gateway::accounts::MIGRATOR
        .run(&pool)
        .await
        .expect("migrate");
    every_scenario(PgAccounts::new(pool, hasher())).await;
    let url = frontier_testkit::fresh_database().await.expect("Postgres");
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    frontier_gateway::accounts::MIGRATOR
        .run(&pool)
        .await
        .expect("migrate");
    let handle = pool.clone();
    moderator_scenario(PgAccounts::new(pool, hasher()), |name, on| {
        let pool = handle.clone();
        async move {
            frontier_gateway::accounts::set_moderator_pg(&pool, &name, on)
                .await
                .expect("stored")
        }
    })
    .await;
}
