//! One NATS subscription per game subject per gateway, fanned out to every local client
//! that follows it. The subscription lives as long as some client holds its [`Topic`].

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use futures_util::StreamExt as _;
use tokio::sync::{Mutex, broadcast};

/// Header carrying an event's version (set by game-session).
pub const VERSION_HEADER: &str = "Frontier-Version";

/// One event frame with its version.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The version.
    pub version: u64,
    /// The JSON frame, relayed as is.
    pub json: Bytes,
}

/// A followed subject. Dropping the last handle unsubscribes.
pub struct Topic {
    tx: broadcast::Sender<Frame>,
    task: tokio::task::AbortHandle,
}

impl Drop for Topic {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Topic {
    /// A receiver of this subject's frames from now on.
    pub fn receiver(&self) -> broadcast::Receiver<Frame> {
        self.tx.subscribe()
    }
}

/// The fan-out of NATS subjects to local clients.
pub struct Hub {
    nats: async_nats::Client,
    topics: Mutex<HashMap<String, Weak<Topic>>>,
    capacity: usize,
}

impl Hub {
    /// A hub over this connection; each client may fall `capacity` frames behind before it
    /// must resume from the log.
    pub fn new(nats: async_nats::Client, capacity: usize) -> Hub {
        Hub {
            nats,
            topics: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// Follows `subject`, sharing the subscription with other local clients.
    pub async fn follow(
        &self,
        subject: &str,
    ) -> Result<(Arc<Topic>, broadcast::Receiver<Frame>), async_nats::SubscribeError> {
        let mut topics = self.topics.lock().await;
        if let Some(topic) = topics.get(subject).and_then(Weak::upgrade) {
            let rx = topic.receiver();
            return Ok((topic, rx));
        }
        let mut subscription = self.nats.subscribe(subject.to_owned()).await?;
        // The subscription must be active at the server before callers go on to read the
        // log, or an event published in between could be missed by both. `flush` only
        // empties the client's buffer; a request the server answers itself (no responders)
        // is a round trip after the SUB, on the same connection, so the SUB was processed.
        server_round_trip(&self.nats).await;
        let (tx, rx) = broadcast::channel(self.capacity);
        let sender = tx.clone();
        let task = tokio::spawn(async move {
            while let Some(msg) = subscription.next().await {
                let version = msg
                    .headers
                    .as_ref()
                    .and_then(|h| h.get(VERSION_HEADER))
                    .and_then(|v| v.as_str().parse::<u64>().ok());
                if let Some(version) = version {
                    // No receiver left is fine: the topic is about to be dropped.
                    let _ = sender.send(Frame {
                        version,
                        json: msg.payload,
                    });
                }
            }
        });
        let topic = Arc::new(Topic {
            tx,
            task: task.abort_handle(),
        });
        topics.retain(|_, weak| weak.strong_count() > 0);
        topics.insert(subject.to_owned(), Arc::downgrade(&topic));
        Ok((topic, rx))
    }
}

/// Waits until the server has processed everything this connection sent so far.
pub async fn server_round_trip(nats: &async_nats::Client) {
    let probe = format!("_FRONTIER.ready.{}", uuid::Uuid::new_v4().simple());
    let answered = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        nats.request(probe, bytes::Bytes::new()),
    )
    .await;
    if answered.is_err() {
        tracing::warn!("NATS did not answer a readiness probe within 5 s");
    }
}
