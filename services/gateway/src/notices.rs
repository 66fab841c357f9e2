//! Player notices: what other services tell one player, on `<ns>.player.<id>` — client
//! frames to relay as they are (rematch offers and starts, marked by the `Frontier-Notice`
//! header) and matchmaking's `matched` notices (protobuf `frontier.matchmaking.v1.Matched`).
//!
//! A gateway takes every player's notices through **one** subscription (`<ns>.player.*`)
//! and routes each to the connections of that player it holds, through a small channel per
//! connected player. A subscription per connection cost a NATS subscription, its client
//! buffer and a task for every authenticated socket; notices are few (a handful per game
//! started), so reading the others' is the cheaper side. In one process (`frontier dev`)
//! the same routing reads the in-process buses instead.
//!
//! Notices are at most once, as before: one missed (a connection that fell far behind, or
//! a gateway that was reconnecting to NATS) is recovered by the client asking (`status`,
//! the game's view).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt as _;
use tokio::sync::broadcast;

use frontier_platform::Namespace;
use frontier_platform::local_bus::LocalBus;
use frontier_platform::names::NOTICE_HEADER;

use crate::hub::WeakMap;

/// Notices a connected player's channel keeps for a connection that has not read them yet.
pub const NOTICE_FRAMES: usize = 8;

/// One notice for a player.
#[derive(Debug, Clone)]
pub enum Notice {
    /// A client-protocol frame, relayed as it is.
    Frame(Bytes),
    /// A `matched` notice from matchmaking (protobuf).
    Matched(Bytes),
}

/// What a local bus carries on player subjects.
#[derive(Debug, Clone, Copy)]
pub enum LocalKind {
    /// Client frames (game-session's rematch notices).
    Frames,
    /// `matched` notices (matchmaking's).
    Matched,
}

/// The routing of player notices to this gateway's connections. Cloning shares it.
#[derive(Clone)]
pub struct PlayerNotices {
    inner: Arc<Inner>,
}

struct Inner {
    /// `<ns>.player.`: what a player subject starts with.
    prefix: String,
    /// Connected players' channels.
    players: Mutex<WeakMap<Channel>>,
}

/// A connected player's channel; the last connection of the player dropping its handle
/// releases it.
pub struct Channel {
    tx: broadcast::Sender<Notice>,
}

/// A connection's hold on its player's notices.
pub struct Following {
    _channel: Arc<Channel>,
    /// The notices, in order.
    pub rx: broadcast::Receiver<Notice>,
}

impl PlayerNotices {
    /// Routing with no source yet (add one with [`nats`](Self::nats) or
    /// [`local`](Self::local)).
    pub fn new(ns: &Namespace) -> PlayerNotices {
        PlayerNotices {
            inner: Arc::new(Inner {
                prefix: ns.player_subject(""),
                players: Mutex::new(WeakMap::default()),
            }),
        }
    }

    /// Takes every player's notices from NATS. Resolves once the subscription is active at
    /// the server (nothing published afterwards is missed); the routing task ends with the
    /// NATS client.
    pub async fn nats(&self, nats: &async_nats::Client) -> Result<(), String> {
        let subject = format!("{}*", self.inner.prefix);
        let mut subscription = nats.subscribe(subject).await.map_err(|e| e.to_string())?;
        crate::hub::server_round_trip(nats).await;
        let inner = self.inner.clone();
        tokio::spawn(async move {
            while let Some(message) = subscription.next().await {
                let is_frame = message
                    .headers
                    .as_ref()
                    .is_some_and(|h| h.get(NOTICE_HEADER).is_some());
                let notice = if is_frame {
                    Notice::Frame(message.payload)
                } else {
                    Notice::Matched(message.payload)
                };
                inner.route(message.subject.as_str(), notice);
            }
        });
        Ok(())
    }

    /// Takes the notices on the player subjects of an in-process bus, all of one kind.
    /// Active at once.
    pub fn local(&self, bus: &LocalBus, kind: LocalKind) {
        let mut rx = bus.subscribe();
        let inner = self.inner.clone();
        tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(m) if m.subject.starts_with(&inner.prefix) => {
                        let notice = match kind {
                            LocalKind::Frames => Notice::Frame(m.payload),
                            LocalKind::Matched => Notice::Matched(m.payload),
                        };
                        inner.route(&m.subject, notice);
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(missed = n, "player notices were missed");
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    /// Follows `player`'s notices from now on (no I/O: the subscription is the gateway's).
    pub fn follow(&self, player: &str) -> Following {
        let mut players = self.inner.lock();
        if let Some(channel) = players.get(player) {
            let rx = channel.tx.subscribe();
            return Following {
                _channel: channel,
                rx,
            };
        }
        let (tx, rx) = broadcast::channel(NOTICE_FRAMES);
        let channel = Arc::new(Channel { tx });
        players.insert(player, &channel);
        Following {
            _channel: channel,
            rx,
        }
    }

    /// Players with a channel now (released ones not yet swept included).
    pub fn tracked(&self) -> usize {
        self.inner.lock().len()
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, WeakMap<Channel>> {
        self.players.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands `notice` to the connections of the player whose subject this is, if any.
    fn route(&self, subject: &str, notice: Notice) {
        let Some(player) = subject.strip_prefix(&self.prefix) else {
            return;
        };
        let channel = self.lock().get(player);
        if let Some(channel) = channel {
            // No receiver left: the player's last connection is closing.
            let _ = channel.tx.send(notice);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns() -> Namespace {
        Namespace::new("notices").expect("valid")
    }

    #[tokio::test]
    async fn a_notice_reaches_every_connection_of_its_player_and_no_other() {
        let frames = LocalBus::new(16);
        let matched = LocalBus::new(16);
        let notices = PlayerNotices::new(&ns());
        notices.local(&frames, LocalKind::Frames);
        notices.local(&matched, LocalKind::Matched);
        let mut a1 = notices.follow("a");
        let mut a2 = notices.follow("a");
        let mut b = notices.follow("b");
        frames.publish(
            ns().player_subject("a"),
            0,
            false,
            Bytes::from_static(b"{}"),
        );
        matched.publish(ns().player_subject("b"), 0, false, Bytes::from_static(b"m"));
        // Not a player subject of this namespace: ignored.
        frames.publish("other.player.a".into(), 0, false, Bytes::from_static(b"x"));
        for rx in [&mut a1.rx, &mut a2.rx] {
            assert!(matches!(rx.recv().await, Ok(Notice::Frame(f)) if f.as_ref() == b"{}"));
        }
        assert!(matches!(b.rx.recv().await, Ok(Notice::Matched(m)) if m.as_ref() == b"m"));
        assert!(a1.rx.try_recv().is_err(), "a saw only its own notice");
        assert!(b.rx.try_recv().is_err(), "b saw only its own notice");
    }

    #[tokio::test]
    async fn a_players_channel_goes_with_their_last_connection() {
        let notices = PlayerNotices::new(&ns());
        for i in 0..1_000 {
            // Each connection closes at once: the map must not keep a thousand channels.
            drop(notices.follow(&format!("p{i}")));
        }
        assert!(notices.tracked() <= 64, "{} left", notices.tracked());
        let first = notices.follow("same");
        let second = notices.follow("same");
        assert!(
            Arc::ptr_eq(&first._channel, &second._channel),
            "one channel per player"
        );
    }
}
