//! Where game events go: per-audience subjects on NATS for live delivery, and the
//! JetStream stream of finished games. [`NatsBus`] for real deployments, [`MemoryBus`] for
//! unit tests and the single-process mode. Every message carries the trace context of its
//! publication in its headers (`frontier_platform::trace`), so the relays of an event and
//! the recording of a finished game join the trace of the call that caused them.

use std::future::Future;
use std::sync::{Arc, Mutex};

use async_nats::jetstream;
use bytes::Bytes;
use frontier_platform::envelope::{Envelope, EventMetadata};
use frontier_platform::local_bus::{LocalBus, LocalMessage};
use frontier_platform::local_jobs::LocalJobQueue;
use frontier_platform::names::AUDIENCES;
use frontier_platform::trace;
use frontier_platform::{GameId, Namespace};
use frontier_rules::{Audience, Color, Variant};

pub use frontier_platform::names::{ENDED_HEADER, NOTICE_HEADER, VERSION_HEADER};

/// A messaging failure.
#[derive(Debug, thiserror::Error)]
#[error("event bus: {0}")]
pub struct BusError(pub String);

/// One event rendered for each audience.
#[derive(Debug, Clone)]
pub struct AudienceFrames {
    /// The version.
    pub version: u64,
    /// White's frame.
    pub white: Bytes,
    /// Black's frame.
    pub black: Bytes,
    /// The public frame.
    pub public: Bytes,
    /// This event ended the game (relays stop following after it).
    pub ended: bool,
}

impl AudienceFrames {
    /// Every audience's frame is the same: published once, on the game's shared subject
    /// (every move of standard and atomic chess, and in hidden chess every event but a
    /// capture of a hidden piece, whose identity only its capturer's frame names).
    pub fn is_shared(&self) -> bool {
        self.white == self.black && self.black == self.public
    }

    /// The subjects to publish on, each with its frame: the shared subject alone, or each
    /// audience's own ([`Namespace::game_event_subject`]).
    pub fn publications(&self, ns: &Namespace, game: &GameId) -> Vec<(String, Bytes)> {
        if self.is_shared() {
            vec![(ns.game_event_subject(game, None), self.public.clone())]
        } else {
            AUDIENCES
                .iter()
                .map(|a| {
                    (
                        ns.game_event_subject(game, Some(*a)),
                        self.for_audience(*a).clone(),
                    )
                })
                .collect()
        }
    }

    /// The frame for one audience.
    pub fn for_audience(&self, audience: Audience) -> &Bytes {
        match audience {
            Audience::Player(Color::White) => &self.white,
            Audience::Player(Color::Black) => &self.black,
            Audience::Spectator => &self.public,
        }
    }
}

/// Publishing of game events.
pub trait EventBus: Send + Sync + 'static {
    /// Publishes the event: once on the game's shared subject when every audience's frame
    /// is the same, else each audience's frame on its own subject (at most once:
    /// subscribers fill gaps from the event log).
    fn publish_game_event(
        &self,
        game: &GameId,
        frames: &AudienceFrames,
    ) -> impl Future<Output = Result<(), BusError>> + Send;

    /// Appends a finished game's record to the stream and waits for the stream's
    /// acknowledgement. The game id is the message id, so a repeat is dropped.
    fn publish_finished(
        &self,
        game: &GameId,
        record: Bytes,
    ) -> impl Future<Output = Result<(), BusError>> + Send;

    /// Enqueues a bot job on the bot-job work queue (subject of its variant) and waits for
    /// the queue's acknowledgement. The job id is the message id, so a repeat is dropped.
    fn publish_bot_job(
        &self,
        variant: Variant,
        id: &str,
        job: Bytes,
    ) -> impl Future<Output = Result<(), BusError>> + Send;

    /// Publishes a client-protocol frame for one player on their player subject (at most
    /// once; the `Frontier-Notice` header marks it as a frame to relay), which every gateway
    /// holding a connection of theirs follows.
    fn publish_notice(
        &self,
        player: &str,
        frame: Bytes,
    ) -> impl Future<Output = Result<(), BusError>> + Send;
}

/// NATS and JetStream.
#[derive(Clone)]
pub struct NatsBus {
    client: async_nats::Client,
    jetstream: jetstream::Context,
    ns: Namespace,
    metadata: EventMetadata,
}

impl NatsBus {
    /// Game events with their metadata in `metadata`'s form (headers unless told:
    /// [`frontier_platform::envelope`]).
    pub fn with_event_metadata(self, metadata: EventMetadata) -> NatsBus {
        NatsBus { metadata, ..self }
    }

