//! The HTTP API end to end: the gateway and the runtime in front of the real fixture
//! functions (`fixture-http`, `hello-http`), with the fixture template's EchoFunction and
//! HelloFunction written out by hand. No emulator needed. The harness here ([`spawn_api`])
//! serves `gateway_load` too.

use crate::support::{binaries_dir, unique};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use local_cloud::dashboard::Dashboard;
use local_cloud::gateway::{self, Route};
use local_cloud::jwt;
use local_cloud::lambda_api::LambdaApi;
use local_cloud::model::{EventSpec, FunctionSpec, HttpRoute, JwtAuthorizer};
use local_cloud::runtime::{FunctionHandle, Runtime, RuntimeOptions};
use serde_json::{Value, json};
use std::collections::BTreeMap;
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
pub(crate) fn echo_function(stack: &str) -> FunctionSpec {
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
        handler: "bootstrap".into(),
        timeout: Duration::from_secs(1),
        memory_mb: 128,
        environment,
        reserved_concurrency: None,
        log_filter: None,
        events: vec![
            route("Items", "GET", "/items/{itemId}", true),
            route("Mixed", "POST", "/items/{itemId}/parts/{partId}", true),
            route("Public", "ANY", "/public/{proxy+}", false),
        ],
    }
}

/// The fixture template's HelloFunction.
pub(crate) fn hello_function() -> FunctionSpec {
    FunctionSpec {
        logical_id: "HelloFunction".into(),
        name: "HelloFunction".into(),
        binary: "hello-http".into(),
        handler: "bootstrap".into(),
        timeout: Duration::from_secs(3),
        memory_mb: 128,
        environment: BTreeMap::new(),
        reserved_concurrency: Some(2),
        log_filter: None,
        events: vec![route("Hello", "GET", "/hello", false)],
    }
}

/// A runtime and a gateway in front of it, on a port of their own.
pub(crate) struct Api {
    pub(crate) address: SocketAddr,
    runtime: Runtime,
    stop: oneshot::Sender<()>,
    server: JoinHandle<anyhow::Result<()>>,
    pub(crate) client: Client<HttpConnector, Full<Bytes>>,
}

pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }
}

pub(crate) async fn spawn_api(
    functions: Vec<FunctionSpec>,
    instances: u32,
    log_invocations: bool,
) -> Api {
    spawn_api_in(binaries_dir(), functions, instances, log_invocations).await
}

