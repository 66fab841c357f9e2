//! The command line: every flag documented (`frontier-load --help`), and the targets
//! checked to be loopback addresses before anything is sent.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs as _};

use clap::{Parser, ValueEnum};

/// Drives games through running Frontier gateways on this machine and reports moves per
/// second, the move round trip (p50/p95/p99/max), errors by code and reconnects, with live
/// progress on stderr. Loopback targets only; stops by itself after `--seconds` (or
/// `--moves`).
///
/// Scenarios combine: closed-loop pairs (`--pairs`, the default) or open-loop games
/// (`--rate` moves/s over `--games` games), in one variant or mixed (`--variant`), with
/// `--spectators` per game, `--bots` games against the computer, `--idle` idle
/// authenticated connections, `--matchmaking` quick-match arrivals, `--flags` games left
/// to run out of time and `--login-flood` wrong-password logins.
/// `NAME=PID`.
fn parse_named_pid(s: &str) -> Result<(String, u32), String> {
    let (name, pid) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not NAME=PID"))?;
    let pid = pid
        .parse()
        .map_err(|_| format!("`{s}`: the PID is a whole number"))?;
    if name.is_empty() {
        return Err(format!("`{s}`: a name before the ="));
    }
    Ok((name.to_owned(), pid))
}

/// How open-loop moves are scheduled (`--arrivals`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Arrivals {
    /// A fixed grid per game; missed slots skipped.
    Even,
    /// Exponential gaps per game (Poisson arrivals in all).
    Poisson,
}

