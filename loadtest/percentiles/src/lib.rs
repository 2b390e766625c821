//! Percentiles, one way for the whole project: values go into an HDR histogram
//! ([`hdrhistogram`]) and the `q` quantile is read back as the value nearest to `q` of the way
//! through the sorted values: the one at index `round((n - 1) q)` (from 0), with no
//! interpolation between two values. So p50 of 1 to 100 is 51, of an even count the upper of
//! the middle two; `q = 0` is the smallest, `q = 1` the largest.
//!
//! A value is kept to a thousandth of its unit (a duration in milliseconds to the
//! microsecond) and to the histogram's significant figures: [`Percentiles::new`] keeps three
//! (an answer within 0.05 % of the value it stands for: the middle of its bucket), for the load generator's, the bench's
//! and the tests' latencies; [`Percentiles::coarse`] keeps one (within 3.2 %), for the
//! runner's dashboard, which holds a histogram per function and second for five minutes.
//! Values under 2.048 (0.032 for the coarse) are kept exactly, to the thousandth.
//! The smallest and largest values are also kept exactly and bound every answer, so that
//! `q = 0` and `q = 1` answer them, and a single value (or many equal ones) comes back as it
//! was recorded.
//!
//! Users: `loadgen` (every load's p50 / p90 / p99 / max and its distribution), `storm`, the
//! `bench` (cold starts, warm durations by memory size), the runner's dashboard
//! (`infra/local-cloud/src/dashboard/`: each function's durations and the functions' own
//! metrics per second) and the e2e tests (the decoupling test's follow latencies).

use hdrhistogram::Histogram;

/// Histogram units per unit of a value: values are kept to a thousandth.
const SCALE: f64 = 1000.0;
/// The largest value in histogram units: far above any duration or size recorded here, and
/// below what the histogram can grow to.
const MAX_UNITS: f64 = (1u64 << 52) as f64;

/// Values, and their percentiles. Values below zero count as zero in the percentiles (not in
/// the sum); values that are not numbers (NaN, infinities) are not counted at all.
#[derive(Clone, Debug)]
pub struct Percentiles {
    histogram: Histogram<u64>,
    min: f64,
    max: f64,
    sum: f64,
}

impl Default for Percentiles {
    fn default() -> Self {
        Self::new()
    }
}

impl Percentiles {
    /// Three significant figures: answers within 0.05 %.
    pub fn new() -> Self {
        Self::with_figures(3)
    }

    /// One significant figure: answers within 3.2 %, in a few hundred bytes for values up to
    /// minutes in milliseconds.
    pub fn coarse() -> Self {
        Self::with_figures(1)
    }

    fn with_figures(figures: u8) -> Self {
        Self {
            // Auto-resizing from the smallest range: it grows to the largest value recorded.
            histogram: Histogram::new(figures).expect("1 to 5 significant figures"),
            min: 0.0,
            max: 0.0,
            sum: 0.0,
        }
    }

