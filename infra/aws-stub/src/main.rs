//! `aws-stub`: an AWS endpoint on 127.0.0.1 that answers the functions' DynamoDB and SQS
//! calls at once with canned, plausible data, so that a benchmark measures the functions and
//! the local runner, not an emulator.
//!
//! It speaks the JSON 1.0 protocol of both services: DynamoDB
//! (`X-Amz-Target: DynamoDB_20120810.<Op>`) and SQS (`AmazonSQS.<Op>`; the pinned
//! `aws-sdk-sqs` uses the JSON protocol, not the older query protocol). Requests are not
//! checked against any state and conditions are never evaluated: **every write succeeds**
//! (PutItem, UpdateItem, TransactWriteItems, SendMessage...), so each benchmarked request takes
//! its happy path. Reads are derived from the requested key, so the handler finds what it
//! looks for:
//!
//! | request | answer |
//! |---|---|
//! | GetItem / BatchGetItem `USER#<u>` / `PROFILE` | an ACTIVE profile of `<u>` with counters |
//! | GetItem `USER#<u>` / `FOLLOWS#<v>` | the edge, followed a minute ago |
//! | GetItem `USER#<u>` / `NOTIFSTATE` | `unreadCount` 3 |
//! | GetItem `SALE#<id>` / `SALE` | a PUBLISHED sale: started an hour ago, ends in a day, 1,000,000 units, 100 per user; a DRAFT if the id starts with `00000000-` (the back office's edit) |
//! | GetItem `ORDER#<id>` / `ORDER` | a CONFIRMED order of `--order-owner` (the key does not say who owns it) |
//! | UpdateItem with `ReturnValues` | the canned item of the key, with `:name` as `displayName`, the sale in `:ended`'s state if the update names one, and the order in `:cod`'s status confirmed for delivery at `:at` if it names that |
//! | Query `FOLLOWERS#<u>` / `FOLLOWING#<u>` | a full page (`Limit`, at most 20) of edges, no `LastEvaluatedKey` |
//! | Query `NOTIF#<u>` | a page of unread FOLLOW notifications |
//! | Query `USER#<u>` on `gsi1` | a page of `<u>`'s CONFIRMED orders |
//! | GetItem `REFUND#<p>` / `ORDER#<o>` | a DUE refund of 19.99 EUR for a cancelled order |
//! | Query `REFUNDS#DUE` on `gsi1` | a page of DUE refunds, oldest first |
//! | Query `SALES` on `gsi2` / `SALES#LIVE` on `gsi1` | a page of PUBLISHED sales (the back office's list, the home page's listing) |
//! | Query `SALE#<id>#ORDERS#<n>` on `gsi3` | a page of the sale's orders, in every status (a sale's figures) |
//! | Scan | no item (so `reconcile` finds no published sale) |
//! | SendMessageBatch | every entry successful, with the body's real MD5 |
//! | ReceiveMessage | no message, after `WaitTimeSeconds` (capped at 1 s) as an empty queue |
//!
//! It also answers what `local-cloud up` calls at provision time (CreateTable, DescribeTable,
//! DescribeTimeToLive, UpdateTimeToLive, GetQueueUrl, CreateQueue, SetQueueAttributes,
//! GetQueueAttributes, Secrets Manager's CreateSecret), with queue URLs
//! `http://<Host>/<account>/<name>` as the runner expects, and GetSecretValue with the local
//! cloud's value of the secret (`local-<id>-value`); and the S3 writes of its start
//! (CreateBucket and PutObject of the shop's pages, REST calls without `X-Amz-Target`: any
//! `PUT`), which succeed and store nothing.
//! DynamoDB Streams answer no stream. Any other operation is a 400 `UnknownOperationException`
//! and is counted: `GET /__stub/stats` answers the count of every operation served, so a
//! benchmark can report its AWS calls per request and prove none went unanswered.
//!
//! Event sources have nothing to deliver from it (queues are always empty, tables have no
//! stream), so `loadtest/bench` runs the runner with every non-HTTP function's event sources
//! off (`--disable-sources`); a poller left on would only long-poll an empty queue.
//!
//! Not a DynamoDB or SQS emulator: nothing is stored, nothing is ever refused (no
//! `ConditionalCheckFailed`, no throttling). The figures measured against it are the functions'
//! own overhead, a floor that no real endpoint reaches.

