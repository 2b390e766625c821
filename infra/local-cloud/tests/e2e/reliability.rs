//! The reliability suite: each fault injected on purpose through the runner's fault switches
//! (`local_cloud::faults`: duplicate delivery, crashes, failing AWS calls, timeouts) or by
//! acting on Redis, then the invariants checked: notifications and orders exactly once,
//! follower counts equal to edges, orders plus remaining stock equal to the initial stock,
//! no order beyond a user's limit. Each scenario that holds adds its row to
//! `loadtest/results/reliability.md` (see `support::report`).

use crate::follow::{burst, follower_count, notifications, sign_up};
use crate::seckill::{buyers, crowd, detail, dynamodb_stock, settled};
use crate::support::{
    Api, eventually, options, queue_depth, queue_url, report, sale, sdk, start, start_with,
    status_and_code, unique_stack,
};
use local_cloud::cloud::LocalCloud;
use local_cloud::faults::{Action, Crash, Rule, Service};
use std::collections::BTreeMap;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);
const NOTIFIER: &str = "NotificationConsumerFunction";
const COUNTER: &str = "FollowerCountConsumerFunction";
const ORDERS: &str = "OrderConsumerFunction";
const RELAY: &str = "OutboxRelayFunction";
const PLACE_ORDER: &str = "PlaceOrderFunction";
const FOLLOW: &str = "FollowFunction";

fn rule(service: Service, operations: &[&str], action: Action) -> Rule {
    Rule {
        service,
        operations: operations.iter().map(|o| o.to_string()).collect(),
        action,
    }
}

