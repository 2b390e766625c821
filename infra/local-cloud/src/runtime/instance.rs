//! One instance of a function: its process, started, watched, timed and restarted the way
//! Lambda treats an execution environment.
//!
//! A process that dies mid-invocation fails that invocation (`Crashed`) and is replaced at
//! once; one that outlives its deadline is killed (`Timeout`) and replaced. A process that
//! cannot finish init is retried a few times with a backoff, then only when an invocation
//! arrives, which then fails with `InitFailed` if init fails again: never a busy loop, and
//! never an invocation left waiting.

use super::api::{self, Generation, Init};
use super::console::{self, note};
use super::{FunctionShared, Invocation, InvokeError, ids};
use crate::cpu_quota::{CpuQuota, Group};
use std::io;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

/// Lambda's limit on the init phase.
const INIT_TIMEOUT: Duration = Duration::from_secs(10);
/// Init failures retried on their own (with a backoff) before retrying only on demand.
const EAGER_RETRIES: u32 = 3;
/// A process that exits by itself sooner than this, holding no invocation, counts as a
/// failed start for the backoff.
const MIN_HEALTHY_LIFE: Duration = Duration::from_secs(1);

/// What an instance runs.
pub(crate) struct InstanceSpec {
    pub(crate) function: Arc<FunctionShared>,
    /// 1-based, as printed.
    pub(crate) index: u32,
    pub(crate) program: PathBuf,
    pub(crate) working_dir: PathBuf,
    /// The whole environment but the per-process variables.
    pub(crate) env: Arc<Vec<(String, String)>>,
    /// `[Function#n] `, before each line the process prints.
    pub(crate) prefix: Arc<[u8]>,
    /// Lambda's log-level filter on what the process prints ([`FunctionSpec::log_filter`]).
    ///
    /// [`FunctionSpec::log_filter`]: crate::model::FunctionSpec::log_filter
    pub(crate) log_filter: Option<crate::model::LogLevel>,
    /// The function's `MemorySize`, for its CPU share.
    pub(crate) memory_mb: u32,
    /// Where each process gets its CPU-share cgroup, when Lambda's share is enforced.
    pub(crate) cpu_quota: Option<Arc<CpuQuota>>,
}

enum End {
    Stopped,
    InitFailed,
    /// The process is gone after init. `spontaneous`: by itself, soon, holding nothing.
    Exited {
        spontaneous: bool,
    },
}

/// Runs the instance until the runtime stops. `first_init` is answered once the first
/// process has finished init or failed it.
pub(crate) async fn supervise(
    spec: InstanceSpec,
    mut stop: watch::Receiver<bool>,
    first_init: oneshot::Sender<()>,
) {
    let mut first_init = Some(first_init);
    let mut failures = 0u32;
    let mut pending = None;
    loop {
        match run_process(&spec, pending.take(), &mut stop, &mut first_init).await {
            End::Stopped => break,
            End::Exited { spontaneous: false } => failures = 0,
            End::Exited { spontaneous: true } | End::InitFailed => failures += 1,
        }
        if failures == 0 {
            continue;
        }
        if failures <= EAGER_RETRIES {
            let backoff = Duration::from_millis(100 << (failures - 1));
            tokio::select! {
                () = stopped(&mut stop) => break,
                () = tokio::time::sleep(backoff) => {}
            }
        } else {
            if failures == EAGER_RETRIES + 1 {
                note(
                    &spec.prefix,
                    format_args!(
                        "failed to start {EAGER_RETRIES} times in a row; \
                         next attempt when an invocation arrives"
                    ),
                );
            }
            tokio::select! {
                () = stopped(&mut stop) => break,
                invocation = spec.function.queue.recv() => match invocation {
                    Ok(invocation) => pending = Some(invocation),
                    Err(_) => break,
                },
            }
        }
    }
}

/// Resolves once the runtime stops (or is dropped).
pub(crate) async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopping| *stopping).await;
}

