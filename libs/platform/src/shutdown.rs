//! One root cancellation signal, passed down to every task; SIGTERM or Ctrl-C trips it.

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

    /// Whether it has been tripped.
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

    /// A child signal: tripped with this one, or on its own.
    pub fn child(&self) -> Shutdown {
        Shutdown(self.0.child_token())
    }

    /// Trips this signal on SIGTERM or Ctrl-C (call once, from `main`).
    pub fn trip_on_signals(&self) {
        let token = self.0.clone();
        tokio::spawn(async move {
            let ctrl_c = tokio::signal::ctrl_c();
            #[cfg(unix)]
            {
                use tokio::signal::unix::{SignalKind, signal};
                match signal(SignalKind::terminate()) {
                    Ok(mut term) => {
                        tokio::select! {
                            _ = ctrl_c => {},
                            _ = term.recv() => {},
                        }
                    }
                    Err(_) => {
                        let _ = ctrl_c.await;
                    }
                }
            }
            #[cfg(not(unix))]
            {
                let _ = ctrl_c.await;
            }
            tracing::info!("shutdown signal received");
            token.cancel();
        });
    }
}
