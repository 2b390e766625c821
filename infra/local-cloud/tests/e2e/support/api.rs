//! The client half of the harness: an HTTP client of the API as one user, the SDK's
//! configuration and a poll. Everything here is what a test of a running API needs, whoever
//! runs it: the e2e tests (through `support`) and the `sam local` test, which includes this
//! file alone (it starts no local cloud).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use std::time::{Duration, Instant};

pub async fn sdk() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .load()
        .await
}

/// A bearer token that the local authorizer accepts for ten minutes.
pub(super) fn token_of(user: &str, groups: &[String]) -> String {
    local_cloud::jwt::local_token(
        local_cloud::jwt::DEFAULT_LOCAL_SECRET.as_bytes(),
        user,
        groups,
        Duration::from_secs(600),
    )
    .expect("the development secret signs")
}

/// An API client for one user.
#[derive(Clone)]
pub struct Api {
    pub(super) base: String,
    pub(super) token: Option<String>,
    pub(super) client: Client<HttpConnector, Full<Bytes>>,
}

impl Api {
    /// The API at `base` (e.g. a runner of its own, `http://127.0.0.1:PORT`) as `user` in
    /// `groups`.
    pub fn at(base: &str, user: Option<&str>, groups: &[String]) -> Self {
        Self {
            base: base.to_owned(),
            token: user.map(|sub| token_of(sub, groups)),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// Sends a request; answers the status and the JSON body (`Null` when empty).
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        self.send(method, path, &[], body).await
    }

    /// Sends a request with these extra headers and this exact body; answers the status and
    /// the JSON body (`Null` when empty, a string when not JSON).
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: String,
    ) -> (u16, Value) {
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("content-type", "application/json");
        if let Some(token) = &self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = self
            .client
            .request(request.body(Full::new(Bytes::from(body))).unwrap())
            .await
            .expect("the API answers");
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let json = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        };
        (status, json)
    }

    /// Creates or updates the user's profile, which must answer 200; answers the profile.
    pub async fn put_profile(&self, display_name: &str) -> Value {
        let (status, body) = self
            .call(
                "PUT",
                "/users/me",
                Some(serde_json::json!({ "displayName": display_name })),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Sends a request without a body, which must answer `expected`; answers the body.
    pub async fn expect(&self, method: &str, path: &str, expected: u16) -> Value {
        let (status, body) = self.call(method, path, None).await;
        assert_eq!(status, expected, "{method} {path}: {body}");
        body
    }

    /// Follows `user`; answers the relationship.
    pub async fn follow(&self, user: &str) -> Value {
        self.expect("PUT", &format!("/users/{user}/follow"), 200)
            .await
    }

    /// Places one order of one unit on `sale`, which must be accepted; answers its id.
    pub async fn place_order(&self, sale: &str) -> String {
        let path = format!("/seckill/activities/{sale}/orders");
        let body = self.expect("POST", &path, 202).await;
        body["orderId"].as_str().unwrap().to_owned()
    }
}

/// Polls `probe` until it answers `Some`, or panics after `timeout` with `what`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            started.elapsed() < timeout,
            "timed out after {timeout:?} waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
