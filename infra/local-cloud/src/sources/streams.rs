//! The DynamoDB Streams event source: read each shard in order, filter, batch, invoke, and on
//! errors retry, bisect and finally hand the batch to the on-failure destination: once its
//! retries (`MaximumRetryAttempts`) run out, or, before any delivery, for the records older
//! than `MaximumRecordAgeInSeconds`.
//!
//! A shard is processed strictly in order: a failing batch holds back the records behind
//! it until it succeeds or its retries run out, as Lambda does, so the events of one item are
//! never delivered out of order.

use super::{SourceContext, Stop, filter};
use crate::dashboard::{StreamStats, now_second};
use crate::model::StreamSource;
use crate::runtime::FunctionHandle;
use aws_sdk_dynamodbstreams::types::{AttributeValue, Record, ShardIteratorType};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Lambda polls a shard about four times a second when it is idle.
const IDLE_POLL: Duration = Duration::from_millis(250);
/// How often new shards are looked for.
const SHARD_REFRESH: Duration = Duration::from_secs(5);

pub(super) async fn poll(
    source: StreamSource,
    function: FunctionHandle,
    context: SourceContext,
    mut stop: Stop,
) {
    let Some(stream_arn) = stream_arn(&source, &context, &mut stop).await else {
        return;
    };
    let reader = Reader {
        source: &source,
        function: &function,
        context: &context,
        stream_arn,
        trigger: format!("dynamodb {}", source.table_logical_id),
        stats: context
            .dashboard
            .stream(function.name(), &source.table_logical_id),
    };
    // Shards present at start honour StartingPosition; shards that appear later are read
    // from their beginning, or their first records would be lost.
    let mut iterators: HashMap<String, Option<String>> = HashMap::new();
    let mut first_refresh = true;
    let mut last_refresh: Option<Instant> = None;
    while !stop.is_set() {
        if last_refresh.is_none_or(|at| at.elapsed() >= SHARD_REFRESH) {
            let position = if first_refresh {
                source.starting_position.as_str()
            } else {
                "TRIM_HORIZON"
            };
            if let Err(err) = reader.discover(&mut iterators, position).await {
                tracing::warn!(stream = %reader.stream_arn, error = ?err, "listing shards failed");
            }
            first_refresh = false;
            last_refresh = Some(Instant::now());
        }
        let mut got_any = false;
        let shard_ids: Vec<String> = iterators.keys().cloned().collect();
        for shard_id in shard_ids {
            let Some(Some(iterator)) = iterators.get(&shard_id).cloned() else {
                continue;
            };
            match reader.read(&shard_id, iterator, &mut stop).await {
                Ok((next, count)) => {
                    got_any |= count > 0;
                    iterators.insert(shard_id, next);
                }
                Err(err) => {
                    tracing::warn!(shard = %shard_id, error = ?err, "reading the shard failed");
                }
            }
        }
        if !got_any && stop.sleep(IDLE_POLL).await {
            break;
        }
    }
}

/// The table's stream ARN, waiting for the table if it does not exist yet.
async fn stream_arn(
    source: &StreamSource,
    context: &SourceContext,
    stop: &mut Stop,
) -> Option<String> {
    loop {
        match context
            .dynamodb
            .describe_table()
            .table_name(&source.table_name)
            .send()
            .await
        {
            Ok(output) => {
                if let Some(arn) = output.table.and_then(|table| table.latest_stream_arn) {
                    return Some(arn);
                }
                tracing::error!(table = %source.table_name, "the table has no stream");
                return None;
            }
            Err(err) => {
                tracing::warn!(table = %source.table_name, error = ?aws_sdk_dynamodb::Error::from(err), "waiting for the table");
            }
        }
        if stop.sleep(Duration::from_secs(1)).await {
            return None;
        }
    }
}

struct Reader<'a> {
    source: &'a StreamSource,
    function: &'a FunctionHandle,
    context: &'a SourceContext,
    stream_arn: String,
    trigger: String,
    stats: std::sync::Arc<StreamStats>,
}

