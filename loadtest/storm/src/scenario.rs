//! The storm's phases through the runner: the sale created and published as an operator, the
//! detail reads, the order attempts, and the polls until every accepted order is final. Each
//! phase is `loadgen`'s closed loop, one keep-alive connection per worker.

use crate::cli::{Args, Target};
use crate::report::{Phase, Settle, SoldOut, Timeline, mark, outcome};
use anyhow::{Context, bail, ensure};
use app::seckill::sale::SaleId;
use loadgen::{Answer, Bodies, Bounds, Connection, Outcome, Request, Run, Worker};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The time bound of every loop of the storm, far beyond what its counts take.
pub(crate) const PHASE_LIMIT: Duration = Duration::from_secs(600);

pub(crate) fn rfc3339(at: OffsetDateTime) -> String {
    at.format(&Rfc3339).expect("a formattable time")
}

/// One request on a fresh connection (setup and checks).
async fn call(target: &Target, request: Request) -> anyhow::Result<(u16, Value)> {
    let mut connection = Connection::open(target.address).await?;
    let answer = connection
        .send(request, Bodies::Keep)
        .await
        .map_err(anyhow::Error::msg)?;
    let value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
    Ok((answer.status, value))
}

/// A loop of the storm: `requests` in `concurrency` workers.
pub(crate) fn bounds(concurrency: usize, requests: u64) -> Bounds {
    Bounds {
        concurrency,
        requests,
        duration: PHASE_LIMIT,
    }
}

/// The latencies and the outcomes of a run; a connection that could not be opened counts as
/// an `error: ...` outcome.
fn tally(run: &Run<Outcome>) -> (Vec<u64>, BTreeMap<String, u64>) {
    let mut outcomes = BTreeMap::new();
    for failed in &run.failed_workers {
        *outcomes.entry(format!("error: {failed}")).or_default() += 1;
    }
    let mut micros = Vec::with_capacity(run.samples.len());
    for sample in &run.samples {
        *outcomes.entry(outcome(&sample.answer)).or_default() += 1;
        micros.push(sample.micros);
    }
    (micros, outcomes)
}

