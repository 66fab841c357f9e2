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
use std::sync::Mutex;

use tokio::sync::broadcast;

use frontier_platform::envelope::Envelope;
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

/// What a topic feeds its frames to: each local follower of the subject. The topic's task
/// calls it for every frame, in the order the subscription delivers them, with no channel
/// and no task between them: a frame that is in order goes from the subscription straight
/// to the connection's outgoing queue, and only a frame the follower must act on (a gap to
/// fill from the log, say) wakes the follower's own task.
pub trait Sink: Send + Sync + 'static {
    /// Takes one frame. It runs on the topic's task, under the topic's lock: it must not
    /// block or wait.
    fn offer(&self, frame: &Frame);
}

type Sinks = Mutex<Vec<(u64, Arc<dyn Sink>)>>;

/// A followed subject: its subscription's task and the sinks it feeds. The subscription
/// ends when the last [`Subscription`] of it is dropped.
pub struct Topic {
    sinks: Arc<Sinks>,
    next_id: std::sync::atomic::AtomicU64,
    task: tokio::task::AbortHandle,
}

impl Drop for Topic {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Topic {
    fn add(self: &Arc<Topic>, sink: Arc<dyn Sink>) -> Subscription {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.sinks).push((id, sink));
        Subscription {
            topic: self.clone(),
            id,
        }
    }
}

/// One sink's place on a topic: dropping it stops the feed (and, the last one, the
/// subscription).
pub struct Subscription {
    topic: Arc<Topic>,
    id: u64,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        lock(&self.topic.sinks).retain(|(id, _)| *id != self.id);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where game events come from.
pub trait EventSource: Send + Sync + 'static {
    /// Subscribes to `subject` (a NATS subject, wildcards allowed). When this resolves the
    /// subscription is active: nothing published afterwards is missed.
    fn subscribe(
        &self,
        subject: String,
    ) -> BoxFuture<'_, Result<BoxStream<'static, Frame>, String>>;
}

/// Events from NATS; each message's version is in an envelope in front of its frame or in
/// its `Frontier-Version` header ([`frontier_platform::envelope`]). A player notice (the
/// `Frontier-Notice` header: a frame on a player subject) has no version and counts as
/// version 0; any other message without a version is not an event and is dropped.
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
            let frames = subscription.filter_map(|msg| async move { event_frame(msg) });
            Ok(frames.boxed())
        })
    }
}

/// The frame of a NATS message on a game or player subject, its metadata read from
/// either form game-session writes ([`frontier_platform::envelope`]): an envelope in front
/// of the frame, or headers.
fn event_frame(msg: async_nats::Message) -> Option<Frame> {
    let context = frontier_platform::trace::extract_headers(msg.headers.as_ref());
    if let Some((envelope, json)) = Envelope::open(&msg.payload) {
        record_relay(envelope.published_at_us);
        return Some(Frame {
            version: envelope.version,
            ended: envelope.ended,
            json,
            context,
        });
    }
    let headers = msg.headers.as_ref();
    let version = match headers.and_then(|h| h.get(VERSION_HEADER)) {
        Some(v) => v.as_str().parse::<u64>().ok()?,
        None if headers.is_some_and(|h| h.get(NOTICE_HEADER).is_some()) => 0,
        None => return None,
    };
    if let Some(at) = headers
        .and_then(|h| h.get(frontier_platform::names::PUBLISHED_AT_HEADER))
        .and_then(|v| v.as_str().parse::<u64>().ok())
    {
        record_relay(at);
    }
    let ended = headers.is_some_and(|h| h.get(ENDED_HEADER).is_some());
    Some(Frame {
        version,
        ended,
        json: msg.payload,
        context,
    })
}

/// The `relay` stage of an event published at `published_at_us` (Unix µs), received now.
fn record_relay(published_at_us: u64) {
    // Clocks of two hosts: a negative span reads 0.
    let span = frontier_platform::names::unix_micros().saturating_sub(published_at_us);
    relay_stage().record(span as f64 / 1e6);
}

/// A move's `relay` stage: from game-session's publish to the event's receipt here.
fn relay_stage() -> &'static metrics::Histogram {
    static STAGE: std::sync::OnceLock<metrics::Histogram> = std::sync::OnceLock::new();
    STAGE.get_or_init(|| metrics::histogram!("frontier_gateway_stage_seconds", "stage" => "relay"))
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
                            Ok(m)
                                if frontier_platform::names::subject_matches(
                                    &subject, &m.subject,
                                ) =>
                            {
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
    topics: Mutex<WeakMap<Topic>>,
}

