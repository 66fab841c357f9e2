//! Rendering games and events for one audience. The inputs are the rules library's
//! audience-filtered `View` and `MoveEvent`, so nothing secret can reach a frame that the
//! rules library did not already grant to that audience.

use frontier_rules::{Audience, Color, MoveEvent, Outcome, PublishedShuffle, Role, Square, View};
use serde::{Deserialize, Serialize};

use crate::ClockSpec;
use crate::server::{
    CapturedIdentityWire, CapturedWire, ClocksWire, GameEvent, GameWire, MoveWire, OutcomeWire,
    RevealWire, ServerMessage, ShuffleWire,
};

/// A player as everyone sees them. A bot is always labelled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlayerInfo {
    /// Player id (UUID).
    pub id: String,
    /// Display name.
    pub name: String,
    /// A guest account.
    pub guest: bool,
    /// A bot.
    pub bot: bool,
}

/// Where a game stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Waiting for the second player.
    Waiting,
    /// Being played.
    Playing,
    /// Over.
    Finished,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Waiting => "waiting",
            Status::Playing => "playing",
            Status::Finished => "finished",
        }
    }
}

/// The facts about a game that are not the rules state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameMeta {
    /// `standard`, `hidden` or `atomic`.
    pub variant: &'static str,
    /// Rated or casual.
    pub rated: bool,
    /// The clock.
    pub clock: Option<ClockSpec>,
    /// Where it stands.
    pub status: Status,
    /// White, once seated.
    pub white: Option<PlayerInfo>,
    /// Black, once seated.
    pub black: Option<PlayerInfo>,
    /// A standing draw offer.
    pub draw_offer: Option<Color>,
    /// Timed games: both clocks now.
    pub clocks: Option<ClocksWire>,
}

/// A move of the public move list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicMove {
    /// UCI as played.
    pub uci: String,
    /// What it revealed: square and role.
    pub reveal: Option<(Square, Role)>,
    /// What it captured: square, shown role, whether hidden.
    pub captured: Option<(Square, Role, bool)>,
}

/// What a move event says of the position after it. Public and the same for every
/// audience, so it is worked out once per move and rendered into each audience's frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AfterMove {
    /// The view FEN after the move.
    fen: String,
    /// The side whose action is awaited.
    turn: Color,
    /// A promotion choice is awaited.
    pending: bool,
    /// The side to move is in check after the move, whether or not the move also ended
    /// the game (mate, or a draw by insufficient material or the fifty-move rule).
    in_check: bool,
}

impl AfterMove {
    /// The public position's FEN after the move, taken out once the frames are written.
    pub fn into_fen(self) -> String {
        self.fen
    }

    /// From a view taken after the move (any audience's: these fields are public).
    pub fn of(view: &View) -> AfterMove {
        let pending = view.pending_promotion.is_some();
        AfterMove {
            fen: view.fen(),
            turn: side_to_act(view),
            pending,
            in_check: !pending && view.position.is_check(),
        }
    }
}

/// Which event to render.
#[derive(Debug, Clone)]
pub enum EventRender<'a> {
    /// Board created.
    Created {
        /// The creator's colour.
        color: Color,
        /// The creator.
        player: &'a PlayerInfo,
    },
    /// Second player joined.
    Started {
        /// White.
        white: &'a PlayerInfo,
        /// Black.
        black: &'a PlayerInfo,
        /// Commitment (hidden chess).
        commitment: Option<String>,
        /// Start FEN (view).
        fen: String,
    },
    /// A move or a promotion choice, as this audience may see it, and the position after
    /// it (the same for every audience).
    Move {
        /// The event for this audience.
        event: &'a MoveEvent,
        /// The public position after the move.
        after: &'a AfterMove,
    },
    /// Draw offered.
    DrawOffered(Color),
    /// Draw declined.
    DrawDeclined(Color),
    /// Moves taken back (undo): the public position now, and the moves taken back.
    Undo {
        /// The position now.
        after: &'a AfterMove,
        /// Half-moves played now.
        ply: u32,
        /// The moves taken back (UCI), in the order they were played.
        taken_back: &'a [String],
    },
    /// Ended without a move.
    Ended,
}

