//! The rules of AWS that `template.yaml` relies on, written down so that a later change cannot
//! break them silently (the local runner would accept what Lambda or SQS refuses):
//!
//! - an SQS queue consumed by a function hides a received message for at least six times the
//!   function's timeout (Lambda refuses less than one timeout, and so does the local runner;
//!   six is AWS's advice, so that a batch retried by the poller is not handed out twice);
//! - an SQS event source takes more than 10 messages per batch only with a batching window;
//! - `ScalingConfig.MaximumConcurrency` is from 2 to 1,000;
//! - every function that uses Redis runs in the VPC, in both private subnets, with the
//!   security group that alone may reach the cache.
//! - a resource that publishes its events to an SNS topic (the cache) is created after the
//!   topic's policy that lets it publish.
//!
//! That each consumer commits a whole batch of the template's `BatchSize` within DynamoDB's 100
//! actions per transaction depends on the code's chunking as much as on the template, so it is
//! tested where both meet: `shared/tests/emulators` (`a_full_batch_of_*`) sends such a batch
//! against moto, which refuses a larger transaction as DynamoDB does.
//!
//! And what a first deploy must not lose: the tables and the user pool are retained when the
//! stack is deleted or they are replaced (a new pool gives every user a new `sub`), the cache
//! leaves a final snapshot, and its node type defaults to a non-burstable one.

use crate::support::{entries, project_model, root, yaml};
use local_cloud::model::EventSpec;
use yaml_serde::Value;

#[test]
fn every_consumed_queue_hides_a_message_for_six_function_timeouts() {
    let model = project_model(&[]);
    let mut checked = 0;
    for function in &model.functions {
        for event in &function.events {
            let EventSpec::Sqs(source) = event else {
                continue;
            };
            let queue = model
                .queue(&source.queue_logical_id)
                .expect("the event's queue is in the template");
            let visibility: u64 = queue.attributes["VisibilityTimeout"].parse().unwrap();
            let timeout = function.timeout.as_secs();
            assert!(
                visibility >= 6 * timeout,
                "{}: {} hides a message {visibility} s, less than 6 x the {timeout} s timeout",
                function.logical_id,
                queue.logical_id
            );
            checked += 1;
        }
    }
    assert!(checked >= 4, "only {checked} SQS event sources");
}

#[test]
fn a_visibility_below_the_consumers_timeout_is_refused_as_lambda_does() {
    let names = local_cloud::template::LocalNames {
        stack_name: "contract".to_owned(),
        region: "us-east-1".to_owned(),
        account_id: "123456789012".to_owned(),
        sqs_endpoint: "http://127.0.0.1:1".to_owned(),
    };
    let load = |visibility: &str, timeout: &str| {
        let overrides = [
            (
                "QueueVisibilityTimeoutSeconds".to_owned(),
                visibility.to_owned(),
            ),
            ("ConsumerTimeoutSeconds".to_owned(), timeout.to_owned()),
        ]
        .into();
        local_cloud::template::load(&root().join("template.yaml"), &overrides, &names)
    };
    let err = load("5", "10").expect_err("Lambda refuses it");
    let chain = format!("{err:#}");
    assert!(
        chain.contains(
            "visibility timeout, 5 seconds, is less than the function's timeout, 10 seconds"
        ),
        "{chain}"
    );
    // What the local tests do: both shortened.
    assert!(load("2", "2").is_ok());
}

#[test]
fn sqs_batches_above_ten_have_a_window_and_concurrency_caps_are_valid() {
    let model = project_model(&[]);
    for function in &model.functions {
        for event in &function.events {
            let EventSpec::Sqs(source) = event else {
                continue;
            };
            let name = &function.logical_id;
            assert!(
                (1..=10_000).contains(&source.batch_size),
                "{name}: BatchSize {}",
                source.batch_size
            );
            if source.batch_size > 10 {
                assert!(
                    !source.batching_window.is_zero(),
                    "{name}: BatchSize {} needs MaximumBatchingWindowInSeconds",
                    source.batch_size
                );
            }
            assert!(source.batching_window.as_secs() <= 300, "{name}: window");
            if let Some(cap) = source.maximum_concurrency {
                assert!(
                    (2..=1000).contains(&cap),
                    "{name}: MaximumConcurrency {cap}"
                );
            }
        }
    }
}

/// `!GetAtt X.Y` or `!Ref X` as written, for comparing references.
fn reference(value: &Value) -> String {
    match value {
        Value::Tagged(tagged) => format!("{} {:?}", tagged.tag, tagged.value),
        other => format!("{other:?}"),
    }
}

