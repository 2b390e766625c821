//! Logging for every function.
//!
//! Lambda's advanced logging controls set `AWS_LAMBDA_LOG_FORMAT=JSON` and
//! `AWS_LAMBDA_LOG_LEVEL`; the subscriber honours both (and `RUST_LOG` locally), so JSON logs
//! in the cloud and readable lines on a terminal come from one call.
//!
//! In production (`APP_ENV=prod`) nothing more verbose than INFO is ever logged, whatever the
//! variables ask: at DEBUG and TRACE the AWS SDK logs whole requests and responses, tokens
//! and the users' data included. The template refuses such a `LogLevel` for prod too; this
//! holds if someone sets the variable by hand.

use lambda_runtime::tracing::subscriber::{
    self,
    filter::{EnvFilter, LevelFilter},
};
use std::io::IsTerminal as _;
use std::str::FromStr;

/// Installs the global subscriber. Call once, first thing in `main`.
pub fn init() {
    let production = std::env::var("APP_ENV").is_ok_and(|env| env == "prod");
    let requested = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .ok();
    let level = log_level(requested.as_deref(), production);
    let filter = EnvFilter::builder().with_default_directive(level.into());
    // Locally RUST_LOG may hold per-module directives; in production only the capped level.
    let filter = if production {
        filter.parse_lossy("")
    } else {
        filter.from_env_lossy()
    };
    // Colours only on a terminal: CloudWatch (and the local runner's log) would keep the
    // escape codes as text, and writing them costs on every span and line.
    let collector = subscriber::fmt()
        .with_target(false)
        .without_time()
        .with_ansi(std::io::stdout().is_terminal())
        .with_env_filter(filter);
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    if json {
        collector.json().init();
    } else {
        collector.init();
    }
}

/// The level to log at: the requested one (INFO when absent or unreadable), never more
/// verbose than INFO in production.
fn log_level(requested: Option<&str>, production: bool) -> LevelFilter {
    let level = match requested {
        // Lambda's levels end with FATAL, which `tracing` does not have.
        Some(level) if level.eq_ignore_ascii_case("fatal") => LevelFilter::ERROR,
        Some(level) => LevelFilter::from_str(level).unwrap_or(LevelFilter::INFO),
        None => LevelFilter::INFO,
    };
    if production {
        level.min(LevelFilter::INFO)
    } else {
        level
    }
}

/// Ends a cold start that cannot complete: the message names what is wrong, and the process
/// exits non-zero so that Lambda reports an init error instead of serving requests.
pub fn fail_cold_start(err: &dyn std::error::Error) -> ! {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    tracing::error!(error = %message, "cold start failed");
    eprintln!("cold start failed: {message}");
    std::process::exit(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_logs_at_most_info() {
        assert_eq!(log_level(Some("TRACE"), true), LevelFilter::INFO);
        assert_eq!(log_level(Some("debug"), true), LevelFilter::INFO);
        assert_eq!(log_level(Some("WARN"), true), LevelFilter::WARN);
        assert_eq!(log_level(Some("ERROR"), true), LevelFilter::ERROR);
        assert_eq!(log_level(Some("FATAL"), true), LevelFilter::ERROR);
    }

    #[test]
    fn elsewhere_the_requested_level_holds_and_info_is_the_default() {
        assert_eq!(log_level(Some("TRACE"), false), LevelFilter::TRACE);
        assert_eq!(log_level(Some("debug"), false), LevelFilter::DEBUG);
        assert_eq!(log_level(None, false), LevelFilter::INFO);
        assert_eq!(log_level(Some("loud"), false), LevelFilter::INFO);
    }
}
