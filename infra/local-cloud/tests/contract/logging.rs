//! Lambda's log-level filter against what the functions write: at every `LogLevel` the
//! template allows, the functions' metric lines and error lines reach CloudWatch Logs, and
//! the metrics land in the namespace the dashboard reads.

use crate::support::{project_model, yaml};
use app::{emf, telemetry};
use local_cloud::model::LogLevel;
use local_cloud::runtime::log_filter;

/// The template's `LogLevel` choices.
fn allowed_levels() -> Vec<String> {
    yaml("template.yaml")["Parameters"]["LogLevel"]["AllowedValues"]
        .as_sequence()
        .expect("LogLevel has AllowedValues")
        .iter()
        .map(|level| level.as_str().unwrap().to_owned())
        .collect()
}

/// A line as the functions write it ([`telemetry`], [`emf`]): a JSON object with a level and
/// an RFC 3339 timestamp.
fn line(level: &str) -> String {
    format!(
        r#"{{"level":"{level}","timestamp":"{}","message":"m","_aws":{{}}}}"#,
        telemetry::timestamp()
    )
}

#[test]
fn at_every_allowed_log_level_lambda_passes_the_metric_lines_and_the_errors() {
    let allowed = allowed_levels();
    assert!(allowed.iter().any(|level| level == "WARN"), "{allowed:?}");
    for level in &allowed {
        let model = project_model(&[("LogLevel", level)]);
        assert!(!model.functions.is_empty());
        for function in &model.functions {
            // Every function logs JSON, filtered at the parameter's level.
            assert_eq!(
                function.log_filter,
                LogLevel::parse(level),
                "{}",
                function.name
            );
        }
        let filter = LogLevel::parse(level);
        let metrics = line(telemetry::metric_line_level_for(Some(level)));
        assert!(
            log_filter::passes(metrics.as_bytes(), filter),
            "at {level} Lambda drops the metric lines: {metrics}"
        );
        assert!(
            log_filter::passes(line("ERROR").as_bytes(), filter),
            "at {level} Lambda drops the functions' errors"
        );
    }
}

#[test]
fn the_functions_write_metrics_in_the_namespace_the_dashboard_reads() {
    // The dashboard's rows name app::emf::NAMESPACE (contract test `dashboard`).
    for function in &project_model(&[]).functions {
        let variable = |name: &str| function.environment.get(name).map(String::as_str);
        assert_eq!(
            variable("POWERTOOLS_METRICS_NAMESPACE"),
            Some(emf::NAMESPACE),
            "{}",
            function.name
        );
        assert!(
            variable("POWERTOOLS_SERVICE_NAME").is_some_and(|name| !name.trim().is_empty()),
            "{}",
            function.name
        );
    }
}
