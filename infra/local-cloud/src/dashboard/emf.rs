//! CloudWatch Embedded Metric Format: the metric lines a function prints on stdout, read
//! generically, as CloudWatch Logs extracts them. A line is EMF when its JSON object has
//! `_aws.CloudWatchMetrics`: each directive names a namespace, dimension sets and metrics;
//! every metric's value (a number, or an array of numbers) and every dimension's value are
//! members of the same object, at its top level.

use serde_json::{Map, Value};

/// One metric value (or values) of one dimension set, from one line.
#[derive(Debug, PartialEq)]
pub(crate) struct Sample {
    pub(crate) namespace: String,
    pub(crate) name: String,
    /// The declared unit (`Count`, `Milliseconds`, ...), `None` when the line gives none.
    pub(crate) unit: Option<String>,
    /// `(dimension, value)` in the order the dimension set lists them.
    pub(crate) dimensions: Vec<(String, String)>,
    pub(crate) values: Vec<f64>,
    /// The value came as an array: a distribution rather than a count.
    pub(crate) array: bool,
}

/// What a line of a function's output is.
#[derive(Debug, PartialEq)]
pub(crate) enum Line {
    /// Not EMF: not JSON, or JSON without `_aws.CloudWatchMetrics` (an ordinary log line).
    Other,
    /// EMF: the samples it carries, and what was wrong with the rest of it (a metric without
    /// a numeric value, a dimension without a value), as CloudWatch would skip them.
    Metrics {
        samples: Vec<Sample>,
        problems: Vec<String>,
    },
    /// It says it is EMF (`"_aws"` in a JSON-looking line) but cannot be read as such.
    Malformed(String),
}

/// Reads one line (without its newline). Cheap for the lines that are not EMF: no JSON is
/// parsed unless the line is an object mentioning `"_aws"`.
pub(crate) fn parse(line: &[u8]) -> Line {
    let trimmed = line.trim_ascii();
    if !trimmed.starts_with(b"{") || !contains(trimmed, b"\"_aws\"") {
        return Line::Other;
    }
    let root: Map<String, Value> = match serde_json::from_slice(trimmed) {
        Ok(root) => root,
        Err(error) => return Line::Malformed(format!("not a JSON object: {error}")),
    };
    let Some(aws) = root.get("_aws") else {
        // `"_aws"` was inside some string or nested object.
        return Line::Other;
    };
    let Some(directives) = aws.get("CloudWatchMetrics") else {
        return Line::Other;
    };
    let Some(directives) = directives.as_array() else {
        return Line::Malformed("_aws.CloudWatchMetrics is not an array".into());
    };
    let mut samples = Vec::new();
    let mut problems = Vec::new();
    for directive in directives {
        read_directive(&root, directive, &mut samples, &mut problems);
    }
    Line::Metrics { samples, problems }
}

