//! game-session's storage format (`frontier.gamesession.storage.v1`, private to this
//! service) and its mapping to and from the domain's [`LiveGame`]. Fields are only ever
//! added to the format, never renumbered, so an instance reads what another version wrote.
//!
//! The stored game holds the hidden layout and salt; its `Debug` (written by hand in
//! `libs/proto`) prints neither, and only [`encode`] and [`decode`] touch it here.

use bytes::Bytes;
use frontier_chessclock::{ChessClock, LagTracker, TimeControl};
use frontier_platform::convert::{
    bot_level_from_proto, bot_level_to_proto, role_from_name, variant_from_proto, variant_to_proto,
};
use frontier_proto::games::v1 as games;
use frontier_proto::gamesession::storage::v1 as storage;
use frontier_rules::{
    ByColor, CapturedIdentity, CapturedPiece, Color, Game, GameSnapshot, Reveal, Role, Square,
    UciMove,
};
use prost::Message as _;

use crate::bus::AudienceFrames;
use crate::error::SessionError;
use crate::game::{BoardInfo, LiveGame, Phase, PlayedMove, Player, TimeControlSpec};

pub(crate) use storage::StoredGame;

fn corrupt(what: &str) -> SessionError {
    SessionError::Corrupt(format!("stored game: bad {what}"))
}

/// A live game as loaded, with the move records it was read from. A game's move record
/// only grows (a promotion choice amends the last move), so writing it back re-uses the
/// records read for every move but the last, instead of converting the whole game again
/// on every change (that cost grew with the length of the game).
pub struct Loaded {
    live: LiveGame,
    stored_moves: Vec<games::MoveRecord>,
}

impl Loaded {
    /// A game that was never stored.
    pub fn new(live: LiveGame) -> Loaded {
        Loaded {
            live,
            stored_moves: Vec::new(),
        }
    }
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The stored records hold captured identities: only the live game's public Debug.
        std::fmt::Debug::fmt(&self.live, f)
    }
}

impl std::ops::Deref for Loaded {
    type Target = LiveGame;

    fn deref(&self) -> &LiveGame {
        &self.live
    }
}

impl std::ops::DerefMut for Loaded {
    fn deref_mut(&mut self) -> &mut LiveGame {
        &mut self.live
    }
}

/// The storage format this version writes (`StoredGame.format`). Raise it with any change
/// an older version could not read back whole — and only once every instance reads it
/// (one release that reads the new format, the next that writes it).
pub const FORMAT: u32 = 1;

/// The stored bytes of a live game.
pub fn encode(loaded: &mut Loaded) -> Bytes {
    let mut stored = StoredGame::from(&loaded.live);
    let live_moves = loaded.live.moves();
    let mut moves = std::mem::take(&mut loaded.stored_moves);
    let keep = moves.len().min(live_moves.len()).saturating_sub(1);
    moves.truncate(keep);
    moves.extend(live_moves[keep..].iter().map(games::MoveRecord::from));
    stored.moves = moves;
    let bytes = Bytes::from(stored.encode_to_vec());
    loaded.stored_moves = std::mem::take(&mut stored.moves);
    bytes
}

/// A live game from its stored bytes.
pub fn decode(bytes: &[u8]) -> Result<Loaded, SessionError> {
    let mut stored = StoredGame::decode(bytes)
        .map_err(|e| SessionError::Corrupt(format!("stored game: {e}")))?;
    // Format 0 (before formats were numbered) is format 1; a newer one is not ours to
    // rewrite.
    if stored.format > FORMAT {
        return Err(SessionError::NewerFormat(stored.format));
    }
    let stored_moves = std::mem::take(&mut stored.moves);
    let mut live = LiveGame::try_from(stored)?;
    live.moves = stored_moves
        .iter()
        .map(PlayedMove::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Loaded { live, stored_moves })
}