async fn spawn_api_in(
    binaries_dir: std::path::PathBuf,
    functions: Vec<FunctionSpec>,
    instances: u32,
    log_invocations: bool,
) -> Api {
    // One dashboard for both, as in the runner: the runtime records, the gateway serves.
    let dashboard = std::sync::Arc::new(Dashboard::default());
    let runtime = Runtime::start(
        &functions,
        RuntimeOptions {
            binaries_dir,
            instances,
            base_env: BTreeMap::from([("AWS_REGION".to_owned(), "us-east-1".to_owned())]),
            log_invocations,
            env_overrides: BTreeMap::new(),
            faults: Default::default(),
            dashboard: dashboard.clone(),
            cpu_quota: None,
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
    // Lambda's Invoke API beside the routes, as in the runner.
    let lambda = LambdaApi::new(
        functions.iter().map(|function| {
            let handle = runtime.function(&function.name).unwrap();
            (function, handle)
        }),
        "us-east-1",
        "123456789012",
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(gateway::serve(
        listener,
        routes,
        gateway::Edge::default(),
        SECRET.to_vec(),
        dashboard,
        None,
        Some(lambda),
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
    pub(crate) fn request(&self, method: Method, path: &str) -> http::request::Builder {
        Request::builder()
            .method(method)
            .uri(format!("http://{}{path}", self.address))
    }

    pub(crate) async fn send(
        &self,
        request: http::request::Builder,
        body: impl Into<Bytes>,
    ) -> Reply {
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

    pub(crate) async fn get(&self, path: &str) -> Reply {
        self.send(self.request(Method::GET, path), Bytes::new())
            .await
    }

    pub(crate) async fn get_with_token(&self, path: &str, token: &str) -> Reply {
        let request = self
            .request(Method::GET, path)
            .header("authorization", format!("Bearer {token}"));
        self.send(request, Bytes::new()).await
    }

    pub(crate) fn function(&self, name: &str) -> FunctionHandle {
        self.runtime.function(name).unwrap()
    }

    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        self.server.await.unwrap().unwrap();
        self.runtime.shutdown().await;
    }
}

pub(crate) fn token(sub: &str, groups: &[&str]) -> String {
    let groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
    jwt::local_token(SECRET, sub, &groups, Duration::from_secs(300)).unwrap()
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

    let expired = jwt::sign(SECRET, &json!({"sub": "alice", "exp": now() - 10})).unwrap();
    let wrong_secret =
        jwt::local_token(b"some-other-secret", "alice", &[], Duration::from_secs(300)).unwrap();
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
        handler: "bootstrap".into(),
        timeout: Duration::from_secs(3),
        memory_mb: 128,
        environment: BTreeMap::new(),
        reserved_concurrency: None,
        log_filter: None,
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

/// The functions' metric lines (CloudWatch EMF on stdout) reach the dashboard's data, read
/// generically: a count summed, an array as a distribution, a broken line counted as such,
/// an ordinary line ignored; and the invocation itself is counted.
#[tokio::test]
async fn metric_lines_printed_by_a_function_reach_the_dashboard() {
    let api = spawn_api(vec![echo_function(&unique("emf"))], 1, false).await;
    let lines = [
        r#"{"_aws":{"Timestamp":1764614400000,"CloudWatchMetrics":[{"Namespace":"FollowSeckill","Dimensions":[["FunctionName","Outcome"]],"Metrics":[{"Name":"Requests","Unit":"Count"}]}]},"FunctionName":"follow","Outcome":"200","Requests":2}"#,
        r#"{"_aws":{"Timestamp":1764614400000,"CloudWatchMetrics":[{"Namespace":"FollowSeckill","Dimensions":[["FunctionName"]],"Metrics":[{"Name":"Elapsed","Unit":"Milliseconds"}]}]},"FunctionName":"follow","Elapsed":[3.2,4.1]}"#,
        "an ordinary log line",
        r#"{"_aws":{"CloudWatchMetrics":[{"Namespace":"FollowSeckill","Metrics":[{"Name":"Requests"}]}]}"#,
    ];
    let request = Request::builder()
        .method(Method::POST)
        .uri(format!("http://{}/public/print", api.address));
    let reply = api.send(request, lines.join("\n")).await;
    assert_eq!(reply.status, StatusCode::OK);

    // The runner reads the function's output beside the invocation: wait for the lines.
    let started = Instant::now();
    let data = loop {
        let data = api.get("/_local/dashboard/data").await.json();
        if data["emf"]["lines"] == 3 || started.elapsed() > Duration::from_secs(5) {
            break data;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let emf = &data["emf"];
    assert_eq!(emf["lines"], 3, "{emf}");
    assert_eq!(emf["problems"], 1, "{emf}");
    assert!(
        emf["lastProblem"]
            .as_str()
            .unwrap()
            .starts_with("EchoFunction: ")
    );
    let metric = |name: &str| {
        emf["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|metric| metric["name"] == name)
            .unwrap_or_else(|| panic!("no metric {name}: {emf}"))
            .clone()
    };
    let requests = metric("Requests");
    assert_eq!(requests["kind"], "sum");
    assert_eq!(
        requests["series"][0]["dimensions"],
        json!({"FunctionName": "follow", "Outcome": "200"})
    );
    assert_eq!(requests["series"][0]["seconds"][0]["sum"], 2.0);
    let elapsed = metric("Elapsed");
    assert_eq!(
        (elapsed["kind"].as_str(), elapsed["unit"].as_str()),
        (Some("distribution"), Some("Milliseconds"))
    );
    let second = &elapsed["series"][0]["seconds"][0];
    assert_eq!(
        (second["count"].as_u64(), second["p99"].as_f64()),
        (Some(2), Some(4.1))
    );

    let echo = data["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|function| function["name"] == "EchoFunction")
        .expect("the function is listed");
    assert_eq!(
        (echo["invocations"].as_u64(), echo["errors"].as_u64()),
        (Some(1), Some(0))
    );
    api.stop().await;
}

/// `/_local/` is the runner's before any route, even a greedy one: the dashboard, or a 404
/// that says so.
#[tokio::test]
async fn local_paths_are_never_routes() {
    let mut echo = echo_function(&unique("local"));
    echo.events
        .push(route("Everything", "ANY", "/{proxy+}", false));
    let api = spawn_api(vec![echo], 1, false).await;
    let page = api.get("/_local/dashboard").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.headers["content-type"], "text/html; charset=utf-8");
    let unknown = api.get("/_local/sign-in-later").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let message = unknown.json()["message"].as_str().unwrap().to_owned();
    assert!(message.contains("/_local/sign-in-later"), "{message}");
    // The greedy route still takes everything else.
    assert_eq!(api.get("/_localish").await.status, StatusCode::OK);
    api.stop().await;
}
