//! Creates the model's tables, queues and buckets in the emulators. Running it again on a running
//! emulator keeps what exists, and its data, so `make dev` can be re-run at will.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{Context as _, bail};
use aws_sdk_dynamodb::client::Waiters as _;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType,
    LocalSecondaryIndex, Projection, ProjectionType, ScalarAttributeType, StreamSpecification,
    StreamViewType, TimeToLiveSpecification, TimeToLiveStatus,
};
use aws_sdk_sqs::types::QueueAttributeName;

use crate::model::{BucketSpec, IndexSpec, Model, QueueSpec, TableSpec};

/// Queue attributes that name another queue: set once every queue exists.
const REDRIVE_ATTRIBUTES: [&str; 2] = ["RedrivePolicy", "RedriveAllowPolicy"];

/// How long a new table may take to become ACTIVE (moto: at once; DynamoDB: seconds).
const TABLE_ACTIVE_TIMEOUT: Duration = Duration::from_secs(60);

/// Creates the model's tables and queues in the emulator; safe to run again on a running
/// emulator: existing tables are left as they are, existing queues get their attributes set
/// again.
pub async fn provision(
    model: &Model,
    dynamodb: &aws_sdk_dynamodb::Client,
    sqs: &aws_sdk_sqs::Client,
) -> anyhow::Result<()> {
    // The emulator serializes DynamoDB requests, so tables go one by one; the queues are
    // provisioned meanwhile.
    let tables = async {
        for table in &model.tables {
            provision_table(dynamodb, table)
                .await
                .with_context(|| format!("failed to provision table {}", table.logical_id))?;
        }
        anyhow::Ok(())
    };
    tokio::try_join!(tables, provision_queues(sqs, &model.queues))?;
    Ok(())
}

/// Creates the model's buckets; an existing one is kept with its objects.
pub async fn provision_buckets(
    s3: &aws_sdk_s3::Client,
    region: &str,
    buckets: &[BucketSpec],
) -> anyhow::Result<()> {
    use aws_sdk_s3::types::{BucketLocationConstraint, CreateBucketConfiguration};
    for bucket in buckets {
        let mut request = s3.create_bucket().bucket(&bucket.name);
        // us-east-1 is the one region that takes no location constraint.
        if region != "us-east-1" {
            request = request.create_bucket_configuration(
                CreateBucketConfiguration::builder()
                    .location_constraint(BucketLocationConstraint::from(region))
                    .build(),
            );
        }
        match request.send().await {
            Ok(_) => {}
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_bucket_already_owned_by_you()) => {}
            Err(err) => {
                return Err(anyhow::Error::new(err)
                    .context(format!("failed to create bucket {}", bucket.logical_id)));
            }
        }
    }
    Ok(())
}

async fn provision_table(
    dynamodb: &aws_sdk_dynamodb::Client,
    spec: &TableSpec,
) -> anyhow::Result<()> {
    let mut request = dynamodb
        .create_table()
        .table_name(&spec.name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_key_schema(Some(key_schema(&spec.key_schema)?));
    for (name, kind) in &spec.attributes {
        request = request.attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(name)
                .attribute_type(ScalarAttributeType::from(kind.as_str()))
                .build()?,
        );
    }
    for index in &spec.global_secondary_indexes {
        request = request.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(&index.name)
                .set_key_schema(Some(key_schema(&index.key_schema)?))
                .projection(projection(index))
                .build()?,
        );
    }
    for index in &spec.local_secondary_indexes {
        request = request.local_secondary_indexes(
            LocalSecondaryIndex::builder()
                .index_name(&index.name)
                .set_key_schema(Some(key_schema(&index.key_schema)?))
                .projection(projection(index))
                .build()?,
        );
    }
    if let Some(view) = &spec.stream_view_type {
        request = request.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::from(view.as_str()))
                .build()?,
        );
    }

    match request.send().await {
        Ok(_) => tracing::info!(table = %spec.name, "created table"),
        // Left as is, with its items: the point of re-running against a running emulator.
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_resource_in_use_exception()) =>
        {
            tracing::debug!(table = %spec.name, "table exists");
        }
        Err(err) => {
            return Err(err).with_context(|| format!("failed to create table {}", spec.name));
        }
    }

    if let Some(attribute) = &spec.ttl_attribute {
        // DynamoDB refuses a TTL change while the table is being created.
        dynamodb
            .wait_until_table_exists()
            .table_name(&spec.name)
            .wait(TABLE_ACTIVE_TIMEOUT)
            .await
            .with_context(|| format!("table {} did not become ACTIVE", spec.name))?;
        enable_ttl(dynamodb, &spec.name, attribute).await?;
    }
    Ok(())
}

