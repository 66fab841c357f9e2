//! `frontier smoke`: one move played through a running gateway, as a player would — the
//! chart's `helm test` runs it. Two guests are made (`POST /api/guest`), the first creates
//! a private board, the second joins it by its code, the first plays `e2e4` and is
//! acknowledged, then resigns. Exit status 0 when all of that held within `--timeout`;
//! otherwise 1, with the step that failed.

use std::time::Duration;

use anyhow::{Context as _, bail};
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

/// `frontier smoke`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct SmokeArgs {
    /// The gateway's base URL, e.g. `http://frontier-gateway:8080` (plain HTTP: inside the
    /// cluster, before any TLS-terminating ingress).
    #[arg(long, env = "FRONTIER_SMOKE_GATEWAY")]
    pub gateway: String,
    /// How long the whole check may take.
    #[arg(long, default_value = "30s", value_parser = frontier_platform::config::parse_duration)]
    pub timeout: Duration,
}

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<TcpStream>>;

/// Runs the check; `Ok` when the move was played.
pub async fn run(args: SmokeArgs) -> anyhow::Result<()> {
    let authority = args
        .gateway
        .strip_prefix("http://")
        .context("--gateway: an http:// URL")?
        .trim_end_matches('/')
        .to_owned();
    tokio::time::timeout(args.timeout, play_one_move(&authority))
        .await
        .with_context(|| format!("no move played within {:?}", args.timeout))??;
    println!("smoke: a move was played through {}", args.gateway);
    Ok(())
}

async fn play_one_move(authority: &str) -> anyhow::Result<()> {
    let white_token = guest(authority).await.context("guest for White")?;
    let black_token = guest(authority).await.context("guest for Black")?;
    let mut white = connect(authority, &white_token)
        .await
        .context("White connects")?;
    send(
        &mut white,
        json!({"type": "create_board", "id": "c", "variant": "standard", "color": "white"}),
    )
    .await?;
    let created = answer(&mut white, "c").await.context("create_board")?;
    let game = created["game_id"]
        .as_str()
        .context("board_created: game_id")?;
    let code = created["code"].as_str().context("board_created: code")?;
    let mut black = connect(authority, &black_token)
        .await
        .context("Black connects")?;
    send(
        &mut black,
        json!({"type": "join_board", "id": "j", "code": code}),
    )
    .await?;
    answer(&mut black, "j").await.context("join_board")?;
    send(
        &mut white,
        json!({"type": "move", "id": "m", "game_id": game, "uci": "e2e4"}),
    )
    .await?;
    answer(&mut white, "m").await.context("move e2e4")?;
    send(
        &mut white,
        json!({"type": "resign", "id": "r", "game_id": game}),
    )
    .await?;
    answer(&mut white, "r").await.context("resign")?;
    Ok(())
}

/// A guest token from `POST /api/guest` (HTTP/1.1, closed after the answer).
async fn guest(authority: &str) -> anyhow::Result<String> {
    let mut stream = TcpStream::connect(authority).await?;
    let request = format!(
        "POST /api/guest HTTP/1.1\r\nHost: {authority}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    stream.take(64 * 1024).read_to_end(&mut raw).await?;
    let text = String::from_utf8_lossy(&raw);
    let status = text.split_whitespace().nth(1).unwrap_or_default();
    if status != "201" {
        bail!("POST /api/guest answered {status}");
    }
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default();
    // The JSON object, whether or not the body came in chunks.
    let start = body.find('{').context("a JSON body")?;
    let end = body.rfind('}').context("a JSON body")?;
    let value: Value = serde_json::from_str(&body[start..=end])?;
    Ok(value["token"].as_str().context("a token")?.to_owned())
}

async fn connect(authority: &str, token: &str) -> anyhow::Result<Socket> {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{authority}/ws/v1")).await?;
    let welcome = next(&mut ws).await?;
    if welcome["type"] != "welcome" {
        bail!("expected welcome, got {welcome}");
    }
    send(&mut ws, json!({"type": "auth", "token": token})).await?;
    let reply = next(&mut ws).await?;
    if reply["type"] != "authenticated" {
        bail!("expected authenticated, got {reply}");
    }
    Ok(ws)
}

async fn send(ws: &mut Socket, value: Value) -> anyhow::Result<()> {
    ws.send(Message::text(value.to_string())).await?;
    Ok(())
}

async fn next(ws: &mut Socket) -> anyhow::Result<Value> {
    loop {
        match ws
            .next()
            .await
            .context("the gateway closed the connection")??
        {
            Message::Text(t) => return Ok(serde_json::from_str(t.as_str())?),
            Message::Close(frame) => bail!("the gateway closed the connection: {frame:?}"),
            _ => {}
        }
    }
}

/// The answer to the message of this id; an error frame fails.
async fn answer(ws: &mut Socket, id: &str) -> anyhow::Result<Value> {
    loop {
        let v = next(ws).await?;
        if v["id"] == id {
            if v["type"] == "error" {
                bail!("refused: {v}");
            }
            return Ok(v);
        }
    }
}
