//! Part 1: every function's cold start (spawn to its first poll of the Runtime API, SDK
//! clients built), its stripped size, and its peak memory after serving invocations.
//!
//! Processes run one at a time against [`RuntimeApi`], with the environment the runner would
//! give them (the template's variables, Lambda's reserved ones, the stub's endpoint and
//! Redis). Runs are interleaved, every function once per round in a rotating order, so that
//! the machine's drift spreads over all of them alike.

use crate::runtime_api::{Outcome, RuntimeApi, Signal};
use crate::scenarios::{self, Fixture};
use anyhow::Context;
use bytes::Bytes;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Longest an init may take before it counts as failed.
const INIT_TIMEOUT: Duration = Duration::from_secs(10);
pub(crate) const INVOKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A binary to measure and the environment it runs with.
#[derive(Clone, Debug)]
pub struct Subject {
    pub binary: String,
    pub program: PathBuf,
    pub env: Vec<(String, String)>,
    /// Has an HTTP route (gets API Gateway events), else gets event batches.
    pub http: bool,
}

/// What part 1 measured of one binary.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ColdStart {
    pub binary: String,
    pub init_ms: Vec<f64>,
    /// Per cold start: of its init, the ms its threads ran on a CPU (the rest it waited: on
    /// Redis, on the scheduler), read when it polled.
    #[serde(default)]
    pub init_cpu_ms: Vec<f64>,
    /// Per cold start: the page faults of its init (the kernel mapping in the binary, the
    /// heap and the stacks as they are first touched).
    #[serde(default)]
    pub init_faults: Vec<f64>,
    pub init_failures: u32,
    pub size_bytes: u64,
    /// After `strip` of a copy; `None` where `strip` is missing.
    pub stripped_bytes: Option<u64>,
    pub vm_hwm_kb: Option<u64>,
    pub invocations_ok: u32,
    pub invocations_failed: u32,
    pub first_error: Option<String>,
}

impl ColdStart {
    pub fn percentile(&self, p: f64) -> f64 {
        percentile(&self.init_ms, p)
    }

    /// The median of the init's ms on a CPU, page faults and ms off it; `None` from a run
    /// that did not read them.
    pub fn init_split(&self) -> Option<InitSplit> {
        if self.init_cpu_ms.is_empty() || self.init_cpu_ms.len() != self.init_ms.len() {
            return None;
        }
        let waits: Vec<f64> = self
            .init_ms
            .iter()
            .zip(&self.init_cpu_ms)
            .map(|(init, cpu)| (init - cpu).max(0.0))
            .collect();
        Some(InitSplit {
            cpu_ms: percentile(&self.init_cpu_ms, 0.5),
            faults: percentile(&self.init_faults, 0.5),
            wait_ms: percentile(&waits, 0.5),
        })
    }
}

/// Where a cold start's time went (medians over its runs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InitSplit {
    pub cpu_ms: f64,
    pub faults: f64,
    pub wait_ms: f64,
}

/// A process's time on a CPU so far (ms, every live thread's `schedstat`) and its minor page
/// faults (`/proc/<pid>/stat`), read while it waits for its first event.
fn init_counters(pid: u32) -> Option<(f64, f64)> {
    let mut cpu_ns = 0u64;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        // A thread that ended since the listing is skipped, not the whole reading.
        let Ok(schedstat) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        cpu_ns += schedstat.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name in brackets: state, ppid, pgrp, session, tty_nr, tpgid, flags,
    // minflt.
    let minflt: u64 = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(7)?
        .parse()
        .ok()?;
    Some((cpu_ns as f64 / 1e6, minflt as f64))
}

/// The `p` quantile (0 to 1) of `values` by the project's percentiles (the nearest value, within
/// 0.05 %); not a number when there are none, which the report writes as such.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    let percentiles: percentiles::Percentiles = values.iter().copied().collect();
    percentiles.value_at(p).unwrap_or(f64::NAN)
}

/// `VmHWM` (peak resident set) of a process, in kB.
pub fn vm_hwm_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
}

