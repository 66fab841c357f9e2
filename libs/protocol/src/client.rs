//! Messages a client sends.

use serde::{Deserialize, Serialize};

/// Largest client frame accepted, in bytes; larger frames get `too_large`.
pub const MAX_CLIENT_FRAME_BYTES: usize = 2048;

/// Longest `id` (correlation and duplicate-detection id) accepted, in bytes.
pub const MAX_ID_BYTES: usize = 64;

/// A clock: whole minutes (1–60) and an increment in seconds (0–60).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockSpec {
    /// Base time in minutes.
    pub minutes: u32,
    /// Increment per move in seconds.
    #[serde(default)]
    pub increment: u32,
}

impl ClockSpec {
    /// The one rule for a board's clock: 1 to 60 whole minutes, an increment of 0 to 60
    /// seconds.
    pub fn is_valid(&self) -> bool {
        (1..=60).contains(&self.minutes) && self.increment <= 60
    }
}

/// A matchmaking pool named in a `seek`: a variant, one of the pool clocks (1+0, 3+0, 3+2,
/// 5+0, 10+0, 15+10, 30+0) and rated or casual.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolSpec {
    /// `standard`, `hidden` or `atomic`.
    pub variant: String,
    /// The time control.
    pub clock: ClockSpec,
    /// Rated (registered players only); default casual.
    #[serde(default)]
    pub rated: bool,
}

/// The creator's colour choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColorChoiceWire {
    /// White.
    White,
    /// Black.
    Black,
    /// Decided at random when the board is created.
    Random,
}

/// How strong the computer plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BotLevel {
    /// The weakest.
    Easy,
    /// In between.
    Medium,
    /// The strongest.
    Hard,
}

impl BotLevel {
    /// Every level, weakest first.
    pub const ALL: [BotLevel; 3] = [BotLevel::Easy, BotLevel::Medium, BotLevel::Hard];

    /// `easy`, `medium` or `hard`.
    pub fn name(self) -> &'static str {
        match self {
            BotLevel::Easy => "easy",
            BotLevel::Medium => "medium",
            BotLevel::Hard => "hard",
        }
    }

    /// A level from its name.
    pub fn parse(name: &str) -> Option<BotLevel> {
        BotLevel::ALL.into_iter().find(|l| l.name() == name)
    }

    /// The bot's display name: `Frontier Bot · Easy`, `… · Medium`, `… · Hard`.
    pub fn bot_name(self) -> &'static str {
        match self {
            BotLevel::Easy => "Frontier Bot · Easy",
            BotLevel::Medium => "Frontier Bot · Medium",
            BotLevel::Hard => "Frontier Bot · Hard",
        }
    }
}

