//! One subscription per game subject per gateway, fanned out to every local client that
//! follows it; it lives as long as some client holds its [`Topic`]. Subscriptions come from
//! an [`EventSource`]: NATS ([`NatsSource`]) or, in one process, a
//! [`LocalBus`](frontier_platform::local_bus::LocalBus) ([`LocalSource`]). Each frame keeps
//! the trace context it was published in, so that its relay joins the publisher's trace.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use futures_util::StreamExt as _;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use tokio::sync::{Mutex, broadcast};

use frontier_platform::names::{ENDED_HEADER, NOTICE_HEADER, VERSION_HEADER};

/// One event frame with its version.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The version.
    pub version: u64,
    /// The JSON frame, relayed as is.
    pub json: Bytes,
    /// It ended its game: the relay stops after it.
    pub ended: bool,
    /// The trace context of its publication (empty if it came without one).
    pub context: frontier_platform::trace::Context,
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

/// Where game events come from.
pub trait EventSource: Send + Sync + 'static {
    /// Subscribes to `subject`. When this resolves the subscription is active: nothing
    /// published afterwards is missed.
    fn subscribe(
        &self,
        subject: String,
    ) -> BoxFuture<'_, Result<BoxStream<'static, Frame>, String>>;
}

/// Events from NATS; each message's version is in its `Frontier-Version` header. A player
/// notice (the `Frontier-Notice` header: a frame on a player subject) has no version and
/// counts as version 0; any other message without a version is not an event and is dropped.
pub struct NatsSource(pub async_nats::Client);

impl EventSource for NatsSource {
    fn subscribe(
        &self,
        subject: String,
    ) -> BoxFuture<'_, Result<BoxStream<'static, Frame>, String>> {
        Box::pin(async move {
            let subscription = self.0.subscribe(subject).await.map_err(|e| e.to_string())?;
            // The SUB must be active at the server before callers go on to read the log,
            // or an event published in between could be missed by both. `flush` only
            // empties the client's buffer; a request the server answers itself (no
            // responders) is a round trip after the SUB, on the same connection.
            server_round_trip(&self.0).await;
            let frames = subscription.filter_map(|msg| async move {
                let headers = msg.headers.as_ref();
                let version = match headers.and_then(|h| h.get(VERSION_HEADER)) {
                    Some(v) => v.as_str().parse::<u64>().ok()?,
                    None if headers.is_some_and(|h| h.get(NOTICE_HEADER).is_some()) => 0,
                    None => return None,
                };
                let context = frontier_platform::trace::extract_headers(msg.headers.as_ref());
                let ended = msg
                    .headers
                    .as_ref()
                    .is_some_and(|h| h.get(ENDED_HEADER).is_some());
                Some(Frame {
                    version,
                    ended,
                    json: msg.payload,
                    context,
                })
            });
            Ok(frames.boxed())
        })
    }
}

/// Events from an in-process [`LocalBus`](frontier_platform::local_bus::LocalBus).
pub struct LocalSource(pub frontier_platform::local_bus::LocalBus);

impl EventSource for LocalSource {
    fn subscribe(
        &self,
        subject: String,
    ) -> BoxFuture<'_, Result<BoxStream<'static, Frame>, String>> {
        let rx = self.0.subscribe();
        Box::pin(async move {
            let frames =
                futures_util::stream::unfold((rx, subject), |(mut rx, subject)| async move {
                    loop {
                        match rx.recv().await {
                            Ok(m) if m.subject == subject => {
                                let frame = Frame {
                                    version: m.version,
                                    ended: m.ended,
                                    json: m.payload,
                                    context: m.context,
                                };
                                return Some((frame, (rx, subject)));
                            }
                            // Another subject, or frames missed: the follower sees the gap in
                            // versions and resumes from the log.
                            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                            Err(broadcast::error::RecvError::Closed) => return None,
                        }
                    }
                });
            Ok(frames.boxed())
        })
    }
}

/// The fan-out of subjects to local clients.
pub struct Hub {
    source: Box<dyn EventSource>,
    topics: Mutex<HashMap<String, Weak<Topic>>>,
    capacity: usize,
}

impl Hub {
    /// A hub over this source; each client may fall `capacity` frames behind before it
    /// must resume from the log.
    pub fn new(source: Box<dyn EventSource>, capacity: usize) -> Hub {
        Hub {
            source,
            topics: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// Follows `subject`, sharing the subscription with other local clients.
    pub async fn follow(
        &self,
        subject: &str,
    ) -> Result<(Arc<Topic>, broadcast::Receiver<Frame>), String> {
        let mut topics = self.topics.lock().await;
        if let Some(topic) = topics.get(subject).and_then(Weak::upgrade) {
            let rx = topic.receiver();
            return Ok((topic, rx));
        }
        let mut frames = self.source.subscribe(subject.to_owned()).await?;
        let (tx, rx) = broadcast::channel(self.capacity);
        let sender = tx.clone();
        let task = tokio::spawn(async move {
            while let Some(frame) = frames.next().await {
                // No receiver left is fine: the topic is about to be dropped.
                let _ = sender.send(frame);
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

#[cfg(test)]
mod tests {
    use super::*;
    use frontier_platform::local_bus::LocalBus;

    #[tokio::test]
    async fn a_subject_is_shared_relayed_and_released() {
        let bus = LocalBus::new(16);
        let hub = Hub::new(Box::new(LocalSource(bus.clone())), 16);
        let (a, mut rx_a) = hub.follow("g.1.public").await.expect("follow");
        let (b, mut rx_b) = hub.follow("g.1.public").await.expect("follow");
        assert!(Arc::ptr_eq(&a, &b), "one subscription per subject");
        bus.publish("g.2.public".into(), 1, false, Bytes::from_static(b"other"));
        bus.publish("g.1.public".into(), 7, true, Bytes::from_static(b"mine"));
        for rx in [&mut rx_a, &mut rx_b] {
            let f = rx.recv().await.expect("frame");
            assert_eq!((f.version, f.json.as_ref()), (7, b"mine".as_ref()));
            assert!(f.ended, "the end of the game travels with the frame");
        }
        drop((a, b));
        let (c, _) = hub.follow("g.1.public").await.expect("follow again");
        assert_eq!(Arc::strong_count(&c), 1, "the old topic was released");
    }
}
