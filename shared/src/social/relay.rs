//! The outbox relay: DynamoDB Streams records of outbox items (`OUTBOX#<eventId>` / `EVENT`,
//! inserted by the follow transaction) published unchanged to every consumer's queue.
//!
//! This is the only place an event meets SQS, so the request never dual-writes. A record
//! whose send failed is reported, with every record after it, so that the stream retries
//! from there; records re-sent to a queue that already had them are deduplicated by the
//! consumers (moto even emits a transactional insert twice).

use async_trait::async_trait;
use aws_lambda_events::event::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use lambda_runtime::{LambdaEvent, service_fn};
use serde::Deserialize;
use serde_json::Value;

use crate::emf;
use std::collections::HashMap;
use std::convert::Infallible;

/// The parts of a DynamoDB Streams event that the relay reads.
#[derive(Debug, Default, Deserialize)]
pub struct StreamEvent {
    #[serde(rename = "Records", default)]
    pub records: Vec<StreamRecord>,
}

#[derive(Debug, Default, Deserialize)]
pub struct StreamRecord {
    #[serde(rename = "eventName", default)]
    pub event_name: String,
    #[serde(default)]
    pub dynamodb: StreamChange,
}

#[derive(Debug, Default, Deserialize)]
pub struct StreamChange {
    #[serde(rename = "SequenceNumber", default)]
    pub sequence_number: String,
    /// The item in DynamoDB's JSON form, e.g. `{"event": {"S": "..."}}`.
    #[serde(rename = "NewImage", default)]
    pub new_image: HashMap<String, Value>,
}

impl StreamRecord {
    /// The event an inserted outbox item carries.
    fn outbox_event(&self) -> Option<&str> {
        let text = |name: &str| {
            self.dynamodb
                .new_image
                .get(name)
                .and_then(|v| v["S"].as_str())
        };
        let is_outbox = text("pk").is_some_and(|pk| pk.starts_with(super::keys::OUTBOX_PREFIX));
        if self.event_name != "INSERT" || !is_outbox {
            return None;
        }
        text("event")
    }
}

/// A send failed from the body at `first_failed` on; those before it were sent.
#[derive(Debug, thiserror::Error)]
#[error("sending failed from message {first_failed} on")]
pub struct SendFailed {
    pub first_failed: usize,
    #[source]
    pub cause: anyhow::Error,
}

/// One consumer's queue.
#[async_trait]
pub trait EventSink: Send + Sync {
    /// Sends the bodies in order.
    async fn send_all(&self, bodies: &[&str]) -> Result<(), SendFailed>;
}

/// Relays one stream batch to every sink; returns the sequence numbers to retry.
#[tracing::instrument(skip_all, fields(records = event.records.len()))]
pub async fn relay(event: &StreamEvent, sinks: &[&dyn EventSink]) -> Vec<String> {
    // (record index, body) of the records to publish.
    let mut bodies: Vec<(usize, &str)> = Vec::new();
    for (index, record) in event.records.iter().enumerate() {
        match record.outbox_event() {
            Some(body) => bodies.push((index, body)),
            // The filter lets only outbox inserts through; anything else has nothing to say.
            None => tracing::warn!(
                sequence = %record.dynamodb.sequence_number,
                "skipping a record that is not an outbox insert with an event"
            ),
        }
    }
    let texts: Vec<&str> = bodies.iter().map(|(_, body)| *body).collect();
    crate::consumer::record_lags(texts.iter().copied());
    let mut first_failed: Option<usize> = None;
    for sink in sinks {
        if let Err(err) = sink.send_all(&texts).await {
            tracing::error!(error = ?err.cause, first_failed = err.first_failed, "relay send failed");
            first_failed = Some(first_failed.map_or(err.first_failed, |f| f.min(err.first_failed)));
        }
    }
    let relayed = first_failed.unwrap_or(texts.len()).min(texts.len());
    emf::relayed(relayed, texts.len() - relayed);
    let Some(first) = first_failed
        .and_then(|i| bodies.get(i))
        .map(|(index, _)| *index)
    else {
        return Vec::new();
    };
    event.records[first..]
        .iter()
        .map(|record| record.dynamodb.sequence_number.clone())
        .collect()
}