/// How many followers `user`'s follower list holds: the edges.
async fn edges(api: &Api, user: &str) -> usize {
    let (status, body) = api
        .call("GET", &format!("/users/{user}/followers?limit=100"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    body["items"].as_array().unwrap().len()
}

/// The actors of `api`'s user's FOLLOW notifications, sorted (duplicates kept).
async fn notified_by(api: &Api) -> Vec<String> {
    let body = notifications(api).await;
    let mut actors: Vec<String> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["actorId"].as_str().unwrap().to_owned())
        .collect();
    actors.sort();
    actors
}

/// Waits until `star` has exactly the expected followers counted and notifications, then
/// waits a little longer to see that nothing more arrives; answers the invariants held.
async fn social_settles(
    star: &Api,
    name: &str,
    followers: &[String],
    notified: &[String],
) -> Vec<String> {
    let mut expected_notified = notified.to_vec();
    expected_notified.sort();
    let expected = followers.len();
    eventually(
        WAIT,
        "the follower count and notifications settle",
        || async {
            let counted = follower_count(star, name).await as usize;
            let actors = notified_by(star).await;
            (counted == expected && actors == expected_notified).then_some(())
        },
    )
    .await;
    // Late duplicates would show up now.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(follower_count(star, name).await as usize, expected);
    assert_eq!(edges(star, name).await, expected, "edges");
    assert_eq!(
        notified_by(star).await,
        expected_notified,
        "notifications exactly once"
    );
    vec![
        format!("followerCount = edges = {expected}"),
        format!("{} notifications, each once", expected_notified.len()),
    ]
}

/// Waits until every accepted order is materialized and checks the sale's invariants.
async fn orders_settle(
    cloud: &LocalCloud,
    sale: &str,
    accepted: &[(String, String)],
    stock: i64,
    per_user_limit: usize,
) -> Vec<String> {
    let counts = settled(cloud, accepted).await;
    let confirmed = counts.get("CONFIRMED").copied().unwrap_or(0);
    let remaining = dynamodb_stock(cloud, sale).await;
    assert_eq!(
        confirmed as i64 + remaining,
        stock,
        "orders + remaining = stock: {counts:?}"
    );
    assert!(remaining >= 0, "never oversold");
    let mut per_user: BTreeMap<&str, usize> = BTreeMap::new();
    for (buyer, order) in accepted {
        if crate::seckill::order_status(cloud, buyer, order)
            .await
            .as_deref()
            == Some("CONFIRMED")
        {
            *per_user.entry(buyer).or_default() += 1;
        }
    }
    let most = per_user.values().copied().max().unwrap_or(0);
    assert!(
        most <= per_user_limit,
        "a user holds {most} > {per_user_limit}: {per_user:?}"
    );
    vec![
        format!("{confirmed} confirmed + {remaining} left = stock {stock}"),
        format!("{} accepted, each materialized once", accepted.len()),
        format!("at most {most} per user (limit {per_user_limit})"),
    ]
}

async fn fans(cloud: &LocalCloud, prefix: &str, n: usize) -> (Vec<Api>, Vec<String>) {
    let names: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
    let mut apis = Vec::new();
    for name in &names {
        apis.push(sign_up(cloud, name).await);
    }
    (apis, names)
}

async fn follow_all(apis: &[Api], star: &str, method: &str) {
    let path = format!("/users/{star}/follow");
    let tasks: Vec<_> = apis
        .iter()
        .cloned()
        .map(|api| {
            let path = path.clone();
            let method = method.to_owned();
            tokio::spawn(async move { api.call(&method, &path, None).await })
        })
        .collect();
    for task in tasks {
        let (status, body) = task.await.unwrap();
        assert_eq!(status, 200, "{body}");
    }
}

#[tokio::test]
async fn every_message_delivered_twice_and_reordered_changes_nothing() {
    let mut options = options(&unique_stack());
    options.faults.sqs_duplicate = true;
    let cloud = start(options).await;
    let star = sign_up(&cloud, "star").await;
    let (apis, names) = fans(&cloud, "fan", 10).await;
    follow_all(&apis, "star", "PUT").await;
    follow_all(&apis[..3], "star", "DELETE").await;
    let sale = sale()
        .stock(6)
        .per_user_limit(2)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let crowd_of = buyers("twice", 5);
    let (mut accepted, _) = crowd(&cloud, &sale, &crowd_of).await;
    accepted.extend(crowd(&cloud, &sale, &crowd_of).await.0);
    assert_eq!(accepted.len(), 6);

    let mut held = social_settles(&star, "star", &names[3..], &names).await;
    held.extend(orders_settle(&cloud, &sale, &accepted, 6, 2).await);
    report(
        "duplicate-delivery",
        "every SQS message delivered twice, in another order",
        "--sqs-duplicate",
        &held,
    );
    cloud.stop().await;
}

#[tokio::test]
async fn consumers_killed_mid_batch_lose_and_duplicate_nothing() {
    let mut options = options(&unique_stack());
    for consumer in [NOTIFIER, COUNTER, ORDERS] {
        let faults = options
            .faults
            .functions
            .entry(consumer.to_owned())
            .or_default();
        // Each write waits 100 ms in the proxy, and the process dies 60 ms into the batch,
        // with its writes in flight: whichever of them the proxy still forwards lands, the
        // others don't, and the batch's answer never comes.
        faults.rules.push(rule(
            Service::DynamoDb,
            &["PutItem", "UpdateItem", "TransactWriteItems"],
            Action::Delay(Duration::from_millis(100)),
        ));
        faults.crash = Some(Crash {
            probability: 1.0,
            after: Duration::from_millis(60),
        });
    }
    let cloud = start(options).await;
    let star = sign_up(&cloud, "star").await;
    let (apis, names) = fans(&cloud, "fan", 8).await;
    follow_all(&apis, "star", "PUT").await;
    let sale = sale()
        .stock(4)
        .per_user_limit(1)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let (accepted, _) = crowd(&cloud, &sale, &buyers("b", 6)).await;
    assert_eq!(accepted.len(), 4);

    eventually(
        WAIT,
        "every consumer is killed mid-batch at least once",
        || async {
            [NOTIFIER, COUNTER, ORDERS]
                .iter()
                .all(|f| cloud.faults.kills(f) >= 1)
                .then_some(())
        },
    )
    .await;
    let kills: u64 = [NOTIFIER, COUNTER, ORDERS]
        .iter()
        .map(|f| cloud.faults.kills(f))
        .sum();
    for consumer in [NOTIFIER, COUNTER, ORDERS] {
        cloud.faults.set_crash(consumer, None);
    }

    let mut held = vec![format!("{kills} consumer processes killed mid-batch")];
    held.extend(social_settles(&star, "star", &names, &names).await);
    held.extend(orders_settle(&cloud, &sale, &accepted, 4, 1).await);
    report(
        "crash-mid-batch",
        "consumer processes killed (SIGKILL) mid-batch",
        "--fault CONSUMER:crash=1@60ms, then off",
        &held,
    );
    cloud.stop().await;
}

#[tokio::test]
async fn random_failures_retry_and_the_dlq_replays_without_loss() {
    let cloud = start_with(
        &[
            &format!("{NOTIFIER}:dynamodb:fail=1"),
            &format!("{COUNTER}:dynamodb:fail=0.2"),
            &format!("{ORDERS}:dynamodb:fail=0.2"),
        ],
        &[],
    )
    .await;
    let sqs = aws_sdk_sqs::Client::new(&sdk().await);
    let star = sign_up(&cloud, "star").await;
    let (apis, names) = fans(&cloud, "fan", 10).await;

    // Phase 1: every notification write fails; after maxReceiveCount receives the events are
    // in the DLQ.
    follow_all(&apis[..4], "star", "PUT").await;
    let dlq = queue_url(&cloud, "NotificationDeadLetterQueue");
    eventually(WAIT, "the failing notifications reach the DLQ", || async {
        (queue_depth(&sqs, &dlq).await >= 4).then_some(())
    })
    .await;

    // Phase 2: a random 20% of every consumer's DynamoDB requests fail.
    cloud.faults.set_rules(
        NOTIFIER,
        vec![rule(Service::DynamoDb, &[], Action::Fail(0.2))],
    );
    follow_all(&apis[4..], "star", "PUT").await;
    let sale = sale()
        .stock(5)
        .per_user_limit(1)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let (accepted, _) = crowd(&cloud, &sale, &buyers("b", 8)).await;
    assert_eq!(accepted.len(), 5);
    tokio::time::sleep(Duration::from_secs(6)).await;

    // The fault is fixed; whatever any DLQ holds is replayed.
    for consumer in [NOTIFIER, COUNTER, ORDERS] {
        cloud.faults.set_rules(consumer, Vec::new());
    }
    let mut replayed = 0;
    for (queue, dead) in [
        ("NotificationQueue", "NotificationDeadLetterQueue"),
        ("FollowerCountQueue", "FollowerCountDeadLetterQueue"),
        ("OrderQueue", "OrderDeadLetterQueue"),
    ] {
        replayed += local_cloud::replay::move_messages(
            &sqs,
            &queue_url(&cloud, dead),
            &queue_url(&cloud, queue),
            |_| {},
        )
        .await
        .unwrap();
    }
    assert!(replayed >= 4, "the DLQ held the failed events: {replayed}");

    let mut held = vec![format!("{replayed} messages replayed from the DLQs")];
    held.extend(social_settles(&star, "star", &names, &names).await);
    held.extend(orders_settle(&cloud, &sale, &accepted, 5, 1).await);
    report(
        "failures-and-dlq",
        "consumers failing 100% then a random 20% of their DynamoDB calls; DLQ replay",
        "--fault CONSUMER:dynamodb:fail=0.2; make dlq-replay",
        &held,
    );
    cloud.stop().await;
}

#[tokio::test]
async fn a_failing_order_queue_answers_503_and_keeps_no_reservation() {
    let cloud = start_with(&[&format!("{PLACE_ORDER}:sqs.SendMessage:fail=1")], &[]).await;
    let sale = sale()
        .stock(3)
        .per_user_limit(1)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let path = format!("/seckill/activities/{sale}/orders");
    for buyer in buyers("b", 5) {
        let answer = Api::new(&cloud, Some(&buyer))
            .call("POST", &path, None)
            .await;
        assert_eq!(status_and_code(&answer), (503, Some("RETRY")), "{answer:?}");
    }
    // Every reservation was given back: the stock is whole and nothing is pending.
    assert_eq!(detail(&cloud, &sale).await["stockRemaining"], 3);
    let mut redis = crate::support::redis_connection(&std::env::var("REDIS_URL").unwrap()).await;
    let pending: usize = redis::cmd("HLEN")
        .arg(format!("sale:{{{sale}}}:pending"))
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(pending, 0, "no reservation stuck");
    let (_, listed) = Api::new(&cloud, Some("b0"))
        .call("GET", "/orders", None)
        .await;
    assert_eq!(listed["items"], serde_json::json!([]), "{listed}");

    // The queue is back: the same buyers get the three units, limits intact.
    cloud.faults.set_rules(PLACE_ORDER, Vec::new());
    let (accepted, rejected) = crowd(&cloud, &sale, &buyers("b", 5)).await;
    assert_eq!(accepted.len(), 3, "{rejected:?}");
    let mut held = vec!["5 orders answered 503 RETRY, stock back to 3, 0 pending".to_owned()];
    held.extend(orders_settle(&cloud, &sale, &accepted, 3, 1).await);
    report(
        "order-send-fails",
        "SQS SendMessage failing for the order route",
        "--fault PlaceOrderFunction:sqs.SendMessage:fail=1",
        &held,
    );
    cloud.stop().await;
}

#[tokio::test]
async fn a_relay_failing_for_a_while_delivers_everything_once_in_order() {
    let cloud = start_with(&[&format!("{RELAY}:sqs:fail=1")], &[]).await;
    let bob = sign_up(&cloud, "bob").await;
    let alice = sign_up(&cloud, "alice").await;
    let carol = sign_up(&cloud, "carol").await;
    // The same pair's events must apply in order: follow, unfollow, follow.
    for method in ["PUT", "DELETE", "PUT"] {
        let (status, body) = alice.call(method, "/users/bob/follow", None).await;
        assert_eq!(status, 200, "{body}");
    }
    let (status, _) = carol.call("PUT", "/users/bob/follow", None).await;
    assert_eq!(status, 200);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(follower_count(&bob, "bob").await, 0, "nothing relayed yet");
    assert!(notified_by(&bob).await.is_empty());

    cloud.faults.set_rules(RELAY, Vec::new());
    let names = ["alice".to_owned(), "carol".to_owned()];
    let mut held = vec!["relay failing 4 s; follows answered 200 meanwhile".to_owned()];
    held.extend(social_settles(&bob, "bob", &names, &names).await);
    report(
        "relay-fails",
        "the stream relay's SQS sends failing for a while",
        "--fault OutboxRelayFunction:sqs:fail=1, then off",
        &held,
    );
    cloud.stop().await;
}

#[tokio::test]
async fn concurrent_follow_and_unfollow_keep_counts_equal_to_edges() {
    // alice's 24 attempts at once test concurrency, not abuse: lifted well above the follow
    // rate limit's default (30 a minute), which they would come close to.
    let cloud = start_with(&[], &[("FollowRatePerMinute", "1000")]).await;
    let bob = sign_up(&cloud, "bob").await;
    let alice = sign_up(&cloud, "alice").await;
    // One pair: 12 follows and 12 unfollows at once.
    let tasks: Vec<_> = (0..24)
        .map(|i| {
            let alice = alice.clone();
            let method = if i % 2 == 0 { "PUT" } else { "DELETE" };
            tokio::spawn(async move { alice.call(method, "/users/bob/follow", None).await })
        })
        .collect();
    for task in tasks {
        let (status, body) = task.await.unwrap();
        assert!(status == 200 || status == 503, "{status} {body}");
    }
    // One celebrity: 16 fans follow, half of them unfollow at the same time as others follow.
    let star = sign_up(&cloud, "star").await;
    let (apis, names) = fans(&cloud, "fan", 16).await;
    let leaving: Vec<Api> = apis.iter().step_by(2).cloned().collect();
    follow_all(&leaving, "star", "PUT").await;
    let staying: Vec<Api> = apis.iter().skip(1).step_by(2).cloned().collect();
    let (a, b) = tokio::join!(
        burst(leaving.clone(), "DELETE", "/users/star/follow"),
        burst(staying, "PUT", "/users/star/follow"),
    );
    assert!(
        a.iter().chain(&b).all(|(status, _)| *status == 200),
        "{a:?} {b:?}"
    );

    let pair_edges = edges(&bob, "bob").await;
    let (_, me) = alice.call("GET", "/users/alice", None).await;
    assert_eq!(
        me["followingCount"].as_u64().unwrap() as usize,
        pair_edges,
        "{me}"
    );
    let followers: Vec<String> = names.iter().skip(1).step_by(2).cloned().collect();
    let mut held = social_settles(&star, "star", &followers, &names).await;
    eventually(WAIT, "bob's count equals the pair's edge", || async {
        (follower_count(&bob, "bob").await as usize == pair_edges).then_some(())
    })
    .await;
    assert_eq!(notified_by(&bob).await, ["alice"], "one notification ever");
    held.push(format!(
        "pair: followerCount = followingCount = edges = {pair_edges}"
    ));
    report(
        "concurrent-follow",
        "24 concurrent follow/unfollow of one pair; 16 fans following and leaving one celebrity",
        "(none: concurrency)",
        &held,
    );
    cloud.stop().await;
}

#[tokio::test]
async fn a_follow_that_times_out_leaves_whole_state_and_its_retry_changes_nothing() {
    // The transaction lands, but its answer comes after the function's 1 s timeout.
    let cloud = start_with(
        &[
            &format!("{FOLLOW}:timeout=1s"),
            &format!("{FOLLOW}:dynamodb.TransactWriteItems:hang=2s"),
        ],
        &[],
    )
    .await;
    let bob = sign_up(&cloud, "bob").await;
    let alice = sign_up(&cloud, "alice").await;
    let (status, body) = alice.call("PUT", "/users/bob/follow", None).await;
    assert_eq!(status, 504, "{body}");

    // All of the transaction or none of it: the edge, alice's counter and the outbox event.
    let (_, following) = alice
        .call("GET", "/users/alice/following?limit=100", None)
        .await;
    let edge = following["items"].as_array().unwrap().len();
    let (_, me) = alice.call("GET", "/users/alice", None).await;
    assert_eq!(
        me["followingCount"].as_u64().unwrap() as usize,
        edge,
        "{me} {following}"
    );

    cloud.faults.set_rules(FOLLOW, Vec::new());
    let (status, body) = alice.call("PUT", "/users/bob/follow", None).await;
    assert_eq!(
        (status, &body["following"]),
        (200, &serde_json::json!(true)),
        "{body}"
    );
    let (_, me) = alice.call("GET", "/users/alice", None).await;
    assert_eq!(me["followingCount"], 1, "{me}");
    let names = ["alice".to_owned()];
    let mut held = vec![format!(
        "504 answered; after it edge = followingCount = {edge}"
    )];
    held.extend(social_settles(&bob, "bob", &names, &names).await);
    report(
        "function-timeout",
        "the follow function timing out after its write (504), then retried",
        "--fault FollowFunction:timeout=1s --fault FollowFunction:dynamodb.TransactWriteItems:hang=2s",
        &held,
    );
    cloud.stop().await;
}
