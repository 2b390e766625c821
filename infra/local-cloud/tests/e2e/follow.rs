//! The follow product end to end: follow, the outbox relay, notifications and counters.

use crate::support::{
    Api, eventually, function_named, options, queue_depth, queue_url, report, sdk, start,
    start_with, table, unique_stack,
};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(30);

pub(crate) async fn sign_up(cloud: &local_cloud::cloud::LocalCloud, user: &str) -> Api {
    let api = Api::new(cloud, Some(user));
    api.put_profile(user).await;
    api
}

pub(crate) async fn notifications(api: &Api) -> Value {
    let (status, body) = api.call("GET", "/notifications?limit=100", None).await;
    assert_eq!(status, 200, "{body}");
    body
}

pub(crate) async fn follower_count(api: &Api, user: &str) -> u64 {
    let (status, body) = api.call("GET", &format!("/users/{user}"), None).await;
    assert_eq!(status, 200, "{body}");
    body["followerCount"].as_u64().unwrap()
}

/// Waits until `user` has `expected` followers counted, then answers.
pub(crate) async fn wait_for_followers(api: &Api, user: &str, expected: u64) {
    eventually(
        WAIT,
        &format!("{user} has {expected} followers counted"),
        || async { (follower_count(api, user).await == expected).then_some(()) },
    )
    .await;
}

#[tokio::test]
async fn a_follow_notifies_the_followee_once_ever_and_counts() {
    let cloud = start(options(&unique_stack())).await;
    let alice = sign_up(&cloud, "alice").await;
    let bob = sign_up(&cloud, "bob").await;

    let body = alice.follow("bob").await;
    assert_eq!(body["following"], true);
    let (_, me) = alice.call("GET", "/users/alice", None).await;
    assert_eq!(
        me["followingCount"], 1,
        "the follower's own counter is in the transaction"
    );

    let listed = eventually(Duration::from_secs(10), "bob is notified", || async {
        let body = notifications(&bob).await;
        (!body["items"].as_array().unwrap().is_empty()).then_some(body)
    })
    .await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["items"][0]["type"], "FOLLOW");
    assert_eq!(listed["items"][0]["actorId"], "alice");
    assert_eq!(listed["unreadCount"], 1);
    wait_for_followers(&bob, "bob", 1).await;

    // Following again changes nothing; unfollow and re-follow notify no second time.
    let (status, again) = alice.call("PUT", "/users/bob/follow", None).await;
    assert_eq!((status, &again["following"]), (200, &json!(true)));
    let (status, body) = alice.call("DELETE", "/users/bob/follow", None).await;
    assert_eq!((status, &body["following"]), (200, &json!(false)), "{body}");
    wait_for_followers(&bob, "bob", 0).await;
    let (status, _) = alice.call("PUT", "/users/bob/follow", None).await;
    assert_eq!(status, 200);
    wait_for_followers(&bob, "bob", 1).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let listed = notifications(&bob).await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["unreadCount"], 1);

    // Other users cannot see bob's notifications: their own list is empty.
    assert!(
        notifications(&alice).await["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    cloud.stop().await;
}

#[tokio::test]
async fn every_event_delivered_twice_changes_nothing() {
    let cloud = start(options(&unique_stack())).await;
    let carol = sign_up(&cloud, "carol").await;
    let fans: Vec<String> = (0..5).map(|i| format!("fan{i}")).collect();
    for fan in &fans {
        let api = sign_up(&cloud, fan).await;
        assert_eq!(api.call("PUT", "/users/carol/follow", None).await.0, 200);
    }
    wait_for_followers(&carol, "carol", 5).await;
    eventually(WAIT, "carol has 5 notifications", || async {
        (notifications(&carol).await["items"]
            .as_array()
            .unwrap()
            .len()
            == 5)
            .then_some(())
    })
    .await;

    // Deliver every event that the outbox produced once more, to both consumers.
    let config = sdk().await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&config);
    let sqs = aws_sdk_sqs::Client::new(&config);
    let items = dynamodb
        .scan()
        .table_name(table(&cloud, "SocialTable"))
        .filter_expression("begins_with(pk, :outbox)")
        .expression_attribute_values(
            ":outbox",
            aws_sdk_dynamodb::types::AttributeValue::S("OUTBOX#".into()),
        )
        .send()
        .await
        .unwrap()
        .items
        .unwrap_or_default();
    assert_eq!(items.len(), 5, "one outbox event per follow");
    let queues = [
        queue_url(&cloud, "NotificationQueue"),
        queue_url(&cloud, "FollowerCountQueue"),
    ];
    for item in &items {
        let event = item["event"].as_s().unwrap();
        for queue in &queues {
            sqs.send_message()
                .queue_url(queue)
                .message_body(event)
                .send()
                .await
                .unwrap();
        }
    }
    for queue in &queues {
        eventually(WAIT, "the redelivered events are consumed", || async {
            (queue_depth(&sqs, queue).await == 0).then_some(())
        })
        .await;
    }
    assert_eq!(follower_count(&carol, "carol").await, 5);
    let listed = notifications(&carol).await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 5, "{listed}");
    assert_eq!(listed["unreadCount"], 5);
    cloud.stop().await;
}