/// The stream response naming the records to retry.
pub fn response(failed: Vec<String>) -> DynamoDbEventResponse {
    let mut response = DynamoDbEventResponse::default();
    for id in failed {
        let mut failure = DynamoDbBatchItemFailure::default();
        failure.item_identifier = Some(id);
        response.batch_item_failures.push(failure);
    }
    response
}

/// Runs the relay function.
pub async fn run(sinks: &[&dyn EventSink]) -> Result<(), lambda_runtime::Error> {
    lambda_runtime::run(service_fn(|event: LambdaEvent<StreamEvent>| {
        emf::invocation(emf::Ids::from(&event.context), async move {
            Ok::<_, Infallible>(response(relay(&event.payload, sinks).await))
        })
    }))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    /// A queue in memory that fails from the `fail_at`-th message it is asked to send.
    #[derive(Default)]
    struct MemorySink {
        sent: Mutex<Vec<String>>,
        fail_at: Option<usize>,
    }

    #[async_trait]
    impl EventSink for MemorySink {
        async fn send_all(&self, bodies: &[&str]) -> Result<(), SendFailed> {
            let ok = self.fail_at.unwrap_or(bodies.len()).min(bodies.len());
            self.sent
                .lock()
                .unwrap()
                .extend(bodies[..ok].iter().map(|b| (*b).to_owned()));
            if ok < bodies.len() {
                return Err(SendFailed {
                    first_failed: ok,
                    cause: anyhow::anyhow!("throttled"),
                });
            }
            Ok(())
        }
    }

    fn record(seq: &str, name: &str, pk: &str, event: Option<&str>) -> Value {
        let mut image = json!({"pk": {"S": pk}, "sk": {"S": "EVENT"}});
        if let Some(event) = event {
            image["event"] = json!({"S": event});
        }
        json!({"eventName": name, "dynamodb": {"SequenceNumber": seq, "NewImage": image}})
    }

    fn stream(records: Vec<Value>) -> StreamEvent {
        serde_json::from_value(json!({ "Records": records })).unwrap()
    }

    #[tokio::test]
    async fn outbox_events_go_unchanged_to_every_queue() {
        let event = stream(vec![
            record("1", "INSERT", "OUTBOX#e1", Some(r#"{"id":"e1"}"#)),
            record("2", "MODIFY", "OUTBOX#e1", Some(r#"{"id":"e1"}"#)),
            record("3", "INSERT", "USER#a", Some("x")),
            record("4", "INSERT", "OUTBOX#e2", Some(r#"{"id":"e2"}"#)),
        ]);
        let (a, b) = (MemorySink::default(), MemorySink::default());
        assert!(relay(&event, &[&a, &b]).await.is_empty());
        for sink in [&a, &b] {
            assert_eq!(
                *sink.sent.lock().unwrap(),
                [r#"{"id":"e1"}"#, r#"{"id":"e2"}"#]
            );
        }
    }

    #[tokio::test]
    async fn a_failed_send_reports_that_record_and_every_later_one() {
        let event = stream(vec![
            record("1", "INSERT", "OUTBOX#e1", Some("one")),
            record("2", "INSERT", "OUTBOX#e2", Some("two")),
            record("3", "INSERT", "OUTBOX#e3", Some("three")),
        ]);
        let ok = MemorySink::default();
        let flaky = MemorySink {
            fail_at: Some(1),
            ..MemorySink::default()
        };
        assert_eq!(relay(&event, &[&ok, &flaky]).await, ["2", "3"]);
        let body = serde_json::to_value(response(vec!["2".into()])).unwrap();
        assert_eq!(
            body,
            json!({"batchItemFailures": [{"itemIdentifier": "2"}]})
        );
    }
}
