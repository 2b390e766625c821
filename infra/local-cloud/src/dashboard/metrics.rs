//! The functions' own metrics (their EMF lines), aggregated per metric and dimension values,
//! per second: counts summed, arrays (and units other than counts) as distributions.

use super::emf::{self, Line, Sample};
use super::window::{Slot, Window};
use percentiles::Percentiles;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Series kept at most: a dimension with a value per user would otherwise grow without
/// bound. Samples of further series are counted as dropped.
const MAX_SERIES: usize = 400;
/// The longest problem text kept for the dashboard.
const MAX_PROBLEM: usize = 300;

/// A chart: one metric of one namespace.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct MetricKey {
    namespace: String,
    name: String,
}

struct Second(Percentiles);

impl Default for Second {
    fn default() -> Self {
        Self(Percentiles::coarse())
    }
}

impl Slot for Second {
    fn reset(&mut self) {
        self.0.reset();
    }
}

#[derive(Default)]
struct Metric {
    unit: Option<String>,
    /// Some line gave it as an array.
    array: bool,
    series: BTreeMap<Vec<(String, String)>, Window<Second>>,
}

#[derive(Default)]
struct State {
    metrics: BTreeMap<MetricKey, Metric>,
    series: usize,
    lines: u64,
    problems: u64,
    dropped: u64,
    last_problem: Option<String>,
}

/// Every metric the functions printed.
#[derive(Default)]
pub(crate) struct Metrics {
    state: Mutex<State>,
}

#[derive(serde::Serialize, Debug)]
pub(crate) struct MetricsView {
    /// EMF lines read.
    pub(crate) lines: u64,
    /// Lines or parts of lines that could not be read, and the last such problem.
    pub(crate) problems: u64,
    #[serde(rename = "lastProblem")]
    pub(crate) last_problem: Option<String>,
    /// Samples of series past the limit.
    pub(crate) dropped: u64,
    pub(crate) metrics: Vec<MetricView>,
}

#[derive(serde::Serialize, Debug)]
pub(crate) struct MetricView {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) unit: Option<String>,
    /// `sum`: values summed per second; `distribution`: samples and percentiles per second.
    pub(crate) kind: &'static str,
    pub(crate) series: Vec<SeriesView>,
}

#[derive(serde::Serialize, Debug)]
pub(crate) struct SeriesView {
    pub(crate) dimensions: BTreeMap<String, String>,
    pub(crate) seconds: Vec<MetricSecond>,
}

#[derive(serde::Serialize, Debug, PartialEq)]
pub(crate) struct MetricSecond {
    pub(crate) t: u64,
    pub(crate) count: u64,
    pub(crate) sum: f64,
    pub(crate) p50: f64,
    pub(crate) p95: f64,
    pub(crate) p99: f64,
}

impl Metrics {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads a line a function printed, at `second`; anything but EMF is ignored.
    pub(crate) fn line(&self, function: &str, second: u64, line: &[u8]) {
        match emf::parse(line) {
            Line::Other => {}
            Line::Malformed(problem) => {
                let mut state = self.lock();
                state.lines += 1;
                state.problem(function, &problem);
            }
            Line::Metrics { samples, problems } => {
                let mut state = self.lock();
                state.lines += 1;
                for problem in &problems {
                    state.problem(function, problem);
                }
                for sample in samples {
                    state.add(second, sample);
                }
            }
        }
    }

