//! The cache failing over mid-sale, as ElastiCache tells it: an `ElastiCache:FailoverComplete`
//! event on the SNS topic invokes `CacheFailoverFunction`, which checks the replication group
//! with the ElastiCache API (moto's control plane) and puts the live sale back in order
//! without an operator: a Redis that came back empty gets the sale preheated again, and a
//! Redis that lost its last admissions (a replica promoted before it had them) gets its stock
//! capped at what DynamoDB can still confirm, so that no buyer is told `202` for a unit that
//! DynamoDB must then refuse.
//!
//! The cloud runs against a `redis-server` of this test's own, so that killing it disturbs no
//! other test.

use crate::redis_loss::{OwnRedis, redis_stock_is};
use crate::seckill::{WAIT, buyers, crowd, dynamodb_stock, settled};
use crate::support::{Api, report, sale, sdk, start};
use bytes::Bytes;
use local_cloud::cloud::LocalCloud;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const STOCK: i64 = 10;
/// `!Ref RedisCache` as the local runner evaluates it: the function's `REDIS_CACHE_NAME`.
const GROUP: &str = "RedisCache";

/// The replication group in moto, as `template.yaml` declares it (idempotent: the group is
/// shared by every run against the same emulator).
async fn replication_group() {
    let client = aws_sdk_elasticache::Client::new(&sdk().await);
    let created = client
        .create_replication_group()
        .replication_group_id(GROUP)
        .replication_group_description("flash-sale cache")
        .engine("valkey")
        .cache_node_type("cache.t4g.small")
        .num_cache_clusters(2)
        .automatic_failover_enabled(true)
        .transit_encryption_enabled(true)
        .send()
        .await;
    if let Err(err) = created {
        let exists = err
            .as_service_error()
            .is_some_and(|e| e.is_replication_group_already_exists_fault());
        assert!(exists, "create the replication group: {err:?}");
    }
}

/// SNS's event for one ElastiCache message.
fn sns_event(message: &str) -> Bytes {
    let event = json!({
        "Records": [{
            "EventSource": "aws:sns",
            "EventVersion": "1.0",
            "EventSubscriptionArn": "arn:aws:sns:us-east-1:123456789012:cache-events:1",
            "Sns": {
                "Type": "Notification",
                "MessageId": uuid::Uuid::new_v4().to_string(),
                "TopicArn": "arn:aws:sns:us-east-1:123456789012:cache-events",
                "Subject": null,
                "Message": message,
                "Timestamp": "2026-12-01T10:00:00.000Z",
                "SignatureVersion": "1",
                "Signature": "",
                "SigningCertUrl": "",
                "UnsubscribeUrl": "",
                "MessageAttributes": {}
            }
        }]
    });
    Bytes::from(event.to_string())
}

