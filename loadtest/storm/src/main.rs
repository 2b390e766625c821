//! `storm`: the flash-sale storm, measured through the local cloud runner.
//!
//! 1. As an operator (a local token with the group `admin`), creates and publishes a sale of
//!    `--stock` units, one per user, open from a minute ago for an hour.
//! 2. Detail phase: `--detail-requests` GETs of the public detail route.
//! 3. Order phase: `--attempts` POSTs of place-order from `--users` distinct users (one token
//!    minted per user beforehand; attempt `i` is user `i % users`).
//! 4. Settle: polls `GET /orders/{id}` as each accepted order's owner until every one reads
//!    CONFIRMED (bounded by `--settle-timeout`), then checks accepted == CONFIRMED == stock.
//! 5. Raw phase (with `--redis-url`): the same attempts, users and concurrency straight to
//!    the reserve script (`EVALSHA` through `app::seckill::redis_store::RedisSales`) on a
//!    fresh preheated sale of the same shape.
//!
//! Each HTTP worker holds one keep-alive HTTP/1.1 connection (closed loop, as `loadgen`).
//! Exits non-zero when a check fails.

use anyhow::{Context, bail, ensure};
use app::ids::UserId;
use app::seckill::admission::{Admission, Reservation, Verdict};
use app::seckill::redis_store::RedisSales;
use app::seckill::sale::{Lifecycle, Sale, SaleCache, SaleId, epoch_ms};
use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

#[derive(Parser, Clone, Debug)]
#[command(version, about)]
struct Args {
    /// The runner's HTTP API, e.g. http://127.0.0.1:3902
    #[arg(long)]
    url: String,
    #[arg(long, default_value_t = 1000)]
    stock: u32,
    #[arg(long, default_value_t = 50_000)]
    detail_requests: u64,
    #[arg(long, default_value_t = 100_000)]
    attempts: u64,
    #[arg(long, default_value_t = 10_000)]
    users: u64,
    /// Keep-alive connections (HTTP phases) and tasks in flight (raw phase).
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Unmeasured requests per phase first, spread over the connections, to start the
    /// function instances (orders: against an unknown sale, so no stock is touched).
    #[arg(long, default_value_t = 256)]
    warmup: u64,
    /// Seconds to wait for every accepted order to read CONFIRMED.
    #[arg(long, default_value_t = 180)]
    settle_timeout: u64,
    /// Parallel `GET /orders/{id}` polls while settling.
    #[arg(long, default_value_t = 8)]
    settle_concurrency: usize,
    /// Redis for the raw phase (e.g. the emulator's REDIS_URL); no raw phase without it.
    #[arg(long)]
    redis_url: Option<String>,
    /// Multiplexed Redis connections the raw phase's tasks share.
    #[arg(long, default_value_t = 4)]
    redis_connections: usize,
    /// The reserve script's attempts per user per second in the raw phase (the template's
    /// OrderRateLimitPerSecond; a user's attempts count on every sale, so the HTTP phase's
    /// count of the same users carries over if the phases are less than a second apart).
    #[arg(long, default_value_t = 5)]
    rate_limit: u32,
    /// The runner's HS256 secret.
    #[arg(long, env = "LOCAL_JWT_SECRET", default_value = local_cloud::jwt::DEFAULT_LOCAL_SECRET)]
    jwt_secret: String,
    #[arg(long)]
    json: bool,
}

// ---------------------------------------------------------------------------------------
// HTTP

struct Target {
    host: String,
    port: u16,
    /// The URL's path prefix, without a trailing slash.
    base: String,
}

