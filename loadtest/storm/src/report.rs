//! The storm's figures and how they are printed: a summary line per phase on stdout (stderr
//! when stdout carries the JSON report), phase marks for a CPU sampler beside the run, and the
//! order phase's timeline and its plot.

use loadgen::{Outcome, Sample};
use percentiles::Percentiles;
use plot::{Panel, Series};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
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
    pub fn new(micros: Vec<u64>, seconds: f64, outcomes: BTreeMap<String, u64>) -> Self {
        let latencies: Percentiles = micros.iter().map(|&us| us as f64 / 1000.0).collect();
        let ms = |q| latencies.value_at(q).unwrap_or(0.0);
        Self {
            requests: latencies.count(),
            seconds,
            per_second: latencies.count() as f64 / seconds,
            p50_ms: ms(0.50),
            p99_ms: ms(0.99),
            max_ms: ms(1.0),
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

/// The order phase over time: answers per second by outcome, and the stock left.
#[derive(Serialize, Debug)]
pub(crate) struct Timeline {
    /// Width of each bucket, seconds (a sixtieth of the phase, at least 0.1 s).
    pub bucket_seconds: f64,
    /// Per outcome (transport failures together as `error`), answers per second in each bucket.
    pub per_second: BTreeMap<String, Vec<f64>>,
    /// (seconds since the phase started, units left): the sale's stock, less one at each 202.
    pub stock_remaining: Vec<(f64, u64)>,
}

impl Timeline {
    pub fn new(samples: &[Sample<Outcome>], seconds: f64, stock: u64) -> Self {
        let bucket_seconds = (seconds / 60.0).max(0.1);
        let buckets = (seconds / bucket_seconds).ceil().max(1.0) as usize;
        let mut counts: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        let mut accepted_at = Vec::new();
        for sample in samples {
            let at = sample.done_micros as f64 / 1e6;
            let bucket = ((at / bucket_seconds) as usize).min(buckets - 1);
            let mut key = outcome(&sample.answer);
            if key.starts_with("error") {
                key = "error".to_owned();
            }
            if key == "202" {
                accepted_at.push(at);
            }
            counts.entry(key).or_insert_with(|| vec![0; buckets])[bucket] += 1;
        }
        accepted_at.sort_by(f64::total_cmp);
        let mut stock_remaining = vec![(0.0, stock)];
        for (n, at) in accepted_at.iter().enumerate() {
            stock_remaining.push((*at, stock.saturating_sub(n as u64 + 1)));
        }
        let left = stock.saturating_sub(accepted_at.len() as u64);
        stock_remaining.push((seconds, left));
        Self {
            bucket_seconds,
            per_second: counts
                .into_iter()
                .map(|(key, counts)| {
                    let rates = counts.iter().map(|c| *c as f64 / bucket_seconds).collect();
                    (key, rates)
                })
                .collect(),
            stock_remaining,
        }
    }

    /// The figure: answers per second by outcome above, stock remaining below.
    pub fn panels(&self) -> Vec<Panel> {
        let x = "seconds since the order phase started";
        let mut answers = Panel::new(
            format!(
                "Order attempts answered per second, by answer ({:.1} s buckets)",
                self.bucket_seconds
            ),
            x,
            "answers/s",
        );
        // The most frequent answers first, so that their colours stay the same between runs.
        let mut outcomes: Vec<(&String, &Vec<f64>)> = self.per_second.iter().collect();
        outcomes.sort_by(|a, b| b.1.iter().sum::<f64>().total_cmp(&a.1.iter().sum::<f64>()));
        for (key, rates) in outcomes {
            let label = if key == "202" {
                "202 accepted".to_owned()
            } else {
                key.clone()
            };
            let points = rates
                .iter()
                .enumerate()
                .map(|(i, rate)| ((i as f64 + 0.5) * self.bucket_seconds, *rate))
                .collect();
            answers.series.push(Series::line(label, points));
        }
        let stock = self
            .stock_remaining
            .iter()
            .map(|(at, left)| (*at, *left as f64))
            .collect();
        let remaining = Panel::new("Stock remaining", x, "units").with(Series::line(
            "units left (stock less the 202s answered)",
            stock,
        ));
        vec![answers, remaining]
    }

    pub fn plot(&self, path: &Path, title: &str) -> anyhow::Result<()> {
        plot::write(path, title, &self.panels())
    }
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
    pub timeline: Timeline,
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

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use loadgen::Answer;

    fn sample(index: u64, done_ms: u64, status: u16, code: Option<&str>) -> Sample<Outcome> {
        let body = code.map_or(Bytes::new(), |code| {
            Bytes::from(format!(r#"{{"error":{{"code":"{code}"}}}}"#))
        });
        Sample {
            index,
            micros: 1000,
            done_micros: done_ms * 1000,
            answer: Ok(Answer { status, body }),
        }
    }

    #[test]
    fn the_timeline_counts_answers_by_outcome_and_the_stock_left() {
        // 6 s: buckets of 0.1 s; two 202s early, then sold out, one transport error.
        let mut samples = vec![
            sample(0, 50, 202, None),
            sample(1, 60, 202, None),
            sample(2, 70, 409, Some("LIMIT_REACHED")),
        ];
        samples.extend((3..13).map(|i| sample(i, 5_000 + i, 409, Some("SOLD_OUT"))));
        samples.push(Sample {
            index: 13,
            micros: 5,
            done_micros: 5_500_000,
            answer: Err("connection reset".to_owned()),
        });
        let timeline = Timeline::new(&samples, 6.0, 3);
        assert_eq!(timeline.bucket_seconds, 0.1);
        let rates = &timeline.per_second;
        assert_eq!(
            rates.keys().collect::<Vec<_>>(),
            ["202", "409 LIMIT_REACHED", "409 SOLD_OUT", "error"]
        );
        assert_eq!(rates["202"].len(), 60);
        assert!((rates["202"][0] - 20.0).abs() < 1e-9, "{:?}", rates["202"]);
        assert!((rates["409 SOLD_OUT"][50] - 100.0).abs() < 1e-9);
        assert!((rates["error"][55] - 10.0).abs() < 1e-9);
        assert_eq!(
            timeline.stock_remaining,
            [(0.0, 3), (0.05, 2), (0.06, 1), (6.0, 1)]
        );

        let svg = plot::svg("Storm", &timeline.panels()).unwrap();
        for text in [
            "Order attempts answered per second",
            "202 accepted",
            "409 SOLD_OUT",
            "409 LIMIT_REACHED",
            "error",
            "Stock remaining",
        ] {
            assert!(svg.contains(text), "{text:?} missing");
        }
    }
}
