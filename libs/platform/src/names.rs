//! Every NATS subject, JetStream stream and Redis key the platform uses, derived from one
//! namespace prefix, so that test runs (and deployments) sharing servers never meet.

use frontier_rules::{Audience, Color};

use crate::GameId;
use crate::redis_conn::Shard;

/// A namespace: the prefix of every subject, stream and key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    prefix: String,
}

/// The token of an audience in its game subject: `white`, `black` or `public`.
fn audience_token(audience: Audience) -> &'static str {
    match audience {
        Audience::Player(Color::White) => "white",
        Audience::Player(Color::Black) => "black",
        Audience::Spectator => "public",
    }
}

/// The durable pull consumer every bot-worker shares on the bot-job stream (KEDA's
/// `nats-jetstream` trigger names it too).
pub const BOT_WORKERS_CONSUMER: &str = "bot-workers";

/// NATS header carrying a game event's version.
pub const VERSION_HEADER: &str = "Frontier-Version";

/// NATS header present (`1`) on the event that ends its game: relays stop following there
/// without reading the frame.
pub const ENDED_HEADER: &str = "Frontier-Ended";

/// Header of a game event: when game-session published it (Unix µs), for the gateway's
/// `relay` stage histogram (the time from publish to the frame handed to its followers).
pub const PUBLISHED_AT_HEADER: &str = "Frontier-Published-At";

/// Now as Unix µs (the `Frontier-Published-At` header's unit).
pub fn unix_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or_default()
}

/// NATS header present (`1`) on a client-protocol frame published on a player subject
/// (`<ns>.player.<id>`: a rematch notice) for the player's gateways to relay as it is;
/// matchmaking's `matched` notices there are protobuf and carry no such header.
pub const NOTICE_HEADER: &str = "Frontier-Notice";

/// The three audiences of a game, in the order events are published.
pub const AUDIENCES: [Audience; 3] = [
    Audience::Player(Color::White),
    Audience::Player(Color::Black),
    Audience::Spectator,
];

/// A game's Redis keys ([`Namespace::game_keys`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GameKeys {
    /// The state hash.
    pub state: String,
    /// The event log.
    pub log: String,
    /// The move records (storage format 2).
    pub moves: String,
}

