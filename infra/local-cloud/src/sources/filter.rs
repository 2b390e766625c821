//! Lambda's event filtering (`FilterCriteria`): which records a function gets at all.
//!
//! A pattern is an object whose keys must be present in the record; an object value
//! descends, an array value lists what the leaf may be: a literal, or one of `prefix`,
//! `suffix`, `equals-ignore-case`, `anything-but`, `numeric` and `exists`. A record passes
//! when it matches any of the filters.

use serde_json::Value;

/// Whether `record` passes: no filters pass everything.
pub fn matches_any(filters: &[Value], record: &Value) -> bool {
    filters.is_empty() || filters.iter().any(|pattern| matches(pattern, record))
}

fn matches(pattern: &Value, record: &Value) -> bool {
    let Value::Object(fields) = pattern else {
        return false;
    };
    fields.iter().all(|(key, expected)| {
        let actual = record.get(key);
        match expected {
            Value::Object(_) => actual.is_some_and(|actual| matches(expected, actual)),
            Value::Array(options) => options.iter().any(|option| leaf(option, actual)),
            _ => false,
        }
    })
}

fn leaf(option: &Value, actual: Option<&Value>) -> bool {
    // A record's array matches when any of its elements does.
    if let Some(Value::Array(items)) = actual
        && !matches!(option, Value::Object(op) if op.contains_key("exists"))
    {
        return items.iter().any(|item| leaf(option, Some(item)));
    }
    match option {
        Value::Object(operator) => operator
            .iter()
            .all(|(name, argument)| apply(name, argument, actual)),
        literal => actual.is_some_and(|actual| equal(literal, actual)),
    }
}

fn equal(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => expected == actual,
    }
}

fn apply(operator: &str, argument: &Value, actual: Option<&Value>) -> bool {
    let text = actual.and_then(Value::as_str);
    match operator {
        "exists" => argument.as_bool() == Some(actual.is_some_and(|v| !v.is_null())),
        "prefix" => match (argument, text) {
            (Value::String(prefix), Some(text)) => text.starts_with(prefix.as_str()),
            _ => false,
        },
        "suffix" => match (argument, text) {
            (Value::String(suffix), Some(text)) => text.ends_with(suffix.as_str()),
            _ => false,
        },
        "equals-ignore-case" => match (argument, text) {
            (Value::String(expected), Some(text)) => expected.eq_ignore_ascii_case(text),
            _ => false,
        },
        "anything-but" => {
            let Some(actual) = actual else { return false };
            match argument {
                Value::Array(values) => !values.iter().any(|value| equal(value, actual)),
                Value::Object(_) => !leaf(argument, Some(actual)),
                value => !equal(value, actual),
            }
        }
        "numeric" => {
            let Some(number) = actual.and_then(Value::as_f64) else {
                return false;
            };
            let Value::Array(terms) = argument else {
                return false;
            };
            terms.chunks(2).all(|pair| match pair {
                [Value::String(op), bound] => {
                    bound.as_f64().is_some_and(|bound| match op.as_str() {
                        "=" => number == bound,
                        "<" => number < bound,
                        "<=" => number <= bound,
                        ">" => number > bound,
                        ">=" => number >= bound,
                        _ => false,
                    })
                }
                _ => false,
            })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(kind: &str) -> Value {
        json!({"eventName": "INSERT", "dynamodb": {"NewImage": {"kind": {"S": kind}, "n": {"N": "5"}}}})
    }

    #[test]
    fn a_literal_must_equal_the_leaf() {
        let filter = json!({"dynamodb": {"NewImage": {"kind": {"S": ["keep"]}}}});
        assert!(matches_any(std::slice::from_ref(&filter), &record("keep")));
        assert!(!matches_any(&[filter], &record("drop")));
    }

    #[test]
    fn no_filters_pass_everything_and_any_filter_suffices() {
        assert!(matches_any(&[], &record("x")));
        let filters = [
            json!({"eventName": ["REMOVE"]}),
            json!({"eventName": ["INSERT"]}),
        ];
        assert!(matches_any(&filters, &record("x")));
    }

    #[test]
    fn operators() {
        let r = record("keep-me");
        let pass = |pattern: Value| matches_any(&[pattern], &r);
        assert!(pass(
            json!({"dynamodb": {"NewImage": {"kind": {"S": [{"prefix": "keep"}]}}}})
        ));
        assert!(pass(
            json!({"dynamodb": {"NewImage": {"kind": {"S": [{"suffix": "-me"}]}}}})
        ));
        assert!(pass(
            json!({"eventName": [{"anything-but": ["REMOVE", "MODIFY"]}]})
        ));
        assert!(!pass(json!({"eventName": [{"anything-but": "INSERT"}]})));
        assert!(pass(
            json!({"eventName": [{"equals-ignore-case": "insert"}]})
        ));
        assert!(pass(json!({"dynamodb": {"OldImage": [{"exists": false}]}})));
        assert!(!pass(
            json!({"dynamodb": {"NewImage": [{"exists": false}]}})
        ));
        assert!(!pass(json!({"missing": ["x"]})));
    }

    #[test]
    fn numeric_ranges() {
        let r = json!({"n": 5});
        assert!(matches_any(
            &[json!({"n": [{"numeric": [">", 0, "<=", 5]}]})],
            &r
        ));
        assert!(!matches_any(&[json!({"n": [{"numeric": [">", 5]}]})], &r));
    }
}
