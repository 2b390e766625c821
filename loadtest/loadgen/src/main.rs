//! `loadgen`: a bounded closed-loop HTTP load generator for the local cloud.
//!
//! Each of `--concurrency` workers holds one keep-alive HTTP/1.1 connection and sends its
//! next request as soon as the previous one is answered, until `--requests` have been sent
//! or `--duration` has passed, whichever comes first. It prints requests/s, latency
//! percentiles and the status counts, as text or JSON.

use anyhow::Context;
use bytes::Bytes;
use clap::Parser;
use http_body_util::Full;
use loadgen::LoadShape;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

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

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let target = parse_url(&args.url)?;
    request(&args, &target)?;
    let address = tokio::net::lookup_host((target.host.as_str(), target.port))
        .await?
        .next()
        .with_context(|| format!("{} has no address", target.host))?;
    let shape = LoadShape {
        concurrency: args.concurrency,
        requests: args.requests,
        duration: Duration::from_secs_f64(args.duration),
        warmup: args.warmup,
    };
    let built = args.clone();
    let load = loadgen::run(address, shape, 200, move |_| {
        request(&built, &target).expect("checked before starting")
    })
    .await?;
    let report = Report {
        url: args.url.clone(),
        concurrency: args.concurrency,
        requests: load.requests,
        seconds: load.seconds,
        requests_per_second: load.requests_per_second,
        p50_ms: load.p50_ms,
        p90_ms: load.p90_ms,
        p99_ms: load.p99_ms,
        max_ms: load.max_ms,
        statuses: load.statuses,
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
