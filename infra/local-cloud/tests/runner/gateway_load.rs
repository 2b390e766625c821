//! The HTTP API under load: concurrent requests spread over a function's instances, reserved
//! concurrency, route throttling, and the hello-world benchmark through the whole runner,
//! all on the harness of `gateway`.

use crate::gateway::{Api, echo_function, hello_function, spawn_api, token};
use crate::support::unique;
use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use local_cloud::model::{EventSpec, RouteThrottle};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::{Duration, Instant};

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

/// The least the hello world must sustain through the runner in the default run. A debug
/// build does about 1,300 requests/s on an idle 2-core machine; the floor leaves room for one
/// loaded by the rest of the test suite, and still fails when a request costs a tenth of a
/// second or more.
const HELLO_FLOOR_PER_SECOND: f64 = 100.0;

/// Throughput and latency of the `lambda_http` hello world through the whole runner (gateway,
/// runtime, 4 instances), and of a bare hyper server measured the same way, for comparison.
/// Every request must be answered 200, and the runner must sustain
/// [`HELLO_FLOOR_PER_SECOND`]. By default a short run; as a benchmark, run it by hand in release
/// with longer runs:
///
/// ```text
/// cargo build --release -p local-cloud-fixtures
/// BENCH_SECONDS=5 BENCH_REQUESTS=5000 \
///   cargo test --release -p local-cloud --test runner -- --nocapture hello_http
/// ```
///
/// `BENCH_CONNECTIONS` (default 16) and `BENCH_SECONDS` (default 1) tune the throughput run,
/// `BENCH_REQUESTS` (default 1000) the sequential latency run; `BENCH_LOG=true` keeps the
/// per-invocation lines on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_http_answers_every_request_above_a_throughput_floor() {
    let shape = bench::Shape {
        connections: env_or("BENCH_CONNECTIONS", 16),
        seconds: env_or("BENCH_SECONDS", 1),
        sequential: env_or("BENCH_REQUESTS", 1000),
    };
    let log_invocations: bool = env_or("BENCH_LOG", false);
    let mut hello = hello_function();
    hello.reserved_concurrency = None;
    let api = spawn_api(vec![hello], 4, log_invocations).await;
    let runner = bench::measure(api.address, "/hello", &shape).await;
    api.stop().await;

    let bare = bench::bare_server().await;
    let baseline = bench::measure(bare, "/hello", &shape).await;
    println!("hello-http through the runner: {runner}");
    println!("bare hyper server, same client: {baseline}");
    println!(
        "added p50 latency: {:.3} ms",
        runner.p50_ms - baseline.p50_ms
    );
    assert!(
        runner.requests_per_second >= HELLO_FLOOR_PER_SECOND,
        "the runner served {runner}, below {HELLO_FLOOR_PER_SECOND} requests/s"
    );
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// The benchmark's two measurements, both `loadgen`'s closed loop.
mod bench {
    use bytes::Bytes;
    use http::Request;
    use http_body_util::Full;
    use loadgen::{Bodies, Bounds, LoadReport, LoadShape};
    use std::fmt;
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::time::Duration;

    #[derive(Clone, Copy)]
    pub(super) struct Shape {
        pub(super) connections: usize,
        pub(super) seconds: u64,
        /// Requests of the sequential latency run (a fifth more go unmeasured first).
        pub(super) sequential: u64,
    }

    pub(super) struct Measured {
        pub(super) p50_ms: f64,
        p90_ms: f64,
        p99_ms: f64,
        pub(super) requests_per_second: f64,
        connections: usize,
    }

    impl fmt::Display for Measured {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(
                f,
                "sequential latency p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms; \
                 {:.0} requests/s over {} connections",
                self.p50_ms, self.p90_ms, self.p99_ms, self.requests_per_second, self.connections
            )
        }
    }

    fn all_ok(report: LoadReport) -> LoadReport {
        assert_eq!(report.unexpected, 0, "{:?}", report.statuses);
        report
    }

    pub(super) async fn measure(
        address: SocketAddr,
        path: &'static str,
        shape: &Shape,
    ) -> Measured {
        let Shape {
            connections,
            seconds,
            sequential,
        } = *shape;
        let request = move |_| {
            Request::get(path)
                .header("host", "127.0.0.1")
                .body(Full::new(Bytes::new()))
                .unwrap()
        };
        // Latency: one request at a time on one connection, after a fifth as many unmeasured.
        let sequential = LoadShape {
            concurrency: 1,
            requests: sequential,
            duration: Duration::from_secs(120),
            warmup: sequential / 5,
        };
        let latency = all_ok(
            loadgen::run(address, sequential, 200, request)
                .await
                .unwrap(),
        );

        // Throughput: `connections` clients as fast as they can, a second unmeasured first.
        let warm = Bounds {
            concurrency: connections,
            requests: 1_000_000,
            duration: Duration::from_secs(1),
        };
        let warmed = loadgen::http_loop(address, warm, Bodies::Drop, request)
            .await
            .unwrap();
        assert!(
            warmed.failed_workers.is_empty(),
            "{:?}",
            warmed.failed_workers
        );
        let load = LoadShape {
            concurrency: connections as u32,
            requests: seconds * 1_000_000,
            duration: Duration::from_secs(seconds),
            warmup: 0,
        };
        let throughput = all_ok(loadgen::run(address, load, 200, request).await.unwrap());
        Measured {
            p50_ms: latency.p50_ms,
            p90_ms: latency.p90_ms,
            p99_ms: latency.p99_ms,
            requests_per_second: throughput.requests_per_second,
            connections,
        }
    }

    /// A server answering `hello` itself: the floor of an HTTP round trip here.
    pub(super) async fn bare_server() -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(local_cloud::loopback::serve(
            listener,
            Arc::new(()),
            |_, _request| async { hyper::Response::new(Full::new(Bytes::from_static(b"hello"))) },
        ));
        address
    }
}