/// Shared values by key, held weakly: a value lives while some caller holds it. Entries of
/// released values are swept when the map has doubled since the last sweep, so that
/// inserting stays O(1) amortised with many keys. Used for the hub's topics and for the
/// players' notice channels (`notices.rs`).
pub(crate) struct WeakMap<T> {
    map: HashMap<String, Weak<T>>,
    sweep_at: usize,
}

impl<T> Default for WeakMap<T> {
    fn default() -> Self {
        WeakMap {
            map: HashMap::new(),
            sweep_at: 0,
        }
    }
}

impl<T> WeakMap<T> {
    /// The live value of `key`, if any.
    pub(crate) fn get(&self, key: &str) -> Option<Arc<T>> {
        self.map.get(key).and_then(Weak::upgrade)
    }

    /// Makes `value` the value of `key`.
    pub(crate) fn insert(&mut self, key: &str, value: &Arc<T>) {
        if self.map.len() >= self.sweep_at {
            self.map.retain(|_, weak| weak.strong_count() > 0);
            self.sweep_at = (self.map.len() * 2).max(64);
        }
        self.map.insert(key.to_owned(), Arc::downgrade(value));
    }

    /// Keys held now (released ones not yet swept included).
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

impl Hub {
    /// A hub over this source.
    pub fn new(source: Box<dyn EventSource>) -> Hub {
        Hub {
            source,
            topics: Mutex::new(WeakMap::default()),
        }
    }

    /// Feeds `subject`'s frames to `sink` from now on, sharing the subscription with
    /// other local followers, until the returned [`Subscription`] is dropped.
    ///
    /// The map of topics is locked only to look up and to insert, never across the
    /// subscription itself (on NATS a server round trip): a slow subscribe delays only its
    /// own caller. Two first followers of one subject may both subscribe; the second to
    /// finish finds the first's topic, joins it and drops its own subscription.
    pub async fn follow(&self, subject: &str, sink: Arc<dyn Sink>) -> Result<Subscription, String> {
        if let Some(topic) = lock(&self.topics).get(subject) {
            return Ok(topic.add(sink));
        }
        let mut frames = self.source.subscribe(subject.to_owned()).await?;
        let mut topics = lock(&self.topics);
        if let Some(topic) = topics.get(subject) {
            return Ok(topic.add(sink));
        }
        let sinks: Arc<Sinks> = Arc::default();
        let fed = sinks.clone();
        let task = tokio::spawn(async move {
            while let Some(frame) = frames.next().await {
                for (_, sink) in lock(&fed).iter() {
                    sink.offer(&frame);
                }
            }
        });
        let topic = Arc::new(Topic {
            sinks,
            next_id: std::sync::atomic::AtomicU64::new(0),
            task: task.abort_handle(),
        });
        topics.insert(subject, &topic);
        Ok(topic.add(sink))
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
    use tokio::sync::mpsc;

    /// A sink that queues what it is offered.
    struct Queue(mpsc::UnboundedSender<Frame>);

    impl Sink for Queue {
        fn offer(&self, frame: &Frame) {
            let _ = self.0.send(frame.clone());
        }
    }

    fn queue() -> (Arc<dyn Sink>, mpsc::UnboundedReceiver<Frame>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Arc::new(Queue(tx)), rx)
    }

    fn message(payload: Bytes, headers: &[(&str, &str)]) -> async_nats::Message {
        let mut map = async_nats::HeaderMap::new();
        for (name, value) in headers {
            map.insert(*name, *value);
        }
        async_nats::Message {
            subject: "ns.game.1.-.-.-".into(),
            reply: None,
            length: payload.len(),
            payload,
            headers: (!headers.is_empty()).then_some(map),
            status: None,
            description: None,
        }
    }

