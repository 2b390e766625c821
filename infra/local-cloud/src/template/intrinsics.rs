//! The intrinsics evaluator: `!Ref`, `!GetAtt`, `!Sub`, `!If`, `!Join`, `!Select`, `!Split` and
//! `!FindInMap`, in their short (YAML tag) and long (`Fn::`) forms; `Conditions` are evaluated
//! in `conditions`.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use yaml_serde::{Mapping, Value};

use super::LocalNames;
use super::error::{At, Problem};
use super::names::Resource;
use super::parameters::Param;
use super::yaml::{describe, scalar_string};

/// Resolves intrinsics against the parameters, the resources and the local names.
pub(super) struct Resolver<'t> {
    pub(super) file: &'t str,
    pub(super) names: &'t LocalNames,
    pub(super) parameters: BTreeMap<String, Param>,
    pub(super) resources: BTreeMap<String, Resource>,
    pub(super) conditions: &'t Mapping,
    pub(super) mappings: &'t Mapping,
    pub(super) evaluated: RefCell<BTreeMap<String, bool>>,
    pub(super) evaluating: RefCell<BTreeSet<String>>,
    /// The route keys of the events on each HttpApi (by where its settings are, e.g.
    /// `resource HttpApi`), which its `RouteSettings` may name.
    pub(super) api_routes: RefCell<BTreeMap<String, BTreeSet<String>>>,
}

/// The intrinsic function a value is, if it is one: `(long name, argument)`. Short forms are
/// YAML tags (`!GetAtt A.B`), long forms one-key mappings (`{"Fn::GetAtt": [A, B]}`).
pub(super) fn intrinsic(value: &Value) -> Option<(String, &Value)> {
    match value {
        Value::Tagged(tagged) => {
            let tag = tagged.tag.to_string();
            let bare = tag.trim_start_matches('!');
            let name = match bare {
                "Ref" | "Condition" => bare.to_owned(),
                _ => format!("Fn::{bare}"),
            };
            Some((name, &tagged.value))
        }
        Value::Mapping(map) if map.len() == 1 => {
            let (key, arg) = map.iter().next()?;
            let key = key.as_str()?;
            (key == "Ref" || key.starts_with("Fn::")).then(|| (key.to_owned(), arg))
        }
        _ => None,
    }
}

/// The short form of an intrinsic's name, as errors show it: `!GetAtt`.
pub(super) fn short(name: &str) -> String {
    format!("!{}", name.strip_prefix("Fn::").unwrap_or(name))
}

