//! Argon2id hashing on a small pool of dedicated OS threads with a bounded queue.
//!
//! A hash costs tens of milliseconds of CPU and 19 MiB of memory. On tokio's blocking pool
//! (up to 512 threads) a login flood would run hundreds at once and starve the WebSocket
//! relay of CPU. Here at most `threads` hashes run at a time and at most `queue` wait; a
//! request beyond that is refused at once ([`HashError::Busy`]) instead of queueing. A
//! token bucket also bounds how many hashes a second start (a memory-hard hash slows its
//! neighbours through the shared caches, not only through the CPU it takes). The
//! threads run at a lower scheduling priority (`nice`, Linux), so when the CPU is short the
//! relay's threads get it first and logins wait, not moves.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use argon2::Argon2;
use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use tokio::sync::oneshot;

/// Why hashing did not produce an answer.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    /// Every hashing thread is busy and the queue is full: try again shortly.
    #[error("password hashing is saturated")]
    Busy,
    /// The stored hash is malformed, or hashing failed.
    #[error("hashing: {0}")]
    Failed(String),
}

enum Job {
    Hash {
        password: String,
        reply: oneshot::Sender<Result<String, HashError>>,
    },
    Verify {
        password: String,
        hash: String,
        reply: oneshot::Sender<Result<bool, HashError>>,
    },
}

/// The pool. Cloning shares it; the threads end when the last clone is dropped.
#[derive(Clone)]
pub struct HashPool {
    jobs: SyncSender<Job>,
    rate: Arc<Mutex<Bucket>>,
    /// Jobs accepted and not yet finished.
    pending: Arc<AtomicUsize>,
    capacity: usize,
}

/// How the pool is bounded.
#[derive(Debug, Clone, Copy)]
pub struct PoolLimits {
    /// Hashing threads (at least 1).
    pub threads: usize,
    /// Jobs that may wait for a thread.
    pub queue: usize,
    /// Hashes started per second, on average (bursts of `threads + queue`).
    pub per_second: f64,
    /// Scheduling priority of the threads (`nice`, 0–19; Linux only).
    pub nice: i32,
}

/// A token bucket.
struct Bucket {
    tokens: f64,
    burst: f64,
    per_second: f64,
    last: Instant,
}

impl Bucket {
    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst);
    }

    fn take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl HashPool {
    /// Starts `threads` (at least 1) hashing threads with room for `queue` waiting jobs
    /// (no rate bound, normal priority).
    pub fn new(threads: usize, queue: usize) -> std::io::Result<HashPool> {
        HashPool::with_limits(PoolLimits {
            threads,
            queue,
            per_second: f64::INFINITY,
            nice: 0,
        })
    }

    /// A pool bounded by `limits`.
    pub fn with_limits(limits: PoolLimits) -> std::io::Result<HashPool> {
        let PoolLimits {
            threads,
            queue,
            per_second,
            nice,
        } = limits;
        let (jobs, rx) = std::sync::mpsc::sync_channel::<Job>(queue);
        let rx = Arc::new(Mutex::new(rx));
        let burst = (threads.max(1) + queue) as f64;
        let rate = Arc::new(Mutex::new(Bucket {
            tokens: burst,
            burst,
            per_second,
            last: Instant::now(),
        }));
        let pending = Arc::new(AtomicUsize::new(0));
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            let pending = pending.clone();
            std::thread::Builder::new()
                .name(format!("argon2-{i}"))
                .spawn(move || {
                    lower_priority(nice);
                    work(&rx, &pending);
                })?;
        }
        Ok(HashPool {
            jobs,
            rate,
            pending,
            capacity: threads.max(1) + queue,
        })
    }

    /// Whether a hash asked for now would surely be refused: a cheap check before any
    /// other work for a login or registration.
    pub fn saturated(&self) -> bool {
        if self.pending.load(Ordering::Relaxed) >= self.capacity {
            return true;
        }
        let mut rate = self.rate.lock().unwrap_or_else(|p| p.into_inner());
        rate.refill(Instant::now());
        rate.tokens < 1.0
    }

    /// Hashes a new password (a PHC string with a fresh salt).
    pub async fn hash(&self, password: String) -> Result<String, HashError> {
        let (reply, answer) = oneshot::channel();
        self.submit(Job::Hash { password, reply })?;
        answer
            .await
            .map_err(|_| HashError::Failed("hashing thread ended".into()))?
    }

    /// Whether `password` matches the stored PHC string `hash`.
    pub async fn verify(&self, password: String, hash: String) -> Result<bool, HashError> {
        let (reply, answer) = oneshot::channel();
        self.submit(Job::Verify {
            password,
            hash,
            reply,
        })?;
        answer
            .await
            .map_err(|_| HashError::Failed("hashing thread ended".into()))?
    }

    fn submit(&self, job: Job) -> Result<(), HashError> {
        let admitted = self
            .rate
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take(Instant::now());
        if !admitted {
            return Err(HashError::Busy);
        }
        self.pending.fetch_add(1, Ordering::Relaxed);
        self.jobs.try_send(job).map_err(|e| {
            self.pending.fetch_sub(1, Ordering::Relaxed);
            match e {
                TrySendError::Full(_) => HashError::Busy,
                TrySendError::Disconnected(_) => HashError::Failed("no hashing thread".into()),
            }
        })
    }
}

