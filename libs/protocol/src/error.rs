//! Error codes a client can receive, in `error` messages and HTTP error bodies.

use serde::{Deserialize, Serialize};

/// What went wrong, as a stable snake_case code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The frame is not JSON, or not an object with a `type`.
    BadJson,
    /// The `type` is not one this protocol knows.
    UnknownType,
    /// A field is missing or has a bad value.
    BadField,
    /// The frame is larger than the protocol allows.
    TooLarge,
    /// Too many messages: this one was dropped.
    RateLimited,
    /// Send `auth` first.
    Unauthenticated,
    /// The connection is already authenticated.
    AlreadyAuthenticated,
    /// No token.
    TokenMissing,
    /// The token is not a well-formed JWT.
    TokenMalformed,
    /// The token has expired.
    TokenExpired,
    /// The token's signature or issuer is wrong (forged or foreign).
    TokenInvalid,
    /// No such game.
    GameNotFound,
    /// No such player.
    PlayerNotFound,
    /// The player does not sit in this game.
    NotInGame,
    /// It is the other side's turn.
    NotYourTurn,
    /// The move is not legal.
    IllegalMove,
    /// The move is not written in UCI.
    BadMove,
    /// A pawn reaching the last rank needs a promotion piece.
    PromotionRequired,
    /// A promotion choice is awaited first.
    PromotionPending,
    /// No promotion choice is awaited.
    NoPromotionPending,
    /// The game is over.
    GameOver,
    /// The game has not started (waiting for its second player).
    GameNotStarted,
    /// The action named an expected version that is no longer current.
    StaleVersion,
    /// There is no draw offer to accept or decline (or it is your own).
    NoDrawOffer,
    /// You already offered a draw.
    DrawAlreadyOffered,
    /// A game may be aborted only before both sides have moved.
    CannotAbort,
    /// A win by absence can be claimed only in a game without clock, against an opponent
    /// disconnected longer than the limit.
    CannotClaim,
    /// No board has that code.
    BoardNotFound,
    /// The board already has two players.
    BoardFull,
    /// The board's game is over.
    BoardFinished,
    /// You cannot join your own board.
    OwnBoard,
    /// Guests play casual games only.
    GuestRated,
    /// The time control is out of range.
    BadTimeControl,
    /// The username is taken (case-insensitively).
    UsernameTaken,
    /// The username is not 3–20 letters, digits, `_` or `-`.
    BadUsername,
    /// The password is too weak.
    WeakPassword,
    /// Wrong username or password.
    BadCredentials,
    /// HTTP: no such endpoint.
    NotFound,
    /// HTTP: the endpoint does not answer this method (the `Allow` header lists those it
    /// does).
    MethodNotAllowed,
    /// Too many of the player's boards are waiting for an opponent: abort one, or wait
    /// until one starts.
    TooManyBoards,
    /// The connection follows as many games as it may (32): close one before opening,
    /// creating, joining or starting another.
    TooManyGames,
    /// A service behind the gateway is unavailable; try again.
    Unavailable,
    /// Something failed on the server; it has been logged.
    Internal,
    /// Undo is not possible here: only in a standard or atomic game against the computer,
    /// by its player, on their turn, with a move of theirs and the computer's reply to
    /// take back.
    UndoNotAllowed,
    /// Matchmaking: you were just paired and your game is being created; the `matched`
    /// notice follows.
    AlreadyMatched,
    /// Rematch: the game is still being played.
    GameNotOver,
    /// Rematch: not for this game (one with a computer player, or a board that never
    /// started).
    RematchUnavailable,
    /// Rematch: you already offered one for this game.
    RematchAlreadyOffered,
    /// Rematch: no offer of the opponent's stands for this game (none was made, or it was
    /// declined, withdrawn, accepted or lapsed).
    NoRematchOffer,
    /// HTTP: for registered players only (a guest's preferences stay in its browser).
    RegisteredOnly,
    /// HTTP: for moderators only (the token carries no moderator role).
    Forbidden,
    /// Fair play: no report has that id.
    ReportNotFound,
    /// Fair play: the report was decided already (dismissed, or its player marked).
    AlreadyDecided,
    /// The player was marked by fair play's moderators: casual games only.
    FairPlayRestricted,
}

impl ErrorCode {
    /// The snake_case code.
    pub fn as_str(self) -> &'static str {
        macro_rules! codes {
            ($($v:ident => $s:literal),* $(,)?) => {
                match self { $(ErrorCode::$v => $s),* }
            };
        }
        codes! {
            BadJson => "bad_json", UnknownType => "unknown_type", BadField => "bad_field",
            TooLarge => "too_large", RateLimited => "rate_limited",
            Unauthenticated => "unauthenticated", AlreadyAuthenticated => "already_authenticated",
            TokenMissing => "token_missing", TokenMalformed => "token_malformed",
            TokenExpired => "token_expired", TokenInvalid => "token_invalid",
            GameNotFound => "game_not_found", PlayerNotFound => "player_not_found", NotInGame => "not_in_game",
            NotYourTurn => "not_your_turn", IllegalMove => "illegal_move", BadMove => "bad_move",
            PromotionRequired => "promotion_required", PromotionPending => "promotion_pending",
            NoPromotionPending => "no_promotion_pending", GameOver => "game_over",
            GameNotStarted => "game_not_started", StaleVersion => "stale_version",
            NoDrawOffer => "no_draw_offer", DrawAlreadyOffered => "draw_already_offered",
            CannotAbort => "cannot_abort", CannotClaim => "cannot_claim",
            BoardNotFound => "board_not_found", BoardFull => "board_full",
            BoardFinished => "board_finished", OwnBoard => "own_board", GuestRated => "guest_rated",
            BadTimeControl => "bad_time_control", UsernameTaken => "username_taken",
            BadUsername => "bad_username", WeakPassword => "weak_password",
            BadCredentials => "bad_credentials", NotFound => "not_found",
            MethodNotAllowed => "method_not_allowed", TooManyBoards => "too_many_boards",
            TooManyGames => "too_many_games",
            Unavailable => "unavailable", Internal => "internal",
            UndoNotAllowed => "undo_not_allowed",
            AlreadyMatched => "already_matched",
            GameNotOver => "game_not_over", RematchUnavailable => "rematch_unavailable",
            RematchAlreadyOffered => "rematch_already_offered",
            NoRematchOffer => "no_rematch_offer",
            RegisteredOnly => "registered_only",
            Forbidden => "forbidden", ReportNotFound => "report_not_found",
            AlreadyDecided => "already_decided", FairPlayRestricted => "fair_play_restricted",
        }
    }

    /// Parses a snake_case code.
    pub fn parse(s: &str) -> Option<ErrorCode> {
        serde_json::from_value(serde_json::Value::String(s.to_owned())).ok()
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_their_serde_names() {
        for code in [
            ErrorCode::BadJson,
            ErrorCode::TokenExpired,
            ErrorCode::StaleVersion,
            ErrorCode::MethodNotAllowed,
            ErrorCode::Internal,
            ErrorCode::UndoNotAllowed,
            ErrorCode::GameNotOver,
            ErrorCode::RematchUnavailable,
            ErrorCode::RematchAlreadyOffered,
            ErrorCode::NoRematchOffer,
            ErrorCode::TooManyGames,
            ErrorCode::RegisteredOnly,
            ErrorCode::Forbidden,
            ErrorCode::ReportNotFound,
            ErrorCode::AlreadyDecided,
            ErrorCode::FairPlayRestricted,
        ] {
            let json = serde_json::to_string(&code).expect("serialises");
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
        }
        assert_eq!(ErrorCode::parse("nope"), None);
    }
}