#[test]
fn every_redis_function_runs_in_the_vpc_with_the_cache_security_group() {
    let template = yaml("template.yaml");
    let resources = entries(&template, "Resources");
    let cache_group = resources
        .iter()
        .find(|(name, _)| *name == "CacheSecurityGroup")
        .map(|(_, group)| *group)
        .expect("CacheSecurityGroup");
    let ingress = cache_group["Properties"]["SecurityGroupIngress"]
        .as_sequence()
        .expect("the cache's ingress rules");
    let sources: Vec<String> = ingress
        .iter()
        .map(|rule| reference(&rule["SourceSecurityGroupId"]))
        .collect();
    assert_eq!(
        ingress.len(),
        1,
        "the cache admits one source only: {sources:?}"
    );
    assert_eq!(ingress[0]["FromPort"], Value::from(6379));

    let mut redis_functions = 0;
    for (name, resource) in &resources {
        if resource["Type"] != "AWS::Serverless::Function" {
            continue;
        }
        let properties = &resource["Properties"];
        let uses_redis = properties["Environment"]["Variables"]
            .get("REDIS_ENDPOINT")
            .is_some();
        let vpc = &properties["VpcConfig"];
        if !uses_redis {
            assert!(
                vpc.is_null(),
                "{name} does not use Redis but runs in the VPC"
            );
            continue;
        }
        redis_functions += 1;
        // The references in one of the VPC settings, which must be a list.
        let references = |field: &str, missing: &str| -> Vec<String> {
            vpc[field]
                .as_sequence()
                .unwrap_or_else(|| panic!("{name} {missing}"))
                .iter()
                .map(reference)
                .collect()
        };
        let groups = references("SecurityGroupIds", "uses Redis outside the VPC");
        assert_eq!(
            groups, sources,
            "{name}: the security group the cache admits"
        );
        let subnets = references("SubnetIds", "has no subnets");
        assert_eq!(
            subnets.len(),
            2,
            "{name}: both private subnets: {subnets:?}"
        );
        assert!(
            subnets.iter().all(|s| s.contains("PrivateSubnet")),
            "{name}: {subnets:?}"
        );
    }
    assert_eq!(redis_functions, 13, "the thirteen Redis functions");
}

/// A resource's attribute as written, e.g. its `DeletionPolicy`.
fn attribute<'a>(resources: &[(&str, &'a Value)], name: &str, key: &str) -> &'a Value {
    let resource = resources
        .iter()
        .find(|(logical_id, _)| *logical_id == name)
        .map(|(_, resource)| *resource)
        .unwrap_or_else(|| panic!("no resource {name}"));
    &resource[key]
}

#[test]
fn data_and_identities_outlive_a_deleted_or_replaced_stack() {
    let template = yaml("template.yaml");
    let resources = entries(&template, "Resources");
    for (name, policy) in [
        ("SocialTable", "Retain"),
        ("CommerceTable", "Retain"),
        ("UserPool", "Retain"),
        ("RedisCache", "Snapshot"),
    ] {
        for key in ["DeletionPolicy", "UpdateReplacePolicy"] {
            assert_eq!(
                attribute(&resources, name, key),
                &Value::from(policy),
                "{name} {key}"
            );
        }
    }
    // The cache on the hot path of every order is not burstable by default.
    assert_eq!(
        attribute(&resources, "RedisCache", "Properties")["CacheNodeType"],
        yaml_value("!Ref CacheNodeType")
    );
    let default = entries(&template, "Parameters")
        .into_iter()
        .find(|(name, _)| *name == "CacheNodeType")
        .map(|(_, parameter)| parameter["Default"].as_str().unwrap_or_default().to_owned())
        .expect("a CacheNodeType parameter");
    assert!(
        default.starts_with("cache.") && !default.starts_with("cache.t"),
        "CacheNodeType defaults to a burstable node: {default}"
    );
}

fn yaml_value(text: &str) -> Value {
    yaml_serde::from_str(text).unwrap()
}

