//! The resources the runner provisions or runs: tables (`AWS::DynamoDB::Table`,
//! `AWS::Serverless::SimpleTable`), queues and functions, with `Globals` merged in.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use yaml_serde::{Mapping, Value};

use super::error::{At, Problem};
use super::events::Apis;
use super::intrinsics::Resolver;
use super::yaml::Node;
use crate::model::{FunctionSpec, IndexSpec, LogLevel, Model, QueueSpec, TableSpec};

/// `Globals` under a resource's own properties: the resource wins key by key, except that
/// `Environment.Variables` are merged variable by variable and `LoggingConfig` key by key (a
/// function's own `LogGroup` keeps the global `LogFormat` and `ApplicationLogLevel`), as SAM
/// merges maps.
pub(super) fn merge(globals: &Mapping, own: &Mapping) -> Mapping {
    let mut merged = globals.clone();
    for (key, value) in own {
        let combined = match (key.as_str(), merged.get(key), value) {
            (Some("Environment"), Some(Value::Mapping(global)), Value::Mapping(local)) => {
                let mut environment = global.clone();
                for (k, v) in local {
                    if k.as_str() == Some("Variables")
                        && let (Some(Value::Mapping(gv)), Value::Mapping(lv)) =
                            (global.get("Variables"), v)
                    {
                        let mut variables = gv.clone();
                        for (name, value) in lv {
                            variables.insert(name.clone(), value.clone());
                        }
                        environment.insert(k.clone(), Value::Mapping(variables));
                        continue;
                    }
                    environment.insert(k.clone(), v.clone());
                }
                Value::Mapping(environment)
            }
            (Some("LoggingConfig"), Some(Value::Mapping(global)), Value::Mapping(local)) => {
                let mut config = global.clone();
                config.extend(local.iter().map(|(k, v)| (k.clone(), v.clone())));
                Value::Mapping(config)
            }
            _ => value.clone(),
        };
        merged.insert(key.clone(), combined);
    }
    merged
}

/// A resource's `Properties` as a node (an empty mapping when it has none).
pub(super) fn properties<'r>(
    r: &'r Resolver<'r>,
    decl: &'r Value,
    at: &At,
) -> anyhow::Result<Node<'r>> {
    let resource = Node::borrowed(r, decl, at.clone());
    // The path of a property leaves `Properties.` out: see `At`.
    let props = resource.into_child("Properties")?;
    Ok(props
        .map(|p| Node {
            at: at.clone(),
            ..p
        })
        .unwrap_or_else(|| Node::empty(r, at.clone())))
}

