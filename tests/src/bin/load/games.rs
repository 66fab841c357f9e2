//! Played games: pairs of guests (closed or open loop), their spectators, and games
//! against the computer. Every move is a random legal move of the mover's own view: the
//! position is read from the `fen` of the last event the mover received (in hidden chess
//! the public position, hidden pieces shown as their apparent type).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use frontier_rules::{Position, Variant};
use futures_util::StreamExt as _;
use serde_json::{Value, json};

use crate::Run;
use crate::client::{self, Rng, ServerError, Ws};

/// Where a game stands, as its players see it.
struct View {
    game_id: String,
    variant: Variant,
    fen: String,
    turn: String,
    pending: bool,
    version: u64,
    over: bool,
}

/// What one event frame changes in a [`View`].
struct Seen {
    version: Option<u64>,
    fen: Option<String>,
    turn: Option<String>,
    /// Set by a move or a promotion: whether a promotion choice is now pending.
    pending: Option<bool>,
    over: bool,
}

impl Seen {
    fn of(f: &client::Frame<'_>) -> Seen {
        let e = f.event.as_ref();
        let moved = e
            .and_then(|e| e.kind)
            .is_some_and(|k| k == "move" || k == "promotion");
        Seen {
            version: f.version,
            fen: e.and_then(|e| e.fen).map(str::to_owned),
            turn: e.and_then(|e| e.turn).map(str::to_owned),
            pending: moved.then(|| e.and_then(|e| e.promotion_pending) == Some(true)),
            over: f.outcome.is_some() || e.is_some_and(|e| e.outcome.is_some()),
        }
    }

    fn of_value(event: &Value) -> Seen {
        let e = &event["event"];
        Seen {
            version: event["version"].as_u64(),
            fen: e["fen"].as_str().map(str::to_owned),
            turn: e["turn"].as_str().map(str::to_owned),
            pending: (e["kind"] == "move" || e["kind"] == "promotion")
                .then(|| e["promotion_pending"] == true),
            over: !event["outcome"].is_null() || !e["outcome"].is_null(),
        }
    }
}

impl View {
    fn update(&mut self, seen: &Seen) {
        if let Some(v) = seen.version {
            self.version = self.version.max(v);
        }
        if let Some(fen) = &seen.fen {
            fen.clone_into(&mut self.fen);
        }
        if let Some(turn) = &seen.turn {
            turn.clone_into(&mut self.turn);
        }
        if let Some(pending) = seen.pending {
            self.pending = pending;
        }
        self.over |= seen.over;
    }

    /// The next action of the side to move: a random legal move of this view, or the
    /// choice of a pending promotion.
    fn action(&self, rng: &mut Rng, id: &str) -> anyhow::Result<Action> {
        if self.pending {
            let role = ["q", "r", "b", "n"][rng.below(4)];
            return Ok(Action::new(
                id,
                json!({"type": "promote", "id": id, "game_id": self.game_id, "role": role})
                    .to_string(),
            ));
        }
        let pos = Position::from_fen(self.variant, &self.fen)
            .map_err(|e| anyhow::anyhow!("the view's FEN {}: {e}", self.fen))?;
        let moves = pos.legal_move_list();
        anyhow::ensure!(
            !moves.is_empty(),
            "no legal move but no outcome: {}",
            self.fen
        );
        let m = moves[rng.below(moves.len())];
        // Ids, game ids (UUIDs) and UCI need no JSON escapes.
        Ok(Action::new(
            id,
            format!(
                r#"{{"type":"move","id":"{id}","game_id":"{}","uci":"{m}"}}"#,
                self.game_id
            ),
        ))
    }
}

/// A client action: its id and its frame.
struct Action {
    id: String,
    text: String,
}

impl Action {
    fn new(id: &str, text: String) -> Action {
        Action {
            id: id.to_owned(),
            text,
        }
    }
}

