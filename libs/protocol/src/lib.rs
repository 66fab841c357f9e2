//! The client protocol: every WebSocket message a client can send or receive, as types,
//! and the rendering of games and game events into those messages for one audience.
//! JSON, versioned by the path (`/ws/v1`); `docs/protocol.md` documents each message.
//!
//! No I/O. The gateway parses client messages with these types; game-session renders views
//! and events with them, once per audience, so the gateway relays bytes it never rewrites.

mod bot;
mod client;
mod error;
mod render;
mod server;

pub use bot::BotJob;
pub use client::{
    BotLevel, CLIENT_MESSAGE_TYPES, ClientMessage, ClockSpec, ColorChoiceWire,
    MAX_CLIENT_FRAME_BYTES, MAX_ID_BYTES, PoolSpec, frame_tags,
};
pub use error::ErrorCode;
pub use render::{
    AfterMove, EventRender, GameMeta, PlayerInfo, PublicMove, Status, game_wire, render_event,
    render_view, seat_name, to_json,
};
pub use server::{
    CapturedIdentityWire, CapturedWire, ClocksWire, GameEvent, GameWire, Matched, MoveWire,
    OutcomeWire, RevealWire, SeekStanding, ServerMessage, ShuffleWire,
};

/// The protocol version, in the WebSocket path and the `welcome` message.
pub const PROTOCOL_VERSION: u32 = 1;
