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
