//! `sdk-floor`: what one DynamoDB call costs a function's process in CPU, through the SDK
//! as the functions configure it ([`app::cloud::sdk_config`]) and through the floor under
//! it, a hyper client sending the same `GetItem` signed by the SDK's own SigV4 signer, against
//! the same endpoint (the benchmark's `aws-stub`, which answers at once); and what one Redis
//! command costs through the functions' connection ([`app::cloud::redis`], a `GET`).
//!
//! With `--client sdk`, `--operation` picks the call: a one-item `GetItem` (the default, the
//! one the floor makes too), or one shaped like a route's other calls, so that a route's SDK
//! cost is its own calls' and not a `GetItem`'s: a `Query` answered with a page of 20 edges
//! (list-followers, list-following), a `BatchGetItem` of 20 profiles (their display names), a
//! `TransactWriteItems` of four items (follow: the edge, two counters, the outbox event), an
//! `UpdateItem` of a counter, a `PutItem` of a sale, and an SQS `SendMessage` of an order event.
//!
//! `sdk-floor --client sdk|floor|redis --calls N --warmup W --gap-us G` makes `W` unmeasured calls,
//! then `N` measured ones one after another on a `current_thread` runtime (as the functions
//! run), sleeping `G` µs between calls: a function's process sits idle between invocations,
//! and a call after an idle gap costs more than one in a tight loop (cold caches, a parked
//! thread woken). CPU is every thread's time on CPU from `/proc/self/task/*/schedstat`
//! (nanoseconds), over the measured calls. It prints one JSON line: the client, the calls, the
//! CPU and wall time per call in µs, and the failed calls (any answer but 200).
//!
//! Region, credentials and endpoint come from the environment, as in a function.

use anyhow::Context;
use app::ids::UserId;
use app::social::keys::{PROFILE_SK, edge_index_sk, follow_sk, followers_pk, user_pk};
use aws_credential_types::Credentials;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::time::{Duration, Instant, SystemTime};

const TABLE: &str = "bench-table";
/// A profile the stub answers with an item (infra/aws-stub's table of canned answers).
const PK: &str = "USER#bench-user";
const SK: &str = "PROFILE";

#[derive(clap::Parser, Debug)]
struct Args {
    /// `sdk` (the functions' SDK configuration), `floor` (hyper + SigV4) or `redis` (a `GET`
    /// on the functions' Redis connection, `REDIS_URL`).
    #[arg(long)]
    client: String,
    /// The SDK's call (`--client sdk` only): get-item, query, batch-get-item,
    /// transact-write-items, update-item, put-item or send-message.
    #[arg(long, default_value = "get-item")]
    operation: String,
    #[arg(long, default_value_t = 5_000)]
    calls: u32,
    #[arg(long, default_value_t = 500)]
    warmup: u32,
    /// Idle time between two calls, µs (0: back to back).
    #[arg(long, default_value_t = 1_000)]
    gap_us: u64,
}

#[derive(serde::Serialize)]
struct Measured {
    client: String,
    /// The SDK's operation, as the stub counts it (`GetItem`, `Query`, ...).
    operation: String,
    calls: u32,
    gap_us: u64,
    cpu_us_per_call: f64,
    wall_us_per_call: f64,
    failed: u32,
}

/// Nanoseconds on CPU of every thread of this process so far.
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// One call: whether it answered 200.
trait Caller {
    async fn call(&self) -> bool;
}

/// The SDK's calls a probe can make, each shaped like one a route makes.
#[derive(Clone, Copy, Debug)]
enum Operation {
    GetItem,
    Query,
    BatchGetItem,
    TransactWriteItems,
    UpdateItem,
    PutItem,
    SendMessage,
}

impl Operation {
    const ALL: [Self; 7] = [
        Self::GetItem,
        Self::Query,
        Self::BatchGetItem,
        Self::TransactWriteItems,
        Self::UpdateItem,
        Self::PutItem,
        Self::SendMessage,
    ];

