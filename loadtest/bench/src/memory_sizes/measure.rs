//! The measuring of part 3: each binary under each size's CPU quota, cold starts then warm
//! invocations one at a time, and a stub that answers late as AWS does across a network.

use super::{FunctionSizes, Part3, Shape, SizeRow};
use crate::cold_start::{self, INVOKE_TIMEOUT, Subject};
use crate::runtime_api::RuntimeApi;
use crate::scenarios::Fixture;
use bytes::Bytes;
use local_cloud::cpu_quota::CpuQuota;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A second `aws-stub` that answers every call late, as DynamoDB and SQS across the network
/// do: Lambda bills that wait at the memory size's price. Stopped when dropped.
pub struct LateStub {
    url: String,
    _child: tokio::process::Child,
}

impl LateStub {
    pub async fn start(
        program: &Path,
        address: std::net::SocketAddr,
        latency_ms: f64,
        log: &Path,
    ) -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let output = std::fs::File::create(log)
            .with_context(|| format!("failed to create {}", log.display()))?;
        let mut child = tokio::process::Command::new(program)
            .args(["--address", &address.to_string()])
            .args(["--latency-ms", &latency_ms.to_string()])
            .stdin(std::process::Stdio::null())
            .stdout(output.try_clone()?)
            .stderr(output)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("failed to start {}", program.display()))?;
        let deadline = Instant::now() + std::time::Duration::from_secs(5);
        loop {
            if std::fs::read_to_string(log).is_ok_and(|text| text.contains("listening")) {
                break;
            }
            if let Some(status) = child.try_wait()? {
                anyhow::bail!("the late stub exited: {status} (see {})", log.display());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "the late stub did not listen within 5 s (see {})",
                log.display()
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        Ok(Self {
            url: format!("http://{address}"),
            _child: child,
        })
    }

    /// `subject` with its AWS calls sent here.
    pub fn serve(&self, subject: &Subject) -> Subject {
        let mut subject = subject.clone();
        for (name, value) in &mut subject.env {
            if name == "AWS_ENDPOINT_URL" {
                value.clone_from(&self.url);
            }
        }
        subject
    }
}

/// `subject`'s environment with Lambda's memory size variable at `memory_mb`.
fn at_size(subject: &Subject, memory_mb: u32) -> Subject {
    let mut subject = subject.clone();
    for (name, value) in &mut subject.env {
        if name == "AWS_LAMBDA_FUNCTION_MEMORY_SIZE" {
            *value = memory_mb.to_string();
        }
    }
    subject
}

/// Measures every subject at every size: `runs` cold starts each in a group of that size's
/// share, the last of which then serves `warmup` unmeasured and `invocations` measured
/// events, one at a time, back to back. `template_mb` has each function's `MemorySize`. With
/// `perf_dir` (`loadtest/bench.sh profile`), the process then serves as many invocations again
/// under `perf record`, into `<perf_dir>/<binary>-<MB>.data`.
#[expect(
    clippy::too_many_arguments,
    reason = "each is one setting of the measurement, named at the call"
)]
pub async fn measure(
    subjects: &[Subject],
    template_mb: &BTreeMap<String, u32>,
    quota: &CpuQuota,
    runtime: &RuntimeApi,
    sizes: &[u32],
    shape: Shape,
    fixture: &Fixture,
    work_dir: &Path,
    perf_dir: Option<&Path>,
) -> anyhow::Result<Part3> {
    let logs = work_dir.join("logs");
    std::fs::create_dir_all(&logs)?;
    let mut functions: Vec<FunctionSizes> = subjects
        .iter()
        .map(|subject| FunctionSizes {
            binary: subject.binary.clone(),
            template_mb: template_mb.get(&subject.binary).copied(),
            sizes: Vec::new(),
        })
        .collect();
    for &memory_mb in sizes {
        eprintln!("  {memory_mb} MB");
        for (subject, function) in subjects.iter().zip(&mut functions) {
            let subject = at_size(subject, memory_mb);
            let log = logs.join(format!("{}.log", subject.binary));
            let mut row = SizeRow {
                memory_mb,
                ..SizeRow::default()
            };
            for run in 0..shape.runs {
                // Declared before the child: removed once the child is stopped.
                let group = quota.group(&subject.binary, memory_mb)?;
                let mut session = runtime.session();
                let (mut child, started) =
                    cold_start::spawn(&subject, runtime, &log, Some(&group))?;
                match cold_start::init_time(&mut child, started, &mut session.signals).await {
                    Ok(init) => row.init_ms.push(init.as_secs_f64() * 1e3),
                    Err(err) => {
                        row.init_failures += 1;
                        row.first_error.get_or_insert(err);
                        cold_start::stop(child).await;
                        continue;
                    }
                }
                if run + 1 == shape.runs {
                    let perf = perf_dir
                        .map(|dir| dir.join(format!("{}-{memory_mb}.data", subject.binary)));
                    let pid = child.id();
                    serve(&subject, &session, pid, shape, fixture, &mut row, perf).await;
                }
                cold_start::stop(child).await;
            }
            function.sizes.push(row);
        }
    }
    Ok(Part3 {
        period_ms: quota.period().as_secs_f64() * 1e3,
        // The caller says whether its stub was late.
        aws_latency_ms: 0.0,
        sizes: sizes.to_vec(),
        runs: shape.runs,
        warmup: shape.warmup,
        invocations: shape.invocations,
        functions,
    })
}

