//! `sam local` end to end, as a SAM user runs it: the real SAM CLI on a real Docker engine,
//! running the bootstraps that `sam build` made, against the embedded emulators.
//!
//! Ignored in the other test runs: it needs `sam local start-api` running, which
//! `infra/sam-local.sh --run` provides (`make test`'s SAM step):
//!
//! ```sh
//! LOCAL_STATE=.local/test-sam infra/sam-local.sh --no-build --port 0 \
//!     --run cargo nextest run -p local-cloud --test sam --run-ignored only
//! ```
//!
//! Through start-api: a profile, a follow, a sale created and published by an operator, an
//! order admitted (202), the sale read, each with a local token (SAM runs no JWT authorizer:
//! the functions verify it themselves under `AWS_SAM_LOCAL`). Then `sam local invoke` of the
//! order consumer with the order's own message in the sample event's shape materializes the
//! order, and of the outbox relay with the follow's outbox item as a stream record publishes
//! the follow event; a malformed event gets the function's error back.

#![expect(
    clippy::unwrap_used,
    reason = "a test's helpers fail the test with a panic, as its assertions do"
)]

#[path = "../e2e/support/api.rs"]
mod support;

use app::events::Envelope;
use app::sample_events;
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use support::{Api, eventually};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// A `sam local invoke` starts a container and the function in it: seconds, not minutes.
const INVOKE_TIMEOUT: Duration = Duration::from_secs(180);

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run this test through infra/sam-local.sh --run (make test)")
    })
}

/// The env-vars file that `sam local` runs with: each function's variables as containers
/// see them. The host reaches the same queues at its own endpoint.
struct EnvVars(Value);

impl EnvVars {
    fn load() -> Self {
        let path = env("SAM_ENV_VARS");
        let text = std::fs::read_to_string(&path).unwrap();
        Self(serde_json::from_str(&text).unwrap())
    }

    fn get(&self, function: &str, variable: &str) -> String {
        let value = self.0[function][variable]
            .as_str()
            .unwrap_or_else(|| panic!("{function} has no {variable} in the env-vars file"));
        // Containers reach the emulators as `emulators:4566`; this test, on the host, at the
        // endpoint the emulators were started with.
        value.replace(
            "http://emulators:4566",
            env("AWS_ENDPOINT_URL").trim_end_matches('/'),
        )
    }
}

