//! Messages the server sends.

use serde::{Deserialize, Serialize};

use crate::{ClockSpec, ErrorCode, PlayerInfo, PoolSpec};

/// Everything a client can receive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerMessage {
    /// First message on a new connection.
    Welcome {
        /// [`crate::PROTOCOL_VERSION`].
        protocol: u32,
    },
    /// `auth` succeeded.
    Authenticated {
        /// The `auth` message's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Who the connection now speaks for.
        player: PlayerInfo,
    },
    /// Answer to `ping`.
    Pong {
        /// The ping's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// A message was refused; nothing changed, the connection stays usable.
    Error {
        /// The refused message's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The game it was about.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        game_id: Option<String>,
        /// What went wrong.
        code: ErrorCode,
        /// In words, for people.
        message: String,
        /// With `rate_limited`: how long to wait before the refused message can succeed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after_ms: Option<u64>,
    },
    /// A board was created.
    BoardCreated {
        /// The request's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Its game.
        game_id: String,
        /// The share code.
        code: String,
        /// An invite link carrying the code.
        invite: String,
        /// The creator's colour.
        color: String,
    },
    /// The connection's player joined a board.
    BoardJoined {
        /// The request's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Its game.
        game_id: String,
        /// The joiner's colour.
        color: String,
    },
    /// A game against the computer was created (`play_computer`); it has started.
    GameCreated {
        /// The request's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Its game.
        game_id: String,
        /// The player's colour.
        color: String,
    },
    /// A game action was applied (or had been, for a duplicate).
    Ack {
        /// The action's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The game.
        game_id: String,
        /// The version the action produced.
        version: u64,
        /// The same `id` had already been applied; nothing changed now.
        duplicate: bool,
    },
    /// `close` done: no more events of that game.
    Closed {
        /// The request's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The game.
        game_id: String,
    },
    /// Answer to `seek`: the player waits in these pools.
    Seeking {
        /// The `seek`'s id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The pools.
        pools: Vec<PoolSpec>,
        /// Median time to pair of recent pairings in these pools (ms), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        estimated_wait_ms: Option<u64>,
        /// A standing seek was replaced.
        replaced: bool,
    },
    /// Answer to `cancel_seek`.
    SeekCancelled {
        /// The `cancel_seek`'s id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// A seek stood and is gone (false: there was none).
        cancelled: bool,
    },
    /// The player was matched: sent on every connection of the player; the game opens.
    Matched(Matched),
    /// A rematch offer stands for a finished game: the answer to `offer_rematch`, and a
    /// notice on every connection of both players.
    RematchOffered {
        /// The `offer_rematch`'s id (only in the answer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The finished game.
        game_id: String,
        /// The colour the offerer played in it.
        by: String,
    },
    /// A rematch offer is gone without a game: the answer to `decline_rematch`, and a
    /// notice on every connection of both players.
    RematchCancelled {
        /// The `decline_rematch`'s id (only in the answer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The finished game.
        game_id: String,
        /// The colour (in the finished game) of the player whose doing it was.
        by: String,
        /// `declined` (by the other player), `withdrawn` (by the offerer), `left` (a player
        /// left the game) or `seeking` (a player went to quick match).
        reason: String,
    },
    /// The rematch started: the answer to the accepting `accept_rematch` (or
    /// `offer_rematch`), and a notice on every connection of both players, each of which
    /// then follows the new game.
    RematchStarted {
        /// The accepting message's id (only in the answer).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The finished game.
        game_id: String,
        /// The new game (started; the same variant, clock and rating, colours swapped).
        new_game_id: String,
        /// The receiver's colour in the new game.
        color: String,
    },
    /// Answer to `status`.
    Status {
        /// The `status`'s id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// The standing seek, if any.
        seeking: Option<SeekStanding>,
        /// The match of the player's latest seek, of the last 10 minutes, if any.
        matched: Option<Matched>,
        /// The latest seek has just been paired and its game is being made: `matched`
        /// follows.
        #[serde(default)]
        matching: bool,
    },
    /// A whole game as the receiver may see it.
    Game {
        /// The game.
        game_id: String,
        /// Its version: the number of changes so far.
        version: u64,
        /// `white`, `black` or `spectator`.
        seat: String,
        /// The game.
        game: Box<GameWire>,
    },
    /// One change of a game, as the receiver may see it. Versions are consecutive.
    Event {
        /// The game.
        game_id: String,
        /// This change's version.
        version: u64,
        /// What happened.
        event: Box<GameEvent>,
        /// Set when the game ended with this change.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        outcome: Option<OutcomeWire>,
        /// Hidden chess, set when the game ended: the shuffle to check the commitment.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shuffle: Option<ShuffleWire>,
        /// Timed games: both clocks after this change.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        clocks: Option<ClocksWire>,
    },
}

/// Both clocks as read at one server time, so a client can draw them without drift.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClocksWire {
    /// White's remaining milliseconds at `at`.
    pub white_ms: u64,
    /// Black's remaining milliseconds at `at`.
    pub black_ms: u64,
    /// `white` or `black`: whose clock runs (none before a side's first move, while the
    /// first-move limit applies instead, and after the end).
    pub running: Option<String>,
    /// Server time of the reading, Unix milliseconds.
    pub at: i64,
}

