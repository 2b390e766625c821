//! The CloudWatch dashboard of `template.yaml` (the `Dashboard` resource): its body is the JSON
//! CloudWatch takes once `!Sub` has put the names in, it names only resources of the template,
//! it lays out the three sections the seeds watch, and its URL is an output.

use crate::support::{entries, yaml};
use app::emf;
use serde_json::Value as Json;
use std::collections::BTreeSet;
use yaml_serde::Value;

/// The body's text as written (a `!Sub` of a block scalar).
fn body_text(template: &Value) -> String {
    let (_, dashboard) = entries(template, "Resources")
        .into_iter()
        .find(|(_, resource)| resource["Type"] == "AWS::CloudWatch::Dashboard")
        .expect("the template has a dashboard");
    match &dashboard["Properties"]["DashboardBody"] {
        Value::Tagged(tagged) if tagged.tag == "Sub" => tagged
            .value
            .as_str()
            .expect("a !Sub of a string")
            .to_owned(),
        other => panic!("the body is not a !Sub of a string: {other:?}"),
    }
}

/// Every `${...}` of `text` with what it names, and the text with each replaced by `x`.
fn substituted(text: &str) -> (Vec<String>, String) {
    let mut names = Vec::new();
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').expect("a closed ${") + start;
        names.push(rest[start + 2..end].to_owned());
        out.push('x');
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    (names, out)
}

fn dashboard() -> (Vec<String>, Json) {
    let (names, text) = substituted(&body_text(&yaml("template.yaml")));
    let body =
        serde_json::from_str(&text).unwrap_or_else(|err| panic!("the body is not JSON: {err}"));
    (names, body)
}

#[test]
fn the_body_names_only_resources_of_the_template() {
    let template = yaml("template.yaml");
    let resources: BTreeSet<&str> = entries(&template, "Resources")
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    let (names, _) = dashboard();
    assert!(!names.is_empty());
    for name in names {
        let resource = name.split('.').next().unwrap();
        assert!(
            name == "AWS::Region" || resources.contains(resource),
            "the dashboard names {name}, which is not a resource of the template"
        );
    }
}

#[test]
fn the_widgets_fit_the_grid_and_every_chart_has_a_title_and_metrics() {
    let (_, body) = dashboard();
    let widgets = body["widgets"].as_array().expect("a widgets array");
    let mut cells = BTreeSet::new();
    for widget in widgets {
        let (x, y) = (widget["x"].as_u64().unwrap(), widget["y"].as_u64().unwrap());
        let (width, height) = (
            widget["width"].as_u64().unwrap(),
            widget["height"].as_u64().unwrap(),
        );
        assert!(x + width <= 24, "{widget}");
        for cell in (x..x + width).flat_map(|col| (y..y + height).map(move |row| (col, row))) {
            assert!(cells.insert(cell), "widgets overlap at {cell:?}: {widget}");
        }
        if widget["type"] == "metric" {
            let properties = &widget["properties"];
            assert!(properties["title"].as_str().is_some_and(|t| !t.is_empty()));
            assert_eq!(
                properties["region"], "x",
                "each chart reads the stack's region"
            );
            let metrics = properties["metrics"].as_array().unwrap();
            assert!(!metrics.is_empty(), "{widget}");
            for metric in metrics {
                let first = &metric[0];
                assert!(
                    first
                        .as_str()
                        .is_some_and(|ns| ns.starts_with("AWS/") || ns == emf::NAMESPACE)
                        || first["expression"].is_string(),
                    "{metric}"
                );
            }
        }
    }
}