    /// The NATS connection (for readiness checks).
    pub fn client(&self) -> async_nats::Client {
        self.client.clone()
    }

    /// Connects and makes sure the finished-games and bot-job streams exist (one replica
    /// each if it creates them).
    pub async fn connect(url: &str, ns: Namespace) -> Result<NatsBus, BusError> {
        NatsBus::connect_replicated(url, ns, 1).await
    }

    /// Connects to `urls` (one URL or a cluster's comma-separated seeds) and makes sure
    /// the streams exist, creating missing ones with `replicas` copies.
    pub async fn connect_replicated(
        urls: &str,
        ns: Namespace,
        replicas: u8,
    ) -> Result<NatsBus, BusError> {
        let client = frontier_platform::streams::connect(urls)
            .await
            .map_err(BusError)?;
        NatsBus::with_client(client, ns, replicas).await
    }

    /// Uses an existing connection (creating missing streams with `replicas` copies).
    pub async fn with_client(
        client: async_nats::Client,
        ns: Namespace,
        replicas: u8,
    ) -> Result<NatsBus, BusError> {
        let jetstream = jetstream::new(client.clone());
        ensure_finished_stream(&jetstream, &ns, replicas).await?;
        frontier_platform::streams::ensure_bot_jobs(&jetstream, &ns, replicas)
            .await
            .map_err(BusError)?;
        Ok(NatsBus {
            client,
            jetstream,
            ns,
            metadata: EventMetadata::default(),
        })
    }
}

/// Creates the finished-games stream if missing (see `frontier_platform::streams`).
pub async fn ensure_finished_stream(
    js: &jetstream::Context,
    ns: &Namespace,
    replicas: u8,
) -> Result<(), BusError> {
    frontier_platform::streams::ensure_finished_games(js, ns, replicas)
        .await
        .map(|_| ())
        .map_err(BusError)
}

impl EventBus for NatsBus {
    #[tracing::instrument(
        name = "game_session.publish_event",
        skip_all,
        fields(game = %game, version = frames.version)
    )]
    async fn publish_game_event(
        &self,
        game: &GameId,
        frames: &AudienceFrames,
    ) -> Result<(), BusError> {
        if self.metadata == EventMetadata::Payload {
            return self.publish_enveloped(game, frames).await;
        }
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(VERSION_HEADER, frames.version.to_string().as_str());
        headers.insert(
            frontier_platform::names::PUBLISHED_AT_HEADER,
            frontier_platform::names::unix_micros().to_string().as_str(),
        );
        if frames.ended {
            headers.insert(ENDED_HEADER, "1");
        }
        trace::inject_headers(&trace::current(), &mut headers);
        for (subject, frame) in frames.publications(&self.ns, game) {
            self.client
                .publish_with_headers(subject, headers.clone(), frame)
                .await
                .map_err(|e| BusError(e.to_string()))?;
        }
        Ok(())
    }

    #[tracing::instrument(name = "game_session.publish_finished", skip_all, fields(game = %game))]
    async fn publish_finished(&self, game: &GameId, record: Bytes) -> Result<(), BusError> {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", game.to_string().as_str());
        trace::inject_headers(&trace::current(), &mut headers);
        self.jetstream
            .publish_with_headers(self.ns.finished_games_subject(), headers, record)
            .await
            .map_err(|e| BusError(e.to_string()))?
            .await
            .map_err(|e| BusError(e.to_string()))?;
        Ok(())
    }

    #[tracing::instrument(name = "game_session.publish_bot_job", skip_all, fields(job = %id))]
    async fn publish_bot_job(
        &self,
        variant: Variant,
        id: &str,
        job: Bytes,
    ) -> Result<(), BusError> {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", id);
        trace::inject_headers(&trace::current(), &mut headers);
        self.jetstream
            .publish_with_headers(self.ns.bot_jobs_subject(variant.name()), headers, job)
            .await
            .map_err(|e| BusError(e.to_string()))?
            .await
            .map_err(|e| BusError(e.to_string()))?;
        Ok(())
    }

    async fn publish_notice(&self, player: &str, frame: Bytes) -> Result<(), BusError> {
        self.notice(player, frame).await
    }
}

impl NatsBus {
    /// [`EventBus::publish_game_event`] with each frame in an [`Envelope`], and headers
    /// only for a trace context.
    async fn publish_enveloped(
        &self,
        game: &GameId,
        frames: &AudienceFrames,
    ) -> Result<(), BusError> {
        let envelope = Envelope {
            version: frames.version,
            published_at_us: frontier_platform::names::unix_micros(),
            ended: frames.ended,
        };
        let mut headers = async_nats::HeaderMap::new();
        trace::inject_headers(&trace::current(), &mut headers);
        for (subject, frame) in frames.publications(&self.ns, game) {
            let payload = envelope.wrap(&frame);
            let published = if headers.is_empty() {
                self.client.publish(subject, payload).await
            } else {
                self.client
                    .publish_with_headers(subject, headers.clone(), payload)
                    .await
            };
            published.map_err(|e| BusError(e.to_string()))?;
        }
        Ok(())
    }