    /// `get-item`, `query`, ... as `--operation` takes it.
    fn parse(name: &str) -> anyhow::Result<Self> {
        Self::ALL
            .into_iter()
            .find(|op| op.flag() == name)
            .with_context(|| format!("--operation {name:?} is none of get-item, query, batch-get-item, transact-write-items, update-item, put-item, send-message"))
    }

    fn flag(self) -> &'static str {
        match self {
            Self::GetItem => "get-item",
            Self::Query => "query",
            Self::BatchGetItem => "batch-get-item",
            Self::TransactWriteItems => "transact-write-items",
            Self::UpdateItem => "update-item",
            Self::PutItem => "put-item",
            Self::SendMessage => "send-message",
        }
    }

    /// The name the stub counts the call under.
    fn name(self) -> &'static str {
        match self {
            Self::GetItem => "GetItem",
            Self::Query => "Query",
            Self::BatchGetItem => "BatchGetItem",
            Self::TransactWriteItems => "TransactWriteItems",
            Self::UpdateItem => "UpdateItem",
            Self::PutItem => "PutItem",
            Self::SendMessage => "SendMessage",
        }
    }
}

/// Items in a page of the list routes, and profiles in their `BatchGetItem`.
const PAGE: usize = 20;

struct Sdk {
    dynamodb: aws_sdk_dynamodb::Client,
    sqs: aws_sdk_sqs::Client,
    operation: Operation,
    queue_url: String,
}

fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

