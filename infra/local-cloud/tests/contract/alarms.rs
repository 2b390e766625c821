//! The alarms of `template.yaml` as CloudWatch evaluates them: an alarm on metric math over
//! several Lambda metrics must still have a value in a minute where one of them published
//! nothing (Lambda sends `Errors` and `Throttles` only for minutes with invocations).

use crate::support::{entries, yaml};
use yaml_serde::Value;

#[test]
fn alarm_math_over_several_metrics_fills_missing_points() {
    let template = yaml("template.yaml");
    let mut checked = 0;
    for (id, resource) in entries(&template, "Resources") {
        if resource["Type"].as_str() != Some("AWS::CloudWatch::Alarm") {
            continue;
        }
        let Some(metrics) = resource["Properties"]["Metrics"].as_sequence() else {
            continue;
        };
        let stats = metrics
            .iter()
            .filter(|m| m.get("MetricStat").is_some())
            .count();
        for expression in metrics
            .iter()
            .filter_map(|metric| metric.get("Expression").and_then(Value::as_str))
        {
            if stats < 2 {
                continue;
            }
            checked += 1;
            let compact: String = expression.chars().filter(|c| !c.is_whitespace()).collect();
            assert!(
                compact.contains("FILL("),
                "{id}: `{expression}` over {stats} metrics has no value in a minute where one \
                 of them has none; fill the missing points (SUM(FILL(METRICS(), 0)))"
            );
        }
    }
    assert!(
        checked >= 2,
        "the consumer error and throttle alarms are metric math"
    );
}
