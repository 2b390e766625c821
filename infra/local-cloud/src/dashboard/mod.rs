//! The live dashboard at `/_local/dashboard`: what the runner sees of every invocation, the
//! queues, the streams and the functions' own metric lines, per second over the last few
//! minutes, drawn by a page whose every asset is embedded in the binary (no network needed).
//!
//! `/_local/` is the runner's own prefix, never an API route (docs/DESIGN.md §3): the gateway hands
//! every path under it here, before routing, and an unknown one is a 404 saying so.
//!
//! # Layout
//!
//! - this module: [`Dashboard`], the recorders' registry, and the `/_local/` endpoints.
//! - `window`: the per-second slots of the last few minutes.
//! - `functions`: invocations, errors, throttles and durations per function (hot path).
//!   Every percentile here is the project's ([`percentiles::Percentiles`], coarse: within
//!   3.2 %, a few hundred bytes per second and series).
//! - `emf` and `metrics`: the functions' CloudWatch Embedded Metric Format lines, parsed and
//!   aggregated per metric and dimension values.
//! - `streams`: the age of the stream records handed to functions.
//! - `queues`: queue and DLQ depths, sampled while the dashboard is watched.

mod emf;
mod functions;
mod metrics;
mod queues;
mod streams;
mod window;

pub(crate) use functions::{FunctionStats, Outcome};
pub(crate) use streams::StreamStats;
pub(crate) use window::now_second;

use crate::model::Model;
use bytes::Bytes;
use http::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{Method, Response, StatusCode};
use http_body_util::Full;
use metrics::Metrics;
use queues::QueueStats;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::task::JoinHandle;

const PAGE: &str = include_str!("../../dashboard/index.html");
const SCRIPT: &str = include_str!("../../dashboard/dashboard.js");
const STYLE: &str = include_str!("../../dashboard/dashboard.css");

/// The queues are sampled while the data was asked for within this many seconds.
const WATCHED_FOR: u64 = 60;

/// What the dashboard shows, recorded as it happens. One per running cloud; cheap to share.
#[derive(Default)]
pub struct Dashboard {
    functions: Mutex<Vec<Arc<FunctionStats>>>,
    metrics: Metrics,
    streams: Mutex<Vec<Arc<StreamStats>>>,
    queues: Mutex<Arc<Vec<QueueStats>>>,
    /// The last second the data was asked for.
    watched: AtomicU64,
}

/// The JSON of `/_local/dashboard/data`.
#[derive(serde::Serialize)]
struct Data {
    now: u64,
    window: usize,
    functions: Vec<functions::FunctionView>,
    queues: Vec<queues::QueueView>,
    streams: Vec<streams::StreamView>,
    emf: metrics::MetricsView,
}

impl std::fmt::Debug for Dashboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dashboard").finish_non_exhaustive()
    }
}

impl Dashboard {
    /// The recorder of a function's invocations (one per function name).
    pub(crate) fn function(&self, name: &str) -> Arc<FunctionStats> {
        let mut functions = self
            .functions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(stats) = functions.iter().find(|stats| &*stats.name == name) {
            return stats.clone();
        }
        let stats = Arc::new(FunctionStats::new(name));
        functions.push(stats.clone());
        stats
    }

    /// The recorder of a stream event source.
    pub(crate) fn stream(&self, function: &str, table: &str) -> Arc<StreamStats> {
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(stats) = streams.iter().find(|stats| stats.is(function, table)) {
            return stats.clone();
        }
        let stats = Arc::new(StreamStats::new(function, table));
        streams.push(stats.clone());
        stats
    }

    /// A line that `function` printed on stdout: its metrics if it is an EMF line.
    pub(crate) fn function_line(&self, function: &str, line: &[u8]) {
        self.metrics.line(function, now_second(), line);
    }

    /// Samples the depth of the model's queues every second while the dashboard is watched,
    /// until the task is aborted.
    pub(crate) fn sample_queues(
        self: &Arc<Self>,
        model: &Model,
        sqs: aws_sdk_sqs::Client,
    ) -> JoinHandle<()> {
        let queues = Arc::new(queues::of(model));
        *self.queues.lock().unwrap_or_else(PoisonError::into_inner) = queues.clone();
        let dashboard = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tick.tick().await;
                let watched = dashboard.watched.load(Ordering::Relaxed);
                if now_second().saturating_sub(watched) > WATCHED_FOR {
                    continue;
                }
                for queue in queues.iter() {
                    queue.sample(&sqs).await;
                }
            }
        })
    }

    fn data(&self) -> Data {
        let now = now_second();
        self.watched.store(now, Ordering::Relaxed);
        let mut functions: Vec<_> = self
            .functions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|stats| stats.view(now))
            .collect();
        functions.sort_by(|a, b| a.name.cmp(&b.name));
        let queues = self
            .queues
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let streams = self
            .streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Data {
            now,
            window: window::SECONDS,
            functions,
            queues: queues.iter().map(|queue| queue.view(now)).collect(),
            streams: streams.iter().map(|stream| stream.view(now)).collect(),
            emf: self.metrics.view(now),
        }
    }

    /// The answer to a request for a path under `/_local/` (or `/_local` itself).
    pub(crate) fn respond(&self, method: &Method, path: &str) -> Response<Full<Bytes>> {
        let page = match path {
            "/_local/dashboard" | "/_local/dashboard/" => Some((
                "text/html; charset=utf-8",
                Bytes::from_static(PAGE.as_bytes()),
            )),
            "/_local/dashboard/dashboard.js" => Some((
                "text/javascript; charset=utf-8",
                Bytes::from_static(SCRIPT.as_bytes()),
            )),
            "/_local/dashboard/dashboard.css" => Some((
                "text/css; charset=utf-8",
                Bytes::from_static(STYLE.as_bytes()),
            )),
            "/_local/dashboard/data" => None,
            _ => return not_found(path),
        };
        if method != Method::GET && method != Method::HEAD {
            let mut response = message(
                StatusCode::METHOD_NOT_ALLOWED,
                "Method Not Allowed: the dashboard only answers GET".into(),
            );
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        let (content_type, body) = match page {
            Some(page) => page,
            None => {
                let data = serde_json::to_vec(&self.data()).expect("the data serializes");
                ("application/json", Bytes::from(data))
            }
        };
        local_answer(StatusCode::OK, content_type, body)
    }
}

