//! Route throttling end to end: the template's `RouteSettings` enforced by the local HTTP API
//! as API Gateway enforces them. A flood of the public detail route meets 429s while orders
//! placed at the same time, on a route with a bucket of its own, still go through.

use crate::seckill::{buyers, open_sale};
use crate::support::{Api, options, report, start, unique_stack};
use local_cloud::cloud::CloudOptions;
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
    let sale = open_sale(&cloud, BUYERS as u32, 1).await;
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
    let sale = open_sale(&cloud, 1, 1).await;
    let flood = flood_detail(&Api::new(&cloud, None), &sale).await;
    assert_eq!(
        (flood.ok, flood.throttled),
        (FLOOD, 0),
        "lifted, the route's limits are not enforced"
    );
    cloud.stop().await;
}
