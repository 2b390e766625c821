//! The HTTP API end to end: the gateway and the runtime in front of the real fixture
//! functions (`fixture-http`, `hello-http`), with the fixture template's EchoFunction and
//! HelloFunction written out by hand. No emulator needed.

use crate::support::{binaries_dir, unique};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use local_cloud::gateway::{self, Route};
use local_cloud::jwt;
use local_cloud::model::{EventSpec, FunctionSpec, HttpRoute, JwtAuthorizer, RouteThrottle};
use local_cloud::runtime::{FunctionHandle, Runtime, RuntimeOptions};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const SECRET: &[u8] = b"gateway-test-secret";

fn route(event_name: &str, method: &str, path: &str, authorizer: bool) -> EventSpec {
    EventSpec::Http(HttpRoute {
        event_name: event_name.into(),
        method: method.into(),
        path: path.into(),
        authorizer: authorizer.then(|| JwtAuthorizer {
            name: "LocalJwt".into(),
            identity_source: "$request.header.Authorization".into(),
        }),
        throttle: None,
    })
}

/// The fixture template's EchoFunction, resolved for a stack named `stack`.
fn echo_function(stack: &str) -> FunctionSpec {
    let environment = BTreeMap::from(
        [
            ("GREETING", "hello".to_owned()),
            (
                "OUTPUT_QUEUE_URL",
                format!("http://127.0.0.1:5000/123456789012/{stack}-output"),
            ),
            ("TABLE_NAME", format!("{stack}-ItemsTable")),
            (
                "TABLE_ARN",
                format!("arn:aws:dynamodb:us-east-1:123456789012:table/{stack}-ItemsTable"),
            ),
            (
                "WORK_QUEUE_ARN",
                format!("arn:aws:sqs:us-east-1:123456789012:{stack}-WorkQueue"),
            ),
            ("WORK_QUEUE_NAME", format!("{stack}-WorkQueue")),
            ("STACK", format!("{stack} in us-east-1 of 123456789012")),
        ]
        .map(|(name, value)| (name.to_owned(), value)),
    );
    FunctionSpec {
        logical_id: "EchoFunction".into(),
        name: "EchoFunction".into(),
        binary: "fixture-http".into(),
        timeout: Duration::from_secs(1),
        memory_mb: 128,
        environment,
        reserved_concurrency: None,
        events: vec![
            route("Items", "GET", "/items/{itemId}", true),
            route("Mixed", "POST", "/items/{itemId}/parts/{partId}", true),
            route("Public", "ANY", "/public/{proxy+}", false),
        ],
    }
}

/// The fixture template's HelloFunction.
fn hello_function() -> FunctionSpec {
    FunctionSpec {
        logical_id: "HelloFunction".into(),
        name: "HelloFunction".into(),
        binary: "hello-http".into(),
        timeout: Duration::from_secs(3),
        memory_mb: 128,
        environment: BTreeMap::new(),
        reserved_concurrency: Some(2),
        events: vec![route("Hello", "GET", "/hello", false)],
    }
}

/// A runtime and a gateway in front of it, on a port of their own.
struct Api {
    address: SocketAddr,
    runtime: Runtime,
    stop: oneshot::Sender<()>,
    server: JoinHandle<anyhow::Result<()>>,
    client: Client<HttpConnector, Full<Bytes>>,
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }
}

async fn spawn_api(functions: Vec<FunctionSpec>, instances: u32, log_invocations: bool) -> Api {
    spawn_api_in(binaries_dir(), functions, instances, log_invocations).await
}

async fn spawn_api_in(
    binaries_dir: std::path::PathBuf,
    functions: Vec<FunctionSpec>,
    instances: u32,
    log_invocations: bool,
) -> Api {
    let runtime = Runtime::start(
        &functions,
        RuntimeOptions {
            binaries_dir,
            instances,
            base_env: BTreeMap::from([("AWS_REGION".to_owned(), "us-east-1".to_owned())]),
            log_invocations,
            env_overrides: BTreeMap::new(),
            faults: Default::default(),
        },
    )
    .await
    .expect(
        "the runtime starts (build the fixtures first when testing this crate alone: \
         cargo build -p local-cloud-fixtures)",
    );
    let mut routes = Vec::new();
    for function in &functions {
        let handle = runtime
            .function(&function.name)
            .expect("every function has a handle");
        for event in &function.events {
            if let EventSpec::Http(spec) = event {
                routes.push(Route {
                    spec: spec.clone(),
                    function: handle.clone(),
                });
            }
        }
    }
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(gateway::serve(
        listener,
        routes,
        SECRET.to_vec(),
        async move {
            let _ = stopped.await;
        },
    ));
    Api {
        address,
        runtime,
        stop,
        server,
        client: Client::builder(TokioExecutor::new()).build_http(),
    }
}