/// An answer of the runner's own tools under `/_local/`: never cached, and everything a page
/// needs comes from the runner itself.
pub(crate) fn local_answer(
    status: StatusCode,
    content_type: &'static str,
    body: Bytes,
) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        http::header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
        ),
    );
    // Not in another site's frame: the sign-in's form could be clicked through one.
    headers.insert(
        http::header::X_FRAME_OPTIONS,
        HeaderValue::from_static("DENY"),
    );
    headers.insert(
        http::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Whether a request path is the runner's own (`/_local` or under `/_local/`), never a route.
pub(crate) fn is_local(path: &str) -> bool {
    path.strip_prefix("/_local")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

fn message(status: StatusCode, text: String) -> Response<Full<Bytes>> {
    let body = serde_json::json!({ "message": text }).to_string();
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn not_found(path: &str) -> Response<Full<Bytes>> {
    let mut shown: String = path.chars().take(200).collect();
    if shown.len() < path.len() {
        shown.push('…');
    }
    message(
        StatusCode::NOT_FOUND,
        format!(
            "Not Found: {shown} is not a tool of the local runner (/_local/ is its own prefix, \
             never an API route); its tools are the live dashboard /_local/dashboard and the \
             development sign-in /_local/sign-in"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    async fn get(dashboard: &Dashboard, path: &str) -> (StatusCode, String, String) {
        let response = dashboard.respond(&Method::GET, path);
        let status = response.status();
        let content_type = response.headers()[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .to_owned();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            content_type,
            String::from_utf8(body.to_vec()).unwrap(),
        )
    }

    #[test]
    fn local_paths_are_the_prefix_and_below_only() {
        for path in ["/_local", "/_local/", "/_local/dashboard", "/_local/x/y"] {
            assert!(is_local(path), "{path}");
        }
        for path in [
            "/",
            "/_locals",
            "/_localdashboard",
            "/users/_local",
            "/local/x",
        ] {
            assert!(!is_local(path), "{path}");
        }
    }

    #[tokio::test]
    async fn the_page_and_its_assets_are_served_from_the_binary() {
        let dashboard = Dashboard::default();
        let (status, content_type, page) = get(&dashboard, "/_local/dashboard").await;
        assert_eq!(status, StatusCode::OK);
        assert!(content_type.starts_with("text/html"));
        assert!(page.contains("dashboard.js") && page.contains("dashboard.css"));
        assert!(
            !page.contains("http://") && !page.contains("https://"),
            "no remote asset"
        );
        let (status, content_type, _) = get(&dashboard, "/_local/dashboard/dashboard.js").await;
        assert_eq!(
            (status, content_type.as_str()),
            (StatusCode::OK, "text/javascript; charset=utf-8")
        );
        let (status, _, _) = get(&dashboard, "/_local/dashboard/dashboard.css").await;
        assert_eq!(status, StatusCode::OK);
    }

    #[tokio::test]
    async fn unknown_local_paths_are_404_with_a_message() {
        let dashboard = Dashboard::default();
        for path in [
            "/_local",
            "/_local/",
            "/_local/nothing",
            "/_local/dashboard/x",
        ] {
            let (status, _, body) = get(&dashboard, path).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
            let body: serde_json::Value = serde_json::from_str(&body).unwrap();
            let message = body["message"].as_str().unwrap();
            assert!(
                message.contains(path) && message.contains("/_local/dashboard"),
                "{message}"
            );
        }
        let response = dashboard.respond(&Method::POST, "/_local/dashboard/data");
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
    }

    #[tokio::test]
    async fn the_data_has_what_was_recorded() {
        let dashboard = Dashboard::default();
        let follow = dashboard.function("FollowFunction");
        assert!(Arc::ptr_eq(&follow, &dashboard.function("FollowFunction")));
        follow.invoked(now_second(), Duration::from_millis(4), Outcome::Ok);
        dashboard.function("IdleFunction");
        dashboard
            .stream("OutboxRelayFunction", "SocialTable")
            .handed(now_second(), 3, 1500);
        dashboard.function_line(
            "FollowFunction",
            br#"{"_aws":{"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["FunctionName"]],"Metrics":[{"Name":"Requests","Unit":"Count"}]}]},"FunctionName":"follow","Requests":1}"#,
        );
        let (status, content_type, body) = get(&dashboard, "/_local/dashboard/data").await;
        assert_eq!(
            (status, content_type.as_str()),
            (StatusCode::OK, "application/json")
        );
        let data: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(data["functions"][0]["name"], "FollowFunction");
        assert_eq!(data["functions"][0]["invocations"], 1);
        assert_eq!(data["functions"][0]["seconds"][0]["p50"], 4.0);
        assert_eq!(data["functions"][1]["name"], "IdleFunction");
        assert_eq!(data["streams"][0]["seconds"][0]["maxAgeMs"], 1500);
        assert_eq!(data["emf"]["metrics"][0]["name"], "Requests");
        assert_eq!(
            data["emf"]["metrics"][0]["series"][0]["seconds"][0]["sum"],
            1.0
        );
    }
}