/// Sends `action` (carrying `id`) and reads the sender's frames until both its `ack` and
/// the event of the version it produced arrived (in either order). The ack's arrival time
/// and the game's events from that version on (a later one, e.g. the computer's answer,
/// may already have come).
async fn act(ws: &mut Ws, action: Action, game_id: &str) -> anyhow::Result<(Instant, Vec<Seen>)> {
    let Action { id, text } = action;
    client::send_text(ws, text).await?;
    let mut events: Vec<Seen> = Vec::new();
    let mut acked: Option<(Instant, u64)> = None;
    loop {
        if let Some((at, version)) = acked
            && events.iter().any(|e| e.version == Some(version))
        {
            events.retain(|e| e.version.is_some_and(|v| v >= version));
            return Ok((at, events));
        }
        let raw = client::next_text(ws).await?;
        let f: client::Frame<'_> = serde_json::from_str(&raw)
            .with_context(|| format!("a frame the tool cannot read: {}", raw.as_str()))?;
        match f.kind {
            "ack" if f.id == Some(id.as_str()) => {
                let version = f.version.context("an ack has a version")?;
                acked = Some((Instant::now(), version));
            }
            "event" if f.game_id == Some(game_id) => events.push(Seen::of(&f)),
            "error" if f.id == Some(id.as_str()) || f.id.is_none() => {
                let code = f.code.unwrap_or("error").to_owned();
                let v: Value = serde_json::from_str(&raw)?;
                return Err(ServerError(code, v).into());
            }
            _ => {}
        }
    }
}

/// Opens a game (white creates, black joins): its starting view.
async fn new_game(white: &mut Ws, black: &mut Ws, variant: &str, n: u64) -> anyhow::Result<View> {
    client::send(
        white,
        &json!({"type": "create_board", "id": format!("c{n}"), "variant": variant, "color": "white"}),
    )
    .await?;
    let created = client::until(white, |v| v["type"] == "board_created").await?;
    let game_id = created["game_id"]
        .as_str()
        .context("no game id")?
        .to_owned();
    client::send(
        black,
        &json!({"type": "join_board", "id": format!("j{n}"), "code": created["code"]}),
    )
    .await?;
    client::until(black, |v| v["type"] == "board_joined").await?;
    // White sees the game start: its `started` event, or (if the join won the race with
    // the automatic open) a `game` frame already playing.
    let start = client::until(white, |v| {
        v["game_id"] == game_id.as_str()
            && ((v["type"] == "event" && v["event"]["kind"] == "started")
                || (v["type"] == "game" && v["game"]["status"] == "playing"))
    })
    .await?;
    let fen = if start["type"] == "game" {
        &start["game"]["fen"]
    } else {
        &start["event"]["fen"]
    };
    Ok(View {
        game_id,
        variant: variant.parse().map_err(anyhow::Error::msg)?,
        fen: fen.as_str().context("no FEN")?.to_owned(),
        turn: "white".into(),
        pending: false,
        version: start["version"].as_u64().unwrap_or(2),
        over: false,
    })
}

/// Spectators: connections whose frames are only counted.
struct Spectators {
    sinks: Vec<futures_util::stream::SplitSink<Ws, tokio_tungstenite::tungstenite::Message>>,
    readers: Vec<tokio::task::JoinHandle<()>>,
}

