//! The functions' own metrics, as CloudWatch Embedded Metric Format (EMF) lines on stdout:
//! CloudWatch Logs turns each line into metric values, with no API call on the request's
//! path and no permission beyond writing logs.
//!
//! Code records through the functions below (the `metrics` facade underneath; with no
//! recorder installed, as in unit tests, recording does nothing). [`init`] installs the EMF
//! recorder at cold start, and [`invocation`] writes what one invocation recorded when it
//! ends: one line per dimension set that got a value, so a request of an HTTP function is one
//! line.
//!
//! # The metrics
//!
//! Namespace `POWERTOOLS_METRICS_NAMESPACE`, else [`NAMESPACE`]; every metric has the
//! dimension `FunctionName` (the Lambda function's name, as in Lambda's own metrics), and a
//! few one more, named below. Values are per invocation; counts are summed and distributions
//! kept whole by CloudWatch.
//!
//! Each line also carries, as properties CloudWatch keeps in the log but makes no metric of,
//! what joins it to the invocation's log lines ([`crate::telemetry`]): `function_request_id`,
//! `xray_trace_id` (when traced), `service`, `timestamp`, and a `level` that Lambda's
//! log-level filter passes at every setting ([`crate::telemetry::metric_line_level`]):
//! without one Lambda takes the line for INFO and drops it at WARN, and the metrics with it.
//!
//! | metric | unit | dimensions | what |
//! |---|---|---|---|
//! | `ColdStart` | Count | | 1 on the first invocation of a process (the one that paid the init), as Powertools counts it |
//! | `Requests` | Count | `Outcome` | HTTP requests answered: `OK`, or the error code of the answer (`SOLD_OUT`, `LIMIT_REACHED`, `RATE_LIMITED`, `NOT_FOUND`, …). For `place-order` these are the admissions by outcome. |
//! | `Latency` | Milliseconds | `Outcome` | time in the function per HTTP request, the same outcomes |
//! | `BatchSize` | Count | | messages per consumer invocation |
//! | `EventLag` | Milliseconds | | per event a consumer or the outbox relay gets: now minus the event's `occurredAt` |
//! | `Failed` | Count | | messages a consumer handed back for retry (or, past `maxReceiveCount`, the DLQ) |
//! | `Applied` | Count | | effects applied once (notifications, follower counts, rejections, cancellations, marks read) |
//! | `Duplicate` | Count | | effects found already applied: redeliveries, duplicates within a batch |
//! | `Orders` | Count | `Outcome` | orders that became `CONFIRMED`, `REJECTED`, `CANCELLED`, `PAID`, `COD` |
//! | `OrdersRefused` | Count | | order messages the order consumer would not materialize, handed back until the DLQ takes them; its log names the reason: `NO_RESERVATION` (Redis holds no reservation of the order and the message has no valid seal), `MISMATCH` (the message names another buyer or quantity than the reservation), `BAD_SEAL` (a seal that does not verify); `ForgedOrderAlarm` watches it |
//! | `Published` | Count | | outbox events the relay put on a queue |
//! | `PublishFailed` | Count | | outbox events the relay could not put (the stream retries them) |
//! | `UnitsReleased` | Count | | reservations without an order released by reconciliation |
//! | `StockCapped` | Count | | units taken off Redis's stock because DynamoDB could not confirm them |
//! | `StockDrift` | Count | | per published sale and reconciliation: Redis's stock minus DynamoDB's |
//! | `RefundsDue` | Count | `Reason` | payments that succeeded for an order that could not take them (cancelled, rejected, already settled, another amount, a payment never opened), recorded for refund |
//! | `RefundsSettled` | Count | `Reason` | refunds an operator paid back through the provider (`REFUNDED`), by the reason they were due |
//! | `RefundsOutstanding` | Count | | per reconciliation run: the refunds still `DUE` (0 when none is) |
//! | `OldestRefundDueAge` | Seconds | | per reconciliation run: how long the oldest refund still `DUE` has waited (0 when none is); `RefundOverdueAlarm` watches it |
//! | `AdminTokensRefused` | Count | `Reason` | tokens the admin MFA guard issued without `admin`: `UNVERIFIED` (a factor no operator verified: the signature of someone enrolling their own authenticator with an admin's temporary password), `NO_MFA`, `UNKNOWN` (the directory could not answer) |
//! | `Retries` | Count | `Reason` | DynamoDB calls refused for a moment and retried; the reason as DynamoDB names it: `TransactionConflict`, `Throttling`, `ProvisionedThroughputExceeded`, … |