/// Aborts the Runtime API server of a process (and its connections) when the process is done.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One process, from start to exit.
async fn run_process(
    spec: &InstanceSpec,
    pending: Option<Invocation>,
    stop: &mut watch::Receiver<bool>,
    first_init: &mut Option<oneshot::Sender<()>>,
) -> End {
    let started = Instant::now();
    let generation = Arc::new(Generation::new(spec.function.clone(), pending));
    let listener = match TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await {
        Ok(listener) => listener,
        Err(error) => {
            let message = format!("cannot listen for its Runtime API: {error}");
            return fail_init(spec, &generation, first_init, &message);
        }
    };
    let port = match listener.local_addr() {
        Ok(address) => address.port(),
        Err(error) => {
            let message = format!("cannot listen for its Runtime API: {error}");
            return fail_init(spec, &generation, first_init, &message);
        }
    };
    let _api = AbortOnDrop(tokio::spawn(api::serve(listener, generation.clone())));
    // Declared before the child, so dropped after it: every path below has waited for the
    // process by then, and the group can go.
    let group = match &spec.cpu_quota {
        Some(quota) => {
            let label = format!("{}-{}", spec.function.name, spec.index);
            match quota.group(&label, spec.memory_mb) {
                Ok(group) => Some(group),
                Err(error) => return fail_init(spec, &generation, first_init, &error.to_string()),
            }
        }
        None => None,
    };
    let mut child = match spawn(spec, port, group.as_ref()) {
        Ok(child) => child,
        Err(error) => {
            let message = format!("cannot start {}: {error}", spec.program.display());
            return fail_init(spec, &generation, first_init, &message);
        }
    };
    if let Some(stdout) = child.stdout.take() {
        // EMF lines go to stdout, as in Lambda, where CloudWatch Logs reads them.
        let metrics = console::MetricLines {
            dashboard: spec.function.dashboard.clone(),
            function: spec.function.name.clone(),
        };
        tokio::spawn(console::pump(
            stdout,
            spec.prefix.clone(),
            Some(metrics),
            spec.log_filter,
        ));
    }
    if let Some(stderr) = child.stderr.take() {
        // Lambda filters what goes to stderr as it does stdout.
        tokio::spawn(console::pump(
            stderr,
            spec.prefix.clone(),
            None,
            spec.log_filter,
        ));
    }

    let init_timeout = tokio::time::sleep(INIT_TIMEOUT);
    tokio::pin!(init_timeout);
    let init = loop {
        tokio::select! {
            biased;
            () = stopped(stop) => return stop_now(&mut child, &generation).await,
            status = child.wait() => {
                break match generation.init() {
                    // It may have reported why before exiting.
                    Some(Init::Failed(reported)) => Err(reported),
                    // Init finished, then it died: the serving loop below sees the same exit
                    // (`wait` keeps answering it) and fails what it held.
                    Some(Init::Ready) => Ok(()),
                    None => Err(format!("exited during init ({})", describe(status))),
                };
            }
            () = generation.changed.notified() => match generation.init() {
                Some(Init::Ready) => break Ok(()),
                Some(Init::Failed(reported)) => break Err(reported),
                None => {}
            },
            () = &mut init_timeout => {
                break Err(format!("init did not finish within {} s", INIT_TIMEOUT.as_secs()));
            }
        }
    };
    if let Err(message) = init {
        kill(&mut child).await;
        return fail_init(spec, &generation, first_init, &message);
    }
    if let Some(first_init) = first_init.take() {
        let _ = first_init.send(());
    }

    // The deadline of the invocation in flight; re-armed whenever a new one starts.
    let timer = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(timer);
    let mut armed = None;
    // The crash fault switch: when this invocation's process is to be killed.
    let crash_timer = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(crash_timer);
    let mut crash_armed = None;
    loop {
        if let Some((id, deadline)) = generation.in_flight()
            && armed != Some(id)
        {
            armed = Some(id);
            timer.as_mut().reset(deadline.into());
            if let Some(after) = spec.function.faults.crash_after(&spec.function.name) {
                crash_armed = Some(id);
                crash_timer.as_mut().reset((Instant::now() + after).into());
            }
        }
        tokio::select! {
            biased;
            () = stopped(stop) => return stop_now(&mut child, &generation).await,
            status = child.wait() => {
                let (in_flight, pending) = generation.close();
                if let Some(pending) = pending {
                    spec.function.requeue(pending);
                }
                let status = describe(status);
                return match in_flight {
                    Some(in_flight) => {
                        note(
                            &spec.prefix,
                            format_args!("exited mid-invocation ({status}); restarting"),
                        );
                        let _ = in_flight.reply.send(Err(InvokeError::Crashed(format!(
                            "{}#{} exited mid-invocation ({status})",
                            spec.function.name, spec.index
                        ))));
                        End::Exited { spontaneous: false }
                    }
                    None => {
                        note(&spec.prefix, format_args!("exited ({status}); restarting"));
                        End::Exited {
                            spontaneous: started.elapsed() < MIN_HEALTHY_LIFE,
                        }
                    }
                };
            }
            () = generation.changed.notified() => {}
            () = &mut crash_timer, if crash_armed.is_some() => {
                // Still the same invocation: kill the process under it, as a crash would.
                if crash_armed.take().is_some_and(|id| generation.in_flight().is_some_and(|(now, _)| now == id)) {
                    note(&spec.prefix, format_args!("fault switch: killing the process mid-invocation"));
                    spec.function.faults.record_kill(&spec.function.name);
                    let _ = child.start_kill();
                }
            }
            () = &mut timer, if armed.is_some() => {
                let Some(id) = armed.take() else { continue };
                // Gone from in flight means it answered in time.
                if let Some(in_flight) = generation.take_in_flight(id) {
                    let timeout = spec.function.timeout;
                    let _ = in_flight.reply.send(Err(InvokeError::Timeout(timeout)));
                    note(
                        &spec.prefix,
                        format_args!(
                            "Task timed out after {:.2} seconds; restarting",
                            timeout.as_secs_f64()
                        ),
                    );
                    kill(&mut child).await;
                    let (_, pending) = generation.close();
                    if let Some(pending) = pending {
                        spec.function.requeue(pending);
                    }
                    return End::Exited { spontaneous: false };
                }
            }
        }
    }
}

