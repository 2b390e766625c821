//! Fault switches: the faults that the reliability suite and the benchmarks inject on purpose,
//! all of them in the runner, none in the functions' code.
//!
//! - **AWS faults** (`FUNCTION:SERVICE[.OPS]:ACTION`): a function named in a rule talks to
//!   the emulators through a proxy of its own (its `AWS_ENDPOINT_URL` points there) that can
//!   delay requests before forwarding them (`delay=500ms`), forward them and answer late
//!   (`hang=2s`: the write lands, the caller waits), or fail a share of them with the
//!   service's 500 (`fail=0.2`). SERVICE is `dynamodb` or `sqs`; OPS a comma-separated list
//!   of operations (`PutItem`, `SendMessage`...) or `writes` / `sends`; none means all.
//!   A function with a `fail` rule from the start gets `AWS_MAX_ATTEMPTS=1` so that each
//!   injected failure reaches its code instead of the SDK's retry loop.
//! - **Crashes** (`FUNCTION:crash=0.2`): that share of its invocations has its process
//!   killed (SIGKILL) shortly after the invocation starts, i.e. mid-batch for a consumer.
//! - **Timeouts** (`FUNCTION:timeout=1s`): the function's timeout, overriding the template.
//! - **Duplicate delivery** (`--sqs-duplicate`): every SQS batch is delivered twice, the
//!   second time in another order, before its messages are deleted.
//!
//! Every proxy counts the requests of its function by operation ([`Faults::requests`]), and
//! the writes that pass through it per item (table, `pk`, `sk`):
//! how the hot-key measurement sees the hottest item's writes; and, per function, the
//! transaction conflicts that the emulator answered and how many of those writes the
//! function's code sent again ([`Faults::conflicts`]): how the contention storms see that
//! every conflict was retried. Rules can be replaced while the
//! cloud runs ([`Faults::set_rules`]), e.g. to make the stream relay fail for a while.

pub mod proxy;

use anyhow::{Context as _, bail};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// The AWS service a rule applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Service {
    DynamoDb,
    Sqs,
}

/// What a rule does to a matching request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// Wait this long, then forward.
    Delay(Duration),
    /// Forward, then wait this long before answering.
    Hang(Duration),
    /// Answer the service's 500 instead of forwarding, with this probability.
    Fail(f64),
}

/// One AWS fault of one function.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub service: Service,
    /// Operation names (`PutItem`, `SendMessage`); empty means every operation.
    pub operations: Vec<String>,
    pub action: Action,
}

impl Rule {
    fn matches(&self, service: Service, operation: &str) -> bool {
        self.service == service
            && (self.operations.is_empty() || self.operations.iter().any(|o| o == operation))
    }
}

/// Kill the process of this share of invocations, `after` their start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Crash {
    pub probability: f64,
    pub after: Duration,
}

/// The faults of one function, as configured at start.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FunctionFaults {
    pub rules: Vec<Rule>,
    pub crash: Option<Crash>,
    pub timeout: Option<Duration>,
    /// Put the proxy in front of it even without rules: to count its writes, or to add
    /// rules later.
    pub proxied: bool,
    /// `AWS_MAX_ATTEMPTS` for its SDK clients (1 when it has a `fail` rule from the start).
    pub sdk_attempts: Option<u32>,
}

impl FunctionFaults {
    pub(crate) fn needs_proxy(&self) -> bool {
        self.proxied || !self.rules.is_empty()
    }
}

/// Every fault to start with.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultPlan {
    /// By function logical id.
    pub functions: BTreeMap<String, FunctionFaults>,
    pub sqs_duplicate: bool,
}

