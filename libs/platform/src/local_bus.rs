//! An in-process stand-in for NATS core pub/sub, for the single-process mode and tests:
//! one broadcast channel of (subject, version, frame). game-session's in-memory event bus
//! publishes on it; the gateway's in-memory event source subscribes to it. Like a NATS
//! message's headers, each message carries the publisher's trace context.

use bytes::Bytes;
use tokio::sync::broadcast;

/// One message on the local bus.
#[derive(Debug, Clone)]
pub struct LocalMessage {
    /// Its subject.
    pub subject: String,
    /// Its version (the `Frontier-Version` header on NATS).
    pub version: u64,
    /// It ended its game (the `Frontier-Ended` header on NATS).
    pub ended: bool,
    /// Its payload.
    pub payload: Bytes,
    /// The trace context of the span that published it.
    pub context: crate::trace::Context,
}

/// The local bus. Cloning shares it.
#[derive(Debug, Clone)]
pub struct LocalBus {
    tx: broadcast::Sender<LocalMessage>,
}

impl LocalBus {
    /// A bus on which a subscriber may fall `capacity` messages behind.
    pub fn new(capacity: usize) -> LocalBus {
        LocalBus {
            tx: broadcast::channel(capacity.max(1)).0,
        }
    }

    /// Publishes (nobody listening is fine).
    pub fn publish(&self, subject: String, version: u64, ended: bool, payload: Bytes) {
        let _ = self.tx.send(LocalMessage {
            subject,
            version,
            ended,
            payload,
            context: crate::trace::current(),
        });
    }

    /// Receives everything published from now on. Active at once: no round trip needed.
    pub fn subscribe(&self) -> broadcast::Receiver<LocalMessage> {
        self.tx.subscribe()
    }
}
