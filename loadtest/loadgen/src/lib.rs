//! Closed-loop HTTP load: `concurrency` keep-alive connections, each sending its next request
//! as soon as the previous one is answered, until `requests` have been sent or `duration` has
//! passed. Request `i` is built by the caller, so that each one may come from another user.
//! The `loadgen` binary sends one request over and over with it; `bench` varies them.

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How a load ran.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct LoadReport {
    pub requests: u64,
    pub seconds: f64,
    pub requests_per_second: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub statuses: BTreeMap<String, u64>,
    /// Answers other than the expected status (errors included).
    pub unexpected: u64,
}

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct LoadShape {
    pub concurrency: u32,
    pub requests: u64,
    pub duration: Duration,
    pub warmup: u64,
}

type Sender = http1::SendRequest<Full<Bytes>>;

async fn connect(address: SocketAddr) -> anyhow::Result<Sender> {
    let stream = tokio::net::TcpStream::connect(address)
        .await
        .with_context(|| format!("failed to connect to {address}"))?;
    stream.set_nodelay(true)?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

async fn send(
    sender: &mut Sender,
    address: SocketAddr,
    request: http::Request<Full<Bytes>>,
) -> Result<u16, String> {
    if sender.ready().await.is_err() {
        *sender = connect(address).await.map_err(|e| e.to_string())?;
    }
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?;
    Ok(status)
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize] as f64 / 1000.0
}

/// Runs the load; `request(i)` builds request `i` (warm-up requests come first, not measured).
pub async fn run<F>(
    address: SocketAddr,
    shape: LoadShape,
    expected: u16,
    request: F,
) -> anyhow::Result<LoadReport>
where
    F: Fn(u64) -> http::Request<Full<Bytes>> + Send + Sync + 'static,
{
    let request = Arc::new(request);
    let mut warm = connect(address).await?;
    for i in 0..shape.warmup {
        let _ = send(&mut warm, address, request(i)).await;
    }
    drop(warm);

    let issued = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + shape.duration;
    let mut workers = Vec::new();
    for _ in 0..shape.concurrency {
        let issued = issued.clone();
        let request = request.clone();
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
            let mut sender = match connect(address).await {
                Ok(sender) => sender,
                Err(err) => {
                    *statuses.entry(format!("error: {err}")).or_default() += 1;
                    return (latencies, statuses);
                }
            };
            loop {
                let i = issued.fetch_add(1, Ordering::Relaxed);
                if i >= shape.requests || Instant::now() >= deadline {
                    break;
                }
                let one = request(shape.warmup + i);
                let sent = Instant::now();
                let outcome = send(&mut sender, address, one).await;
                latencies.push(sent.elapsed().as_micros() as u64);
                let key = match outcome {
                    Ok(status) => status.to_string(),
                    Err(err) => format!("error: {err}"),
                };
                *statuses.entry(key).or_default() += 1;
            }
            (latencies, statuses)
        }));
    }
    let mut latencies = Vec::new();
    let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
    for worker in workers {
        let (l, s) = worker.await?;
        latencies.extend(l);
        for (key, count) in s {
            *statuses.entry(key).or_default() += count;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    latencies.sort_unstable();
    let expected_key = expected.to_string();
    let unexpected = statuses
        .iter()
        .filter(|(status, _)| **status != expected_key)
        .map(|(_, count)| count)
        .sum();
    Ok(LoadReport {
        requests: latencies.len() as u64,
        seconds,
        requests_per_second: latencies.len() as f64 / seconds,
        p50_ms: percentile(&latencies, 0.50),
        p90_ms: percentile(&latencies, 0.90),
        p99_ms: percentile(&latencies, 0.99),
        max_ms: percentile(&latencies, 1.0),
        statuses,
        unexpected,
    })
}
