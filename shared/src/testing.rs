//! Helpers for unit tests: API Gateway HTTP API requests as the authorizer passes them on,
//! and SQS batches as a consumer receives them.

use crate::consumer::Message;
use lambda_http::Request;
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