/// How a game ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeWire {
    /// `white`, `black`, `draw` or `aborted`.
    pub result: String,
    /// `checkmate`, `king-exploded`, `resignation`, `timeout`, `abandonment`, `stalemate`,
    /// `repetition`, `fifty-moves`, `insufficient-material`, `agreement`,
    /// `timeout-vs-insufficient-material` or `aborted`.
    pub reason: String,
}

/// A match found by quick match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Matched {
    /// The game (it has started).
    pub game_id: String,
    /// The player's colour.
    pub color: String,
    /// Who plays the other side; `bot: true` for the computer, always.
    pub opponent: PlayerInfo,
    /// Rated (never against a bot).
    pub rated: bool,
    /// The pool it was found in.
    pub pool: PoolSpec,
}

/// A standing seek.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeekStanding {
    /// Its pools.
    pub pools: Vec<PoolSpec>,
    /// Since when (Unix ms).
    pub since: u64,
}

/// A published shuffle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShuffleWire {
    /// Canonical layout string.
    pub layout: String,
    /// Salt, hex.
    pub salt: String,
    /// Commitment, hex.
    pub commitment: String,
}

/// A revealed piece.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevealWire {
    /// Where it stands now.
    pub square: String,
    /// What it is.
    pub role: String,
}

/// A captured piece as everyone saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapturedWire {
    /// Where it stood.
    pub square: String,
    /// The role it showed.
    pub role: String,
    /// Whether it was still hidden.
    pub hidden: bool,
}

/// A captured hidden piece's identity, known to its capturer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapturedIdentityWire {
    /// Where it was captured.
    pub square: String,
    /// What it was.
    pub role: String,
    /// On which half-move.
    pub ply: u32,
}

/// One move of the public move list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveWire {
    /// UCI, with the promotion made.
    pub uci: String,
    /// What the move revealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reveal: Option<RevealWire>,
    /// What it captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub captured: Option<CapturedWire>,
}

/// A whole game for one audience.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameWire {
    /// `standard`, `hidden` or `atomic`.
    pub variant: String,
    /// Rated or casual.
    pub rated: bool,
    /// The clock, if any.
    pub clock: Option<ClockSpec>,
    /// `waiting`, `playing` or `finished`.
    pub status: String,
    /// White, once seated.
    pub white: Option<PlayerInfo>,
    /// Black, once seated.
    pub black: Option<PlayerInfo>,
    /// The position (hidden chess: hidden pieces as their apparent role, seventh field
    /// listing them).
    pub fen: String,
    /// The side whose action is awaited.
    pub turn: String,
    /// Half-moves played.
    pub ply: u32,
    /// The public move list.
    pub moves: Vec<MoveWire>,
    /// The square of a pawn awaiting its promotion choice.
    pub pending_promotion: Option<String>,
    /// Identities this receiver captured (hidden chess; empty for spectators).
    pub captured_identities: Vec<CapturedIdentityWire>,
    /// A standing draw offer, by colour.
    pub draw_offer: Option<String>,
    /// Hidden chess: the commitment to the shuffle.
    pub commitment: Option<String>,
    /// The outcome, once over.
    pub outcome: Option<OutcomeWire>,
    /// Hidden chess, once over: the shuffle.
    pub shuffle: Option<ShuffleWire>,
    /// Timed games: both clocks now.
    pub clocks: Option<ClocksWire>,
}

/// What happened in one change of a game.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GameEvent {
    /// The board was created (version 1).
    Created {
        /// The creator's colour.
        color: String,
        /// The creator.
        player: PlayerInfo,
    },
    /// The second player joined; play starts.
    Started {
        /// White.
        white: PlayerInfo,
        /// Black.
        black: PlayerInfo,
        /// Hidden chess: the commitment to the shuffle.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commitment: Option<String>,
        /// The start position.
        fen: String,
    },
    /// A move.
    Move {
        /// Its half-move number.
        ply: u32,
        /// Who moved.
        color: String,
        /// UCI, with the promotion made (none while pending).
        uci: String,
        /// A piece it revealed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reveal: Option<RevealWire>,
        /// A piece it captured.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        captured: Option<CapturedWire>,
        /// The captured hidden piece's identity: only in the capturer's own event.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        captured_identity: Option<String>,
        /// Atomic: squares emptied by the explosion.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        exploded: Vec<String>,
        /// The mover revealed a pawn on its last rank and must now choose its promotion.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        promotion_pending: bool,
        /// The side to move is in check.
        check: bool,
        /// The position after the move.
        fen: String,
        /// The side whose action is awaited next.
        turn: String,
    },
    /// A pending promotion was answered.
    Promotion {
        /// The half-move number.
        ply: u32,
        /// Who promoted.
        color: String,
        /// The completed move in UCI.
        uci: String,
        /// The piece chosen.
        role: String,
        /// The side to move is in check.
        check: bool,
        /// The position after.
        fen: String,
        /// The side to move next.
        turn: String,
    },
    /// A player offered a draw.
    DrawOffered {
        /// Who.
        by: String,
    },
    /// A player declined the draw offer.
    DrawDeclined {
        /// Who.
        by: String,
    },
    /// The player took back their last move and the computer's reply (games against the
    /// computer). The position is the one before the player's last move.
    Undo {
        /// Half-moves played now.
        ply: u32,
        /// The moves taken back (UCI), in the order they were played.
        taken_back: Vec<String>,
        /// The side to move is in check.
        check: bool,
        /// The position now.
        fen: String,
        /// The side to move now.
        turn: String,
    },
    /// The game ended without a move: resignation, agreement, abort, flag, claim.
    Ended {},
}