fn n(value: i64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

impl Sdk {
    fn new(config: &aws_types::SdkConfig, operation: Operation) -> Self {
        let endpoint = config
            .endpoint_url()
            .unwrap_or("http://127.0.0.1")
            .trim_end_matches('/');
        Self {
            dynamodb: aws_sdk_dynamodb::Client::new(config),
            sqs: aws_sdk_sqs::Client::new(config),
            operation,
            queue_url: format!("{endpoint}/000000000000/bench-orders"),
        }
    }

    async fn try_call(&self) -> anyhow::Result<bool> {
        let db = &self.dynamodb;
        let user = UserId::parse("bench-user")?;
        Ok(match self.operation {
            Operation::GetItem => db
                .get_item()
                .table_name(TABLE)
                .key("pk", s(PK))
                .key("sk", s(SK))
                .send()
                .await?
                .item
                .is_some(),
            Operation::Query => {
                let output = db
                    .query()
                    .table_name(TABLE)
                    .key_condition_expression("pk = :pk")
                    .expression_attribute_values(":pk", s(followers_pk(&user)))
                    .scan_index_forward(false)
                    .limit(PAGE as i32)
                    .send()
                    .await?;
                output.items().len() == PAGE
            }
            Operation::BatchGetItem => {
                let mut keys = aws_sdk_dynamodb::types::KeysAndAttributes::builder();
                for i in 0..PAGE {
                    let other = UserId::parse(&format!("user-{i:05}"))?;
                    keys = keys.keys(
                        [
                            ("pk".to_owned(), s(user_pk(&other))),
                            ("sk".to_owned(), s(PROFILE_SK)),
                        ]
                        .into(),
                    );
                }
                let output = db
                    .batch_get_item()
                    .request_items(
                        TABLE,
                        keys.projection_expression("pk, displayName").build()?,
                    )
                    .send()
                    .await?;
                output
                    .responses()
                    .and_then(|tables| tables.get(TABLE))
                    .is_some_and(|items| items.len() == PAGE)
            }
            Operation::TransactWriteItems => {
                use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};
                let followee = UserId::parse("user-00001")?;
                let at = "2026-12-02T04:00:00.000Z";
                let counter = |pk: String, field: &str| -> anyhow::Result<TransactWriteItem> {
                    Ok(TransactWriteItem::builder()
                        .update(
                            Update::builder()
                                .table_name(TABLE)
                                .key("pk", s(pk))
                                .key("sk", s(PROFILE_SK))
                                .update_expression(format!("ADD {field} :one"))
                                .expression_attribute_values(":one", n(1))
                                .condition_expression("attribute_exists(pk)")
                                .build()?,
                        )
                        .build())
                };
                let edge = Put::builder()
                    .table_name(TABLE)
                    .item("pk", s(user_pk(&user)))
                    .item("sk", s(follow_sk(&followee)))
                    .item("follower", s(user.as_str()))
                    .item("followee", s(followee.as_str()))
                    .item("followedAt", s(at))
                    .item("gsi1pk", s(followers_pk(&followee)))
                    .item("gsi1sk", s(edge_index_sk(at, &user)))
                    .condition_expression("attribute_not_exists(pk)")
                    .build()?;
                let event = Put::builder()
                    .table_name(TABLE)
                    .item("pk", s(format!("OUTBOX#{}", uuid::Uuid::now_v7())))
                    .item("sk", s("EVENT"))
                    .item("type", s("FOLLOWED"))
                    .item(
                        "payload",
                        s(format!(
                            r#"{{"type":"FOLLOWED","followerId":"{}","followeeId":"{}","occurredAt":"{at}"}}"#,
                            user.as_str(),
                            followee.as_str()
                        )),
                    )
                    .item("expiresAt", n(1_800_000_000))
                    .build()?;
                db.transact_write_items()
                    .transact_items(TransactWriteItem::builder().put(edge).build())
                    .transact_items(counter(user_pk(&user), "followingCount")?)
                    .transact_items(counter(user_pk(&followee), "followerCount")?)
                    .transact_items(TransactWriteItem::builder().put(event).build())
                    .send()
                    .await?;
                true
            }
            Operation::UpdateItem => {
                db.update_item()
                    .table_name(TABLE)
                    .key("pk", s(PK))
                    .key("sk", s(SK))
                    .update_expression("ADD followerCount :one")
                    .expression_attribute_values(":one", n(1))
                    .condition_expression("attribute_exists(pk)")
                    .send()
                    .await?;
                true
            }
            Operation::PutItem => {
                let id = uuid::Uuid::now_v7().to_string();
                db.put_item()
                    .table_name(TABLE)
                    .item("pk", s(format!("SALE#{id}")))
                    .item("sk", s("SALE"))
                    .item("id", s(&id))
                    .item("title", s("Bench sale"))
                    .item("status", s("DRAFT"))
                    .item("priceCents", n(1999))
                    .item("totalStock", n(1_000_000))
                    .item("perUserLimit", n(100))
                    .item("startsAt", s("2026-12-02T04:00:00.000Z"))
                    .item("endsAt", s("2026-12-03T04:00:00.000Z"))
                    .item("createdAt", s("2026-12-02T03:00:00.000Z"))
                    .condition_expression("attribute_not_exists(pk)")
                    .send()
                    .await?;
                true
            }
            Operation::SendMessage => {
                let body = format!(
                    r#"{{"type":"ORDER_PLACED","orderId":"{}","saleId":"{}","userId":"bench-user","units":1,"priceCents":1999,"occurredAt":"2026-12-02T04:00:00.000Z"}}"#,
                    uuid::Uuid::now_v7(),
                    uuid::Uuid::now_v7()
                );
                self.sqs
                    .send_message()
                    .queue_url(&self.queue_url)
                    .message_body(body)
                    .send()
                    .await?
                    .message_id
                    .is_some()
            }
        })
    }
}

impl Caller for Sdk {
    async fn call(&self) -> bool {
        self.try_call().await.unwrap_or(false)
    }
}

/// hyper and the SDK's signer, and nothing else: no retries, no timeouts, no interceptors.
struct Floor {
    client: Client<HttpConnector, Full<Bytes>>,
    endpoint: String,
    region: String,
    identity: Identity,
}

impl Floor {
    fn from_env() -> anyhow::Result<Self> {
        let var = |name: &str| std::env::var(name).with_context(|| format!("{name} is not set"));
        let credentials = Credentials::new(
            var("AWS_ACCESS_KEY_ID")?,
            var("AWS_SECRET_ACCESS_KEY")?,
            std::env::var("AWS_SESSION_TOKEN").ok(),
            None,
            "environment",
        );
        let endpoint = var("AWS_ENDPOINT_URL")?;
        anyhow::ensure!(
            endpoint.starts_with("http://"),
            "the floor speaks plain HTTP to a local endpoint, not {endpoint}"
        );
        Ok(Self {
            client: Client::builder(TokioExecutor::new()).build_http(),
            endpoint: format!("{}/", endpoint.trim_end_matches('/')),
            region: var("AWS_REGION")?,
            identity: credentials.into(),
        })
    }

