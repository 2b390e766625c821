//! The limits on following against abuse (see [`super`]): the per-user rate in fixed
//! one-minute windows ([`Attempt`], counted by the graph port) and the cap on followings.

use super::FollowError;
use crate::config::{ConfigError, Env};
use crate::ids::UserId;
use std::num::NonZeroU32;
use time::OffsetDateTime;

/// The length of one window of the follow rate limit.
pub const RATE_WINDOW_SECONDS: i64 = 60;

/// How long a window's item is kept after the window ended. Nothing reads a past window (the
/// next one is another item), so this only bounds storage; DynamoDB's TTL deletes it later.
const RATE_ITEM_TTL_SECONDS: i64 = 60;

/// The limits on following, read from the configuration at cold start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowLimits {
    /// `FOLLOW_RATE_PER_MINUTE`: follow and unfollow attempts per user and minute, together.
    pub rate_per_minute: NonZeroU32,
    /// `MAX_FOLLOWING`: how many users one account may follow.
    pub max_following: NonZeroU32,
}

impl FollowLimits {
    /// The defaults when the variables are unset, the template's production defaults: far
    /// above what a person clicks (one follow every two seconds, for a minute on end), and
    /// the classic cap of 5,000 followings.
    pub const DEFAULT: Self = Self {
        rate_per_minute: NonZeroU32::new(30).unwrap(),
        max_following: NonZeroU32::new(5_000).unwrap(),
    };

    /// `FOLLOW_RATE_PER_MINUTE` and `MAX_FOLLOWING`, each a whole number of at least 1.
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        Ok(Self {
            rate_per_minute: env
                .parsed_or("FOLLOW_RATE_PER_MINUTE", Self::DEFAULT.rate_per_minute)?,
            max_following: env.parsed_or("MAX_FOLLOWING", Self::DEFAULT.max_following)?,
        })
    }
}

impl Default for FollowLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One follow or unfollow attempt, to be counted in its user's current window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    pub user: UserId,
    /// Epoch seconds at which the window began: a multiple of [`RATE_WINDOW_SECONDS`], by
    /// the clock of the function that counts.
    pub window_start: i64,
    /// How many attempts the window admits.
    pub limit: u32,
    /// Epoch seconds after which the window's item may be deleted.
    pub expires_at: i64,
}

impl Attempt {
    pub fn new(user: &UserId, limits: &FollowLimits, now: OffsetDateTime) -> Self {
        let seconds = now.unix_timestamp();
        let window_start = seconds - seconds.rem_euclid(RATE_WINDOW_SECONDS);
        Self {
            user: user.clone(),
            window_start,
            limit: limits.rate_per_minute.get(),
            expires_at: window_start + RATE_WINDOW_SECONDS + RATE_ITEM_TTL_SECONDS,
        }
    }

    /// Whole seconds from `now` until the next window opens (at least 1).
    pub(super) fn retry_after(&self, now: OffsetDateTime) -> i64 {
        (self.window_start + RATE_WINDOW_SECONDS - now.unix_timestamp()).max(1)
    }

    pub(super) fn limited(&self, now: OffsetDateTime) -> FollowError {
        FollowError::RateLimited {
            limit: self.limit,
            retry_after_seconds: self.retry_after(now),
        }
    }
}

/// Whether an attempt was counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// Counted: the window had room for it.
    Admitted,
    /// The window is full; nothing was written.
    Limited,
}

#[cfg(test)]
impl FollowLimits {
    pub(crate) fn of(rate_per_minute: u32, max_following: u32) -> Self {
        Self {
            rate_per_minute: NonZeroU32::new(rate_per_minute).unwrap(),
            max_following: NonZeroU32::new(max_following).unwrap(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-11-30 18:00:00.5 UTC);
    const LIMITS: FollowLimits = FollowLimits::DEFAULT;

    fn id(raw: &str) -> UserId {
        UserId::parse(raw).unwrap()
    }

    fn limits(rate_per_minute: u32, max_following: u32) -> FollowLimits {
        FollowLimits::of(rate_per_minute, max_following)
    }

    #[test]
    fn an_attempt_falls_in_the_minute_of_its_clock_and_says_when_the_next_one_opens() {
        let attempt = Attempt::new(&id("ada"), &limits(7, 10), NOW);
        let minute = datetime!(2026-11-30 18:00:00 UTC).unix_timestamp();
        assert_eq!(attempt.window_start, minute);
        assert_eq!(attempt.limit, 7);
        assert_eq!(attempt.expires_at, minute + 120);
        let late = datetime!(2026-11-30 18:00:59.9 UTC);
        assert_eq!(Attempt::new(&id("ada"), &LIMITS, late).window_start, minute);
        assert_eq!(
            attempt.limited(late).to_string(),
            "too many follows and unfollows: at most 7 a minute; try again in 1 s"
        );
        assert_eq!(
            Attempt::new(
                &id("ada"),
                &LIMITS,
                late + time::Duration::milliseconds(100)
            )
            .window_start,
            minute + 60
        );
    }

    #[test]
    fn the_limits_come_from_the_environment_with_production_defaults() {
        assert_eq!(
            FollowLimits::from_env(&Env::from_pairs([])).unwrap(),
            limits(30, 5_000)
        );
        let env = Env::from_pairs([("FOLLOW_RATE_PER_MINUTE", "120"), ("MAX_FOLLOWING", "3")]);
        assert_eq!(FollowLimits::from_env(&env).unwrap(), limits(120, 3));
        for name in ["FOLLOW_RATE_PER_MINUTE", "MAX_FOLLOWING"] {
            for bad in ["0", "-1", "many"] {
                let err = FollowLimits::from_env(&Env::from_pairs([(name, bad)])).unwrap_err();
                assert!(
                    matches!(&err, ConfigError::Invalid { name: n, .. } if n == name),
                    "{name}={bad}: {err:?}"
                );
            }
        }
    }
}
