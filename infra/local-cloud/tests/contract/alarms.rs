//! The alarms of `template.yaml` as CloudWatch evaluates them: an alarm on metric math over
//! several Lambda metrics must still have a value in a minute where one of them published
//! nothing (Lambda sends `Errors` and `Throttles` only for minutes with invocations).

use crate::support::{entries, yaml};
use app::emf;
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

/// An alarm on the functions' own metrics must name one they write, with the function
/// dimension every metric has, or it never has a value to fire on.
#[test]
fn alarms_on_the_projects_metrics_name_metrics_the_code_writes() {
    let template = yaml("template.yaml");
    let written = [
        emf::name::ADMIN_TOKENS_REFUSED,
        emf::name::ORDERS_REFUSED,
        emf::name::OLDEST_REFUND_DUE_AGE,
        emf::name::REFUNDS_OUTSTANDING,
        emf::name::REFUNDS_DUE,
        emf::name::REFUNDS_SETTLED,
        emf::name::STOCK_CAPPED,
        emf::name::UNITS_RELEASED,
        emf::name::FAILED,
        emf::name::REQUESTS,
    ];
    let mut checked = Vec::new();
    for (id, resource) in entries(&template, "Resources") {
        let properties = &resource["Properties"];
        if resource["Type"].as_str() != Some("AWS::CloudWatch::Alarm")
            || properties["Namespace"].as_str() != Some(emf::NAMESPACE)
        {
            continue;
        }
        let metric = properties["MetricName"].as_str().unwrap_or_default();
        assert!(written.contains(&metric), "{id}: {metric} is not written");
        let dimensions = properties["Dimensions"].as_sequence().expect("dimensions");
        assert!(
            dimensions
                .iter()
                .any(|d| d["Name"].as_str() == Some(emf::FUNCTION_NAME)),
            "{id} has no {} dimension",
            emf::FUNCTION_NAME
        );
        checked.push(id);
    }
    assert!(checked.contains(&"RefundOverdueAlarm"), "{checked:?}");
    let refund = &entries(&template, "Resources")
        .into_iter()
        .find(|(id, _)| *id == "RefundOverdueAlarm")
        .expect("the refund alarm")
        .1["Properties"];
    // Reconciliation writes the age every minute, 0 once nothing is due: the alarm follows
    // the refunds' state, and an idle minute does not keep it firing.
    assert_eq!(refund["MetricName"], emf::name::OLDEST_REFUND_DUE_AGE);
    assert_eq!(refund["Statistic"], "Maximum");
    assert_eq!(refund["TreatMissingData"], "notBreaching");
    assert!(
        refund["OKActions"]
            .as_sequence()
            .is_some_and(|a| !a.is_empty())
    );
}