use crate::telemetry;
use metrics::{Unit, counter, describe_counter, describe_histogram, histogram};
use std::future::Future;
use std::io::Write as _;
use std::sync::OnceLock;
use std::time::Duration;

/// The CloudWatch namespace of every metric of both products.
pub const NAMESPACE: &str = "FollowSeckill";

/// The metrics' names, as the dashboard and the tests spell them.
pub mod name {
    pub const COLD_START: &str = "ColdStart";
    pub const REQUESTS: &str = "Requests";
    pub const LATENCY: &str = "Latency";
    pub const BATCH_SIZE: &str = "BatchSize";
    pub const EVENT_LAG: &str = "EventLag";
    pub const FAILED: &str = "Failed";
    pub const APPLIED: &str = "Applied";
    pub const DUPLICATE: &str = "Duplicate";
    pub const ORDERS: &str = "Orders";
    pub const ORDERS_REFUSED: &str = "OrdersRefused";
    pub const PUBLISHED: &str = "Published";
    pub const PUBLISH_FAILED: &str = "PublishFailed";
    pub const UNITS_RELEASED: &str = "UnitsReleased";
    pub const STOCK_CAPPED: &str = "StockCapped";
    pub const STOCK_DRIFT: &str = "StockDrift";
    pub const RETRIES: &str = "Retries";
    pub const REFUNDS_DUE: &str = "RefundsDue";
    pub const ADMIN_TOKENS_REFUSED: &str = "AdminTokensRefused";
    pub const REFUNDS_SETTLED: &str = "RefundsSettled";
    pub const REFUNDS_OUTSTANDING: &str = "RefundsOutstanding";
    pub const OLDEST_REFUND_DUE_AGE: &str = "OldestRefundDueAge";
}

/// The dimension every metric has: the function's name.
pub const FUNCTION_NAME: &str = "FunctionName";
/// The dimension of `Requests`, `Latency` and `Orders`.
pub const OUTCOME: &str = "Outcome";
/// The dimension of `Retries`.
pub const REASON: &str = "Reason";

static COLLECTOR: OnceLock<&'static metrics_cloudwatch_embedded::Collector> = OnceLock::new();

/// The namespace of this process's metrics: `POWERTOOLS_METRICS_NAMESPACE`, else
/// [`NAMESPACE`].
pub fn namespace() -> String {
    telemetry::named_or(
        std::env::var("POWERTOOLS_METRICS_NAMESPACE").ok(),
        NAMESPACE,
    )
}

/// Installs the EMF recorder for this process, its `FunctionName` from
/// `AWS_LAMBDA_FUNCTION_NAME` (which Lambda and the local runner set). Call once at cold
/// start; a second call changes nothing.
pub fn init() {
    if COLLECTOR.get().is_some() {
        return;
    }
    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "local".into());
    let built = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace(namespace())
        .with_dimension(FUNCTION_NAME, function)
        .init();
    match built {
        Ok(collector) => {
            describe();
            collector
                .set_property("level", telemetry::metric_line_level())
                .set_property("service", telemetry::service());
            let _ = COLLECTOR.set(collector);
        }
        // Another recorder is installed (a test's): metrics go there, nothing is lost.
        Err(err) => tracing::warn!(error = %err, "the EMF recorder was not installed"),
    }
}

