//! Where jobs come from. The worker asks a [`JobSource`] for one job at a time, only when
//! it has room to think about it, and settles each [`Delivery`] once: acknowledged,
//! terminated (never again), or returned with a delay (`nak`). [`JetStreamSource`] is the
//! one for deployments: the durable pull consumer `BOT_WORKERS_CONSUMER` that every
//! worker shares on the `<NS>_BOT_JOBS` work queue; a single-process mode can plug in an
//! in-memory source behind the same trait.

use std::time::Duration;

use async_nats::jetstream::{self, AckKind, consumer::PullConsumer, consumer::pull};
use frontier_platform::local_jobs::{LocalJob, LocalJobQueue};
use frontier_platform::names::BOT_WORKERS_CONSUMER;
use frontier_platform::{Namespace, Shutdown};
use futures_util::{FutureExt as _, StreamExt as _};

/// A source or delivery failed to talk to its queue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("job queue: {0}")]
pub struct SourceError(pub String);

/// One delivered job, to be settled once.
pub trait Delivery: Send + Sync + 'static {
    /// The job's bytes (a `BotJob` as JSON).
    fn payload(&self) -> &[u8];
    /// Its position in the queue, for logs (0 if the source has none).
    fn sequence(&self) -> u64;
    /// Which delivery of the job this is, from 1.
    fn delivered(&self) -> i64;
    /// Done: the job leaves the queue.
    fn ack(&self) -> impl Future<Output = Result<(), SourceError>> + Send;
    /// Can never be done: the job leaves the queue and is never delivered again.
    fn term(&self) -> impl Future<Output = Result<(), SourceError>> + Send;
    /// Not done now: deliver it again after `delay`.
    fn nak(&self, delay: Duration) -> impl Future<Output = Result<(), SourceError>> + Send;
    /// Still working on it: do not hand it to another worker yet.
    fn in_progress(&self) -> impl Future<Output = Result<(), SourceError>> + Send;
}

/// Hands out jobs.
pub trait JobSource: Send + 'static {
    /// Its deliveries.
    type Delivery: Delivery;
    /// Its backlog reader.
    type Probe: BacklogProbe;

    /// The next job, waiting until one comes; `None` once the source has ended or `stop`
    /// has been triggered. After `stop` it asks for no more jobs, but a request already
    /// made is seen to its end (briefly), and a job it brings is still returned — for the
    /// caller to release — so no job is left with a worker that is going away.
    fn next(
        &mut self,
        stop: &Shutdown,
    ) -> impl Future<Output = Option<Result<Self::Delivery, SourceError>>> + Send;

    /// A reader of the backlog, used from another task.
    fn probe(&self) -> Self::Probe;
}

/// Reads how many jobs wait or are being worked on (the figure operators scale on).
pub trait BacklogProbe: Send + 'static {
    /// Jobs not yet delivered plus jobs delivered and not yet settled, across every
    /// worker.
    fn backlog(&mut self) -> impl Future<Output = Result<u64, SourceError>> + Send;
}

/// How long one pull request waits on the server for a job before it is asked again (and
/// so how long a stopping worker may wait for its last request to end).
const PULL_WAIT: Duration = Duration::from_secs(2);

/// The durable pull consumer every worker shares on the bot-job work queue.
#[derive(Debug)]
pub struct JetStreamSource {
    consumer: PullConsumer,
}

impl JetStreamSource {
    /// Creates the bot-job stream (with `replicas` copies) and the shared consumer if
    /// missing (explicit ack, `ack_wait`, `max_deliver`) and attaches to it. A consumer
    /// that exists is updated to these settings (an upgrade that shortens `ack_wait` takes
    /// effect when its first worker starts).
    pub async fn connect(
        js: &jetstream::Context,
        ns: &Namespace,
        replicas: u8,
        ack_wait: Duration,
        max_deliver: i64,
    ) -> Result<JetStreamSource, SourceError> {
        let stream = frontier_platform::streams::ensure_bot_jobs(js, ns, replicas)
            .await
            .map_err(SourceError)?;
        let consumer = stream
            .create_consumer(pull::Config {
                durable_name: Some(BOT_WORKERS_CONSUMER.to_owned()),
                ack_policy: jetstream::consumer::AckPolicy::Explicit,
                ack_wait,
                max_deliver,
                filter_subject: ns.bot_jobs_wildcard(),
                ..Default::default()
            })
            .await
            .map_err(|e| SourceError(format!("consumer {BOT_WORKERS_CONSUMER}: {e}")))?;
        Ok(JetStreamSource { consumer })
    }
}

impl JobSource for JetStreamSource {
    type Delivery = jetstream::Message;
    type Probe = PullConsumer;

