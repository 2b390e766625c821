//! Retrying what AWS turns away for a moment: capped exponential backoff with full jitter.
//!
//! DynamoDB cancels a transaction that includes an item another transaction holds
//! (`TransactionConflict`), refuses a single-item write on such an item
//! (`TransactionConflictException`), and throttles a hot partition; the SDK retries none of
//! the first two and gives up on throttling after its own three attempts. Every writer of a
//! hot item retries them here, inside the invocation, before a request answers `503 RETRY`
//! or a consumer fails its message.
//!
//! The pause before retry `n` is random in `0..=min(cap, base * 2^(n-1))` ("full jitter"):
//! writers that collided spread out instead of colliding again in step, and the ceiling
//! grows until the hot item has room.

use std::time::Duration;

/// How many attempts, and how long the pauses between them may grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Attempts in all, the first one included; at least 1.
    pub attempts: u32,
    /// The ceiling of the first pause.
    pub base: Duration,
    /// No pause is longer than this.
    pub cap: Duration,
}

impl Default for Backoff {
    /// Ten attempts whose pauses grow from at most 20 ms to at most 1 s: at most 3.3 s of
    /// pauses (1.6 s expected), well inside a 10 s invocation. In AWS a conflict lasts as long
    /// as the other transaction, tens of milliseconds, so one or two retries suffice; the
    /// rest is for a celebrity's item written by many batches at once, and for the local
    /// emulator, where a transaction is in flight for as long as it queues (docs/local-development.md, Local emulators).
    fn default() -> Self {
        Self {
            attempts: 10,
            base: Duration::from_millis(20),
            cap: Duration::from_secs(1),
        }
    }
}

impl Backoff {
    /// One attempt, no retry: for tests that want to see a conflict.
    pub const NONE: Self = Self {
        attempts: 1,
        base: Duration::ZERO,
        cap: Duration::ZERO,
    };

    /// The longest pause before retry `retry` (1 for the first retry).
    pub fn ceiling(&self, retry: u32) -> Duration {
        let doubling = 2u32.saturating_pow(retry.saturating_sub(1));
        self.base.saturating_mul(doubling).min(self.cap)
    }

    /// The pause before retry `retry`: random in `0..=ceiling(retry)`.
    pub fn delay(&self, retry: u32) -> Duration {
        let ceiling = self.ceiling(retry).as_micros() as u64;
        if ceiling == 0 {
            return Duration::ZERO;
        }
        // v4 UUIDs come from the OS's random source; no other random crate is needed.
        let random = uuid::Uuid::new_v4().as_u128() as u64;
        Duration::from_micros(random % (ceiling + 1))
    }

    /// Whether attempt `attempt` (1 for the first) may be followed by another.
    pub fn may_retry(&self, attempt: u32) -> bool {
        attempt < self.attempts
    }

    /// Sleeps before retry `retry`.
    pub async fn pause(&self, retry: u32) {
        self.pause_with(retry, tokio::time::sleep).await;
    }

    /// Pauses before retry `retry` with `sleep`: tests pass one that records what it is asked.
    async fn pause_with<F, Fut>(&self, retry: u32, sleep: F)
    where
        F: FnOnce(Duration) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let delay = self.delay(retry);
        if !delay.is_zero() {
            sleep(delay).await;
        }
    }
}

/// What one attempt of [`retrying`] came to.
pub enum Attempt<T, E> {
    Done(T),
    /// Refused for a moment (a conflict, throttling); `reason` says which, for the log.
    Transient {
        reason: &'static str,
        error: E,
    },
}

