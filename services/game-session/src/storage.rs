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
    /// The size of the state last written or read: room enough for the next one, which
    /// differs by a few bytes.
    state_len: usize,
    /// The format of the state last written or read (format 0 read as 1); none for a game
    /// never stored. A game whose log is in its hash (format 3) stays in format 3.
    format: Option<u32>,
}

impl Loaded {
    /// A game that was never stored.
    pub fn new(live: LiveGame) -> Loaded {
        Loaded {
            live,
            stored_moves: Vec::new(),
            listed: None,
            state_len: 0,
            format: None,
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
/// - 3: as 2, but the move records and the log entries are fields of the game's own hash
///   (`r1`… and `e1`…, with the records' count in `n`), not lists of their own: a move's
///   compare-and-set makes two Redis calls (`HGET`, one `HSET`), not four, and a finished
///   game has one key to expire, not three (issue 29, docs/benchmarks.md). A game's log
///   stays where its first write put it: only a new game is written in format 3, and a
///   game in format 3 stays in it whatever the instance writing it is told.
pub const NEWEST: u32 = 3;

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
    /// Format 3: the records (and the log entries) are fields of the game's hash, which
    /// holds this many records before the write (the count read with the state).
    pub hashed: Option<u64>,
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
    while keep > 0 && !records(&stored[keep - 1], &live[keep - 1]) {
        keep -= 1;
    }
    keep
}

/// Whether `r` is the record of `m` (`games::MoveRecord::from(m) == *r`), compared in
/// place rather than by building the record: once per write.
fn records(r: &games::MoveRecord, m: &PlayedMove) -> bool {
    r.ply == m.ply
        && r.at_ms == m.at_ms
        && r.clock_ms == m.clock_ms
        && displays_as(&r.uci, &m.uci)
        && match m.reveal {
            Some(rv) => {
                r.reveal_role == rv.role.name() && displays_as(&r.reveal_square, &rv.square)
            }
            None => r.reveal_role.is_empty() && r.reveal_square.is_empty(),
        }
        && match m.captured {
            Some(c) => {
                r.captured_role == c.shown_role.name()
                    && r.captured_was_hidden == c.was_hidden
                    && displays_as(&r.captured_square, &c.square)
            }
            None => {
                r.captured_role.is_empty() && r.captured_square.is_empty() && !r.captured_was_hidden
            }
        }
        && r.captured_identity == m.captured_identity.map_or("", |role| role.name())
}

/// Whether `value` displays as `text`, without formatting it into a string.
fn displays_as(text: &str, value: &impl std::fmt::Display) -> bool {
    struct Rest<'a>(&'a str);
    impl std::fmt::Write for Rest<'_> {
        fn write_str(&mut self, part: &str) -> std::fmt::Result {
            self.0 = self.0.strip_prefix(part).ok_or(std::fmt::Error)?;
            Ok(())
        }
    }
    let mut rest = Rest(text);
    std::fmt::write(&mut rest, format_args!("{value}")).is_ok() && rest.0.is_empty()
}

/// The format a game is written in when the instance is told to write `format`: a game
/// in format 3 stays in it (its log is in its hash); only a new game starts in it (a game
/// begun with its log in a list goes on in format 2); 1 and 2 as told; anything else 1.
fn format_for(stored: Option<u32>, format: u32) -> u32 {
    match (stored, format) {
        (Some(3), _) | (None, 3) => 3,
        (Some(_), 3) => 2,
        (_, 2) => 2,
        _ => 1,
    }
}

/// The stored bytes of a live game in `format` (1, 2 or 3, as [`format_for`] settles it
/// for this game), and what the write does to the game's move records.
pub fn encode(loaded: &mut Loaded, format: u32) -> (Bytes, MovesWrite) {
    encode_reusing(loaded, format, None)
}