impl Resolver<'_> {
    pub(super) fn table(&self, id: &str, props: &Node<'_>) -> anyhow::Result<TableSpec> {
        let pairs = |key: &'static str, first: &'static str, second: &'static str| {
            props
                .required(key)?
                .items()?
                .iter()
                .map(|item| Ok((item.required_string(first)?, item.required_string(second)?)))
                .collect::<anyhow::Result<Vec<_>>>()
        };
        let attributes = pairs("AttributeDefinitions", "AttributeName", "AttributeType")?;
        let key_schema = pairs("KeySchema", "AttributeName", "KeyType")?;
        let indexes = |key: &str| -> anyhow::Result<Vec<IndexSpec>> {
            let Some(list) = props.get(key)? else {
                return Ok(Vec::new());
            };
            list.items()?.iter().map(index).collect()
        };
        let ttl = match props.get("TimeToLiveSpecification")? {
            Some(ttl) if ttl.bool_at("Enabled")?.unwrap_or(false) => {
                Some(ttl.required_string("AttributeName")?)
            }
            _ => None,
        };
        Ok(TableSpec {
            logical_id: id.to_owned(),
            name: self.named(id),
            attributes,
            key_schema,
            global_secondary_indexes: indexes("GlobalSecondaryIndexes")?,
            local_secondary_indexes: indexes("LocalSecondaryIndexes")?,
            stream_view_type: match props.get("StreamSpecification")? {
                Some(stream) => stream.string_at("StreamViewType")?,
                None => None,
            },
            ttl_attribute: ttl,
        })
    }

    /// `AWS::Serverless::SimpleTable`: a hash key only, `id` of type String by default.
    pub(super) fn simple_table(&self, id: &str, props: &Node<'_>) -> anyhow::Result<TableSpec> {
        let (key, kind) = match props.get("PrimaryKey")? {
            Some(key) => (
                key.string_at("Name")?.unwrap_or_else(|| "id".into()),
                key.string_at("Type")?.unwrap_or_else(|| "String".into()),
            ),
            None => ("id".into(), "String".into()),
        };
        let kind = match kind.as_str() {
            "String" => "S",
            "Number" => "N",
            "Binary" => "B",
            other => {
                return Err(self.fail(
                    &props.at.key("PrimaryKey").key("Type"),
                    Problem::Type {
                        expected: "String, Number or Binary",
                        found: format!("{other:?}"),
                    },
                ));
            }
        };
        Ok(TableSpec {
            logical_id: id.to_owned(),
            name: self.named(id),
            attributes: vec![(key.clone(), kind.to_owned())],
            key_schema: vec![(key, "HASH".to_owned())],
            global_secondary_indexes: Vec::new(),
            local_secondary_indexes: Vec::new(),
            stream_view_type: None,
            ttl_attribute: None,
        })
    }

    pub(super) fn queue(&self, id: &str, props: &Node<'_>) -> anyhow::Result<QueueSpec> {
        const PLAIN: [&str; 7] = [
            "VisibilityTimeout",
            "DelaySeconds",
            "MessageRetentionPeriod",
            "MaximumMessageSize",
            "ReceiveMessageWaitTimeSeconds",
            "DeduplicationScope",
            "FifoThroughputLimit",
        ];
        let mut attributes = BTreeMap::new();
        for key in PLAIN {
            if let Some(value) = props.string_at(key)? {
                attributes.insert(key.to_owned(), value);
            }
        }
        // SQS wants these absent rather than "false" on a standard queue.
        for key in ["FifoQueue", "ContentBasedDeduplication"] {
            if props.bool_at(key)? == Some(true) {
                attributes.insert(key.to_owned(), "true".to_owned());
            }
        }
        for key in ["RedrivePolicy", "RedriveAllowPolicy"] {
            if let Some(policy) = props.get(key)? {
                attributes.insert(key.to_owned(), policy.json_text()?);
            }
        }
        let name = self.named(id);
        Ok(QueueSpec {
            logical_id: id.to_owned(),
            url: self.queue_url(&name),
            name,
            attributes,
        })
    }

    pub(super) fn function(
        &self,
        id: &str,
        decl: &Value,
        globals: &Mapping,
        model: &Model,
        apis: &Apis,
    ) -> anyhow::Result<FunctionSpec> {
        let at = At::new(format!("resource {id}"));
        let own = properties(self, decl, &at)?;
        let own = own.value.as_mapping().cloned().unwrap_or_default();
        let props = Node {
            r: self,
            value: Cow::Owned(Value::Mapping(merge(globals, &own))),
            at: at.clone(),
        };

        let resource = Node::borrowed(self, decl, at.clone());
        let binary = match resource.path(&["Metadata", "BuildProperties", "Binary"])? {
            Some(binary) => binary.string()?,
            None => {
                let uri = props.get("CodeUri")?.ok_or_else(|| {
                    self.fail(
                        &at,
                        Problem::NotLocal(
                            "neither Metadata.BuildProperties.Binary nor a CodeUri folder names \
                             the binary to run"
                                .into(),
                        ),
                    )
                })?;
                let folder = uri.string()?;
                Path::new(folder.trim_end_matches('/'))
                    .file_name()
                    .and_then(|name| name.to_str())
                    .filter(|name| !name.is_empty() && *name != "." && *name != "..")
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        self.fail(
                            &uri.at,
                            Problem::Type {
                                expected: "a folder whose name is the binary",
                                found: format!("{folder:?}"),
                            },
                        )
                    })?
            }
        };

        let handler = match props.get("Handler")? {
            Some(handler) => handler.string()?,
            None => "bootstrap".to_owned(),
        };

        let mut environment = BTreeMap::new();
        if let Some(variables) = props.path(&["Environment", "Variables"])? {
            for (name, value) in variables.entries()? {
                environment.insert(name, value.string()?);
            }
        }

        let mut events = Vec::new();
        if let Some(declared) = props.get("Events")? {
            for (name, event) in declared.entries()? {
                events.push(self.event(&name, &event, model, apis)?);
            }
        }

        Ok(FunctionSpec {
            logical_id: id.to_owned(),
            name: id.to_owned(),
            binary,
            handler,
            timeout: Duration::from_secs(props.u64_at("Timeout")?.unwrap_or(3)),
            memory_mb: props.u32_at("MemorySize")?.unwrap_or(128),
            environment,
            reserved_concurrency: props.u32_at("ReservedConcurrentExecutions")?,
            log_filter: self.log_filter(&props)?,
            events,
        })
    }
}

