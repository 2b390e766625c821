//! The functions' own metrics as CloudWatch would read them: the runner of `make dev`
//! (`local-cloud up`, a process of its own) with the real function binaries, traffic through
//! the routes and every queue, then the Embedded Metric Format lines of its output parsed
//! the way CloudWatch Logs parses them and checked against what happened.

use crate::support::{Api, eventually, sale, unique_stack};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};

const WAIT: Duration = Duration::from_secs(40);
const NAMESPACE: &str = "FollowSeckill";
/// CloudWatch's units (PutMetricData's `StandardUnit`) that these metrics may use.
const UNITS: [&str; 2] = ["Count", "Milliseconds"];

/// `local-cloud up` on a stack of its own, its output kept line by line.
struct Runner {
    child: Child,
    base: String,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Runner {
    async fn start(parameters: &[&str]) -> Self {
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let exe = std::env::current_exe().unwrap();
        let binaries = exe.parent().and_then(|d| d.parent()).unwrap().to_path_buf();
        let mut command = Command::new(binaries.join("local-cloud"));
        command
            .arg("up")
            .arg("--template")
            .arg(manifest.join("../../template.yaml"))
            .args(["--stack-name", &unique_stack(), "--address", "127.0.0.1:0"])
            .arg("--binaries-dir")
            .arg(&binaries);
        for parameter in parameters {
            command.args(["--parameter", parameter]);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("target/debug/local-cloud runs (cargo build --workspace --bins)");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (ready, address) = tokio::sync::oneshot::channel();
        let mut output = BufReader::new(child.stdout.take().unwrap()).lines();
        let kept = lines.clone();
        tokio::spawn(async move {
            let mut ready = Some(ready);
            while let Ok(Some(line)) = output.next_line().await {
                if let Some(at) = line.strip_prefix("local cloud ready on ")
                    && let Some(ready) = ready.take()
                {
                    let _ = ready.send(at.to_owned());
                }
                kept.lock().unwrap().push(line);
            }
        });
        let base = tokio::time::timeout(WAIT, address)
            .await
            .expect("the runner is ready within 40 s")
            .expect("the runner printed its address");
        Self { child, base, lines }
    }

    fn api(&self, user: &str) -> Api {
        Api::at(&self.base, Some(user), &[])
    }

    /// Every EMF document the functions printed so far, each checked against the format.
    fn documents(&self) -> Vec<Value> {
        let lines = self.lines.lock().unwrap();
        lines.iter().filter_map(|line| emf_document(line)).collect()
    }

    /// Every line a function printed (`[Function#n] ...`) and the runner let through, as
    /// (function, text).
    fn function_lines(&self) -> Vec<(String, String)> {
        let lines = self.lines.lock().unwrap();
        lines
            .iter()
            .filter_map(|line| {
                let (function, text) = line.strip_prefix('[')?.split_once("] ")?;
                let (function, _) = function.split_once('#')?;
                Some((function.to_owned(), text.to_owned()))
            })
            .collect()
    }

    /// The JSON log lines (not metric lines) the functions printed.
    fn log_lines(&self) -> Vec<(String, Value)> {
        self.function_lines()
            .into_iter()
            .filter_map(|(function, text)| {
                let line: Value = serde_json::from_str(&text).ok()?;
                line.get("_aws").is_none().then_some((function, line))
            })
            .collect()
    }

    /// Stops the runner as Ctrl-C does, so that it stops its functions too.
    async fn stop(mut self) {
        if let Some(pid) = self.child.id() {
            let _ = Command::new("kill")
                .args(["-INT", &pid.to_string()])
                .status()
                .await;
        }
        if tokio::time::timeout(Duration::from_secs(15), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// The EMF document of a function's output line (`[Function#n] {...}`), if it is one; panics
/// where CloudWatch would refuse it: every declared metric has a value (a number, or at most
/// 100 of them), every dimension a string value, the namespace and units are ours.
fn emf_document(line: &str) -> Option<Value> {
    let (_, json) = line.split_once("] {")?;
    let document: Value = serde_json::from_str(&format!("{{{json}")).ok()?;
    let aws = document.get("_aws")?;
    assert!(aws["Timestamp"].is_u64(), "no timestamp: {line}");
    let directives = aws["CloudWatchMetrics"].as_array().expect(line);
    for directive in directives {
        assert_eq!(directive["Namespace"], NAMESPACE, "{line}");
        for set in directive["Dimensions"].as_array().expect(line) {
            for dimension in set.as_array().expect(line) {
                let name = dimension.as_str().expect(line);
                assert!(
                    document[name].is_string(),
                    "dimension {name} has no value: {line}"
                );
            }
        }
        for metric in directive["Metrics"].as_array().expect(line) {
            let name = metric["Name"].as_str().expect(line);
            let unit = metric["Unit"].as_str().expect(line);
            assert!(UNITS.contains(&unit), "unit {unit}: {line}");
            match &document[name] {
                Value::Number(_) => {}
                Value::Array(values) => {
                    assert!(!values.is_empty() && values.len() <= 100, "{line}");
                    assert!(values.iter().all(Value::is_number), "{line}");
                }
                other => panic!("metric {name} has the value {other}: {line}"),
            }
        }
    }
    Some(document)
}

/// What the documents say of `metric` of `function` per `Outcome` (`-` when it has none): the
/// sum of its counts, and for distributions the number of values.
fn sums(documents: &[Value], function: &str, metric: &str) -> BTreeMap<String, f64> {
    let mut sums = BTreeMap::new();
    for document in documents {
        if document["FunctionName"] != function {
            continue;
        }
        let outcome = document["Outcome"].as_str().unwrap_or("-").to_owned();
        let value = match &document[metric] {
            Value::Number(n) => n.as_f64().unwrap(),
            Value::Array(values) => values.len() as f64,
            _ => continue,
        };
        *sums.entry(outcome).or_insert(0.0) += value;
    }
    sums
}

/// Every value of the distribution `metric` of `function`.
fn values(documents: &[Value], function: &str, metric: &str) -> Vec<f64> {
    documents
        .iter()
        .filter(|document| document["FunctionName"] == function)
        .filter_map(|document| document[metric].as_array())
        .flatten()
        .map(|value| value.as_f64().unwrap())
        .collect()
}

fn only(outcomes: &[(&str, f64)]) -> BTreeMap<String, f64> {
    outcomes
        .iter()
        .map(|(outcome, n)| ((*outcome).to_owned(), *n))
        .collect()
}

#[tokio::test]
async fn every_function_on_the_path_writes_its_metrics_as_cloudwatch_reads_them() {
    let runner = Runner::start(&[
        "QueueVisibilityTimeoutSeconds=2",
        "ConsumerTimeoutSeconds=2",
        "PaymentWindowSeconds=4",
    ])
    .await;
    let (ann, bob) = (runner.api("ann"), runner.api("bob"));

    // Follow: one applied, one refused; an unfollow.
    ann.put_profile("Ann").await;
    bob.put_profile("Bob").await;
    ann.follow("bob").await;
    ann.expect("PUT", "/users/nobody/follow", 404).await;
    ann.expect("GET", "/users/bob", 200).await;
    ann.expect("GET", "/users/bob/followers", 200).await;
    ann.expect("GET", "/users/ann/following", 200).await;
    let notifications = eventually(WAIT, "bob's follow notification", || async {
        let body = bob.expect("GET", "/notifications", 200).await;
        (body["items"].as_array()?.len() == 1).then_some(body)
    })
    .await;
    let (status, body) = bob
        .call("POST", "/notifications/read", Some(json!({"all": true})))
        .await;
    assert_eq!(status, 200, "{body}: {notifications}");
    ann.expect("DELETE", "/users/bob/follow", 200).await;

    // A sale of 3, one unit per buyer: two admitted, one over the limit; one kept for delivery,
    // one left to expire.
    let operator = Api::at(&runner.base, Some("operator"), &["admin".to_owned()]);
    let sale = sale()
        .title("Metrics sale")
        .price_cents(500)
        .stock(3)
        .publish(&operator)
        .await;
    ann.expect("GET", &format!("/seckill/activities/{sale}"), 200)
        .await;
    let paid = ann.place_order(&sale).await;
    let expiring = bob.place_order(&sale).await;
    ann.expect("POST", &format!("/seckill/activities/{sale}/orders"), 409)
        .await;
    let confirmed = |api: Api, order: String| async move {
        eventually(WAIT, "the order is confirmed", || async {
            let body = api.expect("GET", &format!("/orders/{order}"), 200).await;
            (body["status"] == "CONFIRMED").then_some(())
        })
        .await
    };
    confirmed(ann.clone(), paid.clone()).await;
    let (status, body) = ann
        .call(
            "POST",
            &format!("/orders/{paid}/pay"),
            Some(json!({"method": "COD"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    ann.expect("GET", "/orders", 200).await;
    eventually(WAIT, "the unpaid order expires", || async {
        let body = bob.expect("GET", &format!("/orders/{expiring}"), 200).await;
        (body["status"] == "CANCELLED").then_some(())
    })
    .await;

    // The last invocations' lines: flushed when each invocation ends, printed by the runner's
    // console within its flush interval.
    let documents = eventually(
        WAIT,
        "the payment timeout's metrics are printed",
        || async {
            let documents = runner.documents();
            let cancelled = sums(&documents, "PaymentTimeoutConsumerFunction", "Orders");
            (cancelled.get("CANCELLED") == Some(&1.0)).then_some(documents)
        },
    )
    .await;
    runner.stop().await;

    // Every HTTP function: one count per request, by outcome, and one latency per request.
    let requests = [
        ("PutProfileFunction", only(&[("OK", 2.0)])),
        ("FollowFunction", only(&[("NOT_FOUND", 1.0), ("OK", 1.0)])),
        ("UnfollowFunction", only(&[("OK", 1.0)])),
        ("GetUserFunction", only(&[("OK", 1.0)])),
        ("ListFollowersFunction", only(&[("OK", 1.0)])),
        ("ListFollowingFunction", only(&[("OK", 1.0)])),
        ("MarkNotificationsReadFunction", only(&[("OK", 1.0)])),
        ("CreateSaleFunction", only(&[("OK", 1.0)])),
        ("PublishSaleFunction", only(&[("OK", 1.0)])),
        ("GetSaleFunction", only(&[("OK", 1.0)])),
        (
            "PlaceOrderFunction",
            only(&[("LIMIT_REACHED", 1.0), ("OK", 2.0)]),
        ),
        ("PayOrderFunction", only(&[("OK", 1.0)])),
        ("ListOrdersFunction", only(&[("OK", 1.0)])),
    ];
    for (function, expected) in &requests {
        assert_eq!(
            &sums(&documents, function, "Requests"),
            expected,
            "{function}"
        );
        assert_eq!(
            &sums(&documents, function, "Latency"),
            expected,
            "{function}"
        );
        let latencies = values(&documents, function, "Latency");
        assert!(
            latencies.iter().all(|ms| *ms > 0.0 && *ms < 10_000.0),
            "{function}: {latencies:?}"
        );
    }
    // Polled until it changed: at least one request each.
    for function in ["ListNotificationsFunction", "GetOrderFunction"] {
        let ok = sums(&documents, function, "Requests");
        assert!(
            ok.get("OK").is_some_and(|n| *n >= 1.0),
            "{function}: {ok:?}"
        );
    }

    // The outbox relay: the follow's and the unfollow's events, each with its lag.
    let relay = "OutboxRelayFunction";
    assert_eq!(sums(&documents, relay, "Published"), only(&[("-", 2.0)]));
    assert!(sums(&documents, relay, "PublishFailed").is_empty());
    let lags = values(&documents, relay, "EventLag");
    assert_eq!(lags.len(), 2, "{lags:?}");
    assert!(
        lags.iter().all(|ms| *ms >= 0.0 && *ms < 30_000.0),
        "{lags:?}"
    );

    // The consumers: every message counted in a batch, with its lag, applied once.
    let consumers = [
        ("NotificationConsumerFunction", 2.0, 1.0),
        ("FollowerCountConsumerFunction", 2.0, 2.0),
    ];
    for (function, messages, applied) in consumers {
        let batch: f64 = values(&documents, function, "BatchSize").iter().sum();
        assert!(batch >= messages, "{function}: batches of {batch} messages");
        assert_eq!(values(&documents, function, "EventLag").len() as f64, batch);
        assert_eq!(
            sums(&documents, function, "Applied"),
            only(&[("-", applied)]),
            "{function}"
        );
    }
    // An unfollow counted before its follow would wait for it (the count may not go below 0);
    // a notification never waits.
    assert!(sums(&documents, "NotificationConsumerFunction", "Failed").is_empty());

    // The orders: two confirmed, one kept for cash on delivery, one cancelled by its payment
    // window.
    let orders = [
        ("OrderConsumerFunction", "CONFIRMED"),
        ("PayOrderFunction", "COD"),
        ("PaymentTimeoutConsumerFunction", "CANCELLED"),
    ];
    let confirmed = sums(&documents, "OrderConsumerFunction", "Orders");
    assert_eq!(confirmed, only(&[("CONFIRMED", 2.0)]));
    for (function, status) in &orders[1..] {
        assert_eq!(
            sums(&documents, function, "Orders").get(*status),
            Some(&1.0),
            "{function}"
        );
    }
    // At least once: a batch that outlived its visibility comes back, and counts again.
    let batches = values(&documents, "OrderConsumerFunction", "BatchSize");
    assert!(batches.iter().sum::<f64>() >= 2.0, "{batches:?}");

    // Powertools' shape: each process's first invocation counts a cold start, every metric
    // line names its invocation and passes Lambda's filter at INFO.
    for (function, _) in &requests {
        let cold = sums(&documents, function, "ColdStart");
        assert!(
            cold.get("-").is_some_and(|n| *n >= 1.0),
            "{function}: {cold:?}"
        );
    }
    for document in &documents {
        assert!(
            document["function_request_id"]
                .as_str()
                .is_some_and(|id| !id.is_empty()),
            "{document}"
        );
        assert_eq!(document["level"], "INFO", "{document}");
        assert_eq!(document["service"], "follow-seckill", "{document}");
    }
}

/// The log line of the expired order's release: INFO, so kept at INFO and dropped at WARN.
const RELEASED: &str = "unpaid order cancelled; unit released";

/// A sale of 3 with one order left unpaid until its payment window (4 s) ends; answers once
/// the order is CANCELLED and the payment timeout's metrics are printed.
async fn an_order_expires(runner: &Runner) -> Vec<Value> {
    let ann = runner.api("ann");
    ann.put_profile("Ann").await;
    let operator = Api::at(&runner.base, Some("operator"), &["admin".to_owned()]);
    let sale = sale()
        .title("Levels sale")
        .price_cents(500)
        .stock(3)
        .publish(&operator)
        .await;
    let order = ann.place_order(&sale).await;
    eventually(WAIT, "the unpaid order expires", || async {
        let body = ann.expect("GET", &format!("/orders/{order}"), 200).await;
        (body["status"] == "CANCELLED").then_some(())
    })
    .await;
    eventually(
        WAIT,
        "the payment timeout's metrics are printed",
        || async {
            let documents = runner.documents();
            let cancelled = sums(&documents, "PaymentTimeoutConsumerFunction", "Orders");
            (cancelled.get("CANCELLED") == Some(&1.0)).then_some(documents)
        },
    )
    .await
}

#[tokio::test]
async fn at_log_level_info_the_log_lines_have_powertools_keys_at_the_top_level() {
    let runner = Runner::start(&["PaymentWindowSeconds=4"]).await;
    an_order_expires(&runner).await;
    let released = eventually(WAIT, "the release is logged", || async {
        runner
            .log_lines()
            .into_iter()
            .find(|(_, line)| line["message"] == RELEASED)
    })
    .await;
    runner.stop().await;
    let (function, line) = released;
    assert_eq!(function, "PaymentTimeoutConsumerFunction");
    assert_eq!(line["level"], "INFO");
    assert_eq!(line["service"], "follow-seckill");
    assert_eq!(line["function_name"], "PaymentTimeoutConsumerFunction");
    assert!(line["cold_start"].is_boolean(), "{line}");
    assert!(line["order_id"].is_string(), "{line}");
    for key in ["function_request_id", "timestamp"] {
        assert!(
            line[key].as_str().is_some_and(|v| !v.is_empty()),
            "{key}: {line}"
        );
    }
    OffsetDateTime::parse(line["timestamp"].as_str().unwrap(), &Rfc3339).unwrap();
}

#[tokio::test]
async fn at_log_level_warn_the_metrics_still_arrive_and_info_lines_are_dropped() {
    // Lambda's filter at WARN: a line without a level (an EMF line as it was) is INFO and
    // dropped, so the dashboard would go blank; the runner filters as Lambda does.
    let runner = Runner::start(&["PaymentWindowSeconds=4", "LogLevel=WARN"]).await;
    let documents = an_order_expires(&runner).await;
    let lines = runner.function_lines();
    runner.stop().await;

    // The metrics arrived: the order's requests, its confirmation and its cancellation.
    assert_eq!(
        sums(&documents, "PutProfileFunction", "Requests"),
        only(&[("OK", 1.0)])
    );
    assert_eq!(
        sums(&documents, "PlaceOrderFunction", "Requests"),
        only(&[("OK", 1.0)])
    );
    assert_eq!(
        sums(&documents, "OrderConsumerFunction", "Orders"),
        only(&[("CONFIRMED", 1.0)])
    );
    assert!(
        sums(&documents, "PlaceOrderFunction", "ColdStart")
            .get("-")
            .is_some_and(|n| *n >= 1.0)
    );
    for document in &documents {
        assert_eq!(document["level"], "WARN", "{document}");
    }
    // And nothing below WARN: no INFO line (the release above is logged at INFO), no line
    // without a level.
    assert!(!lines.is_empty());
    for (function, text) in &lines {
        let line: Value = serde_json::from_str(text)
            .unwrap_or_else(|_| panic!("{function} printed a line Lambda takes for INFO: {text}"));
        assert!(
            ["WARN", "ERROR"].contains(&line["level"].as_str().unwrap_or_default()),
            "{function}: {text}"
        );
        assert_ne!(line["message"], RELEASED, "{function}: {text}");
    }
}
