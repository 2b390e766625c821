//! Provisioning against the real emulator: the fixture template and the project's own, each
//! under a fresh stack name, provisioned twice.

use std::collections::BTreeMap;
use std::path::Path;

use aws_sdk_dynamodb::types::{
    AttributeValue, KeyType, ProjectionType, StreamViewType, TableDescription, TimeToLiveStatus,
};
use aws_sdk_sqs::types::QueueAttributeName;
use local_cloud::model::{Model, QueueSpec};
use local_cloud::provision::provision;
use local_cloud::template::{self, LocalNames};
use serde_json::json;

use crate::support::{endpoint, fixture_template, project_template, unique};

/// moto's default account.
const ACCOUNT: &str = "123456789012";

struct Clients {
    dynamodb: aws_sdk_dynamodb::Client,
    sqs: aws_sdk_sqs::Client,
}

async fn clients() -> Clients {
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .load()
        .await;
    Clients {
        dynamodb: aws_sdk_dynamodb::Client::new(&config),
        sqs: aws_sdk_sqs::Client::new(&config),
    }
}

impl Clients {
    async fn provision(&self, model: &Model) -> anyhow::Result<()> {
        provision(model, &self.dynamodb, &self.sqs).await
    }

    /// The description of `table`, which must exist.
    async fn describe(&self, table: &str) -> TableDescription {
        let described = self
            .dynamodb
            .describe_table()
            .table_name(table)
            .send()
            .await
            .unwrap_or_else(|err| panic!("table {table}: {err:?}"));
        described.table.expect("a description")
    }
}

/// The emulator's clients, a stack name no other test uses (`prefix` and a random part) and
/// the template at `path` loaded under it.
async fn fresh(path: &Path, prefix: &str) -> (Clients, String, Model) {
    let stack = unique(prefix);
    let model = load(path, &stack);
    (clients().await, stack, model)
}

fn region() -> String {
    endpoint("AWS_REGION")
}

fn names(stack: &str) -> LocalNames {
    LocalNames {
        stack_name: stack.to_owned(),
        region: region(),
        account_id: ACCOUNT.to_owned(),
        sqs_endpoint: endpoint("AWS_ENDPOINT_URL")
            .trim_end_matches('/')
            .to_owned(),
    }
}

fn load(path: &Path, stack: &str) -> Model {
    template::load(path, &BTreeMap::new(), &names(stack)).expect("the template loads")
}

fn queue<'m>(model: &'m Model, id: &str) -> &'m QueueSpec {
    model.queue(id).unwrap_or_else(|| panic!("queue {id}"))
}

fn queue_arn(name: &str) -> String {
    format!("arn:aws:sqs:{}:{ACCOUNT}:{name}", region())
}

async fn queue_attributes(clients: &Clients, url: &str) -> BTreeMap<String, String> {
    let out = clients
        .sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap_or_else(|err| panic!("attributes of {url}: {err:?}"));
    out.attributes()
        .into_iter()
        .flatten()
        .map(|(name, value)| (name.as_str().to_owned(), value.clone()))
        .collect()
}

/// A redrive policy's JSON, with `maxReceiveCount` as a number whichever way the emulator
/// writes it.
fn redrive_policy(attributes: &BTreeMap<String, String>) -> serde_json::Value {
    let policy = attributes.get("RedrivePolicy").expect("a RedrivePolicy");
    let mut policy: serde_json::Value =
        serde_json::from_str(policy).expect("RedrivePolicy is JSON");
    if let Some(count) = policy["maxReceiveCount"].as_str() {
        policy["maxReceiveCount"] = json!(count.parse::<u64>().expect("a count"));
    }
    policy
}

