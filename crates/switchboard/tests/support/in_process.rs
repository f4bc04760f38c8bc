//! Switchboard embedded in the test's own runtime (the library, not the binary), on a
//! free loopback port, stopped when the test lets go of it.

#![allow(dead_code)] // each test binary uses its part
use std::net::SocketAddr;

use switchboard::Switchboard;
use tokio_util::sync::CancellationToken;

/// A Switchboard serving at `base` until dropped (its shutdown then drains it).
pub(crate) struct InProcess {
    pub(crate) base: String,
    stop: CancellationToken,
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Serves what `build` makes, given the address it will listen on (for configurations
/// that name their own address).
pub(crate) async fn serve(build: impl FnOnce(SocketAddr) -> Switchboard) -> InProcess {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let switchboard = build(address);
    let stop = CancellationToken::new();
    let shutdown = stop.clone().cancelled_owned();
    tokio::spawn(async move { switchboard.serve(listener, shutdown).await.unwrap() });
    InProcess {
        base: format!("http://{address}"),
        stop,
    }
}
