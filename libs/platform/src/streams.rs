//! The JetStream streams the platform relies on, created the same way by every service that
//! uses them.

use std::time::Duration;

use async_nats::jetstream;

use crate::Namespace;

/// Creates the finished-games stream if missing: file storage, kept 30 days, duplicates
/// (same game id as message id) dropped within two minutes.
pub async fn ensure_finished_games(
    js: &jetstream::Context,
    ns: &Namespace,
) -> Result<jetstream::stream::Stream, String> {
    js.get_or_create_stream(jetstream::stream::Config {
        name: ns.finished_games_stream(),
        subjects: vec![ns.finished_games_subject()],
        storage: jetstream::stream::StorageType::File,
        max_age: Duration::from_secs(30 * 24 * 3600),
        duplicate_window: Duration::from_secs(120),
        ..Default::default()
    })
    .await
    .map_err(|e| format!("finished-games stream: {e}"))
}