/// `sam local invoke FUNCTION` with `event`, through the same script and emulators as the
/// running start-api; answers what the function returned (its last line of output).
async fn sam_invoke(function: &str, event: &Value) -> Value {
    let file = std::env::temp_dir().join(format!("sam-event-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&file, event.to_string()).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../infra/sam-local.sh");
    let started = Instant::now();
    let output = tokio::time::timeout(
        INVOKE_TIMEOUT,
        tokio::process::Command::new("bash")
            .arg(&script)
            .arg("invoke")
            .arg(function)
            .arg(&file)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap_or_else(|_| panic!("sam local invoke {function} hung for {INVOKE_TIMEOUT:?}"))
    .expect("sam local invoke runs");
    let _ = std::fs::remove_file(&file);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!(
        "sam local invoke {function}: exit {:?} in {} ms",
        output.status.code(),
        started.elapsed().as_millis()
    );
    assert!(
        output.status.success(),
        "sam local invoke {function} failed:\n{stderr}\n{stdout}"
    );
    // SAM prints the function's logs on stderr and its answer as the last line of stdout.
    let answer = stdout
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default();
    serde_json::from_str(answer).unwrap_or_else(|err| {
        panic!("{function} answered no JSON ({err}):\nstdout: {stdout}\nstderr: {stderr}")
    })
}

#[tokio::test]
#[ignore = "needs sam local start-api: run it through infra/sam-local.sh --run (make test)"]
async fn the_api_and_the_consumers_work_under_sam_local() {
    let base = env("SAM_LOCAL_URL");
    let run = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let ada = format!("sam-ada-{run}");
    let bea = format!("sam-bea-{run}");
    let as_ada = Api::at(&base, Some(&ada), &[]);
    let as_bea = Api::at(&base, Some(&bea), &[]);
    let operator = Api::at(
        &base,
        Some(&format!("sam-ops-{run}")),
        &["admin".to_owned()],
    );
    let anonymous = Api::at(&base, None, &[]);

    // The social routes, with local tokens verified by the functions themselves.
    as_ada.put_profile("Ada").await;
    as_bea.put_profile("Bea").await;
    let follow = as_ada.follow(&bea).await;
    assert_eq!(follow["following"], true, "{follow}");
    let profile = as_ada.expect("GET", &format!("/users/{ada}"), 200).await;
    assert_eq!(profile["followingCount"], 1, "{profile}");
    anonymous.expect("GET", &format!("/users/{ada}"), 401).await;

    // A sale, as an operator; a buyer's order; the public detail.
    let now = OffsetDateTime::now_utc();
    let (status, sale) = operator
        .call(
            "POST",
            "/seckill/activities",
            Some(json!({
                "productId": "p-sam",
                "title": "SAM local sale",
                "priceCents": 1500,
                "stock": 5,
                "perUserLimit": 2,
                "startsAt": (now - Duration::from_secs(60)).format(&Rfc3339).unwrap(),
                "endsAt": (now + Duration::from_secs(3600)).format(&Rfc3339).unwrap(),
            })),
        )
        .await;
    assert_eq!(status, 201, "{sale}");
    let sale_id = sale["id"].as_str().unwrap().to_owned();
    as_ada.expect("POST", "/seckill/activities", 403).await;
    operator
        .expect(
            "POST",
            &format!("/seckill/activities/{sale_id}/publish"),
            200,
        )
        .await;
    let order_id = as_ada.place_order(&sale_id).await;
    let detail = anonymous
        .expect("GET", &format!("/seckill/activities/{sale_id}"), 200)
        .await;
    assert_eq!(detail["state"], "ONGOING", "{detail}");
    assert_eq!(detail["stockRemaining"], 4, "{detail}");
    let order = as_ada
        .expect("GET", &format!("/orders/{order_id}"), 200)
        .await;
    assert_eq!(order["status"], "PENDING", "{order}");

    // No queue trigger runs under SAM: the order waits on its queue. Its message, delivered
    // by hand in an SQS event of the sample's shape, materializes it.
    let sdk = support::sdk().await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let env_vars = EnvVars::load();
    let order_queue = env_vars.get("PlaceOrderFunction", "ORDER_QUEUE_URL");
    let placed: Envelope<Value> =
        eventually(Duration::from_secs(20), "the order is queued", || {
            let sqs = sqs.clone();
            let order_queue = order_queue.clone();
            let order_id = order_id.clone();
            async move {
                let received = sqs
                    .receive_message()
                    .queue_url(&order_queue)
                    .max_number_of_messages(10)
                    .send()
                    .await
                    .unwrap();
                received.messages().iter().find_map(|message| {
                    let envelope: Envelope<Value> =
                        serde_json::from_str(message.body().unwrap_or_default()).ok()?;
                    (envelope.payload["orderId"] == order_id.as_str()).then_some(envelope)
                })
            }
        })
        .await;
    let event = sample_events::sqs_event(
        &sample_events::queue_arn("sam-order-queue"),
        OffsetDateTime::now_utc(),
        &[placed],
    )
    .unwrap();
    let answer = sam_invoke(
        "OrderConsumerFunction",
        &serde_json::to_value(event).unwrap(),
    )
    .await;
    assert_eq!(
        answer,
        json!({"batchItemFailures": []}),
        "order-consumer answered {answer}"
    );
    let order = as_ada
        .expect("GET", &format!("/orders/{order_id}"), 200)
        .await;
    assert_eq!(order["status"], "CONFIRMED", "{order}");

    // The outbox relay: the follow's outbox item as its stream record reaches the
    // notification queue.
    let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
    let social_table = env_vars.get("FollowFunction", "SOCIAL_TABLE");
    let outbox = dynamodb
        .scan()
        .table_name(&social_table)
        .filter_expression("begins_with(pk, :outbox) AND contains(#event, :follower)")
        .expression_attribute_names("#event", "event")
        .expression_attribute_values(":outbox", AttributeValue::S("OUTBOX#".to_owned()))
        .expression_attribute_values(":follower", AttributeValue::S(ada.clone()))
        .consistent_read(true)
        .send()
        .await
        .unwrap();
    let item = outbox
        .items()
        .first()
        .unwrap_or_else(|| panic!("no outbox item of {ada}'s follow in {social_table}"))
        .clone();
    let event = sample_events::outbox_stream_event(
        &format!(
            "{}/stream/2026-01-01T00:00:00.000",
            sample_events::table_arn(&social_table)
        ),
        OffsetDateTime::now_utc(),
        &[item],
    );
    let answer = sam_invoke("OutboxRelayFunction", &serde_json::to_value(event).unwrap()).await;
    assert_eq!(
        answer,
        json!({"batchItemFailures": []}),
        "outbox-relay answered {answer}"
    );
    let notifications = env_vars.get("OutboxRelayFunction", "NOTIFICATION_QUEUE_URL");
    eventually(
        Duration::from_secs(20),
        "the follow event is on the notification queue",
        || {
            let sqs = sqs.clone();
            let notifications = notifications.clone();
            let (ada, bea) = (ada.clone(), bea.clone());
            async move {
                let received = sqs
                    .receive_message()
                    .queue_url(&notifications)
                    .max_number_of_messages(10)
                    .send()
                    .await
                    .unwrap();
                received.messages().iter().find_map(|message| {
                    let body: Value =
                        serde_json::from_str(message.body().unwrap_or_default()).ok()?;
                    (body["type"] == "UserFollowed"
                        && body["payload"]["followerId"] == ada.as_str()
                        && body["payload"]["followeeId"] == bea.as_str())
                    .then_some(())
                })
            }
        },
    )
    .await;

    // A malformed event: the function's own error comes back, and the harness goes on.
    let answer = sam_invoke("OrderConsumerFunction", &json!({"Records": 42})).await;
    assert!(
        answer.get("errorMessage").is_some() && answer.get("errorType").is_some(),
        "a malformed event answers Lambda's error shape, got {answer}"
    );
}
