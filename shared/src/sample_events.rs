//! Sample events for invoking by hand the functions that are not HTTP routes (`events/*.json`,
//! for `sam local invoke -e` and `make invoke`): each the envelope AWS delivers, built with
//! `aws_lambda_events`' types, around bodies built with this crate's own event types.
//!
//! The builders are public so that a test can make the same events with its own ids:
//! [`sqs_event`] (an SQS batch of envelopes), [`outbox_item`] and [`outbox_stream_event`] (the
//! relay's stream batch), [`sns_event`] with [`elasticache_message`], [`scheduled_event`] and
//! [`pre_token_generation_event`]. [`samples`] is the set in `events/`, with fixed ids and
//! times; the test below writes them again and fails when `events/` differs.
//!
//! Names are the local runner's: region [`REGION`], account [`ACCOUNT_ID`], stack [`STACK`],
//! a resource without a name of its own named `<stack>-<LogicalId>`.

use crate::dynamo::Item;
use crate::events::{
    Address, Envelope, FollowPayload, ORDER_PLACED, OrderPlaced, PAYMENT_DUE, PaymentDue,
    PaymentMethod, SALE_PAGE_REQUESTED, SalePageRequested, USER_FOLLOWED, USER_UNFOLLOWED,
};
use crate::seckill::admission::seal::{SEAL_ATTRIBUTE, Seal};
use crate::seckill::sale::{Lifecycle, Sale};
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
use time::macros::datetime;

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

/// One file of `events/`.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The file's name in `events/`: the function's folder, and a suffix when it has several.
    pub file: String,
    /// The function's folder under `functions/` (its binary's name).
    pub function: &'static str,
    /// What the event is, for `events/README.md`.
    pub summary: &'static str,
    pub event: Value,
}

impl Sample {
    fn new(
        function: &'static str,
        variant: Option<&str>,
        summary: &'static str,
        event: impl Serialize,
    ) -> anyhow::Result<Self> {
        let mut event = serde_json::to_value(event).context("failed to encode a sample")?;
        leave_out_empty(&mut event);
        // Maps (attributes, images) come from hash maps: sorted, so a file is the same every run.
        event.sort_all_objects();
        let file = match variant {
            Some(variant) => format!("{function}-{variant}.json"),
            None => format!("{function}.json"),
        };
        Ok(Self {
            file,
            function,
            summary,
            event,
        })
    }

    /// The file's text: pretty JSON and a final newline.
    pub fn text(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.event).expect("JSON always prints");
        text.push('\n');
        text
    }
}

/// Members that `aws_lambda_events` writes as `null` or `{}` where AWS leaves them out: an SQS
/// message's `md5OfMessageAttributes` when it has none, an `INSERT` record's `OldImage`, and
/// the stream record's members of other cases and sources (`userIdentity` of a TTL deletion,
/// `recordFormat` and `tableName` of Kinesis Data Streams).
const LEFT_OUT_WHEN_EMPTY: [&str; 5] = [
    "md5OfMessageAttributes",
    "OldImage",
    "userIdentity",
    "recordFormat",
    "tableName",
];

fn leave_out_empty(value: &mut Value) {
    match value {
        Value::Object(members) => {
            members.retain(|name, member| {
                let empty = member.is_null() || member.as_object().is_some_and(|m| m.is_empty());
                !(empty && LEFT_OUT_WHEN_EMPTY.contains(&name.as_str()))
            });
            members.values_mut().for_each(leave_out_empty);
        }
        Value::Array(items) => items.iter_mut().for_each(leave_out_empty),
        _ => {}
    }
}

/// The follower and the followee of the social samples (Cognito `sub`s).
const ALICE: &str = "3c5a8f2e-6b1d-4e7a-9f04-2d8b7c1e5a90";
const BOB: &str = "8e1f4b6a-2c3d-4a5b-8c7d-9e0f1a2b3c4d";
/// An operator in the admin group.
const OPERATOR: &str = "5d2e7c9a-1b4f-4c8e-a6d3-7f0b2e9c4a18";
const USER_POOL_ID: &str = "us-east-1_LocalPool";
const CLIENT_ID: &str = "localclient000000000000000";

fn follow_event(kind: &str, at: OffsetDateTime, salt: u8) -> Envelope<FollowPayload> {
    Envelope {
        kind: kind.to_owned(),
        version: 1,
        id: v7(at, salt).to_string(),
        occurred_at: crate::clock::format(at),
        payload: FollowPayload {
            follower_id: ALICE.to_owned(),
            followee_id: BOB.to_owned(),
        },
    }
}