/// Units and descriptions, which the recorder needs before the first value.
fn describe() {
    use name::*;
    let counts = [
        (COLD_START, "first invocations of a process"),
        (REQUESTS, "HTTP requests answered, by outcome"),
        (BATCH_SIZE, "messages per consumer invocation"),
        (FAILED, "messages a consumer handed back"),
        (APPLIED, "effects applied once"),
        (DUPLICATE, "effects found already applied"),
        (ORDERS, "orders by the status they reached"),
        (ORDERS_REFUSED, "order messages refused, by reason"),
        (PUBLISHED, "outbox events relayed"),
        (PUBLISH_FAILED, "outbox events not relayed"),
        (UNITS_RELEASED, "orphaned reservations released"),
        (STOCK_CAPPED, "units taken off Redis's stock"),
        (STOCK_DRIFT, "Redis's stock minus DynamoDB's, per sale"),
        (RETRIES, "attempts retried, by reason"),
        (REFUNDS_DUE, "payments recorded for refund, by reason"),
        (
            ADMIN_TOKENS_REFUSED,
            "tokens issued without admin, by reason",
        ),
        (REFUNDS_SETTLED, "refunds paid back, by reason"),
        (REFUNDS_OUTSTANDING, "refunds still due, per reconciliation"),
    ];
    for (name, description) in counts {
        match name {
            BATCH_SIZE | STOCK_DRIFT | REFUNDS_OUTSTANDING => {
                describe_histogram!(name, Unit::Count, description)
            }
            _ => describe_counter!(name, Unit::Count, description),
        }
    }
    describe_histogram!(LATENCY, Unit::Milliseconds, "time per HTTP request");
    describe_histogram!(EVENT_LAG, Unit::Milliseconds, "now minus the event's time");
    describe_histogram!(
        OLDEST_REFUND_DUE_AGE,
        Unit::Seconds,
        "how long the oldest refund due has waited"
    );
}

/// The ids of one invocation that its metric lines carry.
#[derive(Clone, Debug, Default)]
pub struct Ids {
    pub request_id: String,
    pub xray_trace_id: Option<String>,
}

impl From<&lambda_runtime::Context> for Ids {
    fn from(context: &lambda_runtime::Context) -> Self {
        Self {
            request_id: context.request_id.clone(),
            xray_trace_id: context.xray_trace_id.clone(),
        }
    }
}

/// Runs one invocation, then writes its metrics: the one place lines are written, so every
/// line holds one invocation's values, and its ids. The first invocation of a process counts
/// a `ColdStart`.
pub async fn invocation<F: Future>(ids: Ids, work: F) -> F::Output {
    started();
    let output = work.await;
    flush(&ids);
    telemetry::invocation_ended();
    output
}

/// An invocation starts: the first of the process is its cold start.
fn started() {
    if telemetry::cold_start() {
        counter!(name::COLD_START).increment(1);
    }
}

/// Writes what was recorded since the last flush to stdout, in one write, with `ids`.
pub fn flush(ids: &Ids) {
    let Some(collector) = COLLECTOR.get() else {
        return;
    };
    write_properties(collector, ids);
    let mut lines = Vec::with_capacity(512);
    if let Err(err) = collector.flush(&mut lines) {
        tracing::warn!(error = %err, "metrics not written");
        return;
    }
    if !lines.is_empty() {
        let _ = std::io::stdout().lock().write_all(&lines);
    }
}

/// The invocation's properties, set before each flush (a property lasts until it is set again).
fn write_properties(collector: &metrics_cloudwatch_embedded::Collector, ids: &Ids) {
    collector
        .set_property("timestamp", telemetry::timestamp())
        .set_property("function_request_id", ids.request_id.clone());
    match &ids.xray_trace_id {
        Some(trace) => collector.set_property("xray_trace_id", trace.clone()),
        None => collector.remove_property("xray_trace_id"),
    };
}

fn millis(elapsed: Duration) -> f64 {
    elapsed.as_secs_f64() * 1_000.0
}

