//! The SQS event source: long-poll, batch, invoke, delete what succeeded.
//!
//! As Lambda's mapping does: a batch is up to `BatchSize` messages gathered for at most the
//! batching window; a function error leaves the whole batch on the queue to come back after
//! its visibility timeout; with `ReportBatchItemFailures` only the items the function names
//! come back. Moving a message to the DLQ after `maxReceiveCount` receives is the queue's own
//! redrive policy, done by the emulator as by SQS.

use super::{SourceContext, Stop};
use crate::model::SqsSource;
use crate::runtime::FunctionHandle;
use aws_sdk_sqs::types::{DeleteMessageBatchRequestEntry, Message, MessageSystemAttributeName};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// SQS hands out at most ten messages per receive.
const MAX_PER_RECEIVE: u32 = 10;
/// The longest long poll SQS allows; the stop signal is checked between polls.
const LONG_POLL: i32 = 20;

pub(super) async fn poll(
    source: SqsSource,
    function: FunctionHandle,
    context: SourceContext,
    mut stop: Stop,
) {
    let trigger = format!("sqs {}", source.queue_logical_id);
    while !stop.is_set() {
        // A long poll cut short by the stop returns its messages to the queue after their
        // visibility timeout: nothing is lost, and stopping does not wait 20 s.
        let mut stopping = stop.clone();
        let gathered = tokio::select! {
            gathered = gather(&source, &context, &stop) => gathered,
            _ = stopping.stopped() => break,
        };
        let batch = match gathered {
            Ok(batch) => batch,
            Err(err) => {
                tracing::warn!(queue = %source.queue_url, error = ?err, "receive failed");
                if stop.sleep(Duration::from_secs(1)).await {
                    break;
                }
                continue;
            }
        };
        if batch.is_empty() {
            continue;
        }
        let target = Target {
            source: &source,
            function: &function,
            context: &context,
            trigger: &trigger,
        };
        let done = target.deliver(&batch).await;
        if let Err(err) = delete(&source, &context, &done).await {
            tracing::warn!(queue = %source.queue_url, error = ?err, "delete failed");
        }
    }
}

/// One batch: the first receive long-polls; once a message is in hand, more are gathered
/// until the batch is full or the batching window has passed.
async fn gather(
    source: &SqsSource,
    context: &SourceContext,
    stop: &Stop,
) -> Result<Vec<Message>, aws_sdk_sqs::Error> {
    let mut batch = receive(source, context, source.batch_size, LONG_POLL).await?;
    if batch.is_empty() || source.batching_window.is_zero() {
        return Ok(batch);
    }
    let window_ends = Instant::now() + source.batching_window;
    while (batch.len() as u32) < source.batch_size && !stop.is_set() {
        let left = window_ends.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        // Whole seconds only: a sub-second remainder becomes one short poll.
        let wait = left.as_secs() as i32;
        let wanted = source.batch_size - batch.len() as u32;
        let more = receive(source, context, wanted, wait).await?;
        if more.is_empty() && wait == 0 {
            break;
        }
        batch.extend(more);
    }
    Ok(batch)
}

async fn receive(
    source: &SqsSource,
    context: &SourceContext,
    wanted: u32,
    wait_seconds: i32,
) -> Result<Vec<Message>, aws_sdk_sqs::Error> {
    let output = context
        .sqs
        .receive_message()
        .queue_url(&source.queue_url)
        .max_number_of_messages(wanted.clamp(1, MAX_PER_RECEIVE) as i32)
        .wait_time_seconds(wait_seconds)
        .message_system_attribute_names(MessageSystemAttributeName::All)
        .message_attribute_names("All")
        .send()
        .await?;
    Ok(output.messages.unwrap_or_default())
}

fn record(message: &Message, source: &SqsSource, context: &SourceContext) -> Value {
    let attributes: serde_json::Map<String, Value> = message
        .attributes
        .iter()
        .flatten()
        .map(|(name, value)| (name.as_str().to_owned(), Value::String(value.clone())))
        .collect();
    let message_attributes: serde_json::Map<String, Value> = message
        .message_attributes
        .iter()
        .flatten()
        .map(|(name, value)| {
            (
                name.clone(),
                json!({
                    "stringValue": value.string_value,
                    "binaryValue": value.binary_value.as_ref().map(|blob| {
                        use base64::Engine as _;
                        base64::engine::general_purpose::STANDARD.encode(blob.as_ref())
                    }),
                    "stringListValues": [],
                    "binaryListValues": [],
                    "dataType": value.data_type,
                }),
            )
        })
        .collect();
    json!({
        "messageId": message.message_id,
        "receiptHandle": message.receipt_handle,
        "body": message.body,
        "attributes": attributes,
        "messageAttributes": message_attributes,
        "md5OfBody": message.md5_of_body,
        "eventSource": "aws:sqs",
        "eventSourceARN": source.queue_arn,
        "awsRegion": context.region,
    })
}

/// Where a batch goes: the function of an event source, as that source invokes it.
struct Target<'s> {
    source: &'s SqsSource,
    function: &'s FunctionHandle,
    context: &'s SourceContext,
    trigger: &'s str,
}

