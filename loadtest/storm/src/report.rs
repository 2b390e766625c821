//! The storm's figures and how they are printed: a summary line per phase on stdout (stderr
//! when stdout carries the JSON report), and phase marks for a CPU sampler beside the run.

use loadgen::{Outcome, percentile_ms};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use time::OffsetDateTime;

#[derive(Serialize, Debug)]
pub(crate) struct Phase {
    pub requests: u64,
    pub seconds: f64,
    pub per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub outcomes: BTreeMap<String, u64>,
}

impl Phase {
    pub fn new(mut micros: Vec<u64>, seconds: f64, outcomes: BTreeMap<String, u64>) -> Self {
        micros.sort_unstable();
        Self {
            requests: micros.len() as u64,
            seconds,
            per_second: micros.len() as f64 / seconds,
            p50_ms: percentile_ms(&micros, 0.50),
            p99_ms: percentile_ms(&micros, 0.99),
            max_ms: percentile_ms(&micros, 1.0),
            outcomes,
        }
    }
}

/// `409 SOLD_OUT`, `202`, `500`, or `error: ...` for a transport failure.
pub(crate) fn outcome(answer: &Outcome) -> String {
    match answer {
        Ok(answer) => {
            let code = serde_json::from_slice::<Value>(&answer.body)
                .ok()
                .and_then(|v| {
                    v.pointer("/error/code")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                });
            match code {
                Some(code) => format!("{} {code}", answer.status),
                None => answer.status.to_string(),
            }
        }
        Err(err) => format!("error: {err}"),
    }
}

/// The order phase split at the answer of the last accepted order: before, the 202s (each
/// with an SQS send) and the first rejections; after, only rejections.
#[derive(Serialize, Debug)]
pub(crate) struct SoldOut {
    pub after_seconds: f64,
    pub attempts_before: u64,
    pub attempts_after: u64,
    pub after_per_second: f64,
}

#[derive(Serialize, Debug)]
pub(crate) struct Settle {
    pub seconds: f64,
    pub accepted: u64,
    pub by_status: BTreeMap<String, u64>,
}

#[derive(Serialize, Debug)]
pub(crate) struct Report {
    pub url: String,
    pub sale_id: String,
    pub stock: u32,
    pub users: u64,
    pub attempts: u64,
    pub concurrency: usize,
    pub detail: Phase,
    pub orders: Phase,
    pub accepted: u64,
    pub sold_out: SoldOut,
    pub settle: Settle,
    pub raw: Option<Raw>,
    /// Orders/s through the runner divided by EVALSHA/s straight to Redis.
    pub orders_to_evalsha_ratio: Option<f64>,
    pub checks: Vec<String>,
    pub failed_checks: Vec<String>,
}

#[derive(Serialize, Debug)]
pub(crate) struct Raw {
    pub sale_id: String,
    pub redis_connections: usize,
    pub phase: Phase,
    pub accepted: u64,
}

/// `mark <what> <unix seconds>` on stderr: lets a CPU sampler beside the run pick a phase.
pub(crate) fn mark(what: &str) {
    let now = OffsetDateTime::now_utc();
    eprintln!("mark {what} {:.3}", now.unix_timestamp_nanos() as f64 / 1e9);
}

/// A summary line: on stdout, or on stderr when stdout carries the JSON.
pub(crate) fn say(json: bool, line: String) {
    if json {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
}

pub(crate) fn print_phase(json: bool, name: &str, unit: &str, p: &Phase) {
    say(
        json,
        format!(
            "{name:<8} {:>7} in {:>6.2} s: {:>8.0} {unit}/s; p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; {:?}",
            p.requests, p.seconds, p.per_second, p.p50_ms, p.p99_ms, p.max_ms, p.outcomes
        ),
    );
}