#[derive(Debug, Parser)]
#[command(
    name = "frontier-load",
    version,
    about,
    long_about,
    args_override_self = true
)]
pub(crate) struct Args {
    /// Gateway address(es), HOST:PORT, loopback only; repeat the flag or separate with
    /// commas to spread the load across several gateways (round robin).
    #[arg(
        long = "addr",
        value_name = "HOST:PORT",
        value_delimiter = ',',
        default_value = "127.0.0.1:8080"
    )]
    pub(crate) addrs: Vec<String>,

    /// Stop after this many seconds (the run is always bounded by time).
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub(crate) seconds: u64,

    /// Also stop once this many moves were acknowledged.
    #[arg(long, value_name = "N")]
    pub(crate) moves: Option<u64>,

    /// Closed-loop pairs: two guests per pair, each move sent once the previous one was
    /// acknowledged (throughput at saturation). Ignored with `--rate`.
    #[arg(long, default_value_t = 20)]
    pub(crate) pairs: usize,

    /// Open loop: play this many moves per second in all, spread evenly over `--games`
    /// games; each move's round trip is measured from its scheduled send time, so a
    /// server falling behind shows as latency (no coordinated omission).
    #[arg(long, value_name = "MOVES_PER_S")]
    pub(crate) rate: Option<f64>,

    /// How the open loop's moves arrive: `even` — each game's moves on its own fixed grid
    /// (`phase + k·games/rate`, the games' phases spread evenly over the interval), a slot
    /// missed while a game was being set up skipped rather than played late, so moves stay
    /// evenly spread in time for the whole run; `poisson` — each game's moves at
    /// exponentially distributed gaps of the same mean (a memoryless stream in all).
    /// Either way a move's round trip counts from its scheduled time.
    #[arg(long, value_enum, default_value_t = Arrivals::Even)]
    pub(crate) arrivals: Arrivals,

    /// Games (two guests each) that share the open-loop `--rate`.
    #[arg(long, default_value_t = 100)]
    pub(crate) games: usize,

    /// The variant of the played games; `mixed` rotates standard, hidden and atomic.
    /// Every move is a random legal move of the mover's own view (in hidden chess the
    /// public position: a client never knows a hidden piece's identity).
    #[arg(long, value_enum, default_value_t = VariantChoice::Standard)]
    pub(crate) variant: VariantChoice,

    /// The longest game in plies; a game still running then is resigned and a new one
    /// begins. Each pair's first game ends at a random length up to this, so that the
    /// games of a run do not all end and start again together.
    #[arg(long, default_value_t = 80)]
    pub(crate) max_plies: u32,

    /// Spectators per game (pairs and open-loop games): connections that open each game
    /// and receive its events.
    #[arg(long, default_value_t = 0)]
    pub(crate) spectators: usize,

    /// Games against the computer (level easy), one guest each, played to the end or
    /// `--max-plies`, then another. Needs a running bot-worker.
    #[arg(long, default_value_t = 0)]
    pub(crate) bots: usize,

    /// Idle authenticated WebSocket connections to open and hold for the run (each a
    /// fresh guest). The process may hold as many sockets as its open-files limit allows
    /// (raised to the hard limit at start).
    #[arg(long, default_value_t = 0)]
    pub(crate) idle: usize,

    /// How many idle connections to open per second at most (a refused guest or
    /// connection is tried again up to 10 times, counted as `idle_retried_…`).
    #[arg(long, default_value_t = 300.0, value_name = "PER_S")]
    pub(crate) idle_rate: f64,

    /// Idle connections per guest: a guest's token authenticates this many connections
    /// (fewer guests to create; start the gateway with FRONTIER_WS_PER_PLAYER at least
    /// this high).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub idle_per_guest: u64,

    /// Seconds to wait before opening idle connections (lets active games warm up first,
    /// so the gateway's memory before them is a settled figure).
    #[arg(long, default_value_t = 2)]
    pub(crate) idle_after: u64,

    /// Spread idle connections over this many loopback source addresses (127.0.0.1,
    /// 127.0.0.2, …), for more connections than one address's source ports allow.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=250))]
    pub(crate) source_addrs: u8,

    /// Threads of the tool's own runtime. One (the default) keeps the tool's CPU per move
    /// lowest — a second thread mostly adds wake-ups between the two — and one core plays
    /// well over 10,000 moves/s; more for runs that need more.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub(crate) threads: u16,

    /// The gateway's process id: report its memory (VmRSS from /proc/PID/status) before
    /// and after the idle connections opened, and the growth per connection.
    #[arg(long, value_name = "PID")]
    pub(crate) gateway_pid: Option<u32>,

    /// A process whose CPU to report (repeat for each): with `--idle`, its CPU per second
    /// per idle connection from the moment every idle connection was attempted to the end
    /// of the run (user + system time from /proc/PID/stat), and all of them together — what
    /// an idle connection costs, per process, Redis and NATS included if named.
    #[arg(long = "cpu-pid", value_name = "NAME=PID", value_parser = parse_named_pid)]
    pub(crate) cpu_pids: Vec<(String, u32)>,

    /// Quick-match arrivals: guests arriving at this many per second (alternating over the
    /// gateways) seek the casual standard 3+0 pool; reports the time to pair and how many
    /// were matched with a bot. Runs instead of pairs unless `--rate`, `--bots`, `--idle`
    /// or an explicit `--pairs` ask for more.
    #[arg(long, value_name = "PER_S")]
    pub(crate) matchmaking: Option<f64>,

    /// Timed games (1 "minute"; start game-session with a short
    /// FRONTIER_TEST_CLOCK_MINUTE) left to run out of time: reports how late each flag
    /// fell after its deadline, from the server's own clock readings.
    #[arg(long, default_value_t = 0)]
    pub(crate) flags: usize,

    /// Keep-alive connections sending wrong-password logins for one registered account
    /// back to back; reports the answers by HTTP status.
    #[arg(long, default_value_t = 0)]
    pub(crate) login_flood: usize,

    /// Pace the login flood to this many attempts per second in all.
    #[arg(long, value_name = "PER_S")]
    pub(crate) flood_rate: Option<f64>,

    /// Write the results and a per-second time series as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) json: Option<std::path::PathBuf>,

    /// Write an SVG plot of throughput and latency over time to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) svg: Option<std::path::PathBuf>,

    /// No live progress line on stderr.
    #[arg(long)]
    pub(crate) quiet: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum VariantChoice {
    Standard,
    Hidden,
    Atomic,
    Mixed,
}

impl VariantChoice {
    /// The variant of game number `n` of a player (mixed rotates).
    pub(crate) fn pick(self, n: u64) -> &'static str {
        match self {
            VariantChoice::Standard => "standard",
            VariantChoice::Hidden => "hidden",
            VariantChoice::Atomic => "atomic",
            VariantChoice::Mixed => ["standard", "hidden", "atomic"][(n % 3) as usize],
        }
    }
}

impl Args {
    /// Whether pair-style games (closed or open loop) run: not in a pure matchmaking run.
    pub(crate) fn plays_pairs(&self, pairs_explicit: bool) -> bool {
        self.rate.is_some() || self.matchmaking.is_none() || pairs_explicit
    }
}

/// Why a target was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TargetError {
    Unresolvable(String),
    NotLoopback(String, IpAddr),
}

impl std::fmt::Display for TargetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetError::Unresolvable(a) => {
                write!(f, "--addr {a}: not a HOST:PORT this machine can resolve")
            }
            TargetError::NotLoopback(a, ip) => write!(
                f,
                "--addr {a} resolves to {ip}, which is not a loopback address: frontier-load \
                 only targets this machine (127.0.0.0/8, ::1, localhost)"
            ),
        }
    }
}

impl std::error::Error for TargetError {}