impl Reader<'_> {
    async fn discover(
        &self,
        iterators: &mut HashMap<String, Option<String>>,
        position: &str,
    ) -> Result<(), aws_sdk_dynamodbstreams::Error> {
        let mut start: Option<String> = None;
        loop {
            let output = self
                .context
                .streams
                .describe_stream()
                .stream_arn(&self.stream_arn)
                .set_exclusive_start_shard_id(start.clone())
                .send()
                .await?;
            let Some(description) = output.stream_description else {
                return Ok(());
            };
            for shard in description.shards.unwrap_or_default() {
                let Some(shard_id) = shard.shard_id else {
                    continue;
                };
                if iterators.contains_key(&shard_id) {
                    continue;
                }
                let iterator = self
                    .context
                    .streams
                    .get_shard_iterator()
                    .stream_arn(&self.stream_arn)
                    .shard_id(&shard_id)
                    .shard_iterator_type(ShardIteratorType::from(position))
                    .send()
                    .await?
                    .shard_iterator;
                iterators.insert(shard_id, iterator);
            }
            start = description.last_evaluated_shard_id;
            if start.is_none() {
                return Ok(());
            }
        }
    }

    /// Reads one batch from a shard and processes it; answers the next iterator (`None`
    /// once the shard is closed and drained) and how many records there were.
    async fn read(
        &self,
        shard_id: &str,
        iterator: String,
        stop: &mut Stop,
    ) -> Result<(Option<String>, usize), aws_sdk_dynamodbstreams::Error> {
        let mut records = Vec::new();
        let mut next = Some(iterator);
        let window_ends = Instant::now() + self.source.batching_window;
        while let Some(iterator) = next.clone() {
            let output = self
                .context
                .streams
                .get_records()
                .shard_iterator(iterator)
                .limit((self.source.batch_size as usize - records.len()).clamp(1, 1000) as i32)
                .send()
                .await?;
            let got = output.records.unwrap_or_default();
            let empty = got.is_empty();
            records.extend(got);
            next = output.next_shard_iterator;
            let full = records.len() >= self.source.batch_size as usize;
            if full || Instant::now() >= window_ends || (empty && records.is_empty()) {
                break;
            }
            if empty && stop.sleep(IDLE_POLL).await {
                break;
            }
        }
        let count = records.len();
        let events: Vec<Value> = records
            .iter()
            .map(|record| record_json(record, &self.stream_arn, &self.context.region))
            .filter(|event| filter::matches_any(&self.source.filters, event))
            .collect();
        if !events.is_empty() {
            self.stats
                .handed(now_second(), events.len(), oldest_age_ms(&records));
            self.process(shard_id, events, stop).await;
        }
        Ok((next, count))
    }

    /// Delivers one batch until it succeeds, or its retries run out or its records grow too
    /// old, and they go to the on-failure destination.
    async fn process(&self, shard_id: &str, events: Vec<Value>, stop: &mut Stop) {
        let mut work: VecDeque<(Vec<Value>, i64)> = VecDeque::from([(events, 0)]);
        let max_retries = self.source.maximum_retry_attempts.unwrap_or(-1);
        while let Some((mut batch, retries)) = work.pop_front() {
            if stop.is_set() {
                return;
            }
            let now = OffsetDateTime::now_utc().unix_timestamp();
            let expired = expired_prefix(&batch, self.source.maximum_record_age_seconds, now);
            if expired > 0 {
                let rest = batch.split_off(expired);
                self.give_up(shard_id, &batch, retries, "RecordAgeExceeded")
                    .await;
                if rest.is_empty() {
                    continue;
                }
                batch = rest;
            }
            let payload = json!({ "Records": batch }).to_string();
            let failed_from = match self.function.invoke(&self.trigger, payload.into()).await {
                Ok(response) if self.source.function_response_report_batch_item_failures => {
                    first_failure(&response, &batch)
                }
                Ok(_) => None,
                Err(err) => {
                    tracing::debug!(function = self.function.name(), error = %err, "stream batch failed");
                    Some(0)
                }
            };
            let Some(failed_from) = failed_from else {
                continue;
            };
            // Records before the first reported failure are done.
            let rest: Vec<Value> = batch[failed_from..].to_vec();
            if self.source.bisect_batch_on_function_error && rest.len() > 1 {
                // As Lambda: splitting a batch does not count against the retry quota.
                let (first, second) = rest.split_at(rest.len() / 2);
                work.push_front((second.to_vec(), retries));
                work.push_front((first.to_vec(), retries));
                continue;
            }
            if max_retries >= 0 && retries >= max_retries {
                self.give_up(shard_id, &rest, retries + 1, "RetryAttemptsExhausted")
                    .await;
                continue;
            }
            let backoff = Duration::from_millis(100 * (1 << retries.clamp(0, 5)));
            if stop.sleep(backoff).await {
                return;
            }
            work.push_front((rest, retries + 1));
        }
    }

    /// Sends what Lambda sends to an on-failure destination: where the batch was, not the
    /// records themselves; `condition` is why (`RetryAttemptsExhausted`, `RecordAgeExceeded`).
    async fn give_up(&self, shard_id: &str, batch: &[Value], invocations: i64, condition: &str) {
        let sequence = |record: &Value| record["dynamodb"]["SequenceNumber"].clone();
        let arrival = |record: &Value| {
            record["dynamodb"]["ApproximateCreationDateTime"]
                .as_f64()
                .and_then(|secs| OffsetDateTime::from_unix_timestamp(secs as i64).ok())
                .and_then(|at| at.format(&Rfc3339).ok())
                .map_or(Value::Null, Value::from)
        };
        let (Some(first), Some(last)) = (batch.first(), batch.last()) else {
            return;
        };
        let Some(queue_url) = &self.source.on_failure_queue_url else {
            tracing::warn!(
                function = self.function.name(),
                records = batch.len(),
                "retries exhausted; records skipped (no on-failure destination)"
            );
            return;
        };
        let message = json!({
            "requestContext": {
                "requestId": uuid::Uuid::new_v4().to_string(),
                "functionArn": format!("arn:aws:lambda:{}:{}:function:{}", self.context.region, self.context.account_id, self.function.name()),
                "condition": condition,
                "approximateInvokeCount": invocations,
            },
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
            "version": "1.0",
            "timestamp": OffsetDateTime::now_utc().format(&Rfc3339).unwrap_or_default(),
            "DDBStreamBatchInfo": {
                "shardId": shard_id,
                "startSequenceNumber": sequence(first),
                "endSequenceNumber": sequence(last),
                "approximateArrivalOfFirstRecord": arrival(first),
                "approximateArrivalOfLastRecord": arrival(last),
                "batchSize": batch.len(),
                "streamArn": self.stream_arn,
            },
        });
        if let Err(err) = self
            .context
            .sqs
            .send_message()
            .queue_url(queue_url)
            .message_body(message.to_string())
            .send()
            .await
        {
            tracing::error!(queue = %queue_url, error = ?aws_sdk_sqs::Error::from(err), "failed to send to the on-failure destination");
        }
    }
}