#[tokio::test]
async fn fixture_template_provisions_tables_and_queues_idempotently() {
    let (clients, stack, model) = fresh(&fixture_template(), "fx").await;

    clients.provision(&model).await.expect("first provisioning");
    let table = format!("{stack}-ItemsTable");
    // An item written between the two provisionings, which the second must keep.
    let kept = std::collections::HashMap::from([
        ("pk".to_owned(), AttributeValue::S("kept".into())),
        ("sk".to_owned(), AttributeValue::S("across runs".into())),
    ]);
    clients
        .dynamodb
        .put_item()
        .table_name(&table)
        .set_item(Some(kept.clone()))
        .send()
        .await
        .expect("put an item");
    clients
        .provision(&model)
        .await
        .expect("provisioning again changes nothing and fails on nothing");

    let item = clients
        .dynamodb
        .get_item()
        .table_name(&table)
        .set_key(Some(kept))
        .send()
        .await
        .expect("get the item");
    assert!(
        item.item().is_some(),
        "re-provisioning keeps the table's data"
    );

    let description = clients.describe(&table).await;
    let keys: Vec<_> = description
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name(), k.key_type().clone()))
        .collect();
    assert_eq!(keys, [("pk", KeyType::Hash), ("sk", KeyType::Range)]);
    let gsis = description.global_secondary_indexes();
    assert_eq!(gsis.len(), 1);
    assert_eq!(gsis[0].index_name(), Some("gsi1"));
    assert_eq!(gsis[0].key_schema()[0].attribute_name(), "gsi1pk");
    assert_eq!(
        gsis[0].projection().and_then(|p| p.projection_type()),
        Some(&ProjectionType::KeysOnly)
    );
    let stream = description
        .stream_specification()
        .expect("a stream specification");
    assert!(stream.stream_enabled());
    assert_eq!(
        stream.stream_view_type(),
        Some(&StreamViewType::NewAndOldImages)
    );
    assert!(description.latest_stream_arn().is_some());

    let ttl = clients
        .dynamodb
        .describe_time_to_live()
        .table_name(&table)
        .send()
        .await
        .expect("the TTL description");
    let ttl = ttl.time_to_live_description().expect("a TTL description");
    assert_eq!(ttl.time_to_live_status(), Some(&TimeToLiveStatus::Enabled));
    assert_eq!(ttl.attribute_name(), Some("expiresAt"));

    let work = queue(&model, "WorkQueue");
    let attributes = queue_attributes(&clients, &work.url).await;
    assert_eq!(attributes["VisibilityTimeout"], "2");
    assert_eq!(
        redrive_policy(&attributes),
        json!({
            "deadLetterTargetArn": queue_arn(&format!("{stack}-WorkDeadLetterQueue")),
            "maxReceiveCount": 2,
        })
    );
    let dlq = queue(&model, "WorkDeadLetterQueue");
    assert_eq!(
        queue_attributes(&clients, &dlq.url).await["MessageRetentionPeriod"],
        "1209600"
    );
    for spec in &model.queues {
        let found = clients
            .sqs
            .get_queue_url()
            .queue_name(&spec.name)
            .send()
            .await
            .unwrap_or_else(|err| panic!("queue {} exists: {err:?}", spec.name));
        assert_eq!(found.queue_url(), Some(spec.url.as_str()));
    }
}

#[tokio::test]
async fn project_template_provisions_streams_and_redrive_policies() {
    let (clients, stack, model) = fresh(&project_template(), "pj").await;

    clients.provision(&model).await.expect("first provisioning");
    clients
        .provision(&model)
        .await
        .expect("second provisioning");

    let social = clients.describe(&format!("{stack}-SocialTable")).await;
    let stream = social.stream_specification().expect("a stream");
    assert!(stream.stream_enabled());
    assert_eq!(
        stream.stream_view_type(),
        Some(&StreamViewType::NewAndOldImages)
    );
    let mut gsis: Vec<_> = social
        .global_secondary_indexes()
        .iter()
        .filter_map(|i| i.index_name())
        .collect();
    gsis.sort_unstable();
    assert_eq!(gsis, ["gsi1", "gsi2"]);

    // Every queue that the template gives a redrive policy has exactly that policy.
    let mut checked = 0;
    for spec in &model.queues {
        let attributes = queue_attributes(&clients, &spec.url).await;
        if let Some(expected) = spec.attributes.get("RedrivePolicy") {
            let expected: serde_json::Value = serde_json::from_str(expected).unwrap();
            assert_eq!(redrive_policy(&attributes), expected, "{}", spec.logical_id);
            assert!(
                expected["deadLetterTargetArn"]
                    .as_str()
                    .is_some_and(|arn| arn.starts_with(&queue_arn(&stack))),
                "{}'s DLQ belongs to the stack",
                spec.logical_id
            );
            checked += 1;
        }
        // moto 5.2.5 accepts a RedriveAllowPolicy but never returns it, so that provisioning
        // succeeded is all there is to check for the DLQs.
    }
    assert!(
        checked >= 4,
        "the consumer queues have redrive policies: {checked}"
    );
}

#[tokio::test]
async fn a_queue_url_the_emulator_does_not_give_is_an_error() {
    let clients = clients().await;
    let stack = unique("bad");
    let mut wrong = names(&stack);
    wrong.sqs_endpoint = "http://sqs.example.invalid:1".into();
    let model = template::load(&fixture_template(), &BTreeMap::new(), &wrong).unwrap();

    let err = clients
        .provision(&model)
        .await
        .expect_err("the URLs cannot match");
    let err = format!("{err:#}");
    assert!(
        err.contains("failed to provision queue OutputQueue"),
        "{err}"
    );
    assert!(
        err.contains("does not match the emulator"),
        "the error says why: {err}"
    );
}