/// Creates and publishes the sale as an operator; returns its id.
pub(crate) async fn create_sale(
    target: &Target,
    admin: &str,
    stock: u32,
) -> anyhow::Result<String> {
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

pub(crate) async fn detail_phase(
    target: &Arc<Target>,
    args: &Args,
    sale_id: &str,
) -> anyhow::Result<Phase> {
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
    loadgen::http_loop(
        target.address,
        bounds(args.concurrency, args.warmup),
        Bodies::Keep,
        build.clone(),
    )
    .await?;
    mark("detail-start");
    let run = loadgen::http_loop(
        target.address,
        bounds(args.concurrency, args.detail_requests),
        Bodies::Keep,
        build,
    )
    .await?;
    let (micros, outcomes) = tally(&run);
    Ok(Phase::new(micros, run.seconds, outcomes))
}

/// What the order phase measured.
pub(crate) struct Orders {
    pub phase: Phase,
    /// The accepted orders as (order id, user index).
    pub accepted: Vec<(String, usize)>,
    pub sold_out: SoldOut,
    pub timeline: Timeline,
}

pub(crate) async fn order_phase(
    target: &Arc<Target>,
    args: &Args,
    sale_id: &str,
    tokens: &Arc<Vec<String>>,
) -> anyhow::Result<Orders> {
    let users = args.users;
    // Warm-up against an unknown sale: place-order answers 404 and reserves nothing.
    let unknown = format!("/seckill/activities/{}/orders", SaleId::generate());
    let warm = {
        let (target, tokens) = (target.clone(), tokens.clone());
        move |i: u64| target.request("POST", &unknown, Some(&tokens[(i % users) as usize]), None)
    };
    loadgen::http_loop(
        target.address,
        bounds(args.concurrency, args.warmup),
        Bodies::Keep,
        warm,
    )
    .await?;
    mark("orders-start");

    let path = format!("/seckill/activities/{sale_id}/orders");
    let build = {
        let (target, tokens) = (target.clone(), tokens.clone());
        move |i: u64| target.request("POST", &path, Some(&tokens[(i % users) as usize]), None)
    };
    let run = loadgen::http_loop(
        target.address,
        bounds(args.concurrency, args.attempts),
        Bodies::Keep,
        build,
    )
    .await?;
    let seconds = run.seconds;
    let samples = &run.samples;
    let accepted_answer = |answer: &Outcome| matches!(answer, Ok(Answer { status: 202, .. }));
    let sold_at = samples
        .iter()
        .filter(|s| accepted_answer(&s.answer))
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
    let mut accepted = Vec::new();
    for sample in samples {
        if let Ok(Answer { status: 202, body }) = &sample.answer {
            let order: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let id = order["orderId"]
                .as_str()
                .with_context(|| format!("a 202 without orderId: {order}"))?;
            accepted.push((id.to_owned(), (sample.index % users) as usize));
        }
    }
    let timeline = Timeline::new(samples, seconds, u64::from(args.stock));
    let (micros, outcomes) = tally(&run);
    Ok(Orders {
        phase: Phase::new(micros, seconds, outcomes),
        accepted,
        sold_out,
        timeline,
    })
}

/// A round stops once this many orders still read PENDING (the consumer has not reached them
/// yet): polling them all every round would only load moto, which the consumer needs.
const PENDING_PER_ROUND: usize = 32;

/// One settle worker: reads the round's orders, as their owners, on its own connection.
struct Poller {
    connection: Connection,
    target: Arc<Target>,
    tokens: Arc<Vec<String>>,
    round: Arc<Vec<(String, usize)>>,
    pending: Arc<AtomicUsize>,
}

impl Worker for Poller {
    type Request = (String, Request);
    /// The order id and what it read: a status, or an outcome other than 200.
    type Answer = (String, String);

    fn prepare(&mut self, index: u64) -> Option<Self::Request> {
        if self.pending.load(Ordering::Relaxed) >= PENDING_PER_ROUND {
            return None;
        }
        let (id, user) = self.round.get(index as usize)?;
        let path = format!("/orders/{id}");
        let request = self
            .target
            .request("GET", &path, Some(&self.tokens[*user]), None);
        Some((id.clone(), request))
    }

    async fn send(&mut self, (id, request): Self::Request) -> Self::Answer {
        let answer = self.connection.send(request, Bodies::Keep).await;
        let read = match &answer {
            Ok(Answer { status: 200, body }) => serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|v| v["status"].as_str().map(str::to_owned))
                .unwrap_or_else(|| "200 without status".to_owned()),
            other => outcome(other),
        };
        if read == "PENDING" {
            self.pending.fetch_add(1, Ordering::Relaxed);
        }
        (id, read)
    }
}

/// Polls every accepted order as its owner until none reads PENDING or the bound passes.
pub(crate) async fn settle(
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
    let mut last_progress = Instant::now() - Duration::from_secs(10);
    while !open.is_empty() {
        let round = Arc::new(open.clone());
        let pending = Arc::new(AtomicUsize::new(0));
        let polls = bounds(args.settle_concurrency.max(1), round.len() as u64);
        let run = loadgen::closed_loop(polls, |_| {
            let (target, tokens, round, pending) = (
                target.clone(),
                tokens.clone(),
                round.clone(),
                pending.clone(),
            );
            async move {
                Ok(Poller {
                    connection: Connection::open(target.address).await?,
                    target,
                    tokens,
                    round,
                    pending,
                })
            }
        })
        .await?;
        if let Some(failed) = run.failed_workers.first() {
            bail!("{failed}");
        }
        for sample in run.samples {
            let (id, read) = sample.answer;
            status.insert(id, read);
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
