//! Runs each function's real binary behind a local Lambda Runtime API and invokes it, one
//! invocation at a time per instance, as Lambda does.
//!
//! # Layout
//!
//! - this module: the public API ([`Runtime`], [`FunctionHandle`], [`InvokeError`]) and the
//!   per-function invocation queue that the instances' `/next` take from.
//! - `instance`: one instance's process: start, init, timeouts, crashes, restarts.
//! - `api`: the Runtime API endpoints one process talks to (a listener per process).
//! - `console`: the prefixed function output and the per-invocation lines.
//! - `log_filter`: Lambda's log-level filter on that output, for a function whose
//!   `LoggingConfig` asks for the JSON format.
//! - `ids`: request ids without a syscall each.

mod api;
mod console;
pub(crate) mod ids;
mod instance;
pub mod log_filter;

use crate::cpu_quota::CpuQuota;
use crate::dashboard::{Dashboard, FunctionStats, Outcome, now_second};
use crate::faults::Faults;
use crate::model::FunctionSpec;
use anyhow::{Context as _, bail};
use bytes::Bytes;
use http::HeaderValue;
use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// The account in the ARNs the functions see, unless `base_env` has `AWS_ACCOUNT_ID`.
pub(crate) const DEFAULT_ACCOUNT_ID: &str = "123456789012";

/// Variables of the runner's own environment that every function keeps; everything else in
/// a function's environment comes from the template and `base_env`, as in Lambda.
const INHERITED: &[&str] = &["PATH", "HOME", "RUST_LOG", "RUST_BACKTRACE"];

/// How to run the functions.
#[derive(Clone, Debug)]
pub struct RuntimeOptions {
    /// Where the built function binaries are (`target/debug` or `target/release`).
    pub binaries_dir: PathBuf,
    /// Instances per function, each running one invocation at a time; capped by the
    /// function's `ReservedConcurrentExecutions`.
    pub instances: u32,
    /// Endpoints, region, credentials, `REDIS_URL`...: given to every function.
    pub base_env: BTreeMap<String, String>,
    /// Print one line per invocation (function, trigger, duration, result). Off for
    /// benchmarks.
    pub log_invocations: bool,
    /// Variables that one function gets on top of its template environment, by function
    /// name: e.g. the endpoint of its fault proxy.
    pub env_overrides: BTreeMap<String, BTreeMap<String, String>>,
    /// The live fault switches; the runtime consults the crash switch.
    pub faults: Arc<Faults>,
    /// Where every invocation and every metric line the functions print is recorded.
    pub dashboard: Arc<Dashboard>,
    /// Lambda's CPU share: each process runs in a cgroup of its own with the share of its
    /// function's `MemorySize`. None: the processes share the machine freely.
    pub cpu_quota: Option<Arc<CpuQuota>>,
}

/// Why an invocation has no response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvokeError {
    /// The function reported an error (`POST .../error`).
    #[error("the function failed: {error_type}: {error_message}")]
    Function {
        error_type: String,
        error_message: String,
    },
    /// No answer within the function's timeout: the instance was killed and restarted.
    #[error("Task timed out after {:.2} seconds", .0.as_secs_f64())]
    Timeout(Duration),
    /// The process died mid-invocation: the instance was restarted.
    #[error("the function's process crashed: {0}")]
    Crashed(String),
    /// The function cannot start.
    #[error("the function failed to initialize: {0}")]
    InitFailed(String),
}

pub(crate) type Reply = oneshot::Sender<Result<Bytes, InvokeError>>;

/// An invocation waiting for an instance.
pub(crate) struct Invocation {
    pub(crate) payload: Bytes,
    pub(crate) reply: Reply,
}

/// What a function's handles and instances share.
pub(crate) struct FunctionShared {
    pub(crate) name: Box<str>,
    pub(crate) timeout: Duration,
    instances: u32,
    /// `arn:aws:lambda:{region}:{account}:function:{name}`, ready for the `/next` header.
    pub(crate) arn: HeaderValue,
    /// Pending invocations; every instance's `/next` takes from it.
    pub(crate) queue: async_channel::Receiver<Invocation>,
    sender: async_channel::Sender<Invocation>,
    log_invocations: bool,
    invocations: AtomicU64,
    pub(crate) faults: Arc<Faults>,
    /// The dashboard's counts of this function.
    stats: Arc<FunctionStats>,
    /// Reads the EMF lines of its output.
    pub(crate) dashboard: Arc<Dashboard>,
}

impl FunctionShared {
    /// Puts back an invocation that no process started: another instance will take it.
    pub(crate) fn requeue(&self, invocation: Invocation) {
        // Fails only when shutting down; dropping the reply then answers `Crashed`.
        let _ = self.sender.try_send(invocation);
    }
}

/// Every function's instances. Dropping it stops them too; [`Runtime::shutdown`] also waits.
pub struct Runtime {
    functions: HashMap<String, FunctionHandle>,
    supervisors: Vec<JoinHandle<()>>,
    stop: watch::Sender<bool>,
}

