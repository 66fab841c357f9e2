//! Quick match at the edge: the matchmaking service's client and the conversions between
//! the protocol's pools and notices and their protobuf forms (the notices themselves
//! arrive through [`crate::notices`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use frontier_pairing::Pool;
use frontier_platform::trace::{Traced, traced};
use frontier_proto::matchmaking::v1 as mm;
use frontier_proto::matchmaking::v1::matchmaking_client::MatchmakingClient;
use frontier_protocol::{ClockSpec, Matched, PlayerInfo, PoolSpec};

/// The matchmaking service, for `seek`, `cancel_seek`, `status` and `leave`: one client per
/// instance (each call carries the caller's trace context). Calls go round the instances;
/// one that cannot be reached (refused, cut off, timed out) is retried on the next, so that
/// losing an instance refuses nothing another could serve. Every call is safe to repeat: a
/// seek replaces the player's own, a cancel or a leave of nothing is a no-op, a status is a
/// read. Its `matched` notices reach connections through [`crate::notices`].
#[derive(Clone)]
pub struct MatchmakingLink {
    clients: Arc<[MatchmakingClient<Traced>]>,
    next: Arc<AtomicUsize>,
}

impl MatchmakingLink {
    /// Lazily connected clients of the matchmaking instances at `urls` (at least one).
    pub fn connect(urls: &[String]) -> anyhow::Result<MatchmakingLink> {
        let clients = urls
            .iter()
            .map(|url| {
                let channel = tonic::transport::Endpoint::from_shared(url.clone())
                    .map_err(|e| anyhow::anyhow!("matchmaking URL `{url}`: {e}"))?
                    .tcp_nodelay(true)
                    .connect_timeout(std::time::Duration::from_secs(3))
                    .connect_lazy();
                Ok(MatchmakingClient::new(traced(channel)))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        anyhow::ensure!(
            !clients.is_empty(),
            "at least one matchmaking URL is needed"
        );
        Ok(MatchmakingLink {
            clients: clients.into(),
            next: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// A link over this one client (the single-process mode's in-process service).
    pub fn over(client: MatchmakingClient<Traced>) -> MatchmakingLink {
        MatchmakingLink {
            clients: vec![client].into(),
            next: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// How many instances the link knows.
    pub fn instances(&self) -> usize {
        self.clients.len()
    }

    /// Calls `f` on the next instance; if that instance cannot be reached, on each of the
    /// others in turn. The last answer (or refusal) is returned.
    pub async fn call<T, F, Fut>(&self, f: F) -> Result<T, tonic::Status>
    where
        F: Fn(MatchmakingClient<Traced>) -> Fut,
        Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let n = self.clients.len();
        let first = self.next.fetch_add(1, Ordering::Relaxed);
        let mut last = None;
        for k in 0..n {
            let client = self.clients[(first + k) % n].clone();
            match f(client).await {
                Ok(response) => return Ok(response.into_inner()),
                Err(status) if unreachable(&status) => {
                    tracing::warn!(%status, "a matchmaking instance is unreachable; trying the next");
                    last = Some(status);
                }
                Err(status) => return Err(status),
            }
        }
        Err(last.unwrap_or_else(|| tonic::Status::unavailable("no matchmaking instance")))
    }
}

/// Whether a failed call never reached a live instance, or was cut off by its death: the
/// call may go to another instance.
fn unreachable(status: &tonic::Status) -> bool {
    crate::sessions::cut_off(status) || status.code() == tonic::Code::Unavailable
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