impl Namespace {
    /// A namespace with this prefix: ASCII letters, digits, `_` and `-` only.
    pub fn new(prefix: &str) -> Result<Namespace, String> {
        if prefix.is_empty()
            || prefix.len() > 48
            || !prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(format!(
                "namespace `{prefix}` must be 1 to 48 ASCII letters, digits, `_` or `-`"
            ));
        }
        Ok(Namespace {
            prefix: prefix.to_owned(),
        })
    }

    /// The prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `<prefix>.game.<id>.<w>.<b>.<p>`: a game's event for the audiences it names. Each of
    /// the last three tokens is its audience's name (`white`, `black`, `public`) where the
    /// frame is for that audience and `-` where it is not. A frame every audience sees
    /// alike (`for: None`) is published once, on `….white.black.public`; a frame that
    /// differs between audiences is published once per audience, each on the subject that
    /// names its audience alone (`….white.-.-`, `….-.black.-`, `….-.-.public`). So a hidden
    /// piece's identity is only ever published on a subject that names no one but the
    /// player entitled to it.
    pub fn game_event_subject(&self, game: &GameId, only: Option<Audience>) -> String {
        let token = |a: Audience| match only {
            Some(o) if o != a => "-",
            _ => audience_token(a),
        };
        self.game_subject(game, token)
    }

    /// The subscription of one audience to a game's events: the wildcard subject
    /// (`….white.*.*`, `….*.black.*`, `….*.*.public`) that matches exactly the
    /// [`game_event_subject`](Self::game_event_subject)s naming that audience — the shared
    /// ones and its own, never another audience's own.
    pub fn game_follow_subject(&self, game: &GameId, audience: Audience) -> String {
        let token = |a: Audience| {
            if a == audience {
                audience_token(a)
            } else {
                "*"
            }
        };
        self.game_subject(game, token)
    }

    /// `<prefix>.game.<id>.<white>.<black>.<public>`, each audience's token as `token` says.
    fn game_subject(&self, game: &GameId, token: impl Fn(Audience) -> &'static str) -> String {
        let mut subject = String::with_capacity(self.prefix.len() + GAME_ROOM);
        subject.push_str(&self.prefix);
        subject.push_str(".game.");
        game.push_to(&mut subject);
        for audience in AUDIENCES {
            subject.push('.');
            subject.push_str(token(audience));
        }
        subject
    }

    /// `<prefix>.games.finished`: finished-game records (JetStream).
    pub fn finished_games_subject(&self) -> String {
        format!("{}.games.finished", self.prefix)
    }

    /// `<prefix>.games.recorded`: the rating service's notice (core NATS) that a finished
    /// game is stored and rated: `{"game_id": …, "rated": bool, "duplicate": bool}`.
    pub fn recorded_games_subject(&self) -> String {
        format!("{}.games.recorded", self.prefix)
    }

    /// The JetStream stream holding finished games: `<PREFIX>_GAMES` (stream names take no
    /// dots).
    pub fn finished_games_stream(&self) -> String {
        format!(
            "{}_GAMES",
            self.prefix.to_ascii_uppercase().replace('-', "_")
        )
    }

    /// `<prefix>.bot.jobs.<variant>`: a bot's owed action in a live game (JetStream work
    /// queue [`Namespace::bot_jobs_stream`]; message id = the job id `<game id>:<version>`).
    pub fn bot_jobs_subject(&self, variant: &str) -> String {
        format!("{}.bot.jobs.{}", self.prefix, variant)
    }

    /// `<prefix>.bot.jobs.>`: every bot job, whatever its variant (the stream's subjects).
    pub fn bot_jobs_wildcard(&self) -> String {
        format!("{}.bot.jobs.>", self.prefix)
    }

    /// The JetStream work-queue stream of bot jobs: `<PREFIX>_BOT_JOBS`.
    pub fn bot_jobs_stream(&self) -> String {
        format!(
            "{}_BOT_JOBS",
            self.prefix.to_ascii_uppercase().replace('-', "_")
        )
    }

    /// Redis key of a game's state (a hash: `v` version, `s` state):
    /// `<ns>:{<shard tag>}:game:<id>`. Every key of a game carries its shard's hash tag, as
    /// do the shard's deadline and outbox sets, so the game's compare-and-set touches one
    /// Redis Cluster slot ([`crate::redis_conn`]).
    pub fn game_state_key(&self, game: &GameId) -> String {
        let mut key = String::with_capacity(self.prefix.len() + GAME_ROOM);
        key.push_str(&self.prefix);
        key.push_str(":{");
        key.push_str(Shard::of(game).tag());
        key.push_str("}:game:");
        game.push_to(&mut key);
        key
    }

    /// A game's state, log and move-record keys at once (as [`game_state_key`],
    /// [`game_log_key`] and [`game_moves_key`] make them), for a move's compare-and-set:
    /// the game's id is formatted once, not three times (issue 29).
    ///
    /// [`game_state_key`]: Self::game_state_key
    /// [`game_log_key`]: Self::game_log_key
    /// [`game_moves_key`]: Self::game_moves_key
    pub fn game_keys(&self, game: &GameId) -> GameKeys {
        let state = self.game_state_key(game);
        let with = |suffix: &str| {
            let mut key = String::with_capacity(state.len() + suffix.len());
            key.push_str(&state);
            key.push_str(suffix);
            key
        };
        GameKeys {
            log: with(":log"),
            moves: with(":moves"),
            state,
        }
    }

    /// Redis key of a game's event log (a list; entry `i` is version `i + 1`).
    pub fn game_log_key(&self, game: &GameId) -> String {
        format!(
            "{}:{{{}}}:game:{}:log",
            self.prefix,
            Shard::of(game).tag(),
            game
        )
    }

    /// Redis key of a game's move records (a list, one encoded
    /// `frontier.games.v1.MoveRecord` per ply) in storage format 2, where the state holds
    /// no moves: a move appends one record instead of rewriting the whole game.
    pub fn game_moves_key(&self, game: &GameId) -> String {
        format!(
            "{}:{{{}}}:game:{}:moves",
            self.prefix,
            Shard::of(game).tag(),
            game
        )
    }

    /// Redis sorted set of the next deadline of every timed live game of one shard
    /// (member: game id, score: Unix ms). game-session writes it with each change; clock
    /// services claim from every shard's.
    pub fn deadlines_key(&self, shard: Shard) -> String {
        format!("{}:{{{}}}:deadlines", self.prefix, shard.tag())
    }

    /// Redis sorted set of one shard's deadlines claimed by a clock service (score: lease
    /// expiry).
    pub fn deadlines_claimed_key(&self, shard: Shard) -> String {
        format!("{}:{{{}}}:deadlines:claimed", self.prefix, shard.tag())
    }

    /// Redis set of one shard's finished games whose record the finished-games stream has
    /// not acknowledged yet.
    pub fn finished_outbox_key(&self, shard: Shard) -> String {
        format!("{}:{{{}}}:finished-outbox", self.prefix, shard.tag())
    }

    /// Redis hash of one shard's bot jobs (job id → job) whose publication the bot-job
    /// stream has not acknowledged yet.
    pub fn bot_outbox_key(&self, shard: Shard) -> String {
        format!("{}:{{{}}}:bot-outbox", self.prefix, shard.tag())
    }

    /// Redis Pub/Sub channel on which game-session tells the clocks of a deadline written
    /// for sooner than they would look (payload: the deadline, Unix ms).
    pub fn clock_nudge_channel(&self) -> String {
        format!("{}:clock-nudge", self.prefix)
    }

    /// Redis string of one shard written (always `1`) only so that a `WAIT` after it waits
    /// for everything written to the shard's node before: game-session's check that a
    /// repeated action's write reached the replicas.
    pub fn replication_probe_key(&self, shard: Shard) -> String {
        format!("{}:{{{}}}:replication-probe", self.prefix, shard.tag())
    }

    /// Redis hash of when each seat of a game was last seen connected (`white`, `black`:
    /// Unix ms).
    /// `<ns>:{<shard tag>}:game:<id>:presence`, written in place as the state's key is
    /// (a gateway's presence tick makes one per seat present).
    pub fn presence_key(&self, game: &GameId) -> String {
        let mut key = self.game_state_key(game);
        key.push_str(":presence");
        key
    }

    /// Redis key mapping a private board's share code to its game.
    pub fn board_code_key(&self, code: &str) -> String {
        format!("{}:code:{}", self.prefix, code)
    }

    /// Redis sorted set of one sliding-window rate limit (`limit`: `guest`, `register`,
    /// `login`, `boards`, …) for one subject (a client address or a player id): one
    /// member per request admitted, scored by its time (Unix ms).
    pub fn rate_limit_key(&self, limit: &str, subject: &str) -> String {
        format!("{}:limit:{}:{}", self.prefix, limit, subject)
    }

    /// Redis hash of the failed logins against one username (lower-cased): `n` failures,
    /// `until` (Unix ms) before which no attempt is let through.
    pub fn login_failures_key(&self, username_key: &str) -> String {
        format!("{}:loginfail:{}", self.prefix, username_key)
    }

    /// Redis sorted set of the open WebSocket connections of one subject (`kind`: `addr`
    /// or `player`): member a connection id, score its lease expiry (Unix ms), refreshed by
    /// the connection's gateway while it lives.
    pub fn connections_key(&self, kind: &str, subject: &str) -> String {
        format!("{}:conns:{}:{}", self.prefix, kind, subject)
    }

    /// Redis sorted set of a player's boards waiting for an opponent: member a game id
    /// (or a short-lived reservation), score its expiry (Unix ms).
    pub fn waiting_boards_key(&self, player: &str) -> String {
        format!("{}:waiting:{}", self.prefix, player)
    }

    /// The prefix of every matchmaking key, `<ns>:{mm}:`: tickets (`ticket:<player>`), pools
    /// (`pool:<pool key>`), pairings being created (`match:<id>`, `pending`), notices
    /// (`matched:<player>`), disconnected seekers (`leaving`), recent times to pair
    /// (`waits:<pool key>`) and colour history (`history:<player>`). One hash tag, so a
    /// pairing's atomic script touches one cluster slot.
    pub fn matchmaking_prefix(&self) -> String {
        format!("{}:{{mm}}:", self.prefix)
    }

    /// NATS subject of one player's notices (`matched`; rematch frames, with the
    /// [`NOTICE_HEADER`]): every gateway holding a connection
    /// of the player follows it.
    pub fn player_subject(&self, player: &str) -> String {
        format!("{}.player.{}", self.prefix, player)
    }
}