/// How many records at the front of `batch` (a shard's records, oldest first) were written
/// more than `max_age_seconds` before `now` (Unix seconds): those Lambda no longer delivers.
/// `None` or `-1` is no limit.
fn expired_prefix(batch: &[Value], max_age_seconds: Option<i64>, now: i64) -> usize {
    let Some(max_age) = max_age_seconds.filter(|age| *age >= 0) else {
        return 0;
    };
    batch
        .iter()
        .take_while(|record| {
            record["dynamodb"]["ApproximateCreationDateTime"]
                .as_f64()
                .is_some_and(|written| now as f64 - written > max_age as f64)
        })
        .count()
}

/// The index of the first record the function reported as failed, by sequence number; a
/// response that cannot be read fails the whole batch.
fn first_failure(response: &[u8], batch: &[Value]) -> Option<usize> {
    let text = std::str::from_utf8(response).unwrap_or("").trim();
    if text.is_empty() || text == "null" {
        return None;
    }
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Some(0);
    };
    let failures = value.get("batchItemFailures").and_then(Value::as_array)?;
    let mut first: Option<usize> = None;
    for failure in failures {
        let Some(id) = failure.get("itemIdentifier").and_then(Value::as_str) else {
            return Some(0);
        };
        match batch
            .iter()
            .position(|r| r["dynamodb"]["SequenceNumber"] == id)
        {
            Some(index) => first = Some(first.map_or(index, |f: usize| f.min(index))),
            None => return Some(0),
        }
    }
    first
}

/// How long ago the oldest of `records` was written, in milliseconds (Lambda's
/// `IteratorAge`): the stream's lag behind its table.
fn oldest_age_ms(records: &[Record]) -> u64 {
    let now = OffsetDateTime::now_utc().unix_timestamp_nanos() as f64 / 1e9;
    records
        .iter()
        .filter_map(|record| record.dynamodb.as_ref()?.approximate_creation_date_time)
        .map(|written| ((now - written.as_secs_f64()) * 1000.0).max(0.0) as u64)
        .max()
        .unwrap_or(0)
}

