//! Quick match at the edge: the matchmaking service's client and the conversions between
//! the protocol's pools and notices and their protobuf forms (the notices themselves
//! arrive through [`crate::notices`]).

use frontier_pairing::Pool;
use frontier_platform::trace::{Traced, traced};
use frontier_proto::matchmaking::v1 as mm;
use frontier_proto::matchmaking::v1::matchmaking_client::MatchmakingClient;
use frontier_protocol::{ClockSpec, Matched, PlayerInfo, PoolSpec};

/// The matchmaking service, for `seek`, `cancel_seek` and `status`.
#[derive(Clone)]
pub struct MatchmakingLink {
    /// Its client (each call carries the caller's trace context). Its `matched` notices
    /// reach connections through [`crate::notices`].
    pub client: MatchmakingClient<Traced>,
}

impl MatchmakingLink {
    /// A lazily connected client of the matchmaking service at `url`.
    pub fn connect(url: &str) -> anyhow::Result<MatchmakingLink> {
        let channel = tonic::transport::Endpoint::from_shared(url.to_owned())
            .map_err(|e| anyhow::anyhow!("matchmaking URL `{url}`: {e}"))?
            .tcp_nodelay(true)
            .connect_timeout(std::time::Duration::from_secs(3))
            .connect_lazy();
        Ok(MatchmakingLink {
            client: MatchmakingClient::new(traced(channel)),
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