impl Api {
    fn request(&self, method: Method, path: &str) -> http::request::Builder {
        Request::builder()
            .method(method)
            .uri(format!("http://{}{path}", self.address))
    }

    async fn send(&self, request: http::request::Builder, body: impl Into<Bytes>) -> Reply {
        let request = request.body(Full::new(body.into())).unwrap();
        let response = tokio::time::timeout(Duration::from_secs(20), self.client.request(request))
            .await
            .expect("the gateway always answers")
            .expect("the request goes through");
        let (parts, body) = response.into_parts();
        Reply {
            status: parts.status,
            headers: parts.headers,
            body: body.collect().await.unwrap().to_bytes(),
        }
    }

    async fn get(&self, path: &str) -> Reply {
        self.send(self.request(Method::GET, path), Bytes::new())
            .await
    }

    async fn get_with_token(&self, path: &str, token: &str) -> Reply {
        let request = self
            .request(Method::GET, path)
            .header("authorization", format!("Bearer {token}"));
        self.send(request, Bytes::new()).await
    }

    fn function(&self, name: &str) -> FunctionHandle {
        self.runtime.function(name).unwrap()
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        self.server.await.unwrap().unwrap();
        self.runtime.shutdown().await;
    }
}

fn token(sub: &str, groups: &[&str]) -> String {
    let groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
    jwt::local_token(SECRET, sub, &groups, Duration::from_secs(300))
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test]
async fn routes_pass_path_parameters_query_headers_and_environment() {
    let stack = unique("gw");
    let api = spawn_api(vec![echo_function(&stack)], 1, true).await;
    let token = token("alice", &[]);

    let request = api
        .request(Method::GET, "/items/a%20b?x=1&x=2&y=%C3%A9")
        .header("authorization", format!("Bearer {token}"))
        .header("x-repeat", "a")
        .header("x-repeat", "b")
        .header("cookie", "c1=v1; c2=v2");
    let reply = api.send(request, Bytes::new()).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert!(reply.headers.contains_key("apigw-requestid"));
    let echo = reply.json();
    assert_eq!(echo["method"], "GET");
    assert_eq!(echo["path"], "/items/a%20b");
    assert_eq!(echo["pathParameters"], json!({"itemId": "a b"}));
    assert_eq!(echo["query"], json!({"x": "1,2", "y": "é"}));
    assert_eq!(echo["headers"]["x-repeat"], "a,b");
    assert_eq!(echo["headers"]["cookie"], "c1=v1; c2=v2");
    assert_eq!(echo["headers"]["x-forwarded-proto"], "http");
    assert_eq!(echo["env"]["GREETING"], "hello");
    assert_eq!(echo["env"]["TABLE_NAME"], format!("{stack}-ItemsTable"));
    assert_eq!(echo["env"]["WORK_QUEUE_NAME"], format!("{stack}-WorkQueue"));
    assert_eq!(
        echo["env"]["STACK"],
        format!("{stack} in us-east-1 of 123456789012")
    );
    assert_eq!(echo["env"]["AWS_LAMBDA_FUNCTION_NAME"], "EchoFunction");

    let request = api
        .request(Method::POST, "/items/i1/parts/p2")
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json");
    let reply = api.send(request, r#"{"n":1}"#).await;
    assert_eq!(reply.status, 200);
    let echo = reply.json();
    assert_eq!(
        echo["pathParameters"],
        json!({"itemId": "i1", "partId": "p2"})
    );
    assert_eq!(echo["body"], r#"{"n":1}"#);
    assert_eq!(echo["isBase64Encoded"], false);
    api.stop().await;
}

#[tokio::test]
async fn public_greedy_route_needs_no_token() {
    let api = spawn_api(vec![echo_function(&unique("gw"))], 1, true).await;
    let reply = api.get("/public/a/b/c?q=1").await;
    assert_eq!(reply.status, 200);
    let echo = reply.json();
    assert_eq!(echo["pathParameters"], json!({"proxy": "a/b/c"}));
    assert_eq!(echo["claims"], Value::Null);

    let reply = api
        .send(api.request(Method::DELETE, "/public/x"), Bytes::new())
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json()["method"], "DELETE");
    api.stop().await;
}

#[tokio::test]
async fn unknown_route_is_404() {
    let api = spawn_api(vec![echo_function(&unique("gw"))], 1, true).await;
    let echo = api.function("EchoFunction");
    for (method, path) in [
        (Method::GET, "/nope"),
        (Method::PUT, "/items/1"),
        (Method::GET, "/items/1/extra"),
        (Method::GET, "/public"),
    ] {
        let reply = api.send(api.request(method, path), Bytes::new()).await;
        assert_eq!(reply.status, 404, "{path}");
        assert_eq!(reply.json(), json!({"message": "Not Found"}));
        assert!(reply.headers.contains_key("apigw-requestid"));
    }
    assert_eq!(echo.invocations(), 0);
    api.stop().await;
}

#[tokio::test]
async fn authorizer_refuses_bad_tokens_without_invoking() {
    let api = spawn_api(vec![echo_function(&unique("gw"))], 1, true).await;
    let echo = api.function("EchoFunction");

    let missing = api.get("/items/1").await;
    assert_eq!(missing.status, 401);
    assert_eq!(missing.json(), json!({"message": "Unauthorized"}));
    assert_eq!(missing.headers["www-authenticate"], "Bearer");

    let expired = jwt::sign(SECRET, &json!({"sub": "alice", "exp": now() - 10}));
    let wrong_secret =
        jwt::local_token(b"some-other-secret", "alice", &[], Duration::from_secs(300));
    for (token, description) in [
        ("not-a-jwt", "malformed"),
        ("a.b.c", "malformed"),
        (wrong_secret.as_str(), "invalid signature"),
        (expired.as_str(), "expired"),
    ] {
        let reply = api.get_with_token("/items/1", token).await;
        assert_eq!(reply.status, 401, "{description}");
        assert_eq!(reply.json(), json!({"message": "Unauthorized"}));
        let challenge = reply.headers["www-authenticate"].to_str().unwrap();
        assert!(
            challenge.starts_with(r#"Bearer scope="" error="invalid_token""#)
                && challenge.contains(description),
            "{challenge}"
        );
    }
    assert_eq!(
        echo.invocations(),
        0,
        "a refused request never reaches the function"
    );
    api.stop().await;
}

#[tokio::test]
async fn valid_token_claims_reach_the_function() {
    let api = spawn_api(vec![echo_function(&unique("gw"))], 1, true).await;
    let reply = api
        .get_with_token("/items/42", &token("alice", &["admin", "ops"]))
        .await;
    assert_eq!(reply.status, 200);
    let claims = &reply.json()["claims"];
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["cognito:groups"], "[admin ops]");
    assert_eq!(claims["iss"], jwt::LOCAL_ISSUER);
    assert!(claims["exp"].as_str().unwrap().parse::<i64>().unwrap() > now());

    // The scheme is case-insensitive, and optional.
    let token = token("bob", &[]);
    let request = api
        .request(Method::GET, "/items/42")
        .header("authorization", format!("bearer {token}"));
    assert_eq!(
        api.send(request, Bytes::new()).await.json()["claims"]["sub"],
        "bob"
    );
    let request = api
        .request(Method::GET, "/items/42")
        .header("authorization", token);
    assert_eq!(api.send(request, Bytes::new()).await.status, 200);
    api.stop().await;
}

#[tokio::test]
async fn crash_is_502_and_the_instance_restarts() {
    let api = spawn_api(vec![echo_function(&unique("gw"))], 1, true).await;
    let before = api.get("/public/who").await.json()["env"]["AWS_LAMBDA_LOG_STREAM_NAME"].clone();

    let reply = api.get("/public/crash").await;
    assert_eq!(reply.status, 502);
    assert_eq!(reply.json(), json!({"message": "Internal Server Error"}));

    let reply = api.get("/public/who").await;
    assert_eq!(reply.status, 200);
    let after = reply.json()["env"]["AWS_LAMBDA_LOG_STREAM_NAME"].clone();
    assert_ne!(before, after, "a new process (a new log stream) answers");
    api.stop().await;
}

#[tokio::test]
async fn timeout_is_504_within_the_timeout_and_the_instance_restarts() {
    let api = spawn_api(vec![echo_function(&unique("gw"))], 1, true).await;
    let started = Instant::now();
    let reply = api.get("/public/sleep").await;
    let elapsed = started.elapsed();
    assert_eq!(reply.status, 504);
    assert_eq!(reply.json(), json!({"message": "Service Unavailable"}));
    assert!(
        elapsed >= Duration::from_millis(950) && elapsed < Duration::from_millis(2000),
        "answered after {elapsed:?}, the timeout being 1 s"
    );

    let reply = api.get("/public/after").await;
    assert_eq!(reply.status, 200);
    api.stop().await;
}

#[tokio::test]
async fn function_error_is_500() {
    let api = spawn_api(vec![echo_function(&unique("gw"))], 1, true).await;
    let reply = api.get("/public/fail").await;
    assert_eq!(reply.status, 500);
    assert_eq!(reply.json(), json!({"message": "Internal Server Error"}));
    // A handled error leaves the instance as it was.
    assert_eq!(api.get("/public/after").await.status, 200);
    api.stop().await;
}

#[tokio::test]
async fn cookies_and_headers_come_back() {
    let api = spawn_api(vec![echo_function(&unique("gw"))], 1, true).await;
    let reply = api.get("/public/cookie").await;
    assert_eq!(reply.status, 200);
    let cookies: Vec<&str> = reply
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(cookies, ["session=abc; Path=/; HttpOnly", "theme=dark"]);
    assert_eq!(reply.headers["x-fixture"], "cookie");
    assert_eq!(reply.headers["content-type"], "text/plain");
    assert_eq!(reply.body, "cookies set");
    api.stop().await;
}

#[tokio::test]
async fn binary_body_round_trips() {
    let api = spawn_api(vec![echo_function(&unique("gw"))], 1, true).await;
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let request = api
        .request(Method::POST, "/public/binary")
        .header("content-type", "application/octet-stream");
    let reply = api.send(request, bytes.clone()).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.headers["content-type"], "application/octet-stream");
    assert_eq!(reply.body, bytes);
    api.stop().await;
}

