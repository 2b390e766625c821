//! Lambda's log-level filter (its advanced logging controls), applied to a function's output
//! as Lambda applies it before CloudWatch Logs gets a line.
//!
//! With `LoggingConfig.LogFormat: JSON`, Lambda sends a line only when its level is at or
//! above `ApplicationLogLevel` (INFO by default). A line's level is the `level` of its JSON
//! object, in any case; a line that is not a JSON object, whose `level` is missing or is not
//! one of Lambda's six, or whose `timestamp` is not RFC 3339, is INFO. So at WARN every line
//! without a level is dropped: metric lines (EMF) included, and the metrics with them.
//! (Lambda accepts other common names for the timestamp's key; the functions here write
//! `timestamp`, and only that one is read.)

use crate::model::LogLevel;
use serde::Deserialize;
use std::borrow::Cow;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The level Lambda gives `line` (one line of a function's output, without its newline).
pub fn line_level(line: &[u8]) -> LogLevel {
    #[derive(Deserialize)]
    struct Levelled<'a> {
        #[serde(borrow, default)]
        level: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        timestamp: Option<Cow<'a, str>>,
    }
    let line = line.trim_ascii();
    if !line.starts_with(b"{") {
        return LogLevel::Info;
    }
    let Ok(levelled) = serde_json::from_slice::<Levelled>(line) else {
        return LogLevel::Info;
    };
    let stamped = levelled
        .timestamp
        .is_some_and(|at| OffsetDateTime::parse(&at, &Rfc3339).is_ok());
    match levelled.level {
        Some(level) if stamped => LogLevel::parse(&level).unwrap_or(LogLevel::Info),
        _ => LogLevel::Info,
    }
}

/// Whether Lambda, filtering at `filter`, sends `line` on to CloudWatch Logs.
pub fn passes(line: &[u8], filter: Option<LogLevel>) -> bool {
    filter.is_none_or(|filter| line_level(line) >= filter)
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: &str = "2026-12-03T06:19:01.123Z";

    fn line(level: &str) -> String {
        format!(r#"{{"level":"{level}","timestamp":"{AT}","message":"m"}}"#)
    }

    #[test]
    fn a_json_line_is_at_its_level_in_any_case() {
        assert_eq!(line_level(line("DEBUG").as_bytes()), LogLevel::Debug);
        assert_eq!(line_level(line("warn").as_bytes()), LogLevel::Warn);
        assert_eq!(line_level(line("Fatal").as_bytes()), LogLevel::Fatal);
    }

    #[test]
    fn a_line_without_a_valid_level_or_timestamp_is_info() {
        let emf = r#"{"_aws":{"Timestamp":1764742741123,"CloudWatchMetrics":[]},"Requests":1}"#;
        let no_time = r#"{"level":"ERROR","message":"m"}"#;
        let bad_time = r#"{"level":"ERROR","timestamp":"yesterday","message":"m"}"#;
        for info in [
            emf,
            no_time,
            bad_time,
            &line("WARNING"),
            &line("loud"),
            "cold start failed: missing environment variable SOCIAL_TABLE",
            "{ not json",
            r#"{"level":3,"timestamp":"2026-12-03T06:19:01Z"}"#,
        ] {
            assert_eq!(line_level(info.as_bytes()), LogLevel::Info, "{info}");
        }
    }

    #[test]
    fn at_warn_info_lines_and_lines_without_a_level_are_dropped() {
        let warn = Some(LogLevel::Warn);
        assert!(passes(line("WARN").as_bytes(), warn));
        assert!(passes(line("ERROR").as_bytes(), warn));
        assert!(!passes(line("INFO").as_bytes(), warn));
        assert!(!passes(line("DEBUG").as_bytes(), warn));
        assert!(!passes(br#"{"_aws":{},"Requests":1}"#, warn));
        assert!(!passes(b"plain text", warn));
        // At INFO (Lambda's default) DEBUG goes, and a line without a level stays.
        let info = Some(LogLevel::Info);
        assert!(!passes(line("DEBUG").as_bytes(), info));
        assert!(passes(b"plain text", info));
        assert!(passes(line("INFO").as_bytes(), info));
        // The text format is never filtered.
        assert!(passes(line("TRACE").as_bytes(), None));
    }
}