use anyhow::Context;
use app::ids::{OrderId, SaleId, UserId};
use app::seckill::keys::{
    ALL_SALES_PK, LIVE_SALES_PK, ORDER_SK, REFUNDS_DUE_PK, SALE_SK, all_sales_sk, live_sale_sk,
    order_pk, refund_pk, refund_sk, sale_pk, user_orders_pk, user_orders_sk,
};
use app::social::keys::{
    NOTIFICATION_STATE_SK, PROFILE_SK, edge_index_sk, follow_sk, followers_pk, following_pk,
    notification_sk, notifications_pk, user_pk,
};
use app::social::notifications::{FOLLOW, TARGET_USER};
use bytes::Bytes;
use clap::Parser;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use md5::{Digest, Md5};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use time::OffsetDateTime;

#[derive(Parser)]
#[command(version, about)]
struct Args {
    /// Where to listen; loopback only.
    #[arg(long, default_value = "127.0.0.1:3920")]
    address: SocketAddr,
    /// The account in queue URLs (the runner's default is moto's).
    #[arg(long, default_value = "123456789012")]
    account_id: String,
    /// Who owns every order that GetItem answers (an order's key does not name its owner).
    #[arg(long, default_value = "bench-user")]
    order_owner: String,
    /// Answer every AWS call this many milliseconds late, as a service across the network
    /// does (0: at once). The stats route is never delayed.
    #[arg(long, default_value_t = 0.0)]
    latency_ms: f64,
}

/// Items per page of a Query that names no `Limit`.
const DEFAULT_PAGE: usize = 20;
/// The sale of the canned orders on list pages.
const LISTED_SALE: &str = "0193a4b2-7c00-7000-8000-00000000be01";
/// The start of the ids of sales that GetItem answers as drafts.
const DRAFT_SALE_PREFIX: &str = "00000000-";
/// The longest a ReceiveMessage waits before answering that the queue is empty.
const MAX_RECEIVE_WAIT: Duration = Duration::from_secs(1);

struct Stub {
    account_id: String,
    order_owner: String,
    latency: Duration,
    calls: Mutex<BTreeMap<String, u64>>,
}

type Attributes = Map<String, Value>;

fn s(value: impl Into<String>) -> Value {
    json!({ "S": value.into() })
}

fn n(value: impl ToString) -> Value {
    json!({ "N": value.to_string() })
}

/// A time in the tables' format (app's), `offset` seconds from now.
fn at(offset_seconds: i64) -> String {
    app::clock::format(OffsetDateTime::now_utc() + time::Duration::seconds(offset_seconds))
}

/// The user of an id taken from a key; `None` for what cannot be a user id.
fn user_id(raw: &str) -> Option<UserId> {
    UserId::parse(raw).ok()
}

/// The id in a key of the form `<KIND>#<id>`, the form of every partition key of the tables
/// (which kind it is, the caller asks app's key functions).
fn key_id(key: &str) -> Option<&str> {
    key.split_once('#').map(|(_, id)| id)
}

fn hex32(seed: u64) -> String {
    format!("{:032x}", u128::from(seed) * 0x9e37_79b9_7f4a_7c15 + 1)
}

fn sale_id(raw: &str) -> SaleId {
    SaleId::parse(raw).expect("a valid sale id")
}

/// The order of `sale` that `seed` names.
fn order_id(sale: &SaleId, seed: u64) -> OrderId {
    OrderId::parse(&format!("{sale}.{}", hex32(seed))).expect("a valid order id")
}

fn string_of<'a>(attributes: &'a Value, name: &str) -> Option<&'a str> {
    attributes.get(name)?.get("S")?.as_str()
}

impl Stub {
    fn profile(user: &UserId, display_name: Option<&str>) -> Attributes {
        let mut item = Map::new();
        item.insert("pk".into(), s(user_pk(user)));
        item.insert("sk".into(), s(PROFILE_SK));
        item.insert("entity".into(), s("PROFILE"));
        item.insert("userId".into(), s(user.as_str()));
        item.insert(
            "displayName".into(),
            s(display_name.map_or_else(|| format!("User {user}"), str::to_owned)),
        );
        item.insert("followingCount".into(), n(12));
        item.insert("followerCount".into(), n(34));
        item.insert("status".into(), s("ACTIVE"));
        item.insert("createdAt".into(), s(at(-86_400)));
        item
    }