#[tokio::test]
async fn a_burst_of_follows_on_a_celebrity_counts_exactly() {
    let cloud = start(options(&unique_stack())).await;
    let celeb = sign_up(&cloud, "celeb").await;
    let mut fans = Vec::new();
    for i in 0..24 {
        fans.push((format!("f{i}"), sign_up(&cloud, &format!("f{i}")).await));
    }
    let everyone: Vec<Api> = fans.iter().map(|(_, api)| api.clone()).collect();
    for (status, body) in burst(everyone, "PUT", "/users/celeb/follow").await {
        assert_eq!(status, 200, "{body}");
    }
    // A third unfollow again, concurrently.
    let leaving: Vec<Api> = fans.iter().step_by(3).map(|(_, api)| api.clone()).collect();
    for (status, body) in burst(leaving, "DELETE", "/users/celeb/follow").await {
        assert_eq!(status, 200, "{body}");
    }
    let (_, listed) = celeb
        .call("GET", "/users/celeb/followers?limit=100", None)
        .await;
    let edges = listed["items"].as_array().unwrap().len() as u64;
    assert_eq!(edges, 16, "{listed}");
    wait_for_followers(&celeb, "celeb", edges).await;
    cloud.stop().await;
}

/// Waits, if need be, until at least `needed` is left of the current minute, so that what
/// follows falls in one window of the follow rate limit (windows are clock minutes).
async fn within_one_rate_window(needed: Duration) {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let into_minute = Duration::from_millis((since_epoch.as_millis() % 60_000) as u64);
    let left = Duration::from_secs(60) - into_minute;
    if left < needed {
        tokio::time::sleep(left + Duration::from_millis(200)).await;
    }
}

fn error_of(answer: &(u16, Value)) -> (u16, &str, &str) {
    let (status, body) = answer;
    (
        *status,
        body["error"]["code"].as_str().unwrap_or_default(),
        body["error"]["message"].as_str().unwrap_or_default(),
    )
}

