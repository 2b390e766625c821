//! Each function's invocations, errors, throttles and durations per second: what the
//! runner itself sees of every invocation, recorded on the invocation's path under one
//! short lock per function. A second's histogram allocates only when its slot first meets a
//! longer duration than any before it: slots are reused, and keep what they grew to.

use super::window::{Slot, Window};
use percentiles::Percentiles;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Ok,
    /// The function failed, crashed, timed out or could not start: Lambda's `Errors`.
    Error,
}

struct Second {
    invocations: u32,
    errors: u32,
    throttles: u32,
    /// Milliseconds.
    durations: Percentiles,
}

impl Default for Second {
    fn default() -> Self {
        Self {
            invocations: 0,
            errors: 0,
            throttles: 0,
            durations: Percentiles::coarse(),
        }
    }
}

impl Second {
    fn merge(&mut self, other: &Second) {
        self.invocations += other.invocations;
        self.errors += other.errors;
        self.throttles += other.throttles;
        self.durations.add(&other.durations);
    }

    /// Invocations and duration percentiles in milliseconds, to a hundredth.
    fn summary(&self) -> Summary {
        let quantile = |q| (self.durations.value_at(q).unwrap_or(0.0) * 100.0).round() / 100.0;
        Summary {
            invocations: u64::from(self.invocations),
            p50: quantile(0.5),
            p95: quantile(0.95),
            p99: quantile(0.99),
        }
    }
}

impl Slot for Second {
    fn reset(&mut self) {
        (self.invocations, self.errors, self.throttles) = (0, 0, 0);
        self.durations.reset();
    }
}

#[derive(Default)]
struct State {
    window: Window<Second>,
    invocations: u64,
    errors: u64,
    throttles: u64,
}

/// One function's counts.
pub(crate) struct FunctionStats {
    pub(crate) name: Box<str>,
    state: Mutex<State>,
}

/// One second of a function, as the dashboard shows it.
#[derive(serde::Serialize, Debug, PartialEq)]
pub(crate) struct SecondView {
    pub(crate) t: u64,
    pub(crate) invocations: u32,
    pub(crate) errors: u32,
    pub(crate) throttles: u32,
    /// Milliseconds; 0 without invocations.
    pub(crate) p50: f64,
    pub(crate) p95: f64,
    pub(crate) p99: f64,
}

/// Totals since the runner started, and the recent seconds.
#[derive(serde::Serialize, Debug)]
pub(crate) struct FunctionView {
    pub(crate) name: String,
    pub(crate) invocations: u64,
    pub(crate) errors: u64,
    pub(crate) throttles: u64,
    /// Invocations and duration percentiles over the last minute.
    #[serde(rename = "lastMinute")]
    pub(crate) last_minute: Summary,
    pub(crate) seconds: Vec<SecondView>,
}

#[derive(serde::Serialize, Debug, PartialEq)]
pub(crate) struct Summary {
    pub(crate) invocations: u64,
    pub(crate) p50: f64,
    pub(crate) p95: f64,
    pub(crate) p99: f64,
}

impl FunctionStats {
    pub(crate) fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// An invocation answered (or failed) after `elapsed`, in `second`.
    pub(crate) fn invoked(&self, second: u64, elapsed: Duration, outcome: Outcome) {
        let millis = elapsed.as_secs_f64() * 1000.0;
        let error = u32::from(outcome == Outcome::Error);
        let mut state = self.lock();
        state.invocations += 1;
        state.errors += u64::from(error);
        if let Some(slot) = state.window.at(second) {
            slot.invocations += 1;
            slot.errors += error;
            slot.durations.record(millis);
        }
    }

    /// A request for the function turned away by its route's throttling, in `second`.
    pub(crate) fn throttled(&self, second: u64) {
        let mut state = self.lock();
        state.throttles += 1;
        if let Some(slot) = state.window.at(second) {
            slot.throttles += 1;
        }
    }

    pub(crate) fn view(&self, now: u64) -> FunctionView {
        let state = self.lock();
        let mut minute = Second::default();
        let seconds = state
            .window
            .recent(now)
            .map(|(t, second)| {
                if t + 60 > now {
                    minute.merge(second);
                }
                let summary = second.summary();
                SecondView {
                    t,
                    invocations: second.invocations,
                    errors: second.errors,
                    throttles: second.throttles,
                    p50: summary.p50,
                    p95: summary.p95,
                    p99: summary.p99,
                }
            })
            .collect();
        FunctionView {
            name: self.name.to_string(),
            invocations: state.invocations,
            errors: state.errors,
            throttles: state.throttles,
            last_minute: minute.summary(),
            seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_counts_invocations_errors_throttles_and_its_percentiles() {
        let stats = FunctionStats::new("Follow");
        let t = 1_764_614_400;
        for millis in 1..=100 {
            stats.invoked(t, Duration::from_millis(millis), Outcome::Ok);
        }
        stats.invoked(t, Duration::from_millis(100), Outcome::Error);
        stats.throttled(t);
        stats.invoked(t + 2, Duration::from_micros(3_200), Outcome::Ok);

        let view = stats.view(t + 2);
        assert_eq!((view.invocations, view.errors, view.throttles), (102, 1, 1));
        let first = &view.seconds[0];
        assert_eq!(
            (first.t, first.invocations, first.errors, first.throttles),
            (t, 101, 1, 1)
        );
        for (got, truth) in [(first.p50, 51.0), (first.p95, 96.0), (first.p99, 100.0)] {
            assert!((got / truth - 1.0).abs() < 0.1, "{got} vs {truth}");
        }
        // One invocation: its percentiles are its duration.
        let last = &view.seconds[1];
        assert_eq!((last.t, last.p50, last.p99), (t + 2, 3.2, 3.2));
        assert_eq!(view.last_minute.invocations, 102);
        assert_eq!(view.last_minute.p99, 100.0);
    }
}