/// Invokes the failover function as SNS does, again while it fails (Lambda retries an
/// asynchronous invocation; here a function instance first finds its Redis connection
/// broken); answers its summary.
async fn failover(cloud: &LocalCloud, message: &str) -> Value {
    let started = Instant::now();
    loop {
        match cloud
            .invoke("CacheFailoverFunction", sns_event(message))
            .await
        {
            Ok(answer) => return serde_json::from_slice(&answer).expect("a JSON summary"),
            Err(err) => {
                assert!(
                    started.elapsed() < WAIT,
                    "the failover keeps failing: {err:#}"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

#[tokio::test]
async fn a_failover_event_restores_an_emptied_cache_and_caps_a_stale_stock() {
    replication_group().await;
    let port = OwnRedis::free_port();
    let mut redis = OwnRedis::start(port).await;
    let mut options = redis.cloud_options();
    // The scheduled reconciliation caps a stale stock too: off, so that what is seen here is
    // the failover function's doing.
    options
        .disabled_sources
        .push("ReconcileFunction".to_owned());
    let cloud = start(options).await;
    let sale = sale()
        .stock(STOCK as u32)
        .per_user_limit(1)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let mut held = Vec::new();

    let (first, rejected) = crowd(&cloud, &sale, &buyers("a", 4)).await;
    assert_eq!(first.len(), 4, "{rejected:?}");
    assert_eq!(
        settled(&cloud, &first).await,
        BTreeMap::from([("CONFIRMED".to_owned(), 4)])
    );

    // An event of another cache, or one that loses nothing, changes nothing.
    let ignored = failover(
        &cloud,
        r#"{"ElastiCache:FailoverComplete":"othercache-0001-001"}"#,
    )
    .await;
    assert_eq!(ignored["events"], json!([]), "{ignored}");
    let ignored = failover(
        &cloud,
        r#"{"ElastiCache:SnapshotComplete":"rediscache-0001-001"}"#,
    )
    .await;
    assert_eq!(ignored["events"], json!([]), "{ignored}");

    // The node comes back empty (kill -9, no persistence): the sale is unknown to Redis.
    redis.kill();
    redis = OwnRedis::start(port).await;
    // Each place-order instance finds its connection broken once (503), then reconnects and
    // finds no sale (404): Redis lost it, as buyers see until the event is handled.
    let started = Instant::now();
    let mut answered = Vec::new();
    while answered.iter().rev().take_while(|s| **s == 404).count() < 4 {
        assert!(started.elapsed() < WAIT, "orders answer {answered:?}");
        let (status, body) = Api::new(&cloud, Some("probe"))
            .call("POST", &format!("/seckill/activities/{sale}/orders"), None)
            .await;
        assert!(matches!(status, 404 | 503), "{status} {body}");
        answered.push(status);
    }
    held.push(format!("Redis back empty: orders answered {answered:?}"));
    let recovered = failover(
        &cloud,
        r#"{"ElastiCache:FailoverComplete":"rediscache-0001-002"}"#,
    )
    .await;
    assert_eq!(recovered["group"]["status"], "available", "{recovered}");
    assert!(
        recovered["group"]["primary"]
            .as_str()
            .is_some_and(|primary| primary.contains(':')),
        "{recovered}"
    );
    assert_eq!(recovered["preheated"], json!([sale]), "{recovered}");
    let report_of = |recovered: &Value| {
        recovered["reconciled"]["sales"]
            .as_array()
            .unwrap()
            .iter()
            .find(|report| report["saleId"] == sale.as_str())
            .cloned()
            .unwrap_or_else(|| panic!("the sale is reconciled: {recovered}"))
    };
    assert_eq!(report_of(&recovered)["redisStock"], STOCK - 4);
    redis_stock_is(&cloud, &sale, STOCK - 4).await;
    held.push(format!(
        "Redis restarted empty; the failover event preheated {} again with {} units",
        sale,
        STOCK - 4
    ));

    // The promoted replica missed the last three admissions: its stock is three too high.
    let mut connection = crate::support::redis_connection(&redis.url()).await;
    let _: i64 = redis::cmd("INCRBY")
        .arg(format!("sale:{{{sale}}}:stock"))
        .arg(3)
        .query_async(&mut connection)
        .await
        .unwrap();
    redis_stock_is(&cloud, &sale, STOCK - 1).await;
    let recovered = failover(&cloud, "ElastiCache:FailoverComplete : rediscache-0001-001").await;
    assert_eq!(recovered["preheated"], json!([]), "{recovered}");
    assert_eq!(report_of(&recovered)["capped"], 3, "{recovered}");
    redis_stock_is(&cloud, &sale, STOCK - 4).await;
    held.push("a stock 3 units too high (lost admissions) was capped back".to_owned());

    // The sale goes on and sells out exactly: every admitted order is confirmed.
    let (rest, rejected) = crowd(&cloud, &sale, &buyers("b", 8)).await;
    assert_eq!(rest.len(), (STOCK - 4) as usize, "{rejected:?}");
    assert_eq!(rejected.get("SOLD_OUT"), Some(&2), "{rejected:?}");
    assert_eq!(
        settled(&cloud, &rest).await,
        BTreeMap::from([("CONFIRMED".to_owned(), (STOCK - 4) as usize)])
    );
    assert_eq!(
        dynamodb_stock(&cloud, &sale).await,
        0,
        "sold out, never oversold"
    );
    held.push(format!(
        "after both, {} more orders admitted, all CONFIRMED; DynamoDB stock 0",
        STOCK - 4
    ));
    report(
        "cache-failover",
        "cache failover: Redis restarted empty, then a stock that lost admissions",
        "kill -9 redis-server; INCRBY the stock; invoke CacheFailoverFunction with ElastiCache's SNS event",
        &held,
    );
    cloud.stop().await;
    redis.kill();
}
