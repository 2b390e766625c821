//! `local-cloud dlq-replay`: move every message of a queue's dead-letter queue back to the
//! queue (receive, send, delete), what `aws sqs start-message-move-task` does in AWS.
//!
//! The DLQ is the one the queue's `RedrivePolicy` names in the template, so the command takes
//! the queue's logical id and nothing else.

use crate::model::{Model, QueueSpec};
use anyhow::{Context, bail};
use aws_sdk_sqs::Client;

/// The queue with this logical id and its dead-letter queue.
pub fn queue_and_dlq<'a>(
    model: &'a Model,
    logical_id: &str,
) -> anyhow::Result<(&'a QueueSpec, &'a QueueSpec)> {
    let Some(queue) = model.queue(logical_id) else {
        let known: Vec<&str> = model.queues.iter().map(|q| q.logical_id.as_str()).collect();
        bail!(
            "no queue {logical_id} in the template; queues: {}",
            known.join(", ")
        );
    };
    let policy = queue
        .attributes
        .get("RedrivePolicy")
        .with_context(|| format!("queue {logical_id} has no RedrivePolicy, so no DLQ"))?;
    let policy: serde_json::Value = serde_json::from_str(policy)
        .with_context(|| format!("the RedrivePolicy of {logical_id} is not JSON"))?;
    let arn = policy["deadLetterTargetArn"]
        .as_str()
        .with_context(|| format!("the RedrivePolicy of {logical_id} has no deadLetterTargetArn"))?;
    let name = arn.rsplit(':').next().unwrap_or_default();
    let dlq = model
        .queues
        .iter()
        .find(|q| q.name == name)
        .with_context(|| format!("the DLQ {arn} of {logical_id} is not a queue of the template"))?;
    Ok((queue, dlq))
}

/// Moves every message of `dlq_url` to `queue_url`; calls `progress` with the running
/// total after each received batch. A message is deleted only after it was sent, so a
/// failure part-way may duplicate one message, never lose one.
pub async fn move_messages(
    sqs: &Client,
    dlq_url: &str,
    queue_url: &str,
    mut progress: impl FnMut(usize),
) -> anyhow::Result<usize> {
    let mut moved = 0;
    loop {
        let output = sqs
            .receive_message()
            .queue_url(dlq_url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .message_attribute_names("All")
            .send()
            .await
            .context("failed to receive from the DLQ")?;
        let messages = output.messages.unwrap_or_default();
        if messages.is_empty() {
            return Ok(moved);
        }
        for message in messages {
            sqs.send_message()
                .queue_url(queue_url)
                .message_body(message.body.unwrap_or_default())
                .set_message_attributes(message.message_attributes)
                .send()
                .await
                .context("failed to send to the queue")?;
            sqs.delete_message()
                .queue_url(dlq_url)
                .set_receipt_handle(message.receipt_handle)
                .send()
                .await
                .context("failed to delete from the DLQ")?;
            moved += 1;
        }
        progress(moved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn queue(logical_id: &str, name: &str, redrive: Option<&str>) -> QueueSpec {
        QueueSpec {
            logical_id: logical_id.to_owned(),
            name: name.to_owned(),
            url: format!("http://127.0.0.1:5000/123456789012/{name}"),
            attributes: redrive
                .map(|policy| BTreeMap::from([("RedrivePolicy".to_owned(), policy.to_owned())]))
                .unwrap_or_default(),
        }
    }

    fn model() -> Model {
        Model {
            stack_name: "local".to_owned(),
            tables: Vec::new(),
            buckets: Vec::new(),
            functions: Vec::new(),
            secrets: Vec::new(),
            edge_limits: Vec::new(),
            origin_headers: Vec::new(),
            queues: vec![
                queue("WorkDeadLetterQueue", "local-WorkDeadLetterQueue", None),
                queue(
                    "WorkQueue",
                    "local-work",
                    Some(
                        r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:local-WorkDeadLetterQueue","maxReceiveCount":5}"#,
                    ),
                ),
                queue("Broken", "local-broken", Some(r#"{"maxReceiveCount":5}"#)),
            ],
        }
    }

    #[test]
    fn the_dlq_is_the_one_the_redrive_policy_names() {
        let model = model();
        let (queue, dlq) = queue_and_dlq(&model, "WorkQueue").unwrap();
        assert_eq!(queue.name, "local-work");
        assert_eq!(dlq.logical_id, "WorkDeadLetterQueue");
    }

    #[test]
    fn unknown_queues_and_queues_without_a_dlq_are_explained() {
        let model = model();
        let err = queue_and_dlq(&model, "Nope").unwrap_err().to_string();
        assert!(
            err.contains("no queue Nope") && err.contains("WorkQueue"),
            "{err}"
        );
        let err = queue_and_dlq(&model, "WorkDeadLetterQueue")
            .unwrap_err()
            .to_string();
        assert!(err.contains("no RedrivePolicy"), "{err}");
        let err = queue_and_dlq(&model, "Broken").unwrap_err().to_string();
        assert!(err.contains("deadLetterTargetArn"), "{err}");
    }
}
