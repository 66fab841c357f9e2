//! `frontier admin`: operator commands on a running platform's data, not services.
//!
//! `frontier admin grant-moderator NAME` and `frontier admin revoke-moderator NAME` give or
//! take a registered player's fair-play moderator role (case-insensitive username) in the
//! accounts database the gateway uses (`--database-url`, as `frontier gateway` takes it; a
//! `sqlite:PATH` URL names `frontier dev`'s `frontier.db` in its `--data` folder). A grant
//! reaches the player's token at its next sign-in; a revocation closes the moderation API to
//! the player at once (the gateway checks the account on every moderation request). An
//! unknown name is an error (exit status 1).

use clap::{Args, Subcommand};

/// Operator commands.
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Makes a registered player a fair-play moderator (from its next sign-in).
    GrantModerator(ModeratorArgs),
    /// Takes the fair-play moderator role from a player (at once).
    RevokeModerator(ModeratorArgs),
}

/// Whose role, in which database.
#[derive(Debug, Args)]
pub struct ModeratorArgs {
    /// The player's username (case-insensitive).
    pub name: String,
    /// The accounts database: the gateway's Postgres URL, or `sqlite:PATH` for `frontier
    /// dev`'s file (e.g. `sqlite:./frontier-data/frontier.db`).
    #[arg(
        long,
        env = "FRONTIER_DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/frontier"
    )]
    pub database_url: String,
}

/// Runs an admin command; its outcome is printed on stdout.
pub async fn run(command: AdminCommand) -> anyhow::Result<()> {
    let (args, grant) = match command {
        AdminCommand::GrantModerator(args) => (args, true),
        AdminCommand::RevokeModerator(args) => (args, false),
    };
    let found =
        frontier_gateway::accounts::set_moderator_at(&args.database_url, &args.name, grant).await?;
    let Some(name) = found else {
        anyhow::bail!("no registered player is named `{}`", args.name);
    };
    if grant {
        println!("{name} is a moderator (from their next sign-in)");
    } else {
        println!("{name} is no longer a moderator");
    }
    Ok(())
}
