//! The SQS batch plumbing every queue consumer shares: take the records of one invocation,
//! hand them to a per-batch handler, and answer with an `SqsBatchResponse` that lists only
//! the messages that must come back (`ReportBatchItemFailures`).
//!
//! A handler returns the ids of the messages that failed; everything else in the batch is
//! deleted by Lambda. A message that can never succeed (not an event we understand) is
//! failed too: after the queue's `maxReceiveCount` it lands in the dead-letter queue.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{LambdaEvent, service_fn};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::convert::Infallible;
use std::fmt::Display;
use std::future::Future;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::emf;

/// One message of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub id: String,
    pub body: String,
    /// The message attribute `seal`, when the sender sealed the body
    /// ([`crate::seckill::admission::seal`]).
    pub seal: Option<String>,
}

impl Message {
    /// Messages with these bodies, their ids `m0`, `m1`, … in order: a batch as the tests
    /// (unit and emulator) make one.
    pub fn numbered(bodies: &[String]) -> Vec<Message> {
        bodies
            .iter()
            .enumerate()
            .map(|(i, body)| Message {
                id: format!("m{i}"),
                body: body.clone(),
                seal: None,
            })
            .collect()
    }

    /// [`Self::numbered`], each body sealed with `seal`: a batch as the order route sends it.
    pub fn sealed(bodies: &[String], seal: &crate::seckill::admission::seal::Seal) -> Vec<Message> {
        let mut messages = Self::numbered(bodies);
        for message in &mut messages {
            message.seal = Some(seal.sign(&message.body));
        }
        messages
    }
}

/// The messages of an SQS event.
pub fn messages(event: SqsEvent) -> Vec<Message> {
    event
        .records
        .into_iter()
        .map(|mut record| Message {
            id: record.message_id.unwrap_or_default(),
            body: record.body.unwrap_or_default(),
            seal: record
                .message_attributes
                .remove(crate::seckill::admission::seal::SEAL_ATTRIBUTE)
                .and_then(|attribute| attribute.string_value),
        })
        .collect()
}

/// The batch response naming each failed message once.
pub fn response<I: IntoIterator<Item = String>>(failed: I) -> SqsBatchResponse {
    let failed: BTreeSet<String> = failed.into_iter().collect();
    let mut response = SqsBatchResponse::default();
    for id in failed {
        response.add_failure(id);
    }
    response
}

/// The messages parsed into events, and the ids of those that are not events at all.
#[derive(Debug)]
pub struct Parsed<E> {
    /// `(message id, event)`, in batch order.
    pub events: Vec<(String, E)>,
    /// Messages that can never succeed; failing them sends them to the DLQ eventually.
    pub refused: Vec<String>,
}

/// Parses every message with `parse`, logging and refusing the ones it rejects.
pub fn parse_each<E, Err: Display>(
    messages: Vec<Message>,
    parse: impl Fn(&str) -> Result<E, Err>,
) -> Parsed<E> {
    let mut parsed = Parsed {
        events: Vec::new(),
        refused: Vec::new(),
    };
    for message in messages {
        match parse(&message.body) {
            Ok(event) => parsed.events.push((message.id, event)),
            Err(err) => {
                tracing::error!(message_id = %message.id, error = %err, "refusing a message");
                parsed.refused.push(message.id);
            }
        }
    }
    parsed
}

/// Runs an SQS consumer: `handler` gets each batch and returns the ids of the failed
/// messages. It cannot fail as a whole; an infrastructure error fails the affected items.
/// Each batch is measured ([`emf::batch`], [`emf::event_lag`] per message).
pub async fn run<F, Fut>(handler: F) -> Result<(), lambda_runtime::Error>
where
    F: Fn(Vec<Message>) -> Fut,
    Fut: Future<Output = Vec<String>> + Send,
{
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let ids = emf::Ids::from(&event.context);
        let messages = messages(event.payload);
        let count = messages.len();
        record_lags(messages.iter().map(|m| m.body.as_str()));
        let failed = handler(messages);
        emf::invocation(ids, async move {
            let response = response(failed.await);
            emf::batch(count, response.batch_item_failures.len());
            Ok::<_, Infallible>(response)
        })
    }))
    .await
}

/// Records each event's lag: now minus its envelope's `occurredAt`. A body that is not an
/// envelope has none (the handler refuses it).
pub(crate) fn record_lags<'a>(bodies: impl Iterator<Item = &'a str>) {
    let now = OffsetDateTime::now_utc();
    for body in bodies {
        if let Some(lag) = event_lag(body, now) {
            emf::event_lag(lag);
        }
    }
}

