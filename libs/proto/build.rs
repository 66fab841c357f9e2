//! Compiles `proto/` with protox (pure Rust: no system protoc) and generates tonic code.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Read when the script runs, not when it is compiled: a build cache shared by clones at
    // other paths (CI) may reuse this script's binary.
    let root = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?).join("../../proto");
    let files = [
        "frontier/errors/v1/errors.proto",
        "frontier/games/v1/game.proto",
        "frontier/gamesession/v1/game_session.proto",
        "frontier/gamesession/storage/v1/stored_game.proto",
        "frontier/rating/v1/rating.proto",
        "frontier/matchmaking/v1/matchmaking.proto",
        "frontier/fairplay/v1/fairplay.proto",
    ];
    for file in &files {
        println!("cargo:rerun-if-changed={}", root.join(file).display());
    }
    let descriptors = protox::compile(files, [&root])?;
    tonic_prost_build::configure()
        // These hold hidden-chess secrets (the layout and salt, captured identities):
        // their `Debug` is written by hand in `lib.rs` and prints none of them.
        .skip_debug([
            ".frontier.gamesession.storage.v1.StoredGame",
            ".frontier.games.v1.FinishedGame",
            ".frontier.games.v1.MoveRecord",
        ])
        // A move's own event frame, carried back to the gateway with the ack: shared, not
        // copied, on both sides (issue 29).
        .bytes(".frontier.gamesession.v1.ActResponse.frame")
        // A log entry's frames are the frames just published: encoded from them, not from
        // copies (issue 29).
        .bytes(".frontier.gamesession.storage.v1.LogEntry")
        .build_server(true)
        .build_client(true)
        .compile_fds(descriptors)?;
    Ok(())
}