impl FaultPlan {
    /// Adds one `--fault` switch: `FUNCTION:crash=P[@DELAY]`, `FUNCTION:timeout=DUR`,
    /// `FUNCTION:attempts=N`, `FUNCTION:proxy`, or `FUNCTION:SERVICE[.OPS]:ACTION` with ACTION
    /// one of `delay=DUR`, `hang=DUR`, `fail=P`.
    pub fn add(&mut self, switch: &str) -> anyhow::Result<()> {
        let mut parse = || -> anyhow::Result<()> {
            let mut parts = switch.splitn(3, ':');
            let function = parts
                .next()
                .filter(|f| !f.is_empty())
                .context("no function")?;
            let second = parts.next().context("nothing after the function")?;
            let faults = self.functions.entry(function.to_owned()).or_default();
            let Some(action) = parts.next() else {
                if second == "proxy" {
                    faults.proxied = true;
                    return Ok(());
                }
                let (name, value) = second.split_once('=').context("expected NAME=VALUE")?;
                match name {
                    "crash" => {
                        let (p, after) = value.split_once('@').unwrap_or((value, "50ms"));
                        faults.crash = Some(Crash {
                            probability: probability(p)?,
                            after: duration(after)?,
                        });
                    }
                    "timeout" => faults.timeout = Some(duration(value)?),
                    "attempts" => faults.sdk_attempts = Some(value.parse()?),
                    other => bail!("unknown fault {other:?}"),
                }
                return Ok(());
            };
            let (service, operations) = match second.split_once('.') {
                Some((service, ops)) => (service, operations(ops)),
                None => (second, Vec::new()),
            };
            let service = match service.to_ascii_lowercase().as_str() {
                "dynamodb" => Service::DynamoDb,
                "sqs" => Service::Sqs,
                other => bail!("unknown service {other:?} (dynamodb or sqs)"),
            };
            let (name, value) = action.split_once('=').context("expected ACTION=VALUE")?;
            let action = match name {
                "delay" => Action::Delay(duration(value)?),
                "hang" => Action::Hang(duration(value)?),
                "fail" => {
                    faults.sdk_attempts.get_or_insert(1);
                    Action::Fail(probability(value)?)
                }
                other => bail!("unknown action {other:?} (delay, hang or fail)"),
            };
            faults.rules.push(Rule {
                service,
                operations,
                action,
            });
            Ok(())
        };
        parse().with_context(|| {
            format!(
                "invalid fault {switch:?}: expected FUNCTION:crash=P[@DELAY], \
                 FUNCTION:timeout=DUR, FUNCTION:attempts=N, FUNCTION:proxy or \
                 FUNCTION:SERVICE[.OPS]:delay=DUR|hang=DUR|fail=P"
            )
        })
    }

    /// The plan's faults of `function`.
    pub fn function(&self, function: &str) -> Option<&FunctionFaults> {
        self.functions.get(function)
    }
}

const WRITES: &[&str] = &[
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "TransactWriteItems",
    "BatchWriteItem",
];
const SENDS: &[&str] = &["SendMessage", "SendMessageBatch"];

fn operations(list: &str) -> Vec<String> {
    list.split(',')
        .flat_map(|op| match op {
            "writes" => WRITES.iter().map(|o| o.to_string()).collect(),
            "sends" => SENDS.iter().map(|o| o.to_string()).collect(),
            op => vec![op.to_owned()],
        })
        .collect()
}

fn probability(raw: &str) -> anyhow::Result<f64> {
    let p: f64 = raw.parse()?;
    if !(0.0..=1.0).contains(&p) {
        bail!("a probability is between 0 and 1, got {p}");
    }
    Ok(p)
}

/// `500ms`, `2s`, `1.5s`.
pub fn duration(raw: &str) -> anyhow::Result<Duration> {
    let (number, unit) = raw
        .find(|c: char| c.is_ascii_alphabetic())
        .map(|at| raw.split_at(at))
        .context("a duration needs a unit: ms or s")?;
    let number: f64 = number.parse()?;
    let seconds = match unit {
        "ms" => number / 1000.0,
        "s" => number,
        other => bail!("unknown unit {other:?} (ms or s)"),
    };
    Duration::try_from_secs_f64(seconds).map_err(Into::into)
}

/// The live faults of a running cloud: what the proxies, the runtime and the SQS source
/// consult on every request, replaceable while it runs; and the write counts.
#[derive(Debug, Default)]
pub struct Faults {
    rules: RwLock<HashMap<String, Arc<Vec<Rule>>>>,
    crashes: RwLock<HashMap<String, Crash>>,
    sqs_duplicate: AtomicBool,
    writes: Mutex<HashMap<ItemKey, u64>>,
    /// Processes killed by the crash switch, by function.
    kills: Mutex<HashMap<String, u64>>,
    conflicts: Mutex<HashMap<String, ConflictLog>>,
    /// Requests each function sent through its proxy, by operation (`TransactWriteItems`...).
    requests: Mutex<HashMap<String, BTreeMap<String, u64>>>,
}

