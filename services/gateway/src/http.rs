//! The HTTP API (accounts) and the WebSocket upgrade. Errors are one JSON shape,
//! `{"error":{"code":…,"message":…}}`, mapped from [`ApiError`] here and nowhere else.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{State, WebSocketUpgrade};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use frontier_protocol::{ErrorCode, PlayerInfo};
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::accounts::{Account, AccountError, Accounts};

/// An HTTP error: a status and a client error code.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: ErrorCode,
    message: String,
}

impl ApiError {
    /// An error with this status and code.
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }
}

impl From<AccountError> for ApiError {
    fn from(e: AccountError) -> Self {
        let message = e.to_string();
        match e {
            AccountError::UsernameTaken => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::UsernameTaken, message)
            }
            AccountError::BadUsername(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::BadUsername,
                message,
            ),
            AccountError::WeakPassword(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::WeakPassword,
                message,
            ),
            AccountError::BadCredentials => {
                ApiError::new(StatusCode::UNAUTHORIZED, ErrorCode::BadCredentials, message)
            }
            AccountError::Storage(cause) => {
                tracing::error!(error = %cause, "account storage failed");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::Unavailable,
                    "accounts are unavailable; try again",
                )
            }
        }
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize)]
struct ErrorDetail<'a> {
    code: ErrorCode,
    message: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: &self.message,
            },
        };
        (self.status, axum::Json(body)).into_response()
    }
}

/// A token and who it is for.
#[derive(Debug, Serialize, Deserialize)]
pub struct TokenResponse {
    /// The JWT, for the WebSocket's `auth` message.
    pub token: String,
    /// The player.
    pub player: PlayerInfo,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Credentials {
    username: String,
    password: String,
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        use serde_json::error::Category;
        match e.classify() {
            Category::Data => {
                ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::BadField, e.to_string())
            }
            _ => ApiError::new(
                StatusCode::BAD_REQUEST,
                ErrorCode::BadJson,
                "the body is not valid JSON",
            ),
        }
    })
}

fn token_for<A: Accounts>(
    state: &AppState<A>,
    account: &Account,
) -> Result<TokenResponse, ApiError> {
    let token = state
        .jwt
        .issue(account.id, &account.name, account.guest)
        .map_err(|_| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                ErrorCode::Internal,
                "could not sign a token",
            )
        })?;
    Ok(TokenResponse {
        token,
        player: PlayerInfo {
            id: account.id.to_string(),
            name: account.name.clone(),
            guest: account.guest,
            bot: false,
        },
    })
}

async fn guest<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
) -> Result<impl IntoResponse, ApiError> {
    let account = state.accounts.create_guest().await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(token_for(&state, &account)?),
    ))
}

async fn register<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    let c: Credentials = parse(&body)?;
    let account = state.accounts.register(&c.username, &c.password).await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(token_for(&state, &account)?),
    ))
}

async fn login<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    let c: Credentials = parse(&body)?;
    let account = state.accounts.login(&c.username, &c.password).await?;
    Ok(axum::Json(token_for(&state, &account)?))
}

async fn websocket<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    upgrade: WebSocketUpgrade,
) -> Response {
    upgrade
        // A small read buffer: the default 128 KiB is zero-filled per read and costs memory
        // per idle socket; client frames are at most 2 KiB.
        .read_buffer_size(4096)
        .write_buffer_size(4096)
        // Frames above the protocol limit but below this get a `too_large` error; above
        // this the connection closes with 1009.
        .max_message_size(64 * 1024)
        .max_frame_size(64 * 1024)
        .on_upgrade(move |socket| crate::ws::serve(socket, state))
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        ErrorCode::BadField,
        "no such endpoint",
    )
}

/// The routes.
pub fn router<A: Accounts>(state: Arc<AppState<A>>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/api/guest", post(guest::<A>))
        .route("/api/register", post(register::<A>))
        .route("/api/login", post(login::<A>))
        .route("/ws/v1", get(websocket::<A>))
        .route("/api/players/{id}", get(crate::records::player::<A>))
        .route(
            "/api/players/{id}/games",
            get(crate::records::player_games::<A>),
        )
        .route(
            "/api/players/{id}/rating-history",
            get(crate::records::rating_history::<A>),
        )
        .route("/api/leaderboard", get(crate::records::leaderboard::<A>))
        .route("/api/games/{id}", get(crate::records::game::<A>))
        .route("/api/games/{id}/pgn", get(crate::records::pgn::<A>))
        .fallback(not_found)
        .layer(axum::extract::DefaultBodyLimit::max(4096))
        .with_state(state)
}