#[tokio::test]
async fn a_follow_burst_meets_the_rate_limit_and_the_following_cap_its_409() {
    const RATE: usize = 8;
    // Small limits, so that a test meets them: the parameters as an operator sets them.
    let cloud = start_with(
        &[],
        &[
            ("FollowRatePerMinute", &RATE.to_string()),
            ("MaxFollowing", "3"),
        ],
    )
    .await;
    for user in ["t0", "t1", "t2", "t3"] {
        sign_up(&cloud, user).await;
    }
    let collector = sign_up(&cloud, "collector").await;
    let bot = sign_up(&cloud, "bot").await;
    let ann = sign_up(&cloud, "ann").await;

    // The cap: three followings, a fourth is refused; following one of them again is fine,
    // and unfollowing makes room. Seven attempts, within the rate.
    within_one_rate_window(Duration::from_secs(20)).await;
    for user in ["t0", "t1", "t2"] {
        let (status, body) = collector
            .call("PUT", &format!("/users/{user}/follow"), None)
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let refused = collector.call("PUT", "/users/t3/follow", None).await;
    let (status, code, message) = error_of(&refused);
    assert_eq!(
        (status, code),
        (409, "FOLLOWING_LIMIT_REACHED"),
        "{refused:?}"
    );
    assert!(message.contains("you already follow 3 users"), "{message}");
    let (status, again) = collector.call("PUT", "/users/t0/follow", None).await;
    assert_eq!(
        (status, &again["following"]),
        (200, &json!(true)),
        "{again}"
    );
    let (status, body) = collector.call("DELETE", "/users/t2/follow", None).await;
    assert_eq!(status, 200, "{body}");
    collector.follow("t3").await;
    let (_, me) = collector.call("GET", "/users/collector", None).await;
    assert_eq!(me["followingCount"], 3, "{me}");

    // The rate: a bot re-following one user as fast as it can. Every attempt counts, the
    // idempotent ones too: the first RATE pass, the rest of the minute's are 429s, and its
    // unfollow too; another user's follows meanwhile are untouched.
    within_one_rate_window(Duration::from_secs(20)).await;
    let mut answers = Vec::new();
    for _ in 0..RATE + 4 {
        answers.push(bot.call("PUT", "/users/t0/follow", None).await);
    }
    let (status, body) = ann.call("PUT", "/users/t0/follow", None).await;
    assert_eq!(status, 200, "another user's window: {body}");
    answers.push(bot.call("DELETE", "/users/t0/follow", None).await);
    for (i, answer) in answers.iter().enumerate() {
        if i < RATE {
            assert_eq!(answer.0, 200, "attempt {i}: {answer:?}");
            continue;
        }
        let (status, code, message) = error_of(answer);
        assert_eq!(
            (status, code),
            (429, "RATE_LIMITED"),
            "attempt {i}: {answer:?}"
        );
        assert!(
            message.starts_with(&format!(
                "too many follows and unfollows: at most {RATE} a minute; try again in"
            )),
            "{message}"
        );
    }
    let (_, me) = bot.call("GET", "/users/bot", None).await;
    assert_eq!(
        me["followingCount"], 1,
        "the refused unfollow changed nothing: {me}"
    );
    report(
        "hostile-follow-burst",
        "Hostile caller: a follow burst by one account, and follows past the cap",
        "FollowRatePerMinute=8, MaxFollowing=3",
        &[
            format!("{RATE} attempts answered, then 429 RATE_LIMITED (unfollow too)"),
            "another user's follow meanwhile 200".to_owned(),
            "the 4th distinct follow 409 FOLLOWING_LIMIT_REACHED; room again after an unfollow"
                .to_owned(),
            "refused attempts changed no count".to_owned(),
        ],
    );
    cloud.stop().await;
}

/// Sends the same request as each of `callers` at once: a burst, not a sequence.
pub(crate) async fn burst(
    callers: Vec<Api>,
    method: &'static str,
    path: &'static str,
) -> Vec<(u16, Value)> {
    let tasks: Vec<_> = callers
        .into_iter()
        .map(|api| tokio::spawn(async move { api.call(method, path, None).await }))
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    answers
}

#[tokio::test]
async fn a_stopped_notification_consumer_leaves_follows_unchanged_and_its_backlog_drains() {
    let stack = unique_stack();
    let mut stopped = options(&stack);
    // Which function consumes notifications is the template's business: find it.
    let probe = start(options(&stack)).await;
    let consumer = function_named(&probe, "notification-consumer");
    probe.stop().await;
    stopped.disabled_sources = vec![consumer];

    let cloud = start(stopped).await;
    let dana = sign_up(&cloud, "dana").await;
    let mut latencies = Vec::new();
    for i in 0..6 {
        let fan = sign_up(&cloud, &format!("d{i}")).await;
        let started = Instant::now();
        let (status, body) = fan.call("PUT", "/users/dana/follow", None).await;
        latencies.push(started.elapsed());
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["following"], true);
    }
    wait_for_followers(&dana, "dana", 6).await;
    let sqs = aws_sdk_sqs::Client::new(&sdk().await);
    let backlog = eventually(WAIT, "the notifications wait in the queue", || async {
        let depth = queue_depth(&sqs, &queue_url(&cloud, "NotificationQueue")).await;
        (depth >= 6).then_some(depth)
    })
    .await;
    assert!(
        notifications(&dana).await["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    latencies.sort();
    assert!(
        latencies[latencies.len() / 2] < Duration::from_secs(1),
        "follow latency does not wait for notifications: {latencies:?}"
    );
    cloud.stop().await;

    // The consumer comes back: the backlog drains into exactly one notification per follow.
    let cloud = start(options(&stack)).await;
    let dana = Api::new(&cloud, Some("dana"));
    eventually(
        WAIT,
        &format!("the backlog of {backlog} drains"),
        || async {
            (notifications(&dana).await["items"]
                .as_array()
                .unwrap()
                .len()
                == 6)
                .then_some(())
        },
    )
    .await;
    assert_eq!(notifications(&dana).await["unreadCount"], 6);
    cloud.stop().await;
}

fn event(kind: &str, follower: &str, followee: &str) -> String {
    json!({
        "type": kind,
        "version": 1,
        "id": uuid::Uuid::new_v4().to_string(),
        "occurredAt": "2026-11-30T18:00:00.000000Z",
        "payload": {"followerId": follower, "followeeId": followee},
    })
    .to_string()
}

#[tokio::test]
async fn a_poison_message_ends_in_the_dlq_and_replays_after_the_fix() {
    let cloud = start(options(&unique_stack())).await;
    let erin = sign_up(&cloud, "erin").await;
    let sqs = aws_sdk_sqs::Client::new(&sdk().await);
    let (queue, dlq) = local_cloud::replay::queue_and_dlq(&cloud.model, "FollowerCountQueue")
        .map(|(q, d)| (q.url.clone(), d.url.clone()))
        .unwrap();

    // frank's events on erin, sent to the follower count's queue as the relay would.
    let send = async |kind: &str| {
        sqs.send_message()
            .queue_url(&queue)
            .message_body(event(kind, "frank", "erin"))
            .send()
            .await
            .unwrap();
    };
    // An unfollow whose follow has not been counted can never apply (the count would go
    // negative): it is retried until the redrive policy moves it to the DLQ.
    send("UserUnfollowed").await;
    eventually(WAIT, "the unfollow lands in the DLQ", || async {
        (queue_depth(&sqs, &dlq).await == 1).then_some(())
    })
    .await;
    assert_eq!(follower_count(&erin, "erin").await, 0);

    // The fix: the follow it depends on arrives and is counted.
    send("UserFollowed").await;
    wait_for_followers(&erin, "erin", 1).await;

    // The replay, as `make dlq-replay QUEUE=FollowerCountQueue` does: now it applies.
    let moved = local_cloud::replay::move_messages(&sqs, &dlq, &queue, |_| {})
        .await
        .unwrap();
    assert_eq!(moved, 1);
    wait_for_followers(&erin, "erin", 0).await;
    assert_eq!(queue_depth(&sqs, &dlq).await, 0);
    cloud.stop().await;
}

/// A poison outbox record (an event larger than the consumers' queues take, which SQS refuses
/// however often the relay tries) no longer holds back the follow events behind it in its
/// shard: the stream mapping splits the batch down to it, retries it `MaximumRetryAttempts`
/// times, sends Lambda's failure record (where it was in the stream) to `RelayFailureQueue`,
/// and moves on. With the former infinite retries the follow below was never relayed.
#[tokio::test]
async fn a_poison_outbox_record_goes_to_the_failure_queue_and_the_follows_behind_it_are_relayed() {
    let cloud = start(options(&unique_stack())).await;
    let alice = sign_up(&cloud, "alice").await;
    let bob = sign_up(&cloud, "bob").await;
    let config = sdk().await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&config);
    let sqs = aws_sdk_sqs::Client::new(&config);
    let string = |s: &str| aws_sdk_dynamodb::types::AttributeValue::S(s.to_owned());
    // 100 KB: under DynamoDB's 400 KB item limit, over the queues' 64 KiB message limit.
    dynamodb
        .put_item()
        .table_name(table(&cloud, "SocialTable"))
        .item(
            "pk",
            string(&format!("OUTBOX#poison-{}", uuid::Uuid::new_v4())),
        )
        .item("sk", string("EVENT"))
        .item("event", string(&"x".repeat(100_000)))
        .send()
        .await
        .expect("the poison record is written");
    let written = Instant::now();
    alice.follow("bob").await;

    // Ten retries of the poison record first, the runner's backoff growing to 3.2 s.
    let patience = Duration::from_secs(60);
    let listed = eventually(
        patience,
        "bob is notified despite the poison record",
        || async {
            let body = notifications(&bob).await;
            (!body["items"].as_array().unwrap().is_empty()).then_some(body)
        },
    )
    .await;
    assert_eq!(listed["items"][0]["actorId"], "alice", "{listed}");
    wait_for_followers(&bob, "bob", 1).await;
    println!("relayed past the poison record in {:?}", written.elapsed());

    let failures = queue_url(&cloud, "RelayFailureQueue");
    let record: Value = eventually(patience, "the failure record is queued", || async {
        let answer = sqs
            .receive_message()
            .queue_url(&failures)
            .wait_time_seconds(1)
            .send()
            .await
            .ok()?;
        let body = answer.messages().first()?.body()?.to_owned();
        serde_json::from_str(&body).ok()
    })
    .await;
    // Lambda's record for a stream's on-failure destination: why, and where in the stream.
    assert_eq!(
        record["requestContext"]["condition"], "RetryAttemptsExhausted",
        "{record}"
    );
    assert_eq!(
        record["requestContext"]["approximateInvokeCount"], 11,
        "1 + 10 retries"
    );
    let info = &record["DDBStreamBatchInfo"];
    assert_eq!(
        info["batchSize"], 1,
        "split down to the poison record: {record}"
    );
    assert_eq!(info["startSequenceNumber"], info["endSequenceNumber"]);
    assert!(
        info["streamArn"]
            .as_str()
            .is_some_and(|arn| arn.contains("/stream/")),
        "{record}"
    );
    assert!(
        info["approximateArrivalOfFirstRecord"]
            .as_str()
            .is_some_and(|at| at.ends_with('Z')),
        "an ISO 8601 time: {record}"
    );
    let more = sqs
        .receive_message()
        .queue_url(&failures)
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap();
    assert!(more.messages().is_empty(), "one record only: {more:?}");
    cloud.stop().await;
}