/// The warm invocations of one process, timed from handing over the event to the response.
async fn serve(
    subject: &Subject,
    session: &crate::runtime_api::Session,
    pid: Option<u32>,
    shape: Shape,
    fixture: &Fixture,
    row: &mut SizeRow,
    perf: Option<PathBuf>,
) {
    let mut cpu_before = None;
    for i in 0..u64::from(shape.warmup + shape.invocations) {
        if i == u64::from(shape.warmup) {
            cpu_before = pid.and_then(process_cpu_ms);
        }
        let Some((event, expected)) = cold_start::event(subject, fixture, i) else {
            break;
        };
        let event = Bytes::from(event.to_string());
        let started = Instant::now();
        let outcome = session.invoke(event, INVOKE_TIMEOUT).await;
        let elapsed = started.elapsed();
        let verdict = match outcome {
            Ok(outcome) => cold_start::judge(subject, expected, outcome),
            Err(err) => Err(format!("{err:#}")),
        };
        match verdict {
            Ok(()) if i >= u64::from(shape.warmup) => {
                row.warm_ms.push(elapsed.as_secs_f64() * 1e3);
            }
            Ok(()) => {}
            Err(err) => {
                row.invocations_failed += 1;
                row.first_error.get_or_insert(err);
            }
        }
    }
    let cpu_after = pid.and_then(process_cpu_ms);
    if let (Some(before), Some(after)) = (cpu_before, cpu_after) {
        row.cpu_ms = Some(after - before);
    }
    // Recorded after the measured ones, as many again: perf's stack copies cost the process
    // CPU, which the figures above must not include.
    if let (Some(path), Some(pid)) = (&perf, pid) {
        match perf_record(pid, path).await {
            Ok(recorder) => {
                for i in 0..u64::from(shape.invocations) {
                    let Some((event, _)) = cold_start::event(subject, fixture, i) else {
                        break;
                    };
                    let _ = session
                        .invoke(Bytes::from(event.to_string()), INVOKE_TIMEOUT)
                        .await;
                }
                stop_perf(recorder).await;
            }
            Err(err) => {
                row.first_error.get_or_insert(format!("{err:#}"));
            }
        }
    }
}

/// `perf record` of `pid` with DWARF call stacks (the release profile keeps no frame
/// pointers), into `path`; ready once perf has attached.
async fn perf_record(pid: u32, path: &Path) -> anyhow::Result<tokio::process::Child> {
    let log = std::fs::File::create(path.with_extension("log"))?;
    let child = tokio::process::Command::new("perf")
        .args(["record", "-q", "-F", "1999", "--call-graph", "dwarf,32768"])
        .args(["-p", &pid.to_string(), "-o"])
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| anyhow::anyhow!("cannot run perf (Debian's linux-perf): {err}"))?;
    // perf has no readiness signal; attaching to one process takes well under this.
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(child)
}

/// Ends a recording the way Ctrl-C does, so perf writes its file out.
async fn stop_perf(mut recorder: tokio::process::Child) {
    if let Some(pid) = recorder.id() {
        let _ = tokio::process::Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(60), recorder.wait()).await;
}

/// CPU time of every thread of `pid` so far, ms, from each thread's `schedstat` (ns, unlike
/// `/proc/<pid>/stat`'s 10 ms ticks).
fn process_cpu_ms(pid: u32) -> Option<f64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut ns = 0u64;
    for task in tasks {
        let schedstat = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
        ns += schedstat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(ns as f64 / 1e6)
}