/// A log entry: one version's frames, one per audience — or one for all when they are the
/// same.
pub fn log_entry(frames: &AudienceFrames) -> Bytes {
    let shared = frames.is_shared();
    let own = |frame: &Bytes| if shared { Vec::new() } else { frame.to_vec() };
    Bytes::from(
        storage::LogEntry {
            version: frames.version,
            white: own(&frames.white),
            black: own(&frames.black),
            public: frames.public.to_vec(),
            ended: frames.ended,
            shared,
        }
        .encode_to_vec(),
    )
}

/// A log entry read back.
pub fn decode_log_entry(bytes: &[u8]) -> Result<AudienceFrames, SessionError> {
    let entry = storage::LogEntry::decode(bytes)
        .map_err(|e| SessionError::Corrupt(format!("log entry: {e}")))?;
    let public = Bytes::from(entry.public);
    let (white, black) = if entry.shared {
        (public.clone(), public.clone())
    } else {
        (Bytes::from(entry.white), Bytes::from(entry.black))
    };
    Ok(AudienceFrames {
        version: entry.version,
        white,
        black,
        public,
        ended: entry.ended,
    })
}

impl From<&games::Player> for Player {
    fn from(p: &games::Player) -> Player {
        Player {
            id: p.id.clone(),
            name: p.name.clone(),
            guest: p.guest,
            bot: p.bot,
            bot_level: if p.bot {
                bot_level_from_proto(p.bot_level)
            } else {
                None
            },
        }
    }
}

impl From<&Player> for games::Player {
    fn from(p: &Player) -> games::Player {
        games::Player {
            id: p.id.clone(),
            name: p.name.clone(),
            guest: p.guest,
            bot: p.bot,
            bot_level: p
                .bot_level
                .map_or(games::BotLevel::Unspecified, bot_level_to_proto)
                as i32,
        }
    }
}

impl From<games::TimeControl> for TimeControlSpec {
    fn from(tc: games::TimeControl) -> TimeControlSpec {
        TimeControlSpec {
            initial_seconds: tc.initial_seconds,
            increment_seconds: tc.increment_seconds,
        }
    }
}

impl From<TimeControlSpec> for games::TimeControl {
    fn from(tc: TimeControlSpec) -> games::TimeControl {
        games::TimeControl {
            initial_seconds: tc.initial_seconds,
            increment_seconds: tc.increment_seconds,
        }
    }
}

/// A played move in the wire/record form (shared with the finished-game record).
impl From<&PlayedMove> for games::MoveRecord {
    fn from(m: &PlayedMove) -> games::MoveRecord {
        games::MoveRecord {
            ply: m.ply,
            uci: m.uci.to_string(),
            reveal_square: m.reveal.map(|r| r.square.to_string()).unwrap_or_default(),
            reveal_role: m
                .reveal
                .map(|r| r.role.name().to_owned())
                .unwrap_or_default(),
            captured_square: m.captured.map(|c| c.square.to_string()).unwrap_or_default(),
            captured_role: m
                .captured
                .map(|c| c.shown_role.name().to_owned())
                .unwrap_or_default(),
            captured_was_hidden: m.captured.is_some_and(|c| c.was_hidden),
            captured_identity: m
                .captured_identity
                .map(|r| r.name().to_owned())
                .unwrap_or_default(),
            at_ms: m.at_ms,
            clock_ms: m.clock_ms,
        }
    }
}

impl TryFrom<&games::MoveRecord> for PlayedMove {
    type Error = SessionError;

    fn try_from(m: &games::MoveRecord) -> Result<PlayedMove, SessionError> {
        let optional_role = |name: &str, what: &str| -> Result<Option<Role>, SessionError> {
            if name.is_empty() {
                Ok(None)
            } else {
                role_from_name(name).map(Some).ok_or_else(|| corrupt(what))
            }
        };
        let reveal = match optional_role(&m.reveal_role, "reveal role")? {
            Some(role) => Some(Reveal {
                square: Square::parse(&m.reveal_square).ok_or_else(|| corrupt("reveal square"))?,
                role,
            }),
            None => None,
        };
        let captured = match optional_role(&m.captured_role, "captured role")? {
            Some(shown_role) => Some(CapturedPiece {
                square: Square::parse(&m.captured_square)
                    .ok_or_else(|| corrupt("captured square"))?,
                shown_role,
                was_hidden: m.captured_was_hidden,
            }),
            None => None,
        };
        Ok(PlayedMove {
            ply: m.ply,
            uci: m.uci.parse().map_err(|_| corrupt("move"))?,
            reveal,
            captured,
            captured_identity: optional_role(&m.captured_identity, "captured identity")?,
            at_ms: m.at_ms,
            clock_ms: m.clock_ms,
        })
    }
}

