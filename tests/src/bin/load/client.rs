//! A guest's WebSocket connection to a gateway, and the few HTTP calls the tool makes.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context as _;
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};

pub(crate) type Ws = WebSocketStream<TcpStream>;

/// How long any one answer may take before the tool gives up on it.
pub(crate) const ANSWER_WITHIN: Duration = Duration::from_secs(30);

/// An `error` frame the server sent: its code.
#[derive(Debug)]
pub(crate) struct ServerError(pub String, pub Value);

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.0, self.1)
    }
}

impl std::error::Error for ServerError {}

/// The code an error is counted under: the server's error code, or what went wrong here.
pub(crate) fn error_code(e: &anyhow::Error) -> String {
    if let Some(s) = e.downcast_ref::<ServerError>() {
        return s.0.clone();
    }
    let text = format!("{e:#}");
    if text.contains("no answer within") {
        "timeout".into()
    } else if text.contains("closed") || text.contains("reset") || text.contains("broken pipe") {
        "connection_closed".into()
    } else if text.contains("refused") {
        "connection_refused".into()
    } else {
        "client_io".into()
    }
}

/// A TCP connection to `addr`, from `source` if given (another loopback address gives
/// another set of source ports).
pub(crate) async fn tcp(addr: SocketAddr, source: Option<Ipv4Addr>) -> anyhow::Result<TcpStream> {
    let stream = match (source, addr.ip()) {
        (Some(src), IpAddr::V4(_)) if src != Ipv4Addr::LOCALHOST => {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::new(IpAddr::V4(src), 0))?;
            socket.connect(addr).await?
        }
        _ => TcpStream::connect(addr).await?,
    };
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// A new guest's token (`POST /api/guest`).
pub(crate) async fn guest_token(
    addr: SocketAddr,
    source: Option<Ipv4Addr>,
) -> anyhow::Result<String> {
    let mut s = tcp(addr, source).await?;
    s.write_all(
        format!("POST /api/guest HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    )
    .await?;
    let mut out = String::new();
    tokio::time::timeout(ANSWER_WITHIN, s.read_to_string(&mut out))
        .await
        .context("no answer within 30 s to POST /api/guest")??;
    let status = out.split_whitespace().nth(1).unwrap_or_default();
    anyhow::ensure!(status == "201", "POST /api/guest answered {status}");
    let body = &out[out.find('{').context("no body")?..=out.rfind('}').context("no body")?];
    let v: Value = serde_json::from_str(body)?;
    Ok(v["token"].as_str().context("no token")?.to_owned())
}

/// A new guest, connected and authenticated.
pub(crate) async fn guest(addr: SocketAddr, source: Option<Ipv4Addr>) -> anyhow::Result<Ws> {
    let token = guest_token(addr, source).await?;
    authenticated(addr, source, &token).await
}

/// The tool's WebSocket settings: a 4 KiB read buffer. tungstenite zero-fills the whole
/// read buffer before every read, and its default (128 KiB) made `memset` the tool's
/// largest cost (frames here are a few hundred bytes; a larger one takes more reads).
fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(4096)
}

/// A connection authenticated with `token`.
pub(crate) async fn authenticated(
    addr: SocketAddr,
    source: Option<Ipv4Addr>,
    token: &str,
) -> anyhow::Result<Ws> {
    let stream = tcp(addr, source).await?;
    let (mut ws, _) = tokio_tungstenite::client_async_with_config(
        format!("ws://{addr}/ws/v1"),
        stream,
        Some(ws_config()),
    )
    .await?;
    send(&mut ws, &json!({"type": "auth", "token": token})).await?;
    until(&mut ws, |v| v["type"] == "authenticated").await?;
    Ok(ws)
}

pub(crate) async fn send(ws: &mut Ws, v: &Value) -> anyhow::Result<()> {
    ws.send(Message::Text(v.to_string().into())).await?;
    Ok(())
}

/// Sends a frame already written as JSON text.
pub(crate) async fn send_text(ws: &mut Ws, text: String) -> anyhow::Result<()> {
    ws.send(Message::Text(text.into())).await?;
    Ok(())
}

/// The next text frame, as it came.
pub(crate) async fn next_text(ws: &mut Ws) -> anyhow::Result<Utf8Bytes> {
    loop {
        let msg = tokio::time::timeout(ANSWER_WITHIN, ws.next())
            .await
            .context("no answer within 30 s")?
            .context("connection closed")??;
        match msg {
            Message::Text(t) => return Ok(t),
            Message::Close(c) => anyhow::bail!("connection closed by the server: {c:?}"),
            _ => {}
        }
    }
}

/// The next JSON frame.
pub(crate) async fn next(ws: &mut Ws) -> anyhow::Result<Value> {
    Ok(serde_json::from_str(&next_text(ws).await?)?)
}

/// What the move path reads of a server frame; every other field is skipped unparsed
/// (a `serde_json::Value` of each frame — a map per object — was a tenth of the tool's
/// CPU). The strings read here never hold JSON escapes (types, ids, UUIDs, FENs), so
/// they borrow from the frame; a frame where one did would fail to parse and be counted
/// as an error, never misread.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct Frame<'a> {
    #[serde(rename = "type")]
    pub kind: &'a str,
    #[serde(default)]
    pub id: Option<&'a str>,
    #[serde(default)]
    pub game_id: Option<&'a str>,
    #[serde(default)]
    pub version: Option<u64>,
    #[serde(default)]
    pub code: Option<&'a str>,
    #[serde(default)]
    pub event: Option<EventPart<'a>>,
    #[serde(default)]
    pub outcome: Option<serde::de::IgnoredAny>,
}

/// The `event` of an `event` frame, as far as the move path reads it.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct EventPart<'a> {
    #[serde(default)]
    pub kind: Option<&'a str>,
    #[serde(default)]
    pub fen: Option<&'a str>,
    #[serde(default)]
    pub turn: Option<&'a str>,
    #[serde(default)]
    pub promotion_pending: Option<bool>,
    #[serde(default)]
    pub outcome: Option<serde::de::IgnoredAny>,
}

/// Frames until one matches `pred`; an `error` frame stops the wait.
pub(crate) async fn until(ws: &mut Ws, pred: impl Fn(&Value) -> bool) -> anyhow::Result<Value> {
    loop {
        let v = next(ws).await?;
        if v["type"] == "error" {
            let code = v["code"].as_str().unwrap_or("error").to_owned();
            return Err(ServerError(code, v).into());
        }
        if pred(&v) {
            return Ok(v);
        }
    }
}

/// One HTTP/1.1 request on a kept-alive connection: the status.
pub(crate) async fn keep_alive_post(
    stream: &mut tokio::io::BufReader<TcpStream>,
    addr: SocketAddr,
    path: &str,
    body: &str,
) -> anyhow::Result<u16> {
    use tokio::io::AsyncBufReadExt as _;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.get_mut().write_all(request.as_bytes()).await?;
    let mut status = 0;
    let mut length = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        anyhow::ensure!(stream.read_line(&mut line).await? > 0, "closed");
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if status == 0 {
            status = l.split_whitespace().nth(1).context("status")?.parse()?;
        } else if let Some((name, value)) = l.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse()?;
        }
    }
    let mut body = vec![0; length.min(1 << 20)];
    stream.read_exact(&mut body).await?;
    Ok(status)
}

/// A small xorshift generator: runs are repeatable from their seeds.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }

    /// A uniform draw in (0, 1].
    pub(crate) fn unit(&mut self) -> f64 {
        (self.below(1 << 30) as f64 + 1.0) / f64::from(1u32 << 30)
    }
}