/// An HTTP request answered with `outcome` (`OK` or the error's code) after `elapsed`.
pub fn request(outcome: &'static str, elapsed: Duration) {
    counter!(name::REQUESTS, OUTCOME => outcome).increment(1);
    histogram!(name::LATENCY, OUTCOME => outcome).record(millis(elapsed));
}

/// A consumer's batch of `messages`, `failed` of them handed back.
pub fn batch(messages: usize, failed: usize) {
    histogram!(name::BATCH_SIZE).record(messages as f64);
    counter!(name::FAILED).increment(failed as u64);
}

/// A message whose event happened `lag` before the consumer got it.
pub fn event_lag(lag: Duration) {
    histogram!(name::EVENT_LAG).record(millis(lag));
}

/// Effects applied once, and effects found already applied.
pub fn applied(applied: usize, duplicate: usize) {
    counter!(name::APPLIED).increment(applied as u64);
    counter!(name::DUPLICATE).increment(duplicate as u64);
}

/// `n` orders reached `status` (`CONFIRMED`, `REJECTED`, `CANCELLED`, `PAID`, `COD`).
pub fn orders(status: &'static str, n: usize) {
    if n > 0 {
        counter!(name::ORDERS, OUTCOME => status).increment(n as u64);
    }
}

/// `n` order messages refused (the caller logs why).
pub fn orders_refused(n: usize) {
    if n > 0 {
        counter!(name::ORDERS_REFUSED).increment(n as u64);
    }
}

/// The relay put `published` events on their queues and could not put `failed`.
pub fn relayed(published: usize, failed: usize) {
    counter!(name::PUBLISHED).increment(published as u64);
    counter!(name::PUBLISH_FAILED).increment(failed as u64);
}

/// One sale's reconciliation: reservations released, units capped, and Redis's stock minus
/// DynamoDB's when both are known.
pub fn reconciled(released_units: u64, capped: u64, drift: Option<i64>) {
    counter!(name::UNITS_RELEASED).increment(released_units);
    counter!(name::STOCK_CAPPED).increment(capped);
    if let Some(drift) = drift {
        histogram!(name::STOCK_DRIFT).record(drift as f64);
    }
}

/// A payment recorded for refund, for `reason` (`ORDER_CANCELLED`, ...).
pub fn refund_due(reason: &'static str) {
    counter!(name::REFUNDS_DUE, REASON => reason).increment(1);
}

/// A refund paid back, due for `reason` (`ORDER_CANCELLED`, ...).
pub fn refund_settled(reason: &str) {
    counter!(name::REFUNDS_SETTLED, REASON => reason.to_owned()).increment(1);
}

/// The refunds still due and the age of the oldest, as one reconciliation run found them:
/// recorded every run, zeros included, so that an alarm on them clears once they are settled.
pub fn refunds_outstanding(count: u64, oldest_age_seconds: u64) {
    histogram!(name::REFUNDS_OUTSTANDING).record(count as f64);
    histogram!(name::OLDEST_REFUND_DUE_AGE).record(oldest_age_seconds as f64);
}

/// A token the admin MFA guard issued without `admin`, for `reason` (`UNVERIFIED`, ...).
pub fn admin_token_refused(reason: &'static str) {
    counter!(name::ADMIN_TOKENS_REFUSED, REASON => reason).increment(1);
}

