//! Route throttling as API Gateway does it: one token bucket per route for all clients
//! together. The bucket holds at most `burst` tokens and starts full; it refills at
//! `rate_per_second`; each request takes a token or is turned away with 429 before any
//! authorizer or function runs.
//!
//! The clock is passed in (`admit(now)`), so that the bucket is tested without sleeping.

use crate::model::RouteThrottle;
use std::sync::Mutex;
use std::time::Instant;

const ROUNDING: f64 = 1e-9;

/// A route's bucket, shared by every connection.
#[derive(Debug)]
pub(crate) struct TokenBucket {
    limits: RouteThrottle,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    tokens: f64,
    refilled_at: Instant,
}

impl TokenBucket {
    /// A full bucket, as a route's is when the stage is deployed.
    pub(crate) fn new(limits: RouteThrottle, now: Instant) -> Self {
        Self {
            limits,
            state: Mutex::new(State {
                tokens: f64::from(limits.burst),
                refilled_at: now,
            }),
        }
    }

    /// Takes a token for a request arriving at `now`: `false` when there is none left, and
    /// the request is throttled. A `now` earlier than the last one refills nothing.
    pub(crate) fn admit(&self, now: Instant) -> bool {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let elapsed = now.saturating_duration_since(state.refilled_at);
        if !elapsed.is_zero() {
            let refill = elapsed.as_secs_f64() * self.limits.rate_per_second;
            state.tokens = (state.tokens + refill).min(f64::from(self.limits.burst));
            state.refilled_at = now;
        }
        // A token refilled in parts (a third, then two thirds) may sum to a hair under one.
        if state.tokens >= 1.0 - ROUNDING {
            state.tokens = (state.tokens - 1.0).max(0.0);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn bucket(rate_per_second: f64, burst: u32, start: Instant) -> TokenBucket {
        TokenBucket::new(RouteThrottle::new(rate_per_second, burst), start)
    }

    fn admitted(bucket: &TokenBucket, now: Instant, requests: usize) -> usize {
        (0..requests).filter(|_| bucket.admit(now)).count()
    }

    #[test]
    fn a_full_bucket_admits_its_burst_at_once_then_throttles() {
        let start = Instant::now();
        let b = bucket(10.0, 5, start);
        assert_eq!(admitted(&b, start, 8), 5);
        assert!(!b.admit(start));
    }

    #[test]
    fn tokens_come_back_at_the_rate() {
        let start = Instant::now();
        let b = bucket(10.0, 5, start);
        assert_eq!(admitted(&b, start, 5), 5);
        // 10 per second: one token every 100 ms.
        assert!(!b.admit(start + Duration::from_millis(99)));
        assert!(b.admit(start + Duration::from_millis(100)));
        assert!(!b.admit(start + Duration::from_millis(150)));
        assert_eq!(admitted(&b, start + Duration::from_millis(400), 10), 3);
    }

    #[test]
    fn the_bucket_never_holds_more_than_the_burst() {
        let start = Instant::now();
        let b = bucket(1_000.0, 3, start);
        assert_eq!(admitted(&b, start + Duration::from_secs(60), 10), 3);
    }

    #[test]
    fn a_steady_stream_at_the_rate_is_never_throttled() {
        let start = Instant::now();
        let b = bucket(50.0, 1, start);
        // One request every 20 ms for ten seconds: exactly the rate.
        for i in 0..500u32 {
            assert!(
                b.admit(start + Duration::from_millis(20) * i),
                "request {i}"
            );
        }
        // Twice the rate: half of them get through.
        let later = start + Duration::from_secs(20);
        let admitted = (0..1_000u32)
            .filter(|i| b.admit(later + Duration::from_millis(10) * *i))
            .count();
        assert!((499..=501).contains(&admitted), "{admitted}");
    }

    #[test]
    fn fractional_rates_and_zero_limits() {
        let start = Instant::now();
        let half = bucket(0.5, 1, start);
        assert!(half.admit(start));
        assert!(!half.admit(start + Duration::from_millis(1_999)));
        assert!(half.admit(start + Duration::from_secs(4)));

        // A burst of 0 admits nothing, whatever the rate: the route is switched off.
        let closed = bucket(100.0, 0, start);
        assert_eq!(admitted(&closed, start + Duration::from_secs(5), 10), 0);

        // A rate of 0: the burst once, never refilled.
        let once = bucket(0.0, 2, start);
        assert_eq!(admitted(&once, start + Duration::from_secs(3_600), 5), 2);
    }

    #[test]
    fn a_clock_going_backwards_refills_nothing() {
        let start = Instant::now() + Duration::from_secs(10);
        let b = bucket(10.0, 1, start);
        assert!(b.admit(start));
        assert!(!b.admit(start - Duration::from_secs(5)));
        assert!(!b.admit(start));
        assert!(b.admit(start + Duration::from_millis(100)));
    }
}
