//! Route throttling end to end: the template's `RouteSettings` enforced by the local HTTP API
//! as API Gateway enforces them. A flood of the public detail route meets 429s while orders
//! placed at the same time, on a route with a bucket of its own, still go through. And the
//! web ACL's per-source limits before the buckets: a stranger flooding the order route or
//! the payment callback from one address is refused there, and the buyers and the provider
//! at other addresses still get through; and a request that goes around the distribution, to
//! a function without its header, is refused 403.

use crate::seckill::buyers;
use crate::support::{Api, options, report, sale, start, unique_stack};
use local_cloud::cloud::CloudOptions;
use serde_json::Value;
use serde_json::json;
use std::time::{Duration, Instant};

const DETAIL_RATE: u32 = 20;
const DETAIL_BURST: u32 = 20;
const FLOOD: usize = 400;
const FLOODERS: usize = 16;
const BUYERS: usize = 20;

/// The project template with the detail route's limits lowered, so that a flood of a few
/// hundred requests exceeds them within a second; every other limit is the template's.
fn detail_throttled(stack: &str) -> CloudOptions {
    let mut options = options(stack);
    for (name, value) in [
        ("SaleDetailThrottlingRateLimit", DETAIL_RATE),
        ("SaleDetailThrottlingBurstLimit", DETAIL_BURST),
    ] {
        options
            .parameter_overrides
            .insert(name.to_owned(), value.to_string());
    }
    options
}

/// What a flood of `FLOOD` anonymous detail reads, from `FLOODERS` clients, was answered.
struct Flood {
    ok: usize,
    throttled: usize,
    elapsed: Duration,
}

