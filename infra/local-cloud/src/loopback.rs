//! A plain HTTP/1.1 server for the local endpoints on 127.0.0.1 (each process's Runtime API,
//! the fault proxies, the benchmark's Runtime API and the runner tests' bare server): every
//! connection served on its own task, until the task running this is dropped, which drops
//! every connection with it.

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// Serves `handle(state, request)` on `listener`.
pub async fn serve<S, F, Fut>(listener: TcpListener, state: Arc<S>, handle: F)
where
    S: Send + Sync + 'static,
    F: Fn(Arc<S>, Request<Incoming>) -> Fut + Copy + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let _ = stream.set_nodelay(true);
                    let state = state.clone();
                    connections.spawn(async move {
                        let service = service_fn(move |request| {
                            let response = handle(state.clone(), request);
                            async move { Ok::<_, Infallible>(response.await) }
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                // Out of file descriptors or the like: try again shortly.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}