/// Runs `attempt` until it is done or `backoff` runs out, pausing between attempts; answers
/// the last transient error when it ran out. Each retry is logged with its reason, so the
/// logs tell how often a hot item was contended.
pub async fn retrying<T, E, F, Fut>(backoff: &Backoff, what: &str, attempt: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Attempt<T, E>>,
{
    retrying_with(backoff, what, attempt, tokio::time::sleep).await
}

/// [`retrying`], pausing with `sleep`.
async fn retrying_with<T, E, F, Fut, S, Slept>(
    backoff: &Backoff,
    what: &str,
    mut attempt: F,
    mut sleep: S,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Attempt<T, E>>,
    S: FnMut(Duration) -> Slept,
    Slept: std::future::Future<Output = ()>,
{
    let mut n = 1;
    loop {
        match attempt().await {
            Attempt::Done(value) => return Ok(value),
            Attempt::Transient { reason, error } => {
                if !backoff.may_retry(n) {
                    tracing::warn!(
                        what,
                        reason,
                        attempts = n,
                        "still refused after every retry"
                    );
                    return Err(error);
                }
                tracing::info!(what, reason, attempt = n, "refused for now; retrying");
                crate::emf::retried(reason);
                backoff.pause_with(n, &mut sleep).await;
                n += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceiling_doubles_up_to_the_cap() {
        let backoff = Backoff {
            attempts: 10,
            base: Duration::from_millis(20),
            cap: Duration::from_millis(100),
        };
        let ceilings: Vec<u128> = (1..=5).map(|n| backoff.ceiling(n).as_millis()).collect();
        assert_eq!(ceilings, [20, 40, 80, 100, 100]);
        assert_eq!(backoff.ceiling(60), Duration::from_millis(100));
    }

    #[test]
    fn delays_are_spread_over_the_whole_range_below_the_ceiling() {
        let backoff = Backoff {
            attempts: 10,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(1),
        };
        let delays: Vec<Duration> = (0..400).map(|_| backoff.delay(1)).collect();
        assert!(delays.iter().all(|d| *d <= Duration::from_millis(100)));
        // Full jitter: both halves of the range are used, not a fixed pause.
        assert!(delays.iter().any(|d| *d < Duration::from_millis(25)));
        assert!(delays.iter().any(|d| *d > Duration::from_millis(75)));
    }

    /// Runs [`retrying_with`] with a sleeper that records the pauses it is asked for instead
    /// of sleeping; `outcome(call)` is what call `call` (1 for the first) comes to.
    async fn retry_recording<T, E>(
        backoff: Backoff,
        outcome: impl Fn(u32) -> Attempt<T, E>,
    ) -> (Result<T, E>, u32, Vec<Duration>) {
        let mut calls = 0;
        let mut pauses = Vec::new();
        let result = retrying_with(
            &backoff,
            "test",
            || {
                calls += 1;
                std::future::ready(outcome(calls))
            },
            |delay| {
                pauses.push(delay);
                std::future::ready(())
            },
        )
        .await;
        (result, calls, pauses)
    }

    /// Pauses of up to a second: one drawn as zero (and so not slept) is a one in a million.
    const PAUSING: Backoff = Backoff {
        attempts: 5,
        base: Duration::from_secs(1),
        cap: Duration::from_secs(1),
    };

    #[tokio::test]
    async fn a_transient_refusal_is_retried_after_a_pause_until_it_passes() {
        let (result, calls, pauses) = retry_recording(PAUSING, |call| {
            if call < 4 {
                Attempt::Transient {
                    reason: "conflict",
                    error: "busy",
                }
            } else {
                Attempt::Done(call)
            }
        })
        .await;
        assert_eq!(result, Ok(4));
        assert_eq!(calls, 4);
        // One pause before each retry, none after the last call.
        assert_eq!(pauses.len(), 3, "{pauses:?}");
        assert!(
            pauses.iter().all(|pause| *pause <= PAUSING.cap),
            "{pauses:?}"
        );
    }

    #[tokio::test]
    async fn the_last_error_is_answered_when_the_attempts_run_out() {
        let backoff = Backoff {
            attempts: 3,
            ..PAUSING
        };
        let (result, calls, pauses) =
            retry_recording(backoff, |call| Attempt::<(), u32>::Transient {
                reason: "conflict",
                error: call,
            })
            .await;
        assert_eq!(result, Err(3));
        assert_eq!(calls, 3);
        assert_eq!(pauses.len(), 2, "{pauses:?}");
    }

    #[tokio::test]
    async fn pause_sleeps_the_real_clock() {
        let backoff = Backoff {
            attempts: 2,
            base: Duration::from_millis(30),
            cap: Duration::from_millis(30),
        };
        let mut slept = Duration::ZERO;
        for retry in 1..=20 {
            let started = std::time::Instant::now();
            backoff.pause(retry).await;
            slept += started.elapsed();
        }
        // Twenty pauses of 15 ms on average; a pause that sleeps nothing sums to about zero.
        assert!(slept >= Duration::from_millis(60), "{slept:?}");
    }
}