impl Target {
    fn parse(url: &str) -> anyhow::Result<Self> {
        let uri: http::Uri = url.parse().context("invalid --url")?;
        ensure!(
            uri.scheme_str() == Some("http"),
            "only http:// URLs are supported"
        );
        Ok(Self {
            host: uri.host().context("the URL has no host")?.to_owned(),
            port: uri.port_u16().unwrap_or(80),
            base: uri.path().trim_end_matches('/').to_owned(),
        })
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> http::Request<Full<Bytes>> {
        let mut builder = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("host", format!("{}:{}", self.host, self.port));
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        let body = match body {
            Some(body) => {
                builder = builder.header("content-type", "application/json");
                Bytes::from(body.to_string())
            }
            None => Bytes::new(),
        };
        builder
            .body(Full::new(body))
            .expect("a well-formed request")
    }
}

struct Connection {
    sender: http1::SendRequest<Full<Bytes>>,
}

async fn connect(target: &Target) -> anyhow::Result<Connection> {
    let stream = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .with_context(|| format!("failed to connect to {}:{}", target.host, target.port))?;
    stream.set_nodelay(true)?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(Connection { sender })
}

type Answer = Result<(u16, Bytes), String>;

/// Sends one request, reconnecting first if the server closed the connection.
async fn send(
    connection: &mut Connection,
    target: &Target,
    request: http::Request<Full<Bytes>>,
) -> Answer {
    if connection.sender.ready().await.is_err() {
        *connection = connect(target).await.map_err(|e| e.to_string())?;
    }
    let response = connection
        .sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, body))
}

/// One request on a fresh connection (setup and checks).
async fn call(
    target: &Target,
    request: http::Request<Full<Bytes>>,
) -> anyhow::Result<(u16, Value)> {
    let mut connection = connect(target).await?;
    let (status, body) = send(&mut connection, target, request)
        .await
        .map_err(anyhow::Error::msg)?;
    let value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Ok((status, value))
}

/// One measured request: its index, latency in microseconds and answer.
struct Sample {
    index: u64,
    micros: u64,
    /// When the answer came, in microseconds since the phase started.
    done_micros: u64,
    answer: Answer,
}

/// Sends `total` requests, `build(i)` for i in 0..total, over `concurrency` keep-alive
/// connections, each sending its next as soon as the last is answered.
async fn closed_loop<F>(
    target: &Arc<Target>,
    concurrency: usize,
    total: u64,
    build: F,
) -> (Vec<Sample>, f64)
where
    F: Fn(u64) -> http::Request<Full<Bytes>> + Send + Sync + 'static,
{
    let build = Arc::new(build);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (target, build, next) = (target.clone(), build.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut connection = match connect(&target).await {
                Ok(connection) => connection,
                Err(err) => {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index < total {
                        samples.push(Sample {
                            index,
                            micros: 0,
                            done_micros: started.elapsed().as_micros() as u64,
                            answer: Err(err.to_string()),
                        });
                    }
                    return samples;
                }
            };
            loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= total {
                    break;
                }
                let request = build(index);
                let sent = Instant::now();
                let answer = send(&mut connection, &target, request).await;
                samples.push(Sample {
                    index,
                    micros: sent.elapsed().as_micros() as u64,
                    done_micros: started.elapsed().as_micros() as u64,
                    answer,
                });
            }
            samples
        }));
    }
    let mut samples = Vec::new();
    for worker in workers {
        samples.extend(worker.await.expect("a worker panicked"));
    }
    (samples, started.elapsed().as_secs_f64())
}

// ---------------------------------------------------------------------------------------
// Figures

#[derive(Serialize, Debug)]
struct Phase {
    requests: u64,
    seconds: f64,
    per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    outcomes: BTreeMap<String, u64>,
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index] as f64 / 1000.0
}

fn phase(mut micros: Vec<u64>, seconds: f64, outcomes: BTreeMap<String, u64>) -> Phase {
    micros.sort_unstable();
    Phase {
        requests: micros.len() as u64,
        seconds,
        per_second: micros.len() as f64 / seconds,
        p50_ms: percentile(&micros, 0.50),
        p99_ms: percentile(&micros, 0.99),
        max_ms: percentile(&micros, 1.0),
        outcomes,
    }
}

