//! A plain HTTP/1.1 server for the local endpoints on 127.0.0.1 (the HTTP API, each process's
//! Runtime API, the fault proxies, the AWS stub, the benchmark's Runtime API and the runner
//! tests' bare server): every connection served on its own task. [`serve`] runs until the task
//! running it is dropped, which drops every connection with it; [`serve_until`] stops on a
//! signal and lets the requests in flight finish.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// The address of the client of a request, in the request's extensions.
#[derive(Clone, Copy, Debug)]
pub struct Peer(pub SocketAddr);

/// The address the client of a request connected to, in the request's extensions: the
/// listener's, or on a listener of every interface the one the client reached.
#[derive(Clone, Copy, Debug)]
pub struct Local(pub SocketAddr);

/// All of a request's or a response's body, or nothing when it breaks off midway (the other
/// side gone): what every local endpoint and its callers read bodies with.
pub async fn body_bytes<B: hyper::body::Body>(body: B) -> Bytes {
    use http_body_util::BodyExt as _;
    body.collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default()
}

/// Serves `handle(state, request)` on `listener`.
pub async fn serve<S, F, Fut>(listener: TcpListener, state: Arc<S>, handle: F)
where
    S: Send + Sync + 'static,
    F: Fn(Arc<S>, Request<Incoming>) -> Fut + Copy + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    serve_until(
        listener,
        state,
        handle,
        std::future::pending(),
        Duration::ZERO,
    )
    .await;
}

/// Serves `handle(state, request)` on `listener` until `shutdown` resolves, then stops
/// accepting, closes each connection once its request in flight is answered, and waits `drain`
/// at most for them (what is left after it is dropped).
pub async fn serve_until<S, F, Fut>(
    listener: TcpListener,
    state: Arc<S>,
    handle: F,
    shutdown: impl Future<Output = ()>,
    drain: Duration,
) where
    S: Send + Sync + 'static,
    F: Fn(Arc<S>, Request<Incoming>) -> Fut + Copy + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let (closing, closed) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let Ok(local) = stream.local_addr() else {
                        continue;
                    };
                    connections.spawn(connection(
                        stream,
                        Peer(peer),
                        Local(local),
                        state.clone(),
                        handle,
                        closed.clone(),
                    ));
                }
                Err(error) => {
                    // Out of file descriptors or the like: not fatal, try again shortly.
                    tracing::warn!(%error, "failed to accept a connection");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let _ = closing.send(true);
    let drained = tokio::time::timeout(drain, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.abort_all();
    }
}

async fn connection<S, F, Fut>(
    stream: TcpStream,
    peer: Peer,
    local: Local,
    state: Arc<S>,
    handle: F,
    mut closed: watch::Receiver<bool>,
) where
    S: Send + Sync + 'static,
    F: Fn(Arc<S>, Request<Incoming>) -> Fut + Copy + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let service = service_fn(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(peer);
        request.extensions_mut().insert(local);
        let response = handle(state.clone(), request);
        async move { Ok::<_, Infallible>(response.await) }
    });
    let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => {}
        () = async { let _ = closed.wait_for(|closed| *closed).await; } => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}
