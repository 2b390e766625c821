//! Sample events for invoking by hand the functions that are not HTTP routes (`events/*.json`,
//! for `sam local invoke -e` and `make invoke`): each the envelope AWS delivers, built with
//! `aws_lambda_events`' types, around bodies built with this crate's own event types.
//!
//! The builders are public so that a test can make the same events with its own ids:
//! [`sqs_event`] (an SQS batch of envelopes), [`outbox_item`] and [`outbox_stream_event`] (the
//! relay's stream batch), [`sns_event`] with [`elasticache_message`], [`scheduled_event`] and
//! [`pre_token_generation_event`]. [`samples`] is the set in `events/`, with fixed ids and
//! times (`samples.rs`); a test (`tests.rs`) writes them again and fails when `events/`
//! differs.
//!
//! Names are the local runner's: region [`REGION`], account [`ACCOUNT_ID`], stack [`STACK`],
//! a resource without a name of its own named `<stack>-<LogicalId>`.

use crate::dynamo::Item;
use crate::events::{Envelope, FollowPayload};
use crate::seckill::admission::seal::{SEAL_ATTRIBUTE, Seal};
use crate::social::follow::OUTBOX_TTL_SECONDS;
use anyhow::Context;
use aws_lambda_events::cloudwatch_events::CloudWatchEvent;
use aws_lambda_events::cognito::{
    CognitoEventUserPoolsPreTokenGenTriggerSource, CognitoEventUserPoolsPreTokenGenV2,
};
use aws_lambda_events::dynamodb::{Event as StreamEvent, EventRecord, StreamViewType};
use aws_lambda_events::sns::{SnsEvent, SnsMessage, SnsRecord};
use aws_lambda_events::sqs::{SqsEvent, SqsMessage, SqsMessageAttribute};
use md5::{Digest, Md5};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::HashMap;
use time::OffsetDateTime;

mod samples;
#[cfg(test)]
mod tests;

pub use samples::{Sample, readme, samples};

pub const REGION: &str = "us-east-1";
pub const ACCOUNT_ID: &str = "123456789012";
/// The local runner's default stack name.
pub const STACK: &str = "local";

/// The ARN of the queue named `name`.
pub fn queue_arn(name: &str) -> String {
    format!("arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{name}")
}

/// The ARN of the table named `name`.
pub fn table_arn(name: &str) -> String {
    format!("arn:aws:dynamodb:{REGION}:{ACCOUNT_ID}:table/{name}")
}

/// The ARN of the SNS topic named `name`.
pub fn topic_arn(name: &str) -> String {
    format!("arn:aws:sns:{REGION}:{ACCOUNT_ID}:{name}")
}

/// The ARN of the EventBridge rule named `name`.
pub fn rule_arn(name: &str) -> String {
    format!("arn:aws:events:{REGION}:{ACCOUNT_ID}:rule/{name}")
}