/// The sale of the flash-sale samples, published.
fn sale() -> anyhow::Result<Sale> {
    let created = datetime!(2026-12-01 17:00:00 UTC);
    Ok(Sale {
        id: crate::ids::SaleId::parse(&v7(created, 0x5a).to_string())
            .map_err(|_| anyhow::anyhow!("a v7 UUID is a sale id"))?,
        product_id: "keyboard-k2".to_owned(),
        title: "Mechanical keyboard K2".to_owned(),
        price_cents: 4_999,
        initial_stock: 100,
        stock_remaining: 100,
        per_user_limit: 2,
        starts_at: datetime!(2026-12-01 20:00:00 UTC),
        ends_at: datetime!(2026-12-01 22:00:00 UTC),
        state: Lifecycle::Published,
        created_at: crate::clock::format(created),
        reservation_opens_at: None,
    })
}

/// The name the local runner gives a resource of the template without a name of its own.
fn local_name(logical_id: &str) -> String {
    format!("{STACK}-{logical_id}")
}

/// Every file of `events/`, with fixed ids and times: the social samples are Alice following
/// (and unfollowing) Bob, the flash-sale ones Alice's order of one sale.
pub fn samples() -> anyhow::Result<Vec<Sample>> {
    let followed_at = datetime!(2026-12-01 18:00:00 UTC);
    let followed = follow_event(USER_FOLLOWED, followed_at, 0xf0);
    let unfollowed_at = datetime!(2026-12-01 18:05:00 UTC);
    let unfollowed = follow_event(USER_UNFOLLOWED, unfollowed_at, 0xf1);
    let relayed = |at: OffsetDateTime| at + time::Duration::milliseconds(300);
    let notification_queue = queue_arn(&format!("{STACK}-notification"));
    let follower_count_queue = queue_arn(&format!("{STACK}-follower-count"));
    let stream_arn = format!(
        "{}/stream/2026-11-30T00:00:00.000",
        table_arn(&local_name("SocialTable"))
    );

    let sale = sale()?;
    let published_at = datetime!(2026-12-01 19:00:00 UTC);
    let page = Envelope {
        kind: SALE_PAGE_REQUESTED.to_owned(),
        version: 1,
        id: v7(published_at, 0x9a).to_string(),
        occurred_at: crate::clock::format(published_at),
        payload: SalePageRequested {
            sale_id: sale.id.to_string(),
        },
    };
    let placed_at = datetime!(2026-12-01 20:00:01.250 UTC);
    let order_id = format!("{}.{}", sale.id, v7(placed_at, 0x0d).simple());
    let placed = Envelope {
        kind: ORDER_PLACED.to_owned(),
        version: 2,
        id: v7(placed_at, 0x0e).to_string(),
        occurred_at: crate::clock::format(placed_at),
        payload: OrderPlaced {
            order_id: order_id.clone(),
            sale_id: sale.id.to_string(),
            user_id: ALICE.to_owned(),
            price_cents: sale.price_cents,
            reserved_at_ms: crate::clock::epoch_ms(placed_at),
            quantity: 1,
            address: Some(Address {
                recipient: "Alice Martin".to_owned(),
                line1: "12 Rue des Lilas".to_owned(),
                line2: None,
                city: "Lyon".to_owned(),
                postal_code: "69003".to_owned(),
                country: "FR".to_owned(),
                phone: None,
            }),
            payment_method: Some(PaymentMethod::Online),
        },
    };
    let confirmed_at = datetime!(2026-12-01 20:00:02.500 UTC);
    let due = Envelope {
        kind: PAYMENT_DUE.to_owned(),
        version: 1,
        id: named_uuid(&format!("payment due\n{order_id}")).to_string(),
        occurred_at: crate::clock::format(confirmed_at),
        payload: PaymentDue {
            order_id,
            sale_id: sale.id.to_string(),
        },
    };
    let reconciled_at = datetime!(2026-12-01 20:05:00 UTC);
    let failed_over_at = datetime!(2026-12-01 20:10:00 UTC);

    Ok(vec![
        Sample::new(
            "outbox-relay",
            None,
            "a DynamoDB Streams batch: the outbox INSERT of Alice's follow of Bob",
            outbox_stream_event(
                &stream_arn,
                followed_at + time::Duration::milliseconds(100),
                &[outbox_item(&followed)?],
            ),
        )?,
        Sample::new(
            "notification-consumer",
            None,
            "an SQS batch from the notification queue: UserFollowed (Alice follows Bob)",
            sqs_event(
                &notification_queue,
                relayed(followed_at),
                std::slice::from_ref(&followed),
            )?,
        )?,
        Sample::new(
            "follower-count-consumer",
            None,
            "an SQS batch from the follower-count queue: UserFollowed (Bob gains a follower)",
            sqs_event(
                &follower_count_queue,
                relayed(followed_at),
                std::slice::from_ref(&followed),
            )?,
        )?,
        Sample::new(
            "follower-count-consumer",
            Some("unfollowed"),
            "an SQS batch from the follower-count queue: UserUnfollowed (Bob loses one)",
            sqs_event(&follower_count_queue, relayed(unfollowed_at), &[unfollowed])?,
        )?,
        Sample::new(
            "sale-page-writer",
            None,
            "an SQS batch from the sale-page queue: SalePageRequested, the sale publish-sale asks a page for",
            sqs_event(
                &queue_arn(&format!("{STACK}-sale-page")),
                published_at,
                &[page],
            )?,
        )?,
        Sample::new(
            "order-consumer",
            None,
            "an SQS batch from the order queue: OrderPlaced v2, one unit with an address, paid online",
            sealed(
                sqs_event(&queue_arn(&format!("{STACK}-order")), placed_at, &[placed])?,
                &local_order_seal(),
            ),
        )?,
        Sample::new(
            "payment-timeout-consumer",
            None,
            "an SQS batch from the order-timeout queue: PaymentDue of that order",
            sqs_event(
                &queue_arn(&format!("{STACK}-order-timeout")),
                confirmed_at,
                &[due],
            )?,
        )?,
        Sample::new(
            "reconcile",
            None,
            "the EventBridge Scheduled Event of its every-minute schedule",
            scheduled_event(
                &rule_arn(&local_name("ReconcileFunctionEveryMinute")),
                reconciled_at,
            ),
        )?,
        Sample::new(
            "cache-failover",
            None,
            "an SNS notification of ElastiCache: FailoverComplete of the cache's replica",
            sns_event(
                &topic_arn(&local_name("CacheEventsTopic")),
                failed_over_at,
                // The group is `RedisCache` locally (`!Ref RedisCache`); ElastiCache's ids are
                // lower case.
                &elasticache_message("ElastiCache:FailoverComplete", "rediscache-0001-002"),
            ),
        )?,
        Sample::new(
            "admin-mfa-guard",
            None,
            "Cognito's Pre Token Generation V2 event: an operator of the admin group signs in",
            pre_token_generation_event(&SignIn {
                user_pool_id: USER_POOL_ID,
                client_id: CLIENT_ID,
                sub: OPERATOR,
                email: "operator@example.com",
                groups: &["admin"],
            }),
        )?,
        Sample::new(
            "admin-mfa-guard",
            Some("buyer"),
            "the same event for a buyer in no group (answered without calling Cognito)",
            pre_token_generation_event(&SignIn {
                user_pool_id: USER_POOL_ID,
                client_id: CLIENT_ID,
                sub: ALICE,
                email: "alice@example.com",
                groups: &[],
            }),
        )?,
    ])
}