fn color_of(code: u32) -> Option<Color> {
    match code {
        1 => Some(Color::White),
        2 => Some(Color::Black),
        _ => None,
    }
}

fn color_code(c: Option<Color>) -> u32 {
    match c {
        Some(Color::White) => 1,
        Some(Color::Black) => 2,
        None => 0,
    }
}

fn clock_from_stored(c: &storage::ClockState) -> ChessClock {
    ChessClock {
        tc: TimeControl {
            initial_ms: c.initial_ms,
            increment_ms: c.increment_ms,
        },
        remaining_ms: ByColor {
            white: c.white_ms,
            black: c.black_ms,
        },
        to_act: color_of(c.to_act).unwrap_or(Color::White),
        turn_started_ms: c.turn_started_ms,
        moved: ByColor {
            white: c.white_moved,
            black: c.black_moved,
        },
        first_move_limit_ms: c.first_move_limit_ms,
        lag: ByColor {
            white: LagTracker {
                quota_ms: c.white_quota_ms,
                gain_ms: c.gain_ms,
            },
            black: LagTracker {
                quota_ms: c.black_quota_ms,
                gain_ms: c.gain_ms,
            },
        },
        stopped: c.stopped,
    }
}

fn clock_to_stored(c: &ChessClock) -> storage::ClockState {
    storage::ClockState {
        initial_ms: c.tc.initial_ms,
        increment_ms: c.tc.increment_ms,
        white_ms: c.remaining_ms.white,
        black_ms: c.remaining_ms.black,
        to_act: color_code(Some(c.to_act)),
        turn_started_ms: c.turn_started_ms,
        white_moved: c.moved.white,
        black_moved: c.moved.black,
        first_move_limit_ms: c.first_move_limit_ms,
        white_quota_ms: c.lag.white.quota_ms,
        black_quota_ms: c.lag.black.quota_ms,
        gain_ms: c.lag.white.gain_ms,
        stopped: c.stopped,
    }
}

fn captured_to_stored(list: &[CapturedIdentity]) -> Vec<storage::CapturedIdentity> {
    list.iter()
        .map(|c| storage::CapturedIdentity {
            square: c.square.to_string(),
            role: c.role.char().to_string(),
            ply: c.ply,
        })
        .collect()
}

fn captured_from_stored(
    list: &[storage::CapturedIdentity],
) -> Result<Vec<CapturedIdentity>, SessionError> {
    list.iter()
        .map(|c| {
            Ok(CapturedIdentity {
                square: Square::parse(&c.square).ok_or_else(|| corrupt("captured square"))?,
                role: c
                    .role
                    .chars()
                    .next()
                    .and_then(Role::from_char)
                    .ok_or_else(|| corrupt("captured role"))?,
                ply: c.ply,
            })
        })
        .collect()
}

fn recent_to_stored(list: &[(String, u64)]) -> Vec<storage::RecentAction> {
    list.iter()
        .map(|(id, version)| storage::RecentAction {
            id: id.clone(),
            version: *version,
        })
        .collect()
}

fn recent_from_stored(list: &[storage::RecentAction]) -> Vec<(String, u64)> {
    list.iter().map(|a| (a.id.clone(), a.version)).collect()
}

