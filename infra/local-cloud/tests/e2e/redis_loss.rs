//! Redis losing its data mid-sale, twice: flushed, then killed and restarted empty, each time
//! preheated again by publishing the sale again. Redis then starts its stock and its `bought`
//! hash over, so it admits buyers who already hold their limit; DynamoDB's guards (the sale's
//! stock, each buyer's item) must still give no oversell and no order beyond a user's limit.
//!
//! The cloud runs against a `redis-server` of this test's own, so that killing it disturbs no
//! other test.

use crate::seckill::{buyers, crowd, dynamodb_stock, order_status, settled};
use crate::support::{Api, eventually, options, report, sale, start, unique_stack};
use local_cloud::cloud::LocalCloud;
use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);
const STOCK: i64 = 10;

/// A `redis-server` without persistence on a port of its own, killed when dropped.
pub(crate) struct OwnRedis {
    pub(crate) port: u16,
    child: Child,
}

/// This test's own redis-server's password.
const PASSWORD: &str = "own-redis-password";

impl OwnRedis {
    pub(crate) fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port()
    }

    /// Starts `redis-server` on `port` and waits until it answers.
    pub(crate) async fn start(port: u16) -> Self {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            // A password, as the cloud's cache and the emulators' redis-server require one:
            // the functions present the one their URL carries.
            .args(["--requirepass", PASSWORD])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts (it is installed with the emulators)");
        let redis = Self { port, child };
        let url = redis.url();
        eventually(Duration::from_secs(10), "redis-server answers", || {
            let url = url.clone();
            async move {
                let client = redis::Client::open(url).ok()?;
                let mut connection = client.get_multiplexed_async_connection().await.ok()?;
                let pong: String = redis::cmd("PING").query_async(&mut connection).await.ok()?;
                (pong == "PONG").then_some(())
            }
        })
        .await;
        redis
    }

    /// The project's cloud on a stack of its own, its functions pointed at this Redis.
    pub(crate) fn cloud_options(&self) -> local_cloud::cloud::CloudOptions {
        let mut options = options(&unique_stack());
        options
            .function_env
            .insert("REDIS_URL".to_owned(), self.url());
        options
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://:{PASSWORD}@127.0.0.1:{}", self.port)
    }

    /// SIGKILL: whatever it held is gone, as after a crash without persistence.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    async fn flushall(&self) {
        let mut connection = crate::support::redis_connection(&self.url()).await;
        let _: () = redis::cmd("FLUSHALL")
            .query_async(&mut connection)
            .await
            .unwrap();
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Publishes the sale again, which preheats Redis from DynamoDB, retrying as an operator would
/// while a function still holds a connection to the Redis that died; answers the statuses
/// seen before the 200.
async fn publish_again(cloud: &LocalCloud, sale: &str) -> Vec<u16> {
    let operator = Api::admin(cloud, "operator");
    let started = Instant::now();
    let mut failed = Vec::new();
    loop {
        let (status, body) = operator
            .call("POST", &format!("/seckill/activities/{sale}/publish"), None)
            .await;
        if status == 200 {
            return failed;
        }
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (503, Some("RETRY")),
            "publishing while Redis reconnects: {body}"
        );
        assert!(started.elapsed() < WAIT, "publishing fails: {failed:?}");
        failed.push(status);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// While Redis has lost the sale, or is down: an order answers a client error or 503, never
/// a 500; answers its status.
async fn order_without_500(cloud: &LocalCloud, sale: &str, buyer: &str) -> u16 {
    let (status, body) = Api::new(cloud, Some(buyer))
        .call("POST", &format!("/seckill/activities/{sale}/orders"), None)
        .await;
    assert!(
        (400..500).contains(&status) || status == 503,
        "an order answered {status}: {body}"
    );
    status
}

/// Waits until Redis's stock (the detail page's) is `expected`: released units are back, or
/// an instance whose connection broke with the old Redis has reconnected (it answers 503 once).
pub(crate) async fn redis_stock_is(cloud: &LocalCloud, sale: &str, expected: i64) {
    let reader = Api::new(cloud, None);
    eventually(WAIT, "Redis's stock is back", || async {
        let (status, body) = reader
            .call("GET", &format!("/seckill/activities/{sale}"), None)
            .await;
        (status == 200 && body["stockRemaining"] == expected).then_some(())
    })
    .await;
}

/// Every one of `buyers` orders at once and is admitted by Redis; each order then settles as
/// `status` (CONFIRMED, or REJECTED by DynamoDB when Redis admitted a buyer it forgot), and
/// joins `accepted`.
async fn admitted_and_settled(
    cloud: &LocalCloud,
    sale: &str,
    buyers: &[String],
    status: &str,
    accepted: &mut Vec<(String, String)>,
) {
    let (admitted, rejected) = crowd(cloud, sale, buyers).await;
    assert_eq!(admitted.len(), buyers.len(), "{rejected:?}");
    assert_eq!(
        settled(cloud, &admitted).await,
        BTreeMap::from([(status.to_owned(), buyers.len())])
    );
    accepted.extend(admitted);
}

/// `units` of the buyer's item in the commerce table: what DynamoDB counts the user holds.
async fn dynamodb_units(cloud: &LocalCloud, sale: &str, buyer: &str) -> i64 {
    let item =
        crate::support::commerce_item(cloud, format!("SALE#{sale}#BUYER#{buyer}"), "BUYER").await;
    item.and_then(|item| item.get("units")?.as_n().ok()?.parse().ok())
        .unwrap_or(0)
}

/// Each accepted order materialized once: settled, and listed once among its buyer's orders.
async fn materialized_once(cloud: &LocalCloud, accepted: &[(String, String)]) {
    let mut expected: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (buyer, order) in accepted {
        assert!(
            expected.entry(buyer).or_default().insert(order),
            "{order} accepted twice"
        );
    }
    for (buyer, orders) in expected {
        let (status, listed) = Api::new(cloud, Some(buyer))
            .call("GET", "/orders?limit=100", None)
            .await;
        assert_eq!(status, 200, "{listed}");
        let ids: Vec<&str> = listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|order| order["orderId"].as_str().unwrap())
            .collect();
        assert_eq!(ids.len(), orders.len(), "{buyer}: {listed}");
        assert_eq!(ids.into_iter().collect::<BTreeSet<_>>(), orders, "{buyer}");
    }
}

