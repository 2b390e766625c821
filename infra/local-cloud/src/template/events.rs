//! A function's `Events`: HttpApi routes with their authorizers and throttling, SQS and
//! DynamoDB stream sources, schedules and topics, and the rules Lambda enforces on them.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use yaml_serde::{Mapping, Value};

use super::error::{At, Problem};
use super::intrinsics::Resolver;
use super::throttling;
use super::yaml::Node;
use crate::model::{
    EventSpec, FunctionSpec, HttpRoute, JwtAuthorizer, Model, ScheduleSource, SqsSource,
    StreamSource, TopicSource,
};

/// The HttpApis, with `Globals.HttpApi` merged in: routes find their authorizers here.
pub(super) struct Apis {
    pub(super) explicit: BTreeMap<String, Mapping>,
    /// SAM's implicit `ServerlessHttpApi`, configured by `Globals.HttpApi` alone.
    pub(super) implicit: Value,
}

/// Lambda refuses an SQS event source whose queue hides a received message for less than the
/// function's timeout (`CreateEventSourceMapping`: "Queue visibility timeout: 2 seconds is less
/// than Function timeout: 10 seconds"), since a batch still running would be handed out again.
pub(super) fn check_visibility(
    resolver: &Resolver<'_>,
    function: &FunctionSpec,
    model: &Model,
) -> anyhow::Result<()> {
    for event in &function.events {
        let EventSpec::Sqs(source) = event else {
            continue;
        };
        let Some(queue) = model.queue(&source.queue_logical_id) else {
            continue;
        };
        // SQS's default when the template sets none.
        let visibility: u64 = queue
            .attributes
            .get("VisibilityTimeout")
            .and_then(|value| value.parse().ok())
            .unwrap_or(30);
        let timeout = function.timeout.as_secs();
        if visibility < timeout {
            let at = At::new(format!("resource {}", function.logical_id))
                .key("Events")
                .key(&source.event_name);
            return Err(resolver.fail(
                &at,
                Problem::VisibilityBelowTimeout {
                    queue: queue.logical_id.clone(),
                    visibility,
                    timeout,
                },
            ));
        }
    }
    Ok(())
}

