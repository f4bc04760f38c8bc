//! One keep-alive HTTP/1.1 connection per load-generator worker, straight on hyper's
//! connection API: no pool, no retries, nothing between the request and the socket.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Where requests go: `host:port` and the path of the A2A endpoint.
#[derive(Clone, Debug)]
pub struct Target {
    pub authority: String,
    pub path: String,
}

impl Target {
    /// Reads `http://host:port/path`.
    pub fn parse(url: &str) -> anyhow::Result<Target> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| anyhow::anyhow!("{url}: only http:// URLs are supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        Ok(Target {
            authority: authority.to_owned(),
            path: path.to_owned(),
        })
    }

    pub fn url(&self) -> String {
        format!("http://{}{}", self.authority, self.path)
    }
}

pub struct Connection {
    sender: SendRequest<Full<Bytes>>,
    target: Target,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("target", &self.target)
            .finish()
    }
}

/// An answer read to its end: status and body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Bytes,
}

impl Connection {
    pub async fn open(target: &Target) -> anyhow::Result<Connection> {
        let stream = TcpStream::connect(&target.authority).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Connection {
            sender,
            target: target.clone(),
        })
    }

    fn request(&self, body: Bytes) -> anyhow::Result<http::Request<Full<Bytes>>> {
        Ok(http::Request::post(&self.target.path)
            .header(http::header::HOST, &self.target.authority)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header("a2a-version", "1.0")
            .body(Full::new(body))?)
    }

    /// Sends a JSON-RPC request and reads the whole answer.
    pub async fn call(&mut self, body: Bytes) -> anyhow::Result<Reply> {
        let request = self.request(body)?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await?.to_bytes();
        Ok(Reply { status, body })
    }

    /// Sends a streaming JSON-RPC request; the answer's body arrives as SSE events
    /// (parsed by `eventsource-stream`), each event's data as a string.
    pub async fn stream(
        &mut self,
        body: Bytes,
    ) -> anyhow::Result<(u16, impl Stream<Item = anyhow::Result<String>> + use<>)> {
        use eventsource_stream::Eventsource;
        let request = self.request(body)?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status().as_u16();
        let events = response
            .into_body()
            .into_data_stream()
            .eventsource()
            .map(|event| {
                event
                    .map(|e| e.data)
                    .map_err(|e| anyhow::anyhow!("SSE: {e}"))
            });
        Ok((status, events))
    }
}