#[tokio::test]
async fn redis_flushed_then_restarted_empty_mid_sale_keeps_stock_and_limits() {
    let port = OwnRedis::free_port();
    let mut redis = OwnRedis::start(port).await;
    let cloud = start(redis.cloud_options()).await;
    let sale = sale()
        .stock(STOCK as u32)
        .per_user_limit(1)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let mut accepted = Vec::new();
    let mut held = Vec::new();

    // a0..a4 buy their one unit each.
    let first = buyers("a", 5);
    admitted_and_settled(&cloud, &sale, &first, "CONFIRMED", &mut accepted).await;

    // FLUSHALL: until the sale is preheated again, orders find no sale.
    redis.flushall().await;
    let status = order_without_500(&cloud, &sale, "a0").await;
    held.push(format!("after FLUSHALL an order answered {status}"));
    let failed = publish_again(&cloud, &sale).await;
    assert!(failed.is_empty(), "{failed:?}");
    redis_stock_is(&cloud, &sale, STOCK - 5).await;

    // Redis forgot who bought: a0..a4 are admitted again, and DynamoDB refuses them.
    admitted_and_settled(&cloud, &sale, &first, "REJECTED", &mut accepted).await;
    // Their units are given back to Redis: new buyers get them.
    redis_stock_is(&cloud, &sale, STOCK - 5).await;
    let fresh = buyers("n", 3);
    admitted_and_settled(&cloud, &sale, &fresh, "CONFIRMED", &mut accepted).await;
    assert_eq!(dynamodb_stock(&cloud, &sale).await, STOCK - 8);

    // kill -9, then an empty redis-server on the same port.
    redis.kill();
    let status = order_without_500(&cloud, &sale, "n3").await;
    assert_eq!(status, 503, "an order while Redis is down");
    let (status, body) = Api::new(&cloud, None)
        .call("GET", &format!("/seckill/activities/{sale}"), None)
        .await;
    assert_eq!(status, 503, "the detail page while Redis is down: {body}");
    held.push("Redis down, an order and the detail page answered 503".to_owned());
    redis = OwnRedis::start(port).await;
    // Each function instance finds its connection broken once, then reconnects: orders
    // answer 503 until then, and then the 404 of a sale Redis does not know.
    let started = Instant::now();
    let mut answered = Vec::new();
    while answered
        .iter()
        .rev()
        .take_while(|status| **status != 503)
        .count()
        < 4
    {
        assert!(started.elapsed() < WAIT, "still 503: {answered:?}");
        answered.push(order_without_500(&cloud, &sale, "n3").await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    held.push(format!("Redis back empty, orders answered {answered:?}"));
    let failed = publish_again(&cloud, &sale).await;
    held.push(format!(
        "publish again answered {failed:?} (503 RETRY while reconnecting), then 200"
    ));
    redis_stock_is(&cloud, &sale, STOCK - 8).await;

    // Forgotten again: a0 and a1 are admitted and refused; then the last units sell.
    let again = buyers("a", 2);
    admitted_and_settled(&cloud, &sale, &again, "REJECTED", &mut accepted).await;
    redis_stock_is(&cloud, &sale, STOCK - 8).await;
    let (last, rejected) = crowd(&cloud, &sale, &buyers("m", 4)).await;
    assert_eq!(last.len(), 2, "{rejected:?}");
    assert_eq!(rejected.get("SOLD_OUT"), Some(&2), "{rejected:?}");
    accepted.extend(last);

    // The invariants.
    let counts = settled(&cloud, &accepted).await;
    let confirmed = counts.get("CONFIRMED").copied().unwrap_or(0) as i64;
    let remaining = dynamodb_stock(&cloud, &sale).await;
    assert_eq!(confirmed + remaining, STOCK, "{counts:?}");
    assert!(remaining >= 0, "never oversold");
    assert_eq!((confirmed, remaining), (STOCK, 0), "{counts:?}");
    materialized_once(&cloud, &accepted).await;
    let mut per_user: BTreeMap<&str, i64> = BTreeMap::new();
    for (buyer, order) in &accepted {
        let status = order_status(&cloud, buyer, order).await;
        if status.as_deref() == Some("CONFIRMED") {
            *per_user.entry(buyer).or_default() += 1;
        } else {
            assert!(
                buyer.starts_with('a'),
                "only second orders are refused: {buyer} {order} {status:?}"
            );
        }
    }
    let most = per_user.values().copied().max().unwrap_or(0);
    assert_eq!(most, 1, "a user holds more than the limit: {per_user:?}");
    for buyer in &first {
        assert_eq!(dynamodb_units(&cloud, &sale, buyer).await, 1, "{buyer}");
    }
    let seconds = accepted.len() - STOCK as usize;
    held.extend([
        format!("{confirmed} confirmed + {remaining} left = stock {STOCK}"),
        format!("{} accepted, each materialized once", accepted.len()),
        format!("{seconds} second orders of a0..a4 admitted by Redis, REJECTED by DynamoDB"),
        format!("at most {most} per user (limit 1)"),
    ]);
    report(
        "redis-loss",
        "Redis flushed, then restarted empty, mid-sale; re-preheated",
        "FLUSHALL; kill -9 redis-server; publish again",
        &held,
    );
    cloud.stop().await;
    redis.kill();
}
