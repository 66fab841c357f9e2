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

/// A live game as loaded, with the move records it was read from. Only the tail of a
/// game's moves ever changes (a move appends one, a promotion choice amends the last, a
/// takeback drops the last ones), so writing it back re-uses the records read for the
/// moves that did not change instead of converting the whole game again on every change;
/// and in format 2 writes only the records that changed.
pub struct Loaded {
    live: LiveGame,
    stored_moves: Vec<games::MoveRecord>,
    /// How many of `stored_moves` the store's move list holds (format 2); none when that
    /// is not known — the game was read in format 1, whose writes leave the list alone —
    /// and the next format-2 write then writes the list whole. Set by a read or a write at
    /// the version this state is at (a state is cached only after its write succeeded).
    listed: Option<usize>,
}

impl Loaded {
    /// A game that was never stored.
    pub fn new(live: LiveGame) -> Loaded {
        Loaded {
            live,
            stored_moves: Vec::new(),
            listed: None,
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

/// The newest storage format (`StoredGame.format`) this version reads, and the newest it
/// can write (`--storage-format`). Raise it with any change an older version could not
/// read back whole — and write the new format only once every instance reads it (one
/// release that reads it, the next that writes it by default).
///
/// - 1: the state holds the whole game, its move records included: every change rewrites
///   them all, so a move's cost grows with the game's length.
/// - 2: the move records are a list of their own (`game_moves_key`, one encoded
///   `MoveRecord` per ply) and the state holds their count, not them: a move appends one
///   record, and what a move costs no longer depends on how long the game is.
pub const NEWEST: u32 = 2;

/// The format written unless `--storage-format` says otherwise: 1, which every earlier
/// release reads, so that a rolling upgrade to this release loses nothing. Once every
/// instance runs this release (or a later one), `--storage-format 2` is safe; the next
/// release writes 2 by default.
pub const DEFAULT_FORMAT: u32 = 1;

/// What a write does to the store's list of a game's move records (format 2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MovesWrite {
    /// Cut the list to this many records first (0: remove it), or leave it as it is.
    pub trim_to: Option<u64>,
    /// Records (encoded `MoveRecord`s) to append after that.
    pub append: Vec<Bytes>,
}

impl MovesWrite {
    /// Whether the write leaves the list alone.
    pub fn is_empty(&self) -> bool {
        self.trim_to.is_none() && self.append.is_empty()
    }
}

/// How many of the stored move records still stand for the live moves. Only the tail
/// changes (see [`Loaded`]), so this looks back from the shorter length only while the
/// records differ: one comparison for a move, two after a promotion choice.
fn unchanged_prefix(stored: &[games::MoveRecord], live: &[PlayedMove]) -> usize {
    let mut keep = stored.len().min(live.len());
    while keep > 0 && stored[keep - 1] != games::MoveRecord::from(&live[keep - 1]) {
        keep -= 1;
    }
    keep
}

/// The stored bytes of a live game in `format` (1 or 2; anything else is written as 1),
/// and what the write does to the game's list of move records.
pub fn encode(loaded: &mut Loaded, format: u32) -> (Bytes, MovesWrite) {
    let recent = ByColor {
        white: lend_recent(&mut loaded.live.recent.white),
        black: lend_recent(&mut loaded.live.recent.black),
    };
    let mut stored = record(&loaded.live, recent);
    let (bytes, moves_write) = encode_record(loaded, &mut stored, format);
    loaded.live.recent = ByColor {
        white: return_recent(std::mem::take(&mut stored.recent_white)),
        black: return_recent(std::mem::take(&mut stored.recent_black)),
    };
    (bytes, moves_write)
}

/// [`encode`] of `stored`, the record of `loaded.live`.
fn encode_record(loaded: &mut Loaded, stored: &mut StoredGame, format: u32) -> (Bytes, MovesWrite) {
    let live_moves = loaded.live.moves();
    let mut moves = std::mem::take(&mut loaded.stored_moves);
    let keep = unchanged_prefix(&moves, live_moves);
    moves.truncate(keep);
    moves.extend(live_moves[keep..].iter().map(games::MoveRecord::from));
    if format == 2 {
        let from = loaded.listed.map_or(0, |listed| listed.min(keep));
        let moves_write = MovesWrite {
            trim_to: (loaded.listed != Some(from)).then_some(from as u64),
            append: moves[from..]
                .iter()
                .map(|m| Bytes::from(m.encode_to_vec()))
                .collect(),
        };
        stored.format = 2;
        stored.move_count = moves.len() as u32;
        let bytes = Bytes::from(stored.encode_to_vec());
        loaded.listed = Some(moves.len());
        loaded.stored_moves = moves;
        return (bytes, moves_write);
    }
    stored.format = 1;
    stored.moves = moves;
    let bytes = Bytes::from(stored.encode_to_vec());
    loaded.stored_moves = std::mem::take(&mut stored.moves);
    // The list (if a format-2 write left one) no longer follows the game.
    loaded.listed = None;
    (bytes, MovesWrite::default())
}

/// A live game from its stored state and the store's list of its move records (read
/// with it, and used only in format 2).
pub fn decode(bytes: &[u8], listed: &[Bytes]) -> Result<Loaded, SessionError> {
    let mut stored = StoredGame::decode(bytes)
        .map_err(|e| SessionError::Corrupt(format!("stored game: {e}")))?;
    // Format 0 (before formats were numbered) is format 1; a newer one is not ours to
    // rewrite.
    if stored.format > NEWEST {
        return Err(SessionError::NewerFormat(stored.format));
    }
    let (stored_moves, listed) = if stored.format >= 2 {
        if listed.len() != stored.move_count as usize {
            return Err(SessionError::Corrupt(format!(
                "stored game: {} move records listed for {} moves",
                listed.len(),
                stored.move_count
            )));
        }
        let records = listed
            .iter()
            .map(|b| games::MoveRecord::decode(b.as_ref()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| SessionError::Corrupt(format!("move record: {e}")))?;
        (records, Some(listed.len()))
    } else {
        (std::mem::take(&mut stored.moves), None)
    };
    let mut live = LiveGame::try_from(stored)?;
    live.moves = stored_moves
        .iter()
        .map(PlayedMove::try_from)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Loaded {
        live,
        stored_moves,
        listed,
    })
}

/// A log entry: one version's frames, one per audience — or one for all when they are the
/// same.
pub fn log_entry(frames: &AudienceFrames) -> Bytes {
    let shared = frames.is_shared();
    let own = |frame: &Bytes| if shared { Bytes::new() } else { frame.clone() };
    Bytes::from(
        storage::LogEntry {
            version: frames.version,
            white: own(&frames.white),
            black: own(&frames.black),
            public: frames.public.clone(),
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
    let public = entry.public;
    let (white, black) = if entry.shared {
        (public.clone(), public.clone())
    } else {
        (entry.white, entry.black)
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

/// A seat's recent action ids moved (not copied) into their stored form, for the time the
/// record is encoded: a move's commit would otherwise copy up to 2 × `RECENT_ACTIONS`
/// strings, the largest single caller of the allocator on a move (issue 29). The collect
/// reuses the list's buffer (same size and alignment); [`return_recent`] gives it back.
fn lend_recent(list: &mut Vec<(String, u64)>) -> Vec<storage::RecentAction> {
    std::mem::take(list)
        .into_iter()
        .map(|(id, version)| storage::RecentAction { id, version })
        .collect()
}

/// The list [`lend_recent`] lent, back in the live game's form.
fn return_recent(list: Vec<storage::RecentAction>) -> Vec<(String, u64)> {
    list.into_iter().map(|a| (a.id, a.version)).collect()
}

fn recent_from_stored(list: &[storage::RecentAction]) -> Vec<(String, u64)> {
    list.iter().map(|a| (a.id.clone(), a.version)).collect()
}

/// The stored record of `g`, with `recent` (its recent action ids, lent by
/// [`lend_recent`]) as the seats' recent actions.
fn record(g: &LiveGame, recent: ByColor<Vec<storage::RecentAction>>) -> StoredGame {
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
        recent_white: recent.white,
        recent_black: recent.black,
        created_at_ms: info.created_at_ms,
        started_at_ms: g.started_at_ms,
        ended_at_ms: g.ended_at_ms,
        creator_id: info.creator_id.clone(),
        commitment: info.commitment.clone(),
        start_fen: info.start_fen.clone(),
        clock: g.clock.as_ref().map(clock_to_stored),
        // Both set by `encode`.
        format: 0,
        move_count: 0,
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

#[cfg(test)]
mod tests {
    use frontier_protocol::BotLevel;
    use frontier_rules::{Layout, Shuffle, Variant};

    use super::*;
    use crate::game::{Action, Applied, ClockSettings, NewGame};

    const CLOCKS: ClockSettings = ClockSettings {
        ms_per_minute: 60_000,
        first_move_limit_ms: 30_000,
    };

    fn person(id: &str) -> Player {
        Player {
            id: id.to_owned(),
            name: id.to_owned(),
            guest: true,
            bot: false,
            bot_level: None,
        }
    }

    fn started(variant: Variant, shuffle: Option<Shuffle>, opponent: Player) -> Loaded {
        let mut live = LiveGame::new_board(
            NewGame {
                id: "0190c6a0-0000-7000-8000-000000000001".into(),
                code: "ABCDEF".into(),
                creator: person("white"),
                creator_color: Color::White,
                variant,
                rated: false,
                time_control: None,
                shuffle,
                start: None,
                now_ms: 0,
            },
            CLOCKS,
        );
        live.join(opponent, 0, CLOCKS).expect("joins");
        Loaded::new(live)
    }

    fn act(loaded: &mut Loaded, seat: Color, action: Action) {
        match loaded.apply(seat, &action, 0).expect("applies") {
            Applied::Done(_) => {}
            Applied::TimedOut(..) => panic!("no clock here"),
        }
    }

    /// The side that plays ply `i + 1`.
    fn mover(i: usize) -> Color {
        if i.is_multiple_of(2) {
            Color::White
        } else {
            Color::Black
        }
    }

    fn mv(uci: &str) -> Action {
        Action::Move(uci.to_owned(), None)
    }

    /// The store's list after a write.
    fn apply(list: &mut Vec<Bytes>, write: &MovesWrite) {
        if let Some(len) = write.trim_to {
            list.truncate(len as usize);
        }
        list.extend(write.append.iter().cloned());
    }

    fn record(m: &PlayedMove) -> Bytes {
        Bytes::from(games::MoveRecord::from(m).encode_to_vec())
    }

    /// The state's size less its repetition history (8 bytes a position, and at most the
    /// positions since the last pawn move or capture): what else it keeps.
    fn size_beyond_history(state: &Bytes) -> usize {
        let stored = StoredGame::decode(state.as_ref()).expect("decodes");
        state.len() - 8 * stored.history.len()
    }

    #[test]
    fn in_format_2_a_move_appends_one_record_and_the_state_does_not_grow_with_the_game() {
        let line = crate::testing::long_line(Variant::Standard, 300, 1).expect("a line");
        let mut two = started(Variant::Standard, None, person("black"));
        let mut one = started(Variant::Standard, None, person("black"));
        let mut list = Vec::new();
        // A new game's list is written whole (it is empty).
        let (_, first) = encode(&mut two, 2);
        assert_eq!(first.trim_to, Some(0));
        apply(&mut list, &first);
        let mut sizes = (Vec::new(), Vec::new());
        for (i, uci) in line.iter().enumerate() {
            let seat = mover(i);
            act(&mut two, seat, mv(uci));
            act(&mut one, seat, mv(uci));
            let (state, write) = encode(&mut two, 2);
            assert_eq!(
                write,
                MovesWrite {
                    trim_to: None,
                    append: vec![record(&two.moves()[i])],
                },
                "ply {}: one record appended, nothing rewritten",
                i + 1
            );
            apply(&mut list, &write);
            let stored = StoredGame::decode(state.as_ref()).expect("decodes");
            assert!(stored.moves.is_empty());
            assert_eq!((stored.format, stored.move_count), (2, i as u32 + 1));
            sizes.0.push(size_beyond_history(&state));
            sizes.1.push(size_beyond_history(&encode(&mut one, 1).0));
        }
        let early = |s: &[usize]| s[..40].iter().copied().max().unwrap_or(0);
        let late = |s: &[usize]| s[260..].iter().copied().max().unwrap_or(0);
        assert!(
            late(&sizes.0) <= early(&sizes.0) + 16,
            "format 2: {} bytes beyond the history late against {} early",
            late(&sizes.0),
            early(&sizes.0)
        );
        // Format 1 for contrast: it carries every move, so the measure above sees it grow.
        assert!(
            late(&sizes.1) > early(&sizes.1) + 220 * 10,
            "format 1: {} late against {} early",
            late(&sizes.1),
            early(&sizes.1)
        );
        // What was written reads back as the same game.
        let (state, _) = encode(&mut two, 2);
        let read = decode(&state, &list).expect("decodes");
        assert_eq!(read.moves(), two.moves());
        assert_eq!(read.game().position().fen(), two.game().position().fen());
    }

    #[test]
    fn a_promotion_choice_replaces_the_last_record() {
        // White's a1 is truly a pawn, a2 a knight; Black's a7 a knight: the a-file opens,
        // and the a1 "rook" takes on a8 as a pawn whose promotion is then chosen.
        let layout = Layout::from_canonical("PNBQBRRNPPPPPPP/rbbqnrpnppppppp").expect("valid");
        let shuffle = Shuffle::with_random_salt(layout).expect("salt");
        let mut game = started(Variant::Hidden, Some(shuffle), person("black"));
        let mut list = Vec::new();
        apply(&mut list, &encode(&mut game, 2).1);
        for (seat, uci) in [
            (Color::White, "a2a3"),
            (Color::Black, "a7a6"),
            (Color::White, "a3b5"),
            (Color::Black, "a6c5"),
            (Color::White, "a1a8"),
        ] {
            act(&mut game, seat, mv(uci));
            let write = encode(&mut game, 2).1;
            assert_eq!((write.trim_to, write.append.len()), (None, 1), "{uci}");
            apply(&mut list, &write);
        }
        act(&mut game, Color::White, Action::Promote(Role::Knight));
        let (state, write) = encode(&mut game, 2);
        assert_eq!(
            write,
            MovesWrite {
                trim_to: Some(4),
                append: vec![record(&game.moves()[4])],
            }
        );
        apply(&mut list, &write);
        let read = decode(&state, &list).expect("decodes");
        assert_eq!(read.moves().len(), 5);
        assert_eq!(read.moves()[4].uci.to_string(), "a1a8n");
    }

    #[test]
    fn an_undo_cuts_the_list() {
        let bot = Player::bot("bot".into(), BotLevel::Easy);
        let mut game = started(Variant::Standard, None, bot);
        let mut list = Vec::new();
        apply(&mut list, &encode(&mut game, 2).1);
        for (i, uci) in ["e2e4", "e7e5", "g1f3", "b8c6"].iter().enumerate() {
            let seat = mover(i);
            act(&mut game, seat, mv(uci));
            apply(&mut list, &encode(&mut game, 2).1);
        }
        act(&mut game, Color::White, Action::Undo);
        let (state, write) = encode(&mut game, 2);
        assert_eq!(
            write,
            MovesWrite {
                trim_to: Some(2),
                append: Vec::new(),
            }
        );
        apply(&mut list, &write);
        assert_eq!(list.len(), 2);
        let read = decode(&state, &list).expect("decodes");
        assert_eq!(read.moves(), game.moves());
    }

    #[test]
    fn encoding_stores_the_recent_action_ids_and_leaves_them_in_the_live_game() {
        for format in [1, 2] {
            let mut game = started(Variant::Standard, None, person("black"));
            act(&mut game, Color::White, mv("e2e4"));
            game.live.remember_action(Color::White, "w1", 1);
            game.live.remember_action(Color::Black, "b1", 2);
            game.live.remember_action(Color::White, "w2", 3);
            let before = (
                game.live.recent.white.clone(),
                game.live.recent.black.clone(),
            );
            let (state, write) = encode(&mut game, format);
            let kept = (
                game.live.recent.white.clone(),
                game.live.recent.black.clone(),
            );
            assert_eq!(kept, before, "format {format}");
            let mut list = Vec::new();
            apply(&mut list, &write);
            let read = decode(&state, &list).expect("decodes");
            let stored = (
                read.live.recent.white.clone(),
                read.live.recent.black.clone(),
            );
            assert_eq!(stored, before, "format {format}");
            assert_eq!(read.live.applied_action(Color::White, "w2"), Some(3));
            assert_eq!(read.live.applied_action(Color::Black, "b1"), Some(2));
        }
    }

    #[test]
    fn formats_follow_each_other_on_one_game_and_a_wrong_list_is_corrupt() {
        let mut game = started(Variant::Standard, None, person("black"));
        let mut list = Vec::new();
        let moves = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"];
        let play = |game: &mut Loaded, i: usize| {
            let seat = mover(i);
            act(game, seat, mv(moves[i]));
        };
        // Format 1 leaves the list alone; a game read from it does not trust the list.
        play(&mut game, 0);
        play(&mut game, 1);
        let (state, write) = encode(&mut game, 1);
        assert!(write.is_empty());
        let stale = vec![Bytes::from_static(b"stale")];
        let mut game = decode(&state, &stale).expect("a format-1 state ignores the list");
        assert_eq!(game.moves().len(), 2);
        // The first format-2 write lists every move.
        play(&mut game, 2);
        let (state, write) = encode(&mut game, 2);
        assert_eq!((write.trim_to, write.append.len()), (Some(0), 3));
        apply(&mut list, &write);
        let mut game = decode(&state, &list).expect("decodes");
        play(&mut game, 3);
        let write = encode(&mut game, 2).1;
        assert_eq!((write.trim_to, write.append.len()), (None, 1));
        apply(&mut list, &write);
        // Back to 1 (an instance not yet told to write 2), then 2 again: listed whole.
        play(&mut game, 4);
        let (state, write) = encode(&mut game, 1);
        assert!(write.is_empty());
        let mut game = decode(&state, &list).expect("reads its moves from the state");
        assert_eq!(game.moves().len(), 5);
        play(&mut game, 5);
        let (state, write) = encode(&mut game, 2);
        assert_eq!((write.trim_to, write.append.len()), (Some(0), 6));
        apply(&mut list, &write);
        assert_eq!(
            decode(&state, &list).expect("decodes").moves(),
            game.moves()
        );
        // A list that does not hold the state's count of moves is corrupt, never guessed at.
        assert!(matches!(
            decode(&state, &list[..5]),
            Err(SessionError::Corrupt(_))
        ));
        // And a format newer than this version's is refused.
        let mut stored = StoredGame::decode(state.as_ref()).expect("decodes");
        stored.format = NEWEST + 1;
        assert!(matches!(
            decode(&stored.encode_to_vec(), &list),
            Err(SessionError::NewerFormat(f)) if f == NEWEST + 1
        ));
    }
}