/// A `!Ref` to a logical id (or a resource's `Ref` form), as written.
fn ref_target(value: &Value) -> Option<String> {
    match value {
        Value::Tagged(tagged) if tagged.tag.to_string().trim_start_matches('!') == "Ref" => {
            tagged.value.as_str().map(str::to_owned)
        }
        Value::Mapping(map) => map.get("Ref").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

/// The logical ids in a resource's `DependsOn` (a name or a list of names).
fn depends_on(resource: &Value) -> Vec<String> {
    match resource.get("DependsOn") {
        Some(Value::String(name)) => vec![name.clone()],
        Some(Value::Sequence(names)) => names
            .iter()
            .filter_map(|n| n.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// A service that publishes its events to a topic checks, when the resource is created, that
/// the topic's policy lets it; CloudFormation orders a resource after its topic (the `!Ref`)
/// but not after the topic's policy, unless the resource depends on it. ElastiCache marks a
/// topic it may not publish to inactive.
#[test]
fn a_resource_that_publishes_to_a_topic_waits_for_the_topics_policy() {
    let template = yaml("template.yaml");
    let resources = entries(&template, "Resources");
    let mut checked = 0;
    for (id, resource) in &resources {
        let Some(topic) = ref_target(&resource["Properties"]["NotificationTopicArn"]) else {
            continue;
        };
        let policies: Vec<&str> = resources
            .iter()
            .filter(|(_, r)| r["Type"].as_str() == Some("AWS::SNS::TopicPolicy"))
            .filter(|(_, r)| {
                r["Properties"]["Topics"]
                    .as_sequence()
                    .is_some_and(|topics| {
                        topics
                            .iter()
                            .any(|t| ref_target(t).as_deref() == Some(&topic))
                    })
            })
            .map(|(policy, _)| *policy)
            .collect();
        assert!(!policies.is_empty(), "{id}: {topic} has no topic policy");
        let waits = depends_on(resource);
        for policy in policies {
            assert!(
                waits.iter().any(|w| w == policy),
                "{id} publishes to {topic} but does not depend on {policy}: {waits:?}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 1, "RedisCache publishes its events to a topic");
}

/// The logical id of `!GetAtt Id.Attribute` when the attribute is `attribute`.
fn get_att(value: &Value, attribute: &str) -> Option<String> {
    let Value::Tagged(tagged) = value else {
        return None;
    };
    if tagged.tag.to_string().trim_start_matches('!') != "GetAtt" {
        return None;
    }
    let target = tagged.value.as_str()?;
    target
        .strip_suffix(&format!(".{attribute}"))
        .map(str::to_owned)
}

/// A stream mapping retries a failing batch, by default until its records leave the stream
/// (24 h for DynamoDB), holding back every record behind it in its shard: one poison record
/// stalls the shard for a day, then everything is lost. Every stream mapping splits a failing
/// batch, gives up after a finite number of retries and at a record age below the stream's
/// retention, and hands what it gave up on to a queue that an alarm watches.
#[test]
fn every_stream_mapping_gives_up_in_bounded_time_to_an_alarmed_queue() {
    let template = yaml("template.yaml");
    let resources = entries(&template, "Resources");
    let alarmed_queues: Vec<String> = resources
        .iter()
        .filter(|(_, r)| r["Type"].as_str() == Some("AWS::CloudWatch::Alarm"))
        .map(|(_, r)| &r["Properties"])
        .filter(|p| {
            p["Namespace"] == "AWS/SQS"
                && p["MetricName"] == "ApproximateNumberOfMessagesVisible"
                && p["Threshold"].as_f64() == Some(0.0)
                && p["AlarmActions"]
                    .as_sequence()
                    .is_some_and(|a| !a.is_empty())
        })
        .flat_map(|p| p["Dimensions"].as_sequence().cloned().unwrap_or_default())
        .filter(|d| d["Name"] == "QueueName")
        .filter_map(|d| get_att(&d["Value"], "QueueName"))
        .collect();
    let mut checked = 0;
    for (id, resource) in &resources {
        for (event, spec) in entries(&resource["Properties"], "Events") {
            if !matches!(spec["Type"].as_str(), Some("DynamoDB" | "Kinesis")) {
                continue;
            }
            let at = format!("{id}.{event}");
            let properties = &spec["Properties"];
            let retries = properties["MaximumRetryAttempts"].as_i64();
            assert!(
                retries.is_some_and(|r| (0..=10_000).contains(&r)),
                "{at}: MaximumRetryAttempts {retries:?} retries a poison record until it expires"
            );
            let age = properties["MaximumRecordAgeInSeconds"].as_i64();
            assert!(
                age.is_some_and(|a| (60..86_400).contains(&a)),
                "{at}: MaximumRecordAgeInSeconds {age:?}, not below the stream's 24 h retention"
            );
            assert_eq!(
                properties["BisectBatchOnFunctionError"],
                Value::Bool(true),
                "{at}: a failing batch is split down to the record that fails"
            );
            let destination = &properties["DestinationConfig"]["OnFailure"];
            assert_eq!(destination["Type"], "SQS", "{at}");
            let queue = get_att(&destination["Destination"], "Arn")
                .unwrap_or_else(|| panic!("{at}: OnFailure is no queue of the template"));
            assert_eq!(
                attribute(&resources, &queue, "Type"),
                &Value::from("AWS::SQS::Queue"),
                "{at}"
            );
            assert!(
                alarmed_queues.contains(&queue),
                "{at}: no alarm on {queue}, where its given-up records wait unseen"
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 1,
        "the outbox relay reads the social table's stream"
    );
}
