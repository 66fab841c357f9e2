//! One WebSocket connection: authentication, rate limiting, commands forwarded to
//! game-session, and the games the client follows relayed from NATS in version order,
//! gaps filled from game-session's log.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use bytes::Bytes;
use frontier_platform::{AuthError, Claims, GameId};
use frontier_proto::games::v1 as games;
use frontier_proto::gamesession::v1 as pb;
use frontier_proto::matchmaking::v1 as mm;
use frontier_protocol::{
    BotLevel, CLIENT_MESSAGE_TYPES, ClientMessage, ClockSpec, ColorChoiceWire, ErrorCode,
    MAX_CLIENT_FRAME_BYTES, MAX_ID_BYTES, Matched, PROTOCOL_VERSION, PlayerInfo, PoolSpec,
    SeekStanding, ServerMessage, frame_tags, to_json,
};
use futures_util::{SinkExt as _, StreamExt as _};
use prost::Message as _;
use tokio::sync::{broadcast, mpsc};

use crate::AppState;
use crate::accounts::Accounts;
use crate::limits::{Refused, Reservation, Slot, Window, count_refusal};
use crate::matchmaking::{
    MAX_POOLS, MatchmakingLink, matched_from_proto, pool_from_key, pool_to_proto,
};
use crate::notices::{Following, Notice};
use crate::sessions::{Refusal, seat_name};

/// Close codes the gateway uses besides the standard ones.
pub mod close {
    /// No `auth` within the allowed time.
    pub const AUTH_TIMEOUT: u16 = 4001;
    /// The client reads too slowly: its outgoing queue overflowed.
    pub const TOO_SLOW: u16 = 4008;
    /// Too many open connections from the client's address or for its player.
    pub const TOO_MANY_CONNECTIONS: u16 = 4029;
}

/// Most games one connection may follow at once.
pub const MAX_FOLLOWS: usize = 32;

/// A token bucket: `burst` messages at once, refilled at `per_second`.
#[derive(Debug)]
pub struct RateLimiter {
    tokens: f64,
    burst: f64,
    per_second: f64,
    last: Instant,
}

impl RateLimiter {
    /// A full bucket.
    pub fn new(per_second: f64, burst: u32) -> RateLimiter {
        RateLimiter {
            tokens: f64::from(burst),
            burst: f64::from(burst),
            per_second,
            last: Instant::now(),
        }
    }

