//! `loadgen`: a bounded closed-loop HTTP load generator for the local cloud.
//!
//! Each of `--concurrency` workers holds one keep-alive HTTP/1.1 connection and sends its
//! next request as soon as the previous one is answered, until `--requests` have been sent
//! or `--duration` has passed, whichever comes first. It prints requests/s, latency
//! percentiles and the status counts, as text or JSON.

use anyhow::Context;
use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Parser, Clone)]
#[command(version, about)]
struct Args {
    /// e.g. http://127.0.0.1:3000/hello
    url: String,
    #[arg(long, default_value = "GET")]
    method: String,
    /// `Name: value`, repeatable.
    #[arg(long = "header")]
    headers: Vec<String>,
    #[arg(long)]
    body: Option<String>,
    #[arg(long, default_value_t = 16)]
    concurrency: u32,
    /// Stop after this many requests.
    #[arg(long, default_value_t = 100_000)]
    requests: u64,
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 30.0)]
    duration: f64,
    /// Requests sent first and not measured, to warm connections and instances.
    #[arg(long, default_value_t = 0)]
    warmup: u64,
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report {
    url: String,
    concurrency: u32,
    requests: u64,
    seconds: f64,
    requests_per_second: f64,
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    statuses: BTreeMap<String, u64>,
}

struct Target {
    host: String,
    port: u16,
    path: String,
}

fn parse_url(url: &str) -> anyhow::Result<Target> {
    let uri: http::Uri = url.parse().context("invalid URL")?;
    anyhow::ensure!(
        uri.scheme_str() == Some("http"),
        "only http:// URLs are supported"
    );
    Ok(Target {
        host: uri.host().context("the URL has no host")?.to_owned(),
        port: uri.port_u16().unwrap_or(80),
        path: uri
            .path_and_query()
            .map_or("/".to_owned(), |p| p.as_str().to_owned()),
    })
}

struct Worker {
    sender: http1::SendRequest<Full<Bytes>>,
}

async fn connect(target: &Target) -> anyhow::Result<Worker> {
    let stream = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .with_context(|| format!("failed to connect to {}:{}", target.host, target.port))?;
    stream.set_nodelay(true)?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(Worker { sender })
}

fn request(args: &Args, target: &Target) -> anyhow::Result<http::Request<Full<Bytes>>> {
    let mut builder = http::Request::builder()
        .method(args.method.as_str())
        .uri(&target.path)
        .header("host", format!("{}:{}", target.host, target.port));
    for header in &args.headers {
        let (name, value) = header
            .split_once(':')
            .with_context(|| format!("expected `Name: value`, got {header:?}"))?;
        builder = builder.header(name.trim(), value.trim());
    }
    let body = args.body.clone().unwrap_or_default();
    Ok(builder.body(Full::new(Bytes::from(body)))?)
}

/// Sends one request, reconnecting once if the server closed the connection.
async fn send(
    worker: &mut Worker,
    target: &Target,
    request: http::Request<Full<Bytes>>,
) -> Result<u16, String> {
    if worker.sender.ready().await.is_err() {
        *worker = connect(target).await.map_err(|e| e.to_string())?;
    }
    let response = worker
        .sender
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
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index] as f64 / 1000.0
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let target = Arc::new(parse_url(&args.url)?);
    request(&args, &target)?;

    // Warm up: not measured.
    let mut warm = connect(&target).await?;
    for _ in 0..args.warmup {
        let _ = send(&mut warm, &target, request(&args, &target)?).await;
    }

    let issued = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs_f64(args.duration);
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..args.concurrency {
        let args = args.clone();
        let target = target.clone();
        let issued = issued.clone();
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
            let mut worker = match connect(&target).await {
                Ok(worker) => worker,
                Err(err) => {
                    *statuses.entry(format!("error: {err}")).or_default() += 1;
                    return (latencies, statuses);
                }
            };
            while issued.fetch_add(1, Ordering::Relaxed) < args.requests
                && Instant::now() < deadline
            {
                let request = request(&args, &target).expect("checked before starting");
                let sent = Instant::now();
                let outcome = send(&mut worker, &target, request).await;
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
    let report = Report {
        url: args.url.clone(),
        concurrency: args.concurrency,
        requests: latencies.len() as u64,
        seconds,
        requests_per_second: latencies.len() as f64 / seconds,
        p50_ms: percentile(&latencies, 0.50),
        p90_ms: percentile(&latencies, 0.90),
        p99_ms: percentile(&latencies, 0.99),
        max_ms: percentile(&latencies, 1.0),
        statuses,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "{} requests in {:.2} s with {} connections: {:.0} requests/s; latency p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms; statuses {:?}",
            report.requests,
            report.seconds,
            report.concurrency,
            report.requests_per_second,
            report.p50_ms,
            report.p90_ms,
            report.p99_ms,
            report.max_ms,
            report.statuses
        );
    }
    Ok(())
}