/// The MD5 of `text`: the bytes of name-based ids and, in hex, SQS's `md5OfBody`.
fn digest(text: &str) -> [u8; 16] {
    Md5::digest(text.as_bytes()).into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A UUID (version 3, from an MD5) named by `name`: stable ids for what AWS would mint at
/// random (message ids, subscription ids).
fn named_uuid(name: &str) -> uuid::Uuid {
    uuid::Builder::from_md5_bytes(digest(name)).into_uuid()
}

/// A version 7 UUID of the time `at`, as the code mints its event and entity ids, with fixed
/// rather than random bits (`salt`) so that the samples are stable.
fn v7(at: OffsetDateTime, salt: u8) -> uuid::Uuid {
    let millis = u64::try_from(crate::clock::epoch_ms(at)).unwrap_or_default();
    uuid::Builder::from_unix_timestamp_millis(millis, &[salt; 10]).into_uuid()
}

/// `at` as one of `aws_lambda_events`' time fields (chrono's), through its RFC 3339 text.
fn event_time<T: DeserializeOwned>(at: OffsetDateTime) -> T {
    serde_json::from_value(Value::String(crate::clock::format(at)))
        .expect("an RFC 3339 time reads as an event's time")
}

/// The SQS event that delivers `envelopes`, one message each, sent to the queue `queue_arn`
/// at `sent_at`: a body is the envelope's JSON exactly as [`crate::queue::Queue::send`]
/// writes it, its `messageId` and `receiptHandle` stable names of the queue and the body.
/// The key the runner seals order messages with: `OrderSealSecret`'s local value
/// (`local-<LogicalId>-value`, as the runner creates every secret of the template).
pub fn local_order_seal() -> Seal {
    Seal::new(b"local-OrderSealSecret-value".to_vec()).expect("a key of 16 bytes or more")
}

/// `event`, each message sealed with `seal` as the order route seals it (the `seal` attribute).
pub fn sealed(mut event: SqsEvent, seal: &Seal) -> SqsEvent {
    for record in &mut event.records {
        let mut attribute = SqsMessageAttribute::default();
        attribute.string_value = Some(seal.sign(record.body.as_deref().unwrap_or_default()));
        attribute.data_type = Some("String".to_owned());
        record
            .message_attributes
            .insert(SEAL_ATTRIBUTE.to_owned(), attribute);
    }
    event
}

pub fn sqs_event<P: Serialize>(
    queue_arn: &str,
    sent_at: OffsetDateTime,
    envelopes: &[Envelope<P>],
) -> anyhow::Result<SqsEvent> {
    let sent_ms = crate::clock::epoch_ms(sent_at);
    let mut event = SqsEvent::default();
    for envelope in envelopes {
        let body = serde_json::to_string(envelope).context("failed to encode an envelope")?;
        let message_id = named_uuid(&format!("{queue_arn}\n{body}")).to_string();
        let mut message = SqsMessage::default();
        message.receipt_handle = Some(format!(
            "AQEB{}",
            hex(&digest(&format!("receipt\n{message_id}")))
        ));
        message.md5_of_body = Some(hex(&digest(&body)));
        message.message_id = Some(message_id);
        message.body = Some(body);
        message.attributes = HashMap::from([
            ("ApproximateReceiveCount".to_owned(), "1".to_owned()),
            ("SentTimestamp".to_owned(), sent_ms.to_string()),
            (
                "SenderId".to_owned(),
                "AROAEXAMPLESENDER0001:sender".to_owned(),
            ),
            (
                "ApproximateFirstReceiveTimestamp".to_owned(),
                (sent_ms + 20).to_string(),
            ),
        ]);
        message.event_source = Some("aws:sqs".to_owned());
        message.event_source_arn = Some(queue_arn.to_owned());
        message.aws_region = Some(REGION.to_owned());
        event.records.push(message);
    }
    Ok(event)
}

/// The outbox item of `event` as the follow transaction writes it
/// ([`crate::social::graph_store::outbox_item`]), expiring [`OUTBOX_TTL_SECONDS`] after it
/// occurred.
pub fn outbox_item(event: &Envelope<FollowPayload>) -> anyhow::Result<Item> {
    let occurred = time::OffsetDateTime::parse(
        &event.occurred_at,
        &time::format_description::well_known::Rfc3339,
    )
    .with_context(|| format!("occurredAt {:?} is not RFC 3339", event.occurred_at))?;
    crate::social::graph_store::outbox_item(event, occurred.unix_timestamp() + OUTBOX_TTL_SECONDS)
        .context("failed to encode the event")
}

/// The DynamoDB Streams event of `items` inserted into the table whose stream is `stream_arn`
/// at `written_at`: one `INSERT` record each, in order, with its key and its new image (the
/// social table's stream keeps new and old images).
pub fn outbox_stream_event(
    stream_arn: &str,
    written_at: OffsetDateTime,
    items: &[Item],
) -> StreamEvent {
    let mut event = StreamEvent::default();
    for (index, item) in items.iter().enumerate() {
        let sequence = (400_000_000_000_000_000_000u128 + index as u128).to_string();
        let mut record = EventRecord::default();
        record.aws_region = REGION.to_owned();
        record.event_id = hex(&digest(&format!("{stream_arn}\n{sequence}")));
        record.event_name = "INSERT".to_owned();
        record.event_source = Some("aws:dynamodb".to_owned());
        record.event_version = Some("1.1".to_owned());
        record.event_source_arn = Some(stream_arn.to_owned());
        let keys: Item = item
            .iter()
            .filter(|(name, _)| matches!(name.as_str(), "pk" | "sk"))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        record.change.approximate_creation_date_time = event_time(written_at);
        record.change.keys = keys.into();
        record.change.new_image = item.clone().into();
        record.change.sequence_number = Some(sequence);
        record.change.size_bytes = item_size(item);
        record.change.stream_view_type = Some(StreamViewType::NewAndOldImages);
        event.records.push(record);
    }
    event
}

/// About the size DynamoDB counts for `item`: its names and its values' bytes.
fn item_size(item: &Item) -> i64 {
    let value_size = |value: &aws_sdk_dynamodb::types::AttributeValue| match value {
        aws_sdk_dynamodb::types::AttributeValue::S(text) => text.len(),
        aws_sdk_dynamodb::types::AttributeValue::N(number) => number.len().div_ceil(2) + 1,
        _ => 1,
    };
    let size: usize = item
        .iter()
        .map(|(name, value)| name.len() + value_size(value))
        .sum();
    i64::try_from(size).unwrap_or(i64::MAX)
}

/// The message ElastiCache publishes for the event `name` (e.g.
/// `ElastiCache:FailoverComplete`) of `source` (a node, `<group>-0001-002`, or the group): a
/// JSON object of the event's name to its source.
pub fn elasticache_message(name: &str, source: &str) -> String {
    json!({ name: source }).to_string()
}

/// The SNS event that delivers `message`, published on the topic `topic_arn` at
/// `published_at`, to a function subscribed to it.
pub fn sns_event(topic_arn: &str, published_at: OffsetDateTime, message: &str) -> SnsEvent {
    let subscription = format!(
        "{topic_arn}:{}",
        named_uuid(&format!("subscription\n{topic_arn}"))
    );
    let mut sns = SnsMessage::default();
    sns.sns_message_type = "Notification".to_owned();
    sns.message_id = named_uuid(&format!("{topic_arn}\n{message}")).to_string();
    sns.topic_arn = topic_arn.to_owned();
    sns.subject = None;
    sns.timestamp = event_time(published_at);
    sns.signature_version = "1".to_owned();
    sns.signature = "EXAMPLE".to_owned();
    sns.signing_cert_url = format!(
        "https://sns.{REGION}.amazonaws.com/SimpleNotificationService-0000000000000000000000.pem"
    );
    sns.unsubscribe_url = format!(
        "https://sns.{REGION}.amazonaws.com/?Action=Unsubscribe&SubscriptionArn={subscription}"
    );
    sns.message = message.to_owned();
    let mut record = SnsRecord::default();
    record.event_source = "aws:sns".to_owned();
    record.event_version = "1.0".to_owned();
    record.event_subscription_arn = subscription;
    record.sns = sns;
    let mut event = SnsEvent::default();
    event.records.push(record);
    event
}

/// The event EventBridge sends a schedule's target at `at` when the schedule has no `Input`
/// (with one, the target gets that input instead).
pub fn scheduled_event(rule_arn: &str, at: OffsetDateTime) -> CloudWatchEvent {
    let mut event = CloudWatchEvent::<Value>::default();
    event.version = Some("0".to_owned());
    event.id = Some(named_uuid(&format!("{rule_arn}\n{}", crate::clock::format(at))).to_string());
    event.detail_type = Some("Scheduled Event".to_owned());
    event.source = Some("aws.events".to_owned());
    event.account_id = Some(ACCOUNT_ID.to_owned());
    event.time = event_time(at);
    event.region = Some(REGION.to_owned());
    event.resources = vec![rule_arn.to_owned()];
    event.detail = Some(json!({}));
    event
}

/// Who signs in, for [`pre_token_generation_event`].
#[derive(Clone, Debug)]
pub struct SignIn<'a> {
    pub user_pool_id: &'a str,
    pub client_id: &'a str,
    /// The user's `sub`, also their user name (the pool's users sign in with their email).
    pub sub: &'a str,
    pub email: &'a str,
    /// The groups Cognito would put in the token.
    pub groups: &'a [&'a str],
}

