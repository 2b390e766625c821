//! Log-scaled histograms: a value's bucket is a quarter of an octave wide, so a percentile
//! read from the buckets (interpolated within its bucket) is within about 10% of the true
//! one, in fixed memory and with no sorting. The observed minimum and maximum bound every answer and are the answers at the
//! extremes, so a single value (or identical values) comes back exact.

/// Buckets per doubling of the value.
const PER_OCTAVE: f64 = 4.0;

/// The bucket of a positive value; `i32::MIN` for zero, negative or not-a-number values.
pub(crate) fn bucket(value: f64) -> i32 {
    if value > 0.0 && value.is_finite() {
        (value.log2() * PER_OCTAVE).floor() as i32
    } else {
        i32::MIN
    }
}

/// The value of the `within`-th (from 0) of the `of` values in a bucket, assuming they are
/// spread evenly (geometrically) across its range.
fn interpolate(bucket: i32, within: u64, of: u64) -> f64 {
    if bucket == i32::MIN {
        return 0.0;
    }
    let fraction = (within as f64 + 0.5) / of as f64;
    ((f64::from(bucket) + fraction) / PER_OCTAVE).exp2()
}

/// The `q` quantile (0..=1) of `count` values whose buckets and counts, in increasing bucket
/// order, are `buckets`; clamped to `[min, max]`.
pub(crate) fn quantile(
    buckets: impl IntoIterator<Item = (i32, u64)>,
    count: u64,
    q: f64,
    min: f64,
    max: f64,
) -> f64 {
    if count == 0 {
        return 0.0;
    }
    let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
    // The extremes are known exactly.
    if rank == count {
        return max;
    }
    if rank == 1 {
        return min;
    }
    let mut seen = 0;
    for (bucket, n) in buckets {
        if seen + n >= rank {
            return interpolate(bucket, rank - seen - 1, n).clamp(min, max);
        }
        seen += n;
    }
    max
}

/// A histogram of arbitrary values (a function's own metric in one second): sparse, sorted
/// `(bucket, count)` pairs, a few dozen at most in practice.
#[derive(Default, Debug)]
pub(crate) struct Sparse {
    buckets: Vec<(i32, u64)>,
    pub(crate) count: u64,
    pub(crate) sum: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
}

impl Sparse {
    pub(crate) fn add(&mut self, value: f64) {
        if !value.is_finite() {
            return;
        }
        let bucket = bucket(value);
        match self.buckets.binary_search_by_key(&bucket, |(b, _)| *b) {
            Ok(i) => self.buckets[i].1 += 1,
            Err(i) => self.buckets.insert(i, (bucket, 1)),
        }
        if self.count == 0 {
            (self.min, self.max) = (value, value);
        } else {
            self.min = self.min.min(value);
            self.max = self.max.max(value);
        }
        self.count += 1;
        self.sum += value;
    }

    pub(crate) fn quantile(&self, q: f64) -> f64 {
        quantile(
            self.buckets.iter().copied(),
            self.count,
            q,
            self.min,
            self.max,
        )
    }

    pub(crate) fn clear(&mut self) {
        self.buckets.clear();
        self.count = 0;
        self.sum = 0.0;
        self.min = 0.0;
        self.max = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_within_a_bucket_of_the_truth() {
        let mut histogram = Sparse::default();
        for value in 1..=1000 {
            histogram.add(f64::from(value));
        }
        for (q, truth) in [(0.5, 500.0), (0.95, 950.0), (0.99, 990.0)] {
            let got = histogram.quantile(q);
            assert!((got / truth - 1.0).abs() < 0.1, "p{q}: {got} vs {truth}");
        }
        assert_eq!(histogram.count, 1000);
        assert_eq!(histogram.sum, 500_500.0);
    }

    #[test]
    fn one_value_comes_back_exact_and_zero_is_kept() {
        let mut histogram = Sparse::default();
        histogram.add(3.2);
        assert_eq!(histogram.quantile(0.99), 3.2);
        histogram.add(0.0);
        assert_eq!(histogram.quantile(0.5), 0.0);
        assert_eq!(histogram.quantile(1.0), 3.2);
        histogram.add(f64::NAN);
        assert_eq!(histogram.count, 2);
    }
}