impl Spectators {
    async fn connect(run: &Arc<Run>, n: usize, seed: usize) -> anyhow::Result<Spectators> {
        let mut s = Spectators {
            sinks: Vec::new(),
            readers: Vec::new(),
        };
        for k in 0..n {
            let ws = client::guest(run.target(seed + k), None).await?;
            let (sink, mut stream) = ws.split();
            let run = run.clone();
            s.sinks.push(sink);
            s.readers.push(tokio::spawn(async move {
                while let Some(Ok(msg)) = stream.next().await {
                    if let tokio_tungstenite::tungstenite::Message::Text(t) = msg
                        && t.as_str().starts_with(r#"{"type":"event""#)
                    {
                        run.rec().spectator_events += 1;
                    }
                }
            }));
        }
        Ok(s)
    }

    async fn watch(&mut self, game_id: &str) -> anyhow::Result<()> {
        use futures_util::SinkExt as _;
        let open = json!({"type": "open", "game_id": game_id}).to_string();
        for sink in &mut self.sinks {
            sink.send(tokio_tungstenite::tungstenite::Message::Text(
                open.clone().into(),
            ))
            .await?;
        }
        Ok(())
    }
}

impl Drop for Spectators {
    fn drop(&mut self) {
        for r in &self.readers {
            r.abort();
        }
    }
}

/// One pair of guests playing game after game until the run stops; white on gateway `i`,
/// black on the next (so with several gateways the moves cross between them). With
/// `interval`, open loop: move k of this pair is due at `phase + k·interval` and its round
/// trip counts from then.
pub(crate) async fn pair(run: Arc<Run>, i: usize, interval: Option<Duration>, phase: Duration) {
    let mut rng = Rng::new(i as u64 + 1);
    let mut due = interval.map(|_| run.started + phase);
    let mut n = 0u64;
    let mut first = true;
    while !run.stopping() {
        if !first {
            run.rec().reconnects += 1;
        }
        first = false;
        let connected = async {
            let white = client::guest(run.target(i), None).await?;
            let black = client::guest(run.target(i + 1), None).await?;
            let spectators = Spectators::connect(&run, run.args.spectators, i).await?;
            anyhow::Ok((white, black, spectators))
        }
        .await;
        let (mut white, mut black, mut spectators) = match connected {
            Ok(c) => c,
            Err(e) => {
                run.fail("", &e);
                // Do not spin against a gateway that refuses: a short pause, then again.
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        while !run.stopping() {
            n += 1;
            let variant = run.args.variant.pick(n + i as u64);
            // A pair's first game ends at a random length up to `--max-plies`, so that the
            // games of a run do not all end and start again at the same moment.
            let max_plies = run.args.max_plies.max(1);
            let limit = if n == 1 {
                rng.below(max_plies as usize) as u32 + 1
            } else {
                max_plies
            };
            let played = play(
                &run,
                &mut white,
                &mut black,
                &mut spectators,
                variant,
                (n, limit),
                &mut rng,
                &mut due,
                interval,
            )
            .await;
            if let Err(e) = played {
                run.fail("", &e);
                break;
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn play(
    run: &Run,
    white: &mut Ws,
    black: &mut Ws,
    spectators: &mut Spectators,
    variant: &str,
    (n, max_plies): (u64, u32),
    rng: &mut Rng,
    due: &mut Option<Instant>,
    interval: Option<Duration>,
) -> anyhow::Result<()> {
    let mut view = new_game(white, black, variant, n)
        .await
        .context("starting a game")?;
    spectators.watch(&view.game_id).await?;
    // Setting up a game is not a move: slots that passed meanwhile are skipped (the game
    // joins its own grid again, so games set up late do not all fall due together).
    if let (Some(d), Some(every)) = (due.as_mut(), interval) {
        *d = resume_at(*d, Instant::now(), every, run.args.arrivals, rng);
    }
    let mut ply = 0u32;
    // The last version each side's own connection delivered (a side moves only once the
    // opponent's move reached it there, as a real player does).
    let mut seen = [view.version, view.version];
    while !view.over {
        let side = usize::from(view.turn != "white");
        let mover = if side == 0 { &mut *white } else { &mut *black };
        if seen[side] < view.version {
            wait_for(mover, &view.game_id, view.version)
                .await
                .with_context(|| {
                    format!(
                        "side {side} waiting for v{} of {}",
                        view.version, view.game_id
                    )
                })?;
            seen[side] = view.version;
        }
        if ply >= max_plies || run.stopping() {
            let id = format!("r{n}");
            let resign = json!({"type": "resign", "id": id, "game_id": view.game_id});
            act(mover, Action::new(&id, resign.to_string()), &view.game_id).await?;
            return Ok(());
        }
        if let Some(d) = *due {
            tokio::time::sleep_until(d.into()).await;
        }
        let id = format!("m{n}.{ply}");
        let action = view.action(rng, &id)?;
        let sent = Instant::now();
        let (acked, events) = act(mover, action, &view.game_id)
            .await
            .with_context(|| format!("the ack of {id} in {}", view.game_id))?;
        let origin = due.unwrap_or(sent);
        run.move_done(acked.saturating_duration_since(origin));
        if let (Some(d), Some(every)) = (due.as_mut(), interval) {
            *d += next_gap(every, run.args.arrivals, rng);
        }
        events.iter().for_each(|e| view.update(e));
        seen[side] = seen[side].max(view.version);
        ply += 1;
    }
    Ok(())
}

/// The gap to a game's next move: the interval, or an exponential draw of that mean.
fn next_gap(every: Duration, arrivals: crate::cli::Arrivals, rng: &mut Rng) -> Duration {
    match arrivals {
        crate::cli::Arrivals::Even => every,
        crate::cli::Arrivals::Poisson => every.mul_f64(-rng.unit().ln()),
    }
}

/// A game's next due time after its set-up ended at `now`: `due` itself if still ahead,
/// else the first slot of its grid after `now` (even), or `now` plus a fresh gap (Poisson:
/// memoryless).
fn resume_at(
    due: Instant,
    now: Instant,
    every: Duration,
    arrivals: crate::cli::Arrivals,
    rng: &mut Rng,
) -> Instant {
    if due >= now {
        return due;
    }
    match arrivals {
        crate::cli::Arrivals::Even => {
            let every_ns = every.as_nanos().max(1);
            let missed = (now - due).as_nanos().div_ceil(every_ns);
            due + Duration::from_nanos(u64::try_from(missed * every_ns).unwrap_or(u64::MAX))
        }
        crate::cli::Arrivals::Poisson => now + next_gap(every, arrivals, rng),
    }
}

/// Reads `ws` until it delivered `version` of `game_id` (or a later one), as an event or
/// in a view.
async fn wait_for(ws: &mut Ws, game_id: &str, version: u64) -> anyhow::Result<()> {
    loop {
        let raw = client::next_text(ws).await?;
        let f: client::Frame<'_> = serde_json::from_str(&raw)
            .with_context(|| format!("a frame the tool cannot read: {}", raw.as_str()))?;
        match f.kind {
            // The event, or the game's view at that version or later: a follow that
            // started after the move (its first read came late) begins with a view.
            "event" | "game"
                if f.game_id == Some(game_id) && f.version.is_some_and(|v| v >= version) =>
            {
                return Ok(());
            }
            // An error of the connection, or of this game's relay (it names the request
            // that opened the game): nothing more of the game comes on this follow.
            "error" if f.id.is_none() || f.game_id == Some(game_id) => {
                let code = f.code.unwrap_or("error").to_owned();
                return Err(ServerError(code, serde_json::from_str(&raw)?).into());
            }
            _ => {}
        }
    }
}

/// One guest playing the computer (level easy, White) game after game: its moves' round
/// trips count as moves, and the time from its move's ack to the computer's answer is
/// recorded apart.
pub(crate) async fn bot_games(run: Arc<Run>, i: usize) {
    let mut rng = Rng::new(1_000_000 + i as u64);
    let mut n = 0u64;
    let mut first = true;
    while !run.stopping() {
        if !first {
            run.rec().reconnects += 1;
        }
        first = false;
        let mut ws = match client::guest(run.target(i), None).await {
            Ok(ws) => ws,
            Err(e) => {
                run.fail("", &e);
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        while !run.stopping() {
            n += 1;
            let variant = run.args.variant.pick(n + i as u64);
            if let Err(e) = against_computer(&run, &mut ws, variant, n, &mut rng).await {
                run.fail("", &e);
                break;
            }
        }
    }
}

async fn against_computer(
    run: &Run,
    ws: &mut Ws,
    variant: &str,
    n: u64,
    rng: &mut Rng,
) -> anyhow::Result<()> {
    let id = format!("pc{n}");
    client::send(
        ws,
        &json!({"type": "play_computer", "id": id, "variant": variant, "level": "easy", "color": "white"}),
    )
    .await?;
    let created = client::until(ws, |v| v["type"] == "game_created").await?;
    let game_id = created["game_id"]
        .as_str()
        .context("no game id")?
        .to_owned();
    let frame = client::until(ws, |v| {
        v["type"] == "game" && v["game_id"] == game_id.as_str()
    })
    .await?;
    let mut view = View {
        game_id,
        variant: variant.parse().map_err(anyhow::Error::msg)?,
        fen: frame["game"]["fen"].as_str().context("no FEN")?.to_owned(),
        turn: frame["game"]["turn"].as_str().unwrap_or("white").to_owned(),
        pending: frame["game"]["pending_promotion"].is_object(),
        version: frame["version"].as_u64().unwrap_or(1),
        over: false,
    };
    let mut ply = 0u32;
    while !view.over {
        if view.turn != "white" {
            // The computer's turn: wait for its move (or the end).
            let after = view.version;
            let asked = Instant::now();
            let answer = client::until(ws, |v| {
                v["type"] == "event"
                    && v["game_id"] == view.game_id.as_str()
                    && v["version"].as_u64().is_some_and(|x| x > after)
                    && (v["event"]["turn"] == "white" && v["event"]["promotion_pending"] != true
                        || !v["outcome"].is_null())
            })
            .await?;
            run.rec()
                .bot_replies
                .record(asked.elapsed().as_micros() as u64);
            view.update(&Seen::of_value(&answer));
            continue;
        }
        if ply >= run.args.max_plies || run.stopping() {
            let id = format!("r{n}");
            let resign = json!({"type": "resign", "id": id, "game_id": view.game_id});
            act(ws, Action::new(&id, resign.to_string()), &view.game_id).await?;
            return Ok(());
        }
        let action = view.action(rng, &format!("b{n}.{ply}"))?;
        let sent = Instant::now();
        let (acked, events) = act(ws, action, &view.game_id).await?;
        run.move_done(acked.saturating_duration_since(sent));
        events.iter().for_each(|e| view.update(e));
        ply += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Arrivals;

    #[test]
    fn a_game_set_up_late_rejoins_its_own_grid() {
        let mut rng = Rng::new(1);
        let t0 = Instant::now();
        let every = Duration::from_millis(500);
        // Still ahead: unchanged.
        let ahead = t0 + Duration::from_millis(200);
        assert_eq!(resume_at(ahead, t0, every, Arrivals::Even, &mut rng), ahead);
        // 1.3 s late: the slots at +0.5 and +1.0 are skipped, the next is at +1.5 —
        // the game keeps its phase instead of falling due now.
        let due = t0;
        let now = t0 + Duration::from_millis(1_300);
        assert_eq!(
            resume_at(due, now, every, Arrivals::Even, &mut rng),
            t0 + Duration::from_millis(1_500)
        );
        // Exactly on a slot: that slot.
        let now = t0 + Duration::from_millis(1_000);
        assert_eq!(resume_at(due, now, every, Arrivals::Even, &mut rng), now);
    }

    #[test]
    fn poisson_gaps_average_the_interval() {
        let mut rng = Rng::new(7);
        let every = Duration::from_millis(100);
        let n = 20_000;
        let total: Duration = (0..n)
            .map(|_| next_gap(every, Arrivals::Poisson, &mut rng))
            .sum();
        let mean = total.as_secs_f64() / f64::from(n);
        assert!((0.095..0.105).contains(&mean), "mean gap {mean}");
        let late = resume_at(
            Instant::now() - Duration::from_secs(1),
            Instant::now(),
            every,
            Arrivals::Poisson,
            &mut rng,
        );
        assert!(late >= Instant::now() - Duration::from_millis(1));
    }
}
