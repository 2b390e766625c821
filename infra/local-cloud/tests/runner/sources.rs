//! Event sources end to end: the fixture template's SQS, stream and schedule functions, run
//! for real against the emulators.

use crate::support::{gather, queue_url, sdk, start_fixture_cloud};
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::Value;
use std::time::Duration;

fn reports<'a>(seen: &'a [Value], fixture: &str) -> Vec<&'a Value> {
    seen.iter().filter(|r| r["fixture"] == fixture).collect()
}

#[tokio::test]
async fn sqs_partial_batch_failures_retry_only_the_failed_item_which_ends_in_the_dlq() {
    let cloud = start_fixture_cloud().await;
    let sqs = aws_sdk_sqs::Client::new(&sdk().await);
    let work = queue_url(&cloud, "WorkQueue");
    for body in ["ok-1", "ok-2", "fail-3", "ok-4", "ok-5"] {
        sqs.send_message()
            .queue_url(&work)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }

    let dlq = queue_url(&cloud, "WorkDeadLetterQueue");
    let dead = gather(&sqs, &dlq, Duration::from_secs(30), |seen| !seen.is_empty()).await;
    // The DLQ holds the raw message body, which is not JSON.
    assert_eq!(dead.len(), 1, "{dead:?}");

    let output = queue_url(&cloud, "OutputQueue");
    let seen = gather(&sqs, &output, Duration::from_secs(5), |_| false).await;
    let sqs_reports = reports(&seen, "sqs");
    let mut ok: Vec<&str> = sqs_reports
        .iter()
        .filter(|r| r["ok"] == true)
        .map(|r| r["body"].as_str().unwrap())
        .collect();
    ok.sort();
    // Each good message was processed exactly once: the failure of its neighbour in the
    // batch did not bring it back.
    assert_eq!(ok, ["ok-1", "ok-2", "ok-4", "ok-5"]);
    let failed = sqs_reports.iter().filter(|r| r["ok"] == false).count();
    assert_eq!(failed, 2, "maxReceiveCount is 2: {sqs_reports:?}");
    cloud.stop().await;
}

fn item(pk: &str, kind: &str, poison: bool) -> std::collections::HashMap<String, AttributeValue> {
    std::collections::HashMap::from([
        ("pk".to_owned(), AttributeValue::S(pk.to_owned())),
        ("sk".to_owned(), AttributeValue::S("A".to_owned())),
        ("kind".to_owned(), AttributeValue::S(kind.to_owned())),
        ("poison".to_owned(), AttributeValue::Bool(poison)),
    ])
}

#[tokio::test]
async fn stream_records_are_filtered_and_a_poison_record_is_isolated_then_reported() {
    let cloud = start_fixture_cloud().await;
    let config = sdk().await;
    let dynamodb = aws_sdk_dynamodb::Client::new(&config);
    let sqs = aws_sdk_sqs::Client::new(&config);
    let table = &cloud.model.table("ItemsTable").unwrap().name;
    for (pk, kind, poison) in [
        ("keep-1", "keep", false),
        ("drop-2", "drop", false),
        ("keep-3", "keep", true),
        ("keep-4", "keep", false),
    ] {
        dynamodb
            .put_item()
            .table_name(table)
            .set_item(Some(item(pk, kind, poison)))
            .send()
            .await
            .unwrap();
    }

    let failures = queue_url(&cloud, "StreamFailureQueue");
    let failed = gather(&sqs, &failures, Duration::from_secs(30), |seen| {
        !seen.is_empty()
    })
    .await;
    assert_eq!(failed.len(), 1, "{failed:?}");
    let info = &failed[0]["DDBStreamBatchInfo"];
    assert_eq!(
        info["batchSize"], 1,
        "bisected down to the poison record: {info}"
    );
    assert_eq!(
        failed[0]["requestContext"]["condition"],
        "RetryAttemptsExhausted"
    );

    let output = queue_url(&cloud, "OutputQueue");
    let seen = gather(&sqs, &output, Duration::from_secs(3), |_| false).await;
    let stream = reports(&seen, "stream");
    let delivered_ok: std::collections::BTreeSet<&str> = stream
        .iter()
        .filter(|r| r["poison"] == false)
        .map(|r| r["pk"].as_str().unwrap())
        .collect();
    assert_eq!(
        delivered_ok,
        std::collections::BTreeSet::from(["keep-1", "keep-4"]),
        "the filter drops drop-2, and the poison record does not block its neighbours"
    );
    assert!(stream.iter().all(|r| r["pk"] != "drop-2"));
    cloud.stop().await;
}

#[tokio::test]
async fn a_schedule_invokes_its_function_with_its_input() {
    let cloud = start_fixture_cloud().await;
    let sqs = aws_sdk_sqs::Client::new(&sdk().await);
    let output = queue_url(&cloud, "OutputQueue");
    let seen = gather(&sqs, &output, Duration::from_secs(10), |seen| {
        reports(seen, "schedule").len() >= 2
    })
    .await;
    let ticks = reports(&seen, "schedule");
    assert!(ticks.len() >= 2, "{seen:?}");
    assert!(ticks.iter().all(|t| t["event"]["tick"] == true));
    cloud.stop().await;
}
