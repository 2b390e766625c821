//! The set of sample events in `events/`, with fixed ids and times, and the README that
//! says what each file is.

use super::{
    STACK, SignIn, elasticache_message, local_order_seal, named_uuid, outbox_item,
    outbox_stream_event, pre_token_generation_event, queue_arn, rule_arn, scheduled_event, sealed,
    sns_event, sqs_event, table_arn, topic_arn, v7,
};
use crate::events::{
    Address, Envelope, FollowPayload, ORDER_PLACED, OrderPlaced, PAYMENT_DUE, PaymentDue,
    PaymentMethod, SALE_PAGE_REQUESTED, SalePageRequested, USER_FOLLOWED, USER_UNFOLLOWED,
};
use crate::seckill::sale::{Lifecycle, Sale};
use anyhow::Context;
use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;
use time::macros::datetime;

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

pub(super) fn follow_event(kind: &str, at: OffsetDateTime, salt: u8) -> Envelope<FollowPayload> {
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
pub(super) fn local_name(logical_id: &str) -> String {
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
         function by hand. Generated from the code's own types by `shared/src/sample_events/`;\n\
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