fn stripped_size(program: &Path, scratch: &Path) -> Option<u64> {
    let copy = scratch.join("stripped");
    let status = std::process::Command::new("strip")
        .arg("-o")
        .arg(&copy)
        .arg(program)
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let size = status
        .success()
        .then(|| std::fs::metadata(&copy).ok().map(|m| m.len()))
        .flatten();
    let _ = std::fs::remove_file(&copy);
    size
}

/// Starts `subject` against `runtime`; in `group` (Lambda's CPU share) when given, from its
/// first instruction.
pub(crate) fn spawn(
    subject: &Subject,
    runtime: &RuntimeApi,
    log: &Path,
    group: Option<&local_cloud::cpu_quota::Group>,
) -> anyhow::Result<(tokio::process::Child, Instant)> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("failed to open {}", log.display()))?;
    let mut command = tokio::process::Command::new(&subject.program);
    command
        .env_clear()
        .envs(subject.env.iter().map(|(k, v)| (k, v)))
        .env("AWS_LAMBDA_RUNTIME_API", runtime.address.to_string())
        .env(
            "AWS_LAMBDA_LOG_STREAM_NAME",
            format!("2026/11/30/[$LATEST]{}", uuid::Uuid::new_v4().simple()),
        )
        .current_dir(subject.program.parent().unwrap_or(Path::new(".")))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true);
    if let Some(group) = group {
        group.confine(command.as_std_mut());
    }
    let started = Instant::now();
    let child = command
        .spawn()
        .with_context(|| format!("failed to start {}", subject.program.display()))?;
    Ok((child, started))
}

/// Waits for the first poll; the init time, or why there is none.
pub(crate) async fn init_time(
    child: &mut tokio::process::Child,
    started: Instant,
    signals: &mut tokio::sync::mpsc::UnboundedReceiver<Signal>,
) -> Result<Duration, String> {
    tokio::select! {
        signal = tokio::time::timeout(INIT_TIMEOUT, signals.recv()) => match signal {
            Ok(Some(Signal::Polled(at))) => Ok(at.duration_since(started)),
            Ok(Some(Signal::InitFailed(body))) => {
                Err(format!("init error: {}", String::from_utf8_lossy(&body)))
            }
            Ok(None) => Err("the runtime API stopped".to_owned()),
            Err(_) => Err(format!("no poll within {INIT_TIMEOUT:?}")),
        },
        status = child.wait() => Err(format!("exited during init: {status:?}")),
    }
}

pub(crate) async fn stop(mut child: tokio::process::Child) {
    let _ = child.start_kill();
    let _ = child.wait().await;
}

/// Whether one invocation's answer is the function's happy path.
pub(crate) fn judge(subject: &Subject, expected: u16, outcome: Outcome) -> Result<(), String> {
    match outcome {
        Outcome::Error(body) => Err(format!(
            "function error: {}",
            String::from_utf8_lossy(&body)
        )),
        Outcome::Response(body) => {
            let answer: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let ok = if subject.http {
                answer.get("statusCode").and_then(serde_json::Value::as_u64)
                    == Some(u64::from(expected))
            } else {
                scenarios::batch_succeeded(&answer)
            };
            if ok {
                Ok(())
            } else {
                Err(format!(
                    "unexpected answer: {}",
                    String::from_utf8_lossy(&body)
                        .chars()
                        .take(300)
                        .collect::<String>()
                ))
            }
        }
    }
}

/// Event `i` of `subject`'s happy path and the HTTP status it answers (0 for a batch);
/// `None` for a binary that has no scenario.
pub(crate) fn event(
    subject: &Subject,
    fixture: &Fixture,
    i: u64,
) -> Option<(serde_json::Value, u16)> {
    if subject.http {
        scenarios::http_call(&subject.binary, fixture, i).map(|call| (call.event(), call.expected))
    } else {
        scenarios::event_batch(&subject.binary, fixture, i).map(|event| (event, 0))
    }
}

