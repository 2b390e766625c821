//! The template's `Parameters`: each one's value from the overrides, the local stack's
//! values ([`LOCAL_STACK`]) or its `Default`, checked against `AllowedValues` and
//! `MinValue`/`MaxValue`.

use std::collections::BTreeMap;

use yaml_serde::{Mapping, Value};

use super::error::Problem;
use super::yaml::scalar_string;

/// A parameter's value: a `CommaDelimitedList` or `List<...>` is a list.
#[derive(Clone, Debug)]
pub(super) enum Param {
    Scalar(String),
    List(Vec<String>),
}

/// What the local stack is, for the parameters a template declares (an override still wins,
/// and a template that does not declare one is not given it): a dev stack with the payment
/// sandbox, as `samconfig.toml`'s dev environment deploys. `EnvironmentName` has no `Default`
/// in the project template, so that a stack in AWS must say what it is; locally it is this.
pub const LOCAL_STACK: &[(&str, &str)] =
    &[("EnvironmentName", "dev"), ("EnablePaymentSandbox", "true")];

/// The template's parameters, from the overrides, [`LOCAL_STACK`] or their defaults, checked.
pub(super) fn parameters(
    file: &str,
    declared: &Mapping,
    overrides: &BTreeMap<String, String>,
) -> anyhow::Result<BTreeMap<String, Param>> {
    let fail =
        |at: &str, problem: Problem| anyhow::Error::new(problem).context(format!("{file}: {at}"));
    for name in overrides.keys() {
        if !declared.contains_key(name.as_str()) {
            return Err(fail(
                &format!("parameter override {name}"),
                Problem::UnknownOverride,
            ));
        }
    }
    let mut parameters = BTreeMap::new();
    for (name, decl) in declared {
        let name = scalar_string(name).unwrap_or_default();
        let at = format!("parameter {name}");
        let field = |key: &str| decl.get(key).and_then(scalar_string);
        let kind = field("Type").unwrap_or_else(|| "String".to_owned());
        let default = match decl.get("Default") {
            Some(Value::Sequence(items)) => Some(
                items
                    .iter()
                    .filter_map(scalar_string)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            Some(other) => scalar_string(other),
            None => None,
        };
        let local = LOCAL_STACK
            .iter()
            .find(|(local, _)| *local == name)
            .map(|(_, value)| (*value).to_owned());
        let raw = overrides
            .get(&name)
            .cloned()
            .or(local)
            .or(default)
            .ok_or_else(|| fail(&at, Problem::NoParameterValue))?;
        if kind.starts_with("AWS::SSM::Parameter") {
            return Err(fail(
                &at,
                Problem::NotLocal(format!(
                    "parameters of type {kind} are read from SSM, which the local runner does not emulate"
                )),
            ));
        }
        let is_list = kind == "CommaDelimitedList" || kind.starts_with("List<");
        let values: Vec<String> = if is_list {
            raw.split(',').map(|v| v.trim().to_owned()).collect()
        } else {
            vec![raw.clone()]
        };
        if let Some(Value::Sequence(allowed)) = decl.get("AllowedValues") {
            let allowed: Vec<String> = allowed.iter().filter_map(scalar_string).collect();
            if let Some(bad) = values.iter().find(|v| !allowed.contains(v)) {
                return Err(fail(
                    &at,
                    Problem::NotAllowed {
                        value: bad.clone(),
                        allowed,
                    },
                ));
            }
        }
        if kind == "Number" || kind == "List<Number>" {
            let bound = |key: &str| field(key).and_then(|v| v.parse::<f64>().ok());
            let (min, max) = (bound("MinValue"), bound("MaxValue"));
            for value in &values {
                let number: f64 = value
                    .parse()
                    .map_err(|_| fail(&at, Problem::NotANumber(value.clone())))?;
                if min.is_some_and(|min| number < min) || max.is_some_and(|max| number > max) {
                    return Err(fail(
                        &at,
                        Problem::OutOfRange {
                            value: number,
                            min: min.unwrap_or(f64::NEG_INFINITY),
                            max: max.unwrap_or(f64::INFINITY),
                        },
                    ));
                }
            }
        }
        let param = if is_list {
            Param::List(values)
        } else {
            Param::Scalar(raw)
        };
        parameters.insert(name, param);
    }
    Ok(parameters)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

    #[test]
    fn the_local_stack_is_dev_with_the_sandbox_unless_overridden() {
        let template = "Parameters:\n  EnvironmentName:\n    Type: String\n  \
                        EnablePaymentSandbox:\n    Type: String\n    Default: \"false\"\n";
        let at = |pairs: &[(&str, &str)]| {
            let declared: yaml_serde::Mapping = yaml_serde::from_str::<yaml_serde::Value>(template)
                .unwrap()["Parameters"]
                .as_mapping()
                .unwrap()
                .clone();
            let values = super::parameters("t", &declared, &overrides(pairs)).unwrap();
            ["EnvironmentName", "EnablePaymentSandbox"].map(|name| match &values[name] {
                super::Param::Scalar(value) => value.clone(),
                super::Param::List(_) => panic!("a scalar"),
            })
        };
        assert_eq!(at(&[]), ["dev", "true"]);
        assert_eq!(
            at(&[
                ("EnvironmentName", "prod"),
                ("EnablePaymentSandbox", "false")
            ]),
            ["prod", "false"]
        );
    }

    #[test]
    fn a_parameter_without_a_value_is_an_error() {
        let err = error_of(
            "Parameters:\n  Needed:\n    Type: String\nResources:\n  Q:\n    Type: AWS::SQS::Queue\n",
        );
        assert_eq!(
            err,
            "template.yaml: parameter Needed: no value: give the parameter a Default or pass a \
             parameter override"
        );
    }
}