impl Resolver<'_> {
    pub(super) fn event(
        &self,
        name: &str,
        event: &Node<'_>,
        model: &Model,
        apis: &Apis,
    ) -> anyhow::Result<EventSpec> {
        let kind = event.required_string("Type")?;
        let props = event
            .get("Properties")?
            .unwrap_or_else(|| Node::empty(self, event.at.key("Properties")));
        let event_name = name.to_owned();
        Ok(match kind.as_str() {
            "HttpApi" => EventSpec::Http(self.http_route(event_name, &props, apis)?),
            "SQS" => EventSpec::Sqs(self.sqs_source(event_name, &props)?),
            "DynamoDB" => EventSpec::Stream(self.stream_source(event_name, &props, model)?),
            "Schedule" => {
                let state = props.string_at("State")?;
                EventSpec::Schedule(ScheduleSource {
                    event_name,
                    expression: props.required_string("Schedule")?,
                    input: props.json_text_at("Input")?,
                    enabled: props.bool_at("Enabled")?.unwrap_or(true)
                        && state.as_deref() != Some("DISABLED"),
                })
            }
            "SNS" => EventSpec::Topic(TopicSource {
                event_name,
                topic: props.required_string("Topic")?,
            }),
            "ScheduleV2" => EventSpec::Schedule(ScheduleSource {
                event_name,
                expression: props.required_string("ScheduleExpression")?,
                input: props.json_text_at("Input")?,
                enabled: props.string_at("State")?.as_deref() != Some("DISABLED"),
            }),
            "Api" => {
                return Err(self.fail(
                    &event.at,
                    Problem::NotLocal(
                        "event type Api (a REST API) is not supported: only HttpApi events are"
                            .into(),
                    ),
                ));
            }
            other => {
                return Err(self.fail(
                    &event.at,
                    Problem::NotLocal(format!(
                        "event type {other} is not supported locally (the runner drives \
                         HttpApi, SQS, DynamoDB, Schedule and ScheduleV2 events, and accepts \
                         SNS events)"
                    )),
                ));
            }
        })
    }

    pub(super) fn http_route(
        &self,
        event_name: String,
        props: &Node<'_>,
        apis: &Apis,
    ) -> anyhow::Result<HttpRoute> {
        let (method, path) = match (props.string_at("Method")?, props.string_at("Path")?) {
            (Some(method), Some(path)) => {
                let method = method.to_ascii_uppercase();
                let method = if method == "X-AMAZON-APIGATEWAY-ANY-METHOD" {
                    "ANY".to_owned()
                } else {
                    method
                };
                (method, path)
            }
            // SAM's default route: whatever no other route matches.
            (None, None) => ("ANY".to_owned(), "$default".to_owned()),
            (None, Some(_)) => return Err(self.fail(&props.at, Problem::Missing("Method"))),
            (Some(_), None) => return Err(self.fail(&props.at, Problem::Missing("Path"))),
        };

        let api = match props.get("ApiId")? {
            Some(api_id) => {
                let id = api_id.string()?;
                let found = apis.explicit.get(&id).ok_or_else(|| {
                    self.fail(
                        &api_id.at,
                        Problem::NotLocal(format!(
                            "{id} is not an AWS::Serverless::HttpApi of this template"
                        )),
                    )
                })?;
                Node {
                    r: self,
                    value: Cow::Owned(Value::Mapping(found.clone())),
                    at: At::new(format!("resource {id}")),
                }
            }
            None => Node::borrowed(self, &apis.implicit, At::new("Globals.HttpApi")),
        };

        let chosen = match props.path(&["Auth", "Authorizer"])? {
            Some(name) => Some((name.string()?, name.at.clone())),
            None => match api.path(&["Auth", "DefaultAuthorizer"])? {
                Some(name) => Some((name.string()?, name.at.clone())),
                None => None,
            },
        };
        let authorizer = match chosen {
            None => None,
            Some((name, _)) if name == "NONE" => None,
            Some((name, at)) => Some(self.authorizer(&api, &name, &at)?),
        };
        let route_key = throttling::route_key(&method, &path);
        let throttle = throttling::route_throttle(&api, props, &route_key)?;
        self.api_routes
            .borrow_mut()
            .entry(throttling::api_name(&api))
            .or_default()
            .insert(route_key);
        Ok(HttpRoute {
            event_name,
            method,
            path,
            authorizer,
            throttle,
        })
    }

    /// Each API's `RouteSettings` name only routes it has; SAM's implicit API is checked when
    /// a route uses it, since only then does it exist.
    pub(super) fn check_route_settings(&self, apis: &Apis) -> anyhow::Result<()> {
        let routes = self.api_routes.borrow();
        let none = BTreeSet::new();
        for (id, settings) in &apis.explicit {
            let api = Node {
                r: self,
                value: Cow::Owned(Value::Mapping(settings.clone())),
                at: At::new(format!("resource {id}")),
            };
            let on_api = routes.get(&throttling::api_name(&api)).unwrap_or(&none);
            throttling::check_route_keys(self, &api, on_api)?;
        }
        let implicit = Node::borrowed(self, &apis.implicit, At::new("Globals.HttpApi"));
        if let Some(on_api) = routes.get(&throttling::api_name(&implicit)) {
            throttling::check_route_keys(self, &implicit, on_api)?;
        }
        Ok(())
    }

    pub(super) fn authorizer(
        &self,
        api: &Node<'_>,
        name: &str,
        at: &At,
    ) -> anyhow::Result<JwtAuthorizer> {
        if name == "AWS_IAM" {
            return Err(self.fail(
                at,
                Problem::NotLocal("IAM authorization is not emulated locally".into()),
            ));
        }
        let Some(config) = api.path(&["Auth", "Authorizers", name])? else {
            return Err(self.fail(
                at,
                Problem::NotLocal(format!(
                    "authorizer {name} is not defined in Auth.Authorizers of the {}",
                    api.at.owner
                )),
            ));
        };
        if config.get("FunctionArn")?.is_some() {
            return Err(self.fail(
                &config.at,
                Problem::NotLocal(format!(
                    "{name} is a Lambda authorizer; only JWT authorizers are emulated locally"
                )),
            ));
        }
        Ok(JwtAuthorizer {
            name: name.to_owned(),
            identity_source: config
                .string_at("IdentitySource")?
                .unwrap_or_else(|| "$request.header.Authorization".to_owned()),
        })
    }

    pub(super) fn sqs_source(
        &self,
        event_name: String,
        props: &Node<'_>,
    ) -> anyhow::Result<SqsSource> {
        let queue = props.required("Queue")?;
        let arn = queue.string()?;
        let (logical_id, name) = self.queue_by_arn(&arn).ok_or_else(|| {
            self.fail(
                &queue.at,
                Problem::UnknownArn {
                    kind: "queue",
                    arn: arn.clone(),
                },
            )
        })?;
        if props.get("FilterCriteria")?.is_some() {
            return Err(self.fail(
                &props.at.key("FilterCriteria"),
                Problem::NotLocal("FilterCriteria on SQS events is not emulated locally".into()),
            ));
        }
        let maximum_concurrency = match props.get("ScalingConfig")? {
            Some(scaling) => scaling.u32_at("MaximumConcurrency")?,
            None => None,
        };
        Ok(SqsSource {
            event_name,
            queue_logical_id: logical_id.to_owned(),
            queue_url: self.queue_url(name),
            queue_arn: arn,
            batch_size: props.u32_at("BatchSize")?.unwrap_or(10),
            batching_window: Duration::from_secs(
                props.u64_at("MaximumBatchingWindowInSeconds")?.unwrap_or(0),
            ),
            report_batch_item_failures: props.reports_batch_item_failures()?,
            maximum_concurrency,
            enabled: props.bool_at("Enabled")?.unwrap_or(true),
        })
    }

    pub(super) fn stream_source(
        &self,
        event_name: String,
        props: &Node<'_>,
        model: &Model,
    ) -> anyhow::Result<StreamSource> {
        let stream = props.required("Stream")?;
        let arn = stream.string()?;
        let table = model
            .tables
            .iter()
            .find(|t| self.stream_arn(&t.name) == arn)
            .ok_or_else(|| {
                self.fail(
                    &stream.at,
                    Problem::UnknownArn {
                        kind: "table stream",
                        arn: arn.clone(),
                    },
                )
            })?;
        if table.stream_view_type.is_none() {
            return Err(self.fail(
                &stream.at,
                Problem::NotLocal(format!(
                    "table {} has no StreamSpecification",
                    table.logical_id
                )),
            ));
        }
        let starting_position = props.required_string("StartingPosition")?;
        match starting_position.as_str() {
            "TRIM_HORIZON" | "LATEST" => {}
            other => {
                return Err(self.fail(
                    &props.at.key("StartingPosition"),
                    Problem::NotLocal(format!(
                        "StartingPosition {other} is not supported locally (TRIM_HORIZON and \
                         LATEST are)"
                    )),
                ));
            }
        }
        let mut filters = Vec::new();
        if let Some(list) = props.path(&["FilterCriteria", "Filters"])? {
            for filter in list.items()? {
                let pattern = filter.required("Pattern")?;
                let text = pattern.json_text()?;
                let parsed = serde_json::from_str(&text)
                    .map_err(|err| self.fail(&pattern.at, Problem::Json(err)))?;
                filters.push(parsed);
            }
        }
        let on_failure_queue_url = match props.path(&["DestinationConfig", "OnFailure"])? {
            Some(on_failure) => match on_failure.get("Destination")? {
                Some(destination) => {
                    let arn = destination.string()?;
                    if arn.starts_with("arn:aws:sns:") {
                        return Err(self.fail(
                            &destination.at,
                            Problem::NotLocal(
                                "an SNS on-failure destination is not supported locally; use an \
                                 SQS queue"
                                    .into(),
                            ),
                        ));
                    }
                    let (_, name) = self.queue_by_arn(&arn).ok_or_else(|| {
                        self.fail(
                            &destination.at,
                            Problem::UnknownArn {
                                kind: "queue",
                                arn: arn.clone(),
                            },
                        )
                    })?;
                    Some(self.queue_url(name))
                }
                None => None,
            },
            None => None,
        };
        Ok(StreamSource {
            event_name,
            table_logical_id: table.logical_id.clone(),
            table_name: table.name.clone(),
            starting_position,
            batch_size: props.u32_at("BatchSize")?.unwrap_or(100),
            batching_window: Duration::from_secs(
                props.u64_at("MaximumBatchingWindowInSeconds")?.unwrap_or(0),
            ),
            filters,
            maximum_retry_attempts: props.i64_at("MaximumRetryAttempts")?,
            maximum_record_age_seconds: props.i64_at("MaximumRecordAgeInSeconds")?,
            bisect_batch_on_function_error: props
                .bool_at("BisectBatchOnFunctionError")?
                .unwrap_or(false),
            on_failure_queue_url,
            function_response_report_batch_item_failures: props.reports_batch_item_failures()?,
            enabled: props.bool_at("Enabled")?.unwrap_or(true),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

    #[test]
    fn unsupported_events_name_the_function_and_event() {
        let err = error_of(&with_event(
            "          Type: S3\n          Properties: {Bucket: !Ref Bucket}",
        ));
        assert!(
            err.starts_with(
                "template.yaml: resource Fn, Events.Ev: event type S3 is not supported"
            ),
            "{err}"
        );
        let err = error_of(&with_event(
            "          Type: Api\n          Properties: {Path: /x, Method: get}",
        ));
        assert!(
            err.contains("resource Fn, Events.Ev: event type Api (a REST API)"),
            "{err}"
        );
        assert!(err.contains("only HttpApi events are"), "{err}");
    }

    #[test]
    fn unknown_attributes_and_sns_destinations_are_errors() {
        let err = error_of(&with_event(
            "          Type: SQS\n          Properties: {Queue: !GetAtt Queue.Nope}",
        ));
        assert_eq!(
            err,
            "template.yaml: resource Fn, Events.Ev.Properties.Queue: resource Queue \
             (AWS::SQS::Queue) has no attribute Nope that the local runner resolves"
        );

        let err = error_of(&with_event(
            "          Type: DynamoDB\n          Properties:\n            Stream: !GetAtt Table.StreamArn\n            StartingPosition: LATEST\n            DestinationConfig: {OnFailure: {Destination: arn:aws:sns:us-east-1:123456789012:topic}}",
        ));
        assert!(
            err.starts_with(
                "template.yaml: resource Fn, Events.Ev.Properties.DestinationConfig.OnFailure.Destination: an SNS"
            ),
            "{err}"
        );
        assert!(err.contains("not supported locally"), "{err}");

        let err = error_of(&with_event(
            "          Type: DynamoDB\n          Properties:\n            Stream: !GetAtt Table.StreamArn\n            StartingPosition: LATEST\n            FilterCriteria: {Filters: [{Pattern: '{not json'}]}",
        ));
        assert!(
            err.starts_with(
                "template.yaml: resource Fn, Events.Ev.Properties.FilterCriteria.Filters[0].Pattern: not a valid JSON text: "
            ),
            "{err}"
        );
    }

    #[test]
    fn a_route_served_twice_is_an_error() {
        let err = error_of(
            r#"
Resources:
  One:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/one
      Events: {Get: {Type: HttpApi, Properties: {Path: /x, Method: get}}}
  Two:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/two
      Events: {Also: {Type: HttpApi, Properties: {Path: /x, Method: GET}}}
"#,
        );
        assert_eq!(
            err,
            "template.yaml: resource Two, Events.Also: route GET /x is already served by One.Get"
        );
    }

    #[test]
    fn route_authorizers_must_exist() {
        let err = error_of(
            r#"
Resources:
  Api:
    Type: AWS::Serverless::HttpApi
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn
      Events:
        Route: {Type: HttpApi, Properties: {ApiId: !Ref Api, Path: /x, Method: GET, Auth: {Authorizer: Missing}}}
"#,
        );
        assert_eq!(
            err,
            "template.yaml: resource Fn, Events.Route.Properties.Auth.Authorizer: authorizer \
             Missing is not defined in Auth.Authorizers of the resource Api"
        );
    }
}
