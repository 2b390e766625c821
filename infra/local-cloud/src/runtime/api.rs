//! The Lambda Runtime API for one process of one instance: `/next` hands it the function's
//! next invocation, `/{id}/response` and `/{id}/error` answer it, `/init/error` reports a
//! failed init.
//!
//! Each process gets a listener of its own (a [`Generation`]), so the invocation a process
//! holds is always known: when it dies, the supervisor answers exactly that invocation.

use super::{Invocation, InvokeError, Reply, ids};
use crate::runtime::FunctionShared;
use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use uuid::Uuid;

/// Lambda's limit on a synchronous invocation's response.
pub(crate) const MAX_RESPONSE_BYTES: usize = 6 * 1024 * 1024;
/// What we read of an error report; the rest is a stack trace nobody needs here.
const MAX_ERROR_BYTES: usize = 1024 * 1024;

const REQUEST_ID: HeaderName = HeaderName::from_static("lambda-runtime-aws-request-id");
const DEADLINE_MS: HeaderName = HeaderName::from_static("lambda-runtime-deadline-ms");
const FUNCTION_ARN: HeaderName = HeaderName::from_static("lambda-runtime-invoked-function-arn");
const TRACE_ID: HeaderName = HeaderName::from_static("lambda-runtime-trace-id");
const ERROR_TYPE: HeaderName = HeaderName::from_static("lambda-runtime-function-error-type");
const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// What one process and its supervisor share.
pub(crate) struct Generation {
    pub(crate) function: Arc<FunctionShared>,
    state: Mutex<State>,
    /// Wakes the supervisor: init finished or failed, or an invocation started.
    pub(crate) changed: Notify,
}

#[derive(Default)]
struct State {
    ready: bool,
    init_error: Option<String>,
    /// Set by the supervisor when the process is gone: nothing may be handed to it any more.
    closed: bool,
    /// An invocation that waited for this process to start (see the supervisor's on-demand
    /// mode); the first `/next` takes it before the queue.
    pending: Option<Invocation>,
    in_flight: Option<InFlight>,
}

pub(crate) struct InFlight {
    pub(crate) id: Uuid,
    pub(crate) deadline: Instant,
    pub(crate) reply: Reply,
}

/// The outcome of init, once known.
pub(crate) enum Init {
    Ready,
    Failed(String),
}