/// One function's conflicts as its proxy saw them.
#[derive(Debug, Default)]
struct ConflictLog {
    counts: ConflictCounts,
    /// Fingerprints of the write requests that were answered with a conflict.
    refused: std::collections::HashSet<u64>,
}

/// How often the emulator refused a function's writes for a conflict, and how many of those
/// writes the function sent again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConflictCounts {
    /// `TransactionCanceledException` with a `TransactionConflict` reason, or
    /// `TransactionConflictException`.
    pub raised: u64,
    /// Writes whose request equals one that was refused before (a retry of it).
    pub retried: u64,
}

impl std::ops::AddAssign for ConflictCounts {
    fn add_assign(&mut self, other: Self) {
        self.raised += other.raised;
        self.retried += other.retried;
    }
}

/// An item that a write touched: table name and its `pk`/`sk` (or whole key) as text.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemKey {
    pub table: String,
    pub key: String,
}

impl Faults {
    pub fn new(plan: &FaultPlan) -> Self {
        let faults = Self::default();
        for (function, config) in &plan.functions {
            faults.set_rules(function, config.rules.clone());
            if let Some(crash) = config.crash {
                faults.set_crash(function, Some(crash));
            }
        }
        faults.set_sqs_duplicate(plan.sqs_duplicate);
        faults
    }

    /// Replaces a function's AWS rules; takes effect only for a function started behind a
    /// proxy (named in the plan).
    pub fn set_rules(&self, function: &str, rules: Vec<Rule>) {
        self.rules
            .write()
            .expect("fault rules lock")
            .insert(function.to_owned(), Arc::new(rules));
    }

    pub fn set_crash(&self, function: &str, crash: Option<Crash>) {
        let mut crashes = self.crashes.write().expect("crash lock");
        match crash {
            Some(crash) => crashes.insert(function.to_owned(), crash),
            None => crashes.remove(function),
        };
    }

    pub fn set_sqs_duplicate(&self, on: bool) {
        self.sqs_duplicate.store(on, Ordering::Relaxed);
    }

    pub(crate) fn sqs_duplicate(&self) -> bool {
        self.sqs_duplicate.load(Ordering::Relaxed)
    }

    /// What happens to `function`'s `operation` request: the first matching rule's action,
    /// a `fail` rule failing only at its probability.
    pub(crate) fn action(
        &self,
        function: &str,
        service: Service,
        operation: &str,
    ) -> Option<Action> {
        let rules = self
            .rules
            .read()
            .expect("fault rules lock")
            .get(function)?
            .clone();
        rules
            .iter()
            .filter(|rule| rule.matches(service, operation))
            .find_map(|rule| match rule.action {
                Action::Fail(p) if !chance(p) => None,
                action => Some(action),
            })
    }

    /// The delay after which this invocation's process is to be killed, if it is.
    pub(crate) fn crash_after(&self, function: &str) -> Option<Duration> {
        let crash = *self.crashes.read().expect("crash lock").get(function)?;
        chance(crash.probability).then_some(crash.after)
    }

    pub(crate) fn record_kill(&self, function: &str) {
        *self
            .kills
            .lock()
            .expect("kill counts lock")
            .entry(function.to_owned())
            .or_default() += 1;
    }

    /// How many of `function`'s processes the crash switch killed mid-invocation so far.
    pub fn kills(&self, function: &str) -> u64 {
        self.kills
            .lock()
            .expect("kill counts lock")
            .get(function)
            .copied()
            .unwrap_or(0)
    }

    pub(crate) fn count_writes(&self, items: impl IntoIterator<Item = ItemKey>) {
        let mut writes = self.writes.lock().expect("write counts lock");
        for item in items {
            *writes.entry(item).or_default() += 1;
        }
    }

    /// Writes per item seen by the proxies so far, most written first.
    pub fn write_counts(&self) -> Vec<(ItemKey, u64)> {
        let mut counts: Vec<_> = self
            .writes
            .lock()
            .expect("write counts lock")
            .iter()
            .map(|(item, count)| (item.clone(), *count))
            .collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        counts
    }

    pub fn reset_write_counts(&self) {
        self.writes.lock().expect("write counts lock").clear();
    }

    /// Whether `request` (a write's fingerprint) repeats one that was refused for a conflict;
    /// counts it as a retry if so.
    pub(crate) fn note_write(&self, function: &str, request: u64) {
        let mut conflicts = self.conflicts.lock().expect("conflict counts lock");
        if let Some(log) = conflicts.get_mut(function)
            && log.refused.contains(&request)
        {
            log.counts.retried += 1;
        }
    }

