//! The HTTP API on 127.0.0.1: API Gateway HTTP API routing, the JWT authorizer (emulated with
//! the runner's HS256 secret), payload format 2.0 events and responses.
//!
//! # Layout
//!
//! - this module: the server, the authorizer and the request flow.
//! - `router`: which route a request takes.
//! - `event`: the request event sent to the function.
//! - `response`: the HTTP response made of the function's answer, and the gateway's errors.
//! - `throttle`: the token bucket of a throttled route.
//! - `edge`: the distribution in front: its web ACL's per-source limits and origin headers.

mod edge;
mod event;
mod response;
mod router;
mod throttle;

use crate::dashboard::{self, Dashboard};
use crate::guard::{self, OwnAddress};
use crate::jwt;
use crate::lambda_api::{self, LambdaApi};
use crate::loopback::{Local, Peer};
use crate::model::HttpRoute;
use crate::pages::Pages;
use crate::runtime::{FunctionHandle, ids};
use crate::sign_in;
use anyhow::Context as _;
use base64::Engine as _;
use bytes::Bytes;
pub use edge::Edge;
use http::Request;
use http::header::{CONTENT_LENGTH, HeaderName, HeaderValue};
use http::request::Parts;
use http_body_util::{BodyExt as _, LengthLimitError, Limited};
use hyper::body::Incoming;
use response::HttpResponse;
use serde_json::{Map, Value};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use throttle::TokenBucket;
use tokio::net::TcpListener;

/// API Gateway's limit on a request body.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;
/// HTTP APIs give up on an integration after this long (503), whatever the function's
/// timeout.
pub const INTEGRATION_TIMEOUT: Duration = Duration::from_secs(30);
/// How long in-flight requests may finish after `shutdown` resolves.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(3);

const APIGW_REQUEST_ID: HeaderName = HeaderName::from_static("apigw-requestid");

/// An HTTP API route and the function behind it. The route's `spec.throttle` is enforced:
/// clear it to serve the route unthrottled.
#[derive(Clone, Debug)]
pub struct Route {
    pub spec: HttpRoute,
    pub function: FunctionHandle,
}

/// Serves the HTTP API on `listener` until `shutdown` resolves, then lets the requests in
/// flight finish (for a few seconds at most). Paths under `/_local/` are the runner's own
/// tools, `dashboard`'s, those under `/shop/` the pages', and those under `/2015-03-31/`
/// Lambda's Invoke API (`lambda`), whatever the routes. `edge` plays the distribution in
/// front of the API: its limits and headers apply to the pages and the routes.
#[expect(
    clippy::too_many_arguments,
    reason = "each is a part of the cloud the gateway fronts; callers name them in turn"
)]
pub async fn serve(
    listener: TcpListener,
    routes: Vec<Route>,
    edge: Edge,
    jwt_secret: Vec<u8>,
    dashboard: Arc<Dashboard>,
    pages: Option<Pages>,
    lambda: Option<LambdaApi>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let local = listener
        .local_addr()
        .context("the HTTP API listener has no address")?;
    let gateway = Arc::new(Gateway::new(
        routes, edge, jwt_secret, local, dashboard, pages, lambda,
    )?);
    crate::loopback::serve_until(
        listener,
        gateway,
        |gateway, request| async move {
            let Peer(peer) = *request
                .extensions()
                .get::<Peer>()
                .expect("the loopback server names every request's peer");
            let Local(local) = *request
                .extensions()
                .get::<Local>()
                .expect("the loopback server names every request's local address");
            gateway.handle(request, peer, local).await
        },
        shutdown,
        DRAIN_TIMEOUT,
    )
    .await;
    Ok(())
}

/// Where a route's authorizer finds the token.
enum IdentitySource {
    Header(HeaderName),
    Query(String),
}

struct Target {
    /// `METHOD /path` as written in the template.
    route_key: Box<str>,
    function: FunctionHandle,
    identity: Option<IdentitySource>,
    /// `None` for a route without throttling.
    bucket: Option<TokenBucket>,
}

struct Gateway {
    router: router::Router,
    targets: Vec<Target>,
    edge: Edge,
    secret: Vec<u8>,
    local: SocketAddr,
    dashboard: Arc<Dashboard>,
    /// The shop's pages under `/shop/`, when the template has their bucket.
    pages: Option<Pages>,
    /// Lambda's Invoke API, when the cloud serves it.
    lambda: Option<LambdaApi>,
}