impl Generation {
    pub(crate) fn new(function: Arc<FunctionShared>, pending: Option<Invocation>) -> Self {
        Self {
            function,
            state: Mutex::new(State {
                pending,
                ..State::default()
            }),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn init(&self) -> Option<Init> {
        let mut state = self.lock();
        if let Some(error) = state.init_error.take() {
            Some(Init::Failed(error))
        } else if state.ready {
            Some(Init::Ready)
        } else {
            None
        }
    }

    /// The invocation the process holds now: its id and deadline.
    pub(crate) fn in_flight(&self) -> Option<(Uuid, Instant)> {
        self.lock().in_flight.as_ref().map(|f| (f.id, f.deadline))
    }

    /// Takes the invocation `id` if the process still holds it.
    pub(crate) fn take_in_flight(&self, id: Uuid) -> Option<InFlight> {
        let mut state = self.lock();
        match &state.in_flight {
            Some(in_flight) if in_flight.id == id => state.in_flight.take(),
            _ => None,
        }
    }

    /// Marks the process gone and takes what it held: the invocation it was running, and the
    /// one it had not picked up yet.
    pub(crate) fn close(&self) -> (Option<InFlight>, Option<Invocation>) {
        let mut state = self.lock();
        state.closed = true;
        (state.in_flight.take(), state.pending.take())
    }
}

/// Serves the Runtime API on `listener` until the task is dropped (which drops every
/// connection with it).
pub(crate) async fn serve(listener: TcpListener, generation: Arc<Generation>) {
    crate::loopback::serve(listener, generation, |generation, request| async move {
        handle(&generation, request).await
    })
    .await;
}

async fn handle(generation: &Generation, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path();
    let Some(path) = path.strip_prefix("/2018-06-01/runtime/") else {
        return not_found();
    };
    if request.method() == Method::GET && path == "invocation/next" {
        return next(generation).await;
    }
    if request.method() != Method::POST {
        return not_found();
    }
    if path == "init/error" {
        return init_error(generation, request).await;
    }
    let Some(rest) = path.strip_prefix("invocation/") else {
        return not_found();
    };
    if let Some(id) = rest.strip_suffix("/response") {
        match Uuid::try_parse(id) {
            Ok(id) => response(generation, id, request.into_body()).await,
            Err(_) => unknown_request_id(),
        }
    } else if let Some(id) = rest.strip_suffix("/error") {
        match Uuid::try_parse(id) {
            Ok(id) => error(generation, id, request).await,
            Err(_) => unknown_request_id(),
        }
    } else {
        not_found()
    }
}

async fn next(generation: &Generation) -> Response<Full<Bytes>> {
    let pending = {
        let mut state = generation.lock();
        if state.closed {
            None
        } else {
            if let Some(abandoned) = state.in_flight.take() {
                // The runtime asked for more without answering: Lambda would not let it, and
                // the invoker must not wait for an answer that will never come.
                let _ = abandoned.reply.send(Err(InvokeError::Function {
                    error_type: "Runtime.InvalidResponse".into(),
                    error_message: "the runtime asked for the next invocation without \
                                    answering this one"
                        .into(),
                }));
            }
            if !state.ready {
                state.ready = true;
                generation.changed.notify_one();
            }
            Some(state.pending.take())
        }
    };
    let invocation = match pending {
        // The process is gone or going: never hand it anything.
        None => return std::future::pending().await,
        Some(Some(invocation)) => invocation,
        Some(None) => match generation.function.queue.recv().await {
            Ok(invocation) => invocation,
            // The runtime is shutting down; the process is about to be killed.
            Err(_) => return std::future::pending().await,
        },
    };

    let id = ids::request_uuid();
    let timeout = generation.function.timeout;
    let deadline = Instant::now() + timeout;
    let deadline_ms = (SystemTime::now() + timeout)
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    let Invocation { payload, reply } = invocation;
    let handed_over = {
        let mut state = generation.lock();
        if state.closed {
            Err(reply)
        } else {
            state.in_flight = Some(InFlight {
                id,
                deadline,
                reply,
            });
            Ok(())
        }
    };
    if let Err(reply) = handed_over {
        // The process died while this request was in the air: another instance will run it.
        generation.function.requeue(Invocation { payload, reply });
        return std::future::pending().await;
    }
    generation.changed.notify_one();

    let mut response = Response::new(Full::new(payload));
    let headers = response.headers_mut();
    let mut id_text = [0u8; uuid::fmt::Hyphenated::LENGTH];
    id.hyphenated().encode_lower(&mut id_text);
    headers.insert(REQUEST_ID, header_value(&id_text));
    headers.insert(DEADLINE_MS, HeaderValue::from(deadline_ms as u64));
    headers.insert(FUNCTION_ARN, generation.function.arn.clone());
    headers.insert(TRACE_ID, trace_id(id));
    headers.insert(CONTENT_TYPE, JSON);
    response
}

async fn response(generation: &Generation, id: Uuid, body: Incoming) -> Response<Full<Bytes>> {
    let body = match Limited::new(body, MAX_RESPONSE_BYTES).collect().await {
        Ok(body) => body.to_bytes(),
        Err(error) if error.downcast_ref::<LengthLimitError>().is_some() => {
            let message = format!(
                "Response payload size exceeded maximum allowed payload size \
                 ({MAX_RESPONSE_BYTES} bytes)."
            );
            if let Some(in_flight) = generation.take_in_flight(id) {
                let _ = in_flight.reply.send(Err(InvokeError::Function {
                    error_type: "Function.ResponseSizeTooLarge".into(),
                    error_message: message.clone(),
                }));
            }
            return api_error(StatusCode::PAYLOAD_TOO_LARGE, "RequestTooLarge", &message);
        }
        // The connection broke mid-body; the supervisor will see the process die.
        Err(_) => return api_error(StatusCode::BAD_REQUEST, "InvalidRequest", "unreadable body"),
    };
    match generation.take_in_flight(id) {
        Some(in_flight) => {
            let _ = in_flight.reply.send(Ok(body));
            accepted()
        }
        None => unknown_request_id(),
    }
}

/// The body of `/error` and `/init/error`.
#[derive(Default, serde::Deserialize)]
struct ErrorReport {
    #[serde(rename = "errorType", default)]
    error_type: Option<String>,
    #[serde(rename = "errorMessage", default)]
    error_message: Option<String>,
}

async fn read_error(request: Request<Incoming>) -> (String, String) {
    let header_type = request
        .headers()
        .get(ERROR_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let body =
        crate::loopback::body_bytes(Limited::new(request.into_body(), MAX_ERROR_BYTES)).await;
    let report: ErrorReport = serde_json::from_slice(&body).unwrap_or_default();
    (
        report
            .error_type
            .or(header_type)
            .unwrap_or_else(|| "Unhandled".to_owned()),
        report.error_message.unwrap_or_default(),
    )
}

async fn error(
    generation: &Generation,
    id: Uuid,
    request: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let (error_type, error_message) = read_error(request).await;
    match generation.take_in_flight(id) {
        Some(in_flight) => {
            let _ = in_flight.reply.send(Err(InvokeError::Function {
                error_type,
                error_message,
            }));
            accepted()
        }
        None => unknown_request_id(),
    }
}

async fn init_error(generation: &Generation, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let (error_type, error_message) = read_error(request).await;
    {
        let mut state = generation.lock();
        if state.ready {
            return api_error(
                StatusCode::FORBIDDEN,
                "InvalidStateTransition",
                "init already finished",
            );
        }
        state.init_error = Some(format!("{error_type}: {error_message}"));
    }
    generation.changed.notify_one();
    accepted()
}

/// An X-Ray trace header derived from the request id, in the format Lambda passes.
fn trace_id(id: Uuid) -> HeaderValue {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let bits = id.as_u128();
    let mut text = String::with_capacity(80);
    let _ = write!(
        text,
        "Root=1-{:08x}-{:024x};Parent={:016x};Sampled=0",
        seconds as u32,
        bits >> 32,
        bits as u64
    );
    HeaderValue::try_from(text).expect("hex digits make a valid header value")
}

fn header_value(ascii: &[u8]) -> HeaderValue {
    HeaderValue::from_bytes(ascii).expect("an ASCII id is a valid header value")
}

fn accepted() -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(br#"{"status":"OK"}"#)));
    *response.status_mut() = StatusCode::ACCEPTED;
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    response
}

fn api_error(status: StatusCode, error_type: &str, message: &str) -> Response<Full<Bytes>> {
    let body = serde_json::json!({"errorType": error_type, "errorMessage": message});
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    response
}

fn unknown_request_id() -> Response<Full<Bytes>> {
    api_error(
        StatusCode::BAD_REQUEST,
        "InvalidRequestID",
        "no invocation in flight has this id",
    )
}

fn not_found() -> Response<Full<Bytes>> {
    api_error(
        StatusCode::NOT_FOUND,
        "NotFound",
        "unknown Runtime API path",
    )
}