/// `409 SOLD_OUT`, `202`, `500`, or `error: ...` for a transport failure.
fn outcome(answer: &Answer) -> String {
    match answer {
        Ok((status, body)) => {
            let code = serde_json::from_slice::<Value>(body).ok().and_then(|v| {
                v.pointer("/error/code")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            match code {
                Some(code) => format!("{status} {code}"),
                None => status.to_string(),
            }
        }
        Err(err) => format!("error: {err}"),
    }
}

/// The order phase split at the answer of the last accepted order: before, the 202s (each
/// with an SQS send) and the first rejections; after, only rejections.
#[derive(Serialize, Debug)]
struct SoldOut {
    after_seconds: f64,
    attempts_before: u64,
    attempts_after: u64,
    after_per_second: f64,
}

#[derive(Serialize, Debug)]
struct Settle {
    seconds: f64,
    accepted: u64,
    by_status: BTreeMap<String, u64>,
}

#[derive(Serialize, Debug)]
struct Report {
    url: String,
    sale_id: String,
    stock: u32,
    users: u64,
    attempts: u64,
    concurrency: usize,
    detail: Phase,
    orders: Phase,
    accepted: u64,
    sold_out: SoldOut,
    settle: Settle,
    raw: Option<Raw>,
    /// Orders/s through the runner divided by EVALSHA/s straight to Redis.
    orders_to_evalsha_ratio: Option<f64>,
    checks: Vec<String>,
    failed_checks: Vec<String>,
}

#[derive(Serialize, Debug)]
struct Raw {
    sale_id: String,
    redis_connections: usize,
    phase: Phase,
    accepted: u64,
}

// ---------------------------------------------------------------------------------------
// Phases

fn rfc3339(at: OffsetDateTime) -> String {
    at.format(&Rfc3339).expect("a formattable time")
}

/// Creates and publishes the sale as an operator; returns its id.
async fn create_sale(target: &Target, admin: &str, stock: u32) -> anyhow::Result<String> {
    let now = OffsetDateTime::now_utc();
    let body = json!({
        "productId": "storm-phone",
        "title": "Storm phone",
        "priceCents": 19900,
        "stock": stock,
        "perUserLimit": 1,
        "startsAt": rfc3339(now - time::Duration::minutes(1)),
        "endsAt": rfc3339(now + time::Duration::hours(1)),
    });
    let (status, sale) = call(
        target,
        target.request("POST", "/seckill/activities", Some(admin), Some(&body)),
    )
    .await?;
    ensure!(status == 201, "create-sale answered {status}: {sale}");
    let id = sale["id"]
        .as_str()
        .context("create-sale answered no id")?
        .to_owned();
    let (status, published) = call(
        target,
        target.request(
            "POST",
            &format!("/seckill/activities/{id}/publish"),
            Some(admin),
            None,
        ),
    )
    .await?;
    ensure!(status == 200, "publish-sale answered {status}: {published}");
    Ok(id)
}

async fn detail_phase(target: &Arc<Target>, args: &Args, sale_id: &str) -> anyhow::Result<Phase> {
    let path = format!("/seckill/activities/{sale_id}");
    let (status, detail) = call(target, target.request("GET", &path, None, None)).await?;
    ensure!(
        status == 200 && detail["state"] == "ONGOING",
        "the detail route answered {status}: {detail}"
    );
    let build = {
        let (target, path) = (target.clone(), path.clone());
        move |_| target.request("GET", &path, None, None)
    };
    closed_loop(target, args.concurrency, args.warmup, build.clone()).await;
    mark("detail-start");
    let (samples, seconds) =
        closed_loop(target, args.concurrency, args.detail_requests, build).await;
    let mut outcomes = BTreeMap::new();
    let mut micros = Vec::with_capacity(samples.len());
    for sample in samples {
        *outcomes.entry(outcome(&sample.answer)).or_default() += 1;
        micros.push(sample.micros);
    }
    Ok(phase(micros, seconds, outcomes))
}

/// Returns the phase and the accepted orders as (order id, user index).
async fn order_phase(
    target: &Arc<Target>,
    args: &Args,
    sale_id: &str,
    tokens: &Arc<Vec<String>>,
) -> anyhow::Result<(Phase, Vec<(String, usize)>, SoldOut)> {
    let users = args.users;
    // Warm-up against an unknown sale: place-order answers 404 and reserves nothing.
    let unknown = format!("/seckill/activities/{}/orders", SaleId::generate());
    let warm = {
        let (target, tokens) = (target.clone(), tokens.clone());
        move |i: u64| target.request("POST", &unknown, Some(&tokens[(i % users) as usize]), None)
    };
    closed_loop(target, args.concurrency, args.warmup, warm).await;
    mark("orders-start");

    let path = format!("/seckill/activities/{sale_id}/orders");
    let build = {
        let (target, tokens) = (target.clone(), tokens.clone());
        move |i: u64| target.request("POST", &path, Some(&tokens[(i % users) as usize]), None)
    };
    let (samples, seconds) = closed_loop(target, args.concurrency, args.attempts, build).await;
    let mut outcomes = BTreeMap::new();
    let mut micros = Vec::with_capacity(samples.len());
    let mut accepted = Vec::new();
    let sold_at = samples
        .iter()
        .filter(|s| matches!(s.answer, Ok((202, _))))
        .map(|s| s.done_micros)
        .max()
        .unwrap_or(0);
    let before = samples.iter().filter(|s| s.done_micros <= sold_at).count() as u64;
    let after = samples.len() as u64 - before;
    let sold_out = SoldOut {
        after_seconds: sold_at as f64 / 1e6,
        attempts_before: before,
        attempts_after: after,
        after_per_second: after as f64 / (seconds - sold_at as f64 / 1e6).max(1e-9),
    };
    for sample in samples {
        if let Ok((202, body)) = &sample.answer {
            let order: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let id = order["orderId"]
                .as_str()
                .with_context(|| format!("a 202 without orderId: {order}"))?;
            accepted.push((id.to_owned(), (sample.index % users) as usize));
        }
        *outcomes.entry(outcome(&sample.answer)).or_default() += 1;
        micros.push(sample.micros);
    }
    Ok((phase(micros, seconds, outcomes), accepted, sold_out))
}

/// Polls every accepted order as its owner until none reads PENDING or the bound passes.
async fn settle(
    target: &Arc<Target>,
    args: &Args,
    tokens: &Arc<Vec<String>>,
    accepted: &[(String, usize)],
) -> anyhow::Result<Settle> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.settle_timeout);
    let mut status: HashMap<String, String> = accepted
        .iter()
        .map(|(id, _)| (id.clone(), "PENDING".to_owned()))
        .collect();
    let mut open: Vec<(String, usize)> = accepted.to_vec();
    // A round stops once this many orders still read PENDING (the consumer has not reached
    // them yet): polling them all every round would only load moto, which the consumer needs.
    const PENDING_PER_ROUND: usize = 32;
    let mut last_progress = Instant::now() - Duration::from_secs(10);
    while !open.is_empty() {
        let round = Arc::new(open.clone());
        let next = Arc::new(AtomicUsize::new(0));
        let pending = Arc::new(AtomicUsize::new(0));
        let mut workers = Vec::new();
        for _ in 0..args.settle_concurrency.max(1) {
            let (target, tokens, round, next, pending) = (
                target.clone(),
                tokens.clone(),
                round.clone(),
                next.clone(),
                pending.clone(),
            );
            workers.push(tokio::spawn(async move {
                let mut seen = Vec::new();
                let mut connection = connect(&target).await?;
                loop {
                    if pending.load(Ordering::Relaxed) >= PENDING_PER_ROUND {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((id, user)) = round.get(i) else {
                        break;
                    };
                    let request =
                        target.request("GET", &format!("/orders/{id}"), Some(&tokens[*user]), None);
                    let answer = send(&mut connection, &target, request).await;
                    let read = match &answer {
                        Ok((200, body)) => serde_json::from_slice::<Value>(body)
                            .ok()
                            .and_then(|v| v["status"].as_str().map(str::to_owned))
                            .unwrap_or_else(|| "200 without status".to_owned()),
                        other => outcome(other),
                    };
                    if read == "PENDING" {
                        pending.fetch_add(1, Ordering::Relaxed);
                    }
                    seen.push((id.clone(), read));
                }
                anyhow::Ok(seen)
            }));
        }
        for worker in workers {
            for (id, read) in worker.await?? {
                status.insert(id, read);
            }
        }
        // Transport errors and 5xx are polled again, like PENDING; every other answer is final.
        open.retain(|(id, _)| {
            let read = &status[id];
            read == "PENDING" || read.starts_with("error") || read.starts_with('5')
        });
        let confirmed = status.values().filter(|s| *s == "CONFIRMED").count();
        if open.is_empty() || last_progress.elapsed() >= Duration::from_secs(5) {
            eprintln!(
                "settle: {:>5.1} s  CONFIRMED {confirmed}/{}  not yet final {}",
                started.elapsed().as_secs_f64(),
                accepted.len(),
                open.len()
            );
            last_progress = Instant::now();
        }
        if open.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            eprintln!("settle: gave up after {} s", args.settle_timeout);
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut by_status = BTreeMap::new();
    for read in status.into_values() {
        *by_status.entry(read).or_default() += 1;
    }
    Ok(Settle {
        seconds: started.elapsed().as_secs_f64(),
        accepted: accepted.len() as u64,
        by_status,
    })
}

fn verdict_name(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::Reserved { .. } => "OK",
        Verdict::UnknownSale => "UNKNOWN_SALE",
        Verdict::NotStarted => "NOT_STARTED",
        Verdict::Ended => "ENDED",
        Verdict::RateLimited => "RATE_LIMITED",
        Verdict::LimitReached => "LIMIT_REACHED",
        Verdict::SoldOut => "SOLD_OUT",
    }
}

/// The reserve script straight from here: a fresh preheated sale of the same shape, the
/// same attempts, users and concurrency.
async fn raw_phase(args: &Args, redis_url: &str, run: &str) -> anyhow::Result<Raw> {
    let client = redis::Client::open(redis_url).context("invalid --redis-url")?;
    let mut stores = Vec::new();
    for _ in 0..args.redis_connections.max(1) {
        let connection = redis::aio::ConnectionManager::new(client.clone())
            .await
            .context("failed to connect to Redis")?;
        stores.push(RedisSales::new(connection));
    }
    stores[0].load_scripts().await?;
    let now = OffsetDateTime::now_utc();
    let sale = Sale {
        id: SaleId::generate(),
        product_id: "storm-phone".to_owned(),
        title: "Storm phone".to_owned(),
        price_cents: 19900,
        initial_stock: args.stock,
        stock_remaining: args.stock,
        per_user_limit: 1,
        starts_at: now - time::Duration::minutes(1),
        ends_at: now + time::Duration::hours(1),
        state: Lifecycle::Published,
        created_at: rfc3339(now),
    };
    stores[0].preheat(&sale).await?;
    mark("raw-start");
    let users: Arc<Vec<UserId>> = Arc::new(
        (0..args.users)
            .map(|u| UserId::parse(&user_name(run, u)))
            .collect::<Result<_, _>>()?,
    );
    let sale_id = sale.id.clone();
    let next = Arc::new(AtomicU64::new(0));
    let (attempts, rate_limit) = (args.attempts, args.rate_limit);
    let started = Instant::now();
    let mut workers = Vec::new();
    for w in 0..args.concurrency {
        let store = stores[w % stores.len()].clone();
        let (users, next, sale_id) = (users.clone(), next.clone(), sale_id.clone());
        workers.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= attempts {
                    break;
                }
                let reservation = Reservation {
                    order_id: format!("{sale_id}.{}", uuid::Uuid::now_v7().simple()),
                    sale_id: sale_id.clone(),
                    user_id: users[(i % users.len() as u64) as usize].clone(),
                    now_ms: epoch_ms(OffsetDateTime::now_utc()),
                    rate_limit_per_second: rate_limit,
                };
                let sent = Instant::now();
                let verdict = store.reserve(&reservation).await;
                let micros = sent.elapsed().as_micros() as u64;
                samples.push((
                    micros,
                    match verdict {
                        Ok(verdict) => verdict_name(&verdict).to_owned(),
                        Err(err) => format!("error: {:#}", err.0),
                    },
                ));
            }
            samples
        }));
    }
    let mut micros = Vec::new();
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    for worker in workers {
        for (m, name) in worker.await? {
            micros.push(m);
            *outcomes.entry(name).or_default() += 1;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let accepted = outcomes.get("OK").copied().unwrap_or(0);
    Ok(Raw {
        sale_id: sale_id.as_str().to_owned(),
        redis_connections: stores.len(),
        phase: phase(micros, seconds, outcomes),
        accepted,
    })
}

fn user_name(run: &str, u: u64) -> String {
    format!("storm-{run}-u{u:05}")
}

/// `mark <what> <unix seconds>` on stderr: lets a CPU sampler beside the run pick a phase.
fn mark(what: &str) {
    let now = OffsetDateTime::now_utc();
    eprintln!("mark {what} {:.3}", now.unix_timestamp_nanos() as f64 / 1e9);
}

/// A summary line: on stdout, or on stderr when stdout carries the JSON.
fn say(json: bool, line: String) {
    if json {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}

fn print_phase(json: bool, name: &str, unit: &str, p: &Phase) {
    say(
        json,
        format!(
            "{name:<8} {:>7} in {:>6.2} s: {:>8.0} {unit}/s; p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {:?}",
            p.requests, p.seconds, p.per_second, p.p50_ms, p.p99_ms, p.max_ms, p.outcomes
        ),
    );
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(
        args.users > 0 && args.concurrency > 0,
        "--users and --concurrency must be positive"
    );
    let target = Arc::new(Target::parse(&args.url)?);
    let secret = args.jwt_secret.as_bytes();
    let ttl = Duration::from_secs(3 * 3600);
    let run = format!("{:x}", OffsetDateTime::now_utc().unix_timestamp());

    let admin = local_cloud::jwt::local_token(secret, "storm-ops", &["admin".to_owned()], ttl);
    let tokens: Arc<Vec<String>> = Arc::new(
        (0..args.users)
            .map(|u| local_cloud::jwt::local_token(secret, &user_name(&run, u), &[], ttl))
            .collect(),
    );

    let sale_id = create_sale(&target, &admin, args.stock).await?;
    eprintln!("sale {sale_id} published: {} units, 1 per user", args.stock);

    let detail = detail_phase(&target, &args, &sale_id).await?;
    mark("detail-end");
    print_phase(args.json, "detail", "reads", &detail);

    let (orders, accepted, sold_out) = order_phase(&target, &args, &sale_id, &tokens).await?;
    mark("orders-end");
    print_phase(args.json, "orders", "attempts", &orders);
    say(
        args.json,
        format!(
            "sold out after {:.2} s and {} attempts; then {} attempts at {:.0}/s",
            sold_out.after_seconds,
            sold_out.attempts_before,
            sold_out.attempts_after,
            sold_out.after_per_second
        ),
    );
    say(
        args.json,
        format!(
            "accepted {} of {} attempts",
            accepted.len(),
            orders.requests
        ),
    );

    let settled = settle(&target, &args, &tokens, &accepted).await?;
    say(
        args.json,
        format!(
            "settled in {:.1} s: {:?}",
            settled.seconds, settled.by_status
        ),
    );

    let raw = match &args.redis_url {
        Some(url) => {
            let raw = raw_phase(&args, url, &run).await?;
            mark("raw-end");
            print_phase(args.json, "evalsha", "calls", &raw.phase);
            Some(raw)
        }
        None => None,
    };
    let ratio = raw
        .as_ref()
        .map(|raw| orders.per_second / raw.phase.per_second);
    if let Some(ratio) = ratio {
        say(args.json, format!("orders/s ÷ EVALSHA/s = {ratio:.3}"));
    }

    let stock = u64::from(args.stock);
    let confirmed = settled.by_status.get("CONFIRMED").copied().unwrap_or(0);
    let mut checks = vec![
        (
            format!("accepted == stock ({} == {stock})", accepted.len()),
            accepted.len() as u64 == stock,
        ),
        (
            format!("CONFIRMED == stock ({confirmed} == {stock})"),
            confirmed == stock,
        ),
        (
            format!(
                "every attempt answered ({} == {})",
                orders.requests, args.attempts
            ),
            orders.requests == args.attempts,
        ),
    ];
    if let Some(raw) = &raw {
        checks.push((
            format!("raw accepted == stock ({} == {stock})", raw.accepted),
            raw.accepted == stock,
        ));
    }
    let failed: Vec<String> = checks
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(name, _)| name.clone())
        .collect();
    for (name, ok) in &checks {
        say(
            args.json,
            format!("check {}: {name}", if *ok { "ok    " } else { "FAILED" }),
        );
    }
    let report = Report {
        url: args.url.clone(),
        sale_id,
        stock: args.stock,
        users: args.users,
        attempts: args.attempts,
        concurrency: args.concurrency,
        detail,
        orders,
        accepted: accepted.len() as u64,
        sold_out,
        settle: settled,
        raw,
        orders_to_evalsha_ratio: ratio,
        checks: checks.into_iter().map(|(name, _)| name).collect(),
        failed_checks: failed.clone(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    if !failed.is_empty() {
        bail!("{} check(s) failed: {}", failed.len(), failed.join("; "));
    }
    Ok(())
}