    fn edge(follower: &UserId, followee: &UserId, followed_at: &str) -> Attributes {
        let mut item = Map::new();
        item.insert("pk".into(), s(user_pk(follower)));
        item.insert("sk".into(), s(follow_sk(followee)));
        item.insert("entity".into(), s("FOLLOW"));
        item.insert("followerId".into(), s(follower.as_str()));
        item.insert("followeeId".into(), s(followee.as_str()));
        item.insert("followedAt".into(), s(followed_at));
        item.insert("gsi1pk".into(), s(followers_pk(followee)));
        item.insert("gsi1sk".into(), s(edge_index_sk(followed_at, follower)));
        item.insert("gsi2pk".into(), s(following_pk(follower)));
        item.insert("gsi2sk".into(), s(edge_index_sk(followed_at, followee)));
        item
    }

    fn sale(id: &SaleId) -> Attributes {
        let mut item = Map::new();
        item.insert("pk".into(), s(sale_pk(id)));
        item.insert("sk".into(), s(SALE_SK));
        item.insert("entity".into(), s("SALE"));
        item.insert("saleId".into(), s(id.as_str()));
        item.insert("productId".into(), s("p-bench"));
        item.insert("title".into(), s("Benchmark phone"));
        item.insert("priceCents".into(), n(19_900));
        item.insert("initialStock".into(), n(1_000_000));
        item.insert("stockRemaining".into(), n(1_000_000));
        item.insert("perUserLimit".into(), n(100));
        item.insert("startsAt".into(), s(at(-3_600)));
        item.insert("endsAt".into(), s(at(86_400)));
        let state = if id.as_str().starts_with(DRAFT_SALE_PREFIX) {
            "DRAFT"
        } else {
            "PUBLISHED"
        };
        item.insert("state".into(), s(state));
        item.insert("createdAt".into(), s(at(-7_200)));
        item
    }

    /// A refund due of `payment_id` for `order_id`, recorded `offset_seconds` from now.
    fn refund(payment_id: &str, order_id: &OrderId, offset_seconds: i64) -> Attributes {
        let recorded_at = at(offset_seconds);
        let mut item = Map::new();
        item.insert("pk".into(), s(refund_pk(payment_id)));
        item.insert("sk".into(), s(refund_sk(order_id)));
        item.insert("paymentId".into(), s(payment_id));
        item.insert("orderId".into(), s(order_id.as_str()));
        item.insert("userId".into(), s("bench-user"));
        item.insert("amountCents".into(), n(1_999));
        item.insert("currency".into(), s("EUR"));
        item.insert("reason".into(), s("ORDER_CANCELLED"));
        item.insert("state".into(), s("DUE"));
        item.insert("recordedAt".into(), s(&recorded_at));
        item.insert("gsi1pk".into(), s(REFUNDS_DUE_PK));
        item.insert("gsi1sk".into(), s(format!("{recorded_at}#{payment_id}")));
        item
    }

    /// The `index`-th sale of a list page: published, with both index keys.
    fn listed_sale(index: u64) -> Attributes {
        let id = sale_id(&format!("0193a4b2-7c00-7000-8000-{index:012x}"));
        let mut item = Self::sale(&id);
        let (starts_at, created_at) = (at(-3_600), at(-7_200 - index as i64));
        item.insert("gsi1pk".into(), s(LIVE_SALES_PK));
        item.insert("gsi1sk".into(), s(live_sale_sk(&starts_at, &id)));
        item.insert("gsi2pk".into(), s(ALL_SALES_PK));
        item.insert("gsi2sk".into(), s(all_sales_sk(&created_at, &id)));
        item.insert("createdAt".into(), s(created_at));
        item
    }

    fn order(order_id: &OrderId, user: &str, created_at: &str) -> Attributes {
        let mut item = Map::new();
        item.insert("pk".into(), s(order_pk(order_id)));
        item.insert("sk".into(), s(ORDER_SK));
        item.insert("orderId".into(), s(order_id.as_str()));
        item.insert("saleId".into(), s(order_id.sale_id().as_str()));
        item.insert("userId".into(), s(user));
        item.insert("priceCents".into(), n(19_900));
        item.insert("status".into(), s("CONFIRMED"));
        item.insert("createdAt".into(), s(created_at));
        item.insert("gsi1pk".into(), s(user_orders_pk(user)));
        item.insert("gsi1sk".into(), s(user_orders_sk(created_at, order_id)));
        item
    }

