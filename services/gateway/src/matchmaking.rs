//! Quick match at the edge: the matchmaking service's client, the conversions between the
//! protocol's pools and notices and their protobuf forms, and each connection's follower of
//! its player's notices (`<ns>.player.<id>` on NATS, or on an in-process
//! [`LocalBus`] in one process).

use frontier_pairing::Pool;
use frontier_platform::Namespace;
use frontier_platform::local_bus::LocalBus;
use frontier_platform::trace::{Traced, traced};
use frontier_proto::matchmaking::v1 as mm;
use frontier_proto::matchmaking::v1::matchmaking_client::MatchmakingClient;
use frontier_protocol::{ClockSpec, Matched, PlayerInfo, PoolSpec};
use futures_util::StreamExt as _;
use prost::Message as _;
use tokio::sync::mpsc;

/// The matchmaking service, for `seek`, `cancel_seek` and `status`.
#[derive(Clone)]
pub struct MatchmakingLink {
    /// Its client (each call carries the caller's trace context).
    pub client: MatchmakingClient<Traced>,
    /// Where each player's `matched` notices arrive.
    pub notices: NoticeSource,
}

/// Where `matched` notices arrive: protobuf `frontier.matchmaking.v1.Matched` on each
/// player's subject `<ns>.player.<id>`.
#[derive(Clone)]
pub enum NoticeSource {
    /// NATS (the distributed platform).
    Nats(async_nats::Client),
    /// An in-process bus that matchmaking publishes on (`frontier dev`).
    Local(LocalBus),
}

impl MatchmakingLink {
    /// A lazily connected client of the matchmaking service at `url`.
    pub fn connect(url: &str, nats: async_nats::Client) -> anyhow::Result<MatchmakingLink> {
        let channel = tonic::transport::Endpoint::from_shared(url.to_owned())
            .map_err(|e| anyhow::anyhow!("matchmaking URL `{url}`: {e}"))?
            .tcp_nodelay(true)
            .connect_timeout(std::time::Duration::from_secs(3))
            .connect_lazy();
        Ok(MatchmakingLink {
            client: MatchmakingClient::new(traced(channel)),
            notices: NoticeSource::Nats(nats),
        })
    }
}

/// Most pools one `seek` may name (matchmaking refuses more, too).
pub const MAX_POOLS: usize = 8;

/// A pool of a `seek`, for matchmaking; `None` for an unknown variant.
pub fn pool_to_proto(pool: &PoolSpec) -> Option<mm::Pool> {
    let variant = frontier_platform::convert::variant_from_name(&pool.variant)?;
    Some(mm::Pool {
        variant: frontier_platform::convert::variant_to_proto(variant) as i32,
        minutes: pool.clock.minutes,
        increment: pool.clock.increment,
        rated: pool.rated,
    })
}

/// A pool key from matchmaking (`standard:3+2:rated`) as the protocol writes a pool.
pub fn pool_from_key(key: &str) -> Option<PoolSpec> {
    let pool: Pool = key.parse().ok()?;
    Some(PoolSpec {
        variant: pool.variant.name().to_owned(),
        clock: ClockSpec {
            minutes: pool.clock.minutes(),
            increment: pool.clock.increment(),
        },
        rated: pool.rated,
    })
}

/// A notice as the `matched` frame says it; `None` if it does not read (logged).
pub fn matched_from_proto(m: mm::Matched) -> Option<Matched> {
    let Some(pool) = pool_from_key(&m.pool) else {
        tracing::warn!(pool = %m.pool, "a matched notice names an unknown pool");
        return None;
    };
    let opponent = m.opponent?;
    Some(Matched {
        game_id: m.game_id,
        color: m.color,
        opponent: PlayerInfo {
            id: opponent.id,
            name: opponent.name,
            guest: opponent.guest,
            bot: opponent.bot,
        },
        rated: m.rated,
        pool,
    })
}

/// Follows `player`'s notices until the returned task is aborted, handing each to `out`.
/// Resolves once the subscription is active (a notice published afterwards is not missed).
pub async fn follow_notices(
    source: &NoticeSource,
    ns: &Namespace,
    player: &str,
    out: mpsc::Sender<Matched>,
) -> Option<tokio::task::JoinHandle<()>> {
    let subject = ns.player_subject(player);
    match source {
        NoticeSource::Nats(nats) => {
            let mut subscription = match nats.subscribe(subject).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "could not follow the player's notices");
                    return None;
                }
            };
            crate::hub::server_round_trip(nats).await;
            Some(tokio::spawn(async move {
                while let Some(message) = subscription.next().await {
                    if message
                        .headers
                        .as_ref()
                        .is_some_and(|h| h.get(frontier_platform::names::NOTICE_HEADER).is_some())
                    {
                        // A client-protocol frame (a rematch notice): the connection's
                        // notice topic relays those.
                        continue;
                    }
                    if !hand_over(&message.payload, &out).await {
                        return;
                    }
                }
            }))
        }
        NoticeSource::Local(bus) => {
            // Active at once: subscribed before this returns.
            let mut rx = bus.subscribe();
            Some(tokio::spawn(async move {
                loop {
                    match rx.recv().await {
                        Ok(m) if m.subject == subject => {
                            if !hand_over(&m.payload, &out).await {
                                return;
                            }
                        }
                        Ok(_) => {}
                        // Missed notices are found with `status`, as on NATS.
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                            tracing::warn!(missed = n, "the notice follower fell behind");
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    }
                }
            }))
        }
    }
}

/// Decodes one notice and hands it over; false once the connection is gone.
async fn hand_over(payload: &[u8], out: &mpsc::Sender<Matched>) -> bool {
    let Ok(notice) = mm::Matched::decode(payload) else {
        tracing::warn!("an unreadable matched notice was dropped");
        return true;
    };
    match matched_from_proto(notice) {
        Some(matched) => out.send(matched).await.is_ok(),
        None => true,
    }
}