#[tokio::test]
async fn body_over_ten_megabytes_is_413() {
    let api = spawn_api(vec![echo_function(&unique("gw"))], 1, true).await;
    let request = api
        .request(Method::POST, "/public/binary")
        .header("content-type", "application/octet-stream");
    let reply = api
        .send(request, vec![7u8; gateway::MAX_BODY_BYTES + 1])
        .await;
    assert_eq!(reply.status, 413);
    assert_eq!(api.function("EchoFunction").invocations(), 0);
    api.stop().await;
}

#[tokio::test]
async fn a_function_that_cannot_start_answers_502_without_hanging() {
    // A "function" that exits at once, before any Runtime API call.
    let dir = std::env::temp_dir().join(unique("local-cloud-broken"));
    std::fs::create_dir_all(&dir).unwrap();
    let exits = ["/bin/false", "/usr/bin/false"]
        .into_iter()
        .find(|path| std::path::Path::new(path).exists())
        .expect("false(1) is installed");
    std::os::unix::fs::symlink(exits, dir.join("broken")).unwrap();
    let broken = FunctionSpec {
        logical_id: "BrokenFunction".into(),
        name: "BrokenFunction".into(),
        binary: "broken".into(),
        timeout: Duration::from_secs(3),
        memory_mb: 128,
        environment: BTreeMap::new(),
        reserved_concurrency: None,
        events: vec![route("Broken", "ANY", "/broken", false)],
    };
    let api = spawn_api_in(dir.clone(), vec![broken], 2, true).await;

    let started = Instant::now();
    for _ in 0..3 {
        let reply = api.get("/broken").await;
        assert_eq!(reply.status, 502);
        assert_eq!(reply.json(), json!({"message": "Internal Server Error"}));
    }
    let error = api
        .function("BrokenFunction")
        .invoke("test", Bytes::from_static(b"{}"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, local_cloud::runtime::InvokeError::InitFailed(message)
            if message.contains("exited during init")),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    api.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// The distinct processes (log streams) that answered `count` concurrent slow requests.
async fn concurrent_streams(api: &Api, count: usize) -> HashSet<String> {
    let mut requests = tokio::task::JoinSet::new();
    for i in 0..count {
        let client = api.client.clone();
        let uri = format!("http://{}/public/c{i}?delay_ms=100", api.address);
        requests.spawn(async move {
            let request = Request::get(uri).body(Full::new(Bytes::new())).unwrap();
            let response = client.request(request).await.unwrap();
            assert_eq!(response.status(), 200);
            let body = response.into_body().collect().await.unwrap().to_bytes();
            let echo: Value = serde_json::from_slice(&body).unwrap();
            echo["env"]["AWS_LAMBDA_LOG_STREAM_NAME"]
                .as_str()
                .unwrap()
                .to_owned()
        });
    }
    requests.join_all().await.into_iter().collect()
}

#[tokio::test]
async fn twenty_concurrent_requests_on_two_instances_all_answer() {
    let api = spawn_api(vec![echo_function(&unique("gw"))], 2, false).await;
    assert_eq!(api.function("EchoFunction").instances(), 2);
    let started = Instant::now();
    let streams = concurrent_streams(&api, 20).await;
    assert_eq!(streams.len(), 2, "both instances served: {streams:?}");
    // 20 requests of 100 ms on 2 instances: about 1 s, not 2 s (one instance) nor 0.1 s.
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(api.function("EchoFunction").invocations(), 20);
    api.stop().await;
}

#[tokio::test]
async fn reserved_concurrency_caps_instances() {
    let mut echo = echo_function(&unique("gw"));
    echo.reserved_concurrency = Some(2);
    let api = spawn_api(vec![echo, hello_function()], 4, false).await;
    assert_eq!(api.function("EchoFunction").instances(), 2);
    assert_eq!(api.function("HelloFunction").instances(), 2);
    let streams = concurrent_streams(&api, 8).await;
    assert_eq!(streams.len(), 2, "{streams:?}");

    let reply = api.get("/hello").await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, "hello");
    api.stop().await;
}

/// A throttled route turns requests away with API Gateway's 429 once its burst is spent,
/// before the authorizer and without invoking the function; other routes keep their own
/// buckets; tokens come back at the rate.
#[tokio::test]
async fn a_throttled_route_answers_429_without_invoking_once_its_burst_is_spent() {
    let mut echo = echo_function(&unique("gw"));
    for event in &mut echo.events {
        if let EventSpec::Http(route) = event
            && route.path == "/items/{itemId}"
        {
            route.throttle = Some(RouteThrottle {
                rate_per_second: 5.0,
                burst: 3,
            });
        }
    }
    let api = spawn_api(vec![echo], 1, false).await;
    let token = token("alice", &[]);

    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(api.get_with_token("/items/1", &token).await.status);
    }
    assert_eq!(
        &statuses[..3],
        [StatusCode::OK; 3],
        "the burst: {statuses:?}"
    );
    assert!(
        statuses[3..].contains(&StatusCode::TOO_MANY_REQUESTS),
        "beyond the burst: {statuses:?}"
    );
    let refused = statuses
        .iter()
        .filter(|status| **status == StatusCode::TOO_MANY_REQUESTS)
        .count() as u64;
    assert_eq!(
        api.function("EchoFunction").invocations(),
        6 - refused,
        "a throttled request never reaches the function"
    );

    // Throttled before the authorizer: no token at all is a 429 too, not a 401.
    let mut without_token = api.get("/items/1").await;
    while without_token.status == StatusCode::UNAUTHORIZED {
        without_token = api.get("/items/1").await;
    }
    assert_eq!(without_token.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        without_token.json(),
        json!({"message": "Too Many Requests"})
    );
    assert_eq!(without_token.headers["content-type"], "application/json");
    assert!(without_token.headers.contains_key("apigw-requestid"));

    // Another route of the same function has no limit of its own.
    for _ in 0..10 {
        assert_eq!(api.get("/public/x").await.status, StatusCode::OK);
    }

    // Five tokens a second: after 400 ms there is one again.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(api.get_with_token("/items/1", &token).await.status, 200);
    api.stop().await;
}