/// Enables TTL unless it already is (DynamoDB rejects enabling it twice).
async fn enable_ttl(
    dynamodb: &aws_sdk_dynamodb::Client,
    table: &str,
    attribute: &str,
) -> anyhow::Result<()> {
    let current = dynamodb
        .describe_time_to_live()
        .table_name(table)
        .send()
        .await
        .with_context(|| format!("failed to read the TTL of table {table}"))?;
    let current = current.time_to_live_description();
    let status = current.and_then(|d| d.time_to_live_status());
    let current_attribute = current.and_then(|d| d.attribute_name());
    match status {
        Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling) => {
            if current_attribute != Some(attribute) {
                // Changing it means disabling it first, which DynamoDB allows once an hour:
                // not something to do behind a developer's back.
                tracing::warn!(
                    table,
                    wanted = attribute,
                    current = current_attribute,
                    "table has TTL on another attribute; left as is"
                );
            }
            Ok(())
        }
        _ => {
            dynamodb
                .update_time_to_live()
                .table_name(table)
                .time_to_live_specification(
                    TimeToLiveSpecification::builder()
                        .enabled(true)
                        .attribute_name(attribute)
                        .build()?,
                )
                .send()
                .await
                .with_context(|| format!("failed to enable TTL on table {table}"))?;
            tracing::debug!(table, attribute, "enabled TTL");
            Ok(())
        }
    }
}

fn key_schema(keys: &[(String, String)]) -> anyhow::Result<Vec<KeySchemaElement>> {
    keys.iter()
        .map(|(name, kind)| {
            Ok(KeySchemaElement::builder()
                .attribute_name(name)
                .key_type(KeyType::from(kind.as_str()))
                .build()?)
        })
        .collect()
}

fn projection(index: &IndexSpec) -> Projection {
    Projection::builder()
        .projection_type(ProjectionType::from(index.projection_type.as_str()))
        .set_non_key_attributes(
            (!index.non_key_attributes.is_empty()).then(|| index.non_key_attributes.clone()),
        )
        .build()
}

async fn provision_queues(sqs: &aws_sdk_sqs::Client, queues: &[QueueSpec]) -> anyhow::Result<()> {
    // A redrive policy names its DLQ, and a DLQ's redrive-allow policy its source queues, which
    // may not exist yet: every queue is created first, the policies are set afterwards.
    for queue in queues {
        ensure_queue(sqs, queue)
            .await
            .with_context(|| format!("failed to provision queue {}", queue.logical_id))?;
    }
    for queue in queues {
        let policies = attributes(queue, |name| REDRIVE_ATTRIBUTES.contains(&name));
        if policies.is_empty() {
            continue;
        }
        sqs.set_queue_attributes()
            .queue_url(&queue.url)
            .set_attributes(Some(policies))
            .send()
            .await
            .with_context(|| {
                format!(
                    "failed to set the redrive policies of queue {} ({})",
                    queue.logical_id, queue.url
                )
            })?;
    }
    Ok(())
}

/// Creates the queue, or sets the attributes of the one that exists, and checks its URL.
async fn ensure_queue(sqs: &aws_sdk_sqs::Client, spec: &QueueSpec) -> anyhow::Result<()> {
    let url = match sqs.get_queue_url().queue_name(&spec.name).send().await {
        Ok(found) => {
            let url = found.queue_url().unwrap_or_default().to_owned();
            // FifoQueue is fixed at creation (and implied by the name); SQS rejects setting it.
            let attributes = attributes(spec, |name| {
                !REDRIVE_ATTRIBUTES.contains(&name) && name != "FifoQueue"
            });
            if !attributes.is_empty() {
                sqs.set_queue_attributes()
                    .queue_url(&url)
                    .set_attributes(Some(attributes))
                    .send()
                    .await
                    .with_context(|| format!("failed to set the attributes of queue {url}"))?;
            }
            tracing::debug!(queue = %spec.name, "queue exists; attributes set again");
            url
        }
        Err(err)
            if err
                .as_service_error()
                .is_some_and(|e| e.is_queue_does_not_exist()) =>
        {
            let created = sqs
                .create_queue()
                .queue_name(&spec.name)
                .set_attributes(Some(attributes(spec, |name| {
                    !REDRIVE_ATTRIBUTES.contains(&name)
                })))
                .send()
                .await
                .with_context(|| format!("failed to create queue {}", spec.name))?;
            tracing::info!(queue = %spec.name, "created queue");
            created.queue_url().unwrap_or_default().to_owned()
        }
        Err(err) => {
            return Err(err).with_context(|| format!("failed to look queue {} up", spec.name));
        }
    };
    if url != spec.url {
        bail!(
            "the emulator gives queue {} the URL {url}, but the functions were told {}: the \
             runner's SQS endpoint or account id does not match the emulator's",
            spec.name,
            spec.url
        );
    }
    Ok(())
}

/// The queue's attributes whose names pass `keep`, as the SDK takes them.
fn attributes(
    spec: &QueueSpec,
    keep: impl Fn(&str) -> bool,
) -> HashMap<QueueAttributeName, String> {
    spec.attributes
        .iter()
        .filter(|(name, _)| keep(name))
        .map(|(name, value)| (QueueAttributeName::from(name.as_str()), value.clone()))
        .collect()
}