    /// See [`EventBus::publish_notice`].
    async fn notice(&self, player: &str, frame: Bytes) -> Result<(), BusError> {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(NOTICE_HEADER, "1");
        trace::inject_headers(&trace::current(), &mut headers);
        self.client
            .publish_with_headers(self.ns.player_subject(player), headers, frame)
            .await
            .map_err(|e| BusError(e.to_string()))?;
        // Notices are rare: sent now rather than with the next batch.
        self.client
            .flush()
            .await
            .map_err(|e| BusError(e.to_string()))
    }

    /// The JetStream context (tests read the streams with it).
    pub fn jetstream(&self) -> jetstream::Context {
        self.jetstream.clone()
    }
}

/// In-process delivery: every event on a [`LocalBus`] (which the gateway's in-memory event
/// source reads), a list of finished games, and bot jobs on a [`LocalJobQueue`] (which an
/// in-process bot worker reads).
#[derive(Clone)]
pub struct MemoryBus {
    ns: Namespace,
    events: LocalBus,
    finished: Arc<Mutex<Vec<(GameId, Bytes)>>>,
    finished_sink: Option<tokio::sync::mpsc::UnboundedSender<Bytes>>,
    jobs: LocalJobQueue,
}

impl MemoryBus {
    /// A bus with its own local bus, with room for `capacity` undelivered events per
    /// subscriber.
    pub fn new(ns: Namespace, capacity: usize) -> MemoryBus {
        MemoryBus::on(ns, LocalBus::new(capacity))
    }

    /// A bus publishing on a shared local bus.
    pub fn on(ns: Namespace, events: LocalBus) -> MemoryBus {
        MemoryBus {
            ns,
            events,
            finished: Arc::default(),
            finished_sink: None,
            jobs: LocalJobQueue::new(),
        }
    }

    /// The same bus, enqueueing bot jobs on a shared queue.
    pub fn with_jobs(mut self, jobs: LocalJobQueue) -> MemoryBus {
        self.jobs = jobs;
        self
    }

    /// The bot-job queue (an in-process worker takes jobs from it).
    pub fn jobs(&self) -> LocalJobQueue {
        self.jobs.clone()
    }

    /// Hands each finished-game record to `sink` instead of keeping it: the single-process
    /// mode's stream of finished games, read by the rating service in the same process
    /// (which drops a repeat by its game id).
    pub fn with_finished_sink(mut self, sink: tokio::sync::mpsc::UnboundedSender<Bytes>) -> Self {
        self.finished_sink = Some(sink);
        self
    }

    /// Receives every event published from now on.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<LocalMessage> {
        self.events.subscribe()
    }

    /// Finished-game records published so far (duplicates dropped, as JetStream does).
    pub fn finished(&self) -> Vec<(GameId, Bytes)> {
        self.finished
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl EventBus for MemoryBus {
    async fn publish_game_event(
        &self,
        game: &GameId,
        frames: &AudienceFrames,
    ) -> Result<(), BusError> {
        for (subject, frame) in frames.publications(&self.ns, game) {
            self.events
                .publish(subject, frames.version, frames.ended, frame);
        }
        Ok(())
    }

    async fn publish_bot_job(
        &self,
        variant: Variant,
        id: &str,
        job: Bytes,
    ) -> Result<(), BusError> {
        self.jobs
            .push(self.ns.bot_jobs_subject(variant.name()), id.to_owned(), job);
        Ok(())
    }

    async fn publish_notice(&self, player: &str, frame: Bytes) -> Result<(), BusError> {
        self.events
            .publish(self.ns.player_subject(player), 0, false, frame);
        Ok(())
    }

    async fn publish_finished(&self, game: &GameId, record: Bytes) -> Result<(), BusError> {
        if let Some(sink) = &self.finished_sink {
            // Handed on, not kept (a long-running process would hoard every record); the
            // reader drops repeats by game id, as the rating service does.
            return sink
                .send(record)
                .map_err(|_| BusError("the finished-games reader is gone".into()));
        }
        let mut finished = self.finished.lock().unwrap_or_else(|p| p.into_inner());
        if !finished.iter().any(|(g, _)| g == game) {
            finished.push((*game, record));
        }
        Ok(())
    }
}