    async fn try_call(&self) -> anyhow::Result<bool> {
        let body = serde_json::to_vec(&serde_json::json!({
            "TableName": TABLE,
            "Key": {"pk": {"S": PK}, "sk": {"S": SK}},
        }))?;
        let host = self
            .endpoint
            .trim_start_matches("http://")
            .trim_end_matches('/');
        let headers = [
            ("host", host),
            ("content-type", "application/x-amz-json-1.0"),
            ("x-amz-target", "DynamoDB_20120810.GetItem"),
        ];
        let params = v4::SigningParams::builder()
            .identity(&self.identity)
            .region(&self.region)
            .name("dynamodb")
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()?
            .into();
        let signable = SignableRequest::new(
            "POST",
            &self.endpoint,
            headers.iter().copied(),
            SignableBody::Bytes(&body),
        )?;
        let (instructions, _signature) = sign(signable, &params)?.into_parts();
        let mut request = http::Request::post(&self.endpoint);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let mut request = request.body(Full::new(Bytes::from(body)))?;
        instructions.apply_to_request_http1x(&mut request);
        let response = self.client.request(request).await?;
        let ok = response.status() == 200;
        let answer = response.into_body().collect().await?.to_bytes();
        // Read the item as the SDK would: parse the answer.
        let answer: serde_json::Value = serde_json::from_slice(&answer)?;
        Ok(ok && answer.get("Item").is_some())
    }
}

impl Caller for Floor {
    async fn call(&self) -> bool {
        self.try_call().await.unwrap_or(false)
    }
}

struct Redis(redis::aio::ConnectionManager);

impl Caller for Redis {
    async fn call(&self) -> bool {
        let mut connection = self.0.clone();
        redis::cmd("GET")
            .arg("bench:sdk-floor")
            .query_async::<Option<String>>(&mut connection)
            .await
            .is_ok()
    }
}

async fn measure(caller: &impl Caller, args: &Args, operation: &str) -> Measured {
    let gap = Duration::from_micros(args.gap_us);
    let mut failed = 0;
    for _ in 0..args.warmup {
        caller.call().await;
    }
    let cpu_before = cpu_ns();
    let mut busy = Duration::ZERO;
    for _ in 0..args.calls {
        if !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
        let call_started = Instant::now();
        if !caller.call().await {
            failed += 1;
        }
        busy += call_started.elapsed();
    }
    let cpu = cpu_ns().saturating_sub(cpu_before);
    let calls = f64::from(args.calls.max(1));
    Measured {
        client: args.client.clone(),
        operation: operation.to_owned(),
        calls: args.calls,
        gap_us: args.gap_us,
        cpu_us_per_call: cpu as f64 / 1e3 / calls,
        wall_us_per_call: busy.as_secs_f64() * 1e6 / calls,
        failed,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = <Args as clap::Parser>::parse();
    let operation = Operation::parse(&args.operation)?;
    anyhow::ensure!(
        matches!(operation, Operation::GetItem) || args.client == "sdk",
        "--operation is the SDK's call; the floor and Redis make one call only"
    );
    let measured = match args.client.as_str() {
        "sdk" => {
            let config = app::cloud::sdk_config()?;
            measure(&Sdk::new(&config, operation), &args, operation.name()).await
        }
        "floor" => measure(&Floor::from_env()?, &args, operation.name()).await,
        "redis" => {
            let url = std::env::var("REDIS_URL").context("REDIS_URL is not set")?;
            measure(&Redis(app::cloud::redis(&url).await?), &args, "GET").await
        }
        other => anyhow::bail!("--client is sdk, floor or redis, not {other:?}"),
    };
    println!("{}", serde_json::to_string(&measured)?);
    Ok(())
}