impl From<&LiveGame> for StoredGame {
    fn from(g: &LiveGame) -> StoredGame {
        let snap = g.game.snapshot();
        let (layout, salt) = snap
            .shuffle
            .map(|(layout, salt)| (layout, salt.to_vec()))
            .unwrap_or_default();
        let info = &g.info;
        StoredGame {
            id: info.id.clone(),
            variant: variant_to_proto(info.variant) as i32,
            rated: info.rated,
            time_control: info.time_control.map(Into::into),
            white: g.seats.white.as_ref().map(Into::into),
            black: g.seats.black.as_ref().map(Into::into),
            code: info.code.clone(),
            phase: match g.phase {
                Phase::Waiting => storage::Phase::Waiting,
                Phase::Playing => storage::Phase::Playing,
                Phase::Finished => storage::Phase::Finished,
            } as i32,
            fen: snap.fen,
            layout,
            salt,
            captured_by_white: captured_to_stored(&snap.captured.white),
            captured_by_black: captured_to_stored(&snap.captured.black),
            history: snap.history,
            pending: snap.pending.map(|m| m.to_string()).unwrap_or_default(),
            outcome: snap.outcome.unwrap_or_default(),
            ply: snap.ply,
            // Filled by `encode` (which re-uses the records already stored).
            moves: Vec::new(),
            draw_offer: color_code(g.draw_offer),
            recent_white: recent_to_stored(&g.recent.white),
            recent_black: recent_to_stored(&g.recent.black),
            created_at_ms: info.created_at_ms,
            started_at_ms: g.started_at_ms,
            ended_at_ms: g.ended_at_ms,
            creator_id: info.creator_id.clone(),
            commitment: info.commitment.clone(),
            start_fen: info.start_fen.clone(),
            clock: g.clock.as_ref().map(clock_to_stored),
            format: FORMAT,
        }
    }
}

impl TryFrom<StoredGame> for LiveGame {
    type Error = SessionError;

    fn try_from(stored: StoredGame) -> Result<LiveGame, SessionError> {
        let variant = variant_from_proto(stored.variant).ok_or_else(|| corrupt("variant"))?;
        let shuffle = if stored.layout.is_empty() {
            None
        } else {
            let salt: [u8; 32] = stored
                .salt
                .as_slice()
                .try_into()
                .map_err(|_| corrupt("salt"))?;
            Some((stored.layout.clone(), salt))
        };
        let pending = if stored.pending.is_empty() {
            None
        } else {
            Some(
                stored
                    .pending
                    .parse::<UciMove>()
                    .map_err(|_| corrupt("pending move"))?,
            )
        };
        let snapshot = GameSnapshot {
            variant,
            fen: stored.fen.clone(),
            shuffle,
            captured: ByColor {
                white: captured_from_stored(&stored.captured_by_white)?,
                black: captured_from_stored(&stored.captured_by_black)?,
            },
            history: stored.history.clone(),
            pending,
            outcome: (!stored.outcome.is_empty()).then(|| stored.outcome.clone()),
            ply: stored.ply,
        };
        let game = Game::restore(snapshot).map_err(|e| SessionError::Corrupt(e.to_string()))?;
        let phase = match storage::Phase::try_from(stored.phase) {
            Ok(storage::Phase::Playing) => Phase::Playing,
            Ok(storage::Phase::Finished) => Phase::Finished,
            _ => Phase::Waiting,
        };
        Ok(LiveGame {
            info: BoardInfo {
                id: stored.id,
                code: stored.code,
                variant,
                rated: stored.rated,
                time_control: stored.time_control.map(Into::into),
                creator_id: stored.creator_id,
                commitment: stored.commitment,
                start_fen: stored.start_fen,
                created_at_ms: stored.created_at_ms,
            },
            seats: ByColor {
                white: stored.white.as_ref().map(Into::into),
                black: stored.black.as_ref().map(Into::into),
            },
            phase,
            game,
            clock: stored.clock.as_ref().map(clock_from_stored),
            // Filled by `decode` (which keeps the records it reads, for `encode`).
            moves: Vec::new(),
            draw_offer: color_of(stored.draw_offer),
            recent: ByColor {
                white: recent_from_stored(&stored.recent_white),
                black: recent_from_stored(&stored.recent_black),
            },
            started_at_ms: stored.started_at_ms,
            ended_at_ms: stored.ended_at_ms,
        })
    }
}
