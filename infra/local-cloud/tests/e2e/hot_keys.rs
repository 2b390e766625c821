//! Hot keys: a burst of follows on one celebrity and of orders on one sale, with every writing
//! function behind the runner's counting proxy; the hottest item may be written at most 0.1
//! times per follow and per order (docs/DESIGN.md §6), so that one celebrity or one sale sustains
//! 10,000 events/s under DynamoDB's 1,000 writes/s per item. The orders are admitted with the
//! order consumer stopped and then drained, as the burst they are in the cloud: admitted here
//! through debug functions, they would reach the consumer slower than its batching window.
//!
//! `HOT_KEY_N` sets the burst (default 200); `make bench` runs it larger and keeps the lines
//! this test prints (`hot key: ...`).

use crate::follow::{follower_count, sign_up};
use crate::seckill::{buyers, crowd, settled_within};
use crate::support::{
    Api, cloud_consumer_timeouts, eventually, options, sale, start, unique_stack,
};
use local_cloud::cloud::{CloudOptions, LocalCloud};
use std::time::{Duration, Instant};

const WRITERS: &[&str] = &[
    "FollowFunction",
    "NotificationConsumerFunction",
    "FollowerCountConsumerFunction",
    "OrderConsumerFunction",
    "PaymentTimeoutConsumerFunction",
];
const LIMIT: f64 = 0.1;

fn burst_size() -> usize {
    std::env::var("HOT_KEY_N")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200)
}

/// The most written item since the last reset, and its writes per event.
fn hottest(cloud: &LocalCloud, events: usize, what: &str) -> f64 {
    let counts = cloud.faults.write_counts();
    let (item, writes) = counts.first().expect("the proxies saw writes");
    let ratio = *writes as f64 / events as f64;
    println!(
        "hot key: {what}: {events} events, hottest item {} ({}) written {writes} times = {ratio:.3} per event (target <= {LIMIT})",
        item.key, item.table
    );
    for (item, writes) in counts.iter().skip(1).take(2) {
        println!("hot key:   next: {} written {writes} times", item.key);
    }
    ratio
}

async fn concurrently<F, Fut>(n: usize, width: usize, task: F)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut next = 0;
    while next < n {
        let tasks: Vec<_> = (next..(next + width).min(n))
            .map(|i| tokio::spawn(task(i)))
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        next += width;
    }
}

/// How long a burst may take to be applied: the burst arrives at once, beside other tests.
const DRAIN: Duration = Duration::from_secs(120);

/// The project's cloud on `stack` for a burst: without route throttling, since `HOT_KEY_N`
/// sizes bursts that arrive at once (`make bench` runs them larger) and what is counted here is
/// writes per event, not the route limits (throttling.rs). The consumers may take as long as in
/// the cloud (their default 10 s, redelivered after 20 s) rather than the tests' usual 2 s: in a
/// fresh-clone run beside other tests, batches of the burst's orders outlasted 2 s again and
/// again, were cut off and redelivered, and the burst never drained (and a batch cut off and
/// applied again is writes this test would count).
fn burst(stack: &str) -> CloudOptions {
    let mut options = options(stack);
    options.route_throttling = false;
    cloud_consumer_timeouts(&mut options);
    options
}

/// [`burst`], with every writer behind the counting proxy.
fn counted(stack: &str) -> CloudOptions {
    let mut options = burst(stack);
    for writer in WRITERS {
        options
            .faults
            .add(&format!("{writer}:proxy"))
            .expect("a valid switch");
    }
    options
}

#[tokio::test]
async fn the_hottest_item_takes_at_most_a_tenth_of_a_write_per_follow_and_per_order() {
    let n = burst_size();
    let stack = unique_stack();
    let cloud = start(counted(&stack)).await;
    let star = sign_up(&cloud, "star").await;
    let fans: Vec<Api> = (0..n)
        .map(|i| Api::new(&cloud, Some(&format!("fan{i}"))))
        .collect();
    concurrently(n, 32, |i| {
        let fan = fans[i].clone();
        async move {
            fan.put_profile("fan").await;
        }
    })
    .await;

    cloud.faults.reset_write_counts();
    let started = Instant::now();
    concurrently(n, n, |i| {
        let fan = fans[i].clone();
        async move {
            fan.follow("star").await;
        }
    })
    .await;
    eventually(DRAIN, "every follow is counted and notified", || async {
        let (_, listed) = star.call("GET", "/notifications?limit=1", None).await;
        (follower_count(&star, "star").await as usize == n
            && listed["unreadCount"].as_u64() == Some(n as u64))
        .then_some(())
    })
    .await;
    println!(
        "hot key: {n} follows applied in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let per_follow = hottest(&cloud, n, "follow");

    cloud.stop().await;

    // A sale's burst arrives in the cloud far faster than one batching window (10,000 orders
    // a second); here 200 orders through debug functions take seconds, so the consumer would
    // see a trickle instead and the ratio would measure this machine. So the orders are
    // admitted with the consumer stopped, then drained as the burst they are.
    let mut held = burst(&stack);
    held.disabled_sources = vec![
        "OrderConsumerFunction".to_owned(),
        "ReconcileFunction".to_owned(),
    ];
    // A load test: every buyer must be admitted, and the per-user order rate limit counts
    // attempts on every sale, also those of other tests' buyers of the same names.
    held.parameter_overrides.insert(
        "OrderRateLimitPerSecond".to_owned(),
        crate::contention::UNLIMITED_ORDERS.to_owned(),
    );
    let admitting = start(held).await;
    let sale = sale()
        .stock(n as u32)
        .per_user_limit(1)
        .publish(&Api::admin(&admitting, "operator"))
        .await;
    let (accepted, rejected) = crowd(&admitting, &sale, &buyers("buyer", n)).await;
    assert_eq!(accepted.len(), n, "{rejected:?}");
    admitting.stop().await;
    let mut draining = counted(&stack);
    draining.disabled_sources = vec!["ReconcileFunction".to_owned()];
    let cloud = start(draining).await;
    settled_within(&cloud, &accepted, DRAIN).await;
    let per_order = hottest(&cloud, n, "order");

    assert!(
        per_follow <= LIMIT,
        "{per_follow} writes per follow on the hottest item"
    );
    assert!(
        per_order <= LIMIT,
        "{per_order} writes per order on the hottest item"
    );
    cloud.stop().await;
}