impl Resolver<'_> {
    /// Resolves every intrinsic in `value`; `None` is `AWS::NoValue`, which removes the key.
    pub(super) fn resolve(&self, value: &Value, at: &At) -> anyhow::Result<Option<Value>> {
        if let Some((name, arg)) = intrinsic(value) {
            return self.call(&name, arg, at);
        }
        Ok(Some(match value {
            Value::Mapping(map) => {
                let mut resolved = Mapping::new();
                for (key, value) in map {
                    let child = at.key(&scalar_string(key).unwrap_or_default());
                    if let Some(value) = self.resolve(value, &child)? {
                        resolved.insert(key.clone(), value);
                    }
                }
                Value::Mapping(resolved)
            }
            Value::Sequence(items) => {
                let mut resolved = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    resolved.extend(self.resolve(item, &at.index(i))?);
                }
                Value::Sequence(resolved)
            }
            other => other.clone(),
        }))
    }

    /// Resolves to a scalar, as a string.
    pub(super) fn resolve_string(
        &self,
        value: &Value,
        what: &'static str,
        at: &At,
    ) -> anyhow::Result<String> {
        match self.resolve(value, at)? {
            Some(resolved) => scalar_string(&resolved).ok_or_else(|| {
                self.fail(
                    at,
                    Problem::Type {
                        expected: what,
                        found: describe(&resolved),
                    },
                )
            }),
            None => Err(self.fail(
                at,
                Problem::Type {
                    expected: what,
                    found: "AWS::NoValue".into(),
                },
            )),
        }
    }

    pub(super) fn malformed(&self, name: &str, expected: &'static str, at: &At) -> anyhow::Error {
        self.fail(
            at,
            Problem::Malformed {
                intrinsic: short(name),
                expected,
            },
        )
    }

    pub(super) fn call(&self, name: &str, arg: &Value, at: &At) -> anyhow::Result<Option<Value>> {
        match name {
            "Ref" => {
                let Value::String(target) = arg else {
                    return Err(self.malformed(name, "a logical id or parameter name", at));
                };
                self.reference(target, "!Ref", at)
            }
            "Fn::GetAtt" => {
                let (resource, attribute) = match arg {
                    Value::String(s) => s
                        .split_once('.')
                        .map(|(r, a)| (r.to_owned(), a.to_owned()))
                        .ok_or_else(|| self.malformed(name, "Resource.Attribute", at))?,
                    Value::Sequence(items) if items.len() == 2 => (
                        scalar_string(&items[0])
                            .ok_or_else(|| self.malformed(name, "[Resource, Attribute]", at))?,
                        self.resolve_string(&items[1], "an attribute name", at)?,
                    ),
                    _ => return Err(self.malformed(name, "Resource.Attribute", at)),
                };
                self.attribute(&resource, &attribute, "!GetAtt", at)
                    .map(|v| Some(Value::String(v)))
            }
            "Fn::Sub" => {
                let (text, variables) = match arg {
                    Value::String(text) => (text, None),
                    Value::Sequence(items) => match items.as_slice() {
                        [Value::String(text), Value::Mapping(variables)] => (text, Some(variables)),
                        _ => {
                            return Err(self.malformed(
                                name,
                                "a string or [string, variables]",
                                at,
                            ));
                        }
                    },
                    _ => return Err(self.malformed(name, "a string or [string, variables]", at)),
                };
                self.substitute(text, variables, at)
                    .map(|v| Some(Value::String(v)))
            }
            "Fn::If" => {
                let Some([condition, then, otherwise]) = arg.as_sequence().map(Vec::as_slice)
                else {
                    return Err(self.malformed(
                        name,
                        "[condition, value if true, value if false]",
                        at,
                    ));
                };
                let condition = scalar_string(condition)
                    .ok_or_else(|| self.malformed(name, "a condition name first", at))?;
                // Only the branch taken is resolved, as CloudFormation does.
                if self.condition(&condition, at)? {
                    self.resolve(then, at)
                } else {
                    self.resolve(otherwise, at)
                }
            }
            "Fn::Join" => {
                let Some([delimiter, list]) = arg.as_sequence().map(Vec::as_slice) else {
                    return Err(self.malformed(name, "[delimiter, list]", at));
                };
                let delimiter = self.resolve_string(delimiter, "a delimiter", at)?;
                let parts = self.resolve_list(list, name, at)?;
                let parts = parts
                    .iter()
                    .map(|part| {
                        scalar_string(part).ok_or_else(|| {
                            self.fail(
                                at,
                                Problem::Type {
                                    expected: "a list of strings",
                                    found: describe(part),
                                },
                            )
                        })
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                Ok(Some(Value::String(parts.join(&delimiter))))
            }
            "Fn::Select" => {
                let Some([index, list]) = arg.as_sequence().map(Vec::as_slice) else {
                    return Err(self.malformed(name, "[index, list]", at));
                };
                let index = self.resolve_string(index, "an index", at)?;
                let index: usize = index
                    .parse()
                    .map_err(|_| self.malformed(name, "a whole number as the index", at))?;
                let list = self.resolve_list(list, name, at)?;
                let len = list.len();
                list.into_iter()
                    .nth(index)
                    .map(Some)
                    .ok_or_else(|| self.fail(at, Problem::SelectOutOfRange { index, len }))
            }
            "Fn::Split" => {
                let Some([delimiter, text]) = arg.as_sequence().map(Vec::as_slice) else {
                    return Err(self.malformed(name, "[delimiter, string]", at));
                };
                let delimiter = self.resolve_string(delimiter, "a delimiter", at)?;
                let text = self.resolve_string(text, "a string", at)?;
                Ok(Some(Value::Sequence(
                    text.split(delimiter.as_str())
                        .map(|s| Value::String(s.to_owned()))
                        .collect(),
                )))
            }
            "Fn::FindInMap" => {
                let Some([map, top, second]) = arg.as_sequence().map(Vec::as_slice) else {
                    return Err(self.malformed(name, "[map, top-level key, second-level key]", at));
                };
                let keys = [
                    self.resolve_string(map, "a map name", at)?,
                    self.resolve_string(top, "a key", at)?,
                    self.resolve_string(second, "a key", at)?,
                ];
                let found = self
                    .mappings
                    .get(keys[0].as_str())
                    .and_then(|m| m.get(keys[1].as_str()))
                    .and_then(|m| m.get(keys[2].as_str()))
                    .ok_or_else(|| self.fail(at, Problem::UnknownMapping(keys.join("."))))?;
                Ok(Some(found.clone()))
            }
            other => Err(self.fail(at, Problem::UnsupportedIntrinsic(short(other)))),
        }
    }

    pub(super) fn resolve_list(
        &self,
        list: &Value,
        name: &str,
        at: &At,
    ) -> anyhow::Result<Vec<Value>> {
        match self.resolve(list, at)? {
            Some(Value::Sequence(items)) => Ok(items),
            _ => Err(self.malformed(name, "a list", at)),
        }
    }

    /// `Ref`: pseudo parameters, parameters, then resources.
    pub(super) fn reference(
        &self,
        target: &str,
        intrinsic: &'static str,
        at: &At,
    ) -> anyhow::Result<Option<Value>> {
        let names = self.names;
        let text = |s: String| Ok(Some(Value::String(s)));
        if let Some(pseudo) = target.strip_prefix("AWS::") {
            return match pseudo {
                "NoValue" => Ok(None),
                "StackName" => text(names.stack_name.clone()),
                "Region" => text(names.region.clone()),
                "AccountId" => text(names.account_id.clone()),
                "Partition" => text("aws".into()),
                "URLSuffix" => text("amazonaws.com".into()),
                "StackId" => text(format!(
                    "arn:aws:cloudformation:{}:{}:stack/{}/local",
                    names.region, names.account_id, names.stack_name
                )),
                "NotificationARNs" => Ok(Some(Value::Sequence(Vec::new()))),
                _ => Err(self.fail(at, Problem::UnknownPseudo(target.to_owned()))),
            };
        }
        if let Some(param) = self.parameters.get(target) {
            return Ok(Some(match param {
                Param::Scalar(s) => Value::String(s.clone()),
                Param::List(items) => {
                    Value::Sequence(items.iter().cloned().map(Value::String).collect())
                }
            }));
        }
        match self.resources.get(target) {
            Some(Resource::Table(name)) => text(self.name_of(target, name, at)?.to_owned()),
            Some(Resource::Queue(name)) => text(self.queue_url(self.name_of(target, name, at)?)),
            Some(Resource::Bucket(name)) => text(self.name_of(target, name, at)?.to_owned()),
            Some(Resource::Function | Resource::Other(_)) => text(target.to_owned()),
            None => Err(self.fail(
                at,
                Problem::UnknownResource {
                    name: target.to_owned(),
                    intrinsic,
                },
            )),
        }
    }

    /// `GetAtt`.
    pub(super) fn attribute(
        &self,
        resource: &str,
        attribute: &str,
        intrinsic: &'static str,
        at: &At,
    ) -> anyhow::Result<String> {
        let Some(found) = self.resources.get(resource) else {
            return Err(self.fail(
                at,
                Problem::UnknownResource {
                    name: resource.to_owned(),
                    intrinsic,
                },
            ));
        };
        let value = match (found, attribute) {
            (Resource::Table(name), "Arn") => {
                Some(self.table_arn(self.name_of(resource, name, at)?))
            }
            (Resource::Table(name), "StreamArn") => {
                Some(self.stream_arn(self.name_of(resource, name, at)?))
            }
            (Resource::Queue(name), "Arn") => {
                Some(self.queue_arn(self.name_of(resource, name, at)?))
            }
            (Resource::Queue(name), "QueueName") => {
                Some(self.name_of(resource, name, at)?.to_owned())
            }
            (Resource::Queue(name), "QueueUrl") => {
                Some(self.queue_url(self.name_of(resource, name, at)?))
            }
            // Locally the functions get REDIS_URL, which wins over the endpoint: a name that
            // resolves nowhere says so if it is ever used.
            (Resource::Other(kind), "PrimaryEndPoint.Address" | "ReaderEndPoint.Address")
                if kind == "AWS::ElastiCache::ReplicationGroup" =>
            {
                Some(format!("{resource}.local-cloud.invalid"))
            }
            (Resource::Other(kind), "PrimaryEndPoint.Port" | "ReaderEndPoint.Port")
                if kind == "AWS::ElastiCache::ReplicationGroup" =>
            {
                Some("6379".to_owned())
            }
            (Resource::Function, "Arn") => Some(self.function_arn(resource)),
            (Resource::Bucket(name), "Arn") => {
                Some(self.bucket_arn(self.name_of(resource, name, at)?))
            }
            (Resource::Bucket(name), "RegionalDomainName") => Some(format!(
                "{}.s3.{}.amazonaws.com",
                self.name_of(resource, name, at)?,
                self.names.region
            )),
            _ => None,
        };
        value.ok_or_else(|| {
            self.fail(
                at,
                Problem::UnknownAttribute {
                    resource: resource.to_owned(),
                    kind: found.kind().to_owned(),
                    attribute: attribute.to_owned(),
                },
            )
        })
    }

    /// `Sub`: `${Name}`, `${Resource.Attribute}`, `${!Literal}` and the variables map.
    pub(super) fn substitute(
        &self,
        text: &str,
        variables: Option<&Mapping>,
        at: &At,
    ) -> anyhow::Result<String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            if let Some(literal) = after.strip_prefix('!') {
                out.push_str("${");
                rest = literal;
                continue;
            }
            let end = after
                .find('}')
                .ok_or_else(|| self.fail(at, Problem::UnterminatedSub))?;
            let name = after[..end].trim();
            let value = match variables.and_then(|v| v.get(name)) {
                Some(value) => self.resolve_string(value, "a string for !Sub", at)?,
                None => self.sub_variable(name, at)?,
            };
            out.push_str(&value);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    pub(super) fn sub_variable(&self, name: &str, at: &At) -> anyhow::Result<String> {
        if !name.starts_with("AWS::")
            && let Some((resource, attribute)) = name.split_once('.')
        {
            return self.attribute(resource, attribute, "!Sub", at);
        }
        match self.reference(name, "!Sub", at)? {
            Some(value) => scalar_string(&value).ok_or_else(|| {
                self.fail(
                    at,
                    Problem::Type {
                        expected: "a string for !Sub",
                        found: describe(&value),
                    },
                )
            }),
            None => Err(self.fail(
                at,
                Problem::Type {
                    expected: "a string for !Sub",
                    found: "AWS::NoValue".into(),
                },
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

    #[test]
    fn unknown_ref_names_the_place() {
        let err = error_of(
            r#"
Globals:
  Function:
    Environment:
      Variables:
        SOCIAL_TABLE: !Ref Nope
Resources:
  PutProfileFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/put-profile
"#,
        );
        assert_eq!(
            err,
            "template.yaml: resource PutProfileFunction, Environment.Variables.SOCIAL_TABLE: \
             unknown resource Nope in !Ref"
        );
    }

    #[test]
    fn long_forms_sub_variables_and_literals_resolve() {
        let model = load_yaml(
            r#"
Parameters:
  Env: {Type: String, Default: dev}
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: {"Fn::Sub": "${AWS::StackName}-${Env}-jobs"}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn/
      MemorySize: 256
      Environment:
        Variables:
          URL: {"Ref": "Queue"}
          ARN: {"Fn::GetAtt": ["Queue", "Arn"]}
          NAME: !GetAtt [Queue, QueueName]
          SELF: !GetAtt Fn.Arn
          MAPPED: {"Fn::Sub": ["${Who} at ${Queue.QueueName}", {Who: {"Ref": "Env"}}]}
          LITERAL: !Sub "${!NotAVariable} in ${AWS::Partition}.${AWS::URLSuffix}"
          GONE: !Ref AWS::NoValue
          NUMBER: 42
"#,
        )
        .unwrap();
        let f = function(&model, "Fn");
        assert_eq!(f.binary, "fn", "the last component of CodeUri");
        assert_eq!(f.memory_mb, 256);
        assert_eq!(
            f.environment,
            env(&[
                ("URL", &url("local-dev-jobs")),
                ("ARN", &queue_arn("local-dev-jobs")),
                ("NAME", "local-dev-jobs"),
                ("SELF", "arn:aws:lambda:us-east-1:123456789012:function:Fn"),
                ("MAPPED", "dev at local-dev-jobs"),
                ("LITERAL", "${NotAVariable} in aws.amazonaws.com"),
                ("NUMBER", "42"),
            ])
        );
    }

    #[test]
    fn intrinsics_outside_what_the_runner_reads_are_not_resolved() {
        let yaml = r#"
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn
      Policies:
        - Statement:
            - Effect: Allow
              Action: sqs:SendMessage
              Resource: !ImportValue shared-queue-arn
  Alarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      AlarmActions: [!GetAtt Nope.Arn]
"#;
        assert_eq!(load_yaml(yaml).unwrap().functions.len(), 1);

        let err = error_of(&yaml.replace(
            "Policies:",
            "Environment: {Variables: {X: !ImportValue y}}\n      Policies:",
        ));
        assert_eq!(
            err,
            "template.yaml: resource Fn, Environment.Variables.X: !ImportValue is not supported \
             by the local runner"
        );
    }
}