fn outcome_wire(outcome: &Outcome) -> OutcomeWire {
    let code = outcome.code();
    let (result, reason) = match outcome {
        Outcome::Aborted => ("aborted".to_owned(), "aborted".to_owned()),
        Outcome::Draw { reason } => ("draw".to_owned(), reason.code().to_owned()),
        Outcome::Win { winner, reason } => (winner.name().to_owned(), reason.code().to_owned()),
    };
    debug_assert!(code.ends_with(&reason));
    OutcomeWire { result, reason }
}

fn shuffle_wire(s: &PublishedShuffle) -> ShuffleWire {
    ShuffleWire {
        layout: s.layout.clone(),
        salt: s.salt.clone(),
        commitment: s.commitment.clone(),
    }
}

/// `white`, `black` or `spectator`.
pub fn seat_name(audience: Audience) -> &'static str {
    match audience {
        Audience::Player(c) => c.name(),
        Audience::Spectator => "spectator",
    }
}

fn side_to_act(view: &View) -> Color {
    view.position.turn()
}

/// The `game` message for one audience.
pub fn render_view(
    game_id: &str,
    version: u64,
    meta: &GameMeta,
    view: &View,
    moves: &[PublicMove],
) -> String {
    to_json(&ServerMessage::Game {
        game_id: game_id.to_owned(),
        version,
        seat: seat_name(view.audience).to_owned(),
        game: Box::new(game_wire(meta, view, moves)),
    })
}

/// The game of a `game` message for one audience (what [`render_view`] sends; a bot job
/// carries exactly this for the bot's seat).
pub fn game_wire(meta: &GameMeta, view: &View, moves: &[PublicMove]) -> GameWire {
    GameWire {
        variant: meta.variant.to_owned(),
        rated: meta.rated,
        clock: meta.clock,
        status: meta.status.as_str().to_owned(),
        white: meta.white.clone(),
        black: meta.black.clone(),
        fen: view.fen(),
        turn: side_to_act(view).name().to_owned(),
        ply: moves.len() as u32,
        moves: moves
            .iter()
            .map(|m| MoveWire {
                uci: m.uci.clone(),
                reveal: m.reveal.map(|(sq, role)| RevealWire {
                    square: sq.to_string(),
                    role: role.name().to_owned(),
                }),
                captured: m.captured.map(|(sq, role, hidden)| CapturedWire {
                    square: sq.to_string(),
                    role: role.name().to_owned(),
                    hidden,
                }),
            })
            .collect(),
        pending_promotion: view.pending_promotion.map(|sq| sq.to_string()),
        captured_identities: view
            .captured_identities
            .iter()
            .map(|c| CapturedIdentityWire {
                square: c.square.to_string(),
                role: c.role.name().to_owned(),
                ply: c.ply,
            })
            .collect(),
        draw_offer: meta.draw_offer.map(|c| c.name().to_owned()),
        commitment: view.commitment.map(|c| c.to_hex()),
        outcome: view.outcome.as_ref().map(outcome_wire),
        shuffle: view.shuffle.as_ref().map(shuffle_wire),
        clocks: meta.clocks.clone(),
    }
}

/// The `event` message for one audience.
pub fn render_event(
    game_id: &str,
    version: u64,
    event: &EventRender<'_>,
    outcome: Option<&Outcome>,
    shuffle: Option<&PublishedShuffle>,
    clocks: Option<ClocksWire>,
) -> String {
    // A move that neither ended the game nor completed a promotion — almost every event
    // of a live game — is written straight into its frame (see [`move_frame`]).
    if let EventRender::Move { event, after } = event
        && !event.completes_promotion
        && outcome.is_none()
        && shuffle.is_none()
    {
        return move_frame(game_id, version, event, after, clocks.as_ref());
    }
    render_with_serde(game_id, version, event, outcome, shuffle, clocks)
}

