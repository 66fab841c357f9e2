//! The HTTP API (accounts) and the WebSocket upgrade. Errors are one JSON shape,
//! `{"error":{"code":…,"message":…}}` (plus `retry_after_ms` and a `Retry-After` header
//! when a limit refused), mapped from [`ApiError`] here and nowhere else.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State, WebSocketUpgrade};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use frontier_protocol::{ErrorCode, PlayerInfo};
use serde::{Deserialize, Serialize};

use crate::AppState;
use crate::accounts::{Account, AccountError, Accounts};
use crate::limits::{Refused, Window, address_subject, client_ip, count_refusal};

/// An HTTP error: a status and a client error code.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: ErrorCode,
    message: String,
    retry_after: Option<Duration>,
}

impl ApiError {
    /// An error with this status and code.
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// The same error, telling the client when to try again.
    pub fn retry_after(mut self, after: Duration) -> ApiError {
        self.retry_after = Some(after);
        self
    }
}

/// How long a client is asked to wait when password hashing is saturated.
pub const HASH_BUSY_RETRY: Duration = Duration::from_secs(1);

impl From<Refused> for ApiError {
    fn from(r: Refused) -> Self {
        let message = match r.reason {
            "guest_rate" => "too many guests from your address; try again later",
            "register_rate" => "too many registrations from your address; try again later",
            "login_rate" => "too many logins from your address; try again later",
            "login_failures" => "too many failed logins for this username; try again later",
            _ => "too many requests; try again later",
        };
        let error = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::RateLimited,
            message,
        );
        match r.retry_after {
            Some(after) => error.retry_after(after),
            None => error,
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
            AccountError::Busy => {
                count_refusal("hash_busy");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::Unavailable,
                    message,
                )
                .retry_after(HASH_BUSY_RETRY)
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
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<u64>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry_ms = self
            .retry_after
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1));
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: &self.message,
                retry_after_ms: retry_ms,
            },
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(ms) = retry_ms {
            let headers = response.headers_mut();
            // Whole seconds, rounded up (the body has the exact figure).
            headers.insert(header::RETRY_AFTER, HeaderValue::from(ms.div_ceil(1000)));
            // A refused client (429, or 503 from saturated hashing) reconnects to try
            // again: a flood on kept-alive connections would otherwise cost only the
            // parsing of each request.
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        response
    }
}

/// The client's address as the per-address limits key it (see [`client_ip`]).
fn client_subject<A: Accounts>(
    state: &AppState<A>,
    peer: SocketAddr,
    headers: &HeaderMap,
) -> String {
    address_subject(client_ip(peer, headers, &state.limits.args.trusted_proxies))
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

/// Reads a JSON body: `400 bad_json` if it is not JSON, `400 bad_field` if it does not fit.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
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
        .issue_with_role(account.id, &account.name, account.guest, account.moderator)
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
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    let client = client_subject(&state, peer, &headers);
    state.limits.check(Window::Guest, &client).await?;
    let account = state.accounts.create_guest().await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(token_for(&state, &account)?),
    ))
}

async fn register<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    if state.accounts.hashing_saturated() {
        return Err(AccountError::Busy.into());
    }
    let client = client_subject(&state, peer, &headers);
    state.limits.check(Window::Register, &client).await?;
    let c: Credentials = parse(&body)?;
    let account = state.accounts.register(&c.username, &c.password).await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(token_for(&state, &account)?),
    ))
}

/// Usernames longer than this cannot exist; their logins are refused without a look-up.
const MAX_LOGIN_NAME: usize = 64;