/// The Pre Token Generation event (V2_0, the trigger's `LambdaVersion`) of a password sign-in:
/// what Cognito sends the trigger before it issues the tokens.
pub fn pre_token_generation_event(sign_in: &SignIn<'_>) -> CognitoEventUserPoolsPreTokenGenV2 {
    let mut event = CognitoEventUserPoolsPreTokenGenV2::default();
    let header = &mut event.cognito_event_user_pools_header;
    header.version = Some("2".to_owned());
    header.trigger_source = Some(CognitoEventUserPoolsPreTokenGenTriggerSource::Authentication);
    header.region = Some(REGION.to_owned());
    header.user_pool_id = Some(sign_in.user_pool_id.to_owned());
    header.user_name = Some(sign_in.sub.to_owned());
    header.caller_context.awssdk_version = Some("aws-sdk-unknown-unknown".to_owned());
    header.caller_context.client_id = Some(sign_in.client_id.to_owned());
    event.request.user_attributes = HashMap::from([
        ("sub".to_owned(), sign_in.sub.to_owned()),
        ("cognito:user_status".to_owned(), "CONFIRMED".to_owned()),
        ("email_verified".to_owned(), "true".to_owned()),
        ("email".to_owned(), sign_in.email.to_owned()),
    ]);
    event.request.group_configuration.groups_to_override = sign_in
        .groups
        .iter()
        .map(|group| (*group).to_owned())
        .collect();
    event.request.scopes = vec!["aws.cognito.signin.user.admin".to_owned()];
    event
}