/// [`render_event`] through the protocol's types and serde: every event.
fn render_with_serde(
    game_id: &str,
    version: u64,
    event: &EventRender<'_>,
    outcome: Option<&Outcome>,
    shuffle: Option<&PublishedShuffle>,
    clocks: Option<ClocksWire>,
) -> String {
    let event = match event {
        EventRender::Created { color, player } => GameEvent::Created {
            color: color.name().to_owned(),
            player: (*player).clone(),
        },
        EventRender::Started {
            white,
            black,
            commitment,
            fen,
        } => GameEvent::Started {
            white: (*white).clone(),
            black: (*black).clone(),
            commitment: commitment.clone(),
            fen: fen.clone(),
        },
        EventRender::Move { event, after } => {
            let check = says_check(event, after);
            let turn = after.turn.name().to_owned();
            if event.completes_promotion {
                GameEvent::Promotion {
                    ply: event.ply,
                    color: event.mover.name().to_owned(),
                    uci: event.uci.to_string(),
                    role: event
                        .uci
                        .promotion
                        .map(|r| r.name().to_owned())
                        .unwrap_or_default(),
                    check,
                    fen: after.fen.clone(),
                    turn,
                }
            } else {
                GameEvent::Move {
                    ply: event.ply,
                    color: event.mover.name().to_owned(),
                    uci: event.uci.to_string(),
                    reveal: event.reveal.map(|r| RevealWire {
                        square: r.square.to_string(),
                        role: r.role.name().to_owned(),
                    }),
                    captured: event.captured.map(|c| CapturedWire {
                        square: c.square.to_string(),
                        role: c.shown_role.name().to_owned(),
                        hidden: c.was_hidden,
                    }),
                    captured_identity: event.captured_identity.map(|r| r.name().to_owned()),
                    exploded: event.exploded.map(|sq| sq.to_string()).collect(),
                    promotion_pending: event.promotion_pending,
                    check,
                    fen: after.fen.clone(),
                    turn,
                }
            }
        }
        EventRender::DrawOffered(by) => GameEvent::DrawOffered {
            by: by.name().to_owned(),
        },
        EventRender::DrawDeclined(by) => GameEvent::DrawDeclined {
            by: by.name().to_owned(),
        },
        EventRender::Undo {
            after,
            ply,
            taken_back,
        } => GameEvent::Undo {
            ply: *ply,
            taken_back: taken_back.to_vec(),
            check: after.in_check,
            fen: after.fen.clone(),
            turn: after.turn.name().to_owned(),
        },
        EventRender::Ended => GameEvent::Ended {},
    };
    to_json(&ServerMessage::Event {
        game_id: game_id.to_owned(),
        version,
        event: Box::new(event),
        outcome: outcome.map(outcome_wire),
        shuffle: shuffle.map(shuffle_wire),
        clocks,
    })
}

/// A move's event says check when the side to move is in check after it, or was mated.
fn says_check(event: &MoveEvent, after: &AfterMove) -> bool {
    after.in_check
        || matches!(
            event.outcome,
            Some(Outcome::Win {
                reason: frontier_rules::WinReason::Checkmate,
                ..
            })
        )
}

