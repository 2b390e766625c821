//! `Conditions`: each named condition evaluated once (a cycle is an error), with the condition
//! functions `!Equals`, `!Not`, `!And`, `!Or` and `!Condition`.

use yaml_serde::Value;

use super::error::{At, Problem};
use super::intrinsics::{Resolver, intrinsic, short};
use super::yaml::{describe, scalar_string};

impl Resolver<'_> {
    /// A named condition's value, evaluated once.
    pub(super) fn condition(&self, name: &str, at: &At) -> anyhow::Result<bool> {
        if let Some(&value) = self.evaluated.borrow().get(name) {
            return Ok(value);
        }
        let expression = self
            .conditions
            .get(name)
            .ok_or_else(|| self.fail(at, Problem::UnknownCondition(name.to_owned())))?;
        if !self.evaluating.borrow_mut().insert(name.to_owned()) {
            return Err(self.fail(at, Problem::ConditionCycle(name.to_owned())));
        }
        let value = self.evaluate(expression, &At::new(format!("condition {name}")));
        self.evaluating.borrow_mut().remove(name);
        let value = value?;
        self.evaluated.borrow_mut().insert(name.to_owned(), value);
        Ok(value)
    }

    pub(super) fn evaluate(&self, expression: &Value, at: &At) -> anyhow::Result<bool> {
        if let Some(Value::String(name)) = expression
            .as_mapping()
            .filter(|m| m.len() == 1)
            .and_then(|m| m.get("Condition"))
        {
            return self.condition(name, at);
        }
        let Some((name, arg)) = intrinsic(expression) else {
            return Err(self.fail(
                at,
                Problem::Type {
                    expected: "a condition function",
                    found: describe(expression),
                },
            ));
        };
        let operands = || {
            arg.as_sequence()
                .ok_or_else(|| self.malformed(&name, "a list", at))
        };
        match name.as_str() {
            "Condition" => {
                let target = scalar_string(arg)
                    .ok_or_else(|| self.malformed(&name, "a condition name", at))?;
                self.condition(&target, at)
            }
            "Fn::Equals" => match operands()?.as_slice() {
                [a, b] => {
                    let (a, b) = (self.resolve(a, at)?, self.resolve(b, at)?);
                    let text = |v: &Option<Value>| v.as_ref().and_then(scalar_string);
                    Ok(match (text(&a), text(&b)) {
                        (Some(a), Some(b)) => a == b,
                        _ => a == b,
                    })
                }
                _ => Err(self.malformed(&name, "two values", at)),
            },
            "Fn::Not" => match operands()?.as_slice() {
                [inner] => Ok(!self.evaluate(inner, at)?),
                _ => Err(self.malformed(&name, "one condition", at)),
            },
            "Fn::And" => {
                for inner in operands()? {
                    if !self.evaluate(inner, at)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            "Fn::Or" => {
                for inner in operands()? {
                    if self.evaluate(inner, at)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            other => Err(self.fail(at, Problem::UnsupportedIntrinsic(short(other)))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::load_str;
    use super::super::test_support::*;
    use std::time::Duration;

    #[test]
    fn conditions_if_join_select_and_resource_conditions_resolve() {
        let yaml = r#"
Parameters:
  Stage: {Type: String, Default: dev, AllowedValues: [dev, prod]}
  Zones: {Type: CommaDelimitedList, Default: "a, b, c"}
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
  IsDev: !Not [{Condition: IsProd}]
  Both: !And [!Condition IsDev, !Or [!Equals [x, x], !Condition IsProd]]
Resources:
  ProdOnlyQueue:
    Type: AWS::SQS::Queue
    Condition: IsProd
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn
      Timeout: !If [IsProd, 30, 5]
      Environment:
        Variables:
          MODE: !If [IsProd, !Ref ProdOnlyQueue, local]
          BOTH: !If [Both, "yes", "no"]
          JOINED: !Join ["-", [!Ref Stage, !Select [1, !Ref Zones], !Select [0, !Split [",", "p,q"]]]]
          MAYBE: !If [IsProd, on, !Ref AWS::NoValue]
"#;
        let dev = load_yaml(yaml).unwrap();
        assert!(dev.queues.is_empty(), "the queue's condition is false");
        let f = function(&dev, "Fn");
        assert_eq!(f.timeout, Duration::from_secs(5));
        assert_eq!(
            f.environment,
            env(&[("MODE", "local"), ("BOTH", "yes"), ("JOINED", "dev-b-p")])
        );

        let prod = load_str(
            "template.yaml",
            yaml,
            &overrides(&[("Stage", "prod")]),
            &names(),
        )
        .unwrap();
        assert_eq!(prod.queues.len(), 1);
        let f = function(&prod, "Fn");
        assert_eq!(f.timeout, Duration::from_secs(30));
        assert_eq!(f.environment["MODE"], url("local-ProdOnlyQueue"));
        assert_eq!(f.environment["BOTH"], "no");
        assert_eq!(f.environment["MAYBE"], "on");
    }
}