fn read_directive(
    root: &Map<String, Value>,
    directive: &Value,
    samples: &mut Vec<Sample>,
    problems: &mut Vec<String>,
) {
    let namespace = directive
        .get("Namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(metrics) = directive.get("Metrics").and_then(Value::as_array) else {
        problems.push(format!("namespace {namespace:?}: no Metrics array"));
        return;
    };
    // No dimension sets: the metrics are published without dimensions.
    let no_dimensions = [Value::Array(Vec::new())];
    let sets = match directive.get("Dimensions").and_then(Value::as_array) {
        Some(sets) if !sets.is_empty() => sets.as_slice(),
        _ => &no_dimensions,
    };
    let mut dimension_sets = Vec::new();
    'sets: for set in sets {
        let Some(names) = set.as_array() else {
            problems.push(format!(
                "namespace {namespace:?}: a dimension set is not an array"
            ));
            continue;
        };
        let mut dimensions = Vec::with_capacity(names.len());
        for name in names {
            let Some(name) = name.as_str() else {
                problems.push(format!(
                    "namespace {namespace:?}: a dimension name is not a string"
                ));
                continue 'sets;
            };
            let value = match root.get(name) {
                Some(Value::String(value)) => value.clone(),
                Some(Value::Number(value)) => value.to_string(),
                Some(Value::Bool(value)) => value.to_string(),
                _ => {
                    problems.push(format!("dimension {name:?} has no value"));
                    continue 'sets;
                }
            };
            dimensions.push((name.to_owned(), value));
        }
        dimension_sets.push(dimensions);
    }
    for metric in metrics {
        let Some(name) = metric.get("Name").and_then(Value::as_str) else {
            problems.push(format!("namespace {namespace:?}: a metric without a Name"));
            continue;
        };
        let (values, array) = match root.get(name) {
            Some(Value::Number(number)) => (number.as_f64().into_iter().collect(), false),
            Some(Value::Array(items)) => {
                let values: Option<Vec<f64>> = items.iter().map(Value::as_f64).collect();
                match values {
                    Some(values) => (values, true),
                    None => {
                        problems.push(format!("metric {name:?}: not every value is a number"));
                        continue;
                    }
                }
            }
            Some(_) => {
                problems.push(format!("metric {name:?}: its value is not a number"));
                continue;
            }
            None => {
                problems.push(format!("metric {name:?} has no value"));
                continue;
            }
        };
        let unit = metric
            .get("Unit")
            .and_then(Value::as_str)
            .map(str::to_owned);
        for dimensions in &dimension_sets {
            samples.push(Sample {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                unit: unit.clone(),
                dimensions: dimensions.clone(),
                values: values.clone(),
                array,
            });
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    const COUNT: &str = r#"{"_aws":{"Timestamp":1764614400000,"CloudWatchMetrics":[{"Namespace":"FollowSeckill","Dimensions":[["FunctionName","Outcome"]],"Metrics":[{"Name":"Requests","Unit":"Count"}]}]},"FunctionName":"follow","Outcome":"200","Requests":1}"#;

    fn samples(line: &str) -> Vec<Sample> {
        match parse(line.as_bytes()) {
            Line::Metrics { samples, problems } => {
                assert!(problems.is_empty(), "{problems:?}");
                samples
            }
            other => panic!("not read as EMF: {other:?}"),
        }
    }

    fn dims(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_count_with_its_dimensions() {
        assert_eq!(
            samples(COUNT),
            [Sample {
                namespace: "FollowSeckill".into(),
                name: "Requests".into(),
                unit: Some("Count".into()),
                dimensions: dims(&[("FunctionName", "follow"), ("Outcome", "200")]),
                values: vec![1.0],
                array: false,
            }]
        );
    }

    #[test]
    fn an_array_is_a_distribution_and_every_dimension_set_gets_the_values() {
        let line = r#"{"_aws":{"Timestamp":1764614400000,"CloudWatchMetrics":[{"Namespace":"FollowSeckill","Dimensions":[["FunctionName"],[]],"Metrics":[{"Name":"Elapsed","Unit":"Milliseconds"},{"Name":"Requests"}]}]},"FunctionName":"order","Elapsed":[3.2,4.1],"Requests":2}"#;
        let got = samples(line);
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].name, "Elapsed");
        assert_eq!(got[0].values, [3.2, 4.1]);
        assert!(got[0].array);
        assert_eq!(got[0].unit.as_deref(), Some("Milliseconds"));
        assert_eq!(got[0].dimensions, dims(&[("FunctionName", "order")]));
        assert!(got[1].dimensions.is_empty());
        assert_eq!(got[2].name, "Requests");
        assert_eq!((got[2].unit.as_deref(), got[2].array), (None, false));
    }

    #[test]
    fn no_dimensions_at_all_is_one_series_without_dimensions() {
        let line = r#"{"_aws":{"CloudWatchMetrics":[{"Namespace":"N","Metrics":[{"Name":"Hits"}]}]},"Hits":3}"#;
        let got = samples(line);
        assert_eq!(got.len(), 1);
        assert!(got[0].dimensions.is_empty());
        assert_eq!(got[0].values, [3.0]);
    }

    #[test]
    fn missing_values_are_skipped_and_named() {
        let line = r#"{"_aws":{"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["FunctionName"],["Route"]],"Metrics":[{"Name":"Requests"},{"Name":"Elapsed"},{"Name":"Odd"},{"Unit":"Count"}]}]},"FunctionName":"follow","Requests":1,"Odd":"many"}"#;
        let Line::Metrics { samples, problems } = parse(line.as_bytes()) else {
            panic!("EMF");
        };
        // Requests for the FunctionName set only: Route has no value, Elapsed neither, Odd is
        // not a number, the last metric has no name.
        assert_eq!(samples.len(), 1);
        assert_eq!(samples[0].dimensions, dims(&[("FunctionName", "follow")]));
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("\"Route\"")));
        assert!(problems.iter().any(|p| p.contains("\"Elapsed\"")));
    }

    #[test]
    fn other_lines_are_not_metrics() {
        for line in [
            "",
            "plain text with _aws in it",
            r#"{"level":"INFO","message":"follow ok"}"#,
            r#"{"message":"the \"_aws\" key is documented"}"#,
            r#"{"_aws":{"Timestamp":1}}"#,
            "[1,2,3]",
        ] {
            assert_eq!(parse(line.as_bytes()), Line::Other, "{line}");
        }
    }

    #[test]
    fn malformed_emf_is_reported() {
        for line in [
            r#"{"_aws":{"CloudWatchMetrics":[{"Namespace":"N","Metrics":[{"Name":"Requests"}]}]},"Requests":1"#,
            r#"{"_aws":{"CloudWatchMetrics":{"Namespace":"N"}}}"#,
        ] {
            assert!(
                matches!(parse(line.as_bytes()), Line::Malformed(_)),
                "{line}"
            );
        }
    }
}
