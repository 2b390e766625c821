//! HTTP/1.1 for the loop: a keep-alive [`Connection`] that reconnects when the server closes
//! it, and [`http_loop`], the closed loop with one such connection per worker.

use crate::closed_loop::{Bounds, Run, Worker, closed_loop};
use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;

pub type Request = http::Request<Full<Bytes>>;

/// A server's answer; `body` is empty unless the loop keeps bodies.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Bytes,
}

/// An answer, or why there was none (`error` texts, counted as outcomes by the callers).
pub type Outcome = Result<Answer, String>;

/// Whether a loop keeps each answer's body (read in full either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bodies {
    Keep,
    Drop,
}

/// One keep-alive HTTP/1.1 connection, no pool.
pub struct Connection {
    address: SocketAddr,
    sender: http1::SendRequest<Full<Bytes>>,
}

impl Connection {
    pub async fn open(address: SocketAddr) -> anyhow::Result<Self> {
        let stream = tokio::net::TcpStream::connect(address)
            .await
            .with_context(|| format!("failed to connect to {address}"))?;
        stream.set_nodelay(true)?;
        let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        Ok(Self { address, sender })
    }

    /// Sends one request, reconnecting first if the server closed the connection.
    pub async fn send(&mut self, request: Request, bodies: Bodies) -> Outcome {
        if self.sender.ready().await.is_err() {
            *self = Self::open(self.address).await.map_err(|e| e.to_string())?;
        }
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let body = match bodies {
            Bodies::Keep => body,
            Bodies::Drop => Bytes::new(),
        };
        Ok(Answer { status, body })
    }
}

struct HttpWorker<F> {
    connection: Connection,
    request: Arc<F>,
    bodies: Bodies,
}

impl<F> Worker for HttpWorker<F>
where
    F: Fn(u64) -> Request + Send + Sync + 'static,
{
    type Request = Request;
    type Answer = Outcome;

    fn prepare(&mut self, index: u64) -> Option<Request> {
        Some((self.request)(index))
    }

    async fn send(&mut self, request: Request) -> Outcome {
        self.connection.send(request, self.bodies).await
    }
}

/// The closed loop over HTTP: each worker holds one connection to `address` and sends
/// `request(i)` for the indexes it takes.
pub async fn http_loop<F>(
    address: SocketAddr,
    bounds: Bounds,
    bodies: Bodies,
    request: F,
) -> anyhow::Result<Run<Outcome>>
where
    F: Fn(u64) -> Request + Send + Sync + 'static,
{
    let request = Arc::new(request);
    closed_loop(bounds, |_| {
        let request = request.clone();
        async move {
            Ok(HttpWorker {
                connection: Connection::open(address).await?,
                request,
                bodies,
            })
        }
    })
    .await
}