/// Everything a client can send. `id` is optional everywhere: echoed in the answer, and
/// for game actions the key that makes a resent action apply once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientMessage {
    /// Authenticate this connection with a token from the HTTP API.
    Auth {
        /// Echoed in `authenticated` or the error.
        #[serde(default)]
        id: Option<String>,
        /// The JWT.
        token: String,
    },
    /// Liveness check.
    Ping {
        /// Echoed.
        #[serde(default)]
        id: Option<String>,
    },
    /// Create a private board.
    CreateBoard {
        /// Echoed.
        #[serde(default)]
        id: Option<String>,
        /// `standard`, `hidden` or `atomic`.
        variant: String,
        /// The creator's colour.
        color: ColorChoiceWire,
        /// Rated (registered players only) or casual.
        #[serde(default)]
        rated: bool,
        /// The clock, or none.
        #[serde(default)]
        clock: Option<ClockSpec>,
    },
    /// Join a board by its share code.
    JoinBoard {
        /// Echoed.
        #[serde(default)]
        id: Option<String>,
        /// The share code.
        code: String,
    },
    /// Open a game to play or watch it: a full view, or the events after `after_version`.
    Open {
        /// Echoed.
        #[serde(default)]
        id: Option<String>,
        /// The game.
        game_id: String,
        /// The last version this client saw, to resume from.
        #[serde(default)]
        after_version: Option<u64>,
    },
    /// Stop receiving a game's events.
    Close {
        /// Echoed.
        #[serde(default)]
        id: Option<String>,
        /// The game.
        game_id: String,
    },
    /// Play a move.
    Move {
        /// Echoed; and a move resent with the same id is applied once.
        #[serde(default)]
        id: Option<String>,
        /// The game.
        game_id: String,
        /// The move in UCI.
        uci: String,
        /// Apply only if the game is still at this version.
        #[serde(default)]
        expected_version: Option<u64>,
        /// How long the player took to decide, in milliseconds (for lag compensation).
        #[serde(default)]
        move_time_ms: Option<u64>,
    },
    /// Answer a pending promotion.
    Promote {
        /// Echoed; dedupe key.
        #[serde(default)]
        id: Option<String>,
        /// The game.
        game_id: String,
        /// `q`, `r`, `b` or `n`.
        role: String,
    },
    /// Resign.
    Resign {
        /// Echoed; dedupe key.
        #[serde(default)]
        id: Option<String>,
        /// The game.
        game_id: String,
    },
    /// Offer a draw.
    OfferDraw {
        /// Echoed; dedupe key.
        #[serde(default)]
        id: Option<String>,
        /// The game.
        game_id: String,
    },
    /// Accept the opponent's draw offer.
    AcceptDraw {
        /// Echoed; dedupe key.
        #[serde(default)]
        id: Option<String>,
        /// The game.
        game_id: String,
    },
    /// Decline the opponent's draw offer.
    DeclineDraw {
        /// Echoed; dedupe key.
        #[serde(default)]
        id: Option<String>,
        /// The game.
        game_id: String,
    },
    /// Abort a game in which fewer than two moves were made.
    Abort {
        /// Echoed; dedupe key.
        #[serde(default)]
        id: Option<String>,
        /// The game.
        game_id: String,
    },
    /// Claim a game without clock whose opponent has been disconnected too long.
    ClaimVictory {
        /// Echoed; dedupe key.
        #[serde(default)]
        id: Option<String>,
        /// The game.
        game_id: String,
    },
    /// Play the computer: a game that starts at once against a bot of this level.
    PlayComputer {
        /// Echoed.
        #[serde(default)]
        id: Option<String>,
        /// `standard`, `hidden` or `atomic`.
        variant: String,
        /// `easy`, `medium` or `hard` (checked by the gateway: `bad_field`).
        level: String,
        /// The player's colour.
        color: ColorChoiceWire,
        /// The clock, or none.
        #[serde(default)]
        clock: Option<ClockSpec>,
    },
    /// Take back the player's last move and the computer's reply (standard and atomic
    /// games against the computer, on the player's turn).
    Undo {
        /// Echoed; dedupe key.
        #[serde(default)]
        id: Option<String>,
        /// The game.
        game_id: String,
        /// Apply only if the game is still at this version.
        #[serde(default)]
        expected_version: Option<u64>,
    },
    /// Quick match: wait for an opponent in one or several pools (replacing a standing
    /// seek); matched in exactly one of them.
    Seek {
        /// Echoed in `seeking`.
        #[serde(default)]
        id: Option<String>,
        /// 1 to 8 different pools.
        pools: Vec<PoolSpec>,
    },
    /// Stop seeking.
    CancelSeek {
        /// Echoed in `seek_cancelled`.
        #[serde(default)]
        id: Option<String>,
    },
    /// The player's standing seek and latest `matched` notice (after a reconnect).
    Status {
        /// Echoed in `status`.
        #[serde(default)]
        id: Option<String>,
    },
    /// Offer the opponent of a finished game between two people a rematch (the same
    /// settings, colours swapped). If the opponent's offer stands, this accepts it.
    OfferRematch {
        /// Echoed.
        #[serde(default)]
        id: Option<String>,
        /// The finished game.
        game_id: String,
    },
    /// Accept the opponent's rematch offer: the new game starts.
    AcceptRematch {
        /// Echoed.
        #[serde(default)]
        id: Option<String>,
        /// The finished game.
        game_id: String,
    },
    /// Decline the opponent's rematch offer, or withdraw one's own.
    DeclineRematch {
        /// Echoed.
        #[serde(default)]
        id: Option<String>,
        /// The finished game.
        game_id: String,
    },
}

