//! Plumbing shared by every Frontier service: configuration pieces, telemetry, JWT auth,
//! ids, the names of NATS subjects and Redis keys (all in one place), shutdown.

pub mod admin;
pub mod auth;
pub mod config;
pub mod convert;
pub mod deadlines;
pub mod envelope;
pub mod grpc;
pub mod ids;
pub mod inproc;
pub mod local_bus;
pub mod local_jobs;
pub mod names;
pub mod redis_conn;
pub mod shutdown;
pub mod sqlite;
pub mod streams;
pub mod telemetry;
pub mod time;
pub mod trace;

pub use auth::{AuthError, Claims, JwtKeys};
pub use ids::{GameId, ParseIdError, PlayerId};
pub use names::Namespace;
pub use redis_conn::{RedisConn, Shard};
pub use shutdown::Shutdown;