/// Throughput and latency of the `lambda_http` hello world through the whole runner (gateway,
/// runtime, 4 instances), and of a bare hyper server measured the same way, for comparison.
/// A benchmark, run by hand in release:
///
/// ```text
/// cargo build --release -p local-cloud-fixtures
/// cargo test --release -p local-cloud --test runner -- --ignored --nocapture bench_hello_http
/// ```
///
/// `BENCH_CONNECTIONS` (default 16) and `BENCH_SECONDS` (default 5) tune the throughput run;
/// `BENCH_LOG=true` keeps the per-invocation lines on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run it by hand, in release"]
async fn bench_hello_http() {
    let connections: usize = env_or("BENCH_CONNECTIONS", 16);
    let seconds: u64 = env_or("BENCH_SECONDS", 5);
    let log_invocations: bool = env_or("BENCH_LOG", false);
    let mut hello = hello_function();
    hello.reserved_concurrency = None;
    let api = spawn_api(vec![hello], 4, log_invocations).await;
    let runner = bench::measure(api.address, "/hello", connections, seconds).await;
    api.stop().await;

    let bare = bench::bare_server().await;
    let baseline = bench::measure(bare, "/hello", connections, seconds).await;
    println!("hello-http through the runner: {runner}");
    println!("bare hyper server, same client: {baseline}");
    println!(
        "added p50 latency: {:.3} ms",
        (runner.p50 - baseline.p50).as_secs_f64() * 1000.0
    );
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// A small keep-alive load generator: hyper http1 connections, no pool.
mod bench {
    use bytes::Bytes;
    use http::Request;
    use http_body_util::{BodyExt as _, Empty, Full};
    use hyper::client::conn::http1::{SendRequest, handshake};
    use hyper_util::rt::TokioIo;
    use std::fmt;
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, Instant};

    pub(super) struct Measured {
        pub(super) p50: Duration,
        p90: Duration,
        p99: Duration,
        requests_per_second: f64,
        connections: usize,
    }

    impl fmt::Display for Measured {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let ms = |d: Duration| d.as_secs_f64() * 1000.0;
            write!(
                f,
                "sequential latency p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms; \
                 {:.0} requests/s over {} connections",
                ms(self.p50),
                ms(self.p90),
                ms(self.p99),
                self.requests_per_second,
                self.connections
            )
        }
    }

    async fn connect(address: SocketAddr) -> SendRequest<Empty<Bytes>> {
        let stream = tokio::net::TcpStream::connect(address).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (sender, connection) = handshake(TokioIo::new(stream)).await.unwrap();
        tokio::spawn(connection);
        sender
    }

    async fn once(sender: &mut SendRequest<Empty<Bytes>>, path: &str) {
        sender.ready().await.unwrap();
        let request = Request::get(path)
            .header("host", "127.0.0.1")
            .body(Empty::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200);
        response.into_body().collect().await.unwrap();
    }

    pub(super) async fn measure(
        address: SocketAddr,
        path: &'static str,
        connections: usize,
        seconds: u64,
    ) -> Measured {
        // Latency: one request at a time on one connection.
        let mut sender = connect(address).await;
        for _ in 0..1000 {
            once(&mut sender, path).await;
        }
        let mut samples = Vec::with_capacity(5000);
        for _ in 0..5000 {
            let started = Instant::now();
            once(&mut sender, path).await;
            samples.push(started.elapsed());
        }
        samples.sort();
        let at = |q: f64| samples[((samples.len() as f64) * q) as usize];

        // Throughput: `connections` clients as fast as they can.
        let done = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let mut clients = tokio::task::JoinSet::new();
        for _ in 0..connections {
            let (done, count) = (done.clone(), count.clone());
            let mut sender = connect(address).await;
            clients.spawn(async move {
                while !done.load(Ordering::Relaxed) {
                    once(&mut sender, path).await;
                    count.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        tokio::time::sleep(Duration::from_secs(1)).await; // warm-up
        let (before, started) = (count.load(Ordering::Relaxed), Instant::now());
        tokio::time::sleep(Duration::from_secs(seconds)).await;
        let served = count.load(Ordering::Relaxed) - before;
        let elapsed = started.elapsed();
        done.store(true, Ordering::Relaxed);
        clients.join_all().await;
        Measured {
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            requests_per_second: served as f64 / elapsed.as_secs_f64(),
            connections,
        }
    }

    /// A hyper server answering `hello` itself: the floor of an HTTP round trip here.
    pub(super) async fn bare_server() -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                stream.set_nodelay(true).unwrap();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(|_request| async {
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                            Bytes::from_static(b"hello"),
                        )))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        address
    }
}