/// How long before `now` the event in `body` happened; none when it has no readable
/// `occurredAt`, zero when it is in the future (another machine's clock).
fn event_lag(body: &str, now: OffsetDateTime) -> Option<std::time::Duration> {
    /// Only the time is read; the rest of the envelope is skipped, not built.
    #[derive(Deserialize)]
    struct Stamp<'a> {
        #[serde(rename = "occurredAt", borrow)]
        occurred_at: &'a str,
    }
    let stamp: Stamp = serde_json::from_str(body).ok()?;
    let at = OffsetDateTime::parse(stamp.occurred_at, &Rfc3339).ok()?;
    Some((now - at).try_into().unwrap_or_default())
}

/// Runs `futures` concurrently on the current task and answers their outputs in order: a
/// batch's independent groups (one per recipient, per followee) wait on DynamoDB side by side
/// instead of one after the other, so a slow store costs one round trip per batch, not one
/// per group.
///
/// `futures-util`'s: it polls every future from the one task, so no future needs to be
/// `Send + 'static` and nothing is spawned.
pub use futures_util::future::join_all;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_response_lists_each_failed_id_once() {
        let response = response(["b".to_owned(), "a".to_owned(), "b".to_owned()]);
        let body = serde_json::to_value(&response).unwrap();
        assert_eq!(
            body,
            json!({"batchItemFailures": [{"itemIdentifier": "a"}, {"itemIdentifier": "b"}]})
        );
        let empty = serde_json::to_value(super::response(Vec::new())).unwrap();
        assert_eq!(empty, json!({"batchItemFailures": []}));
    }

    #[test]
    fn the_event_lag_is_now_minus_the_envelopes_time() {
        let now = OffsetDateTime::parse("2026-12-01T18:00:01.250Z", &Rfc3339).unwrap();
        let body = r#"{"type":"UserFollowed","version":1,"id":"e","occurredAt":"2026-12-01T18:00:00.000000Z","payload":{}}"#;
        assert_eq!(
            event_lag(body, now),
            Some(std::time::Duration::from_millis(1_250))
        );
        let ahead = r#"{"occurredAt":"2026-12-01T18:00:02Z"}"#;
        assert_eq!(event_lag(ahead, now), Some(std::time::Duration::ZERO));
        assert_eq!(event_lag("garbage", now), None);
        assert_eq!(event_lag(r#"{"occurredAt":"yesterday"}"#, now), None);
        assert_eq!(event_lag(r#"{"id":"no time"}"#, now), None);
    }

    #[test]
    fn messages_come_from_the_records_and_garbage_is_refused() {
        let event: SqsEvent = serde_json::from_value(json!({"Records": [
            {"messageId": "m1", "body": "7", "attributes": {}, "messageAttributes": {}},
            {"messageId": "m2", "body": "x", "attributes": {}, "messageAttributes": {}}
        ]}))
        .unwrap();
        let parsed = parse_each(messages(event), |body| body.parse::<u32>());
        assert_eq!(parsed.events, [("m1".to_owned(), 7)]);
        assert_eq!(parsed.refused, ["m2"]);
    }

    #[test]
    fn a_messages_seal_is_its_seal_attribute() {
        let event: SqsEvent = serde_json::from_value(json!({"Records": [
            {"messageId": "m1", "body": "{}", "attributes": {}, "messageAttributes": {
                "seal": {"stringValue": "abc", "dataType": "String", "stringListValues": [], "binaryListValues": []}
            }},
            {"messageId": "m2", "body": "{}", "attributes": {}, "messageAttributes": {}}
        ]}))
        .unwrap();
        let seals: Vec<_> = messages(event).into_iter().map(|m| m.seal).collect();
        assert_eq!(seals, [Some("abc".to_owned()), None]);
    }

    #[tokio::test]
    async fn join_all_runs_side_by_side_and_keeps_the_order() {
        let started = std::time::Instant::now();
        let futures: Vec<_> = (0..20u64)
            .map(|i| async move {
                tokio::time::sleep(std::time::Duration::from_millis(100 - i)).await;
                i
            })
            .collect();
        let outputs = join_all(futures).await;
        assert_eq!(outputs, (0..20).collect::<Vec<_>>());
        assert!(started.elapsed() < std::time::Duration::from_millis(1_000));
    }
}