/// Lowers the calling thread's priority (on Linux `setpriority` on a thread id applies to
/// that thread only).
#[cfg(target_os = "linux")]
fn lower_priority(nice: i32) {
    if nice <= 0 {
        return;
    }
    let tid = rustix::thread::gettid();
    if let Err(e) = rustix::process::setpriority_process(Some(tid), nice.min(19)) {
        tracing::warn!(error = %e, "could not lower the hashing thread's priority");
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority(_nice: i32) {}

fn work(rx: &Mutex<Receiver<Job>>, pending: &AtomicUsize) {
    loop {
        // Hold the lock only to take a job, never while hashing.
        let job = {
            let guard = rx.lock().unwrap_or_else(|p| p.into_inner());
            guard.recv()
        };
        let Ok(job) = job else { return };
        run(job);
        pending.fetch_sub(1, Ordering::Relaxed);
    }
}

fn run(job: Job) {
    match job {
        Job::Hash { password, reply } => {
            let salt = SaltString::generate(&mut OsRng);
            let hashed = Argon2::default()
                .hash_password(password.as_bytes(), &salt)
                .map(|h| h.to_string())
                .map_err(|e| HashError::Failed(e.to_string()));
            let _ = reply.send(hashed);
        }
        Job::Verify {
            password,
            hash,
            reply,
        } => {
            let answer = PasswordHash::new(&hash)
                .map_err(|e| HashError::Failed(format!("stored hash: {e}")))
                .map(|parsed| {
                    Argon2::default()
                        .verify_password(password.as_bytes(), &parsed)
                        .is_ok()
                });
            let _ = reply.send(answer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_rate_bound_refuses_past_its_burst() {
        let pool = HashPool::with_limits(PoolLimits {
            threads: 1,
            queue: 1,
            per_second: 0.001,
            nice: 0,
        })
        .expect("threads");
        // A burst of threads + queue = 2, one after the other, then nothing for ~1000 s.
        assert!(pool.hash("first one".into()).await.is_ok());
        assert!(pool.hash("second one".into()).await.is_ok());
        assert!(matches!(
            pool.hash("third one".into()).await,
            Err(HashError::Busy)
        ));
    }

    #[tokio::test]
    async fn hashes_verify_and_a_full_queue_refuses_at_once() {
        let pool = HashPool::new(1, 1).expect("threads");
        let hash = pool.hash("correct horse".into()).await.expect("hash");
        assert!(
            pool.verify("correct horse".into(), hash.clone())
                .await
                .expect("verify")
        );
        assert!(
            !pool
                .verify("wrong horse".into(), hash.clone())
                .await
                .expect("verify")
        );
        // Many at once on one thread and a queue of one: some are refused, none wait
        // forever.
        let attempts = (0..16).map(|_| pool.verify("wrong horse".into(), hash.clone()));
        let results = futures_util::future::join_all(attempts).await;
        let busy = results
            .iter()
            .filter(|r| matches!(r, Err(HashError::Busy)))
            .count();
        assert!(busy > 0, "a saturated pool refuses");
        assert!(
            results
                .iter()
                .all(|r| matches!(r, Ok(false) | Err(HashError::Busy))),
            "the rest are answered"
        );
    }
}
