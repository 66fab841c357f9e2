//! One root cancellation signal, passed down to every task; the first SIGTERM or Ctrl-C
//! trips it ([`two_stage`]).

use tokio_util::sync::CancellationToken;

/// The shutdown signal. Clone it freely; cancelling any clone stops them all.
#[derive(Debug, Clone, Default)]
pub struct Shutdown(CancellationToken);

impl Shutdown {
    /// A signal not yet tripped.
    pub fn new() -> Shutdown {
        Shutdown(CancellationToken::new())
    }

    /// Trips it.
    pub fn trigger(&self) {
        self.0.cancel();
    }

    /// Whether it is tripped.
    pub fn is_triggered(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Resolves once it is tripped.
    pub async fn wait(&self) {
        self.0.cancelled().await;
    }

    /// Resolves once it is tripped (an owned future, for APIs that take `'static`).
    pub async fn wait_owned(self) {
        self.0.cancelled_owned().await
    }
}

/// Two-stage shutdown for a service process: the first SIGTERM or Ctrl-C trips `shutdown`
/// (the service stops taking new work and drains); a second signal, or `drain_timeout`
/// after the first, exits the process at once (status 130 or 124). Call once, from `main`.
pub fn two_stage(shutdown: Shutdown, drain_timeout: std::time::Duration) {
    tokio::spawn(async move {
        if next_signal().await.is_err() {
            return;
        }
        tracing::info!(
            ?drain_timeout,
            "shutdown signal received: draining (a second signal stops at once)"
        );
        shutdown.trigger();
        tokio::select! {
            _ = next_signal() => {
                tracing::warn!("second shutdown signal: stopping now");
                std::process::exit(130);
            }
            _ = tokio::time::sleep(drain_timeout) => {
                tracing::warn!("drain deadline passed: stopping now");
                std::process::exit(124);
            }
        }
    });
}

/// The next SIGTERM or Ctrl-C.
async fn next_signal() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r,
            _ = term.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await
    }
}