impl Target<'_> {
    /// Invokes the function with the batch; answers the messages that are done (to delete).
    ///
    /// Under the duplicate-delivery fault switch the batch goes to the function twice, in
    /// reverse order and then shuffled, and a message is done only when both deliveries
    /// succeeded: as SQS's at-least-once delivery may do, all at once.
    async fn deliver<'a>(&self, batch: &'a [Message]) -> Vec<&'a Message> {
        if !self.context.faults.sqs_duplicate() {
            return self.deliver_once(batch).await;
        }
        let mut reversed: Vec<Message> = batch.to_vec();
        reversed.reverse();
        let mut shuffled: Vec<Message> = batch.to_vec();
        for i in (1..shuffled.len()).rev() {
            let j = (crate::runtime::ids::next_u128() % (i as u128 + 1)) as usize;
            shuffled.swap(i, j);
        }
        let done_ids = |done: Vec<&Message>| -> HashSet<String> {
            done.into_iter()
                .filter_map(|m| m.message_id.clone())
                .collect()
        };
        let first = done_ids(self.deliver_once(&reversed).await);
        let second = done_ids(self.deliver_once(&shuffled).await);
        batch
            .iter()
            .filter(|m| {
                let id = m.message_id.as_deref().unwrap_or_default();
                first.contains(id) && second.contains(id)
            })
            .collect()
    }

    async fn deliver_once<'a>(&self, batch: &'a [Message]) -> Vec<&'a Message> {
        let function = self.function;
        let records: Vec<Value> = batch
            .iter()
            .map(|message| record(message, self.source, self.context))
            .collect();
        let payload = json!({ "Records": records }).to_string();
        match function.invoke(self.trigger, payload.into()).await {
            Ok(response) if self.source.report_batch_item_failures => {
                match failed_ids(&response, batch) {
                    Some(failed) => batch
                        .iter()
                        .filter(|m| !failed.contains(m.message_id.as_deref().unwrap_or_default()))
                        .collect(),
                    // As Lambda: a response it cannot read fails the whole batch.
                    None => {
                        tracing::warn!(
                            function = function.name(),
                            "unreadable batch response: the whole batch fails"
                        );
                        Vec::new()
                    }
                }
            }
            Ok(_) => batch.iter().collect(),
            Err(err) => {
                tracing::debug!(function = function.name(), error = %err, "batch failed");
                Vec::new()
            }
        }
    }
}

/// The ids the function reported as failed, or `None` when the response is not a valid
/// `SQSBatchResponse` (then Lambda fails the whole batch). An empty or absent response
/// means every item succeeded.
fn failed_ids(response: &[u8], batch: &[Message]) -> Option<HashSet<String>> {
    let text = std::str::from_utf8(response).ok()?.trim();
    if text.is_empty() || text == "null" {
        return Some(HashSet::new());
    }
    let value: Value = serde_json::from_str(text).ok()?;
    let Some(failures) = value.get("batchItemFailures") else {
        return Some(HashSet::new());
    };
    let known: HashSet<&str> = batch
        .iter()
        .filter_map(|m| m.message_id.as_deref())
        .collect();
    let mut failed = HashSet::new();
    for failure in failures.as_array()? {
        let id = failure.get("itemIdentifier")?.as_str()?;
        if !known.contains(id) {
            return None;
        }
        failed.insert(id.to_owned());
    }
    Some(failed)
}

async fn delete(
    source: &SqsSource,
    context: &SourceContext,
    done: &[&Message],
) -> Result<(), aws_sdk_sqs::Error> {
    for chunk in done.chunks(MAX_PER_RECEIVE as usize) {
        let entries = chunk
            .iter()
            .enumerate()
            .map(|(i, message)| {
                DeleteMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .receipt_handle(message.receipt_handle.clone().unwrap_or_default())
                    .build()
                    .expect("id and receipt handle are set")
            })
            .collect();
        context
            .sqs
            .delete_message_batch()
            .queue_url(&source.queue_url)
            .set_entries(Some(entries))
            .send()
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(ids: &[&str]) -> Vec<Message> {
        ids.iter()
            .map(|id| Message::builder().message_id(*id).build())
            .collect()
    }

    #[test]
    fn only_the_reported_items_fail() {
        let batch = batch(&["a", "b", "c"]);
        let failed = failed_ids(br#"{"batchItemFailures":[{"itemIdentifier":"b"}]}"#, &batch);
        assert_eq!(failed, Some(HashSet::from(["b".to_owned()])));
    }

    #[test]
    fn an_empty_response_means_all_succeeded() {
        let batch = batch(&["a"]);
        assert_eq!(failed_ids(b"", &batch), Some(HashSet::new()));
        assert_eq!(failed_ids(b"null", &batch), Some(HashSet::new()));
        assert_eq!(
            failed_ids(br#"{"batchItemFailures":[]}"#, &batch),
            Some(HashSet::new())
        );
    }

    #[test]
    fn an_unknown_or_missing_identifier_fails_the_whole_batch() {
        let batch = batch(&["a"]);
        assert_eq!(
            failed_ids(
                br#"{"batchItemFailures":[{"itemIdentifier":"zz"}]}"#,
                &batch
            ),
            None
        );
        assert_eq!(failed_ids(br#"{"batchItemFailures":[{}]}"#, &batch), None);
        assert_eq!(failed_ids(b"not json", &batch), None);
    }
}