    /// Records one value.
    pub fn record(&mut self, value: f64) {
        if !value.is_finite() {
            return;
        }
        self.sum += value;
        let value = value.max(0.0);
        let units = (value * SCALE).round().min(MAX_UNITS) as u64;
        // `record` grows the histogram to the value; saturating only if it cannot grow.
        if self.histogram.record(units).is_err() {
            self.histogram.saturating_record(units);
        }
        if self.histogram.len() == 1 {
            (self.min, self.max) = (value, value);
        } else {
            self.min = self.min.min(value);
            self.max = self.max.max(value);
        }
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    pub fn is_empty(&self) -> bool {
        self.histogram.is_empty()
    }

    /// The values' sum.
    pub fn sum(&self) -> f64 {
        self.sum
    }

    /// The `q` quantile (0 to 1; p99 is 0.99): the value at index `round((n - 1) q)` of the
    /// sorted values, to the histogram's precision; `None` without values.
    pub fn value_at(&self, q: f64) -> Option<f64> {
        if self.is_empty() {
            return None;
        }
        // Exact at the ends; within a bucket elsewhere, and never outside what was recorded.
        if q <= 0.0 {
            return Some(self.min);
        }
        if q >= 1.0 {
            return Some(self.max);
        }
        // The histogram answers by rank (the `ceil(q n)`-th value): ask for the rank of that
        // index, by a quantile half a value inside it, clear of floating-point edges.
        let n = self.count() as f64;
        let rank = ((n - 1.0) * q).round() + 1.0;
        let units = self.histogram.value_at_quantile((rank - 0.5) / n);
        let units = self.histogram.median_equivalent(units);
        Some((units as f64 / SCALE).clamp(self.min, self.max))
    }

    /// Adds `other`'s values to these (a minute from its seconds). Both must have the same
    /// precision: a coarse and a fine histogram do not add up.
    pub fn add(&mut self, other: &Percentiles) {
        if other.is_empty() {
            return;
        }
        let was_empty = self.is_empty();
        self.histogram
            .add(&other.histogram)
            .expect("histograms of one precision add up");
        if was_empty {
            (self.min, self.max) = (other.min, other.max);
        } else {
            self.min = self.min.min(other.min);
            self.max = self.max.max(other.max);
        }
        self.sum += other.sum;
    }

    /// Forgets every value, keeping the memory the histogram has grown to.
    pub fn reset(&mut self) {
        self.histogram.reset();
        (self.min, self.max, self.sum) = (0.0, 0.0, 0.0);
    }
}

impl FromIterator<f64> for Percentiles {
    fn from_iter<I: IntoIterator<Item = f64>>(values: I) -> Self {
        let mut percentiles = Self::new();
        values
            .into_iter()
            .for_each(|value| percentiles.record(value));
        percentiles
    }
}

impl Extend<f64> for Percentiles {
    fn extend<I: IntoIterator<Item = f64>>(&mut self, values: I) {
        values.into_iter().for_each(|value| self.record(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, truth: f64, within: f64) -> bool {
        (got / truth - 1.0).abs() <= within
    }

    #[test]
    fn percentiles_are_the_nearest_value_within_a_twentieth_of_a_percent() {
        let percentiles: Percentiles = (1..=1000).map(f64::from).collect();
        // Index round(999 q): 499.5 rounds to 500, the 501st value.
        for (q, truth) in [(0.5, 501.0), (0.9, 900.0), (0.99, 990.0), (0.999, 999.0)] {
            let got = percentiles.value_at(q).unwrap();
            assert!(close(got, truth, 0.0005), "p{q}: {got} vs {truth}");
        }
        // Of 100 values, p50 is the 51st, p99 the 99th: no interpolation.
        let hundred: Percentiles = (1..=100).map(|ms| f64::from(ms) / 100.0).collect();
        assert_eq!(hundred.value_at(0.5), Some(0.51));
        assert_eq!(hundred.value_at(0.99), Some(0.99));
        // Two values: the median is the upper one.
        let two: Percentiles = [1.0, 2.0].into_iter().collect();
        assert_eq!(two.value_at(0.5), Some(2.0));
        assert_eq!(percentiles.count(), 1000);
        assert_eq!(percentiles.sum(), 500_500.0);
    }

    #[test]
    fn the_extremes_and_a_single_value_are_exact() {
        let percentiles: Percentiles = [12.345, 999.999, 3.2].into_iter().collect();
        assert_eq!(percentiles.value_at(0.0), Some(3.2));
        assert_eq!(percentiles.value_at(1.0), Some(999.999));
        let one: Percentiles = [3.2].into_iter().collect();
        for q in [0.0, 0.5, 0.99, 1.0] {
            assert_eq!(one.value_at(q), Some(3.2));
        }
        assert_eq!(Percentiles::new().value_at(0.5), None);
    }

    #[test]
    fn values_are_kept_to_a_thousandth_of_their_unit() {
        let percentiles: Percentiles = [0.0014, 0.0016, 0.5].into_iter().collect();
        // 0.0014 and 0.0016 are 1 and 2 thousandths; the median is the second.
        assert_eq!(percentiles.value_at(0.5), Some(0.002));
    }

    #[test]
    fn zero_negative_and_not_a_number() {
        let mut percentiles = Percentiles::coarse();
        percentiles.record(3.2);
        percentiles.record(0.0);
        assert_eq!(percentiles.value_at(0.0), Some(0.0));
        assert_eq!(percentiles.value_at(0.5), Some(3.2));
        percentiles.record(f64::NAN);
        percentiles.record(f64::INFINITY);
        assert_eq!(percentiles.count(), 2);
        percentiles.record(-5.0);
        assert_eq!(
            (percentiles.count(), percentiles.value_at(0.0)),
            (3, Some(0.0))
        );
        assert!(
            (percentiles.sum() + 1.8).abs() < 1e-9,
            "{}",
            percentiles.sum()
        );
    }

    #[test]
    fn a_coarse_histogram_is_within_a_thirtieth() {
        let mut percentiles = Percentiles::coarse();
        percentiles.extend((1..=1000).map(f64::from));
        for (q, truth) in [(0.5, 501.0), (0.95, 950.0), (0.99, 990.0)] {
            let got = percentiles.value_at(q).unwrap();
            assert!(close(got, truth, 0.032), "p{q}: {got} vs {truth}");
        }
    }

    #[test]
    fn seconds_add_up_to_a_minute_and_a_reset_forgets() {
        let mut minute = Percentiles::coarse();
        let mut second = Percentiles::coarse();
        second.extend([5.0, 7.0]);
        minute.add(&second);
        second.reset();
        assert!(second.is_empty());
        assert_eq!(second.value_at(0.5), None);
        second.record(100.0);
        minute.add(&second);
        minute.add(&Percentiles::coarse());
        assert_eq!(
            (
                minute.count(),
                minute.sum(),
                minute.value_at(0.0),
                minute.value_at(1.0)
            ),
            (3, 112.0, Some(5.0), Some(100.0))
        );
    }

    #[test]
    fn huge_values_saturate_instead_of_failing() {
        let percentiles: Percentiles = [1e30, 1.0].into_iter().collect();
        assert_eq!(percentiles.count(), 2);
        assert_eq!(percentiles.value_at(1.0), Some(1e30));
    }
}
