//! The project's one closed load loop, and the HTTP load built on it.
//!
//! Layout:
//! - [`closed_loop`](mod@closed_loop): the loop itself, bounded in count and time, over any
//!   [`Worker`], with every request's latency and answer kept as a [`Sample`].
//! - [`http_load`]: a keep-alive [`Connection`] and [`http_loop`], the loop over HTTP/1.1.
//! - here: [`run`], a warmed-up HTTP load summed up as a [`LoadReport`] (requests/s,
//!   latency percentiles, statuses; the percentiles by the project's one implementation,
//!   [`percentiles::Percentiles`]).
//!
//! Users: the `loadgen` binary (one request over and over), `bench` (each function's route,
//! request `i` from another user), `storm` (the sale's detail and order phases, the settle
//! polls and the raw `EVALSHA` phase) and the runner's hello-world benchmark test.

pub mod closed_loop;
pub mod http_load;

pub use closed_loop::{Bounds, Run, Sample, Worker, closed_loop};
pub use http_load::{Answer, Bodies, Connection, Outcome, Request, http_loop};

use percentiles::Percentiles;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

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
    /// The latency distribution for plots, as (fraction of requests, their latency at most in
    /// ms): every percent, then 99.5 and 99.9 % (empty in reports saved before it was added).
    #[serde(default)]
    pub distribution: Vec<(f64, f64)>,
}

/// The fractions [`LoadReport::distribution`] is taken at.
fn distribution_fractions() -> impl Iterator<Item = f64> {
    (0..=99)
        .map(|percent| f64::from(percent) / 100.0)
        .chain([0.995, 0.999, 1.0])
}

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct LoadShape {
    pub concurrency: u32,
    pub requests: u64,
    pub duration: Duration,
    pub warmup: u64,
}

impl LoadShape {
    /// The measured part's bounds (the warm-up comes before it).
    pub fn bounds(&self) -> Bounds {
        Bounds {
            concurrency: self.concurrency as usize,
            requests: self.requests,
            duration: self.duration,
        }
    }
}

/// `200`, or `error: ...` for a transport failure.
pub fn status_key(outcome: &Outcome) -> String {
    match outcome {
        Ok(answer) => answer.status.to_string(),
        Err(err) => format!("error: {err}"),
    }
}

/// Runs the load; `request(i)` builds request `i`. The `warmup` requests come first, one at a
/// time on a connection of their own, and are not measured; the measured ones are
/// `request(warmup + i)`.
pub async fn run<F>(
    address: SocketAddr,
    shape: LoadShape,
    expected: u16,
    request: F,
) -> anyhow::Result<LoadReport>
where
    F: Fn(u64) -> Request + Send + Sync + 'static,
{
    let mut warm = Connection::open(address).await?;
    for i in 0..shape.warmup {
        let _ = warm.send(request(i), Bodies::Drop).await;
    }
    drop(warm);

    let warmup = shape.warmup;
    let run = http_loop(address, shape.bounds(), Bodies::Drop, move |i| {
        request(warmup + i)
    })
    .await?;
    Ok(report(&run, expected))
}

/// Sums a run up; a worker that could not connect counts as an `error: ...` status.
pub fn report(run: &Run<Outcome>, expected: u16) -> LoadReport {
    let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
    for failed in &run.failed_workers {
        *statuses.entry(format!("error: {failed}")).or_default() += 1;
    }
    let mut latencies = Percentiles::new();
    for sample in &run.samples {
        latencies.record(sample.micros as f64 / 1000.0);
        *statuses.entry(status_key(&sample.answer)).or_default() += 1;
    }
    let ms = |q| latencies.value_at(q).unwrap_or(0.0);
    let expected_key = expected.to_string();
    let unexpected = statuses
        .iter()
        .filter(|(status, _)| **status != expected_key)
        .map(|(_, count)| count)
        .sum();
    LoadReport {
        requests: latencies.count(),
        seconds: run.seconds,
        requests_per_second: latencies.count() as f64 / run.seconds,
        p50_ms: ms(0.50),
        p90_ms: ms(0.90),
        p99_ms: ms(0.99),
        max_ms: ms(1.0),
        statuses,
        unexpected,
        distribution: distribution_fractions().map(|p| (p, ms(p))).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_keeps_the_latency_distribution() {
        let samples = (1..=1000)
            .map(|i| Sample {
                index: i - 1,
                micros: i * 1000,
                done_micros: i * 1000,
                answer: Ok(Answer {
                    status: 200,
                    body: bytes::Bytes::new(),
                }),
            })
            .collect();
        let run = Run {
            samples,
            failed_workers: Vec::new(),
            seconds: 1.0,
        };
        let report = report(&run, 200);
        assert_eq!(report.requests, 1000);
        // The nearest value (index round(999 q)), within the histogram's 0.05 %; the extremes
        // exact.
        let close = |got: f64, truth: f64| (got / truth - 1.0).abs() <= 0.0005;
        for (got, truth) in [
            (report.p50_ms, 501.0),
            (report.p90_ms, 900.0),
            (report.p99_ms, 990.0),
        ] {
            assert!(close(got, truth), "{got} vs {truth}");
        }
        assert_eq!(report.max_ms, 1000.0);
        let distribution = &report.distribution;
        assert_eq!(distribution.len(), 103);
        assert_eq!(distribution[0], (0.0, 1.0));
        assert_eq!(distribution[50], (0.5, report.p50_ms));
        assert_eq!(distribution[101].0, 0.999);
        assert!(close(distribution[101].1, 999.0), "{:?}", distribution[101]);
        assert_eq!(distribution[102], (1.0, report.max_ms));
        assert!(distribution.windows(2).all(|w| w[0].1 <= w[1].1));
    }
}
