//! An in-process stand-in for the bot-job work queue (JetStream `<NS>_BOT_JOBS`), for the
//! single-process mode and tests: game-session's in-memory bus pushes each job on it, and
//! an in-process bot worker takes them off ([`LocalJobQueue::next`]). Like the stream, it
//! drops a job whose id it already saw (within the last [`DEDUPE_WINDOW`] ids) and hands
//! each job to one taker. Unlike the stream there is no acknowledgement: a job taken is
//! gone (one process: a worker that dies takes the whole platform with it).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::Notify;

/// How many recent job ids are remembered to drop repeats.
pub const DEDUPE_WINDOW: usize = 4096;

/// One job on the local queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalJob {
    /// Its subject (`<ns>.bot.jobs.<variant>`).
    pub subject: String,
    /// Its id (the JetStream message id: `<game id>:<version>`).
    pub id: String,
    /// The job (JSON `frontier_protocol::BotJob`).
    pub payload: Bytes,
    /// Which delivery of the job this is, from 1 ([`LocalJobQueue::requeue`] counts up).
    pub delivered: i64,
}

#[derive(Debug, Default)]
struct Inner {
    queue: VecDeque<LocalJob>,
    seen: VecDeque<String>,
}

/// The local work queue. Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct LocalJobQueue {
    inner: Arc<Mutex<Inner>>,
    ready: Arc<Notify>,
}

impl LocalJobQueue {
    /// An empty queue.
    pub fn new() -> LocalJobQueue {
        LocalJobQueue::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every update below is a single push or pop: a poisoned lock is still consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Enqueues a job; false if a job with this id was already enqueued (dropped, as
    /// JetStream drops a repeated message id).
    pub fn push(&self, subject: String, id: String, payload: Bytes) -> bool {
        {
            let mut inner = self.lock();
            if inner.seen.contains(&id) {
                return false;
            }
            inner.seen.push_back(id.clone());
            if inner.seen.len() > DEDUPE_WINDOW {
                inner.seen.pop_front();
            }
            inner.queue.push_back(LocalJob {
                subject,
                id,
                payload,
                delivered: 1,
            });
        }
        self.ready.notify_one();
        true
    }

    /// Puts a taken job back at the end of the queue, as its next delivery (a worker could
    /// not finish it now: the stream's `nak`). Not subject to the repeat check.
    pub fn requeue(&self, mut job: LocalJob) {
        job.delivered += 1;
        self.lock().queue.push_back(job);
        self.ready.notify_one();
    }

    /// Takes the oldest job, if any.
    pub fn try_next(&self) -> Option<LocalJob> {
        self.lock().queue.pop_front()
    }

    /// Takes the oldest job, waiting for one.
    pub async fn next(&self) -> LocalJob {
        loop {
            let notified = self.ready.notified();
            if let Some(job) = self.try_next() {
                return job;
            }
            notified.await;
        }
    }

    /// Jobs waiting.
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// No job waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_id_is_dropped_and_each_job_is_taken_once() {
        let q = LocalJobQueue::new();
        assert!(q.push("s".into(), "g:3".into(), Bytes::from_static(b"a")));
        assert!(!q.push("s".into(), "g:3".into(), Bytes::from_static(b"b")));
        assert!(q.push("s".into(), "g:5".into(), Bytes::from_static(b"c")));
        let taker = q.clone();
        assert_eq!(
            taker.try_next().map(|j| j.payload),
            Some(Bytes::from_static(b"a"))
        );
        assert_eq!(q.try_next().map(|j| j.id), Some("g:5".to_owned()));
        assert!(q.try_next().is_none());
        assert!(
            !q.push("s".into(), "g:3".into(), Bytes::new()),
            "still remembered"
        );
    }

    #[tokio::test]
    async fn a_waiting_taker_gets_the_next_job() {
        let q = LocalJobQueue::new();
        let taker = tokio::spawn({
            let q = q.clone();
            async move { q.next().await }
        });
        tokio::task::yield_now().await;
        q.push("s".into(), "g:2".into(), Bytes::new());
        let job = taker.await.expect("joined");
        assert_eq!(job.id, "g:2");
    }

    #[test]
    fn a_requeued_job_comes_again_as_its_next_delivery() {
        let q = LocalJobQueue::new();
        q.push("s".into(), "g:4".into(), Bytes::from_static(b"j"));
        let job = q.try_next().expect("the job");
        assert_eq!(job.delivered, 1);
        q.requeue(job);
        let again = q.try_next().expect("back");
        assert_eq!((again.id.as_str(), again.delivered), ("g:4", 2));
    }
}