    /// Takes a token at `now`, if there is one.
    pub fn allow(&mut self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

struct Connection<A: Accounts> {
    state: Arc<AppState<A>>,
    out: mpsc::Sender<Message>,
    player: Option<Arc<Claims>>,
    follows: HashMap<GameId, Follow>,
    limiter: RateLimiter,
    /// This connection's id in the connection-slot sets.
    conn_id: String,
    /// The connection slots it holds (its address's; its player's once authenticated).
    slots: Vec<(Slot, String)>,
    /// The player's notices (`matched`, rematch frames; see [`crate::notices`]), until
    /// the connection's loop takes them.
    player_notices: Option<Following>,
}

/// The player's next notice, handed back with the hold on them to wait for the one after;
/// `None` once the channel closed. A receiver that fell behind skips what it missed
/// (notices are at most once).
async fn next_player_notice(mut following: Following) -> Option<(Notice, Following)> {
    loop {
        match following.rx.recv().await {
            Ok(notice) => return Some((notice, following)),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "player notices were missed");
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
}

/// A connection's wait for its player's next notice ([`next_player_notice`]).
type NoticeWait = std::pin::Pin<Box<dyn Future<Output = Option<(Notice, Following)>> + Send>>;

fn text(s: String) -> Message {
    Message::Text(Utf8Bytes::from(s))
}

/// Queues a frame for the client; false if the client is too slow (queue full) or gone.
fn push(out: &mpsc::Sender<Message>, message: Message) -> bool {
    out.try_send(message).is_ok()
}

/// Queues a frame, or — the client reads too slowly — closes the connection with
/// [`close::TOO_SLOW`]; false in that case (or if the connection is gone).
fn deliver(out: &mpsc::Sender<Message>, message: Message) -> bool {
    if push(out, message) {
        return true;
    }
    let _ = out.try_send(Message::Close(Some(CloseFrame {
        code: close::TOO_SLOW,
        reason: Utf8Bytes::from_static("too slow reading"),
    })));
    false
}

fn error_message(
    id: Option<&str>,
    game_id: Option<&str>,
    code: ErrorCode,
    message: impl Into<String>,
) -> Message {
    error_frame(id, game_id, code, message, None)
}

fn error_frame(
    id: Option<&str>,
    game_id: Option<&str>,
    code: ErrorCode,
    message: impl Into<String>,
    retry_after_ms: Option<u64>,
) -> Message {
    metrics::counter!("frontier_gateway_ws_errors_total", "code" => code.as_str()).increment(1);
    text(to_json(&ServerMessage::Error {
        id: id.map(str::to_owned),
        game_id: game_id.map(str::to_owned),
        code,
        message: message.into(),
        retry_after_ms,
    }))
}

/// A `rate_limited` error frame saying when to retry.
fn limited_message(id: Option<&str>, refused: &Refused, message: &str) -> Message {
    error_frame(
        id,
        None,
        ErrorCode::RateLimited,
        message,
        refused.retry_after_ms(),
    )
}

fn color_choice(color: ColorChoiceWire) -> pb::ColorChoice {
    match color {
        ColorChoiceWire::White => pb::ColorChoice::White,
        ColorChoiceWire::Black => pb::ColorChoice::Black,
        ColorChoiceWire::Random => pb::ColorChoice::Random,
    }
}

/// The error code of a refused token (the WebSocket's `auth` and the HTTP API alike).
pub(crate) fn auth_code(e: &AuthError) -> ErrorCode {
    match e {
        AuthError::Missing => ErrorCode::TokenMissing,
        AuthError::Malformed => ErrorCode::TokenMalformed,
        AuthError::Expired => ErrorCode::TokenExpired,
        AuthError::BadSignature | AuthError::WrongIssuer => ErrorCode::TokenInvalid,
    }
}

/// Serves one WebSocket from the client address `client` (as the limits key it) until it
/// closes or the gateway shuts down.
pub async fn serve<A: Accounts>(socket: WebSocket, state: Arc<AppState<A>>, client: String) {
    metrics::gauge!("frontier_gateway_ws_connections").increment(1.0);
    let _open = OpenConnection;
    let (mut sink, mut stream) = socket.split();
    let (out, mut out_rx) = mpsc::channel::<Message>(state.settings.outbound_queue);
    let writer = tokio::spawn(async move {
        // Every frame already queued goes out in one write: an ack and the mover's own
        // event, or several relayed frames, cost one system call instead of one each.
        'frames: while let Some(message) = out_rx.recv().await {
            let mut closing = matches!(message, Message::Close(_));
            if sink.feed(message).await.is_err() {
                break;
            }
            while !closing && let Ok(more) = out_rx.try_recv() {
                closing = matches!(more, Message::Close(_));
                if sink.feed(more).await.is_err() {
                    break 'frames;
                }
            }
            if sink.flush().await.is_err() || closing {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let mut conn = Connection {
        limiter: RateLimiter::new(state.settings.rate_per_second, state.settings.rate_burst),
        state: state.clone(),
        out,
        player: None,
        follows: HashMap::new(),
        conn_id: uuid::Uuid::new_v4().to_string(),
        slots: Vec::new(),
        player_notices: None,
    };
    if let Err(refused) = state
        .limits
        .acquire(Slot::Address, &client, &conn.conn_id)
        .await
    {
        conn.push(limited_message(
            None,
            &refused,
            "too many connections from your address",
        ));
        conn.close(close::TOO_MANY_CONNECTIONS, "too many connections");
        drop(conn);
        let _ = writer.await;
        return;
    }
    conn.slots.push((Slot::Address, client));
    conn.send(&ServerMessage::Welcome {
        protocol: PROTOCOL_VERSION,
    });
    let auth_deadline = tokio::time::sleep(state.settings.auth_timeout);
    tokio::pin!(auth_deadline);
    // The waits for the shutdown and for the player's next notice are kept across the
    // loop's turns: made anew on every turn, each took and gave back its place among its
    // channel's waiters (a lock each time) for every frame the client sent (issue 29).
    let shutting_down = state.shutdown.clone().wait_owned();
    tokio::pin!(shutting_down);
    let mut notices: Option<NoticeWait> = None;
    // The connection's slots are leases, refreshed with every other connection's by
    // `Limits::keep_leases`.
    loop {
        if conn.out.is_closed() {
            break;
        }
        if notices.is_none()
            && let Some(following) = conn.player_notices.take()
        {
            notices = Some(Box::pin(next_player_notice(following)));
        }
        tokio::select! {
            next = async {
                match notices.as_mut() {
                    Some(wait) => wait.await,
                    None => std::future::pending().await,
                }
            } => match next {
                Some((notice, following)) => {
                    conn.on_notice(notice);
                    notices = Some(Box::pin(next_player_notice(following)));
                }
                // The channel closed: no notice comes any more.
                None => notices = None,
            },
            _ = &mut shutting_down => {
                conn.close(1001, "server shutting down");
                break;
            }
            _ = &mut auth_deadline, if conn.player.is_none() => {
                conn.close(close::AUTH_TIMEOUT, "authenticate within the time allowed");
                break;
            }
            incoming = stream.next() => match incoming {
                None => break,
                Some(Err(e)) => {
                    // A frame over the WebSocket limit: say so with 1009 (the frame was
                    // read whole, so the connection then closes cleanly). Any other error
                    // ends a connection that is already broken.
                    if is_too_big(&e) {
                        conn.close(1009, "frames are at most 64 KiB");
                    }
                    break;
                }
                // Boxed: the connection's task then holds a command's state only while it
                // runs, not for as long as the socket is open.
                Some(Ok(Message::Text(t))) => Box::pin(conn.on_text(t.as_str())).await,
                Some(Ok(Message::Binary(_))) => {
                    conn.push(error_message(None, None, ErrorCode::BadJson, "send JSON in text frames"));
                }
                Some(Ok(Message::Close(_))) => break,
                Some(Ok(_)) => {}
            }
        }
    }
    for (_, follow) in conn.follows.drain() {
        follow.abort();
    }
    state.limits.release(&conn.slots, &conn.conn_id).await;
    if let (Some(claims), Some(link)) = (&conn.player, &state.matchmaking) {
        left(&state, link, &claims.sub.to_string()).await;
    }
    if let Some(claims) = &conn.player {
        tokio::spawn(lapse_after_grace(state.clone(), claims.sub.to_string()));
    }
    drop(conn);
    let _ = writer.await;
}

/// A connection of `player` closed: if it was their last anywhere, their seek lapses after
/// matchmaking's grace period (a reconnect within it keeps the place). When the count
/// cannot be told, the seek is left standing: better a seek that stays than one lost.
async fn left<A: Accounts>(state: &AppState<A>, link: &MatchmakingLink, player: &str) {
    if state.limits.player_connections(player).await != Some(0) {
        return;
    }
    let request = mm::PlayerRequest {
        player_id: player.to_owned(),
    };
    if let Err(status) = link
        .call(|mut c| {
            let request = request.clone();
            async move { c.leave(request).await }
        })
        .await
    {
        tracing::warn!(%status, "matchmaking did not take the player's leaving");
    }
}

/// A connection of `player` closed: if after the rematch grace period none of theirs is
/// open anywhere, their standing rematch offers lapse (`left`). When the count cannot be
/// told (no shared limits), they are left to their TTL.
async fn lapse_after_grace<A: Accounts>(state: Arc<AppState<A>>, player: String) {
    tokio::select! {
        _ = tokio::time::sleep(state.settings.rematch_grace) => {}
        _ = state.shutdown.wait() => return,
    }
    if state.limits.player_connections(&player).await != Some(0) {
        return;
    }
    lapse_rematches(&state, &player, None, pb::LapseReason::Left).await;
}

/// Lapses `player`'s standing rematch offers (of `game`, or all); a failure is logged (the
/// offers then end with their TTL).
async fn lapse_rematches<A: Accounts>(
    state: &AppState<A>,
    player: &str,
    game: Option<&GameId>,
    reason: pb::LapseReason,
) {
    let mut sessions = state.sessions.clone();
    if let Err(status) = sessions
        .lapse_rematches(pb::LapseRematchesRequest {
            player_id: player.to_owned(),
            game_id: game.map(ToString::to_string).unwrap_or_default(),
            reason: reason as i32,
        })
        .await
    {
        tracing::warn!(%status, "rematch offers did not lapse; they end with their TTL");
    }
}

/// Which rematch call a client message makes.
#[derive(Debug, Clone, Copy)]
enum RematchCall {
    Offer,
    Accept,
    Decline,
}

impl<A: Accounts> Connection<A> {
    fn push(&self, message: Message) {
        deliver(&self.out, message);
    }

    fn send(&self, message: &ServerMessage) {
        self.push(text(to_json(message)));
    }

    fn error(
        &self,
        id: Option<&str>,
        game_id: Option<&str>,
        code: ErrorCode,
        message: impl Into<String>,
    ) {
        self.push(error_message(id, game_id, code, message));
    }

    fn close(&self, code: u16, reason: &'static str) {
        let _ = self.out.try_send(Message::Close(Some(CloseFrame {
            code,
            reason: Utf8Bytes::from_static(reason),
        })));
    }

    async fn on_text(&mut self, raw: &str) {
        // Refusals before the message is understood echo its `id` and `game_id` when the
        // frame carries them, so the client can tell which message was dropped.
        if raw.len() > MAX_CLIENT_FRAME_BYTES {
            let (id, game_id) = frame_tags(raw);
            return self.error(
                id.as_deref(),
                game_id.as_deref(),
                ErrorCode::TooLarge,
                format!("frames are at most {MAX_CLIENT_FRAME_BYTES} bytes"),
            );
        }
        if !self.limiter.allow(Instant::now()) {
            count_refusal("ws_messages");
            // One token comes back every 1/rate seconds.
            let retry_ms = (1000.0 / self.state.settings.rate_per_second.max(0.001)).ceil();
            let (id, game_id) = frame_tags(raw);
            return self.push(error_frame(
                id.as_deref(),
                game_id.as_deref(),
                ErrorCode::RateLimited,
                "too many messages; slow down",
                Some(retry_ms as u64),
            ));
        }
        let message: ClientMessage = match serde_json::from_str(raw) {
            Ok(m) => m,
            Err(e) => return self.parse_error(raw, &e),
        };
        message_counter(message.kind()).increment(1);
        let id = message.id().map(str::to_owned);
        let id = id.as_deref();
        if id.is_some_and(|id| id.len() > MAX_ID_BYTES) {
            return self.error(
                None,
                message.game_id(),
                ErrorCode::BadField,
                "id is at most 64 bytes",
            );
        }
        match message {
            ClientMessage::Auth { token, .. } => self.on_auth(id, &token).await,
            ClientMessage::Ping { .. } => self.send(&ServerMessage::Pong {
                id: id.map(str::to_owned),
            }),
            other => {
                let Some(claims) = self.player.clone() else {
                    return self.error(
                        id,
                        other.game_id(),
                        ErrorCode::Unauthenticated,
                        "send auth first",
                    );
                };
                self.on_command(&claims, id, other).await;
            }
        }
    }

    fn parse_error(&self, raw: &str, e: &serde_json::Error) {
        use serde_json::error::Category;
        let (code, message) = match e.classify() {
            Category::Syntax | Category::Eof | Category::Io => {
                (ErrorCode::BadJson, "not valid JSON".to_owned())
            }
            Category::Data => {
                // Tell an unknown `type` from a bad field: look at the type alone.
                let ty = serde_json::from_str::<serde_json::Value>(raw)
                    .ok()
                    .and_then(|v| v.get("type").and_then(|t| t.as_str().map(str::to_owned)));
                match ty {
                    None => (
                        ErrorCode::BadJson,
                        "expected an object with a string `type`".to_owned(),
                    ),
                    Some(t) if !CLIENT_MESSAGE_TYPES.contains(&t.as_str()) => (
                        ErrorCode::UnknownType,
                        format!(
                            "unknown message type `{}`",
                            t.chars().take(32).collect::<String>()
                        ),
                    ),
                    Some(_) => (ErrorCode::BadField, e.to_string()),
                }
            }
        };
        let (id, game_id) = frame_tags(raw);
        self.error(id.as_deref(), game_id.as_deref(), code, message);
    }

    async fn on_auth(&mut self, id: Option<&str>, token: &str) {
        if self.player.is_some() {
            return self.error(
                id,
                None,
                ErrorCode::AlreadyAuthenticated,
                "this connection is already authenticated",
            );
        }
        match self.state.jwt.verify(token) {
            Ok(claims) => {
                let player = claims.sub.to_string();
                if let Err(refused) = self
                    .state
                    .limits
                    .acquire(Slot::Player, &player, &self.conn_id)
                    .await
                {
                    self.push(limited_message(
                        id,
                        &refused,
                        "too many open connections for this player; close one first",
                    ));
                    return self.close(close::TOO_MANY_CONNECTIONS, "too many connections");
                }
                self.slots.push((Slot::Player, player));
                // Follow the player's notices before saying so: nothing sent to the
                // player after `authenticated` is missed.
                self.player_notices = Some(self.state.notices.follow(&claims.sub.to_string()));
                self.send(&ServerMessage::Authenticated {
                    id: id.map(str::to_owned),
                    player: PlayerInfo {
                        id: claims.sub.to_string(),
                        name: claims.name.clone(),
                        guest: claims.guest,
                        bot: false,
                    },
                });
                self.start_notices(&claims.sub.to_string());
                self.player = Some(Arc::new(claims));
            }
            Err(e) => self.error(id, None, auth_code(&e), e.to_string()),
        }
    }

    /// One command of an authenticated client, in its span `gateway.command`: the root of
    /// the command's trace (game-session's handling, the events it publishes and their
    /// relays join it). Fields are the message type and the game id only.
    ///
    /// The span of a game action (a move, most of all) is trace-only
    /// (`telemetry::TRACE_ONLY_TARGET`): without trace export it is not created, and a
    /// failure is logged in a `gateway.command` span made then (`Refusal::logged`). Other
    /// commands, rare, keep it in the logs.
    async fn on_command(&mut self, claims: &Claims, id: Option<&str>, message: ClientMessage) {
        use tracing::Instrument as _;
        // A game action needs neither the player's record nor a client of its own: it
        // goes straight to `act`.
        if message.is_game_action() {
            let span = tracing::info_span!(
                target: frontier_platform::telemetry::TRACE_ONLY_TARGET,
                "gateway.command",
                kind = message.kind(),
                game = message.game_id().and_then(|g| g.parse::<GameId>().ok()).map(tracing::field::display),
            );
            return self.act(claims, id, message).instrument(span).await;
        }
        let span = tracing::info_span!(
            "gateway.command",
            kind = message.kind(),
            game = message
                .game_id()
                .and_then(|g| g.parse::<GameId>().ok())
                .map(tracing::field::display),
        );
        self.other_command(claims, id, message)
            .instrument(span)
            .await;
    }

    /// A command other than a game action (see [`on_command`](Self::on_command)).
    async fn other_command(&mut self, claims: &Claims, id: Option<&str>, message: ClientMessage) {
        let player = games::Player {
            id: claims.sub.to_string(),
            name: claims.name.clone(),
            guest: claims.guest,
            bot: false,
            bot_level: games::BotLevel::Unspecified as i32,
        };
        let mut sessions = self.state.sessions.clone();
        match message {
            ClientMessage::CreateBoard {
                variant,
                color,
                rated,
                clock,
                ..
            } => {
                let Some(variant) = self.variant_or_refuse(id, &variant) else {
                    return;
                };
                // A board this connection could not open is not made (nor counted).
                if !self.follow_room() {
                    return self.refuse_follow(id, None);
                }
                if rated && !player.guest && self.marked(&player.id).await {
                    return self.restricted(id);
                }
                let variant = frontier_platform::convert::variant_to_proto(variant);
                if !self
                    .clock_and_creation_admitted(
                        id,
                        &player.id,
                        clock.as_ref(),
                        "too many boards created; try again later",
                    )
                    .await
                {
                    return;
                }
                let player_id = player.id.clone();
                let reservation = format!("r:{}", uuid::Uuid::new_v4());
                if !self.reserve_waiting(&player.id, &reservation).await {
                    count_refusal("waiting_boards");
                    return self.error(
                        id,
                        None,
                        ErrorCode::TooManyBoards,
                        format!(
                            "{} of your boards are waiting for an opponent; abort one or wait until one starts",
                            self.state.limits.args.waiting_boards
                        ),
                    );
                }
                let request = pb::CreateBoardRequest {
                    creator: Some(player),
                    variant: variant as i32,
                    color: color_choice(color) as i32,
                    rated,
                    time_control: clock.map(|c| games::TimeControl {
                        initial_seconds: c.minutes * 60,
                        increment_seconds: c.increment,
                    }),
                };
                match sessions.create_board(request).await {
                    Ok(r) => {
                        let r = r.into_inner();
                        self.state
                            .limits
                            .confirm_waiting(&player_id, &reservation, &r.game_id)
                            .await;
                        self.send(&ServerMessage::BoardCreated {
                            id: id.map(str::to_owned),
                            game_id: r.game_id.clone(),
                            invite: format!(
                                "{}/join/{}",
                                self.state.settings.public_url.trim_end_matches('/'),
                                r.code
                            ),
                            code: r.code,
                            color: seat_name(r.seat).to_owned(),
                        });
                        self.follow(&r.game_id, None, id);
                    }
                    Err(status) => {
                        self.state
                            .limits
                            .remove_waiting(&player_id, &reservation)
                            .await;
                        self.refused(id, None, status.into());
                    }
                }
            }
            ClientMessage::PlayComputer {
                variant,
                level,
                color,
                clock,
                ..
            } => {
                self.play_computer(player, id, &variant, &level, color, clock)
                    .await
            }
            ClientMessage::Seek { pools, .. } => self.seek(player, id, &pools).await,
            ClientMessage::OfferRematch { game_id, .. } => {
                self.rematch(&player.id, id, game_id, RematchCall::Offer)
                    .await
            }
            ClientMessage::AcceptRematch { game_id, .. } => {
                self.rematch(&player.id, id, game_id, RematchCall::Accept)
                    .await
            }
            ClientMessage::DeclineRematch { game_id, .. } => {
                self.rematch(&player.id, id, game_id, RematchCall::Decline)
                    .await
            }
            ClientMessage::CancelSeek { .. } => self.cancel_seek(&player.id, id).await,
            ClientMessage::Status { .. } => self.seek_status(&player.id, id).await,
            ClientMessage::JoinBoard { code, .. } => {
                if code.len() > 16 {
                    return self.error(
                        id,
                        None,
                        ErrorCode::BoardNotFound,
                        "no board has that code",
                    );
                }
                if !self.follow_room() {
                    return self.refuse_follow(id, None);
                }
                // The board's code says nothing of whether it is rated: a marked player
                // joins as casual-only, and game-session refuses a rated board.
                let casual_only = !player.guest && self.marked(&player.id).await;
                match sessions
                    .join_board(pb::JoinBoardRequest {
                        player: Some(player),
                        code,
                        casual_only,
                    })
                    .await
                {
                    Ok(r) => {
                        let r = r.into_inner();
                        self.send(&ServerMessage::BoardJoined {
                            id: id.map(str::to_owned),
                            game_id: r.game_id.clone(),
                            color: seat_name(r.seat).to_owned(),
                        });
                        self.follow(&r.game_id, None, id);
                    }
                    Err(status) => self.refused(id, None, status.into()),
                }
            }
            ClientMessage::Open {
                game_id,
                after_version,
                ..
            } => self.follow(&game_id, after_version, id),
            ClientMessage::Close { game_id, .. } => {
                if let Ok(game) = game_id.parse::<GameId>() {
                    if let Some(follow) = self.follows.remove(&game) {
                        follow.abort();
                    }
                    // Closing a game leaves it: a rematch offer standing there lapses.
                    lapse_rematches(&self.state, &player.id, Some(&game), pb::LapseReason::Left)
                        .await;
                }
                self.send(&ServerMessage::Closed {
                    id: id.map(str::to_owned),
                    game_id,
                });
            }
            action => self.act(claims, id, action).await,
        }
    }

    /// The variant a new game asks for, or `None` once `bad_field` is sent.
    fn variant_or_refuse(&self, id: Option<&str>, name: &str) -> Option<frontier_rules::Variant> {
        let variant = frontier_platform::convert::variant_from_name(name);
        if variant.is_none() {
            self.error(
                id,
                None,
                ErrorCode::BadField,
                "variant is standard, hidden or atomic",
            );
        }
        variant
    }

    /// Checks a new game's clock, then counts the creation against the player's window
    /// (boards and games against the computer share it); false once the refusal is sent.
    async fn clock_and_creation_admitted(
        &self,
        id: Option<&str>,
        player: &str,
        clock: Option<&ClockSpec>,
        limited: &str,
    ) -> bool {
        if let Some(c) = clock
            && !c.is_valid()
        {
            self.error(
                id,
                None,
                ErrorCode::BadTimeControl,
                "a clock is 1 to 60 minutes with an increment of 0 to 60 seconds",
            );
            return false;
        }
        if let Err(refused) = self.state.limits.check(Window::Boards, player).await {
            self.push(limited_message(id, &refused, limited));
            return false;
        }
        true
    }

    /// `play_computer`: counted like a board creation; the game starts at once and the
    /// connection follows it.
    async fn play_computer(
        &mut self,
        player: games::Player,
        id: Option<&str>,
        variant: &str,
        level: &str,
        color: ColorChoiceWire,
        clock: Option<ClockSpec>,
    ) {
        let Some(variant) = self.variant_or_refuse(id, variant) else {
            return;
        };
        let Some(level) = BotLevel::parse(level) else {
            return self.error(
                id,
                None,
                ErrorCode::BadField,
                "level is easy, medium or hard",
            );
        };
        if !self.follow_room() {
            return self.refuse_follow(id, None);
        }
        if !self
            .clock_and_creation_admitted(
                id,
                &player.id,
                clock.as_ref(),
                "too many games created; try again later",
            )
            .await
        {
            return;
        }
        let request = pb::PlayComputerRequest {
            player: Some(player),
            variant: frontier_platform::convert::variant_to_proto(variant) as i32,
            level: frontier_platform::convert::bot_level_to_proto(level) as i32,
            color: color_choice(color) as i32,
            time_control: clock.map(|c| games::TimeControl {
                initial_seconds: c.minutes * 60,
                increment_seconds: c.increment,
            }),
        };
        let mut sessions = self.state.sessions.clone();
        match sessions.play_computer(request).await {
            Ok(r) => {
                let r = r.into_inner();
                self.send(&ServerMessage::GameCreated {
                    id: id.map(str::to_owned),
                    game_id: r.game_id.clone(),
                    color: seat_name(r.seat).to_owned(),
                });
                self.follow(&r.game_id, None, id);
            }
            Err(status) => self.refused(id, None, status.into()),
        }
    }

    /// The matchmaking service, or an `unavailable` answer.
    fn matchmaking(&self, id: Option<&str>) -> Option<MatchmakingLink> {
        let link = self.state.matchmaking.clone();
        if link.is_none() {
            self.error(
                id,
                None,
                ErrorCode::Unavailable,
                "quick match is not available on this server",
            );
        }
        link
    }

    /// Tells matchmaking the player is here (a connection of an authenticated player, with
    /// matchmaking configured): a seek due to lapse after a disconnect stays.
    fn start_notices(&mut self, player: &str) {
        let Some(link) = self.state.matchmaking.clone() else {
            return;
        };
        let request = mm::PlayerRequest {
            player_id: player.to_owned(),
        };
        tokio::spawn(async move {
            let status = link.call(|mut c| {
                let request = request.clone();
                async move { c.status(request).await }
            });
            if let Err(status) = status.await {
                tracing::debug!(%status, "matchmaking status at connect");
            }
        });
    }

    /// A notice for the player: a `matched` notice is told to the client and its game
    /// opened here; a frame is relayed.
    fn on_notice(&mut self, notice: Notice) {
        match notice {
            Notice::Frame(json) => self.on_player_frame(json),
            Notice::Matched(payload) => {
                let Ok(notice) = mm::Matched::decode(payload) else {
                    tracing::warn!("an unreadable matched notice was dropped");
                    return;
                };
                if let Some(matched) = matched_from_proto(notice) {
                    self.on_matched(matched);
                }
            }
        }
    }

    /// A frame on the player's subject: relayed as it is; a started rematch is opened on
    /// this connection (unless it follows it already).
    fn on_player_frame(&mut self, json: Bytes) {
        let started = match serde_json::from_slice::<ServerMessage>(&json) {
            Ok(ServerMessage::RematchStarted { new_game_id, .. }) => Some(new_game_id),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(error = %e, "an unreadable player notice was dropped");
                return;
            }
        };
        match Utf8Bytes::try_from(json) {
            Ok(text) => self.push(Message::Text(text)),
            Err(_) => return,
        }
        if let Some(game) = started {
            self.follow_if_new(&game);
        }
    }

    /// Follows `game_id` unless this connection follows it already.
    fn follow_if_new(&mut self, game_id: &str) {
        let following = game_id
            .parse::<GameId>()
            .ok()
            .and_then(|g| self.follows.get(&g))
            .is_some_and(|follow| !follow.is_finished());
        if !following {
            self.follow(game_id, None, None);
        }
    }

    /// `offer_rematch`, `accept_rematch`, `decline_rematch`: game-session decides (and tells
    /// both players on their subjects); this connection gets the answer with its `id`, and
    /// opens a rematch that started.
    async fn rematch(
        &mut self,
        player: &str,
        id: Option<&str>,
        game_id: String,
        call: RematchCall,
    ) {
        if game_id.parse::<GameId>().is_err() {
            return self.error(id, Some(&game_id), ErrorCode::GameNotFound, "no such game");
        }
        // A rematch of a rated game is rated: a marked player may neither offer nor accept
        // one (declining stays open).
        if !matches!(call, RematchCall::Decline)
            && self.marked(player).await
            && self.rated_game(&game_id, player).await
        {
            return self.error(
                id,
                Some(&game_id),
                ErrorCode::FairPlayRestricted,
                "fair play restricted you to casual games; this game was rated",
            );
        }
        let request = pb::RematchRequest {
            game_id: game_id.clone(),
            player_id: player.to_owned(),
        };
        let mut sessions = self.state.sessions.clone();
        let answer = match call {
            RematchCall::Offer => sessions.offer_rematch(request).await,
            RematchCall::Accept => sessions.accept_rematch(request).await,
            RematchCall::Decline => sessions.decline_rematch(request).await,
        };
        let r = match answer {
            Ok(r) => r.into_inner(),
            Err(status) => return self.refused(id, Some(&game_id), status.into()),
        };
        let id = id.map(str::to_owned);
        if !r.new_game_id.is_empty() {
            let new_game_id = r.new_game_id;
            self.send(&ServerMessage::RematchStarted {
                id,
                game_id,
                new_game_id: new_game_id.clone(),
                color: seat_name(r.seat).to_owned(),
            });
            self.follow_if_new(&new_game_id);
        } else if !r.cancelled.is_empty() {
            self.send(&ServerMessage::RematchCancelled {
                id,
                game_id,
                by: seat_name(r.seat).to_owned(),
                reason: r.cancelled,
            });
        } else {
            self.send(&ServerMessage::RematchOffered {
                id,
                game_id,
                by: seat_name(r.offered_by).to_owned(),
            });
        }
    }

    /// A `matched` notice: told to the client, and the game opened on this connection.
    fn on_matched(&mut self, matched: Matched) {
        let game_id = matched.game_id.clone();
        self.send(&ServerMessage::Matched(matched));
        self.follow(&game_id, None, None);
    }

    /// `seek`: checked here for what the gateway can tell (the pools' count and variants);
    /// matchmaking checks the rest (clocks, duplicates, guests in rated pools).
    async fn seek(&mut self, player: games::Player, id: Option<&str>, pools: &[PoolSpec]) {
        if pools.is_empty() || pools.len() > MAX_POOLS {
            return self.error(
                id,
                None,
                ErrorCode::BadField,
                format!("pools: name 1 to {MAX_POOLS} pools"),
            );
        }
        let Some(wire) = pools.iter().map(pool_to_proto).collect::<Option<Vec<_>>>() else {
            return self.error(
                id,
                None,
                ErrorCode::BadField,
                "pools: variant is standard, hidden or atomic",
            );
        };
        let Some(link) = self.matchmaking(id) else {
            return;
        };
        if pools.iter().any(|p| p.rated) && !player.guest && self.marked(&player.id).await {
            return self.restricted(id);
        }
        let player_id = player.id.clone();
        let request = mm::SeekRequest {
            player: Some(player),
            pools: wire,
        };
        let answer = link.call(|mut c| {
            let request = request.clone();
            async move { c.seek(request).await }
        });
        match answer.await {
            Ok(r) => {
                self.send(&ServerMessage::Seeking {
                    id: id.map(str::to_owned),
                    pools: r.pools.iter().filter_map(|k| pool_from_key(k)).collect(),
                    estimated_wait_ms: r.estimated_wait_ms,
                    replaced: r.replaced,
                });
                // Going to quick match: the player's standing rematch offers lapse. After
                // the answer, and off this connection's loop: the player is told at once.
                let state = self.state.clone();
                tokio::spawn(async move {
                    lapse_rematches(&state, &player_id, None, pb::LapseReason::Seeking).await;
                });
            }
            Err(status) => self.refused(id, None, status.into()),
        }
    }

    /// `cancel_seek`.
    async fn cancel_seek(&mut self, player: &str, id: Option<&str>) {
        let Some(link) = self.matchmaking(id) else {
            return;
        };
        let request = mm::PlayerRequest {
            player_id: player.to_owned(),
        };
        let answer = link.call(|mut c| {
            let request = request.clone();
            async move { c.cancel_seek(request).await }
        });
        match answer.await {
            Ok(r) => self.send(&ServerMessage::SeekCancelled {
                id: id.map(str::to_owned),
                cancelled: r.cancelled,
            }),
            Err(status) => self.refused(id, None, status.into()),
        }
    }

    /// `status`: the standing seek and the latest match (after a reconnect).
    async fn seek_status(&mut self, player: &str, id: Option<&str>) {
        let Some(link) = self.matchmaking(id) else {
            return;
        };
        let request = mm::PlayerRequest {
            player_id: player.to_owned(),
        };
        let answer = link.call(|mut c| {
            let request = request.clone();
            async move { c.status(request).await }
        });
        match answer.await {
            Ok(r) => {
                let seeking = (!r.pools.is_empty()).then(|| SeekStanding {
                    pools: r.pools.iter().filter_map(|k| pool_from_key(k)).collect(),
                    since: r.since_ms,
                });
                self.send(&ServerMessage::Status {
                    id: id.map(str::to_owned),
                    seeking,
                    matched: r.matched.and_then(matched_from_proto),
                    matching: r.matching,
                });
            }
            Err(status) => self.refused(id, None, status.into()),
        }
    }

    /// Whether fair play marked this player (casual games only); `false` when fair play is
    /// not configured or does not answer (`moderation::is_marked`).
    async fn marked(&self, player: &str) -> bool {
        crate::moderation::is_marked(self.state.fairplay.as_ref(), player).await
    }

    /// Whether this game is rated, from game-session's view of it (`false` when it cannot
    /// say: the rematch call that follows gets game-session's own answer).
    async fn rated_game(&self, game: &str, player: &str) -> bool {
        let mut sessions = self.state.sessions.clone();
        let view = sessions
            .get_view(pb::GetViewRequest {
                game_id: game.to_owned(),
                player_id: player.to_owned(),
            })
            .await;
        let Ok(view) = view else {
            return false;
        };
        serde_json::from_slice::<serde_json::Value>(&view.into_inner().frame)
            .ok()
            .and_then(|frame| frame["game"]["rated"].as_bool())
            .unwrap_or(false)
    }

    /// Refuses a rated seek or board of a marked player.
    fn restricted(&self, id: Option<&str>) {
        self.error(
            id,
            None,
            ErrorCode::FairPlayRestricted,
            "fair play restricted you to casual games",
        );
    }

    fn refused(&self, id: Option<&str>, game_id: Option<&str>, refusal: Refusal) {
        self.error(id, game_id, refusal.code, refusal.message);
    }

    /// Reserves one of the player's waiting-board slots. At the cap, each counted board is
    /// checked with game-session first: one that started or ended (the gateway may not
    /// have seen it: nobody followed it) stops counting, and the reservation is retried.
    async fn reserve_waiting(&self, player: &str, reservation: &str) -> bool {
        let limits = &self.state.limits;
        let Reservation::Full(members) = limits.reserve_waiting(player, reservation).await else {
            return true;
        };
        let mut freed = false;
        for game in members.iter().filter(|m| !m.starts_with("r:")) {
            if !self.still_waiting(game, player).await {
                limits.remove_waiting(player, game).await;
                freed = true;
            }
        }
        freed && limits.reserve_waiting(player, reservation).await == Reservation::Reserved
    }

    /// Whether `game` still waits for its second player (version 1: only its creation).
    async fn still_waiting(&self, game: &str, player: &str) -> bool {
        let mut sessions = self.state.sessions.clone();
        match sessions
            .get_view(pb::GetViewRequest {
                game_id: game.to_owned(),
                player_id: player.to_owned(),
            })
            .await
        {
            Ok(view) => view.into_inner().version < 2,
            // Unknown: gone. Anything else: cannot tell now, so it keeps counting.
            Err(status) => Refusal::from(status).code != ErrorCode::GameNotFound,
        }
    }

    async fn act(&mut self, claims: &Claims, id: Option<&str>, message: ClientMessage) {
        use pb::act_request::Action as A;
        let kind = message.kind();
        let (game_id, expected_version, action) = match message {
            ClientMessage::Move {
                game_id,
                uci,
                expected_version,
                move_time_ms,
                ..
            } => {
                if uci.len() > 8 {
                    return self.error(
                        id,
                        Some(&game_id),
                        ErrorCode::BadMove,
                        "a move is written like e2e4 or e7e8q",
                    );
                }
                (
                    game_id,
                    expected_version,
                    A::Move(pb::MoveAction { uci, move_time_ms }),
                )
            }
            ClientMessage::Promote { game_id, role, .. } => {
                if role.len() > 8 {
                    return self.error(
                        id,
                        Some(&game_id),
                        ErrorCode::BadField,
                        "role is q, r, b or n",
                    );
                }
                (game_id, None, A::Promote(pb::PromoteAction { role }))
            }
            ClientMessage::Resign { game_id, .. } => (game_id, None, A::Resign(pb::Resign {})),
            ClientMessage::OfferDraw { game_id, .. } => {
                (game_id, None, A::OfferDraw(pb::OfferDraw {}))
            }
            ClientMessage::AcceptDraw { game_id, .. } => {
                (game_id, None, A::AcceptDraw(pb::AcceptDraw {}))
            }
            ClientMessage::DeclineDraw { game_id, .. } => {
                (game_id, None, A::DeclineDraw(pb::DeclineDraw {}))
            }
            ClientMessage::Abort { game_id, .. } => (game_id, None, A::Abort(pb::Abort {})),
            ClientMessage::ClaimVictory { game_id, .. } => {
                (game_id, None, A::ClaimVictory(pb::ClaimVictory {}))
            }
            ClientMessage::Undo {
                game_id,
                expected_version,
                ..
            } => (game_id, expected_version, A::Undo(pb::Undo {})),
            _ => return,
        };
        let Ok(game) = game_id.parse::<GameId>() else {
            return self.error(id, Some(&game_id), ErrorCode::GameNotFound, "no such game");
        };
        let is_move = matches!(action, A::Move(_) | A::Promote(_));
        let request = pb::ActRequest {
            game_id: game_id.clone(),
            player_id: claims.sub.to_string(),
            client_action_id: id.unwrap_or_default().to_owned(),
            expected_version,
            action: Some(action),
        };
        let started = std::time::Instant::now();
        let mut sessions = self.state.sessions.clone();
        // While the action is in flight, the game's live frames wait for its answer: the
        // event it stores (published before the answer comes) then goes out with the ack,
        // which carries it, in one write.
        let relayed = self.follows.get(&game).map(|f| f.relayed.clone());
        if let Some(relayed) = &relayed {
            relayed.begin_action();
        }
        let called = std::time::Instant::now();
        let answer = sessions.act(request).await;
        if is_move {
            session_stage().record(called.elapsed().as_secs_f64());
        }
        if let Some(relayed) = &relayed {
            let stored = match &answer {
                Ok(r) if !r.get_ref().frame.is_empty() => Some((
                    r.get_ref().version,
                    r.get_ref().frame.clone(),
                    r.get_ref().ended,
                )),
                _ => None,
            };
            relayed.end_action(&self.out, stored);
        }
        match answer {
            Ok(r) => {
                let r = r.into_inner();
                self.send(&ServerMessage::Ack {
                    id: id.map(str::to_owned),
                    game_id,
                    version: r.version,
                    duplicate: r.duplicate,
                });
                // A move's round trip through the platform as the gateway sees it: from the
                // client's message to its ack queued for the socket (game-session's load,
                // rules, compare-and-set and publish included).
                if is_move {
                    round_trip().record(started.elapsed().as_secs_f64());
                }
            }
            Err(status) => self.refused(id, Some(&game_id), Refusal::logged(status, kind, &game)),
        }
    }

    /// Whether one more game fits among those this connection follows ([`MAX_FOLLOWS`]); a
    /// follow that is over no longer counts, and is let go here.
    fn follow_room(&mut self) -> bool {
        self.follows.retain(|_, follow| {
            let over = follow.is_finished();
            if over {
                follow.abort();
            }
            !over
        });
        self.follows.len() < MAX_FOLLOWS
    }

    /// The `too_many_games` error: no room for another followed game.
    fn refuse_follow(&self, id: Option<&str>, game_id: Option<&str>) {
        self.error(
            id,
            game_id,
            ErrorCode::TooManyGames,
            format!(
                "this connection follows {MAX_FOLLOWS} games, the most it may; close one first"
            ),
        );
    }

    fn follow(&mut self, game_id: &str, after: Option<u64>, id: Option<&str>) {
        let Ok(game) = game_id.parse::<GameId>() else {
            return self.error(id, Some(game_id), ErrorCode::GameNotFound, "no such game");
        };
        if let Some(old) = self.follows.remove(&game) {
            old.abort();
        }
        if !self.follow_room() {
            return self.refuse_follow(id, Some(game_id));
        }
        let Some(claims) = &self.player else {
            return;
        };
        let relayed = Arc::new(Relayed::default());
        let follower = Follower {
            state: self.state.clone(),
            out: self.out.clone(),
            game,
            player_id: claims.sub.to_string(),
            id: id.map(str::to_owned),
            relayed: relayed.clone(),
        };
        let task = tokio::spawn(follower.run(after));
        self.follows.insert(game, Follow { task, relayed });
    }
}

/// A game this connection follows: the task relaying it and what it was sent of it.
struct Follow {
    task: tokio::task::JoinHandle<()>,
    relayed: Arc<Relayed>,
}

impl Follow {
    fn abort(&self) {
        self.task.abort();
    }

    /// The relay stopped, or the game's ending event went out (by any path: the follower
    /// is on its way out, and the follow no longer counts).
    fn is_finished(&self) -> bool {
        self.task.is_finished() || self.relayed.ended()
    }
}

/// What one connection was sent of one game: the last version. Every frame of the game
/// reaches the connection through here, under its lock — the follower's live frames and
/// catch-ups, and the acting player's own event that comes back with an `ack` — so that
/// whichever path brings a version first sends it and the others skip it: frames go out in
/// version order, each once.
#[derive(Default)]
struct Relayed {
    state: std::sync::Mutex<RelayState>,
    /// Told when an ending event went out, so that a follower waiting for live frames
    /// (none come after the end) stops at once — also when the event went out with an ack.
    over: tokio::sync::Notify,
    /// Told when an action's answer left frames unsent for want of an earlier version,
    /// so that the follower catches up from the log at once. That earlier version is
    /// usually already on its way (in a catch-up in flight, say), and the answer's own
    /// event — the last the game may have for a while — would otherwise wait for the
    /// next live frame or for the presence tick's check of quiet games (10–20 s).
    gap: tokio::sync::Notify,
}

#[derive(Default)]
struct RelayState {
    /// None until the follower sent its first view or catch-up.
    last: Option<u64>,
    /// The follower stopped (it failed, or the game ended): nothing more goes out through
    /// here. A client told that the relay failed opens the game again after the last
    /// version it has, and gets what follows from the new follow only.
    stopped: bool,
    /// This connection's action on the game is in flight: live frames are held (in
    /// version order) until its answer, and go out with the ack and the event it carries
    /// — one write, where the event (published before the answer) would usually have gone
    /// out alone just before it.
    acting: bool,
    held: Vec<Held>,
    /// An event that ended the game was sent: the follow is over.
    ended: bool,
}

/// A frame held for the answer of an action: version, frame, whether it ends the game.
type Held = (u64, Bytes, bool);

/// Live frames held for one action at the most (a bot's reply, a flag; more than this are
/// left to the follower's catch-up).
const MAX_HELD: usize = 8;

/// What [`Relayed`] did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Relay {
    /// Sent: it was the next version owed.
    Sent,
    /// Not sent: the connection has it already.
    Skipped,
    /// Not sent: versions before it are missing (or nothing was sent yet).
    Gap,
    /// Not sent yet: held until this connection's action on the game is answered.
    Held,
    /// Not sent: the connection is closing (or reads too slowly).
    Closed,
}

impl Relayed {
    fn lock(&self) -> std::sync::MutexGuard<'_, RelayState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The last version sent.
    fn last(&self) -> Option<u64> {
        self.lock().last
    }

    /// The follower stopped: nothing more is sent through here.
    fn stop(&self) {
        self.lock().stopped = true;
    }

    /// Sends event `version` if it is the next one the connection is owed.
    fn event(&self, out: &mpsc::Sender<Message>, version: u64, json: Bytes, ended: bool) -> Relay {
        Self::send_event(&mut self.lock(), &self.over, out, (version, json, ended))
    }

    /// Whether an event that ended the game was sent.
    fn ended(&self) -> bool {
        self.lock().ended
    }

    fn send_event(
        state: &mut RelayState,
        over: &tokio::sync::Notify,
        out: &mpsc::Sender<Message>,
        (version, json, ended): Held,
    ) -> Relay {
        if state.stopped {
            return Relay::Closed;
        }
        match state.last {
            None => Relay::Gap,
            Some(l) if version <= l => Relay::Skipped,
            Some(l) if version == l + 1 => {
                if relay_frame(out, json) {
                    state.last = Some(version);
                    if ended && !state.ended {
                        state.ended = true;
                        // A permit is stored when the follower is not waiting yet.
                        over.notify_one();
                    }
                    Relay::Sent
                } else {
                    Relay::Closed
                }
            }
            Some(_) => Relay::Gap,
        }
    }

    /// A live frame: held while this connection's action on the game is in flight (see
    /// [`RelayState::acting`]), else sent as [`event`](Self::event) sends.
    fn live(&self, out: &mpsc::Sender<Message>, version: u64, json: Bytes, ended: bool) -> Relay {
        let mut state = self.lock();
        let newer = state.last.is_some_and(|l| version > l);
        if state.acting && newer && !state.stopped && state.held.len() < MAX_HELD {
            let at = state.held.partition_point(|(v, _, _)| *v < version);
            if state.held.get(at).is_none_or(|(v, _, _)| *v != version) {
                state.held.insert(at, (version, json, ended));
            }
            return Relay::Held;
        }
        Self::send_event(&mut state, &self.over, out, (version, json, ended))
    }

    /// This connection's action on the game goes to game-session.
    fn begin_action(&self) {
        let mut state = self.lock();
        state.acting = true;
    }

    /// Its answer came (with the event it stored, if it stored one): every held frame
    /// and that event go out in version order, each once; what does not follow on from
    /// the last version sent is dropped, and the follower is told ([`Relayed::gap`]) to
    /// catch it up from the log.
    fn end_action(&self, out: &mpsc::Sender<Message>, stored: Option<Held>) {
        let mut state = self.lock();
        state.acting = false;
        let mut frames = std::mem::take(&mut state.held);
        if let Some(stored) = stored {
            let at = frames.partition_point(|(v, _, _)| *v < stored.0);
            if frames.get(at).is_none_or(|(v, _, _)| *v != stored.0) {
                frames.insert(at, stored);
            }
        }
        for frame in frames {
            if Self::send_event(&mut state, &self.over, out, frame) == Relay::Gap {
                // A permit is stored when the follower is not waiting yet.
                self.gap.notify_one();
                break;
            }
        }
    }

    /// Sends the `game` frame of `version` unless the connection has that version or a
    /// later one already; `first`: the first frame of a follow, sent whatever the client
    /// said it had (a view replaces what it had).
    fn view(&self, out: &mpsc::Sender<Message>, version: u64, json: Bytes, first: bool) -> Relay {
        let mut state = self.lock();
        if state.stopped {
            return Relay::Closed;
        }
        if !first && state.last.is_some_and(|l| version <= l) {
            return Relay::Skipped;
        }
        if relay_frame(out, json) {
            state.last = Some(version);
            Relay::Sent
        } else {
            Relay::Closed
        }
    }

    /// The first catch-up of a resumed follow sent events through `version`.
    fn start_at(&self, version: u64) {
        let mut state = self.lock();
        if state.last.is_none_or(|l| l < version) {
            state.last = Some(version);
        }
    }
}

/// Queues one relayed frame; false if the connection is closing. game-session renders
/// frames as JSON text, so a frame that is not UTF-8 cannot occur; it would be skipped.
fn relay_frame(out: &mpsc::Sender<Message>, json: Bytes) -> bool {
    static RELAYED: std::sync::OnceLock<metrics::Counter> = std::sync::OnceLock::new();
    RELAYED
        .get_or_init(|| metrics::counter!("frontier_gateway_relayed_frames_total"))
        .increment(1);
    match Utf8Bytes::try_from(json) {
        Ok(text) => deliver(out, Message::Text(text)),
        Err(_) => true,
    }
}

/// Relays one game to one client: frames in version order, each once.
struct Follower<A: Accounts> {
    state: Arc<AppState<A>>,
    out: mpsc::Sender<Message>,
    game: GameId,
    player_id: String,
    id: Option<String>,
    relayed: Arc<Relayed>,
}

enum Step {
    Continue,
    Stop,
}

/// A follower's end of its game's topic: the topic's task offers it every live frame, and
/// it relays what is in order itself (through [`Relayed::live`]), so that a live frame
/// crosses no task between the subscription and the connection's writer. What it cannot do
/// there — fill a gap from the log, tell the waiting-board count that the game started —
/// it leaves to the follower's task, woken through `wake` with the reason in `needs`.
struct Feed {
    relayed: Arc<Relayed>,
    out: mpsc::Sender<Message>,
    game: GameId,
    /// The follower's seat, if it plays the game (its presence is reported).
    seat: Option<frontier_rules::Color>,
    /// The follower's player id.
    player: String,
    /// A frame came since the last presence tick.
    heard: AtomicBool,
    /// The board still counts as waiting for a second player: a version past 1 wakes the
    /// follower, which clears this once the count is told.
    waiting: AtomicBool,
    /// What the follower must do ([`Feed::GAP`], [`Feed::STOP`], [`Feed::JOINED`]).
    needs: AtomicU8,
    wake: tokio::sync::Notify,
}

impl Feed {
    /// Versions are missing before the frame offered: catch up from the log.
    const GAP: u8 = 1;
    /// Nothing more can go out (the connection is closing, or the follow failed).
    const STOP: u8 = 2;
    /// The board has a second player (or is over).
    const JOINED: u8 = 4;

    fn need(&self, what: u8) {
        self.needs.fetch_or(what, Ordering::AcqRel);
        // A permit is stored when the follower is not waiting yet.
        self.wake.notify_one();
    }
}

impl crate::followers::Followed for Feed {
    fn game(&self) -> GameId {
        self.game
    }

    fn seat(&self) -> Option<frontier_rules::Color> {
        self.seat
    }

    fn player(&self) -> &str {
        &self.player
    }

    fn heard_since_last(&self) -> bool {
        self.heard.swap(false, Ordering::AcqRel)
    }

    fn relayed(&self) -> Option<u64> {
        self.relayed.last()
    }

    fn behind(&self) {
        self.need(Feed::GAP);
    }
}

impl crate::hub::Sink for Feed {
    fn offer(&self, frame: &crate::hub::Frame) {
        self.heard.store(true, Ordering::Release);
        let span = relay_span(&self.game, frame);
        let _entered = span.enter();
        // A frame that ends the game wakes the follower through `Relayed::over` when it
        // goes out (a held one, with the ack): the follow then stops.
        match self
            .relayed
            .live(&self.out, frame.version, frame.json.clone(), frame.ended)
        {
            Relay::Sent | Relay::Skipped | Relay::Held => {}
            Relay::Closed => self.need(Feed::STOP),
            Relay::Gap => self.need(Feed::GAP),
        }
        if frame.version >= 2 && self.waiting.load(Ordering::Acquire) {
            self.need(Feed::JOINED);
        }
    }
}

impl<A: Accounts> Follower<A> {
    /// Tells the client the relay failed, after closing this follow's path (so that no
    /// frame of it follows the error: the client opens the game again from what it has).
    fn fail(&self, refusal: Refusal) {
        self.relayed.stop();
        push(
            &self.out,
            error_message(
                self.id.as_deref(),
                Some(&self.game.to_string()),
                refusal.code,
                refusal.message,
            ),
        );
    }

    /// The first catch-up of the follow: the view, or — the client resuming after a version
    /// it has — what follows that version. The seat, and whether what it sent shows the
    /// game over.
    async fn catch_up_first(&self, after: Option<u64>) -> Result<(i32, bool), Refusal> {
        let mut sessions = self.state.sessions.clone();
        let game_id = self.game.to_string();
        let Some(after) = after else {
            let view = sessions
                .get_view(pb::GetViewRequest {
                    game_id,
                    player_id: self.player_id.clone(),
                })
                .await?
                .into_inner();
            self.relayed
                .view(&self.out, view.version, Bytes::from(view.frame), true);
            return Ok((view.seat, view.ended));
        };
        let resume = sessions
            .resume(pb::ResumeRequest {
                game_id,
                player_id: self.player_id.clone(),
                after_version: after,
                max_events: 0,
            })
            .await?
            .into_inner();
        let seat = resume.seat;
        match resume.result {
            Some(pb::resume_response::Result::Events(events)) => {
                self.relayed.start_at(after);
                Ok((seat, self.relay_events(events.frames)))
            }
            Some(pb::resume_response::Result::View(view)) => {
                self.relayed
                    .view(&self.out, view.version, Bytes::from(view.frame), true);
                Ok((seat, view.ended))
            }
            None => {
                self.relayed.start_at(after);
                Ok((seat, false))
            }
        }
    }

    /// Sends, in order, the logged events the connection does not have yet; whether they
    /// show the game over (an ending event sent now or before).
    fn relay_events(&self, frames: Vec<pb::Frame>) -> bool {
        let mut ended = false;
        for frame in frames {
            match self.relayed.event(
                &self.out,
                frame.version,
                Bytes::from(frame.json),
                frame.ended,
            ) {
                Relay::Sent | Relay::Skipped => ended |= frame.ended,
                Relay::Gap | Relay::Closed | Relay::Held => break,
            }
        }
        ended
    }

    /// What follows the last version sent (or, when that is too far behind, the view):
    /// the seat, and whether the game is over.
    async fn catch_up(&self) -> Result<(i32, bool), Refusal> {
        let Some(after) = self.relayed.last() else {
            return self.catch_up_first(None).await;
        };
        let mut sessions = self.state.sessions.clone();
        let resume = sessions
            .resume(pb::ResumeRequest {
                game_id: self.game.to_string(),
                player_id: self.player_id.clone(),
                after_version: after,
                max_events: 0,
            })
            .await?
            .into_inner();
        let seat = resume.seat;
        let ended = match resume.result {
            Some(pb::resume_response::Result::Events(events)) => self.relay_events(events.frames),
            Some(pb::resume_response::Result::View(view)) => {
                self.relayed
                    .view(&self.out, view.version, Bytes::from(view.frame), false);
                view.ended
            }
            None => false,
        };
        Ok((seat, ended))
    }

    /// A catch-up while following: a read, safe to repeat, so a game-session that is
    /// unreachable or died mid-call (a crash, a restart) is asked again a few times, about
    /// 6 s in all, before the client is told (`unavailable`: open the game again).
    async fn catch_up_again(&self) -> Result<(i32, bool), Refusal> {
        let mut delay = std::time::Duration::from_millis(100);
        for _ in 0..6 {
            match self.catch_up().await {
                Err(r) if matches!(r.code, ErrorCode::Unavailable | ErrorCode::Internal) => {
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                other => return other,
            }
        }
        self.catch_up().await
    }

    /// The game has a second player or is over: if it was one of the player's waiting
    /// boards, it no longer counts.
    async fn left_waiting(&self) {
        self.state
            .limits
            .remove_waiting(&self.player_id, &self.game.to_string())
            .await;
    }

    /// Whether the last version sent shows the board no longer waiting (versions after 1,
    /// the creation).
    fn past_waiting(&self) -> bool {
        self.relayed.last().is_some_and(|l| l >= 2)
    }

    async fn run(self, after: Option<u64>) {
        self.relay(after).await;
        self.relayed.stop();
    }

    /// The relay of [`run`](Self::run), until it stops.
    async fn relay(&self, after: Option<u64>) {
        let seat = match self.catch_up_first(after).await {
            Ok((_, true)) => return self.left_waiting().await,
            Ok((seat, false)) => seat,
            Err(refusal) => return self.fail(refusal),
        };
        let waiting = !self.past_waiting();
        if !waiting {
            self.left_waiting().await;
        }
        let audience = frontier_platform::convert::audience_of_seat(seat);
        let subject = self.state.ns.game_follow_subject(&self.game, audience);
        let seat = match audience {
            frontier_rules::Audience::Player(color) => Some(color),
            frontier_rules::Audience::Spectator => None,
        };
        let feed = Arc::new(Feed {
            relayed: self.relayed.clone(),
            out: self.out.clone(),
            game: self.game,
            seat,
            player: self.player_id.clone(),
            heard: AtomicBool::new(true),
            waiting: AtomicBool::new(waiting),
            needs: AtomicU8::new(0),
            wake: tokio::sync::Notify::new(),
        });
        let _subscription = match self.state.hub.follow(&subject, feed.clone()).await {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "subscribing failed");
                return self.fail(Refusal {
                    code: ErrorCode::Unavailable,
                    message: "live events are unavailable; try again".into(),
                });
            }
        };
        // Anything published between the first read and the subscription.
        match self.catch_up().await {
            Ok((_, true)) => return self.left_waiting().await,
            Ok((_, false)) => {}
            Err(refusal) => return self.fail(refusal),
        }
        // A seated player's presence, for claims in games without clock: reported now,
        // then by the gateway's presence tick with every other follow's. On the same tick,
        // a game that stayed quiet for a whole interval is checked against its stored
        // version and caught up from its log if it is further on (`Feed::behind`): a
        // game-session that died between its compare-and-set and its publish leaves a
        // version that no live frame announces, and no later frame may come to show the
        // gap (the other side waits for exactly that version).
        if seat.is_some() {
            self.heartbeat().await;
        }
        let _registered = self
            .state
            .followers
            .add(feed.clone() as Arc<dyn crate::followers::Followed>);
        loop {
            // Live frames in order go out from the topic's task (`Feed::offer`); this task
            // wakes only for what the feed cannot do itself.
            let mut needs = 0;
            tokio::select! {
                _ = feed.wake.notified() => {}
                // An action's answer could not send what it carried (`Relayed::gap`).
                _ = self.relayed.gap.notified() => needs = Feed::GAP,
                // The ending event went out (live, or with an ack).
                _ = self.relayed.over.notified() => return self.left_waiting().await,
            }
            needs |= feed.needs.swap(0, Ordering::AcqRel);
            if needs & Feed::STOP != 0 {
                return;
            }
            if needs & Feed::GAP != 0 {
                // Fetch what was missed, in order (this includes the frame that showed it).
                if let Step::Stop = self.catch_up_step().await {
                    return;
                }
            }
            if self.relayed.ended() {
                return self.left_waiting().await;
            }
            if feed.waiting.load(Ordering::Acquire)
                && (needs & Feed::JOINED != 0 || self.past_waiting())
            {
                feed.waiting.store(false, Ordering::Release);
                self.left_waiting().await;
            }
            if self.out.is_closed() {
                return;
            }
        }
    }

    async fn heartbeat(&self) {
        let mut sessions = self.state.sessions.clone();
        if let Err(status) = sessions
            .presence(pb::PresenceRequest {
                game_id: self.game.to_string(),
                player_id: self.player_id.clone(),
            })
            .await
        {
            tracing::debug!(%status, "presence heartbeat failed");
        }
    }

    /// A catch-up from the log, as a step of the relay.
    async fn catch_up_step(&self) -> Step {
        match self.catch_up_again().await {
            Ok((_, true)) => Step::Stop,
            Ok((_, false)) => Step::Continue,
            Err(r) => {
                self.fail(r);
                Step::Stop
            }
        }
    }
}

/// A move's round trip through the platform as the gateway sees it, registered once.
fn round_trip() -> &'static metrics::Histogram {
    static ROUND_TRIP: std::sync::OnceLock<metrics::Histogram> = std::sync::OnceLock::new();
    ROUND_TRIP.get_or_init(|| metrics::histogram!("frontier_gateway_move_round_trip_seconds"))
}

/// A move's `session` stage: the `Act` call to game-session, as the gateway sees it.
fn session_stage() -> &'static metrics::Histogram {
    static STAGE: std::sync::OnceLock<metrics::Histogram> = std::sync::OnceLock::new();
    STAGE
        .get_or_init(|| metrics::histogram!("frontier_gateway_stage_seconds", "stage" => "session"))
}

/// The counter of client messages of one type, registered once (a lookup by name and
/// labels on every message costs more than counting it).
fn message_counter(kind: &'static str) -> &'static metrics::Counter {
    static COUNTERS: std::sync::OnceLock<Vec<(&'static str, metrics::Counter)>> =
        std::sync::OnceLock::new();
    static OTHER: std::sync::OnceLock<metrics::Counter> = std::sync::OnceLock::new();
    COUNTERS
        .get_or_init(|| {
            CLIENT_MESSAGE_TYPES
                .iter()
                .map(|t| {
                    (
                        *t,
                        metrics::counter!("frontier_gateway_ws_messages_total", "type" => *t),
                    )
                })
                .collect()
        })
        .iter()
        .find(|(t, _)| *t == kind)
        .map(|(_, c)| c)
        .unwrap_or_else(|| {
            OTHER.get_or_init(
                || metrics::counter!("frontier_gateway_ws_messages_total", "type" => "other"),
            )
        })
}

/// Counts an open connection down when its task ends, however it ends.
struct OpenConnection;

impl Drop for OpenConnection {
    fn drop(&mut self) {
        metrics::gauge!("frontier_gateway_ws_connections").decrement(1.0);
    }
}

/// The span of relaying one live frame to a client: a child of the span that published it,
/// so the relay joins the trace of the command that caused the event.
fn relay_span(game: &GameId, frame: &crate::hub::Frame) -> tracing::Span {
    let span = tracing::info_span!("gateway.relay", game = %game, version = frame.version);
    frontier_platform::trace::adopt(span, &frame.context)
}

/// Whether a read failed because the frame was over the WebSocket size limit.
fn is_too_big(e: &axum::Error) -> bool {
    use std::error::Error as _;
    let mut source = e.source();
    while let Some(cause) = source {
        if let Some(ws) = cause.downcast_ref::<tokio_tungstenite::tungstenite::Error>() {
            return matches!(ws, tokio_tungstenite::tungstenite::Error::Capacity(_));
        }
        source = cause.source();
    }
    false
}

/// How long a connection may stay unauthenticated.
pub const DEFAULT_AUTH_TIMEOUT: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt as _;

    fn versions_sent(rx: &mut mpsc::Receiver<Message>) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|m| match m {
                Message::Text(t) => t.as_str().to_owned(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn a_game_reaches_a_connection_in_version_order_each_version_once_by_any_path() {
        let (out, mut rx) = mpsc::channel(16);
        let relayed = Relayed::default();
        let frame = |v: u64| Bytes::from(format!("v{v}"));
        // Nothing goes out before the follow's first frame.
        assert_eq!(relayed.event(&out, 1, frame(1), false), Relay::Gap);
        assert_eq!(relayed.view(&out, 3, frame(3), true), Relay::Sent);
        // The next version, by whichever path comes first; the other path skips it.
        assert_eq!(relayed.event(&out, 4, frame(4), false), Relay::Sent);
        assert_eq!(relayed.event(&out, 4, frame(4), false), Relay::Skipped);
        assert_eq!(relayed.event(&out, 2, frame(2), false), Relay::Skipped);
        // A version after a missing one waits for the catch-up.
        assert_eq!(relayed.event(&out, 6, frame(6), false), Relay::Gap);
        assert_eq!(relayed.event(&out, 5, frame(5), false), Relay::Sent);
        assert_eq!(relayed.event(&out, 6, frame(6), false), Relay::Sent);
        // A view the connection is past is not sent again; a newer one is.
        assert_eq!(relayed.view(&out, 6, frame(6), false), Relay::Skipped);
        assert_eq!(relayed.view(&out, 9, frame(9), false), Relay::Sent);
        assert_eq!(relayed.last(), Some(9));
        assert_eq!(versions_sent(&mut rx), ["v3", "v4", "v5", "v6", "v9"]);
        // A stopped follow sends nothing more.
        let stopped = Relayed::default();
        assert_eq!(stopped.view(&out, 3, frame(3), true), Relay::Sent);
        stopped.stop();
        assert_eq!(stopped.event(&out, 4, frame(4), false), Relay::Closed);
        assert_eq!(stopped.view(&out, 5, frame(5), false), Relay::Closed);
        assert_eq!(versions_sent(&mut rx), ["v3"]);
        // A closing connection takes nothing and the version stays.
        drop(rx);
        assert_eq!(relayed.event(&out, 10, frame(10), false), Relay::Closed);
        assert_eq!(relayed.last(), Some(9));
    }

    #[test]
    fn live_frames_wait_for_the_answer_of_an_action_and_go_out_with_its_event() {
        let (out, mut rx) = mpsc::channel(16);
        let relayed = Relayed::default();
        let frame = |v: u64| Bytes::from(format!("v{v}"));
        assert_eq!(relayed.view(&out, 2, frame(2), true), Relay::Sent);
        relayed.begin_action();
        // The action's event comes live before the answer (and the bot's reply after it).
        assert_eq!(relayed.live(&out, 3, frame(3), false), Relay::Held);
        assert_eq!(relayed.live(&out, 4, frame(4), false), Relay::Held);
        assert_eq!(versions_sent(&mut rx), ["v2"], "only the view so far");
        relayed.end_action(&out, Some((3, frame(3), false)));
        assert_eq!(versions_sent(&mut rx), ["v3", "v4"], "each once, in order");
        // Nothing held, or the answer first: the event goes with it, and live skips it.
        relayed.begin_action();
        relayed.end_action(&out, Some((5, frame(5), true)));
        assert_eq!(relayed.live(&out, 5, frame(5), true), Relay::Skipped);
        assert!(relayed.ended(), "the event that ended the game was sent");
        // ... and the follower, waiting for live frames that will not come, is told.
        assert!(
            relayed.over.notified().now_or_never().is_some(),
            "an ending event sent with the ack wakes the follower"
        );
        // An action that failed releases what was held.
        let other = Relayed::default();
        assert_eq!(other.view(&out, 7, frame(7), true), Relay::Sent);
        other.begin_action();
        assert_eq!(other.live(&out, 8, frame(8), false), Relay::Held);
        other.end_action(&out, None);
        assert!(
            other.gap.notified().now_or_never().is_none(),
            "nothing was left unsent"
        );
        // A held frame after a missing one is left to the catch-up, which the follower is
        // told to make at once.
        other.begin_action();
        assert_eq!(other.live(&out, 10, frame(10), false), Relay::Held);
        other.end_action(&out, None);
        assert_eq!(other.last(), Some(8));
        assert_eq!(versions_sent(&mut rx), ["v5", "v7", "v8"]);
        assert!(
            other.gap.notified().now_or_never().is_some(),
            "the follower is told to catch up"
        );
        // So is an answer whose own event comes before the connection has the one
        // before it (that one still on its way, in a catch-up in flight).
        let early = Relayed::default();
        assert_eq!(early.view(&out, 2, frame(2), true), Relay::Sent);
        early.begin_action();
        assert_eq!(early.live(&out, 4, frame(4), false), Relay::Held);
        early.end_action(&out, Some((4, frame(4), false)));
        assert!(early.gap.notified().now_or_never().is_some());
        assert_eq!(early.event(&out, 3, frame(3), false), Relay::Sent);
        assert_eq!(
            versions_sent(&mut rx),
            ["v2", "v3"],
            "v4 is the catch-up's to send"
        );
    }

    #[test]
    fn a_resumed_follow_starts_after_what_the_client_has() {
        let (out, mut rx) = mpsc::channel(16);
        let relayed = Relayed::default();
        relayed.start_at(7);
        assert_eq!(
            relayed.event(&out, 7, Bytes::from("v7"), false),
            Relay::Skipped
        );
        assert_eq!(
            relayed.event(&out, 8, Bytes::from("v8"), false),
            Relay::Sent
        );
        // Starting again never goes back.
        relayed.start_at(5);
        assert_eq!(relayed.last(), Some(8));
        assert_eq!(versions_sent(&mut rx), ["v8"]);
    }

    #[test]
    fn the_bucket_allows_a_burst_then_refills() {
        let start = Instant::now();
        let mut limiter = RateLimiter::new(10.0, 3);
        assert!((0..3).all(|_| limiter.allow(start)));
        assert!(!limiter.allow(start), "burst spent");
        assert!(
            limiter.allow(start + Duration::from_millis(100)),
            "one token per 100 ms"
        );
        assert!(!limiter.allow(start + Duration::from_millis(100)));
        assert!(limiter.allow(start + Duration::from_secs(5)));
    }
}
