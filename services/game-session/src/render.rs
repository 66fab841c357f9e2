//! What happened to a live game, rendered once per audience (White, Black, public) as the
//! protocol's JSON frames, using only the rules library's audience-filtered reports and
//! views. The frames are what game-session publishes and logs; gateways relay them as is.

use bytes::Bytes;
use frontier_protocol::{
    AfterMove, ClocksWire, EventRender, GameMeta, GameWire, PlayerInfo, PublicMove, Status,
    game_wire, render_event, render_view,
};
use frontier_rules::{Audience, Color};

use crate::bus::AudienceFrames;
use crate::game::{Happened, LiveGame, Phase, Player};

/// A player as the protocol shows it.
pub fn player_info(p: &Player) -> PlayerInfo {
    PlayerInfo {
        id: p.id.clone(),
        name: p.name.clone(),
        guest: p.guest,
        bot: p.bot,
    }
}

/// An empty seat where an event names a player (a stored game always has the seats its
/// events name; this only keeps rendering total).
fn nobody() -> PlayerInfo {
    PlayerInfo {
        id: String::new(),
        name: String::new(),
        guest: true,
        bot: false,
    }
}

fn status(game: &LiveGame) -> Status {
    match game.phase() {
        Phase::Waiting => Status::Waiting,
        Phase::Playing => Status::Playing,
        Phase::Finished => Status::Finished,
    }
}

fn clocks(game: &LiveGame, now_ms: i64) -> Option<ClocksWire> {
    let reading = game.clock()?.reading(now_ms);
    Some(ClocksWire {
        white_ms: reading.white_ms,
        black_ms: reading.black_ms,
        running: reading.running.map(|c| c.name().to_owned()),
        at: reading.at_ms,
    })
}

fn meta(game: &LiveGame, now_ms: i64) -> GameMeta {
    let info = game.info();
    GameMeta {
        variant: info.variant.name(),
        rated: info.rated,
        clock: info.time_control.map(|tc| frontier_protocol::ClockSpec {
            minutes: tc.initial_seconds / 60,
            increment: tc.increment_seconds,
        }),
        status: status(game),
        white: game.player(Color::White).map(player_info),
        black: game.player(Color::Black).map(player_info),
        draw_offer: game.draw_offer(),
        clocks: clocks(game, now_ms),
    }
}

fn public_moves(game: &LiveGame) -> Vec<PublicMove> {
    game.moves()
        .iter()
        .map(|m| PublicMove {
            uci: m.uci.to_string(),
            reveal: m.reveal.map(|r| (r.square, r.role)),
            captured: m.captured.map(|c| (c.square, c.shown_role, c.was_hidden)),
        })
        .collect()
}

/// The `game` frame for one audience at `version`, clocks read at `now_ms`.
pub fn view_frame(game: &LiveGame, version: u64, audience: Audience, now_ms: i64) -> String {
    render_view(
        &game.info().id,
        version,
        &meta(game, now_ms),
        &game.game().view(audience),
        &public_moves(game),
    )
}

/// The game of the `game` frame for one audience, clocks read at `now_ms`: what
/// [`view_frame`] sends that audience. A bot job carries exactly this for the bot's seat —
/// the rules library's view for that seat, never the layout.
pub fn view_wire(game: &LiveGame, audience: Audience, now_ms: i64) -> GameWire {
    game_wire(
        &meta(game, now_ms),
        &game.game().view(audience),
        &public_moves(game),
    )
}

fn per_audience(version: u64, ended: bool, render: impl Fn(Audience) -> String) -> AudienceFrames {
    AudienceFrames {
        version,
        ended,
        white: Bytes::from(render(Audience::Player(Color::White))),
        black: Bytes::from(render(Audience::Player(Color::Black))),
        public: Bytes::from(render(Audience::Spectator)),
    }
}

/// The frames of what happened, at `version` (the version it produced), at `now_ms`.
pub fn frames(game: &LiveGame, happened: &Happened, version: u64, now_ms: i64) -> AudienceFrames {
    frames_and_fen(game, happened, version, now_ms).0
}

/// [`frames`], with the public FEN they show after a move or an undo (written once per
/// move: the stored state of a game without a secret takes the same FEN, see
/// [`crate::storage::encode_reusing`]).
pub fn frames_and_fen(
    game: &LiveGame,
    happened: &Happened,
    version: u64,
    now_ms: i64,
) -> (AudienceFrames, Option<String>) {
    let id = game.info().id.as_str();
    let outcome = game.outcome();
    let shuffle = game.game().published_shuffle();
    // Created happens at the board's creation; its clocks are read then.
    let now_ms = match happened {
        Happened::Created => game.info().created_at_ms,
        _ => now_ms,
    };
    let clocks = clocks(game, now_ms);
    // Nothing happens to a game after its end: the event rendered once it is over ends it.
    let ended = game.is_finished();
    // An event other than a move reads the same for every audience: rendered once.
    let simple = |event: &EventRender<'_>| {
        let frame = Bytes::from(render_event(
            id,
            version,
            event,
            outcome.as_ref(),
            shuffle.as_ref(),
            clocks.clone(),
        ));
        AudienceFrames {
            version,
            ended,
            white: frame.clone(),
            black: frame.clone(),
            public: frame,
        }
    };
    match happened {
        Happened::Created => {
            let (color, player) = match (game.player(Color::White), game.player(Color::Black)) {
                (Some(p), _) => (Color::White, player_info(p)),
                (None, Some(p)) => (Color::Black, player_info(p)),
                (None, None) => (Color::White, nobody()),
            };
            (
                simple(&EventRender::Created {
                    color,
                    player: &player,
                }),
                None,
            )
        }
        Happened::Started => {
            let white = game.player(Color::White).map_or_else(nobody, player_info);
            let black = game.player(Color::Black).map_or_else(nobody, player_info);
            let started = simple(&EventRender::Started {
                white: &white,
                black: &black,
                commitment: game.game().commitment().map(|c| c.to_hex()),
                fen: game.game().position().fen(),
            });
            (started, None)
        }
        Happened::Moved(report) => {
            // The position after the move is public: worked out once. The move reads the
            // same for every audience unless it captured a hidden piece (whose identity only
            // its capturer's frame names): then it is rendered once per audience.
            let after = AfterMove::of(&game.game().view(Audience::Spectator));
            let public = report.for_audience(Audience::Spectator);
            let alike = [Color::White, Color::Black]
                .iter()
                .all(|c| report.for_audience(Audience::Player(*c)) == public);
            if alike {
                let frames = simple(&EventRender::Move {
                    event: &public,
                    after: &after,
                });
                return (frames, Some(after.into_fen()));
            }
            let frames = per_audience(version, ended, |audience| {
                let event = report.for_audience(audience);
                render_event(
                    id,
                    version,
                    &EventRender::Move {
                        event: &event,
                        after: &after,
                    },
                    outcome.as_ref(),
                    shuffle.as_ref(),
                    clocks.clone(),
                )
            });
            (frames, Some(after.into_fen()))
        }
        Happened::DrawOffered(by) => (simple(&EventRender::DrawOffered(*by)), None),
        Happened::DrawDeclined(by) => (simple(&EventRender::DrawDeclined(*by)), None),
        Happened::Undone(taken_back) => {
            let after = AfterMove::of(&game.game().view(Audience::Spectator));
            let frames = simple(&EventRender::Undo {
                after: &after,
                ply: game.game().ply(),
                taken_back,
            });
            (frames, Some(after.into_fen()))
        }
        Happened::Ended => (simple(&EventRender::Ended), None),
    }
}
