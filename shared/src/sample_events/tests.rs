use super::samples::{follow_event, local_name};
use super::*;
use crate::admin_mfa::{self, DirectoryError, MfaDirectory};
use crate::dynamo::{n, s};
use crate::events::SocialEvent;
use crate::events::USER_FOLLOWED;
use crate::ids::UserId;
use crate::seckill::recovery::failover::CacheEvent;
use crate::social::relay::{self, EventSink, SendFailed};
use async_trait::async_trait;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use time::macros::datetime;
use yaml_serde::{Mapping, Value as Yaml};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn events_dir() -> PathBuf {
    root().join("events")
}

/// `template.yaml`, its tags (`!GetAtt`, `!Sub`, ...) read as the plain values they tag.
fn template() -> Yaml {
    let text = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml");
    yaml_serde::from_str(&text).expect("template.yaml is YAML")
}

/// The value a tag tags (`!GetAtt OrderQueue.Arn` is `OrderQueue.Arn`).
fn plain(value: &Yaml) -> &Yaml {
    match value {
        Yaml::Tagged(tagged) => plain(&tagged.value),
        other => other,
    }
}

fn text(value: &Yaml) -> String {
    match plain(value) {
        Yaml::String(text) => text.clone(),
        Yaml::Sequence(parts) => parts.iter().map(text).collect::<Vec<_>>().join("."),
        other => panic!("expected a name, found {other:?}"),
    }
}

fn resources(template: &Yaml) -> &Mapping {
    template["Resources"].as_mapping().expect("Resources")
}

/// A function of the template: its logical id, folder (its `Handler`: the folder in
/// `functions/` whose `main` its bundle runs) and events `(name, Type, Properties)`.
struct Function<'t> {
    logical_id: String,
    folder: String,
    events: Vec<(String, String, &'t Yaml)>,
}

fn functions(template: &Yaml) -> Vec<Function<'_>> {
    resources(template)
        .iter()
        .filter(|(_, resource)| resource["Type"] == "AWS::Serverless::Function")
        .map(|(id, resource)| {
            let handler = text(&resource["Properties"]["Handler"]);
            let events = resource["Properties"]
                .get("Events")
                .and_then(Yaml::as_mapping)
                .map(|events| {
                    events
                        .iter()
                        .map(|(name, event)| {
                            (text(name), text(&event["Type"]), &event["Properties"])
                        })
                        .collect()
                })
                .unwrap_or_default();
            Function {
                logical_id: text(id),
                folder: handler,
                events,
            }
        })
        .collect()
}

fn not_http(template: &Yaml) -> Vec<Function<'_>> {
    functions(template)
        .into_iter()
        .filter(|function| !function.events.iter().any(|(_, kind, _)| kind == "HttpApi"))
        .collect()
}

/// The physical name of the queue `logical_id` as the local runner gives it: its
/// `QueueName` with the stack's name, or `<stack>-<LogicalId>`.
fn queue_name(template: &Yaml, logical_id: &str) -> String {
    let queue = &resources(template)[logical_id];
    match queue["Properties"].get("QueueName") {
        Some(name) => text(name).replace("${AWS::StackName}", STACK),
        None => local_name(logical_id),
    }
}

/// `OrderQueue` of `!GetAtt OrderQueue.Arn`.
fn target(value: &Yaml) -> String {
    let name = text(value);
    name.split('.').next().unwrap_or_default().to_owned()
}

/// Every mapping entry named `key`, anywhere in `value` (through tags and lists).
fn entries<'a>(value: &'a Yaml, key: &str, out: &mut Vec<&'a Yaml>) {
    match plain(value) {
        Yaml::Mapping(mapping) => {
            for (name, item) in mapping {
                if name.as_str() == Some(key) {
                    out.push(item);
                }
                entries(item, key, out);
            }
        }
        Yaml::Sequence(items) => items.iter().for_each(|item| entries(item, key, out)),
        _ => {}
    }
}

fn samples_of(function: &str) -> Vec<Sample> {
    let samples: Vec<Sample> = samples()
        .unwrap()
        .into_iter()
        .filter(|sample| sample.function == function)
        .collect();
    assert!(!samples.is_empty(), "no sample event of {function}");
    samples
}

