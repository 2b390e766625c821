//! `local-cloud check`: every function of the template answers one invocation. Used by
//! `make sam-check` on the binaries `sam build` made: proof that each one starts (its init
//! passes against the emulators) and serves a request, not only that it exists.
//!
//! A function with an HTTP route gets one real request through the local API (a bearer token
//! of an admin, path parameters filled in, an empty JSON object as body): any answer below 500
//! that the function itself gave counts, since a 400 or a 404 is the handler at work. Any
//! other function is invoked directly with the smallest event its first source would send:
//! an empty batch for SQS and DynamoDB Streams, the schedule's input or a "Scheduled Event".

use crate::cloud::LocalCloud;
use crate::model::{EventSpec, FunctionSpec, HttpRoute};
use anyhow::Context as _;
use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{Method, Request};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::json;
use std::time::{Duration, Instant};

/// What one function answered.
#[derive(Debug)]
pub struct Outcome {
    pub logical_id: String,
    pub binary: String,
    /// What was sent, e.g. `GET /users/sam-check` or `empty SQS batch`.
    pub sent: String,
    /// `Ok(summary)` when the function answered as it should, `Err(why)` otherwise.
    pub result: Result<String, String>,
    pub elapsed: Duration,
}

/// Sends every function of `cloud` one invocation, one function at a time, in template order.
/// `token` must be accepted by the API's authorizer (an admin's, for the admin routes).
pub async fn every_function(cloud: &LocalCloud, token: &str) -> Vec<Outcome> {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let mut outcomes = Vec::new();
    for spec in &cloud.model.functions {
        let started = Instant::now();
        let (sent, result) = match spec.events.iter().find_map(http_route) {
            Some(route) => {
                let (method, path) = request_line(route);
                let sent = format!("{method} {path}");
                (
                    sent,
                    http_answer(cloud, &client, spec, &method, &path, token).await,
                )
            }
            None => {
                let (sent, payload) = direct_event(spec);
                let result = cloud
                    .invoke(&spec.name, Bytes::from(payload))
                    .await
                    .map(|answer| format!("answered {} bytes", answer.len()))
                    .map_err(|err| format!("{err:#}"));
                (sent, result)
            }
        };
        outcomes.push(Outcome {
            logical_id: spec.logical_id.clone(),
            binary: spec.binary.clone(),
            sent,
            result,
            elapsed: started.elapsed(),
        });
    }
    outcomes
}

fn http_route(event: &EventSpec) -> Option<&HttpRoute> {
    match event {
        EventSpec::Http(route) => Some(route),
        _ => None,
    }
}

/// The route's method (`ANY` becomes `GET`) and its path with every `{param}` and `{proxy+}`
/// filled in with `sam-check`.
fn request_line(route: &HttpRoute) -> (Method, String) {
    let method = match route.method.as_str() {
        "ANY" => Method::GET,
        other => Method::from_bytes(other.as_bytes()).unwrap_or(Method::GET),
    };
    let path = route
        .path
        .split('/')
        .map(|segment| {
            if segment.starts_with('{') && segment.ends_with('}') {
                "sam-check"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/");
    (method, path)
}

async fn http_answer(
    cloud: &LocalCloud,
    client: &Client<HttpConnector, Full<Bytes>>,
    spec: &FunctionSpec,
    method: &Method,
    path: &str,
    token: &str,
) -> Result<String, String> {
    let before = cloud.invocations(&spec.name).unwrap_or(0);
    let body = if matches!(*method, Method::GET | Method::HEAD | Method::DELETE) {
        Bytes::new()
    } else {
        Bytes::from_static(b"{}")
    };
    let request = Request::builder()
        .method(method.clone())
        .uri(format!("http://{}{path}", cloud.address))
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .header(CONTENT_TYPE, "application/json")
        .body(Full::new(body))
        .map_err(|err| format!("could not build the request: {err}"))?;
    let response = client
        .request(request)
        .await
        .context("the local API did not answer")
        .map_err(|err| format!("{err:#}"))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    let after = cloud.invocations(&spec.name).unwrap_or(0);
    let excerpt = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
    if after == before {
        return Err(format!(
            "HTTP {status} came from the runner, not the function: {excerpt}"
        ));
    }
    if status.is_server_error() {
        return Err(format!("HTTP {status}: {excerpt}"));
    }
    Ok(format!("HTTP {status}"))
}

/// The smallest event the function's first source would send it.
fn direct_event(spec: &FunctionSpec) -> (String, String) {
    match spec.events.first() {
        Some(EventSpec::Sqs(_)) => ("empty SQS batch".into(), json!({"Records": []}).to_string()),
        Some(EventSpec::Stream(_)) => (
            "empty DynamoDB Streams batch".into(),
            json!({"Records": []}).to_string(),
        ),
        Some(EventSpec::Topic(_)) => (
            "empty SNS notification".into(),
            json!({"Records": []}).to_string(),
        ),
        Some(EventSpec::Schedule(schedule)) => match &schedule.input {
            Some(input) => ("the schedule's input".into(), input.clone()),
            None => (
                "a Scheduled Event".into(),
                json!({
                    "version": "0",
                    "id": uuid::Uuid::new_v4().to_string(),
                    "detail-type": "Scheduled Event",
                    "source": "aws.events",
                    "account": crate::cloud::DEFAULT_ACCOUNT_ID,
                    "time": "2026-01-01T00:00:00Z",
                    "region": "us-east-1",
                    "resources": [],
                    "detail": {},
                })
                .to_string(),
            ),
        },
        Some(EventSpec::Http(_)) | None => ("an empty object".into(), "{}".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(method: &str, path: &str) -> HttpRoute {
        HttpRoute {
            event_name: "Api".into(),
            method: method.into(),
            path: path.into(),
            authorizer: None,
            throttle: None,
        }
    }

    #[test]
    fn path_parameters_are_filled_in_and_any_becomes_get() {
        assert_eq!(
            request_line(&route("PUT", "/users/{userId}/follow")),
            (Method::PUT, "/users/sam-check/follow".to_owned())
        );
        assert_eq!(
            request_line(&route("ANY", "/{proxy+}")),
            (Method::GET, "/sam-check".to_owned())
        );
        assert_eq!(
            request_line(&route("GET", "/sales")),
            (Method::GET, "/sales".to_owned())
        );
    }
}