impl Runtime {
    /// Starts every instance of every function and waits until each has finished init (its
    /// first poll of `/next`) or failed it. A function whose init fails still gets a handle:
    /// its invocations answer [`InvokeError::InitFailed`]. A missing binary is an error.
    pub async fn start(
        functions: &[FunctionSpec],
        options: RuntimeOptions,
    ) -> anyhow::Result<Runtime> {
        let env = &options.base_env;
        let region = env
            .get("AWS_REGION")
            .or_else(|| env.get("AWS_DEFAULT_REGION"))
            .map_or("us-east-1", String::as_str);
        let account = env
            .get("AWS_ACCOUNT_ID")
            .map_or(DEFAULT_ACCOUNT_ID, String::as_str);
        // Lambda's working directory and LAMBDA_TASK_ROOT hold the bootstrap binary.
        let task_root = std::path::absolute(&options.binaries_dir).with_context(|| {
            format!(
                "invalid binaries directory {}",
                options.binaries_dir.display()
            )
        })?;
        let inherited: Vec<(String, String)> = INHERITED
            .iter()
            .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
            .collect();

        let mut seen = std::collections::HashSet::new();
        for spec in functions {
            if !seen.insert(spec.name.as_str()) {
                bail!("two functions are named {}", spec.name);
            }
            let program = task_root.join(&spec.binary);
            if !program.is_file() {
                bail!(
                    "function {}: its binary {} does not exist; build it first \
                     (cargo build --bin {})",
                    spec.name,
                    program.display(),
                    spec.binary
                );
            }
        }

        let (stop, stop_rx) = watch::channel(false);
        let mut handles = HashMap::new();
        let mut supervisors = Vec::new();
        let mut inits = Vec::new();
        for spec in functions {
            // A reserved concurrency of 0 throttles every invocation in Lambda; locally the
            // function still gets one instance, as the event sources assume.
            let instances = options
                .instances
                .min(spec.reserved_concurrency.unwrap_or(u32::MAX))
                .max(1);
            let arn = format!("arn:aws:lambda:{region}:{account}:function:{}", spec.name);
            let (sender, queue) = async_channel::unbounded();
            let shared = Arc::new(FunctionShared {
                name: spec.name.clone().into(),
                timeout: spec.timeout,
                instances,
                arn: HeaderValue::try_from(arn)
                    .with_context(|| format!("function name {:?} is not valid", spec.name))?,
                queue,
                sender,
                log_invocations: options.log_invocations,
                invocations: AtomicU64::new(0),
                faults: options.faults.clone(),
                stats: options.dashboard.function(&spec.name),
                dashboard: options.dashboard.clone(),
            });
            let env = Arc::new(function_env(spec, &options, &inherited, region, &task_root));
            for index in 1..=instances {
                let (first_init, init) = oneshot::channel();
                let instance = instance::InstanceSpec {
                    function: shared.clone(),
                    index,
                    program: task_root.join(&spec.binary),
                    working_dir: task_root.clone(),
                    env: env.clone(),
                    prefix: format!("[{}#{index}] ", spec.name).into_bytes().into(),
                    log_filter: spec.log_filter,
                    memory_mb: spec.memory_mb,
                    cpu_quota: options.cpu_quota.clone(),
                };
                supervisors.push(tokio::spawn(instance::supervise(
                    instance,
                    stop_rx.clone(),
                    first_init,
                )));
                inits.push(init);
            }
            handles.insert(spec.name.clone(), FunctionHandle { shared });
        }
        for init in inits {
            let _ = init.await;
        }
        Ok(Runtime {
            functions: handles,
            supervisors,
            stop,
        })
    }

    /// The function named `name` (its `FunctionSpec.name`).
    pub fn function(&self, name: &str) -> Option<FunctionHandle> {
        self.functions.get(name).cloned()
    }

    /// Kills every process it started and waits for them. Invocations still queued or in
    /// flight answer [`InvokeError::Crashed`].
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for handle in self.functions.values() {
            handle.shared.sender.close();
        }
        for supervisor in self.supervisors {
            let _ = supervisor.await;
        }
        for handle in self.functions.values() {
            // Dropping them answers their invokers.
            while handle.shared.queue.try_recv().is_ok() {}
        }
        console::console().flush();
    }
}