impl Gateway {
    fn new(
        routes: Vec<Route>,
        edge: Edge,
        secret: Vec<u8>,
        local: SocketAddr,
        dashboard: Arc<Dashboard>,
        pages: Option<Pages>,
        lambda: Option<LambdaApi>,
    ) -> anyhow::Result<Self> {
        let router = router::Router::new(
            routes
                .iter()
                .enumerate()
                .map(|(i, route)| (route.spec.method.as_str(), route.spec.path.as_str(), i)),
        )
        .context("invalid HTTP API routes")?;
        let targets = routes
            .into_iter()
            .map(|route| {
                let identity = route
                    .spec
                    .authorizer
                    .as_ref()
                    .map(|authorizer| identity_source(&authorizer.identity_source))
                    .transpose()
                    .with_context(|| format!("route {} {}", route.spec.method, route.spec.path))?;
                let route_key = route.spec.key().into();
                Ok(Target {
                    route_key,
                    function: route.function,
                    identity,
                    bucket: route
                        .spec
                        .throttle
                        .map(|limits| TokenBucket::new(limits, Instant::now())),
                })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Self {
            router,
            targets,
            edge,
            secret,
            local,
            dashboard,
            pages,
            lambda,
        })
    }

    async fn handle(
        &self,
        request: Request<Incoming>,
        peer: SocketAddr,
        local: SocketAddr,
    ) -> HttpResponse {
        let path = request.uri().path();
        let lambda = self
            .lambda
            .as_ref()
            .filter(|_| lambda_api::is_lambda_api(path));
        // The runner's own powers: only for requests to the runner itself, from its own pages.
        let tool = match lambda {
            Some(_) => Some("Lambda's Invoke API"),
            None if path == sign_in::PATH => Some("the development sign-in"),
            None if dashboard::is_local(path) => Some("the runner's tools under /_local/"),
            None => None,
        };
        if let Some(tool) = tool
            && let Some(problem) =
                guard::refusal(&OwnAddress::new(self.local, local), tool, &request)
        {
            tracing::warn!(%peer, path, "refused: {problem}");
            return match lambda {
                Some(_) => lambda_api::access_denied(&problem),
                None => dashboard::local_answer(
                    http::StatusCode::FORBIDDEN,
                    "application/json",
                    Bytes::from(serde_json::json!({ "message": problem }).to_string()),
                ),
            };
        }
        // Lambda's API, not the HTTP API's: no route, throttle, authorizer or apigw-requestid.
        if let Some(lambda) = lambda {
            let (parts, body) = request.into_parts();
            return lambda.respond(&parts, body).await;
        }
        let request_id = RequestId::new();
        // The runner's own tools keep their own headers; the site (pages and API) gets the
        // distribution's security headers, as every behaviour's response headers policy
        // adds them in the cloud.
        let site = !dashboard::is_local(request.uri().path());
        let mut response = self.respond(request, peer, request_id.as_str()).await;
        response
            .headers_mut()
            .insert(APIGW_REQUEST_ID, request_id.header_value());
        if site {
            crate::pages::secure(response.headers_mut());
        }
        response
    }

    async fn respond(
        &self,
        request: Request<Incoming>,
        peer: SocketAddr,
        request_id: &str,
    ) -> HttpResponse {
        let (mut parts, body) = request.into_parts();
        // Before routing: no route, not even `$default` or `/{proxy+}`, takes these.
        if parts.uri.path() == sign_in::PATH {
            let json = parts
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .is_some_and(|kind| kind.starts_with("application/json"));
            // None: over the limit, or the client broke off.
            let body = http_body_util::BodyExt::collect(http_body_util::Limited::new(
                body,
                sign_in::MAX_BODY,
            ))
            .await
            .ok()
            .map(|collected| collected.to_bytes());
            return sign_in::respond(
                &self.secret,
                &parts.method,
                parts.uri.query(),
                json,
                body.as_deref(),
            );
        }
        if dashboard::is_local(parts.uri.path()) {
            return self.dashboard.respond(&parts.method, parts.uri.path());
        }
        // The web ACL sees every request the distribution gets, before its cache and before
        // API Gateway: what it blocks takes nothing from a route's bucket.
        let source = self.edge.source(
            peer,
            parts
                .headers
                .get("x-forwarded-for")
                .and_then(|value| value.to_str().ok()),
        );
        if let Some(rule) = self.edge.blocked_by(
            parts.method.as_str(),
            parts.uri.path(),
            source,
            Instant::now(),
        ) {
            return response::blocked(rule);
        }
        // The pages, as the distribution's /shop/* behaviour serves them from the bucket.
        if let Some(pages) = &self.pages
            && crate::pages::is_page(parts.uri.path())
        {
            return pages.respond(&parts.method, parts.uri.path()).await;
        }
        let Some(matched) = self.router.find(&parts.method, parts.uri.path()) else {
            return response::not_found();
        };
        let target = &self.targets[matched.target];
        // Throttling comes first, as in API Gateway: a throttled request costs no token
        // check and no invocation.
        if target
            .bucket
            .as_ref()
            .is_some_and(|bucket| !bucket.admit(Instant::now()))
        {
            target.function.throttled();
            return response::too_many_requests();
        }
        for (name, value) in &self.edge.origin_headers {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                parts.headers.insert(name, value);
            }
        }
        let claims = match &target.identity {
            None => None,
            Some(source) => match self.authorize(source, &parts) {
                Ok(claims) => Some(claims),
                Err(challenge) => return response::unauthorized(challenge),
            },
        };

        let declared = parts
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<u64>().ok());
        if declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
            return response::too_large();
        }
        let body = match Limited::new(body, MAX_BODY_BYTES).collect().await {
            Ok(body) => body.to_bytes(),
            Err(error) if error.downcast_ref::<LengthLimitError>().is_some() => {
                return response::too_large();
            }
            Err(_) => return response::bad_request(),
        };

        let event = event::build(&event::Source {
            route_key: &target.route_key,
            parts: &parts,
            path_params: &matched.params,
            claims: claims.as_ref(),
            body: &body,
            request_id,
            peer,
            local: self.local,
        });
        let invocation = target
            .function
            .invoke(&target.route_key, Bytes::from(event));
        let result = if target.function.timeout() < INTEGRATION_TIMEOUT {
            // The function's own timeout answers first: no timer needed here.
            invocation.await
        } else {
            match tokio::time::timeout(INTEGRATION_TIMEOUT, invocation).await {
                Ok(result) => result,
                Err(_) => return response::integration_timeout(),
            }
        };
        response::from_invocation(result)
    }

    /// The verified claims, or the `www-authenticate` challenge of the 401.
    fn authorize(
        &self,
        source: &IdentitySource,
        parts: &Parts,
    ) -> Result<Map<String, Value>, HeaderValue> {
        let token = match source {
            IdentitySource::Header(name) => parts
                .headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(std::borrow::Cow::Borrowed),
            IdentitySource::Query(name) => parts.uri.query().and_then(|query| {
                event::query_pairs(query)
                    .into_iter()
                    .find(|(key, _)| key == name)
                    .map(|(_, value)| value)
            }),
        };
        let token = token.as_deref().map(strip_bearer).unwrap_or_default();
        if token.is_empty() {
            return Err(HeaderValue::from_static("Bearer"));
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs() as i64;
        jwt::verify(&self.secret, token, now).map_err(|error| {
            let challenge =
                format!(r#"Bearer scope="" error="invalid_token" error_description="{error}""#);
            HeaderValue::try_from(challenge).unwrap_or(HeaderValue::from_static("Bearer"))
        })
    }
}

/// `$request.header.Authorization` or `$request.querystring.token`.
fn identity_source(source: &str) -> anyhow::Result<IdentitySource> {
    // A JWT authorizer takes one source; a list would be a Lambda authorizer's.
    let source = source.split(',').next().unwrap_or_default().trim();
    if let Some(header) = source.strip_prefix("$request.header.") {
        let header = HeaderName::from_bytes(header.as_bytes())
            .with_context(|| format!("invalid identity source header {header:?}"))?;
        return Ok(IdentitySource::Header(header));
    }
    if let Some(name) = source.strip_prefix("$request.querystring.") {
        return Ok(IdentitySource::Query(name.to_owned()));
    }
    anyhow::bail!("unsupported identity source {source:?} (expected $request.header.<name>)")
}

/// API Gateway accepts the token with or without the `Bearer ` scheme.
fn strip_bearer(value: &str) -> &str {
    let value = value.trim();
    match value.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case("bearer ") => value[7..].trim_start(),
        _ => value,
    }
}

