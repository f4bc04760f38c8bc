//! The HTTP server every process runs (HTTP/1.1 and cleartext HTTP/2 on one port), as
//! `axum::serve` does it but with hyper's settings fit for many held streams.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};

/// Concurrent HTTP/2 streams a peer may open on one connection. A gateway reaches each
/// replica of a service over one connection, on which every turn it waits for and every
/// event stream it relays is a stream of its own; hyper's default cap of 200 made the
/// 201st held stream wait, unanswered, for one of the others to end. Concurrency at the
/// edge is bounded per principal instead (`max_streams_per_principal`,
/// `max_tasks_in_flight_per_principal`).
const MAX_STREAMS_PER_CONNECTION: u32 = 1_000_000;

/// Serves `app` on `listener` until `shutdown`, then waits for open connections to
/// finish. An HTTP/1 connection's buffer holds at most `max_header_bytes` (at least
/// 8 KiB, hyper's smallest): a request head that does not fit is answered 431. At
/// 8 KiB the buffer of a held stream's connection never grows: hyper wants room for a
/// whole 8 KiB read, and with any larger cap a connection whose request body was read
/// took a second buffer, ~8 KiB more per held stream.
pub(crate) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    max_header_bytes: usize,
    shutdown: impl Future<Output = ()>,
) {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto::Builder;
    use hyper_util::server::graceful::GracefulShutdown;
    use hyper_util::service::TowerToHyperService;

    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http2()
        .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION);
    builder.http1().max_buf_size(max_header_bytes.max(8192));
    let builder = Arc::new(builder);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                accept_failed(e).await;
                continue;
            }
        };
        send_without_delay(&tcp);
        let service = TowerToHyperService::new(app.clone());
        let builder = builder.clone();
        let connection = graceful.watcher();
        tokio::spawn(async move {
            let serving = builder.serve_connection(TokioIo::new(tcp), service);
            if let Err(e) = connection.watch(serving).await {
                tracing::trace!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// TCP_NODELAY: without it, a stream's small event writes and a response's last chunk
/// wait for the client's delayed ACK, up to 40 ms.
fn send_without_delay(tcp: &TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "cannot set TCP_NODELAY");
    }
}

/// A failed accept: a connection reset before it was accepted is nothing; anything else
/// (out of file descriptors) is logged and waited out, rather than spinning.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::ConnectionRefused | ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "cannot accept a connection");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn accepted_connections_send_without_delay() -> anyhow::Result<()> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (accepted, client) =
            tokio::join!(listener.accept(), tokio::net::TcpStream::connect(addr));
        let _client = client?;
        let (tcp, _) = accepted?;
        super::send_without_delay(&tcp);
        assert!(tcp.nodelay()?);
        Ok(())
    }
}