async fn login<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<impl IntoResponse, ApiError> {
    // Saturated hashing refuses before any look-up: a flood from many addresses costs
    // neither Redis nor Postgres a round trip per attempt.
    if state.accounts.hashing_saturated() {
        return Err(AccountError::Busy.into());
    }
    let client = client_subject(&state, peer, &headers);
    state.limits.check(Window::Login, &client).await?;
    let c: Credentials = parse(&body)?;
    let known_length = c.username.len() <= MAX_LOGIN_NAME;
    if known_length {
        state.limits.login_attempt(&c.username).await?;
    }
    match state.accounts.login(&c.username, &c.password).await {
        Ok(account) => {
            state.limits.login_succeeded(&c.username).await;
            Ok(axum::Json(token_for(&state, &account)?))
        }
        Err(AccountError::BadCredentials) => {
            if known_length {
                state.limits.login_failed(&c.username).await;
            }
            Err(AccountError::BadCredentials.into())
        }
        Err(e) => Err(e.into()),
    }
}

async fn websocket<A: Accounts>(
    State(state): State<Arc<AppState<A>>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    let client = client_subject(&state, peer, &headers);
    upgrade
        // A small read buffer: it is allocated and zero-filled for every socket, idle or not
        // (the default 128 KiB). Client frames are at most 2 KiB and a move's about 100
        // bytes; a larger frame is read in several reads. 1 KiB rather than 4 KiB took 3 KiB
        // off each idle connection (docs/benchmarks.md).
        .read_buffer_size(1024)
        .write_buffer_size(4096)
        // Frames above the protocol limit but below 64 KiB get a `too_large` error; above
        // it the connection closes with 1009. A single frame of up to 1 MiB is read whole
        // first, so the close is clean (nothing unread when the socket closes); a larger
        // frame is refused from its header, and its unread rest may make the close a reset.
        .max_message_size(64 * 1024)
        .max_frame_size(1024 * 1024)
        .on_upgrade(move |socket| {
            // Tracked, so that shutdown waits until every socket was closed with 1001.
            let tasks = state.connections.clone();
            tasks.track_future(crate::ws::serve(socket, state, client))
        })
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        ErrorCode::NotFound,
        "no such endpoint",
    )
}

/// The largest error body of the framework that is read back to become a JSON message.
const MAX_REJECTION_BODY: usize = 1024;

/// Gives every error response the documented JSON shape. Handlers answer with [`ApiError`]
/// already; what the framework answers by itself (a body over the limit, a method a route
/// does not have, a query or path it cannot parse, a missing or wrong content type) is
/// plain text or empty, and is rewritten here with its status kept.
async fn json_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_REJECTION_BODY)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let (code, fallback) = match status {
        StatusCode::PAYLOAD_TOO_LARGE => (ErrorCode::TooLarge, "request bodies are at most 4 KiB"),
        StatusCode::METHOD_NOT_ALLOWED => (ErrorCode::MethodNotAllowed, "method not allowed here"),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => (ErrorCode::BadField, "send application/json"),
        s if s.is_server_error() => (ErrorCode::Internal, "server error"),
        _ => (ErrorCode::BadField, "bad request"),
    };
    let message = if text.is_empty() || status.is_server_error() {
        fallback.to_owned()
    } else {
        text
    };
    let mut rewritten = ApiError::new(status, code, message).into_response();
    // Keep what the framework said besides the body (e.g. `Allow` on a 405).
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            rewritten.headers_mut().insert(name.clone(), value.clone());
        }
    }
    rewritten
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
        .route(
            "/api/me/preferences",
            get(crate::preferences::get::<A>).put(crate::preferences::put::<A>),
        )
        .route(
            "/api/moderation/reports",
            get(crate::moderation::list_reports::<A>),
        )
        .route(
            "/api/moderation/reports/{id}",
            get(crate::moderation::get_report::<A>),
        )
        .route(
            "/api/moderation/reports/{id}/decision",
            post(crate::moderation::decide::<A>),
        )
        .route(
            "/api/moderation/players/{id}/unmark",
            post(crate::moderation::unmark::<A>),
        )
        .route(
            "/api/moderation/log",
            get(crate::moderation::audit_log::<A>),
        )
        .route("/", get(crate::web::page))
        .route("/join/{code}", get(crate::web::join_page))
        .route("/app/{*path}", get(crate::web::file))
        .fallback(not_found)
        .layer(axum::extract::DefaultBodyLimit::max(4096))
        .layer(axum::middleware::map_response(json_errors))
        .with_state(state)
}
