//! The one Frontier binary's library part: [`dev`], every service in one process (the
//! `frontier dev` subcommand; tests start it in-process).

pub mod admin;
pub mod dev;
pub mod smoke;
