//! A stand-in bot worker for tests: it reads the bot-job work queue as the real workers do
//! (the durable pull consumer `bot-workers` on `<NS>_BOT_JOBS`), plays a random legal move
//! (or promotion choice) chosen from the job alone, and acts through game-session's `Act`
//! with the job's player id, version and id — which also proves that a job is enough to
//! play. Every job it took is kept for inspection (the leak check runs over them).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use async_nats::jetstream::{self, consumer::pull};
use frontier_proto::gamesession::v1 as pb;
use frontier_protocol::{BotJob, ErrorCode};
use frontier_rules::{Position, Variant};
use futures_util::StreamExt as _;
use serde_json::{Value, json};

use super::Platform;

/// A small deterministic random source (xorshift).
pub struct Rng(pub u64);

impl Rng {
    /// A source from a seed (any value).
    pub fn seeded(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next number.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A random action for the job's seat, from the job's view only: a promotion choice when
/// one is pending, else a random legal move of the view's position.
pub fn random_action(job: &BotJob, rng: &mut Rng) -> anyhow::Result<pb::act_request::Action> {
    use pb::act_request::Action as A;
    if job.view.pending_promotion.is_some() {
        let role = ["q", "r", "b", "n"][(rng.next() % 4) as usize];
        return Ok(A::Promote(pb::PromoteAction { role: role.into() }));
    }
    let variant: Variant = job
        .view
        .variant
        .parse()
        .map_err(|_| anyhow::anyhow!("variant `{}`", job.view.variant))?;
    let position = Position::from_fen(variant, &job.view.fen)
        .map_err(|e| anyhow::anyhow!("job {}: fen {}: {e}", job.job, job.view.fen))?;
    let moves = position.legal_move_list();
    anyhow::ensure!(!moves.is_empty(), "job {}: no legal move", job.job);
    let m = moves[(rng.next() % moves.len() as u64) as usize];
    Ok(A::Move(pb::MoveAction {
        uci: m.to_string(),
        move_time_ms: None,
    }))
}

/// The job's view as the `game` frame its seat's player would receive (for the leak check).
pub fn as_game_frame(job: &BotJob) -> Value {
    json!({
        "type": "game",
        "game_id": job.game_id,
        "version": job.version,
        "seat": job.seat,
        "game": job.view,
    })
}

/// A running stand-in bot worker.
pub struct BotDriver {
    jobs: Arc<Mutex<Vec<BotJob>>>,
    stop: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl BotDriver {
    /// Starts reading the platform's bot-job queue; acts through the platform's
    /// game-sessions (balanced over all of them).
    pub async fn start(p: &Platform, seed: u64) -> anyhow::Result<BotDriver> {
        let ns = frontier_platform::Namespace::new(&p.namespace).map_err(anyhow::Error::msg)?;
        let nats = async_nats::connect(frontier_testkit::nats_url()).await?;
        let js = jetstream::new(nats);
        let stream = frontier_platform::streams::ensure_bot_jobs(&js, &ns, 1)
            .await
            .map_err(anyhow::Error::msg)?;
        let consumer = stream
            .get_or_create_consumer(
                frontier_platform::names::BOT_WORKERS_CONSUMER,
                pull::Config {
                    durable_name: Some(frontier_platform::names::BOT_WORKERS_CONSUMER.into()),
                    ack_wait: Duration::from_secs(10),
                    ..Default::default()
                },
            )
            .await?;
        let urls: Vec<String> = p.sessions.iter().map(|a| format!("http://{a}")).collect();
        let sessions = frontier_proto::game_session_client(&urls).map_err(anyhow::Error::msg)?;
        let jobs: Arc<Mutex<Vec<BotJob>>> = Arc::default();
        let stop = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(run(consumer, sessions, jobs.clone(), stop.clone(), seed));
        Ok(BotDriver { jobs, stop, task })
    }

    /// Every job taken so far, in the order taken.
    pub fn jobs(&self) -> Vec<BotJob> {
        self.jobs.lock().expect("jobs").clone()
    }

    /// Stops; an error if the driver failed (a job it could not read or play).
    pub async fn stop(self) -> anyhow::Result<()> {
        self.stop.cancel();
        self.task.await?
    }
}

async fn run(
    consumer: jetstream::consumer::Consumer<pull::Config>,
    mut sessions: pb::game_session_client::GameSessionClient<tonic::transport::Channel>,
    jobs: Arc<Mutex<Vec<BotJob>>>,
    stop: tokio_util::sync::CancellationToken,
    seed: u64,
) -> anyhow::Result<()> {
    let mut rng = Rng::seeded(seed);
    let mut messages = consumer.messages().await?;
    loop {
        let message = tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            m = messages.next() => match m {
                Some(m) => m.map_err(|e| anyhow::anyhow!("reading jobs: {e}"))?,
                None => return Ok(()),
            },
        };
        let job: BotJob = serde_json::from_slice(&message.payload).context("a bot job")?;
        let id = message
            .headers
            .as_ref()
            .and_then(|h| h.get("Nats-Msg-Id"))
            .map(|v| v.as_str().to_owned());
        anyhow::ensure!(
            id.as_deref() == Some(job.job.as_str()),
            "message id {id:?} is not the job id {}",
            job.job
        );
        anyhow::ensure!(
            job.job == BotJob::id_for(&job.game_id, job.version),
            "job id {}",
            job.job
        );
        let action = random_action(&job, &mut rng)?;
        let answer = sessions
            .act(pb::ActRequest {
                game_id: job.game_id.clone(),
                player_id: job.player_id.clone(),
                client_action_id: job.job.clone(),
                expected_version: Some(job.version),
                action: Some(action),
            })
            .await;
        if let Err(status) = answer {
            // The game moved on or ended: a final answer, as for the real workers.
            let code = frontier_platform::grpc::refusal_code(&status);
            anyhow::ensure!(
                matches!(code, Some(ErrorCode::StaleVersion | ErrorCode::GameOver)),
                "job {}: {status}",
                job.job
            );
        }
        message
            .ack()
            .await
            .map_err(|e| anyhow::anyhow!("ack: {e}"))?;
        jobs.lock().expect("jobs").push(job);
    }
}