impl ClientMessage {
    /// The message's `type` (one of [`CLIENT_MESSAGE_TYPES`]).
    pub fn kind(&self) -> &'static str {
        match self {
            ClientMessage::Auth { .. } => "auth",
            ClientMessage::Ping { .. } => "ping",
            ClientMessage::CreateBoard { .. } => "create_board",
            ClientMessage::JoinBoard { .. } => "join_board",
            ClientMessage::Open { .. } => "open",
            ClientMessage::Close { .. } => "close",
            ClientMessage::Move { .. } => "move",
            ClientMessage::Promote { .. } => "promote",
            ClientMessage::Resign { .. } => "resign",
            ClientMessage::OfferDraw { .. } => "offer_draw",
            ClientMessage::AcceptDraw { .. } => "accept_draw",
            ClientMessage::DeclineDraw { .. } => "decline_draw",
            ClientMessage::Abort { .. } => "abort",
            ClientMessage::ClaimVictory { .. } => "claim_victory",
            ClientMessage::PlayComputer { .. } => "play_computer",
            ClientMessage::Undo { .. } => "undo",
            ClientMessage::Seek { .. } => "seek",
            ClientMessage::CancelSeek { .. } => "cancel_seek",
            ClientMessage::Status { .. } => "status",
            ClientMessage::OfferRematch { .. } => "offer_rematch",
            ClientMessage::AcceptRematch { .. } => "accept_rematch",
            ClientMessage::DeclineRematch { .. } => "decline_rematch",
        }
    }

    /// Whether the message is an action in a game (a move, a promotion, a resignation, a
    /// draw offer or answer, an abort, a claim of victory, an undo): what game-session's
    /// `Act` carries.
    pub fn is_game_action(&self) -> bool {
        matches!(
            self,
            ClientMessage::Move { .. }
                | ClientMessage::Promote { .. }
                | ClientMessage::Resign { .. }
                | ClientMessage::OfferDraw { .. }
                | ClientMessage::AcceptDraw { .. }
                | ClientMessage::DeclineDraw { .. }
                | ClientMessage::Abort { .. }
                | ClientMessage::ClaimVictory { .. }
                | ClientMessage::Undo { .. }
        )
    }

    /// The message's `id`, if any.
    pub fn id(&self) -> Option<&str> {
        match self {
            ClientMessage::Auth { id, .. }
            | ClientMessage::Ping { id }
            | ClientMessage::CreateBoard { id, .. }
            | ClientMessage::JoinBoard { id, .. }
            | ClientMessage::Open { id, .. }
            | ClientMessage::Close { id, .. }
            | ClientMessage::Move { id, .. }
            | ClientMessage::Promote { id, .. }
            | ClientMessage::Resign { id, .. }
            | ClientMessage::OfferDraw { id, .. }
            | ClientMessage::AcceptDraw { id, .. }
            | ClientMessage::DeclineDraw { id, .. }
            | ClientMessage::Abort { id, .. }
            | ClientMessage::ClaimVictory { id, .. }
            | ClientMessage::PlayComputer { id, .. }
            | ClientMessage::Undo { id, .. }
            | ClientMessage::Seek { id, .. }
            | ClientMessage::CancelSeek { id }
            | ClientMessage::Status { id }
            | ClientMessage::OfferRematch { id, .. }
            | ClientMessage::AcceptRematch { id, .. }
            | ClientMessage::DeclineRematch { id, .. } => id.as_deref(),
        }
    }

    /// The game the message is about, if any.
    pub fn game_id(&self) -> Option<&str> {
        match self {
            ClientMessage::Open { game_id, .. }
            | ClientMessage::Close { game_id, .. }
            | ClientMessage::Move { game_id, .. }
            | ClientMessage::Promote { game_id, .. }
            | ClientMessage::Resign { game_id, .. }
            | ClientMessage::OfferDraw { game_id, .. }
            | ClientMessage::AcceptDraw { game_id, .. }
            | ClientMessage::DeclineDraw { game_id, .. }
            | ClientMessage::Abort { game_id, .. }
            | ClientMessage::ClaimVictory { game_id, .. }
            | ClientMessage::Undo { game_id, .. }
            | ClientMessage::OfferRematch { game_id, .. }
            | ClientMessage::AcceptRematch { game_id, .. }
            | ClientMessage::DeclineRematch { game_id, .. } => Some(game_id),
            _ => None,
        }
    }
}

/// Every `type` a client may send, in the order of [`ClientMessage`]'s variants.
pub const CLIENT_MESSAGE_TYPES: &[&str] = &[
    "auth",
    "ping",
    "create_board",
    "join_board",
    "open",
    "close",
    "move",
    "promote",
    "resign",
    "offer_draw",
    "accept_draw",
    "decline_draw",
    "abort",
    "claim_victory",
    "play_computer",
    "undo",
    "seek",
    "cancel_seek",
    "status",
    "offer_rematch",
    "accept_rematch",
    "decline_rematch",
];

