//! Helpers for unit tests: API Gateway HTTP API requests as the authorizer passes them on,
//! and SQS batches as a consumer receives them.

use crate::consumer::Message;
use crate::http::ApiError;
use lambda_http::{Body, Request, Response};
use serde_json::{Value, json};

/// An HTTP API (payload 2.0) request; `authorizer` is `requestContext.authorizer`.
pub(crate) fn api_request(method: &str, path: &str, body: &str, authorizer: Value) -> Request {
    let event = json!({
        "version": "2.0",
        "routeKey": format!("{method} {path}"),
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"content-type": "application/json"},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "api",
            "domainName": "localhost",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": "test"},
            "requestId": "r1",
            "routeKey": format!("{method} {path}"),
            "stage": "$default",
            "time": "30/Nov/2026:18:00:00 +0000",
            "timeEpoch": 0,
            "authorizer": authorizer
        },
        "body": body,
        "isBase64Encoded": false
    });
    lambda_http::request::from_str(&event.to_string()).expect("a valid HTTP API event")
}

/// The authorizer context of a verified user.
pub(crate) fn claims_of(sub: &str) -> Value {
    json!({"jwt": {"claims": {"sub": sub}, "scopes": null}})
}

/// A batch of messages with these bodies, their ids `m0`, `m1`, … in order.
pub(crate) fn batch(bodies: &[String]) -> Vec<Message> {
    Message::numbered(bodies)
}

/// [`batch`], each body sealed as the order route seals it ([`crate::seckill::admission::seal`]).
pub(crate) fn sealed_batch(bodies: &[String]) -> Vec<Message> {
    Message::sealed(bodies, crate::seckill::admission::seal::Seal::for_tests())
}

/// Runs `future` with a subscriber of its own that writes, as a terminal would show them, every
/// line at INFO and above and every span as it closes (with its fields); answers the future's
/// output and all that was written. Spans are made when the future first runs, so pass
/// `async { route(...).await }` rather than a future already made.
pub(crate) async fn logged<T>(future: impl std::future::Future<Output = T>) -> (T, String) {
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::fmt::format::FmtSpan;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .without_time()
        .with_span_events(FmtSpan::CLOSE)
        .with_writer(move || writer.clone())
        .finish();
    let output = {
        let _guard = tracing::subscriber::set_default(subscriber);
        future.await
    };
    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    (output, text)
}

/// A route's answer as the client sees it: the status and the JSON body.
pub(crate) fn answer(result: Result<Response<Body>, ApiError>) -> (u16, Value) {
    let response = result.unwrap_or_else(ApiError::into_response);
    let body = serde_json::from_slice(response.body().as_ref()).expect("a JSON body");
    (response.status().as_u16(), body)
}

/// Asserts that `answer` refuses with `status` and `code`, its message saying `says`.
#[track_caller]
pub(crate) fn assert_refused(answer: &(u16, Value), status: u16, code: &str, says: &str) {
    let (got, body) = answer;
    assert_eq!(
        (*got, body["error"]["code"].as_str()),
        (status, Some(code)),
        "{body}"
    );
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{message:?} does not say {says:?}");
}