/// A call refused for `reason` (DynamoDB's name for it, e.g. `TransactionConflict`) and
/// retried.
pub fn retried(reason: &'static str) {
    counter!(name::RETRIES, REASON => reason).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// What `flush` would write, as JSON documents.
    fn flushed() -> Vec<Value> {
        flushed_with(&Ids::default())
    }

    fn flushed_with(ids: &Ids) -> Vec<Value> {
        let collector = COLLECTOR.get().unwrap();
        write_properties(collector, ids);
        let mut lines = Vec::new();
        collector.flush(&mut lines).unwrap();
        String::from_utf8(lines)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn with_metric<'a>(documents: &'a [Value], metric: &str, outcome: Option<&str>) -> &'a Value {
        documents
            .iter()
            .find(|doc| {
                doc.get(metric).is_some() && doc.get(OUTCOME).and_then(Value::as_str) == outcome
            })
            .unwrap_or_else(|| panic!("no {metric} {outcome:?} in {documents:#?}"))
    }

    // One test: the recorder is the process's (nextest runs each test in a process of its own).
    #[test]
    fn an_invocation_is_one_emf_line_per_dimension_set_with_units_and_dimensions() {
        init();
        let _ = flushed();
        request("OK", Duration::from_micros(2_500));
        request("OK", Duration::from_millis(4));
        request("SOLD_OUT", Duration::from_millis(1));
        batch(10, 2);
        applied(7, 1);
        retried("conflict");
        let documents = flushed();

        let ok = with_metric(&documents, name::REQUESTS, Some("OK"));
        assert_eq!(ok[name::REQUESTS], 2);
        assert_eq!(ok[name::LATENCY], serde_json::json!([2.5, 4.0]));
        assert_eq!(ok[FUNCTION_NAME], "local");
        let declared = &ok["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(declared["Namespace"], NAMESPACE);
        assert_eq!(
            declared["Dimensions"],
            serde_json::json!([[FUNCTION_NAME, OUTCOME]])
        );
        let units: Vec<(&str, &str)> = declared["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["Name"].as_str().unwrap(), m["Unit"].as_str().unwrap()))
            .collect();
        assert!(
            units.contains(&(name::LATENCY, "Milliseconds")),
            "{units:?}"
        );
        assert!(units.contains(&(name::REQUESTS, "Count")), "{units:?}");

        assert_eq!(
            with_metric(&documents, name::REQUESTS, Some("SOLD_OUT"))[name::REQUESTS],
            1
        );
        let consumer = with_metric(&documents, name::BATCH_SIZE, None);
        assert_eq!(consumer[name::BATCH_SIZE], serde_json::json!([10.0]));
        assert_eq!(consumer[name::FAILED], 2);
        assert_eq!(consumer[name::APPLIED], 7);
        assert_eq!(consumer[name::DUPLICATE], 1);
        let retries = documents
            .iter()
            .find(|d| d.get(name::RETRIES).is_some())
            .unwrap();
        assert_eq!(retries[REASON], "conflict");

        // Counted once: the next invocation starts from nothing.
        assert_eq!(flushed(), Vec::<Value>::new());

        // The first invocation of the process counts its cold start; every line carries the
        // invocation's ids and what Lambda's log-level filter and a log search read.
        started();
        request("OK", Duration::from_millis(3));
        let first = Ids {
            request_id: "c6af9ac6-7b61-11e6-9a41-93e812345678".into(),
            xray_trace_id: Some("Root=1-5759e988-bd862e3fe1be46a994272793".into()),
        };
        let documents = flushed_with(&first);
        assert_eq!(
            with_metric(&documents, name::COLD_START, None)[name::COLD_START],
            1
        );
        for document in &documents {
            assert_eq!(document["function_request_id"], first.request_id.as_str());
            assert_eq!(
                document["xray_trace_id"],
                "Root=1-5759e988-bd862e3fe1be46a994272793"
            );
            // No AWS_LAMBDA_LOG_LEVEL here: INFO, which Lambda's default filter passes.
            assert_eq!(document["level"], "INFO");
            assert_eq!(document["service"], telemetry::DEFAULT_SERVICE);
            let at = document["timestamp"].as_str().unwrap();
            time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339)
                .unwrap_or_else(|e| panic!("{at}: {e}"));
        }
        telemetry::invocation_ended();

        started();
        request("OK", Duration::from_millis(3));
        let second = Ids {
            request_id: "second".into(),
            xray_trace_id: None,
        };
        let documents = flushed_with(&second);
        assert!(
            documents.iter().all(|d| d.get(name::COLD_START).is_none()),
            "{documents:#?}"
        );
        assert_eq!(documents.len(), 1, "{documents:#?}");
        assert_eq!(documents[0]["function_request_id"], "second");
        assert!(documents[0].get("xray_trace_id").is_none());
    }
}