    pub(crate) fn view(&self, now: u64) -> MetricsView {
        let state = self.lock();
        let metrics = state
            .metrics
            .iter()
            .map(|(key, metric)| MetricView {
                namespace: key.namespace.clone(),
                name: key.name.clone(),
                unit: metric.unit.clone(),
                kind: if metric.is_distribution() {
                    "distribution"
                } else {
                    "sum"
                },
                series: metric
                    .series
                    .iter()
                    .map(|(dimensions, window)| SeriesView {
                        dimensions: dimensions.iter().cloned().collect(),
                        seconds: window
                            .recent(now)
                            .filter(|(_, second)| !second.0.is_empty())
                            .map(|(t, Second(values))| MetricSecond {
                                t,
                                count: values.count(),
                                sum: values.sum(),
                                p50: values.value_at(0.5).unwrap_or(0.0),
                                p95: values.value_at(0.95).unwrap_or(0.0),
                                p99: values.value_at(0.99).unwrap_or(0.0),
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .collect();
        MetricsView {
            lines: state.lines,
            problems: state.problems,
            last_problem: state.last_problem.clone(),
            dropped: state.dropped,
            metrics,
        }
    }
}

impl Metric {
    /// Counts are summed; arrays and measured units (milliseconds, bytes...) are
    /// distributions.
    fn is_distribution(&self) -> bool {
        self.array
            || self
                .unit
                .as_deref()
                .is_some_and(|unit| unit != "Count" && unit != "None")
    }
}

impl State {
    fn problem(&mut self, function: &str, problem: &str) {
        self.problems += 1;
        let mut text = format!("{function}: {problem}");
        if text.len() > MAX_PROBLEM {
            let mut end = MAX_PROBLEM;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
        self.last_problem = Some(text);
    }

    fn add(&mut self, second: u64, sample: Sample) {
        let key = MetricKey {
            namespace: sample.namespace,
            name: sample.name,
        };
        let full = self.series >= MAX_SERIES;
        let metric = match self.metrics.get_mut(&key) {
            Some(metric) => metric,
            None if full => {
                self.dropped += 1;
                return;
            }
            None => self.metrics.entry(key).or_default(),
        };
        if sample.unit.is_some() {
            metric.unit = sample.unit;
        }
        metric.array |= sample.array;
        let window = match metric.series.get_mut(&sample.dimensions) {
            Some(window) => window,
            None if full => {
                self.dropped += 1;
                return;
            }
            None => {
                self.series += 1;
                metric.series.entry(sample.dimensions).or_default()
            }
        };
        if let Some(Second(values)) = window.at(second) {
            for value in sample.values {
                values.record(value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: u64 = 1_764_614_400;

    fn requests(outcome: &str, n: u32) -> String {
        format!(
            r#"{{"_aws":{{"Timestamp":1764614400000,"CloudWatchMetrics":[{{"Namespace":"FollowSeckill","Dimensions":[["FunctionName","Outcome"]],"Metrics":[{{"Name":"Requests","Unit":"Count"}}]}}]}},"FunctionName":"follow","Outcome":"{outcome}","Requests":{n}}}"#
        )
    }

    const ELAPSED: &str = r#"{"_aws":{"Timestamp":1764614400000,"CloudWatchMetrics":[{"Namespace":"FollowSeckill","Dimensions":[["FunctionName"]],"Metrics":[{"Name":"Elapsed","Unit":"Milliseconds"}]}]},"FunctionName":"follow","Elapsed":[3.2,4.1]}"#;

    #[test]
    fn counts_are_summed_per_second_and_dimension_values() {
        let metrics = Metrics::default();
        metrics.line("Follow", T, requests("200", 1).as_bytes());
        metrics.line("Follow", T, requests("200", 2).as_bytes());
        metrics.line("Follow", T, requests("409", 1).as_bytes());
        metrics.line("Follow", T + 1, requests("200", 1).as_bytes());
        metrics.line("Follow", T + 1, b"an ordinary log line");

        let view = metrics.view(T + 1);
        assert_eq!((view.lines, view.problems), (4, 0));
        let [requests] = &view.metrics[..] else {
            panic!("one metric: {view:?}")
        };
        assert_eq!((requests.name.as_str(), requests.kind), ("Requests", "sum"));
        let ok = &requests.series[0];
        assert_eq!(ok.dimensions["Outcome"], "200");
        assert_eq!(ok.dimensions["FunctionName"], "follow");
        let sums: Vec<(u64, f64)> = ok.seconds.iter().map(|s| (s.t, s.sum)).collect();
        assert_eq!(sums, [(T, 3.0), (T + 1, 1.0)]);
        assert_eq!(requests.series[1].dimensions["Outcome"], "409");
        assert_eq!(requests.series[1].seconds[0].sum, 1.0);
    }

    #[test]
    fn arrays_are_distributions() {
        let metrics = Metrics::default();
        metrics.line("Follow", T, ELAPSED.as_bytes());
        metrics.line("Follow", T, ELAPSED.as_bytes());
        let view = metrics.view(T);
        let elapsed = &view.metrics[0];
        assert_eq!(elapsed.kind, "distribution");
        assert_eq!(elapsed.unit.as_deref(), Some("Milliseconds"));
        let second = &elapsed.series[0].seconds[0];
        assert_eq!(second.count, 4);
        assert_eq!(second.p99, 4.1);
        // 3.2, 3.2, 4.1, 4.1: the median is the upper middle value, as every percentile of
        // the project is (the `percentiles` crate's nearest value).
        assert_eq!(second.p50, 4.1, "{second:?}");
        assert_eq!(second.sum, 14.6, "{second:?}");
    }

    #[test]
    fn broken_lines_are_counted_with_the_last_reason() {
        let metrics = Metrics::default();
        metrics.line("Follow", T, br#"{"_aws":{"CloudWatchMetrics":[{"#);
        metrics.line(
            "Order",
            T,
            br#"{"_aws":{"CloudWatchMetrics":[{"Namespace":"N","Metrics":[{"Name":"Requests"}]}]}}"#,
        );
        let view = metrics.view(T);
        assert_eq!((view.lines, view.problems), (2, 2));
        assert_eq!(
            view.last_problem.as_deref(),
            Some("Order: metric \"Requests\" has no value")
        );
        assert!(view.metrics.is_empty());
    }

    #[test]
    fn series_are_bounded() {
        let metrics = Metrics::default();
        for user in 0..MAX_SERIES + 10 {
            let line = format!(
                r#"{{"_aws":{{"CloudWatchMetrics":[{{"Namespace":"N","Dimensions":[["User"]],"Metrics":[{{"Name":"Hits"}}]}}]}},"User":"u{user}","Hits":1}}"#
            );
            metrics.line("F", T, line.as_bytes());
        }
        let view = metrics.view(T);
        assert_eq!(view.metrics[0].series.len(), MAX_SERIES);
        assert_eq!(view.dropped, 10);
    }
}