/// `events/README.md`: what each file is and how to use them.
pub fn readme(samples: &[Sample]) -> String {
    let mut text = String::from(
        "# Sample events\n\
         \n\
         One event per function that is not an HTTP route, as AWS delivers it, to invoke the\n\
         function by hand. Generated from the code's own types by `shared/src/sample_events.rs`;\n\
         `cargo nextest run -p shared sample_events` checks them, and\n\
         `UPDATE_EVENTS=1 cargo nextest run -p shared sample_events` writes them again.\n\
         \n",
    );
    for sample in samples {
        text.push_str(&format!(
            "- `{}` ({}): {}\n",
            sample.file, sample.function, sample.summary
        ));
    }
    text.push_str(
        "\n\
         Against the local cloud (`make dev` running): `make invoke FN=<LogicalId> \
         EVENT=events/<file>.json`,\n\
         e.g. `make invoke FN=OrderConsumerFunction EVENT=events/order-consumer.json`. With SAM:\n\
         `sam build` then `sam local invoke OrderConsumerFunction -e events/order-consumer.json`.\n\
         \n\
         The ids, names and times in them are examples (region us-east-1, account 123456789012,\n\
         the local runner's stack `local`): a function acts only on what exists. An\n\
         order-consumer event materializes an order only for a sale that exists, and is sealed\n\
         with the runner's key (a stack of its own refuses it unless Redis holds its\n\
         reservation), and a\n\
         payment-timeout event cancels only an order that exists and is still unpaid. To act\n\
         on your own data, put its ids in a copy of a file.\n",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admin_mfa::{self, DirectoryError, MfaDirectory};
    use crate::dynamo::{n, s};
    use crate::events::SocialEvent;
    use crate::ids::UserId;
    use crate::seckill::recovery::failover::CacheEvent;
    use crate::social::relay::{self, EventSink, SendFailed};
    use async_trait::async_trait;
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;
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

    /// A function of the template: its logical id, folder and events `(name, Type, Properties)`.
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
                let code = text(&resource["Properties"]["CodeUri"]);
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
                    folder: code.trim_start_matches("functions/").to_owned(),
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
            "events/ is not what shared/src/sample_events.rs generates: differs or missing: \
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
            let (SocialEvent::UserFollowed(envelope) | SocialEvent::UserUnfollowed(envelope)) =
                event;
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
                    record.event_source_arn.as_deref().is_some_and(|arn| arn
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
}