/// [`encode`], given the public FEN of the game as its frames just showed it (if they
/// showed one): a game without a secret stores that same FEN, written once a move instead
/// of twice (`Game::snapshot_ref_reusing`; a hidden game stores its server FEN).
pub fn encode_reusing(
    loaded: &mut Loaded,
    format: u32,
    view_fen: Option<String>,
) -> (Bytes, MovesWrite) {
    let format = format_for(loaded.format, format);
    let live_moves = loaded.live.moves();
    let mut moves = std::mem::take(&mut loaded.stored_moves);
    let keep = unchanged_prefix(&moves, live_moves);
    moves.truncate(keep);
    moves.extend(live_moves[keep..].iter().map(games::MoveRecord::from));
    let mut state = Vec::with_capacity(loaded.state_len + 64);
    let moves_write = if format >= 2 {
        let from = loaded.listed.map_or(0, |listed| listed.min(keep));
        let moves_write = MovesWrite {
            trim_to: (loaded.listed != Some(from)).then_some(from as u64),
            append: moves[from..]
                .iter()
                .map(|m| Bytes::from(m.encode_to_vec()))
                .collect(),
            // A game in format 3 was read or written at this version: its count is known.
            hashed: (format == 3).then(|| loaded.listed.unwrap_or(0) as u64),
        };
        let at = if format == 3 {
            MovesAt::Hash(moves.len())
        } else {
            MovesAt::List(moves.len())
        };
        write_state(&loaded.live, at, view_fen, &mut state);
        loaded.listed = Some(moves.len());
        moves_write
    } else {
        write_state(&loaded.live, MovesAt::State(&moves), view_fen, &mut state);
        // The list (if a format-2 write left one) no longer follows the game.
        loaded.listed = None;
        MovesWrite::default()
    };
    loaded.stored_moves = moves;
    loaded.state_len = state.len();
    loaded.format = Some(format);
    (Bytes::from(state), moves_write)
}

/// A live game from its stored state and the store's move records (read with it, and
/// used only in formats 2 and 3).
pub fn decode(bytes: &[u8], listed: &[Bytes]) -> Result<Loaded, SessionError> {
    let mut stored = StoredGame::decode(bytes)
        .map_err(|e| SessionError::Corrupt(format!("stored game: {e}")))?;
    // Format 0 (before formats were numbered) is format 1; a newer one is not ours to
    // rewrite.
    if stored.format > NEWEST {
        return Err(SessionError::NewerFormat(stored.format));
    }
    let format = stored.format;
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
        state_len: bytes.len(),
        format: Some(format.max(1)),
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
            bot_level: bot_level_code(p),
        }
    }
}