/// Whether `subject` matches the subscription `pattern` as NATS matches them: token by
/// token (split at `.`), `*` matching any one token and a final `>` one or more (for the
/// in-process bus, which stands in for NATS).
pub fn subject_matches(pattern: &str, subject: &str) -> bool {
    let mut subject_tokens = subject.split('.');
    let mut pattern_tokens = pattern.split('.').peekable();
    while let Some(p) = pattern_tokens.next() {
        if p == ">" && pattern_tokens.peek().is_none() {
            return subject_tokens.next().is_some();
        }
        match subject_tokens.next() {
            Some(t) if p == "*" || p == t => {}
            _ => return false,
        }
    }
    subject_tokens.next().is_none()
}

/// Room enough beside the prefix for a game's key or subject: the game id (36 bytes) and
/// the rest (at most 30); a key or subject of the move path is built in it without growing
/// its buffer.
const GAME_ROOM: usize = 66;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_games_keys_made_at_once_are_its_keys_made_one_by_one() {
        let ns = Namespace::new("t-1").expect("valid");
        for _ in 0..32 {
            let game = GameId::new();
            assert_eq!(
                ns.game_keys(&game),
                GameKeys {
                    state: ns.game_state_key(&game),
                    log: ns.game_log_key(&game),
                    moves: ns.game_moves_key(&game),
                }
            );
        }
    }

    #[test]
    fn each_audience_follows_the_shared_subject_and_its_own_never_another() {
        let ns = Namespace::new("t-1").expect("valid");
        let id: GameId = "0190c6a0-0000-7000-8000-000000000001"
            .parse()
            .expect("uuid");
        let shared = ns.game_event_subject(&id, None);
        assert_eq!(
            shared,
            "t-1.game.0190c6a0-0000-7000-8000-000000000001.white.black.public"
        );
        assert_eq!(
            ns.game_event_subject(&id, Some(Audience::Player(Color::Black))),
            "t-1.game.0190c6a0-0000-7000-8000-000000000001.-.black.-"
        );
        assert_eq!(
            ns.game_follow_subject(&id, Audience::Spectator),
            "t-1.game.0190c6a0-0000-7000-8000-000000000001.*.*.public"
        );
        for follower in AUDIENCES {
            let pattern = ns.game_follow_subject(&id, follower);
            assert!(subject_matches(&pattern, &shared), "{pattern}");
            for own in AUDIENCES {
                let subject = ns.game_event_subject(&id, Some(own));
                assert_eq!(
                    subject_matches(&pattern, &subject),
                    own == follower,
                    "{pattern} against {subject}"
                );
            }
            // Another game's events never match.
            let other: GameId = "0190c6a0-0000-7000-8000-000000000002"
                .parse()
                .expect("uuid");
            assert!(!subject_matches(
                &pattern,
                &ns.game_event_subject(&other, None)
            ));
        }
    }

    #[test]
    fn subjects_match_token_by_token() {
        assert!(subject_matches("a.b.c", "a.b.c"));
        assert!(!subject_matches("a.b.c", "a.b.cd"));
        assert!(!subject_matches("a.b", "a.b.c"));
        assert!(!subject_matches("a.b.c", "a.b"));
        assert!(subject_matches("a.*.c", "a.x.c"));
        assert!(!subject_matches("a.*.c", "a.x.y.c"));
        assert!(subject_matches("a.>", "a.x.y"));
        assert!(!subject_matches("a.>", "a"));
        assert!(subject_matches("a.b.>", "a.b.c"));
    }

    #[test]
    fn names_derive_from_the_prefix() {
        let ns = Namespace::new("t-1").expect("valid");
        let id: GameId = "0190c6a0-0000-7000-8000-000000000001"
            .parse()
            .expect("uuid");
        assert_eq!(ns.finished_games_stream(), "T_1_GAMES");
        assert_eq!(
            ns.game_log_key(&id),
            "t-1:{s1-63}:game:0190c6a0-0000-7000-8000-000000000001:log"
        );
        assert_eq!(
            ns.game_state_key(&id),
            "t-1:{s1-63}:game:0190c6a0-0000-7000-8000-000000000001"
        );
        assert_eq!(
            ns.presence_key(&id),
            "t-1:{s1-63}:game:0190c6a0-0000-7000-8000-000000000001:presence"
        );
        let slot = |key: String| crate::redis_conn::key_slot(key.as_bytes());
        let shard = Shard::of(&id);
        let slots = [
            slot(ns.game_state_key(&id)),
            slot(ns.game_log_key(&id)),
            slot(ns.game_moves_key(&id)),
            slot(ns.presence_key(&id)),
            slot(ns.deadlines_key(shard)),
            slot(ns.deadlines_claimed_key(shard)),
            slot(ns.finished_outbox_key(shard)),
            slot(ns.bot_outbox_key(shard)),
        ];
        assert!(
            slots.iter().all(|s| *s == slots[0]),
            "a game's keys and its shard's sets share a slot: {slots:?}"
        );
        assert_eq!(
            ns.rate_limit_key("login", "127.0.0.1"),
            "t-1:limit:login:127.0.0.1"
        );
        assert_eq!(ns.waiting_boards_key("p"), "t-1:waiting:p");
        assert!(Namespace::new("a.b").is_err());
        assert!(Namespace::new("").is_err());
    }
}