#[test]
fn the_sample_events_are_the_files_in_events() {
    let samples = samples().expect("the samples build");
    let update = std::env::var_os("UPDATE_EVENTS").is_some_and(|value| value != "0");
    let dir = events_dir();
    let mut expected: Vec<(String, String)> = samples
        .iter()
        .map(|sample| (sample.file.clone(), sample.text()))
        .collect();
    expected.push(("README.md".to_owned(), readme(&samples)));
    let mut differ = Vec::new();
    for (file, text) in &expected {
        let path = dir.join(file);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        if update {
            std::fs::create_dir_all(&dir).expect("create events/");
            std::fs::write(&path, text).expect("write a sample event");
        } else {
            differ.push(file.clone());
        }
    }
    let stale: Vec<String> = std::fs::read_dir(&dir)
        .map(|listing| {
            listing
                .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                .filter(|name| name.ends_with(".json"))
                .filter(|name| !expected.iter().any(|(file, _)| file == name))
                .collect()
        })
        .unwrap_or_default();
    if update {
        for file in &stale {
            std::fs::remove_file(dir.join(file)).expect("remove a stale sample event");
        }
        return;
    }
    assert!(
        differ.is_empty() && stale.is_empty(),
        "events/ is not what shared/src/sample_events/ generates: differs or missing: \
         {differ:?}; not generated: {stale:?}. Run `UPDATE_EVENTS=1 cargo nextest run -p \
         shared sample_events` to rewrite the files, and review the difference"
    );
}

#[test]
fn every_function_that_is_not_an_http_route_has_a_sample_event() {
    let template = template();
    let folders: Vec<String> = not_http(&template)
        .into_iter()
        .map(|function| function.folder)
        .collect();
    for sample in [
        "order-consumer",
        "outbox-relay",
        "admin-mfa-guard",
        "reconcile",
    ] {
        assert!(
            folders.iter().any(|f| f == sample),
            "{sample} in {folders:?}"
        );
    }
    // Every source is one the tests below check the samples of.
    let mut triggers = Vec::new();
    entries(&template, "PreTokenGenerationConfig", &mut triggers);
    for function in not_http(&template) {
        let kinds: Vec<&str> = function
            .events
            .iter()
            .map(|(_, kind, _)| kind.as_str())
            .collect();
        let checked = ["SQS", "DynamoDB", "Schedule", "ScheduleV2", "SNS"];
        let trigger = triggers
            .iter()
            .any(|config| target(&config["LambdaArn"]) == function.logical_id);
        assert!(
            kinds.iter().all(|kind| checked.contains(kind)) && (trigger || !kinds.is_empty()),
            "{} is invoked by {kinds:?}{}: the samples of no such source are checked",
            function.logical_id,
            if trigger { " and Cognito" } else { "" }
        );
    }
    let samples = samples().unwrap();
    for folder in &folders {
        assert!(
            samples.iter().any(|sample| sample.function == folder),
            "functions/{folder} is not an HTTP route and has no sample event in events/"
        );
    }
    for sample in &samples {
        assert!(
            folders.iter().any(|folder| folder == sample.function),
            "{} is the sample of {}, which is no function of template.yaml without a route",
            sample.file,
            sample.function
        );
    }
}

/// The consumer's own parser of `function`'s messages: what makes it refuse a body.
fn parse_body(function: &str, body: &str) -> Result<(), String> {
    use crate::seckill::{order as orders, sale::page as sale_page};
    let social = |body: &str| -> Result<(), String> {
        let event = SocialEvent::parse(body).map_err(|err| err.to_string())?;
        let (SocialEvent::UserFollowed(envelope) | SocialEvent::UserUnfollowed(envelope)) = event;
        UserId::parse(&envelope.payload.follower_id).map_err(|err| err.to_string())?;
        UserId::parse(&envelope.payload.followee_id).map_err(|err| err.to_string())?;
        Ok(())
    };
    match function {
        "order-consumer" => orders::parse_order_placed(body)
            .map(drop)
            .map_err(|err| err.to_string()),
        "payment-timeout-consumer" => orders::parse_payment_due(body)
            .map(drop)
            .map_err(|err| err.to_string()),
        "sale-page-writer" => sale_page::parse_requested(body)
            .map(drop)
            .map_err(|err| err.to_string()),
        "notification-consumer" | "follower-count-consumer" => social(body),
        other => panic!("no parser known for the messages of {other}: add its consumer's"),
    }
}

