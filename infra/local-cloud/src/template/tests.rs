//! The runner's fixture template, loaded end to end.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use super::test_support::*;
use crate::model::{
    EventSpec, FunctionSpec, HttpRoute, IndexSpec, QueueSpec, ScheduleSource, SqsSource,
    StreamSource, TableSpec,
};

#[test]
fn fixture_tables_and_queues_resolve() {
    let model = fixture();
    assert_eq!(model.stack_name, "local");
    assert_eq!(
        model.tables,
        vec![TableSpec {
            logical_id: "ItemsTable".into(),
            name: "local-ItemsTable".into(),
            attributes: vec![
                ("pk".into(), "S".into()),
                ("sk".into(), "S".into()),
                ("gsi1pk".into(), "S".into()),
            ],
            key_schema: vec![("pk".into(), "HASH".into()), ("sk".into(), "RANGE".into())],
            global_secondary_indexes: vec![IndexSpec {
                name: "gsi1".into(),
                key_schema: vec![("gsi1pk".into(), "HASH".into())],
                projection_type: "KEYS_ONLY".into(),
                non_key_attributes: vec![],
            }],
            local_secondary_indexes: vec![],
            stream_view_type: Some("NEW_AND_OLD_IMAGES".into()),
            ttl_attribute: Some("expiresAt".into()),
        }]
    );
    let redrive = json!({
        "deadLetterTargetArn": queue_arn("local-WorkDeadLetterQueue"),
        "maxReceiveCount": 2,
    });
    assert_eq!(
        model.queues,
        vec![
            QueueSpec {
                logical_id: "OutputQueue".into(),
                name: "local-output".into(),
                url: url("local-output"),
                attributes: BTreeMap::new(),
            },
            QueueSpec {
                logical_id: "WorkDeadLetterQueue".into(),
                name: "local-WorkDeadLetterQueue".into(),
                url: url("local-WorkDeadLetterQueue"),
                attributes: env(&[("MessageRetentionPeriod", "1209600")]),
            },
            QueueSpec {
                logical_id: "WorkQueue".into(),
                name: "local-WorkQueue".into(),
                url: url("local-WorkQueue"),
                attributes: env(&[
                    ("VisibilityTimeout", "2"),
                    ("RedrivePolicy", &redrive.to_string()),
                ]),
            },
            QueueSpec {
                logical_id: "StreamFailureQueue".into(),
                name: "local-StreamFailureQueue".into(),
                url: url("local-StreamFailureQueue"),
                attributes: BTreeMap::new(),
            },
        ]
    );
    // The JSON text is exactly what SQS documents, key order included.
    assert_eq!(
        queue(&model, "WorkQueue").attributes["RedrivePolicy"],
        r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:local-WorkDeadLetterQueue","maxReceiveCount":2}"#
    );
}

#[test]
fn fixture_echo_function_resolves_environment_and_routes() {
    let model = fixture();
    let echo = function(&model, "EchoFunction");
    let expected = FunctionSpec {
        logical_id: "EchoFunction".into(),
        name: "EchoFunction".into(),
        binary: "fixture-http".into(),
        handler: "bootstrap".into(),
        timeout: Duration::from_secs(1),
        memory_mb: 128,
        environment: env(&[
            ("GREETING", "hello"),
            ("OUTPUT_QUEUE_URL", &url("local-output")),
            ("TABLE_NAME", "local-ItemsTable"),
            (
                "TABLE_ARN",
                "arn:aws:dynamodb:us-east-1:123456789012:table/local-ItemsTable",
            ),
            ("WORK_QUEUE_ARN", &queue_arn("local-WorkQueue")),
            ("WORK_QUEUE_NAME", "local-WorkQueue"),
            ("STACK", "local in us-east-1 of 123456789012"),
        ]),
        reserved_concurrency: None,
        log_filter: None,
        events: vec![
            EventSpec::Http(HttpRoute {
                event_name: "Items".into(),
                method: "GET".into(),
                path: "/items/{itemId}".into(),
                authorizer: jwt("LocalJwt"),
                throttle: None,
            }),
            EventSpec::Http(HttpRoute {
                event_name: "Mixed".into(),
                method: "POST".into(),
                path: "/items/{itemId}/parts/{partId}".into(),
                authorizer: jwt("LocalJwt"),
                throttle: None,
            }),
            EventSpec::Http(HttpRoute {
                event_name: "Public".into(),
                method: "ANY".into(),
                path: "/public/{proxy+}".into(),
                authorizer: None,
                throttle: None,
            }),
        ],
    };
    assert_eq!(echo, &expected);

    // Globals alone configure a function that sets nothing itself.
    let hello = function(&model, "HelloFunction");
    assert_eq!(hello.timeout, Duration::from_secs(3));
    assert_eq!(
        hello.environment,
        env(&[
            ("GREETING", "hello"),
            ("OUTPUT_QUEUE_URL", &url("local-output"))
        ])
    );
}

#[test]
fn fixture_event_sources_resolve() {
    let model = fixture();
    assert_eq!(
        function(&model, "WorkerFunction").events,
        vec![EventSpec::Sqs(SqsSource {
            event_name: "Work".into(),
            queue_logical_id: "WorkQueue".into(),
            queue_arn: queue_arn("local-WorkQueue"),
            queue_url: url("local-WorkQueue"),
            batch_size: 5,
            batching_window: Duration::from_secs(1),
            report_batch_item_failures: true,
            maximum_concurrency: Some(2),
            enabled: true,
        })]
    );
    assert_eq!(
        function(&model, "StreamFunction").events,
        vec![EventSpec::Stream(StreamSource {
            event_name: "Changes".into(),
            table_logical_id: "ItemsTable".into(),
            table_name: "local-ItemsTable".into(),
            starting_position: "TRIM_HORIZON".into(),
            batch_size: 10,
            batching_window: Duration::ZERO,
            filters: vec![json!({"dynamodb": {"NewImage": {"kind": {"S": ["keep"]}}}})],
            maximum_retry_attempts: Some(1),
            maximum_record_age_seconds: None,
            bisect_batch_on_function_error: true,
            on_failure_queue_url: Some(url("local-StreamFailureQueue")),
            function_response_report_batch_item_failures: false,
            enabled: true,
        })]
    );
    assert_eq!(
        function(&model, "TickFunction").events,
        vec![EventSpec::Schedule(ScheduleSource {
            event_name: "EverySecond".into(),
            expression: "rate(1 second)".into(),
            input: Some(r#"{"tick": true}"#.into()),
            enabled: true,
        })]
    );
}