    fn notification(recipient: &UserId, index: u64) -> Attributes {
        let created_at = at(-60 * (index as i64 + 1));
        let id = format!("{created_at}_{}", hex32(index));
        let mut item = Map::new();
        item.insert("pk".into(), s(notifications_pk(recipient)));
        item.insert("sk".into(), s(notification_sk(&created_at, &id)));
        item.insert("notificationId".into(), s(&id));
        item.insert("type".into(), s(FOLLOW));
        item.insert("actorId".into(), s(format!("user-{index:05}")));
        item.insert("targetType".into(), s(TARGET_USER));
        item.insert("targetId".into(), s(recipient.as_str()));
        item.insert("createdAt".into(), s(created_at));
        item.insert("read".into(), json!({ "BOOL": false }));
        item
    }

    /// The item a key names, or `None` for a key that names nothing the functions keep.
    fn item_for(&self, key: &Value) -> Option<Attributes> {
        let pk = string_of(key, "pk")?;
        let sk = string_of(key, "sk")?;
        let id = key_id(pk)?;
        if let Some(user) = user_id(id).filter(|user| pk == user_pk(user)) {
            return match sk {
                PROFILE_SK => Some(Self::profile(&user, None)),
                NOTIFICATION_STATE_SK => {
                    let mut item = Map::new();
                    item.insert("pk".into(), s(pk));
                    item.insert("sk".into(), s(sk));
                    item.insert("unreadCount".into(), n(3));
                    Some(item)
                }
                edge => {
                    let followee = key_id(edge)
                        .and_then(user_id)
                        .filter(|followee| edge == follow_sk(followee))?;
                    Some(Self::edge(&user, &followee, &at(-60)))
                }
            };
        }
        if let Ok(sale) = SaleId::parse(id)
            && pk == sale_pk(&sale)
            && sk == SALE_SK
        {
            return Some(Self::sale(&sale));
        }
        if pk == refund_pk(id)
            && let Some(order_id) = sk.strip_prefix("ORDER#")
            && let Ok(order_id) = OrderId::parse(order_id)
            && sk == refund_sk(&order_id)
        {
            return Some(Self::refund(id, &order_id, -600));
        }
        if let Ok(order_id) = OrderId::parse(id)
            && pk == order_pk(&order_id)
            && sk == ORDER_SK
        {
            return Some(Self::order(&order_id, &self.order_owner, &at(-30)));
        }
        None
    }

