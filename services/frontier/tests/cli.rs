//! The one binary's command line: every service is a subcommand of `frontier`, and
//! `frontier dev` offers only what it honours.

use std::process::Command;

/// `frontier dev --help` offers password hashing, and none of the abuse limits that the
/// distributed gateways share through Redis (they do nothing in the single-process mode).
/// Before, it listed them all with no word that they were ignored.
#[test]
fn dev_does_not_offer_the_limits_it_does_not_enforce() {
    let out = Command::new(env!("CARGO_BIN_EXE_frontier"))
        .args(["dev", "--help"])
        .output()
        .expect("frontier runs");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--hash-threads"), "{help}");
    for shared in [
        "--guest-limit",
        "--register-limit",
        "--login-limit",
        "--ws-per-address",
        "--ws-per-player",
        "--board-limit",
        "--waiting-boards",
        "--guest-ttl",
    ] {
        assert!(!help.contains(shared), "dev offers {shared}:\n{help}");
    }
    // The gateway itself still has them.
    let out = Command::new(env!("CARGO_BIN_EXE_frontier"))
        .args(["gateway", "--help"])
        .output()
        .expect("frontier runs");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("--guest-limit") && help.contains("--hash-threads"));
}

/// The workspace builds one service binary, `frontier`: no service crate has a binary of
/// its own (before, `gateway`, `rating`, … were built beside it).
#[test]
fn the_services_have_one_binary() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let mut service_bins = Vec::new();
    for package in meta["packages"].as_array().expect("packages") {
        let manifest = package["manifest_path"].as_str().unwrap_or_default();
        if !manifest.contains("/services/") {
            continue;
        }
        for target in package["targets"].as_array().expect("targets") {
            let kinds = target["kind"].as_array().expect("kinds");
            if kinds.iter().any(|k| k == "bin") {
                service_bins.push(target["name"].as_str().unwrap_or_default().to_owned());
            }
        }
    }
    assert_eq!(service_bins, vec!["frontier".to_owned()]);
}

/// `frontier admin grant-moderator NAME` on `frontier dev`'s SQLite file: the role granted
/// case-insensitively (and seen at the next sign-in), revoked, and an unknown name refused
/// with a clear message and a failing exit status.
#[tokio::test]
async fn admin_grants_and_revokes_the_moderator_role_and_refuses_unknown_names() {
    use frontier_gateway::accounts::Accounts as _;
    let dir = std::env::temp_dir().join(format!("frontier-admin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let db = dir.join("frontier.db");
    let pool = frontier_platform::sqlite::open(&db)
        .await
        .expect("database");
    let hasher = frontier_gateway::hashing::HashPool::new(1, 4).expect("a hashing thread");
    let accounts = frontier_gateway::sqlite::SqliteAccounts::open(pool.clone(), hasher)
        .await
        .expect("accounts");
    accounts
        .register("Ann", "correct horse")
        .await
        .expect("registered");
    let url = format!("sqlite:{}", db.display());
    let admin = |verb: &str, name: &str| {
        Command::new(env!("CARGO_BIN_EXE_frontier"))
            .args(["admin", verb, name, "--database-url", &url])
            .output()
            .expect("frontier runs")
    };
    let out = admin("grant-moderator", "aNN");
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Ann is a moderator"));
    let ann = accounts.login("ann", "correct horse").await.expect("login");
    assert!(ann.moderator);
    let out = admin("revoke-moderator", "ANN");
    assert!(out.status.success(), "{out:?}");
    assert!(
        !accounts
            .login("ann", "correct horse")
            .await
            .expect("login")
            .moderator
    );
    let out = admin("grant-moderator", "nobody");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no registered player is named `nobody`"),
        "{out:?}"
    );
    pool.close().await;
    let _ = std::fs::remove_dir_all(&dir);
}
