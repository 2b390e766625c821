//! `local-cloud check`: every function of the template answers one invocation. Used by
//! `make sam-check` on the binaries `sam build` made: proof that each one starts (its init
//! passes against the emulators) and serves a request, not only that it exists.
//!
//! A function with an HTTP route gets one real request through the local API (a bearer token
//! of an admin, path parameters filled in, an empty JSON object as body): any answer below 500
//! that the function itself gave counts, since a 400 or a 404 is the handler at work. Any
//! other function is invoked directly with the smallest event its first source would send:
//! an empty batch for SQS and DynamoDB Streams, the schedule's input or a "Scheduled Event",
//! and for a Cognito Pre Token Generation trigger the event of a sign-in by a user outside the
//! admin group (which a guard answers without calling Cognito, so no Cognito emulator is
//! needed), whose answer must be that event with a `response`.

use crate::cloud::LocalCloud;
use crate::model::{CognitoTrigger, EventSpec, FunctionSpec, HttpRoute};
use anyhow::Context as _;
use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{Method, Request};
use http_body_util::Full;
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
    /// The function of the binary that ran (`Handler`).
    pub handler: String,
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
        let (sent, result) = match spec.events.iter().find_map(EventSpec::as_http) {
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
                    .map_err(|err| format!("{err:#}"))
                    .and_then(|answer| direct_answer(spec, &answer));
                (sent, result)
            }
        };
        outcomes.push(Outcome {
            logical_id: spec.logical_id.clone(),
            binary: spec.binary.clone(),
            handler: spec.handler.clone(),
            sent,
            result,
            elapsed: started.elapsed(),
        });
    }
    outcomes
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
    let body = crate::loopback::body_bytes(response.into_body()).await;
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
        Some(EventSpec::Cognito(trigger)) if trigger.trigger == "PreTokenGeneration" => (
            format!(
                "a {} Pre Token Generation event of a non-admin",
                trigger.version
            ),
            pre_token_generation_event(trigger).to_string(),
        ),
        Some(EventSpec::Http(_) | EventSpec::Cognito(_)) | None => {
            ("an empty object".into(), "{}".into())
        }
    }
}

/// Checks a direct invocation's answer: a Cognito trigger must answer its event with a
/// `response` object (Cognito refuses the sign-in otherwise); other sources any answer.
fn direct_answer(spec: &FunctionSpec, answer: &[u8]) -> Result<String, String> {
    if let Some(EventSpec::Cognito(_)) = spec.events.first() {
        let value: serde_json::Value = serde_json::from_slice(answer)
            .map_err(|err| format!("the answer is not JSON: {err}"))?;
        if !value
            .get("response")
            .is_some_and(serde_json::Value::is_object)
        {
            return Err(format!("the answer has no response object: {value}"));
        }
    }
    Ok(format!("answered {} bytes", answer.len()))
}

/// What Cognito sends the trigger when a user of no group signs in with a password (the
/// shape of the developer guide's example; `version` "1" for `V1_0`, "2" for `V2_0`, ...).
fn pre_token_generation_event(trigger: &CognitoTrigger) -> serde_json::Value {
    let version = trigger
        .version
        .trim_start_matches('V')
        .split('_')
        .next()
        .unwrap_or("1");
    let sub = uuid::Uuid::new_v4().to_string();
    sign_in_event(
        version,
        "us-east-1_SamCheck00",
        "samcheckclient000000000000",
        &sub,
    )
}

/// A pre token generation event (event `version` "1", "2", ...) of user `sub`, in no group,
/// signing in with a password to `user_pool_id` through `client_id`: what `check` and the
/// benchmarks send a Cognito trigger.
pub fn sign_in_event(
    version: &str,
    user_pool_id: &str,
    client_id: &str,
    sub: &str,
) -> serde_json::Value {
    json!({
        "version": version,
        "triggerSource": "TokenGeneration_Authentication",
        "region": "us-east-1",
        "userPoolId": user_pool_id,
        "userName": sub,
        "callerContext": {
            "awsSdkVersion": "aws-sdk-unknown-unknown",
            "clientId": client_id
        },
        "request": {
            "userAttributes": {
                "sub": sub,
                "cognito:user_status": "CONFIRMED",
                "email_verified": "true",
                "email": format!("{sub}@example.com")
            },
            "groupConfiguration": {
                "groupsToOverride": [],
                "iamRolesToOverride": [],
                "preferredRole": null
            },
            "scopes": ["aws.cognito.signin.user.admin"]
        },
        "response": {"claimsAndScopeOverrideDetails": null}
    })
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

    fn pre_token_trigger(version: &str) -> FunctionSpec {
        FunctionSpec {
            logical_id: "GuardFunction".into(),
            name: "GuardFunction".into(),
            binary: "guard".into(),
            handler: "bootstrap".into(),
            timeout: Duration::from_secs(5),
            memory_mb: 128,
            environment: Default::default(),
            reserved_concurrency: None,
            log_filter: None,
            events: vec![EventSpec::Cognito(CognitoTrigger {
                user_pool: "UserPool".into(),
                trigger: "PreTokenGeneration".into(),
                version: version.into(),
            })],
        }
    }

    #[test]
    fn a_pre_token_generation_trigger_gets_a_sign_in_of_a_user_in_no_group() {
        let (sent, payload) = direct_event(&pre_token_trigger("V2_0"));
        assert_eq!(sent, "a V2_0 Pre Token Generation event of a non-admin");
        let event: serde_json::Value = serde_json::from_str(&payload).unwrap();
        assert_eq!(event["version"], "2");
        assert_eq!(
            event["request"]["groupConfiguration"]["groupsToOverride"],
            json!([])
        );
        let (_, v1) = direct_event(&pre_token_trigger("V1_0"));
        assert!(v1.contains(r#""version":"1""#), "{v1}");
    }

    #[test]
    fn a_cognito_trigger_must_answer_its_event_with_a_response() {
        let spec = pre_token_trigger("V2_0");
        assert!(direct_answer(&spec, br#"{"version":"2","response":{}}"#).is_ok());
        assert!(direct_answer(&spec, b"null").is_err());
        assert!(direct_answer(&spec, br#"{"version":"2"}"#).is_err());
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