/// A stream record in the shape Lambda delivers it.
fn record_json(record: &Record, stream_arn: &str, region: &str) -> Value {
    let mut dynamodb = Map::new();
    if let Some(stream) = &record.dynamodb {
        if let Some(at) = stream.approximate_creation_date_time {
            dynamodb.insert("ApproximateCreationDateTime".into(), json!(at.secs()));
        }
        for (name, image) in [
            ("Keys", &stream.keys),
            ("NewImage", &stream.new_image),
            ("OldImage", &stream.old_image),
        ] {
            if let Some(image) = image {
                dynamodb.insert(name.into(), item_json(image));
            }
        }
        if let Some(sequence) = &stream.sequence_number {
            dynamodb.insert("SequenceNumber".into(), json!(sequence));
        }
        if let Some(size) = stream.size_bytes {
            dynamodb.insert("SizeBytes".into(), json!(size));
        }
        if let Some(view) = &stream.stream_view_type {
            dynamodb.insert("StreamViewType".into(), json!(view.as_str()));
        }
    }
    json!({
        "eventID": record.event_id,
        "eventName": record.event_name.as_ref().map(|name| name.as_str()),
        "eventVersion": record.event_version,
        "eventSource": "aws:dynamodb",
        "awsRegion": record.aws_region.as_deref().unwrap_or(region),
        "dynamodb": dynamodb,
        "eventSourceARN": stream_arn,
    })
}

fn item_json(item: &HashMap<String, AttributeValue>) -> Value {
    Value::Object(
        item.iter()
            .map(|(k, v)| (k.clone(), attribute_json(v)))
            .collect(),
    )
}

/// An attribute value in DynamoDB's JSON form, e.g. `{"S": "x"}`.
fn attribute_json(value: &AttributeValue) -> Value {
    let b64 = |blob: &aws_sdk_dynamodbstreams::primitives::Blob| {
        base64::engine::general_purpose::STANDARD.encode(blob.as_ref())
    };
    match value {
        AttributeValue::S(s) => json!({ "S": s }),
        AttributeValue::N(n) => json!({ "N": n }),
        AttributeValue::B(b) => json!({ "B": b64(b) }),
        AttributeValue::Ss(set) => json!({ "SS": set }),
        AttributeValue::Ns(set) => json!({ "NS": set }),
        AttributeValue::Bs(set) => json!({ "BS": set.iter().map(b64).collect::<Vec<_>>() }),
        AttributeValue::M(map) => json!({ "M": item_json(map) }),
        AttributeValue::L(list) => {
            json!({ "L": list.iter().map(attribute_json).collect::<Vec<_>>() })
        }
        AttributeValue::Null(_) => json!({ "NULL": true }),
        AttributeValue::Bool(b) => json!({ "BOOL": b }),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(sequences: &[&str]) -> Vec<Value> {
        sequences
            .iter()
            .map(|s| json!({"dynamodb": {"SequenceNumber": s}}))
            .collect()
    }

    #[test]
    fn a_partial_failure_retries_from_the_first_failed_record() {
        let batch = batch(&["1", "2", "3"]);
        let response = br#"{"batchItemFailures":[{"itemIdentifier":"3"},{"itemIdentifier":"2"}]}"#;
        assert_eq!(first_failure(response, &batch), Some(1));
        assert_eq!(first_failure(br#"{"batchItemFailures":[]}"#, &batch), None);
        assert_eq!(first_failure(b"", &batch), None);
        assert_eq!(
            first_failure(br#"{"batchItemFailures":[{"itemIdentifier":"9"}]}"#, &batch),
            Some(0)
        );
    }

    #[test]
    fn records_older_than_the_maximum_age_are_the_ones_not_delivered() {
        let written = |ats: &[i64]| -> Vec<Value> {
            ats.iter()
                .map(|at| json!({"dynamodb": {"ApproximateCreationDateTime": at}}))
                .collect()
        };
        let batch = written(&[1_000, 1_030, 1_061, 1_100]);
        // At 1,100 with an hour's limit nothing expired; with 60 s the first two did.
        assert_eq!(expired_prefix(&batch, Some(3600), 1_100), 0);
        assert_eq!(expired_prefix(&batch, Some(60), 1_100), 2);
        assert_eq!(expired_prefix(&batch, Some(60), 1_200), 4);
        assert_eq!(
            expired_prefix(&batch, Some(-1), 99_999),
            0,
            "-1 is no limit"
        );
        assert_eq!(expired_prefix(&batch, None, 99_999), 0);
    }

    #[test]
    fn attribute_values_keep_dynamodb_json_form() {
        let item = HashMap::from([
            ("pk".to_owned(), AttributeValue::S("USER#1".into())),
            ("n".to_owned(), AttributeValue::N("3".into())),
            ("flag".to_owned(), AttributeValue::Bool(true)),
            (
                "tags".to_owned(),
                AttributeValue::L(vec![AttributeValue::S("a".into())]),
            ),
        ]);
        assert_eq!(
            item_json(&item),
            json!({"pk": {"S": "USER#1"}, "n": {"N": "3"}, "flag": {"BOOL": true}, "tags": {"L": [{"S": "a"}]}})
        );
    }
}
