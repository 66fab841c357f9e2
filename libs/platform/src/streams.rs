//! The JetStream streams the platform relies on, created the same way by every service that
//! uses them, and the connection to NATS.

use std::time::Duration;

use async_nats::jetstream;
use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::context::{CreateStreamError, CreateStreamErrorKind};

use crate::Namespace;

/// Connects to NATS: `urls` is one URL or a comma-separated list of a cluster's seed URLs
/// (the client learns the other servers from them and fails over between them).
pub async fn connect(urls: &str) -> Result<async_nats::Client, String> {
    let seeds = urls
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<async_nats::ServerAddr>()
                .map_err(|e| format!("NATS URL `{s}`: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if seeds.is_empty() {
        return Err("no NATS URL given".to_owned());
    }
    async_nats::connect(seeds)
        .await
        .map_err(|e| format!("connecting to NATS at {urls}: {e}"))
}

/// Creates the finished-games stream if missing: file storage, kept 30 days, duplicates
/// (same game id as message id) dropped within two minutes, `replicas` copies (1 on one
/// server, 3 on a cluster).
pub async fn ensure_finished_games(
    js: &jetstream::Context,
    ns: &Namespace,
    replicas: u8,
) -> Result<jetstream::stream::Stream, String> {
    ensure(
        js,
        "finished-games",
        jetstream::stream::Config {
            name: ns.finished_games_stream(),
            subjects: vec![ns.finished_games_subject()],
            storage: jetstream::stream::StorageType::File,
            max_age: Duration::from_secs(30 * 24 * 3600),
            duplicate_window: Duration::from_secs(120),
            num_replicas: usize::from(replicas.max(1)),
            ..Default::default()
        },
    )
    .await
}

/// Creates the bot-job work queue if missing: file storage, work-queue retention (a job
/// leaves the stream when a worker acknowledges it), duplicates (same job id
/// `<game id>:<version>` as message id) dropped within two minutes, jobs older than a day
/// dropped (their games have moved on or ended), `replicas` copies. Every variant's subject.
pub async fn ensure_bot_jobs(
    js: &jetstream::Context,
    ns: &Namespace,
    replicas: u8,
) -> Result<jetstream::stream::Stream, String> {
    ensure(
        js,
        "bot-jobs",
        jetstream::stream::Config {
            name: ns.bot_jobs_stream(),
            subjects: vec![ns.bot_jobs_wildcard()],
            retention: jetstream::stream::RetentionPolicy::WorkQueue,
            storage: jetstream::stream::StorageType::File,
            max_age: Duration::from_secs(24 * 3600),
            duplicate_window: Duration::from_secs(120),
            num_replicas: usize::from(replicas.max(1)),
            ..Default::default()
        },
    )
    .await
}

/// How long a starting service keeps asking for a stream while a JetStream cluster settles.
const SETTLE: Duration = Duration::from_secs(30);

/// Gets or creates a stream. On a cluster that has just formed, or that is electing a meta
/// leader, asks time out or are refused for want of peers for a while: those are asked
/// again (pausing 100 ms, doubling to 2 s) for at most [`SETTLE`]; any other refusal (a
/// stream of that name with another configuration, say) is final at once.
async fn ensure(
    js: &jetstream::Context,
    what: &str,
    config: jetstream::stream::Config,
) -> Result<jetstream::stream::Stream, String> {
    let start = tokio::time::Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        match js.get_or_create_stream(config.clone()).await {
            Ok(stream) => return Ok(stream),
            Err(e) if settling(&e) && start.elapsed() + pause < SETTLE => {
                tracing::warn!(stream = %config.name, error = %e, "JetStream not ready for the stream yet; asking again");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            Err(e) => return Err(format!("{what} stream: {e}")),
        }
    }
}

/// Whether a refusal is one a settling cluster gives.
fn settling(e: &CreateStreamError) -> bool {
    match e.kind() {
        CreateStreamErrorKind::TimedOut | CreateStreamErrorKind::JetStreamUnavailable => true,
        CreateStreamErrorKind::JetStream(e) => [
            ErrorCode::CLUSTER_NO_PEERS,
            ErrorCode::CLUSTER_NOT_AVAILABLE,
            ErrorCode::CLUSTER_INCOMPLETE,
            ErrorCode::CLUSTER_NOT_ACTIVE,
            ErrorCode::CLUSTER_NOT_LEADER,
        ]
        .contains(&e.error_code()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal from the JetStream API with error code `code`, as the server sends it.
    fn refused(code: u64) -> CreateStreamError {
        let error: jetstream::Error = serde_json::from_str(&format!(
            r#"{{"code":503,"err_code":{code},"description":"refused"}}"#
        ))
        .expect("a JetStream API error");
        CreateStreamError::from(error)
    }

    #[test]
    fn a_settling_cluster_is_asked_again_and_a_wrong_stream_is_not() {
        // Asks that time out or find no JetStream, no peers, no leader: asked again.
        assert!(settling(&CreateStreamError::new(
            CreateStreamErrorKind::TimedOut
        )));
        assert!(settling(&CreateStreamError::new(
            CreateStreamErrorKind::JetStreamUnavailable
        )));
        for code in [10005, 10008, 10004, 10006, 10009] {
            assert!(settling(&refused(code)), "{code}");
        }
        // A stream of that name with another configuration (10058), a bad name, too many
        // resources (10023): final at once.
        assert!(!settling(&refused(10058)));
        assert!(!settling(&refused(10023)));
        assert!(!settling(&CreateStreamError::new(
            CreateStreamErrorKind::InvalidStreamName
        )));
    }
}
