//! Configuration read from the environment once, at cold start.
//!
//! A function that is missing a variable, or has a malformed one, must stop before it serves
//! anything, with a message that names the variable. Lookups go through [`Env`] so that tests
//! can give a map instead of mutating the process environment.

use std::collections::HashMap;
use std::fmt::Display;
use std::str::FromStr;

/// Why the configuration could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("missing environment variable {name}")]
    Missing { name: String },
    #[error("environment variable {name} is invalid: {reason}")]
    Invalid { name: String, reason: String },
}

type Lookup = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Where configuration values come from.
pub struct Env {
    lookup: Lookup,
}

impl Env {
    /// The process environment.
    pub fn process() -> Self {
        Self {
            lookup: Box::new(|name| std::env::var(name).ok()),
        }
    }

    /// A fixed set of values, for tests.
    pub fn from_pairs<const N: usize>(pairs: [(&str, &str); N]) -> Self {
        let map: HashMap<String, String> = pairs
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Self {
            lookup: Box::new(move |name| map.get(name).cloned()),
        }
    }

    /// A value that must be present and non-empty.
    pub fn required(&self, name: &str) -> Result<String, ConfigError> {
        match (self.lookup)(name) {
            Some(value) if !value.trim().is_empty() => Ok(value),
            _ => Err(ConfigError::Missing {
                name: name.to_owned(),
            }),
        }
    }

    /// A value that may be absent; an empty value counts as absent.
    pub fn optional(&self, name: &str) -> Option<String> {
        (self.lookup)(name).filter(|value| !value.trim().is_empty())
    }

    /// A value parsed with [`FromStr`], or `default` when absent.
    pub fn parsed_or<T>(&self, name: &str, default: T) -> Result<T, ConfigError>
    where
        T: FromStr,
        T::Err: Display,
    {
        match self.optional(name) {
            None => Ok(default),
            Some(raw) => raw
                .trim()
                .parse()
                .map_err(|err: T::Err| ConfigError::Invalid {
                    name: name.to_owned(),
                    reason: err.to_string(),
                }),
        }
    }

    /// A `redis://` or `rediss://` URL.
    pub fn redis_url(&self, name: &str) -> Result<String, ConfigError> {
        let url = self.required(name)?;
        if url.starts_with("redis://") || url.starts_with("rediss://") {
            Ok(url)
        } else {
            Err(ConfigError::Invalid {
                name: name.to_owned(),
                reason: "expected a redis:// or rediss:// URL".to_owned(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_variable_is_named() {
        let env = Env::from_pairs([("OTHER", "x")]);
        let err = env.required("SOCIAL_TABLE").unwrap_err();
        assert_eq!(err.to_string(), "missing environment variable SOCIAL_TABLE");
    }

    #[test]
    fn an_empty_variable_counts_as_missing() {
        let env = Env::from_pairs([("SOCIAL_TABLE", "  ")]);
        assert!(matches!(
            env.required("SOCIAL_TABLE"),
            Err(ConfigError::Missing { name }) if name == "SOCIAL_TABLE"
        ));
    }

    #[test]
    fn a_malformed_number_is_named_with_the_reason() {
        let env = Env::from_pairs([("PAYMENT_WINDOW_SECONDS", "soon")]);
        let err = env.parsed_or("PAYMENT_WINDOW_SECONDS", 900u32).unwrap_err();
        assert_eq!(
            err.to_string(),
            "environment variable PAYMENT_WINDOW_SECONDS is invalid: invalid digit found in string"
        );
    }

    #[test]
    fn an_absent_optional_number_takes_its_default() {
        let env = Env::from_pairs([]);
        assert_eq!(env.parsed_or("PAYMENT_WINDOW_SECONDS", 900u32), Ok(900));
    }

    #[test]
    fn a_redis_url_must_have_a_redis_scheme() {
        let env = Env::from_pairs([("REDIS_URL", "127.0.0.1:6379")]);
        assert!(matches!(
            env.redis_url("REDIS_URL"),
            Err(ConfigError::Invalid { name, .. }) if name == "REDIS_URL"
        ));
        let env = Env::from_pairs([("REDIS_URL", "redis://127.0.0.1:6379")]);
        assert_eq!(
            env.redis_url("REDIS_URL").unwrap(),
            "redis://127.0.0.1:6379"
        );
    }
}