/// Measures every subject: `runs` cold starts each, then one process each that serves
/// `invocations` events before its peak memory is read.
pub async fn measure(
    subjects: &[Subject],
    runtime: &RuntimeApi,
    runs: u32,
    invocations: u32,
    fixture: &Fixture,
    work_dir: &Path,
) -> anyhow::Result<Vec<ColdStart>> {
    let logs = work_dir.join("logs");
    std::fs::create_dir_all(&logs)?;
    let mut results: BTreeMap<String, ColdStart> = subjects
        .iter()
        .map(|subject| {
            let size = std::fs::metadata(&subject.program).map_or(0, |m| m.len());
            let result = ColdStart {
                binary: subject.binary.clone(),
                size_bytes: size,
                stripped_bytes: stripped_size(&subject.program, work_dir),
                ..ColdStart::default()
            };
            (subject.binary.clone(), result)
        })
        .collect();

    for run in 0..runs as usize {
        eprintln!("  cold starts: round {}/{runs}", run + 1);
        for k in 0..subjects.len() {
            let subject = &subjects[(run + k) % subjects.len()];
            let result = results.get_mut(&subject.binary).expect("every subject");
            let mut session = runtime.session();
            let log = logs.join(format!("{}.log", subject.binary));
            let (mut child, started) = spawn(subject, runtime, &log, None)?;
            match init_time(&mut child, started, &mut session.signals).await {
                Ok(init) => {
                    result.init_ms.push(init.as_secs_f64() * 1e3);
                    if let Some((cpu_ms, faults)) = child.id().and_then(init_counters) {
                        result.init_cpu_ms.push(cpu_ms);
                        result.init_faults.push(faults);
                    }
                }
                Err(err) => {
                    result.init_failures += 1;
                    result.first_error.get_or_insert(err);
                }
            }
            stop(child).await;
        }
    }
    eprintln!("  peak memory after {invocations} invocations each");
    for subject in subjects {
        let result = results.get_mut(&subject.binary).expect("every subject");
        let mut session = runtime.session();
        let log = logs.join(format!("{}.log", subject.binary));
        let (mut child, started) = spawn(subject, runtime, &log, None)?;
        if let Err(err) = init_time(&mut child, started, &mut session.signals).await {
            result.first_error.get_or_insert(err);
            stop(child).await;
            continue;
        }
        for i in 0..u64::from(invocations) {
            let Some((event, expected)) = event(subject, fixture, i) else {
                break;
            };
            let verdict = match session
                .invoke(Bytes::from(event.to_string()), INVOKE_TIMEOUT)
                .await
            {
                Ok(outcome) => judge(subject, expected, outcome),
                Err(err) => Err(format!("{err:#}")),
            };
            match verdict {
                Ok(()) => result.invocations_ok += 1,
                Err(err) => {
                    result.invocations_failed += 1;
                    result.first_error.get_or_insert(err);
                }
            }
        }
        result.vm_hwm_kb = child.id().and_then(vm_hwm_kb);
        stop(child).await;
    }
    Ok(results.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cold(binary: &str, init_ms: &[f64], cpu_ms: &[f64], faults: &[f64]) -> ColdStart {
        ColdStart {
            binary: binary.to_owned(),
            init_ms: init_ms.to_vec(),
            init_cpu_ms: cpu_ms.to_vec(),
            init_faults: faults.to_vec(),
            ..ColdStart::default()
        }
    }

    #[test]
    fn an_init_splits_into_its_medians_on_and_off_a_cpu() {
        let split = cold(
            "f",
            &[2.0, 3.0, 2.5],
            &[1.5, 1.8, 1.6],
            &[250.0, 260.0, 255.0],
        )
        .init_split()
        .unwrap();
        assert_eq!(split.cpu_ms, 1.6);
        // 255 is kept to the histogram's 0.05 %.
        assert!((split.faults / 255.0 - 1.0).abs() <= 0.0005, "{split:?}");
        // Waits per run: 0.5, 1.2, 0.9.
        assert!((split.wait_ms - 0.9).abs() < 1e-9, "{split:?}");
        // A run saved before the counters, or with some runs unread, has no split.
        assert_eq!(cold("f", &[2.0], &[], &[]).init_split(), None);
        assert_eq!(cold("f", &[2.0, 3.0], &[1.0], &[9.0]).init_split(), None);
    }

    #[test]
    fn a_live_process_has_spent_cpu_and_faulted() {
        let (cpu_ms, faults) = init_counters(std::process::id()).unwrap();
        assert!(cpu_ms > 0.0, "{cpu_ms}");
        assert!(faults > 0.0, "{faults}");
        assert_eq!(init_counters(u32::MAX), None);
    }
}
