//! The dashboard reads over any [`RatingStore`]: request values checked here (limits,
//! required variants, cursors, ids), paging, ratings as of now. Transport-free: the gRPC
//! edge (`grpc.rs`) turns [`QueryError`] into a status.

use frontier_glicko2::{PROVISIONAL_RD, Rating};
use frontier_proto::games::v1::FinishedGame;
use frontier_rules::Variant;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::model::{Counts, Cursor, GameLine, HistoryPoint, LeaderLine};
use crate::store::{RatingStore, StoreError};

/// Games per page when the caller does not say.
pub const DEFAULT_GAMES_PAGE: u32 = 20;
/// Leaderboard length when the caller does not say.
pub const DEFAULT_LEADERBOARD: u32 = 50;
/// The longest page or leaderboard.
pub const MAX_LIMIT: u32 = 100;

/// Why a read was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// A request value is out of range; the text is for the end user.
    #[error("{0}")]
    BadField(&'static str),
    /// The player id is not a player id.
    #[error("no such player")]
    PlayerNotFound,
    /// No finished game has that id.
    #[error("no finished game has that id")]
    GameNotFound,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored game could not be rendered as PGN.
    #[error("rendering PGN: {0}")]
    Render(String),
}

fn player_id(id: &str) -> Result<Uuid, QueryError> {
    Uuid::parse_str(id).map_err(|_| QueryError::PlayerNotFound)
}

fn limit(limit: Option<u32>, default: u32) -> Result<usize, QueryError> {
    match limit.unwrap_or(default) {
        n @ 1..=MAX_LIMIT => Ok(n as usize),
        _ => Err(QueryError::BadField("limit is a number from 1 to 100")),
    }
}

fn required(variant: Option<Variant>) -> Result<Variant, QueryError> {
    variant.ok_or(QueryError::BadField(
        "variant is required: standard, hidden or atomic",
    ))
}

/// A player's standing in one variant, as of the time asked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VariantSummary {
    /// The variant.
    pub variant: Variant,
    /// The rating now (RD grown for the time since the last rated game).
    pub rating: Rating,
    /// Finished, non-aborted games and their results.
    pub counts: Counts,
}

/// Every variant's rating of `player` as of `now` (initial where never rated) and counts.
pub async fn player<S: RatingStore>(
    store: &S,
    player: &str,
    now: OffsetDateTime,
) -> Result<Vec<VariantSummary>, QueryError> {
    let id = player_id(player)?;
    let standings = store.standings(id).await?;
    let counts = store.counts(id).await?;
    Ok(Variant::ALL
        .into_iter()
        .map(|variant| VariantSummary {
            variant,
            rating: standings
                .iter()
                .find(|(v, _)| *v == variant)
                .map_or(frontier_glicko2::INITIAL, |(_, s)| s.as_of(now)),
            counts: counts
                .iter()
                .find(|(v, _)| *v == variant)
                .map(|(_, c)| *c)
                .unwrap_or_default(),
        })
        .collect())
}

/// A page of a player's games.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Newest first.
    pub games: Vec<GameLine>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Cursor>,
}

/// A page of `player`'s games after the cursor `before` (text, as handed out in `next`).
pub async fn games<S: RatingStore>(
    store: &S,
    player: &str,
    variant: Option<Variant>,
    before: Option<&str>,
    page_size: Option<u32>,
) -> Result<Page, QueryError> {
    let id = player_id(player)?;
    let page_size = limit(page_size, DEFAULT_GAMES_PAGE)?;
    let before = before
        .map(str::parse::<Cursor>)
        .transpose()
        .map_err(|_| QueryError::BadField("before is a cursor from a previous page"))?;
    // One game more than the page: whether it exists says whether there is a next page
    // (so a full last page hands out no cursor leading to an empty one).
    let mut games = store.games(id, variant, before, page_size + 1).await?;
    let more = games.len() > page_size;
    games.truncate(page_size);
    let next = if more {
        games.last().map(Cursor::after)
    } else {
        None
    };
    Ok(Page { games, next })
}

/// Whether an RD is provisional.
pub fn provisional(rd: f64) -> bool {
    rd > PROVISIONAL_RD
}

/// `player`'s rating history in `variant` (required).
pub async fn history<S: RatingStore>(
    store: &S,
    player: &str,
    variant: Option<Variant>,
) -> Result<Vec<HistoryPoint>, QueryError> {
    let variant = required(variant)?;
    let id = player_id(player)?;
    Ok(store.history(id, variant).await?)
}

/// The players of `variant` (required) whose rating is not provisional, best first.
pub async fn leaderboard<S: RatingStore>(
    store: &S,
    variant: Option<Variant>,
    length: Option<u32>,
) -> Result<Vec<LeaderLine>, QueryError> {
    let variant = required(variant)?;
    let length = limit(length, DEFAULT_LEADERBOARD)?;
    Ok(store.leaderboard(variant, PROVISIONAL_RD, length).await?)
}

/// The most players one [`players_with_games`] call may ask about.
pub const MAX_PLAYERS_ASKED: usize = 1000;

/// Those of `players` with at least one finished game (ids that are not UUIDs have none).
pub async fn players_with_games<S: RatingStore>(
    store: &S,
    players: &[String],
) -> Result<Vec<Uuid>, QueryError> {
    if players.len() > MAX_PLAYERS_ASKED {
        return Err(QueryError::BadField("at most 1000 players at a time"));
    }
    let ids: Vec<Uuid> = players
        .iter()
        .filter_map(|p| Uuid::parse_str(p).ok())
        .collect();
    Ok(store.players_with_games(&ids).await?)
}

/// A finished game's record.
pub async fn game<S: RatingStore>(store: &S, id: &str) -> Result<FinishedGame, QueryError> {
    let id = Uuid::parse_str(id).map_err(|_| QueryError::GameNotFound)?;
    store.game(id).await?.ok_or(QueryError::GameNotFound)
}

/// A finished game as PGN.
pub async fn pgn<S: RatingStore>(store: &S, id: &str) -> Result<String, QueryError> {
    let game = game(store, id).await?;
    crate::pgn::render(&game).map_err(QueryError::Render)
}