impl Resolver<'_> {
    /// Lambda's log-level filter from `LoggingConfig` (see [`FunctionSpec::log_filter`]).
    fn log_filter(&self, props: &Node<'_>) -> anyhow::Result<Option<LogLevel>> {
        let Some(config) = props.get("LoggingConfig")? else {
            return Ok(None);
        };
        let format = match config.get("LogFormat")? {
            Some(format) => format.string()?,
            None => "Text".to_owned(),
        };
        if !format.eq_ignore_ascii_case("json") {
            return Ok(None);
        }
        let Some(level) = config.get("ApplicationLogLevel")? else {
            // Lambda's default for the JSON format.
            return Ok(Some(LogLevel::Info));
        };
        let name = level.string()?;
        LogLevel::parse(&name).map(Some).ok_or_else(|| {
            self.fail(
                &level.at,
                Problem::Type {
                    expected: "TRACE, DEBUG, INFO, WARN, ERROR or FATAL",
                    found: format!("{name:?}"),
                },
            )
        })
    }
}

/// A secondary index of a table.
pub(super) fn index(node: &Node<'_>) -> anyhow::Result<IndexSpec> {
    let key_schema = node
        .required("KeySchema")?
        .items()?
        .iter()
        .map(|key| {
            Ok((
                key.required_string("AttributeName")?,
                key.required_string("KeyType")?,
            ))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let projection = node.get("Projection")?;
    let (projection_type, non_key_attributes) = match &projection {
        Some(projection) => (
            projection
                .string_at("ProjectionType")?
                .unwrap_or_else(|| "ALL".to_owned()),
            match projection.get("NonKeyAttributes")? {
                Some(list) => list
                    .items()?
                    .iter()
                    .map(Node::string)
                    .collect::<anyhow::Result<Vec<_>>>()?,
                None => Vec::new(),
            },
        ),
        None => ("ALL".to_owned(), Vec::new()),
    };
    Ok(IndexSpec {
        name: node.required_string("IndexName")?,
        key_schema,
        projection_type,
        non_key_attributes,
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::model::{EventSpec, HttpRoute, JwtAuthorizer, ScheduleSource};
    use std::time::Duration;

    #[test]
    fn defaults_and_the_implicit_api_apply() {
        let model = load_yaml(
            r#"
Globals:
  Function:
    Timeout: 7
    Environment: {Variables: {SHARED: global, OWN: global}}
  HttpApi:
    Auth:
      DefaultAuthorizer: Jwt
      Authorizers:
        Jwt: {IdentitySource: $request.header.X-Token, JwtConfiguration: {issuer: x}}
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: !Sub "${AWS::StackName}-things"
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
      StreamSpecification: {StreamViewType: KEYS_ONLY}
  Fn:
    Type: AWS::Serverless::Function
    Metadata: {BuildProperties: {Binary: the-bin}}
    Properties:
      CodeUri: functions/fn
      ReservedConcurrentExecutions: 4
      Environment: {Variables: {OWN: mine}}
      Events:
        Route: {Type: HttpApi, Properties: {Path: /things, Method: post}}
        Changes: {Type: DynamoDB, Properties: {Stream: !GetAtt Table.StreamArn, StartingPosition: LATEST, Enabled: false}}
        Nightly: {Type: ScheduleV2, Properties: {ScheduleExpression: "cron(0 3 * * ? *)", State: DISABLED}}
"#,
        )
        .unwrap();
        let f = function(&model, "Fn");
        assert_eq!(f.binary, "the-bin");
        assert_eq!(f.timeout, Duration::from_secs(7));
        assert_eq!(f.memory_mb, 128);
        assert_eq!(f.reserved_concurrency, Some(4));
        assert_eq!(f.environment, env(&[("SHARED", "global"), ("OWN", "mine")]));
        assert_eq!(
            f.events[0],
            EventSpec::Http(HttpRoute {
                event_name: "Route".into(),
                method: "POST".into(),
                path: "/things".into(),
                authorizer: Some(JwtAuthorizer {
                    name: "Jwt".into(),
                    identity_source: "$request.header.X-Token".into(),
                }),
                throttle: None,
            })
        );
        let EventSpec::Stream(stream) = &f.events[1] else {
            panic!("a stream source: {:?}", f.events[1]);
        };
        assert_eq!(stream.table_name, "local-things");
        assert_eq!(stream.batch_size, 100);
        assert_eq!(stream.maximum_retry_attempts, None);
        assert!(!stream.enabled);
        assert_eq!(
            f.events[2],
            EventSpec::Schedule(ScheduleSource {
                event_name: "Nightly".into(),
                expression: "cron(0 3 * * ? *)".into(),
                input: None,
                enabled: false,
            })
        );
    }
}