#[test]
fn each_sqs_sample_comes_from_the_functions_queue_and_its_consumer_parses_every_body() {
    let template = template();
    let mut checked = 0;
    for function in not_http(&template) {
        for (name, kind, properties) in &function.events {
            if kind != "SQS" {
                continue;
            }
            let queue = queue_arn(&queue_name(&template, &target(&properties["Queue"])));
            for sample in samples_of(&function.folder) {
                let event: SqsEvent = serde_json::from_value(sample.event.clone())
                    .unwrap_or_else(|err| panic!("{} is no SQS event: {err}", sample.file));
                assert!(!event.records.is_empty(), "{}", sample.file);
                for record in &event.records {
                    assert_eq!(
                        record.event_source_arn.as_deref(),
                        Some(queue.as_str()),
                        "{}: the queue of {}.{name}",
                        sample.file,
                        function.logical_id
                    );
                    let body = record.body.as_deref().unwrap_or_default();
                    assert_eq!(record.md5_of_body, Some(hex(&digest(body))));
                    if let Err(err) = parse_body(&function.folder, body) {
                        panic!(
                            "{}: {} refuses the body: {err}",
                            sample.file, function.folder
                        );
                    }
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 5, "only {checked} SQS samples");
}

/// Lambda's event filtering, for what `FilterCriteria` patterns here use: exact values and
/// `prefix`.
fn passes(pattern: &Value, record: &Value) -> bool {
    let Value::Object(fields) = pattern else {
        panic!("a pattern is an object: {pattern}")
    };
    fields.iter().all(|(key, expected)| {
        let actual = record.get(key);
        match expected {
            Value::Object(_) => actual.is_some_and(|actual| passes(expected, actual)),
            Value::Array(options) => options.iter().any(|option| match option {
                Value::Object(operator) => operator.iter().all(|(name, argument)| {
                    assert_eq!(name, "prefix", "extend this check to {name} patterns");
                    let text = actual.and_then(Value::as_str).unwrap_or_default();
                    text.starts_with(argument.as_str().unwrap_or_default())
                }),
                literal => actual == Some(literal),
            }),
            other => panic!("a pattern's leaf is a list: {other}"),
        }
    })
}

/// A queue in memory.
#[derive(Default)]
struct Sent(Mutex<Vec<String>>);

#[async_trait]
impl EventSink for Sent {
    async fn send_all(&self, bodies: &[&str]) -> Result<(), SendFailed> {
        let mut sent = self.0.lock().unwrap();
        sent.extend(bodies.iter().map(|body| (*body).to_owned()));
        Ok(())
    }
}

#[tokio::test]
async fn the_stream_sample_passes_the_relays_filter_and_the_relay_sends_its_event() {
    let template = template();
    let relay_function = not_http(&template)
        .into_iter()
        .find(|function| {
            function
                .events
                .iter()
                .any(|(_, kind, _)| kind == "DynamoDB")
        })
        .expect("a function on a DynamoDB stream");
    let (_, _, properties) = relay_function
        .events
        .iter()
        .find(|(_, kind, _)| kind == "DynamoDB")
        .unwrap();
    let table = target(&properties["Stream"]);
    let view = text(
        &resources(&template)[table.as_str()]["Properties"]["StreamSpecification"]["StreamViewType"],
    );
    let patterns: Vec<Value> = properties["FilterCriteria"]["Filters"]
        .as_sequence()
        .into_iter()
        .flatten()
        .map(|filter| serde_json::from_str(&text(&filter["Pattern"])).expect("a JSON pattern"))
        .collect();
    assert!(!patterns.is_empty(), "the relay's stream has a filter");

    for sample in samples_of(&relay_function.folder) {
        let event: StreamEvent = serde_json::from_value(sample.event.clone())
            .unwrap_or_else(|err| panic!("{} is no DynamoDB stream event: {err}", sample.file));
        assert!(!event.records.is_empty(), "{}", sample.file);
        for (record, json) in event
            .records
            .iter()
            .zip(sample.event["Records"].as_array().unwrap())
        {
            assert!(
                record
                    .event_source_arn
                    .as_deref()
                    .is_some_and(|arn| arn
                        .starts_with(&format!("{}/stream/", table_arn(&local_name(&table))))),
                "{}: the stream of {table}",
                sample.file
            );
            assert_eq!(
                record
                    .change
                    .stream_view_type
                    .as_ref()
                    .map(ToString::to_string),
                Some(view.clone())
            );
            assert!(
                patterns.iter().any(|pattern| passes(pattern, json)),
                "{}: a record the FilterCriteria of {} would drop: {json}",
                sample.file,
                relay_function.logical_id
            );
        }

        // The relay's own reading: every outbox event is sent unchanged to each queue.
        let input: relay::StreamEvent = serde_json::from_value(sample.event.clone()).unwrap();
        let (a, b) = (Sent::default(), Sent::default());
        assert!(relay::relay(&input, &[&a, &b]).await.is_empty());
        let images: Vec<String> = sample.event["Records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|record| {
                record["dynamodb"]["NewImage"]["event"]["S"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        for sink in [&a, &b] {
            let sent = sink.0.lock().unwrap().clone();
            assert_eq!(sent, images, "{}", sample.file);
            for body in &sent {
                parse_body("notification-consumer", body).unwrap();
            }
        }
    }
}

#[test]
fn an_outbox_item_is_the_event_under_its_id_until_a_day_later() {
    let event = follow_event(USER_FOLLOWED, datetime!(2026-12-01 18:00:00 UTC), 1);
    let item = outbox_item(&event).unwrap();
    assert_eq!(item["pk"], s(format!("OUTBOX#{}", event.id)));
    assert_eq!(item["sk"], s("EVENT"));
    assert_eq!(item["expiresAt"], n(1_796_234_400));
    let text = item["event"].as_s().unwrap();
    assert_eq!(
        SocialEvent::parse(text).unwrap(),
        SocialEvent::UserFollowed(event)
    );
}

#[test]
fn the_schedule_sample_is_what_the_schedule_sends() {
    let template = template();
    let mut checked = 0;
    for function in not_http(&template) {
        for (name, kind, properties) in &function.events {
            if kind != "Schedule" && kind != "ScheduleV2" {
                continue;
            }
            for sample in samples_of(&function.folder) {
                if let Some(input) = properties.get("Input") {
                    let input: Value = serde_json::from_str(&text(input)).unwrap();
                    assert_eq!(sample.event, input, "{}: the schedule's Input", sample.file);
                } else {
                    let event: CloudWatchEvent = serde_json::from_value(sample.event.clone())
                        .unwrap_or_else(|err| {
                            panic!("{} is no scheduled event: {err}", sample.file)
                        });
                    assert_eq!(event.detail_type.as_deref(), Some("Scheduled Event"));
                    assert_eq!(
                        event.resources,
                        [rule_arn(&local_name(&format!(
                            "{}{name}",
                            function.logical_id
                        )))]
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 0);
}

#[test]
fn the_sns_sample_is_a_failover_of_the_functions_cache_on_its_topic() {
    let template = template();
    let mut checked = 0;
    for function in not_http(&template) {
        for (_, kind, properties) in &function.events {
            if kind != "SNS" {
                continue;
            }
            let topic = topic_arn(&local_name(&target(&properties["Topic"])));
            for sample in samples_of(&function.folder) {
                let event: SnsEvent = serde_json::from_value(sample.event.clone())
                    .unwrap_or_else(|err| panic!("{} is no SNS event: {err}", sample.file));
                for record in &event.records {
                    assert_eq!(record.sns.topic_arn, topic, "{}", sample.file);
                    let events = CacheEvent::parse(&record.sns.message);
                    // `!Ref RedisCache`, the function's REDIS_CACHE_NAME, is the logical id
                    // locally.
                    assert!(
                        events.iter().any(|event| event.concerns("RedisCache")),
                        "{}: {events:?} asks for no recovery of RedisCache",
                        sample.file
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 0);
}

/// A directory in which nobody has MFA.
struct NoMfa;

#[async_trait]
impl MfaDirectory for NoMfa {
    async fn has_mfa(&self, _: &str, _: &str) -> Result<bool, DirectoryError> {
        Ok(false)
    }
}

#[tokio::test]
async fn the_cognito_samples_are_pre_token_generation_events_of_the_triggers_version() {
    let template = template();
    let mut configs = Vec::new();
    entries(&template, "PreTokenGenerationConfig", &mut configs);
    let mut checked = 0;
    for function in not_http(&template) {
        let Some(config) = configs
            .iter()
            .find(|config| target(&config["LambdaArn"]) == function.logical_id)
        else {
            continue;
        };
        let version = text(&config["LambdaVersion"]);
        assert_eq!(version, "V2_0", "the samples are V2 events");
        for sample in samples_of(&function.folder) {
            let event: CognitoEventUserPoolsPreTokenGenV2 =
                serde_json::from_value(sample.event.clone()).unwrap_or_else(|err| {
                    panic!("{} is no Pre Token Generation V2 event: {err}", sample.file)
                });
            assert_eq!(
                event.cognito_event_user_pools_header.version.as_deref(),
                Some("2")
            );
            let groups = event.request.group_configuration.groups_to_override.clone();
            let answer = admin_mfa::guard(&NoMfa, sample.event.clone())
                .await
                .unwrap_or_else(|err| panic!("{}: the guard refuses it: {err}", sample.file));
            let kept = &answer["response"]["claimsAndScopeOverrideDetails"]["groupOverrideDetails"]
                ["groupsToOverride"];
            if groups.iter().any(|group| group == "admin") {
                assert_eq!(
                    *kept,
                    json!([]),
                    "{}: admin without MFA is removed",
                    sample.file
                );
            } else {
                assert_eq!(answer, sample.event, "{}: passed unchanged", sample.file);
            }
            checked += 1;
        }
    }
    assert!(checked > 0, "no Cognito trigger sample was checked");
}