#[test]
fn it_shows_the_follow_the_notification_path_and_the_sale_in_that_order() {
    let (names, body) = dashboard();
    let headers: Vec<&str> = body["widgets"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|widget| widget["properties"]["markdown"].as_str())
        .collect();
    assert_eq!(headers.len(), 3, "{headers:?}");
    for (header, section) in headers
        .iter()
        .zip(["Follow", "Notification path", "Flash sale"])
    {
        assert!(header.starts_with(&format!("## {section}")), "{header}");
    }
    // What the seeds watch: the follow and its latency, the notification lag and dead
    // letters, the detail reads, admissions and order lag.
    for watched in [
        "HttpApi",
        "FollowFunction",
        "OutboxRelayFunction",
        "NotificationQueue.QueueName",
        "NotificationConsumerFunction",
        "NotificationDeadLetterQueue.QueueName",
        "GetSaleFunction",
        "PlaceOrderFunction",
        "OrderQueue.QueueName",
        "OrderConsumerFunction",
        "RedisCache",
        "CommerceTable",
    ] {
        assert!(
            names.iter().any(|name| name == watched),
            "the dashboard shows no {watched}"
        );
    }
}

#[test]
fn its_url_is_an_output() {
    let template = yaml("template.yaml");
    let url = &template["Outputs"]["DashboardUrl"]["Value"];
    let Value::Tagged(tagged) = url else {
        panic!("DashboardUrl is not a !Sub: {url:?}")
    };
    let text = tagged.value.as_str().unwrap();
    assert!(text.contains("#dashboards:name=${Dashboard}"), "{text}");
    assert!(
        text.starts_with("https://${AWS::Region}.console."),
        "{text}"
    );
}

/// Every metric the functions write (`app::emf`), by name.
const APP_METRICS: [&str; 17] = [
    emf::name::COLD_START,
    emf::name::REQUESTS,
    emf::name::LATENCY,
    emf::name::BATCH_SIZE,
    emf::name::EVENT_LAG,
    emf::name::FAILED,
    emf::name::APPLIED,
    emf::name::DUPLICATE,
    emf::name::ORDERS,
    emf::name::PUBLISHED,
    emf::name::PUBLISH_FAILED,
    emf::name::UNITS_RELEASED,
    emf::name::STOCK_CAPPED,
    emf::name::STOCK_DRIFT,
    emf::name::RETRIES,
    emf::name::REFUNDS_DUE,
    emf::name::ADMIN_TOKENS_REFUSED,
];

#[test]
fn the_functions_metrics_it_shows_are_ones_they_write_with_their_dimensions() {
    let (_, body) = dashboard();
    let dimensions = [emf::FUNCTION_NAME, emf::OUTCOME, emf::REASON];
    let mut shown = BTreeSet::new();
    for widget in body["widgets"].as_array().unwrap() {
        for metric in widget["properties"]["metrics"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let row = metric.as_array().unwrap();
            if row[0] == emf::NAMESPACE {
                let name = row[1].as_str().unwrap();
                assert!(APP_METRICS.contains(&name), "no function writes {name}");
                // Name/value pairs after the metric's name, up to its options.
                let pairs: Vec<&str> = row[2..].iter().filter_map(Json::as_str).collect();
                for pair in pairs.chunks(2) {
                    assert!(
                        dimensions.contains(&pair[0]),
                        "dimension {}: {metric}",
                        pair[0]
                    );
                }
                assert_eq!(pairs[0], emf::FUNCTION_NAME, "{metric}");
                shown.insert(name.to_owned());
            } else if let Some(expression) = row[0]["expression"].as_str()
                && expression.contains(&format!("{{{},", emf::NAMESPACE))
            {
                let name = expression
                    .split("MetricName=\"")
                    .nth(1)
                    .and_then(|rest| rest.split('"').next())
                    .unwrap_or_else(|| panic!("a search without a metric name: {expression}"));
                assert!(APP_METRICS.contains(&name), "no function writes {name}");
                shown.insert(name.to_owned());
            }
        }
    }
    // The seeds' signals from the functions themselves: outcomes and elapsed time, lag,
    // consumer throughput, admissions, orders, stock drift, conflicts.
    for watched in [
        emf::name::REQUESTS,
        emf::name::LATENCY,
        emf::name::EVENT_LAG,
        emf::name::APPLIED,
        emf::name::FAILED,
        emf::name::ORDERS,
        emf::name::STOCK_DRIFT,
        emf::name::RETRIES,
    ] {
        assert!(shown.contains(watched), "the dashboard shows no {watched}");
    }
}
