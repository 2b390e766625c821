//! SQS: what is sent is received, and what is deleted does not come back.

use crate::support::{clients, unique};
use app::queue::Queue;
use aws_sdk_sqs::types::QueueAttributeName;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;

async fn new_queue(client: &aws_sdk_sqs::Client) -> Queue {
    let output = client
        .create_queue()
        .queue_name(unique("test-queue"))
        .attributes(QueueAttributeName::VisibilityTimeout, "30")
        .send()
        .await
        .expect("create the test queue");
    Queue::new(client.clone(), output.queue_url.unwrap())
}

#[tokio::test]
async fn sent_messages_are_received_once_and_deleted() {
    let clients = clients().await;
    let queue = new_queue(&clients.sqs).await;
    for seq in 0..3 {
        queue
            .send(&json!({"type": "Test", "seq": seq}), None)
            .await
            .unwrap();
    }
    assert_eq!(queue.depth().await.unwrap(), 3);

    let mut seen = BTreeSet::new();
    for _ in 0..5 {
        for message in queue.receive(10, Duration::from_secs(1)).await.unwrap() {
            assert_eq!(message.receive_count, 1);
            let body: Value = serde_json::from_str(&message.body).unwrap();
            seen.insert(body["seq"].as_u64().unwrap());
            queue.delete(&message.receipt_handle).await.unwrap();
        }
        if seen.len() == 3 {
            break;
        }
    }
    assert_eq!(seen, BTreeSet::from([0, 1, 2]));
    assert_eq!(queue.depth().await.unwrap(), 0);
    assert!(
        queue
            .receive(10, Duration::from_secs(1))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_long_poll_returns_as_soon_as_a_message_arrives() {
    let clients = clients().await;
    let queue = new_queue(&clients.sqs).await;
    let receiver = queue.clone();
    let started = std::time::Instant::now();
    let poll = tokio::spawn(async move { receiver.receive(1, Duration::from_secs(10)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    queue.send(&json!({"type": "Late"}), None).await.unwrap();
    let received = poll.await.unwrap().unwrap();
    assert_eq!(received.len(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_long_poll_outlasts_the_sdk_attempt_timeout_and_ends_empty() {
    // Every AWS call's attempt may take at most ATTEMPT_TIMEOUT; a long poll is allowed its
    // wait on top, so an empty queue answers "nothing" instead of a timeout error.
    let clients = clients().await;
    let queue = new_queue(&clients.sqs).await;
    let wait = app::cloud::ATTEMPT_TIMEOUT + Duration::from_secs(1);
    let started = std::time::Instant::now();
    let received = queue.receive(1, wait).await.expect("an empty long poll");
    assert!(received.is_empty());
    assert!(
        started.elapsed() >= app::cloud::ATTEMPT_TIMEOUT,
        "the poll ended after {:?}, before the attempt timeout: it did not test it",
        started.elapsed()
    );
}