/// The `id` and `game_id` of a frame that could not be understood as a message, when it is
/// a JSON object carrying them as short strings: an error about the frame echoes them, so
/// that a client can tell which message was refused.
pub fn frame_tags(raw: &str) -> (Option<String>, Option<String>) {
    #[derive(Deserialize)]
    struct Tags {
        #[serde(default)]
        id: Option<serde_json::Value>,
        #[serde(default)]
        game_id: Option<serde_json::Value>,
    }
    let short = |v: Option<serde_json::Value>| match v {
        Some(serde_json::Value::String(s)) if s.len() <= MAX_ID_BYTES => Some(s),
        _ => None,
    };
    match serde_json::from_str::<Tags>(raw) {
        Ok(t) => (short(t.id), short(t.game_id)),
        Err(_) => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_type_is_listed() {
        // Each listed type parses as that message when its fields are present, so the
        // dispatcher's "unknown type" and "bad field" answers follow the enum.
        let samples = [
            r#"{"type":"auth","token":"t"}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"create_board","variant":"standard","color":"white"}"#,
            r#"{"type":"join_board","code":"K"}"#,
            r#"{"type":"open","game_id":"g"}"#,
            r#"{"type":"close","game_id":"g"}"#,
            r#"{"type":"move","game_id":"g","uci":"e2e4"}"#,
            r#"{"type":"promote","game_id":"g","role":"q"}"#,
            r#"{"type":"resign","game_id":"g"}"#,
            r#"{"type":"offer_draw","game_id":"g"}"#,
            r#"{"type":"accept_draw","game_id":"g"}"#,
            r#"{"type":"decline_draw","game_id":"g"}"#,
            r#"{"type":"abort","game_id":"g"}"#,
            r#"{"type":"claim_victory","game_id":"g"}"#,
            r#"{"type":"play_computer","variant":"atomic","level":"easy","color":"random"}"#,
            r#"{"type":"undo","game_id":"g"}"#,
            r#"{"type":"seek","pools":[{"variant":"hidden","clock":{"minutes":3,"increment":2}}]}"#,
            r#"{"type":"cancel_seek"}"#,
            r#"{"type":"status"}"#,
            r#"{"type":"offer_rematch","game_id":"g"}"#,
            r#"{"type":"accept_rematch","game_id":"g"}"#,
            r#"{"type":"decline_rematch","game_id":"g"}"#,
        ];
        assert_eq!(samples.len(), CLIENT_MESSAGE_TYPES.len());
        for (sample, ty) in samples.iter().zip(CLIENT_MESSAGE_TYPES) {
            let m: ClientMessage = serde_json::from_str(sample).expect(sample);
            let back = serde_json::to_value(&m).expect("serialises");
            assert_eq!(back["type"], *ty);
            assert_eq!(m.kind(), *ty);
        }
    }

    #[test]
    fn tags_of_unreadable_messages_are_found_when_present() {
        assert_eq!(
            frame_tags(r#"{"type":"teleport","id":"x7","game_id":"g1","junk":[1,{"a":2}]}"#),
            (Some("x7".into()), Some("g1".into()))
        );
        assert_eq!(frame_tags(r#"{"type":"move","id":5}"#), (None, None));
        assert_eq!(frame_tags("{not json"), (None, None));
        assert_eq!(
            frame_tags(&format!(r#"{{"id":"{}"}}"#, "x".repeat(65))),
            (None, None)
        );
    }

    #[test]
    fn parses_the_documented_examples() {
        let m: ClientMessage = serde_json::from_str(
            r#"{"type":"move","id":"m1","game_id":"g","uci":"e2e4","expected_version":3}"#,
        )
        .expect("valid");
        assert_eq!(m.id(), Some("m1"));
        assert_eq!(m.game_id(), Some("g"));
        let m: ClientMessage =
            serde_json::from_str(r#"{"type":"auth","token":"t","id":"a1"}"#).expect("valid");
        assert_eq!(m.id(), Some("a1"));
        let m: ClientMessage = serde_json::from_str(
            r#"{"type":"create_board","variant":"hidden","color":"random","clock":{"minutes":5,"increment":3}}"#,
        )
        .expect("valid");
        assert!(matches!(m, ClientMessage::CreateBoard { rated: false, .. }));
        assert!(serde_json::from_str::<ClientMessage>(r#"{"type":"move","game_id":"g"}"#).is_err());
        assert!(serde_json::from_str::<ClientMessage>(r#"{"type":"fly"}"#).is_err());
        assert!(
            serde_json::from_str::<ClientMessage>(r#"{"type":"ping","extra":1}"#).is_err(),
            "unknown fields are refused"
        );
    }
}