    #[test]
    fn an_event_is_read_with_its_metadata_in_headers_or_in_an_envelope() {
        let json = Bytes::from_static(br#"{"type":"event","version":5}"#);
        let seen = |frame: Option<Frame>| frame.map(|f| (f.version, f.ended, f.json));
        let from_headers = message(
            json.clone(),
            &[
                (VERSION_HEADER, "5"),
                (ENDED_HEADER, "1"),
                (frontier_platform::names::PUBLISHED_AT_HEADER, "1"),
            ],
        );
        assert_eq!(
            seen(event_frame(from_headers)),
            Some((5, true, json.clone()))
        );
        let envelope = Envelope {
            version: 5,
            published_at_us: 1,
            ended: false,
        };
        let enveloped = message(envelope.wrap(&json), &[]);
        assert_eq!(
            seen(event_frame(enveloped)),
            Some((5, false, json.clone())),
            "the envelope is taken off: clients get the frame alone"
        );
        // A notice has no version; anything else without one is not an event.
        let notice = message(json.clone(), &[(NOTICE_HEADER, "1")]);
        assert_eq!(seen(event_frame(notice)), Some((0, false, json.clone())));
        assert_eq!(seen(event_frame(message(json.clone(), &[]))), None);
        let bad = message(json, &[(VERSION_HEADER, "five")]);
        assert_eq!(seen(event_frame(bad)), None);
    }

    #[tokio::test]
    async fn a_subject_is_shared_relayed_and_released() {
        let bus = LocalBus::new(16);
        let hub = Hub::new(Box::new(LocalSource(bus.clone())));
        let (sink_a, mut rx_a) = queue();
        let (sink_b, mut rx_b) = queue();
        let a = hub.follow("g.1.public", sink_a).await.expect("follow");
        let b = hub.follow("g.1.public", sink_b).await.expect("follow");
        assert!(
            Arc::ptr_eq(&a.topic, &b.topic),
            "one subscription per subject"
        );
        bus.publish("g.2.public".into(), 1, false, Bytes::from_static(b"other"));
        bus.publish("g.1.public".into(), 7, true, Bytes::from_static(b"mine"));
        for rx in [&mut rx_a, &mut rx_b] {
            let f = rx.recv().await.expect("frame");
            assert_eq!((f.version, f.json.as_ref()), (7, b"mine".as_ref()));
            assert!(f.ended, "the end of the game travels with the frame");
        }
        drop(a);
        bus.publish("g.1.public".into(), 8, false, Bytes::from_static(b"next"));
        assert_eq!(rx_b.recv().await.expect("frame").version, 8);
        assert!(
            rx_a.recv().await.is_none(),
            "a dropped subscription is fed no more (its sink was released)"
        );
        drop(b);
        let (sink_c, _rx_c) = queue();
        let c = hub
            .follow("g.1.public", sink_c)
            .await
            .expect("follow again");
        assert_eq!(Arc::strong_count(&c.topic), 1, "the old topic was released");
    }

    /// A source whose subscriptions to `stuck.*` never become active.
    struct Stuck {
        local: LocalSource,
        entered: Arc<tokio::sync::Notify>,
    }

    impl EventSource for Stuck {
        fn subscribe(
            &self,
            subject: String,
        ) -> BoxFuture<'_, Result<BoxStream<'static, Frame>, String>> {
            if subject.starts_with("stuck.") {
                self.entered.notify_one();
                return Box::pin(futures_util::future::pending());
            }
            self.local.subscribe(subject)
        }
    }

    #[tokio::test]
    async fn a_subscription_that_hangs_delays_no_other_subject() {
        use futures_util::FutureExt as _;
        let entered = Arc::new(tokio::sync::Notify::new());
        let bus = LocalBus::new(16);
        let hub = Arc::new(Hub::new(Box::new(Stuck {
            local: LocalSource(bus.clone()),
            entered: entered.clone(),
        })));
        let stuck = tokio::spawn({
            let hub = hub.clone();
            let (sink, _rx) = queue();
            async move { hub.follow("stuck.1", sink).await.map(|_| ()) }
        });
        entered.notified().await;
        // A local subscription is ready at once, so following another subject completes
        // on its first poll unless it waits behind the stuck one.
        let (sink, mut rx) = queue();
        let followed = hub.follow("g.1.public", sink).now_or_never();
        let subscription = followed
            .expect("another subject is followed while one subscription hangs")
            .expect("follow");
        bus.publish("g.1.public".into(), 3, false, Bytes::from_static(b"live"));
        assert_eq!(rx.recv().await.expect("frame").version, 3);
        assert!(
            !stuck.is_finished(),
            "the stuck subscription is still pending"
        );
        stuck.abort();
        drop(subscription);
    }

    #[tokio::test]
    async fn released_topics_are_swept_as_the_map_grows() {
        let hub = Hub::new(Box::new(LocalSource(LocalBus::new(16))));
        for i in 0..1_000 {
            // Each topic is dropped at once: the map must not keep a thousand dead entries.
            let (sink, _rx) = queue();
            hub.follow(&format!("g.{i}.public"), sink)
                .await
                .expect("follow");
        }
        let topics = hub.topics.lock().expect("lock");
        assert!(
            topics.len() <= 64,
            "dead entries are swept: {} left",
            topics.len()
        );
    }
}