    /// One job per pull request, so a worker holds no job it has no room for: jobs it
    /// has not started stay with the server for the other workers. A request is never
    /// abandoned: the server would deliver a job to it that nobody reads, and that job
    /// would wait `ack_wait` for another worker.
    async fn next(&mut self, stop: &Shutdown) -> Option<Result<jetstream::Message, SourceError>> {
        loop {
            if stop.wait().now_or_never().is_some() {
                return None;
            }
            let request = self
                .consumer
                .batch()
                .max_messages(1)
                .expires(PULL_WAIT)
                .messages();
            let mut batch = match request.await {
                Ok(b) => b,
                Err(e) => return Some(Err(SourceError(format!("pull: {e}")))),
            };
            // The request ends by itself after `PULL_WAIT`; the margin covers a server
            // that never answers.
            match tokio::time::timeout(PULL_WAIT * 2, batch.next()).await {
                Ok(Some(Ok(message))) => return Some(Ok(message)),
                Ok(Some(Err(e))) => return Some(Err(SourceError(format!("pull: {e}")))),
                Ok(None) | Err(_) => continue,
            }
        }
    }

    fn probe(&self) -> PullConsumer {
        self.consumer.clone()
    }
}

impl BacklogProbe for PullConsumer {
    async fn backlog(&mut self) -> Result<u64, SourceError> {
        let info = self
            .info()
            .await
            .map_err(|e| SourceError(format!("consumer info: {e}")))?;
        Ok(info.num_pending + info.num_ack_pending as u64)
    }
}

impl Delivery for jetstream::Message {
    fn payload(&self) -> &[u8] {
        self.payload.as_ref()
    }

    fn sequence(&self) -> u64 {
        self.info().map(|i| i.stream_sequence).unwrap_or(0)
    }

    fn delivered(&self) -> i64 {
        self.info().map(|i| i.delivered).unwrap_or(1)
    }

    // Acks, terms and naks are confirmed by the server: once one returns, the job is
    // settled there.
    async fn ack(&self) -> Result<(), SourceError> {
        self.double_ack()
            .await
            .map_err(|e| SourceError(format!("ack: {e}")))
    }

    async fn term(&self) -> Result<(), SourceError> {
        self.double_ack_with(AckKind::Term)
            .await
            .map_err(|e| SourceError(format!("term: {e}")))
    }

    async fn nak(&self, delay: Duration) -> Result<(), SourceError> {
        self.double_ack_with(AckKind::Nak(Some(delay)))
            .await
            .map_err(|e| SourceError(format!("nak: {e}")))
    }

    async fn in_progress(&self) -> Result<(), SourceError> {
        self.ack_with(AckKind::Progress)
            .await
            .map_err(|e| SourceError(format!("in progress: {e}")))
    }
}

/// The single-process mode's source (`frontier dev`): jobs from game-session's in-memory
/// bus ([`LocalJobQueue`]). A job is gone once taken; acknowledging or terminating it
/// changes nothing more, and a `nak` puts it back after its delay as its next delivery,
/// so a transient failure is retried here as on the stream.
#[derive(Debug, Clone)]
pub struct LocalSource {
    queue: LocalJobQueue,
}

impl LocalSource {
    /// Takes jobs from `queue`.
    pub fn new(queue: LocalJobQueue) -> LocalSource {
        LocalSource { queue }
    }
}

/// A job taken from a [`LocalSource`].
#[derive(Debug)]
pub struct LocalDelivery {
    job: LocalJob,
    queue: LocalJobQueue,
}

impl JobSource for LocalSource {
    type Delivery = LocalDelivery;
    type Probe = LocalJobQueue;

    async fn next(&mut self, stop: &Shutdown) -> Option<Result<LocalDelivery, SourceError>> {
        tokio::select! {
            _ = stop.wait() => None,
            job = self.queue.next() => Some(Ok(LocalDelivery { job, queue: self.queue.clone() })),
        }
    }

    fn probe(&self) -> LocalJobQueue {
        self.queue.clone()
    }
}

impl BacklogProbe for LocalJobQueue {
    /// Jobs waiting (a job being thought about has left the queue).
    async fn backlog(&mut self) -> Result<u64, SourceError> {
        Ok(self.len() as u64)
    }
}

impl Delivery for LocalDelivery {
    fn payload(&self) -> &[u8] {
        self.job.payload.as_ref()
    }

    fn sequence(&self) -> u64 {
        0
    }

    fn delivered(&self) -> i64 {
        self.job.delivered
    }

    async fn ack(&self) -> Result<(), SourceError> {
        Ok(())
    }

    async fn term(&self) -> Result<(), SourceError> {
        Ok(())
    }

    async fn nak(&self, delay: Duration) -> Result<(), SourceError> {
        let (queue, job) = (self.queue.clone(), self.job.clone());
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            queue.requeue(job);
        });
        Ok(())
    }

    async fn in_progress(&self) -> Result<(), SourceError> {
        Ok(())
    }
}
