//! A registered player's preferences of the web client — board look, piece set, 2D or 3D
//! board, sounds muted — kept with the account so that they follow the player from browser
//! to browser: `GET /api/me/preferences` and `PUT /api/me/preferences` (docs/protocol.md,
//! HTTP API), for the player named by the `Authorization: Bearer` token. Guests keep theirs
//! in the browser only (`403 registered_only`). What is stored is the validated object,
//! re-serialised: known fields and known names only, at most [`MAX_BODY`] bytes.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use frontier_platform::{AuthError, Claims};
use frontier_protocol::ErrorCode;
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::accounts::Accounts;
use crate::http::{ApiError, parse};
use crate::ws::auth_code;

/// The largest preferences body accepted (a whole object is under 100 bytes).
pub const MAX_BODY: usize = 1024;

/// The web client's board looks (`web/app/js/board.js`, `BOARD_LOOKS`).
pub const BOARD_LOOKS: &[&str] = &[
    "green",
    "brown",
    "blue",
    "felt",
    "marble",
    "sandstone",
    "glacier",
    "amber",
    "tidepool",
    "chamber",
];

/// The web client's piece sets (`web/app/js/pieces.js`, `PIECE_SETS`).
pub const PIECE_SETS: &[&str] = &[
    "frontier",
    "geometric",
    "letters",
    "emblem",
    "outline",
    "pixel",
    "relief",
];

/// The board's two views.
pub const VIEWS: &[&str] = &["2d", "3d"];

/// A player's preferences; each field absent until chosen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Preferences {
    /// The board look (one of [`BOARD_LOOKS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<String>,
    /// The piece set (one of [`PIECE_SETS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pieces: Option<String>,
    /// `2d` or `3d`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
    /// Sounds muted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub muted: Option<bool>,
}

impl Preferences {
    /// Checks every field's value: the message names the first one refused.
    pub fn check(&self) -> Result<(), &'static str> {
        let known = |value: &Option<String>, names: &[&str]| {
            value.as_deref().is_none_or(|v| names.contains(&v))
        };
        if !known(&self.board, BOARD_LOOKS) {
            return Err("board: not a board look of the client");
        }
        if !known(&self.pieces, PIECE_SETS) {
            return Err("pieces: not a piece set of the client");
        }
        if !known(&self.view, VIEWS) {
            return Err("view: \"2d\" or \"3d\"");
        }
        Ok(())
    }
}

/// The token of an `Authorization: Bearer …` header.
pub(crate) fn bearer(headers: &HeaderMap) -> Result<&str, AuthError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or(AuthError::Missing)?;
    let text = value.to_str().map_err(|_| AuthError::Malformed)?;
    let (scheme, token) = text.split_once(' ').ok_or(AuthError::Malformed)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Malformed);
    }
    Ok(token.trim())
}

/// The registered player the request's token names (still an account).
async fn registered<A: Accounts>(
    state: &AppState<A>,
    headers: &HeaderMap,
) -> Result<Claims, ApiError> {
    let refused =
        |e: AuthError| ApiError::new(StatusCode::UNAUTHORIZED, auth_code(&e), e.to_string());
    let claims = state
        .jwt
        .verify(bearer(headers).map_err(refused)?)
        .map_err(refused)?;
    if claims.guest {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::RegisteredOnly,
            "a guest's preferences stay in its browser",
        ));
    }
    match state.accounts.find(claims.sub).await? {
        Some(account) if !account.guest => Ok(claims),
        _ => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            ErrorCode::TokenInvalid,
            "the token's player has no account",
        )),
    }
}

/// `GET /api/me/preferences`: the stored preferences (`{}` before any).
pub async fn get<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    headers: HeaderMap,
) -> Result<Json<Preferences>, ApiError> {
    let claims = registered(&state, &headers).await?;
    let stored = state.accounts.preferences(claims.sub).await?;
    // Only what this version knows is handed back (a field or name since removed is not).
    let preferences = stored
        .and_then(|json| serde_json::from_str::<Preferences>(&json).ok())
        .filter(|p| p.check().is_ok())
        .unwrap_or_default();
    Ok(Json(preferences))
}

/// `PUT /api/me/preferences`: replaces the stored preferences with the body's (a JSON
/// object of at most [`MAX_BODY`] bytes, known fields and names only); answers them.
pub async fn put<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Preferences>, ApiError> {
    let claims = registered(&state, &headers).await?;
    if body.len() > MAX_BODY {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::TooLarge,
            "preferences are at most 1 KiB",
        ));
    }
    let value: serde_json::Value = parse(&body)?;
    if !value.is_object() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::BadField,
            "preferences are a JSON object",
        ));
    }
    let preferences: Preferences = serde_json::from_value(value)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::BadField, e.to_string()))?;
    preferences
        .check()
        .map_err(|m| ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::BadField, m))?;
    let json = serde_json::to_string(&preferences).map_err(|_| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            "could not store the preferences",
        )
    })?;
    state.accounts.set_preferences(claims.sub, &json).await?;
    Ok(Json(preferences))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_known_names_pass() {
        let mut p = Preferences {
            board: Some("marble".into()),
            pieces: Some("pixel".into()),
            view: Some("3d".into()),
            muted: Some(true),
        };
        assert_eq!(p.check(), Ok(()));
        assert_eq!(Preferences::default().check(), Ok(()));
        p.view = Some("4d".into());
        assert!(p.check().is_err());
        p.view = None;
        p.board = Some("<script>".into());
        assert!(p.check().is_err());
        assert!(serde_json::from_str::<Preferences>(r#"{"colour":"red"}"#).is_err());
    }
}