/// The environment of a function's processes, but for the per-process variables.
fn function_env(
    spec: &FunctionSpec,
    options: &RuntimeOptions,
    inherited: &[(String, String)],
    region: &str,
    task_root: &std::path::Path,
) -> Vec<(String, String)> {
    let mut env: BTreeMap<String, String> = inherited.iter().cloned().collect();
    // Lambda always sets these; the SDKs need them.
    env.insert("AWS_REGION".into(), region.into());
    env.insert("AWS_DEFAULT_REGION".into(), region.into());
    env.extend(spec.environment.iter().map(|(k, v)| (k.clone(), v.clone())));
    // The local endpoints win over the template, which declares AWS_ENDPOINT_URL and REDIS_URL
    // empty for AWS: as `sam local --env-vars` overrides what the template declares.
    env.extend(options.base_env.iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Some(overrides) = options.env_overrides.get(&spec.name) {
        env.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    // Reserved: the template cannot override them, as in Lambda.
    let reserved = [
        ("AWS_LAMBDA_FUNCTION_NAME", spec.name.clone()),
        (
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
            spec.memory_mb.to_string(),
        ),
        ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".into()),
        (
            "AWS_LAMBDA_LOG_GROUP_NAME",
            format!("/aws/lambda/{}", spec.name),
        ),
        ("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand".into()),
        ("_HANDLER", spec.handler.clone()),
        ("LAMBDA_TASK_ROOT", task_root.display().to_string()),
    ];
    env.extend(reserved.into_iter().map(|(k, v)| (k.to_owned(), v)));
    // Lambda's advanced logging controls, as Lambda passes them to a custom runtime: the
    // JSON format and the level its filter applies (reserved too).
    for name in ["AWS_LAMBDA_LOG_FORMAT", "AWS_LAMBDA_LOG_LEVEL"] {
        env.remove(name);
    }
    if let Some(level) = spec.log_filter {
        env.insert("AWS_LAMBDA_LOG_FORMAT".into(), "JSON".into());
        env.insert("AWS_LAMBDA_LOG_LEVEL".into(), level.as_str().into());
    }
    env.into_iter().collect()
}

/// A function to invoke. Cheap to clone.
#[derive(Clone)]
pub struct FunctionHandle {
    shared: Arc<FunctionShared>,
}

impl std::fmt::Debug for FunctionHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionHandle")
            .field("name", &self.shared.name)
            .field("instances", &self.shared.instances)
            .finish_non_exhaustive()
    }
}

impl FunctionHandle {
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    pub fn timeout(&self) -> Duration {
        self.shared.timeout
    }

    /// How many instances run it (the runner's `instances`, capped by its reserved
    /// concurrency).
    pub fn instances(&self) -> u32 {
        self.shared.instances
    }

    /// How many invocations have been answered so far.
    pub fn invocations(&self) -> u64 {
        self.shared.invocations.load(Ordering::Relaxed)
    }

    /// One invocation: waits for a free instance, then for its answer (at most the function's
    /// timeout once it started). `trigger` names what invoked it in the invocation line, e.g.
    /// `GET /items/{itemId}`, `sqs WorkQueue`, `schedule EverySecond`.
    pub async fn invoke(&self, trigger: &str, payload: Bytes) -> Result<Bytes, InvokeError> {
        let started = Instant::now();
        let (reply, answer) = oneshot::channel();
        let result = match self.shared.sender.try_send(Invocation { payload, reply }) {
            Ok(()) => answer.await.unwrap_or_else(|_| {
                Err(InvokeError::Crashed(
                    "the local runtime shut down before answering".into(),
                ))
            }),
            Err(_) => Err(InvokeError::Crashed(
                "the local runtime is shut down".into(),
            )),
        };
        self.shared.invocations.fetch_add(1, Ordering::Relaxed);
        let elapsed = started.elapsed();
        let outcome = match result {
            Ok(_) => Outcome::Ok,
            Err(_) => Outcome::Error,
        };
        self.shared.stats.invoked(now_second(), elapsed, outcome);
        if self.shared.log_invocations {
            log_invocation(&self.shared.name, trigger, elapsed, &result);
        }
        result
    }

    /// A request for it that its route's throttling turned away (the dashboard counts them).
    pub(crate) fn throttled(&self) {
        self.shared.stats.throttled(now_second());
    }
}

fn log_invocation(
    name: &str,
    trigger: &str,
    elapsed: Duration,
    result: &Result<Bytes, InvokeError>,
) {
    let millis = elapsed.as_secs_f64() * 1000.0;
    console::console().append(|out| {
        let _ = write!(out, "{name} <- {trigger}: ");
        let _ = match result {
            Ok(_) => write!(out, "ok"),
            // The message is what a developer needs: the client only sees a 500.
            Err(InvokeError::Function {
                error_type,
                error_message,
            }) => write!(
                out,
                "error: {error_type}: {}",
                first_line(error_message, 300)
            ),
            Err(InvokeError::Timeout(_)) => write!(out, "timeout"),
            Err(InvokeError::Crashed(_)) => write!(out, "crashed"),
            Err(InvokeError::InitFailed(message)) => {
                write!(out, "init failed: {}", first_line(message, 300))
            }
        };
        let _ = writeln!(out, " ({millis:.2} ms)");
    });
}

/// The first line of `text`, at most `max` bytes of it.
fn first_line(text: &str, max: usize) -> &str {
    let line = text.lines().next().unwrap_or_default();
    if line.len() <= max {
        return line;
    }
    let mut end = max;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}