fn fail_init(
    spec: &InstanceSpec,
    generation: &Generation,
    first_init: &mut Option<oneshot::Sender<()>>,
    message: &str,
) -> End {
    note(&spec.prefix, format_args!("init failed: {message}"));
    let (in_flight, pending) = generation.close();
    if let Some(in_flight) = in_flight {
        // It polled `/next` and died before init was seen to finish.
        let _ = in_flight.reply.send(Err(InvokeError::Crashed(format!(
            "{}#{}: {message}",
            spec.function.name, spec.index
        ))));
    }
    if let Some(pending) = pending {
        let _ = pending.reply.send(Err(InvokeError::InitFailed(format!(
            "{}: {message}",
            spec.function.name
        ))));
    }
    if let Some(first_init) = first_init.take() {
        let _ = first_init.send(());
    }
    End::InitFailed
}

/// The runtime is stopping: whatever the process held fails now rather than never.
fn abandon(generation: &Generation) {
    let (in_flight, _pending) = generation.close();
    if let Some(in_flight) = in_flight {
        let _ = in_flight.reply.send(Err(InvokeError::Crashed(
            "the local runtime shut down mid-invocation".into(),
        )));
    }
}

fn spawn(spec: &InstanceSpec, port: u16, group: Option<&Group>) -> io::Result<Child> {
    let mut command = Command::new(&spec.program);
    command
        .env_clear()
        .envs(spec.env.iter().map(|(name, value)| (name, value)))
        .env("AWS_LAMBDA_RUNTIME_API", format!("127.0.0.1:{port}"))
        .env("AWS_LAMBDA_LOG_STREAM_NAME", log_stream_name())
        .current_dir(&spec.working_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Ctrl-C in the terminal goes to the runner only, which stops the functions in order
        // instead of watching them all die and restarting them.
        .process_group(0)
        .kill_on_drop(true);
    if let Some(group) = group {
        group.confine(command.as_std_mut());
    }
    command.spawn()
}

/// Lambda's `YYYY/MM/DD/[$LATEST]<32 hex>`: a new stream per execution environment.
fn log_stream_name() -> String {
    let today = time::OffsetDateTime::now_utc().date();
    format!(
        "{:04}/{:02}/{:02}/[$LATEST]{:032x}",
        today.year(),
        u8::from(today.month()),
        today.day(),
        ids::next_u128()
    )
}

/// The runner stops: the process is killed and what it held is failed.
async fn stop_now(child: &mut Child, generation: &Generation) -> End {
    kill(child).await;
    abandon(generation);
    End::Stopped
}

async fn kill(child: &mut Child) {
    let _ = child.start_kill();
    let _ = child.wait().await;
}

fn describe(status: io::Result<ExitStatus>) -> String {
    match status {
        Ok(status) => status.to_string(),
        Err(error) => format!("unknown status: {error}"),
    }
}