    pub(crate) fn note_conflict(&self, function: &str, request: u64) {
        let mut conflicts = self.conflicts.lock().expect("conflict counts lock");
        let log = conflicts.entry(function.to_owned()).or_default();
        log.counts.raised += 1;
        log.refused.insert(request);
    }

    pub(crate) fn count_request(&self, function: &str, operation: &str) {
        *self
            .requests
            .lock()
            .expect("request counts lock")
            .entry(function.to_owned())
            .or_default()
            .entry(operation.to_owned())
            .or_default() += 1;
    }

    /// The AWS requests `function` sent through its proxy so far, by operation (empty when it
    /// has no proxy): what a request costs in calls, e.g. a bounded number of transactions.
    pub fn requests(&self, function: &str) -> BTreeMap<String, u64> {
        self.requests
            .lock()
            .expect("request counts lock")
            .get(function)
            .cloned()
            .unwrap_or_default()
    }

    /// `function`'s conflicts so far, as its proxy saw them (zero when it has no proxy).
    pub fn conflicts(&self, function: &str) -> ConflictCounts {
        self.conflicts
            .lock()
            .expect("conflict counts lock")
            .get(function)
            .map(|log| log.counts)
            .unwrap_or_default()
    }
}

/// True with probability `p`.
pub(crate) fn chance(p: f64) -> bool {
    if p >= 1.0 {
        return true;
    }
    let draw = (crate::runtime::ids::next_u128() >> 75) as f64 / (1u64 << 53) as f64;
    draw < p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_parse_into_a_plan() {
        let mut plan = FaultPlan::default();
        plan.add("NotificationConsumerFunction:dynamodb.writes:delay=500ms")
            .unwrap();
        plan.add("PlaceOrderFunction:sqs.SendMessage:fail=1")
            .unwrap();
        plan.add("OrderConsumerFunction:crash=0.5@20ms").unwrap();
        plan.add("FollowFunction:timeout=1.5s").unwrap();
        let notifications = plan.function("NotificationConsumerFunction").unwrap();
        assert_eq!(
            notifications.rules[0],
            Rule {
                service: Service::DynamoDb,
                operations: WRITES.iter().map(|o| o.to_string()).collect(),
                action: Action::Delay(Duration::from_millis(500)),
            }
        );
        let orders = plan.function("PlaceOrderFunction").unwrap();
        assert_eq!(orders.rules[0].action, Action::Fail(1.0));
        assert_eq!(orders.sdk_attempts, Some(1));
        assert_eq!(
            plan.function("OrderConsumerFunction").unwrap().crash,
            Some(Crash {
                probability: 0.5,
                after: Duration::from_millis(20)
            })
        );
        assert_eq!(
            plan.function("FollowFunction").unwrap().timeout,
            Some(Duration::from_millis(1500))
        );
    }

    #[test]
    fn bad_switches_are_refused_with_the_expected_shape() {
        let mut plan = FaultPlan::default();
        for bad in [
            "F",
            "F:s3:fail=1",
            "F:dynamodb:fail=2",
            "F:dynamodb:sleep=1s",
            "F:timeout=5",
            ":crash=1",
        ] {
            let err = plan.add(bad).unwrap_err();
            assert!(
                format!("{err:#}").contains("expected FUNCTION:"),
                "{bad}: {err:#}"
            );
        }
    }

    #[test]
    fn rules_match_their_operations_and_fail_at_their_rate() {
        let faults = Faults::default();
        faults.set_rules(
            "F",
            vec![Rule {
                service: Service::Sqs,
                operations: vec!["SendMessage".into()],
                action: Action::Fail(1.0),
            }],
        );
        assert_eq!(
            faults.action("F", Service::Sqs, "SendMessage"),
            Some(Action::Fail(1.0))
        );
        assert_eq!(faults.action("F", Service::Sqs, "ReceiveMessage"), None);
        assert_eq!(faults.action("F", Service::DynamoDb, "SendMessage"), None);
        assert_eq!(faults.action("G", Service::Sqs, "SendMessage"), None);
        let hits = (0..10_000).filter(|_| chance(0.2)).count();
        assert!((1_700..2_300).contains(&hits), "{hits} of 10,000 at 0.2");
    }
}
