//! gRPC between services of one process without a socket: a [`Connector`] makes tonic
//! [`Channel`]s whose connections are in-memory pipes, and the matching [`Listener`] hands
//! them to a tonic server as if accepted from TCP. The single-process mode (`frontier dev`)
//! wires every service's gRPC this way, so the services speak exactly as they do across
//! machines (same codecs, errors, deadlines, trace headers) and the process opens no port
//! but its one public address.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tonic::transport::server::{Connected, TcpConnectInfo};
use tonic::transport::{Channel, Endpoint};

/// Buffer of each direction of an in-memory connection.
const PIPE_BYTES: usize = 256 * 1024;

/// The client side: every connection it opens arrives at its [`Listener`].
#[derive(Debug, Clone)]
pub struct Connector {
    accepted: mpsc::Sender<DuplexStream>,
}

/// The server side of a [`Connector`].
#[derive(Debug)]
pub struct InProcessListener {
    accepted: mpsc::Receiver<DuplexStream>,
}

/// A connector and its listener.
pub fn pair() -> (Connector, InProcessListener) {
    let (tx, rx) = mpsc::channel(64);
    (
        Connector { accepted: tx },
        InProcessListener { accepted: rx },
    )
}

impl Connector {
    /// A lazily connected channel to the listener (the URI is a label; nothing resolves it).
    pub fn channel(&self, label: &'static str) -> Channel {
        Endpoint::from_static(label).connect_with_connector_lazy(self.clone())
    }
}

impl tower::Service<tonic::codegen::http::Uri> for Connector {
    type Response = TokioIo<DuplexStream>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TokioIo<DuplexStream>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: tonic::codegen::http::Uri) -> Self::Future {
        let accepted = self.accepted.clone();
        Box::pin(async move {
            let (client, server) = tokio::io::duplex(PIPE_BYTES);
            accepted.send(server).await.map_err(|_| {
                io::Error::new(io::ErrorKind::ConnectionRefused, "in-process server gone")
            })?;
            Ok(TokioIo::new(client))
        })
    }
}

/// Where a gRPC server takes its connections from: a TCP socket, or an in-process
/// [`Connector`]'s pipes.
#[derive(Debug)]
pub enum Listener {
    /// Accepted TCP connections (`TCP_NODELAY` set on each).
    Tcp(TcpListener),
    /// In-memory connections of this process.
    InProcess(InProcessListener),
}

impl From<TcpListener> for Listener {
    fn from(l: TcpListener) -> Self {
        Listener::Tcp(l)
    }
}

impl From<InProcessListener> for Listener {
    fn from(l: InProcessListener) -> Self {
        Listener::InProcess(l)
    }
}

impl Listener {
    /// The accepted connections, for `tonic`'s `serve_with_incoming*`. The stream ends when
    /// every connector of an in-process listener is gone.
    pub fn incoming(self) -> impl futures_util::Stream<Item = io::Result<Conn>> + Send {
        futures_util::stream::unfold(self, |listener| async move {
            match listener {
                Listener::Tcp(tcp) => {
                    let accepted = tcp.accept().await.map(|(stream, _)| {
                        let _ = stream.set_nodelay(true);
                        Conn::Tcp(stream)
                    });
                    Some((accepted, Listener::Tcp(tcp)))
                }
                Listener::InProcess(mut local) => {
                    let pipe = local.accepted.recv().await?;
                    Some((Ok(Conn::Local(pipe)), Listener::InProcess(local)))
                }
            }
        })
    }
}

/// One accepted connection.
#[derive(Debug)]
pub enum Conn {
    /// Over TCP.
    Tcp(TcpStream),
    /// In memory.
    Local(DuplexStream),
}

impl Connected for Conn {
    type ConnectInfo = Option<TcpConnectInfo>;

    fn connect_info(&self) -> Self::ConnectInfo {
        match self {
            Conn::Tcp(s) => Some(s.connect_info()),
            Conn::Local(_) => None,
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Local(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Local(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_flush(cx),
            Conn::Local(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Local(s) => Pin::new(s).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Conn::Local(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Tcp(s) => s.is_write_vectored(),
            Conn::Local(s) => s.is_write_vectored(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_connection_reaches_the_listener_and_carries_bytes_both_ways() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        use tower::Service as _;
        let (mut connector, listener) = pair();
        let server = tokio::spawn(async move {
            use futures_util::StreamExt as _;
            let mut incoming = Box::pin(Listener::from(listener).incoming());
            let Some(Ok(mut conn)) = incoming.next().await else {
                return Err(io::Error::other("no connection"));
            };
            assert!(conn.connect_info().is_none());
            let mut buf = [0u8; 4];
            conn.read_exact(&mut buf).await?;
            conn.write_all(&buf.map(|b| b + 1)).await?;
            Ok::<_, io::Error>(())
        });
        let io = connector
            .call(tonic::codegen::http::Uri::from_static("http://x"))
            .await
            .expect("connects");
        let mut pipe = io.into_inner();
        pipe.write_all(&[1, 2, 3, 4]).await.expect("writes");
        let mut back = [0u8; 4];
        pipe.read_exact(&mut back).await.expect("reads");
        assert_eq!(back, [2, 3, 4, 5]);
        server.await.expect("joins").expect("serves");
    }

    #[tokio::test]
    async fn a_connector_whose_listener_is_gone_is_refused() {
        use tower::Service as _;
        let (mut connector, listener) = pair();
        drop(listener);
        let err = connector
            .call(tonic::codegen::http::Uri::from_static("http://x"))
            .await
            .expect_err("refused");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
    }
}