/// An id like API Gateway's (`Mc7UVioPPHcEKPA=`): 11 bytes in base64.
struct RequestId([u8; 16]);

impl RequestId {
    fn new() -> Self {
        let bits = ids::next_u128().to_be_bytes();
        let mut text = [0u8; 16];
        let written = base64::engine::general_purpose::STANDARD
            .encode_slice(&bits[..11], &mut text)
            .expect("11 bytes take 16 base64 characters");
        debug_assert_eq!(written, 16);
        Self(text)
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("base64 is ASCII")
    }

    fn header_value(&self) -> HeaderValue {
        HeaderValue::from_bytes(&self.0).expect("base64 is a valid header value")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_is_stripped_case_insensitively() {
        for (header, token) in [
            ("Bearer abc", "abc"),
            ("bearer  abc ", "abc"),
            ("BEARER abc", "abc"),
            ("abc", "abc"),
            ("Bearer", "Bearer"),
            ("", ""),
        ] {
            assert_eq!(strip_bearer(header), token, "{header:?}");
        }
    }

    #[test]
    fn identity_sources() {
        assert!(matches!(
            identity_source("$request.header.Authorization").unwrap(),
            IdentitySource::Header(name) if name == "authorization"
        ));
        assert!(matches!(
            identity_source("$request.querystring.token").unwrap(),
            IdentitySource::Query(name) if name == "token"
        ));
        assert!(identity_source("$context.identity.sourceIp").is_err());
    }

    #[test]
    fn request_ids_look_like_api_gateway_ones() {
        let id = RequestId::new();
        assert_eq!(id.as_str().len(), 16);
        assert!(id.as_str().ends_with('='));
        assert_ne!(RequestId::new().as_str(), id.as_str());
    }
}
