//! A minimal Lambda Runtime API on 127.0.0.1, for one function process at a time: it notes
//! when the process first polls `GET /2018-06-01/runtime/invocation/next` (the end of its
//! init) and hands it the events the harness queues, returning each response.
//!
//! Each spawned process is a new *generation*: a poll still pending from a killed process
//! belongs to an ended generation and never takes the next process's events.

use anyhow::Context;
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

const NEXT: &str = "/2018-06-01/runtime/invocation/next";
const INIT_ERROR: &str = "/2018-06-01/runtime/init/error";

/// What the process answered to one event.
#[derive(Debug)]
pub enum Outcome {
    Response(Bytes),
    Error(Bytes),
}

/// What the harness learns from the current process.
#[derive(Debug)]
pub enum Signal {
    /// The first poll of `/next`, at this instant.
    Polled(Instant),
    /// The process reported an init error.
    InitFailed(Bytes),
}

/// An event for the process and where its answer goes.
type Pending = (Bytes, oneshot::Sender<Outcome>);

struct Generation {
    signals: mpsc::UnboundedSender<Signal>,
    polled: bool,
    events: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Pending>>>,
    in_flight: Option<(String, oneshot::Sender<Outcome>)>,
    next_id: u64,
}

#[derive(Clone, Default)]
struct State {
    current: Arc<Mutex<Option<Generation>>>,
}

/// The running Runtime API.
pub struct RuntimeApi {
    pub address: SocketAddr,
    state: State,
}

/// The harness's side of one process's generation.
pub struct Session {
    pub signals: mpsc::UnboundedReceiver<Signal>,
    events: mpsc::UnboundedSender<Pending>,
}

impl Session {
    /// Gives the process one event and waits for its answer, at most `timeout`.
    pub async fn invoke(&self, event: Bytes, timeout: Duration) -> anyhow::Result<Outcome> {
        let (reply, answer) = oneshot::channel();
        self.events
            .send((event, reply))
            .map_err(|_| anyhow::anyhow!("the runtime API is gone"))?;
        tokio::time::timeout(timeout, answer)
            .await
            .context("the invocation timed out")?
            .context("the process ended mid-invocation")
    }
}

impl RuntimeApi {
    /// Listens on `address` (loopback).
    pub async fn start(address: SocketAddr) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("failed to listen on {address}"))?;
        let address = listener.local_addr()?;
        let state = State::default();
        tokio::spawn(local_cloud::loopback::serve(
            listener,
            Arc::new(state.clone()),
            |state, request| handle((*state).clone(), request),
        ));
        Ok(Self { address, state })
    }

    /// Starts a new generation, ending the previous one; call it just before spawning.
    pub fn session(&self) -> Session {
        let (signal_tx, signals) = mpsc::unbounded_channel();
        let (events, event_rx) = mpsc::unbounded_channel();
        *self.state.current.lock().expect("no panic under the lock") = Some(Generation {
            signals: signal_tx,
            polled: false,
            events: Arc::new(tokio::sync::Mutex::new(event_rx)),
            in_flight: None,
            next_id: 0,
        });
        Session { signals, events }
    }
}

fn empty(status: StatusCode) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .body(Full::new(Bytes::new()))
        .expect("a valid response")
}

async fn handle(state: State, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    if request.method() == http::Method::GET && path == NEXT {
        return next(state).await;
    }
    let body = local_cloud::loopback::body_bytes(request.into_body()).await;
    let mut current = state.current.lock().expect("no panic under the lock");
    let Some(generation) = current.as_mut() else {
        return empty(StatusCode::GONE);
    };
    if path == INIT_ERROR {
        let _ = generation.signals.send(Signal::InitFailed(body));
        return empty(StatusCode::ACCEPTED);
    }
    let outcome = if let Some(id) = path
        .strip_prefix("/2018-06-01/runtime/invocation/")
        .and_then(|rest| rest.strip_suffix("/response"))
    {
        (id.to_owned(), Outcome::Response(body))
    } else if let Some(id) = path
        .strip_prefix("/2018-06-01/runtime/invocation/")
        .and_then(|rest| rest.strip_suffix("/error"))
    {
        (id.to_owned(), Outcome::Error(body))
    } else {
        return empty(StatusCode::NOT_FOUND);
    };
    match generation.in_flight.take() {
        Some((id, reply)) if id == outcome.0 => {
            let _ = reply.send(outcome.1);
            empty(StatusCode::ACCEPTED)
        }
        other => {
            generation.in_flight = other;
            empty(StatusCode::BAD_REQUEST)
        }
    }
}

/// `/next`: notes the first poll, then waits for an event of this generation.
async fn next(state: State) -> Response<Full<Bytes>> {
    let events = {
        let mut current = state.current.lock().expect("no panic under the lock");
        let Some(generation) = current.as_mut() else {
            return empty(StatusCode::GONE);
        };
        if !generation.polled {
            generation.polled = true;
            let _ = generation.signals.send(Signal::Polled(Instant::now()));
        }
        generation.events.clone()
    };
    // Ends with None once the generation is replaced (its sender dropped).
    let Some((event, reply)) = events.lock().await.recv().await else {
        return empty(StatusCode::GONE);
    };
    let id = {
        let mut current = state.current.lock().expect("no panic under the lock");
        let Some(generation) = current
            .as_mut()
            .filter(|generation| Arc::ptr_eq(&generation.events, &events))
        else {
            return empty(StatusCode::GONE);
        };
        generation.next_id += 1;
        let id = format!("bench-{}", generation.next_id);
        generation.in_flight = Some((id.clone(), reply));
        id
    };
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() + 30_000);
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/json")
        .header("lambda-runtime-aws-request-id", id)
        .header("lambda-runtime-deadline-ms", deadline.to_string())
        .header(
            "lambda-runtime-invoked-function-arn",
            "arn:aws:lambda:us-east-1:123456789012:function:bench",
        )
        .header(
            "lambda-runtime-trace-id",
            "Root=1-00000000-000000000000000000000000;Sampled=0",
        )
        .body(Full::new(event))
        .expect("a valid response")
}