    fn page_size(request: &Value) -> usize {
        request
            .get("Limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_PAGE, |limit| (limit as usize).min(DEFAULT_PAGE))
    }

    fn query(&self, request: &Value) -> Value {
        let partition = request
            .pointer("/ExpressionAttributeValues/:pk/S")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let size = Self::page_size(request);
        let sales = [":all", ":live"].into_iter().any(|name| {
            request
                .pointer(&format!("/ExpressionAttributeValues/{name}/S"))
                .and_then(Value::as_str)
                .is_some_and(|pk| pk == ALL_SALES_PK || pk == LIVE_SALES_PK)
        });
        if partition == REFUNDS_DUE_PK {
            let items: Vec<Attributes> = (0..size as u64)
                .map(|i| {
                    let order_id = order_id(&sale_id(LISTED_SALE), i);
                    Self::refund(&format!("pay-{i}"), &order_id, -3_600 + i as i64)
                })
                .collect();
            return json!({ "Items": items, "Count": items.len(), "ScannedCount": items.len() });
        }
        if let Some((sale, _shard)) = partition
            .strip_prefix("SALE#")
            .and_then(|rest| rest.split_once("#ORDERS#"))
            .and_then(|(sale, shard)| Some((SaleId::parse(sale).ok()?, shard)))
        {
            // One of a sale's order index partitions: a page of its orders in every status.
            let statuses = ["CONFIRMED", "PAID", "COD", "CANCELLED", "REJECTED"];
            let items: Vec<Attributes> = (0..size as u64)
                .map(|i| {
                    let mut item = Self::order(&order_id(&sale, i), "bench-user", &at(-60));
                    item.insert("status".into(), s(statuses[i as usize % statuses.len()]));
                    item.insert("quantity".into(), n(1));
                    item
                })
                .collect();
            return json!({ "Items": items, "Count": items.len(), "ScannedCount": items.len() });
        }
        if sales {
            let items: Vec<Attributes> = (0..size as u64).map(Self::listed_sale).collect();
            return json!({ "Items": items, "Count": items.len(), "ScannedCount": items.len() });
        }
        let items: Vec<Attributes> = key_id(partition)
            .and_then(user_id)
            .and_then(|user| {
                (0..size as u64)
                    .map(|i| {
                        let other = user_id(&format!("user-{i:05}")).expect("a valid user id");
                        // Newest first, as the functions ask (ScanIndexForward false).
                        let followed_at = at(-60 * (i as i64 + 1));
                        if partition == followers_pk(&user) {
                            Some(Self::edge(&other, &user, &followed_at))
                        } else if partition == following_pk(&user) {
                            Some(Self::edge(&user, &other, &followed_at))
                        } else if partition == notifications_pk(&user) {
                            Some(Self::notification(&user, i))
                        } else if partition == user_orders_pk(user.as_str()) {
                            Some(Self::order(
                                &order_id(&sale_id(LISTED_SALE), i),
                                user.as_str(),
                                &followed_at,
                            ))
                        } else {
                            None
                        }
                    })
                    .collect::<Option<_>>()
            })
            .unwrap_or_default();
        json!({ "Items": items, "Count": items.len(), "ScannedCount": items.len() })
    }

    fn dynamodb(&self, operation: &str, request: &Value) -> Option<Value> {
        let table = request
            .get("TableName")
            .and_then(Value::as_str)
            .unwrap_or_default();
        Some(match operation {
            "GetItem" => match request.get("Key").and_then(|key| self.item_for(key)) {
                Some(item) => json!({ "Item": item }),
                None => json!({}),
            },
            "BatchGetItem" => {
                let mut responses = Map::new();
                if let Some(tables) = request.get("RequestItems").and_then(Value::as_object) {
                    for (table, wanted) in tables {
                        let items: Vec<Attributes> = wanted
                            .get("Keys")
                            .and_then(Value::as_array)
                            .map(|keys| keys.iter().filter_map(|k| self.item_for(k)).collect())
                            .unwrap_or_default();
                        responses.insert(table.clone(), json!(items));
                    }
                }
                json!({ "Responses": responses, "UnprocessedKeys": {} })
            }
            "UpdateItem" => {
                let wants_item = request
                    .get("ReturnValues")
                    .and_then(Value::as_str)
                    .is_some_and(|values| values != "NONE");
                let item = request.get("Key").and_then(|key| self.item_for(key));
                match item {
                    Some(mut item) if wants_item => {
                        if let Some(name) = request.pointer("/ExpressionAttributeValues/:name/S") {
                            item.insert("displayName".into(), json!({ "S": name }));
                        }
                        if let Some(state) = request.pointer("/ExpressionAttributeValues/:ended") {
                            item.insert("state".into(), state.clone());
                        }
                        if let (Some(cod), Some(at)) = (
                            request.pointer("/ExpressionAttributeValues/:cod"),
                            request.pointer("/ExpressionAttributeValues/:at"),
                        ) {
                            item.insert("status".into(), cod.clone());
                            item.insert("deliveryConfirmedAt".into(), at.clone());
                        }
                        json!({ "Attributes": item })
                    }
                    _ => json!({}),
                }
            }
            "PutItem" | "DeleteItem" | "TransactWriteItems" | "BatchWriteItem" => json!({}),
            "Query" => self.query(request),
            "Scan" => json!({ "Items": [], "Count": 0, "ScannedCount": 0 }),
            "CreateTable" => {
                let mut description = request.as_object().cloned().unwrap_or_default();
                description.insert("TableStatus".into(), json!("ACTIVE"));
                description.insert(
                    "TableArn".into(),
                    json!(format!(
                        "arn:aws:dynamodb:us-east-1:{}:table/{table}",
                        self.account_id
                    )),
                );
                if request.get("StreamSpecification").is_some() {
                    description.insert(
                        "LatestStreamArn".into(),
                        json!(format!(
                            "arn:aws:dynamodb:us-east-1:{}:table/{table}/stream/2026-01-01T00:00:00.000",
                            self.account_id
                        )),
                    );
                }
                json!({ "TableDescription": description })
            }
            "DescribeTable" => json!({ "Table": {
                "TableName": table,
                "TableStatus": "ACTIVE",
                "KeySchema": [
                    { "AttributeName": "pk", "KeyType": "HASH" },
                    { "AttributeName": "sk", "KeyType": "RANGE" }
                ],
            }}),
            "DescribeTimeToLive" => {
                json!({ "TimeToLiveDescription": { "TimeToLiveStatus": "DISABLED" } })
            }
            "UpdateTimeToLive" => json!({
                "TimeToLiveSpecification": request.get("TimeToLiveSpecification").cloned().unwrap_or_default()
            }),
            _ => return None,
        })
    }

    fn queue_url(&self, host: &str, name: &str) -> String {
        format!("http://{host}/{}/{name}", self.account_id)
    }

    fn sqs(&self, operation: &str, request: &Value, host: &str) -> Option<Value> {
        let md5 = |body: &str| {
            Md5::digest(body.as_bytes())
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect::<String>()
        };
        let message_id = || uuid::Uuid::new_v4().to_string();
        Some(match operation {
            "GetQueueUrl" | "CreateQueue" => {
                let name = request
                    .get("QueueName")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                json!({ "QueueUrl": self.queue_url(host, name) })
            }
            "SetQueueAttributes" | "DeleteMessage" | "ChangeMessageVisibility" | "PurgeQueue" => {
                json!({})
            }
            "GetQueueAttributes" => json!({ "Attributes": {
                "ApproximateNumberOfMessages": "0",
                "ApproximateNumberOfMessagesNotVisible": "0",
            }}),
            "SendMessage" => {
                let body = request
                    .get("MessageBody")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                json!({ "MessageId": message_id(), "MD5OfMessageBody": md5(body) })
            }
            "SendMessageBatch" | "DeleteMessageBatch" | "ChangeMessageVisibilityBatch" => {
                let successful: Vec<Value> = request
                    .get("Entries")
                    .and_then(Value::as_array)
                    .map(|entries| {
                        entries
                            .iter()
                            .map(|entry| {
                                let id = entry.get("Id").cloned().unwrap_or_default();
                                match entry.get("MessageBody").and_then(Value::as_str) {
                                    Some(body) => json!({
                                        "Id": id,
                                        "MessageId": message_id(),
                                        "MD5OfMessageBody": md5(body),
                                    }),
                                    None => json!({ "Id": id }),
                                }
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                json!({ "Successful": successful, "Failed": [] })
            }
            "ReceiveMessage" => json!({ "Messages": [] }),
            _ => return None,
        })
    }

    fn streams(&self, operation: &str) -> Option<Value> {
        match operation {
            "ListStreams" => Some(json!({ "Streams": [] })),
            _ => None,
        }
    }

    /// What the runner creates at provision time and the payment functions read at cold start:
    /// a secret named `<id>` holds `local-<id>-value`, the local cloud's documented value.
    fn secrets(&self, operation: &str, input: &Value) -> Option<Value> {
        let id = input
            .get("SecretId")
            .or_else(|| input.get("Name"))
            .and_then(Value::as_str)?;
        let arn = format!("arn:aws:secretsmanager:us-east-1:123456789012:secret:{id}");
        match operation {
            "CreateSecret" => Some(json!({ "ARN": arn, "Name": id })),
            "GetSecretValue" => Some(json!({
                "ARN": arn,
                "Name": id,
                "SecretString": local_cloud::secrets::local_value(id),
                "VersionId": "local",
            })),
            _ => None,
        }
    }

    fn count(&self, operation: &str) {
        *self
            .calls
            .lock()
            .expect("no panic while counting")
            .entry(operation.to_owned())
            .or_default() += 1;
    }

    async fn answer(&self, request: Request<Incoming>) -> anyhow::Result<Response<Full<Bytes>>> {
        if request.uri().path() == "/__stub/stats" {
            let calls = self.calls.lock().expect("no panic while counting").clone();
            return Ok(reply(StatusCode::OK, "application/json", json!(calls)));
        }
        let target = request
            .headers()
            .get("x-amz-target")
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if target.is_empty() && request.method() == http::Method::PUT {
            return Ok(self.s3_put(request).await);
        }
        let host = request
            .headers()
            .get(http::header::HOST)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("127.0.0.1")
            .to_owned();
        let body = request.into_body().collect().await?.to_bytes();
        let input: Value = if body.is_empty() {
            json!({})
        } else {
            serde_json::from_slice(&body).context("the request body is not JSON")?
        };
        let (service, operation) = target.split_once('.').unwrap_or(("", ""));
        let output = match service {
            "DynamoDB_20120810" => self.dynamodb(operation, &input),
            "AmazonSQS" => {
                if operation == "ReceiveMessage" {
                    // An empty queue answers a long poll when its wait ends, not at once: a
                    // poller must not spin on the stub.
                    let wait = input
                        .get("WaitTimeSeconds")
                        .and_then(Value::as_u64)
                        .map_or(Duration::ZERO, Duration::from_secs);
                    tokio::time::sleep(wait.min(MAX_RECEIVE_WAIT)).await;
                }
                self.sqs(operation, &input, &host)
            }
            "DynamoDBStreams_20120810" => self.streams(operation),
            "secretsmanager" => self.secrets(operation, &input),
            _ => None,
        };
        match output {
            Some(output) => {
                self.count(&target);
                Ok(reply(StatusCode::OK, "application/x-amz-json-1.0", output))
            }
            None => {
                self.count(&format!("unknown:{target}"));
                eprintln!("aws-stub: unknown operation {target:?}");
                Ok(reply(
                    StatusCode::BAD_REQUEST,
                    "application/x-amz-json-1.0",
                    json!({
                        "__type": "com.amazon.coral.service#UnknownOperationException",
                        "message": format!("aws-stub does not answer {target:?}"),
                    }),
                ))
            }
        }
    }
}

impl Stub {
    /// An S3 `PUT` (path-style): `/<bucket>` creates a bucket, `/<bucket>/<key>` writes an
    /// object; both succeed with an empty answer, as S3's do.
    async fn s3_put(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let object = request.uri().path().trim_matches('/').contains('/');
        // The body is read and dropped: nothing is stored.
        let _ = request.into_body().collect().await;
        self.count(if object {
            "S3.PutObject"
        } else {
            "S3.CreateBucket"
        });
        Response::builder()
            .status(StatusCode::OK)
            .header(
                "x-amz-request-id",
                uuid::Uuid::new_v4().simple().to_string(),
            )
            .body(Full::new(Bytes::new()))
            .expect("a valid response")
    }
}

fn reply(status: StatusCode, content_type: &str, body: Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, content_type)
        .header("x-amzn-requestid", uuid::Uuid::new_v4().to_string())
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("a valid response")
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    anyhow::ensure!(
        args.address.ip().is_loopback(),
        "aws-stub listens on loopback only"
    );
    let listener = tokio::net::TcpListener::bind(args.address)
        .await
        .with_context(|| format!("failed to listen on {}", args.address))?;
    anyhow::ensure!(
        args.latency_ms.is_finite() && (0.0..=10_000.0).contains(&args.latency_ms),
        "--latency-ms is between 0 and 10000, not {}",
        args.latency_ms
    );
    let stub = Arc::new(Stub {
        account_id: args.account_id,
        order_owner: args.order_owner,
        latency: Duration::from_secs_f64(args.latency_ms / 1e3),
        calls: Mutex::new(BTreeMap::new()),
    });
    println!("aws-stub listening on http://{}", listener.local_addr()?);
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let stopped = async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    };
    local_cloud::loopback::serve_until(
        listener,
        stub.clone(),
        |stub, request| async move {
            if !stub.latency.is_zero() && request.uri().path() != "/__stub/stats" {
                tokio::time::sleep(stub.latency).await;
            }
            match stub.answer(request).await {
                Ok(response) => response,
                Err(err) => reply(
                    StatusCode::BAD_REQUEST,
                    "application/x-amz-json-1.0",
                    json!({
                        "__type": "com.amazon.coral.validate#ValidationException",
                        "message": format!("{err:#}"),
                    }),
                ),
            }
        },
        stopped,
        Duration::ZERO,
    )
    .await;
    let calls = stub.calls.lock().expect("no panic while counting").clone();
    eprintln!("aws-stub: calls served {}", json!(calls));
    Ok(())
}