/// A player's bot level as stored (`BotLevel`'s number; unspecified for a person).
fn bot_level_code(p: &Player) -> i32 {
    p.bot_level
        .map_or(games::BotLevel::Unspecified, bot_level_to_proto) as i32
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

fn recent_from_stored(list: &[storage::RecentAction]) -> Vec<(String, u64)> {
    list.iter().map(|a| (a.id.clone(), a.version)).collect()
}

/// Where a written state's move records go.
enum MovesAt<'a> {
    /// Format 1: in the state.
    State(&'a [games::MoveRecord]),
    /// Format 2: in the game's own list, which holds this many.
    List(usize),
    /// Format 3: fields of the game's hash, which holds this many.
    Hash(usize),
}

/// Writes the stored form of `g` (a `StoredGame`, as prost would encode it) into `out`,
/// straight from the live game: building a `StoredGame` first would copy its id, players,
/// code, FEN, history, captured identities and recent action ids into a record that is
/// dropped once encoded — the bulk of a move's allocations in game-session (issue 29).
/// Fields go in the order of their numbers, and a field at its default is left out, as
/// prost does; `the_state_is_written_as_prost_would_encode_it` checks the bytes against
/// `StoredGame::encode_to_vec` of the same game. A field added to `StoredGame` is written
/// here too, or it is never stored.
fn write_state(g: &LiveGame, moves: MovesAt<'_>, view_fen: Option<String>, out: &mut Vec<u8>) {
    let info = &g.info;
    let snap = g.game.snapshot_ref_reusing(view_fen);
    wire::string(out, 1, &info.id);
    wire::int32(out, 2, variant_to_proto(info.variant) as i32);
    wire::boolean(out, 3, info.rated);
    if let Some(tc) = info.time_control {
        prost::encoding::message::encode(4, &games::TimeControl::from(tc), out);
    }
    for (tag, seat) in [(5, &g.seats.white), (6, &g.seats.black)] {
        if let Some(p) = seat {
            wire::message(out, tag, |out| {
                wire::string(out, 1, &p.id);
                wire::string(out, 2, &p.name);
                wire::boolean(out, 3, p.guest);
                wire::boolean(out, 4, p.bot);
                wire::int32(out, 5, bot_level_code(p));
            });
        }
    }
    wire::string(out, 7, &info.code);
    let phase = match g.phase {
        Phase::Waiting => storage::Phase::Waiting,
        Phase::Playing => storage::Phase::Playing,
        Phase::Finished => storage::Phase::Finished,
    };
    wire::int32(out, 8, phase as i32);
    wire::string(out, 9, &snap.fen);
    if let Some((layout, salt)) = &snap.shuffle {
        wire::string(out, 10, layout);
        wire::bytes(out, 11, salt);
    }
    for (tag, list) in [(12, &snap.captured.white), (13, &snap.captured.black)] {
        for c in list {
            wire::message(out, tag, |out| {
                wire::display(out, 1, &c.square);
                wire::string(out, 2, c.role.char().encode_utf8(&mut [0; 4]));
                wire::uint64(out, 3, c.ply.into());
            });
        }
    }
    wire::packed_fixed64(out, 14, snap.history);
    if let Some(pending) = &snap.pending {
        wire::display(out, 15, pending);
    }
    if let Some(outcome) = snap.outcome {
        wire::string(out, 16, &outcome.code());
    }
    wire::uint64(out, 17, snap.ply.into());
    if let MovesAt::State(records) = moves {
        for m in records {
            prost::encoding::message::encode(18, m, out);
        }
    }
    wire::uint64(out, 19, color_code(g.draw_offer).into());
    for (tag, list) in [(20, &g.recent.white), (21, &g.recent.black)] {
        for (id, version) in list {
            wire::message(out, tag, |out| {
                wire::string(out, 1, id);
                wire::uint64(out, 2, *version);
            });
        }
    }
    wire::int64(out, 22, info.created_at_ms);
    wire::int64(out, 23, g.started_at_ms);
    wire::int64(out, 24, g.ended_at_ms);
    wire::string(out, 25, &info.creator_id);
    wire::string(out, 26, &info.commitment);
    wire::string(out, 27, &info.start_fen);
    if let Some(clock) = &g.clock {
        prost::encoding::message::encode(28, &clock_to_stored(clock), out);
    }
    match moves {
        MovesAt::State(_) => wire::uint64(out, 29, 1),
        MovesAt::List(count) => {
            wire::uint64(out, 29, 2);
            wire::uint64(out, 30, count as u64);
        }
        MovesAt::Hash(count) => {
            wire::uint64(out, 29, 3);
            wire::uint64(out, 30, count as u64);
        }
    }
}

/// Protobuf's wire form, one proto3 field at a time: a field at its default (zero, false,
/// empty) is left out, as prost leaves it out. The keys and varints are prost's own
/// functions (`prost::encoding`, which the code prost generates calls as well).
mod wire {
    use prost::encoding::{WireType, encode_key, encode_varint};

    pub(super) fn uint64(out: &mut Vec<u8>, tag: u32, value: u64) {
        if value != 0 {
            encode_key(tag, WireType::Varint, out);
            encode_varint(value, out);
        }
    }

    /// `int64`: a negative value takes ten bytes, as its two's complement.
    pub(super) fn int64(out: &mut Vec<u8>, tag: u32, value: i64) {
        uint64(out, tag, value as u64);
    }

    /// `int32` and enums: sign-extended to 64 bits, as protobuf says.
    pub(super) fn int32(out: &mut Vec<u8>, tag: u32, value: i32) {
        int64(out, tag, value.into());
    }

    pub(super) fn boolean(out: &mut Vec<u8>, tag: u32, value: bool) {
        uint64(out, tag, value.into());
    }

    pub(super) fn bytes(out: &mut Vec<u8>, tag: u32, value: &[u8]) {
        if !value.is_empty() {
            encode_key(tag, WireType::LengthDelimited, out);
            encode_varint(value.len() as u64, out);
            out.extend_from_slice(value);
        }
    }

    pub(super) fn string(out: &mut Vec<u8>, tag: u32, value: &str) {
        bytes(out, tag, value.as_bytes());
    }

    /// A string field holding `value` as it displays, formatted straight into `out`.
    pub(super) fn display(out: &mut Vec<u8>, tag: u32, value: &impl std::fmt::Display) {
        use std::io::Write as _;
        let at = out.len();
        let len = delimited(out, tag, |out| {
            // Writing into a `Vec` cannot fail.
            let _ = write!(out, "{value}");
        });
        if len == 0 {
            // Empty: a default, left out.
            out.truncate(at);
        }
    }

    /// A (present) embedded message, written by `body`.
    pub(super) fn message(out: &mut Vec<u8>, tag: u32, body: impl FnOnce(&mut Vec<u8>)) {
        delimited(out, tag, body);
    }

    /// A length-delimited field whose content `body` writes, and the content's length: it
    /// is known only after, so one byte is kept for it (enough below 128 bytes, as for
    /// every one written here but a rare long name) and the content moved along when its
    /// length needs more.
    fn delimited(out: &mut Vec<u8>, tag: u32, body: impl FnOnce(&mut Vec<u8>)) -> usize {
        encode_key(tag, WireType::LengthDelimited, out);
        let at = out.len();
        out.push(0);
        body(out);
        let len = out.len() - at - 1;
        if len < 0x80 {
            out[at] = len as u8;
        } else {
            let mut prefix = [0; 10];
            let mut free = &mut prefix[..];
            encode_varint(len as u64, &mut free);
            let used = 10 - free.len();
            out.splice(at..=at, prefix[..used].iter().copied());
        }
        len
    }

    pub(super) fn packed_fixed64(out: &mut Vec<u8>, tag: u32, values: &[u64]) {
        if !values.is_empty() {
            encode_key(tag, WireType::LengthDelimited, out);
            encode_varint(8 * values.len() as u64, out);
            for v in values {
                out.extend_from_slice(&v.to_le_bytes());
            }
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

    /// White's a1 is truly a pawn, a2 a knight; Black's a7 a knight: the a-file opens, and
    /// the a1 "rook" takes on a8 as a pawn whose promotion is then awaited. The game
    /// against `opponent`, and the five moves to play on it.
    fn promoting(opponent: Player) -> (Loaded, [(Color, &'static str); 5]) {
        let layout = Layout::from_canonical("PNBQBRRNPPPPPPP/rbbqnrpnppppppp").expect("valid");
        let shuffle = Shuffle::with_random_salt(layout).expect("salt");
        let game = started(Variant::Hidden, Some(shuffle), opponent);
        let line = [
            (Color::White, "a2a3"),
            (Color::Black, "a7a6"),
            (Color::White, "a3b5"),
            (Color::Black, "a6c5"),
            (Color::White, "a1a8"),
        ];
        (game, line)
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

    /// A stored game's record as the state was built before `write_state` wrote it field
    /// by field: every field copied into a `StoredGame`. The reference the written bytes
    /// are checked against.
    fn reference(loaded: &Loaded, format: u32) -> StoredGame {
        let g = &loaded.live;
        let snap = g.game.snapshot();
        let (layout, salt) = snap
            .shuffle
            .map(|(layout, salt)| (layout, salt.to_vec()))
            .unwrap_or_default();
        let recent = |list: &[(String, u64)]| {
            list.iter()
                .map(|(id, version)| storage::RecentAction {
                    id: id.clone(),
                    version: *version,
                })
                .collect()
        };
        let moves: Vec<games::MoveRecord> = g.moves().iter().map(Into::into).collect();
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
            move_count: if format >= 2 { moves.len() as u32 } else { 0 },
            moves: if format >= 2 { Vec::new() } else { moves },
            draw_offer: color_code(g.draw_offer),
            recent_white: recent(&g.recent.white),
            recent_black: recent(&g.recent.black),
            created_at_ms: info.created_at_ms,
            started_at_ms: g.started_at_ms,
            ended_at_ms: g.ended_at_ms,
            creator_id: info.creator_id.clone(),
            commitment: info.commitment.clone(),
            start_fen: info.start_fen.clone(),
            clock: g.clock.as_ref().map(clock_to_stored),
            format: format.max(1),
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

    #[test]
    fn the_frames_fen_reused_writes_the_state_it_would_write_alone() {
        // Each variant's moves (a hidden game's through a promotion awaited and chosen):
        // after every action, the state written with the FEN its frames showed is the
        // state written without it; the frames show one after every move.
        let opponent = || person("black");
        let (hidden, line) = promoting(opponent());
        let mut actions: Vec<(Color, Action)> =
            line.iter().map(|(seat, uci)| (*seat, mv(uci))).collect();
        actions.push((Color::White, Action::Promote(frontier_rules::Role::Queen)));
        let plain = [
            "e2e4", "d7d5", "e4d5", "d8d5", "b1c3", "d5a5", "g1f3", "c8g4",
        ];
        let games = [
            (started(Variant::Standard, None, opponent()), None),
            (started(Variant::Atomic, None, opponent()), None),
            (hidden, Some(actions)),
        ];
        for (mut game, actions) in games {
            let actions = actions.unwrap_or_else(|| {
                plain
                    .iter()
                    .enumerate()
                    .map(|(i, uci)| (mover(i), mv(uci)))
                    .collect()
            });
            for (version, (seat, action)) in (3..).zip(actions) {
                let Applied::Done(change) = game.apply(seat, &action, 0).expect("applies") else {
                    panic!("no clock here");
                };
                let (_, fen) = crate::render::frames_and_fen(&game, &change.happened, version, 0);
                assert!(fen.is_some(), "{action:?}");
                for format in [1, 3] {
                    // The state does not depend on what was stored before (only the
                    // records written alongside do).
                    game.format = None;
                    let alone = encode(&mut game, format).0;
                    game.format = None;
                    let reusing = encode_reusing(&mut game, format, fen.clone()).0;
                    assert_eq!(alone, reusing, "{action:?}, format {format}");
                }
            }
        }
    }

    #[test]
    fn the_state_is_written_as_prost_would_encode_it() {
        let check = |what: &str, game: &mut Loaded| {
            for format in [1, 2, 0, 3] {
                // Each format as a game never stored would be written in it (only such a
                // game starts in format 3, and a game in format 3 stays in it).
                game.format = None;
                let expected = reference(game, format).encode_to_vec();
                let (written, _) = encode(game, format);
                assert_eq!(written.as_ref(), &expected[..], "{what}, format {format}");
                let read = StoredGame::decode(written.as_ref()).expect("decodes");
                assert_eq!(read.id, game.info.id, "{what}");
            }
        };
        let member = |id: &str| Player {
            guest: false,
            ..person(id)
        };
        // A standard game, waiting for its opponent, then under way with action ids
        // remembered and a draw offered.
        let live = LiveGame::new_board(
            NewGame {
                id: "0190c6a0-0000-7000-8000-000000000002".into(),
                code: "GHJKLM".into(),
                creator: member("white"),
                creator_color: Color::White,
                variant: Variant::Standard,
                rated: true,
                time_control: Some(TimeControlSpec {
                    initial_seconds: 180,
                    increment_seconds: 2,
                }),
                shuffle: None,
                start: None,
                now_ms: 1_700_000_000_000,
            },
            CLOCKS,
        );
        let mut game = Loaded::new(live);
        check("waiting", &mut game);
        game.join(member("black"), 1_700_000_000_500, CLOCKS)
            .expect("joins");
        for (i, uci) in ["e2e4", "e7e5", "g1f3"].iter().enumerate() {
            let seat = mover(i);
            match game
                .apply(seat, &mv(uci), 1_700_000_001_000 + 1_000 * i as i64)
                .expect("applies")
            {
                Applied::Done(_) => {}
                Applied::TimedOut(..) => panic!("in time"),
            }
        }
        game.live.remember_action(Color::White, "w1", 1);
        game.live.remember_action(Color::Black, "b1", 2);
        game.live.draw_offer = Some(Color::Black);
        check("timed, under way", &mut game);
        // Hidden chess with captures, revealed pieces and a promotion waiting for its
        // choice, against a bot whose name is long enough for its record's length to take
        // two bytes.
        let long = Player {
            name: "b".repeat(150),
            ..Player::bot("bot".into(), BotLevel::Hard)
        };
        let (mut hidden, line) = promoting(long);
        for (seat, uci) in line {
            act(&mut hidden, seat, mv(uci));
        }
        check("hidden, promotion pending", &mut hidden);
        act(&mut hidden, Color::White, Action::Promote(Role::Knight));
        check("hidden, promoted", &mut hidden);
        // Over: an outcome and an end time.
        act(&mut hidden, Color::Black, Action::Resign);
        check("hidden, resigned", &mut hidden);
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
                    hashed: None,
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
        let (mut game, line) = promoting(person("black"));
        let mut list = Vec::new();
        apply(&mut list, &encode(&mut game, 2).1);
        for (seat, uci) in line {
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
                hashed: None,
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
                hashed: None,
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
    fn only_a_new_game_starts_in_format_3_and_a_game_in_it_stays() {
        // (format the game was read or written in, format the instance is told) → written.
        for (stored, told, written) in [
            (None, 3, 3),
            (Some(3), 3, 3),
            (Some(3), 2, 3),
            (Some(3), 1, 3),
            (Some(2), 3, 2),
            (Some(1), 3, 2),
            (None, 2, 2),
            (Some(1), 2, 2),
            (Some(2), 1, 1),
            (None, 1, 1),
            (None, 0, 1),
            (None, 4, 1),
        ] {
            assert_eq!(format_for(stored, told), written, "{stored:?}, told {told}");
        }
        let moves = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4"];
        let mut held = Vec::new();
        let mut game = started(Variant::Standard, None, person("black"));
        // A new game: its hash holds no records yet.
        let (_, write) = encode(&mut game, 3);
        assert_eq!((write.hashed, write.trim_to), (Some(0), Some(0)));
        apply(&mut held, &write);
        for (i, uci) in moves.iter().enumerate() {
            act(&mut game, mover(i), mv(uci));
            // Told 1 or 2 by an instance not yet on 3: a game in format 3 stays in it.
            let told = [3, 1, 2][i % 3];
            let (state, write) = encode(&mut game, told);
            assert_eq!(
                write,
                MovesWrite {
                    trim_to: None,
                    append: vec![record(&game.moves()[i])],
                    hashed: Some(i as u64),
                },
                "ply {}, told {told}",
                i + 1
            );
            apply(&mut held, &write);
            let stored = StoredGame::decode(state.as_ref()).expect("decodes");
            assert_eq!((stored.format, stored.move_count), (3, i as u32 + 1));
            assert!(stored.moves.is_empty());
            // Read back with the records the hash holds, it is the same game, in format 3.
            game = decode(&state, &held).expect("decodes");
            assert_eq!(game.moves().len(), i + 1);
            assert_eq!(game.format, Some(3));
        }
        // A game read in format 2 goes on in format 2 when told 3: its log is a list.
        let mut two = started(Variant::Standard, None, person("black"));
        let mut list = Vec::new();
        let (state, write) = encode(&mut two, 2);
        apply(&mut list, &write);
        let mut two = decode(&state, &list).expect("decodes");
        act(&mut two, mover(0), mv("e2e4"));
        let (state, write) = encode(&mut two, 3);
        assert_eq!(write.hashed, None);
        assert_eq!(
            StoredGame::decode(state.as_ref()).expect("decodes").format,
            2
        );
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