/// The `event` frame of a move that neither ended the game nor completed a promotion,
/// written straight into one string: byte for byte what [`render_with_serde`] writes for
/// it (the tests compare the two over random games of every variant, for every audience),
/// without building the protocol's types first — a move's frame is rendered on every move
/// of every live game, and going through serde cost game-session about 5,400
/// instructions a move of its ~120,000, against about 1,700 written here (issue 29).
fn move_frame(
    game_id: &str,
    version: u64,
    event: &MoveEvent,
    after: &AfterMove,
    clocks: Option<&ClocksWire>,
) -> String {
    let mut out = String::with_capacity(192 + game_id.len() + after.fen.len());
    out.push_str(r#"{"type":"event","game_id":"#);
    push_json_str(&mut out, game_id);
    out.push_str(r#","version":"#);
    push_number(&mut out, version);
    out.push_str(r#","event":{"kind":"move","ply":"#);
    push_number(&mut out, event.ply);
    out.push_str(r#","color":""#);
    out.push_str(event.mover.name());
    out.push_str(r#"","uci":""#);
    event.uci.push_to(&mut out);
    out.push('"');
    if let Some(r) = event.reveal {
        out.push_str(r#","reveal":{"square":""#);
        r.square.push_name(&mut out);
        out.push_str(r#"","role":""#);
        out.push_str(r.role.name());
        out.push_str(r#""}"#);
    }
    if let Some(c) = event.captured {
        out.push_str(r#","captured":{"square":""#);
        c.square.push_name(&mut out);
        out.push_str(r#"","role":""#);
        out.push_str(c.shown_role.name());
        out.push_str(r#"","hidden":"#);
        out.push_str(if c.was_hidden { "true}" } else { "false}" });
    }
    if let Some(role) = event.captured_identity {
        out.push_str(r#","captured_identity":""#);
        out.push_str(role.name());
        out.push('"');
    }
    let mut exploded = event.exploded.peekable();
    if exploded.peek().is_some() {
        out.push_str(r#","exploded":["#);
        for (i, square) in exploded.enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('"');
            square.push_name(&mut out);
            out.push('"');
        }
        out.push(']');
    }
    if event.promotion_pending {
        out.push_str(r#","promotion_pending":true"#);
    }
    out.push_str(if says_check(event, after) {
        r#","check":true,"fen":"#
    } else {
        r#","check":false,"fen":"#
    });
    push_json_str(&mut out, &after.fen);
    out.push_str(r#","turn":""#);
    out.push_str(after.turn.name());
    out.push_str(r#""}"#);
    if let Some(c) = clocks {
        out.push_str(r#","clocks":{"white_ms":"#);
        push_number(&mut out, c.white_ms);
        out.push_str(r#","black_ms":"#);
        push_number(&mut out, c.black_ms);
        out.push_str(r#","running":"#);
        match &c.running {
            Some(running) => push_json_str(&mut out, running),
            None => out.push_str("null"),
        }
        out.push_str(r#","at":"#);
        push_number(&mut out, c.at);
        out.push('}');
    }
    out.push('}');
    out
}

/// A JSON string as serde_json writes it: quoted, and escaped only if it has a quote, a
/// backslash or a byte below 0x20 (never the case for the game ids, FENs and colour names
/// written here; such a string goes through serde_json).
fn push_json_str(out: &mut String, s: &str) {
    if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(&serde_json::to_string(s).unwrap_or_default());
        return;
    }
    out.push('"');
    out.push_str(s);
    out.push('"');
}

/// A number as serde_json writes it (through the same `itoa`).
fn push_number(out: &mut String, n: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// Serialises a server message. These types always serialise (strings, numbers, plain
/// structs), so the fallback is unreachable in practice and still a valid frame.
pub fn to_json(message: &ServerMessage) -> String {
    serde_json::to_string(message).unwrap_or_else(|_| {
        r#"{"type":"error","code":"internal","message":"could not encode a message"}"#.to_owned()
    })
}

#[cfg(test)]
mod tests {
    use frontier_rules::{Audience, Game, HiddenState, Position, Variant};

    use super::*;

    /// Plays `uci` from `game` and renders the mover's event frame.
    fn played_frame(mut game: Game, uci: &str) -> serde_json::Value {
        let report = game.play_uci(uci).expect("legal");
        let after = AfterMove::of(&game.view(Audience::Spectator));
        let event = report.for_audience(Audience::Player(report.mover()));
        let outcome = game.outcome();
        let json = render_event(
            "g",
            3,
            &EventRender::Move {
                event: &event,
                after: &after,
            },
            outcome.as_ref(),
            None,
            None,
        );
        serde_json::from_str(&json).expect("json")
    }

    /// Every audience's frame of what `report` did, rendered by [`render_event`] and by
    /// serde alone, under each kind of clock reading.
    fn compare_frames(
        game: &Game,
        report: &frontier_rules::MoveReport,
        version: u64,
        seen: &mut [usize; 9],
    ) {
        let after = AfterMove::of(&game.view(Audience::Spectator));
        let outcome = game.outcome();
        let shuffle = game.published_shuffle();
        let readings = [
            None,
            Some(ClocksWire {
                white_ms: 180_000,
                black_ms: 0,
                running: None,
                at: 1_733_500_000_123,
            }),
            Some(ClocksWire {
                white_ms: u64::MAX,
                black_ms: 7,
                running: Some("black".into()),
                at: -5,
            }),
        ];
        for audience in [
            Audience::Player(Color::White),
            Audience::Player(Color::Black),
            Audience::Spectator,
        ] {
            let event = report.for_audience(audience);
            let render = EventRender::Move {
                event: &event,
                after: &after,
            };
            // What the straight writer takes (the rest goes through serde alone).
            let written_straight = !event.completes_promotion && outcome.is_none();
            for (i, clocks) in readings.iter().enumerate() {
                let id = if i == 2 {
                    "a\"quoted\\id\n"
                } else {
                    "0193a5b0-7c1e-7d2a-9f00-5e1d2c3b4a59"
                };
                let fast = render_event(
                    id,
                    version,
                    &render,
                    outcome.as_ref(),
                    shuffle.as_ref(),
                    clocks.clone(),
                );
                let serde = render_with_serde(
                    id,
                    version,
                    &render,
                    outcome.as_ref(),
                    shuffle.as_ref(),
                    clocks.clone(),
                );
                assert_eq!(fast, serde, "{}", after.fen);
                if written_straight {
                    let straight = move_frame(id, version, &event, &after, clocks.as_ref());
                    assert_eq!(straight, serde, "{}", after.fen);
                }
            }
            seen[0] += usize::from(written_straight);
            if written_straight {
                seen[7] += usize::from(event.uci.promotion.is_some());
                seen[8] += usize::from(event.captured.is_some_and(|c| !c.was_hidden));
                seen[1] += usize::from(event.reveal.is_some());
                seen[2] += usize::from(event.captured.is_some_and(|c| c.was_hidden));
                seen[3] += usize::from(event.captured_identity.is_some());
                seen[4] += usize::from(event.exploded.into_iter().next().is_some());
                seen[5] += usize::from(event.promotion_pending);
                seen[6] += usize::from(after.in_check);
            }
        }
    }

    #[test]
    fn a_move_written_straight_reads_as_serde_writes_it_in_every_variant() {
        // Random games (a fixed xorshift), every move's frame for every audience compared
        // with serde's; the kinds of move the straight writer handles must all turn up.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut seen = [0usize; 9];
        for round in 0..90 {
            let variant = [Variant::Standard, Variant::Atomic, Variant::Hidden][round % 3];
            let mut game = Game::new(variant).expect("game");
            for version in 3..300u64 {
                if game.outcome().is_some() {
                    break;
                }
                let report = if game.pending_promotion().is_some() {
                    game.choose_promotion(Role::PROMOTIONS[(next() % 4) as usize])
                } else {
                    let moves = game.legal_moves();
                    let m = moves[(next() % moves.len() as u64) as usize];
                    game.play(&m)
                }
                .expect("legal");
                compare_frames(&game, &report, version, &mut seen);
            }
        }
        // A hidden pawn revealed on its last rank: the promotion is awaited.
        let mut game = Game::from_hidden_state(
            HiddenState::from_server_fen("4k3/8/8/8/8/8/8/P3K3 w - - 0 1 a1").expect("fen"),
        );
        let report = game.play_uci("a1a8").expect("legal");
        compare_frames(&game, &report, 2, &mut seen);
        let report = game.choose_promotion(Role::Queen).expect("choice");
        compare_frames(&game, &report, 3, &mut seen);
        assert!(
            seen.iter().all(|&n| n > 0),
            "written straight, with a reveal, a hidden capture, an identity, an explosion, \
             a pending promotion, a check, a promotion, a capture in the open: {seen:?}"
        );
    }

    #[test]
    fn a_checking_move_that_ends_the_game_says_check_in_every_variant() {
        let standard = Position::from_fen(Variant::Standard, "8/8/7K/8/3k4/2p5/3B4/8 w - - 4 155")
            .expect("fen");
        let atomic =
            Position::from_fen(Variant::Atomic, "8/8/p4R2/Pb1K1p2/1k3P2/8/8/8 b - - 99 121")
                .expect("fen");
        // Hidden chess: a pawn promotes to a bishop with check on d7; bishop against a
        // bare king cannot mate.
        let hidden =
            HiddenState::from_server_fen("8/2Pk4/8/8/8/8/8/4K3 w - - 0 60 -").expect("fen");
        for (game, uci, reason) in [
            (
                Game::from_position(standard),
                "d2c3",
                "insufficient-material",
            ),
            (Game::from_position(atomic), "b5c6", "fifty-moves"),
            (
                Game::from_hidden_state(hidden),
                "c7c8b",
                "insufficient-material",
            ),
        ] {
            let frame = played_frame(game, uci);
            assert_eq!(frame["event"]["check"], true, "{uci}: {frame}");
            assert_eq!(frame["outcome"]["reason"], reason, "{uci}: {frame}");
        }
        // A mate still says check; a quiet move does not.
        let mate = Position::from_fen(Variant::Standard, "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
            .expect("fen");
        let frame = played_frame(Game::from_position(mate), "a1a8");
        assert_eq!(frame["event"]["check"], true);
        assert_eq!(frame["outcome"]["reason"], "checkmate");
        let quiet = Position::new(Variant::Standard);
        assert_eq!(
            played_frame(Game::from_position(quiet), "e2e4")["event"]["check"],
            false
        );
    }
}