/// Resolves each target and refuses any that is (or resolves to anything) not loopback.
pub(crate) fn loopback_targets(addrs: &[String]) -> Result<Vec<SocketAddr>, TargetError> {
    let mut out = Vec::new();
    for a in addrs {
        let a = a.trim();
        let resolved: Vec<SocketAddr> = match a.parse::<SocketAddr>() {
            Ok(s) => vec![s],
            Err(_) => a
                .to_socket_addrs()
                .map_err(|_| TargetError::Unresolvable(a.to_owned()))?
                .collect(),
        };
        if resolved.is_empty() {
            return Err(TargetError::Unresolvable(a.to_owned()));
        }
        if let Some(bad) = resolved.iter().find(|s| !s.ip().is_loopback()) {
            return Err(TargetError::NotLoopback(a.to_owned(), bad.ip()));
        }
        // IPv4 first: the gateways listen on 127.0.0.1 by default.
        let pick = resolved
            .iter()
            .find(|s| s.is_ipv4())
            .copied()
            .unwrap_or(resolved[0]);
        out.push(pick);
    }
    Ok(out)
}

/// The `i`-th loopback source address of `n` (127.0.0.1, 127.0.0.2, …).
pub(crate) fn source_addr(i: usize, n: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, 1 + (i % usize::from(n.max(1))) as u8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    #[test]
    fn the_help_documents_every_flag() {
        let cmd = Args::command();
        cmd.clone().debug_assert();
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            assert!(arg.get_help().is_some(), "--{id} has no help text");
        }
        let help = cmd.clone().render_long_help().to_string();
        for flag in [
            "--addr",
            "--seconds",
            "--moves",
            "--rate",
            "--idle",
            "--json",
            "--svg",
        ] {
            assert!(help.contains(flag), "{flag} missing from --help");
        }
    }

    #[test]
    fn several_gateways_by_comma_or_repetition() {
        let a = Args::try_parse_from([
            "frontier-load",
            "--addr",
            "127.0.0.1:1,127.0.0.1:2",
            "--addr",
            "localhost:3",
        ])
        .expect("valid arguments");
        assert_eq!(a.addrs, ["127.0.0.1:1", "127.0.0.1:2", "localhost:3"]);
        let t = loopback_targets(&a.addrs).expect("all loopback");
        assert_eq!(t.len(), 3);
        assert!(t.iter().all(|s| s.ip().is_loopback()));
        assert_eq!(t[2].port(), 3);
    }

    #[test]
    fn other_than_loopback_is_refused_with_the_reason() {
        for bad in [
            "10.0.0.1:8080",
            "192.168.1.2:80",
            "[2001:db8::1]:80",
            "0.0.0.0:8080",
        ] {
            let e = loopback_targets(&[bad.to_owned()]).expect_err(bad);
            assert!(matches!(e, TargetError::NotLoopback(..)), "{bad}: {e:?}");
            assert!(e.to_string().contains("not a loopback"), "{e}");
        }
        assert!(matches!(
            loopback_targets(&["no port here".to_owned()]),
            Err(TargetError::Unresolvable(_))
        ));
        assert!(loopback_targets(&["[::1]:80".to_owned(), "127.9.9.9:1".to_owned()]).is_ok());
    }

    #[test]
    fn bad_values_are_parse_errors_not_panics() {
        for args in [
            &["frontier-load", "--seconds", "0"][..],
            &["frontier-load", "--seconds", "ten"],
            &["frontier-load", "--variant", "crazyhouse"],
            &["frontier-load", "--unknown"],
            &["frontier-load", "--source-addrs", "0"],
        ] {
            assert!(Args::try_parse_from(args).is_err(), "{args:?}");
        }
        let a = Args::try_parse_from(["frontier-load"]).expect("defaults");
        assert_eq!((a.seconds, a.pairs, a.moves), (15, 20, None));
        // A flag given again overrides (scripts append to their defaults).
        let a = Args::try_parse_from(["frontier-load", "--pairs", "40", "--pairs", "4"])
            .expect("repeated flag");
        assert_eq!(a.pairs, 4);
    }

    #[test]
    fn mixed_rotates_the_variants() {
        let v: Vec<_> = (0..4).map(|n| VariantChoice::Mixed.pick(n)).collect();
        assert_eq!(v, ["standard", "hidden", "atomic", "standard"]);
        assert_eq!(VariantChoice::Hidden.pick(7), "hidden");
    }

    #[test]
    fn source_addresses_cycle_over_loopback() {
        assert_eq!(source_addr(0, 1), Ipv4Addr::new(127, 0, 0, 1));
        assert_eq!(source_addr(5, 4), Ipv4Addr::new(127, 0, 0, 2));
    }
}