async fn flood_detail(api: &Api, sale: &str) -> Flood {
    let started = Instant::now();
    let path = format!("/seckill/activities/{sale}");
    let tasks: Vec<_> = (0..FLOODERS)
        .map(|_| {
            let api = api.clone();
            let path = path.clone();
            tokio::spawn(async move {
                let mut answers = Vec::new();
                for _ in 0..FLOOD / FLOODERS {
                    answers.push(api.call("GET", &path, None).await);
                }
                answers
            })
        })
        .collect();
    let (mut ok, mut throttled) = (0, 0);
    for task in tasks {
        for (status, body) in task.await.unwrap() {
            match status {
                200 => {
                    assert_eq!(body["id"], sale, "{body}");
                    ok += 1;
                }
                429 => {
                    assert_eq!(body, json!({"message": "Too Many Requests"}));
                    throttled += 1;
                }
                other => panic!("a detail read answered {other} {body}"),
            }
        }
    }
    Flood {
        ok,
        throttled,
        elapsed: started.elapsed(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_detail_flood_meets_429s_while_orders_still_go_through() {
    let stack = unique_stack();
    let cloud = start(detail_throttled(&stack)).await;
    let sale = sale()
        .stock(BUYERS as u32)
        .per_user_limit(1)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let detail_invocations_before = cloud.invocations("GetSaleFunction").unwrap();

    let anonymous = Api::new(&cloud, None);
    let buyer_api = Api::new(&cloud, Some("throttle-buyer"));
    let order_path = format!("/seckill/activities/{sale}/orders");
    // The buyers order while the flood is on: one every 20 ms from its start.
    let orders = tokio::spawn(async move {
        let mut answers = Vec::new();
        for buyer in buyers("honest", BUYERS) {
            tokio::time::sleep(Duration::from_millis(20)).await;
            answers.push(
                buyer_api
                    .as_user(&buyer)
                    .call("POST", &order_path, None)
                    .await,
            );
        }
        answers
    });
    let flood = flood_detail(&anonymous, &sale).await;
    let orders = orders.await.unwrap();

    assert!(
        flood.throttled > 0,
        "a flood of {FLOOD} reads in {:?} met no 429 ({} answered)",
        flood.elapsed,
        flood.ok
    );
    // The bucket: at most the burst plus the rate over the flood's duration got through.
    let allowed = DETAIL_BURST as f64 + DETAIL_RATE as f64 * flood.elapsed.as_secs_f64() + 1.0;
    assert!(
        (flood.ok as f64) <= allowed,
        "{} reads answered 200 in {:?}; the route allows {allowed:.0}",
        flood.ok,
        flood.elapsed
    );
    assert_eq!(
        cloud.invocations("GetSaleFunction").unwrap() - detail_invocations_before,
        flood.ok as u64,
        "a throttled read never invokes get-sale"
    );
    for (status, body) in &orders {
        assert_eq!(*status, 202, "an order during the flood: {body}");
        assert_eq!(body["status"], "PENDING", "{body}");
    }
    assert_eq!(orders.len(), BUYERS);
    report(
        "hostile-detail-flood",
        "Hostile crowd: anonymous flood of the public sale detail route while buyers order",
        &format!("GET /seckill/activities/{{id}} at {DETAIL_RATE}/s, burst {DETAIL_BURST}"),
        &[
            format!(
                "{} of {FLOOD} reads 429 Too Many Requests, {} answered (within the bucket)",
                flood.throttled, flood.ok
            ),
            "a throttled read never invoked get-sale".to_owned(),
            format!("all {BUYERS} orders placed during the flood 202"),
        ],
    );
    cloud.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_load_test_can_lift_the_throttling() {
    let stack = unique_stack();
    let mut options = detail_throttled(&stack);
    options.route_throttling = false;
    let cloud = start(options).await;
    let sale = sale()
        .stock(1)
        .per_user_limit(1)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let flood = flood_detail(&Api::new(&cloud, None), &sale).await;
    assert_eq!(
        (flood.ok, flood.throttled),
        (FLOOD, 0),
        "lifted, the route's limits are not enforced"
    );
    cloud.stop().await;
}

const ORDER_RATE: u32 = 10;
const ORDER_BURST: u32 = 40;
const CALLBACK_RATE: u32 = 5;
const CALLBACK_BURST: u32 = 20;
/// Requests one source may send each route in a minute: WAF's lowest limit.
const PER_SOURCE: u64 = 10;
const HONEST_BUYERS: usize = 15;

/// The project template with the web ACL on, its per-source limits at their lowest, and the
/// order route's and the callback's buckets small enough for a flood of a few hundred
/// requests to empty them many times over. Sources are taken from `X-Forwarded-For`, so that
/// one machine plays clients at several addresses.
fn behind_the_web_acl(stack: &str) -> CloudOptions {
    let mut options = options(stack);
    options.trust_forwarded_for = true;
    for (name, value) in [
        ("EnableWaf", "true".to_owned()),
        ("WafOrderRateLimit", PER_SOURCE.to_string()),
        ("WafCallbackRateLimit", PER_SOURCE.to_string()),
        ("PlaceOrderThrottlingRateLimit", ORDER_RATE.to_string()),
        ("PlaceOrderThrottlingBurstLimit", ORDER_BURST.to_string()),
        (
            "PaymentCallbackThrottlingRateLimit",
            CALLBACK_RATE.to_string(),
        ),
        (
            "PaymentCallbackThrottlingBurstLimit",
            CALLBACK_BURST.to_string(),
        ),
    ] {
        options.parameter_overrides.insert(name.to_owned(), value);
    }
    options
}

/// `api` sending `method path` with `body` from `source` until `stop` is set; answers the
/// statuses it got.
fn flood_from(
    api: Api,
    source: &'static str,
    method: &'static str,
    path: String,
    body: &'static str,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<Vec<u16>> {
    tokio::spawn(async move {
        let mut statuses = Vec::new();
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let (status, _) = api
                .send(
                    method,
                    &path,
                    &[("x-forwarded-for", source)],
                    body.to_owned(),
                )
                .await;
            statuses.push(status);
        }
        statuses
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_strangers_flood_from_one_source_cannot_take_the_order_route_or_the_callback_from_others()
{
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let stack = unique_stack();
    let cloud = start(behind_the_web_acl(&stack)).await;
    // A unit for each honest buyer, and one the greedy user may take within its own limit.
    let sale = sale()
        .stock(HONEST_BUYERS as u32 + 1)
        .per_user_limit(1)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let order_path = format!("/seckill/activities/{sale}/orders");

    // Two strangers at two addresses: one sends junk with no token, the other orders again
    // and again as one signed-in user; a third floods the payment callback with junk notices.
    let stop = Arc::new(AtomicBool::new(false));
    let floods = [
        flood_from(
            Api::new(&cloud, None),
            "203.0.113.66",
            "POST",
            order_path.clone(),
            "junk",
            stop.clone(),
        ),
        flood_from(
            Api::new(&cloud, Some("one-greedy-user")),
            "203.0.113.67",
            "POST",
            order_path.clone(),
            "",
            stop.clone(),
        ),
        flood_from(
            Api::new(&cloud, None),
            "203.0.113.68",
            "POST",
            "/payments/callback".to_owned(),
            r#"{"junk":true}"#,
            stop.clone(),
        ),
    ];
    // Let the floods go over their limits before anyone honest arrives.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let buyer_api = Api::new(&cloud, Some("acl-buyer"));
    let mut orders = Vec::new();
    for (i, buyer) in buyers("behind-acl", HONEST_BUYERS).iter().enumerate() {
        let source = format!("198.51.100.{}", i + 1);
        orders.push(
            buyer_api
                .as_user(buyer)
                .send(
                    "POST",
                    &order_path,
                    &[("x-forwarded-for", &source)],
                    String::new(),
                )
                .await,
        );
    }
    // The provider, at its own address: its notice (unsigned here) reaches the function,
    // which judges it, instead of a 429 from the edge or the gateway.
    let provider: (u16, Value) = Api::new(&cloud, None)
        .send(
            "POST",
            "/payments/callback",
            &[("x-forwarded-for", "192.0.2.10")],
            r#"{"orderId":"none"}"#.to_owned(),
        )
        .await;
    stop.store(true, Ordering::Relaxed);
    let mut flooded = Vec::new();
    for flood in floods {
        flooded.push(flood.await.unwrap());
    }

    for (i, statuses) in flooded.iter().enumerate() {
        let refused = statuses.iter().filter(|status| **status == 429).count();
        let passed = statuses.len() - refused;
        assert!(
            passed as u64 <= PER_SOURCE,
            "flood {i}: {passed} of {} requests got past the edge; one source may send \
             {PER_SOURCE}",
            statuses.len()
        );
        assert!(refused > 0, "flood {i} was never refused: {statuses:?}");
    }
    for (status, body) in &orders {
        assert!(
            matches!(status, 202 | 409),
            "an honest buyer at its own address during the floods: {status} {body}"
        );
    }
    assert_eq!(
        orders.iter().filter(|(status, _)| *status == 202).count(),
        HONEST_BUYERS,
        "one unit for each honest buyer: {orders:?}"
    );
    assert_ne!(provider.0, 429, "the provider's notice: {provider:?}");
    assert_eq!(
        provider.1["error"]["code"], "BAD_SIGNATURE",
        "the callback function judged the provider's notice: {provider:?}"
    );
    report(
        "hostile-source-flood",
        "Hostile crowd: strangers flood the order route and the payment callback from one address each",
        &format!(
            "EnableWaf=true, {PER_SOURCE} requests per source and minute; orders \
             {ORDER_RATE}/s burst {ORDER_BURST}, callback {CALLBACK_RATE}/s burst {CALLBACK_BURST}"
        ),
        &[
            format!(
                "junk, one user's token and junk notices: {} requests, at most {PER_SOURCE} \
                 per source past the edge",
                flooded.iter().map(Vec::len).sum::<usize>()
            ),
            format!("all {HONEST_BUYERS} buyers at their own addresses 202"),
            "the provider's notice reached the callback function".to_owned(),
        ],
    );
    cloud.stop().await;
}

/// An HTTP API event for `GET /seckill/activities/{id}` as API Gateway sends it, with these
/// headers: what a caller at the execute-api endpoint makes a function run.
fn detail_event(sale: &str, headers: Value) -> String {
    json!({
        "version": "2.0",
        "routeKey": "GET /seckill/activities/{id}",
        "rawPath": format!("/seckill/activities/{sale}"),
        "rawQueryString": "",
        "headers": headers,
        "pathParameters": {"id": sale},
        "isBase64Encoded": false,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "local",
            "domainName": "local.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "local",
            "http": {
                "method": "GET",
                "path": format!("/seckill/activities/{sale}"),
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.70",
                "userAgent": "curl/8"
            },
            "requestId": "around-cloudfront",
            "routeKey": "GET /seckill/activities/{id}",
            "stage": "$default",
            "time": "07/Dec/2026:00:00:00 +0000",
            "timeEpoch": 0
        }
    })
    .to_string()
}

/// The execute-api endpoint cannot be disabled without a custom domain, and a caller there
/// skips the web ACL: every function answers a request without the distribution's header 403
/// and does nothing. Through the runner's HTTP API, which adds the header as the distribution
/// does, the same read is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_went_around_the_distribution_is_403() {
    let stack = unique_stack();
    let cloud = start(options(&stack)).await;
    let sale = sale()
        .stock(1)
        .per_user_limit(1)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let anonymous = Api::new(&cloud, None);
    let (status, body) = anonymous
        .call("GET", &format!("/seckill/activities/{sale}"), None)
        .await;
    assert_eq!(status, 200, "through the distribution: {body}");

    let function = crate::support::function_named(&cloud, "get-sale");
    let invoke = format!("/2015-03-31/functions/{function}/invocations");
    let secret = local_cloud::secrets::local_value("OriginVerifySecret");
    for (headers, expected) in [
        (json!({}), 403),
        (json!({"x-origin-verify": "guessed"}), 403),
        (json!({"x-origin-verify": secret}), 200),
    ] {
        let (status, answer) = anonymous
            .send("POST", &invoke, &[], detail_event(&sale, headers.clone()))
            .await;
        assert_eq!(status, 200, "the invocation itself: {answer}");
        assert_eq!(answer["statusCode"], expected, "{headers}: {answer}");
        if expected == 403 {
            let body: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
            assert_eq!(body["error"]["code"], "FORBIDDEN", "{answer}");
        }
    }
    cloud.stop().await;
}
