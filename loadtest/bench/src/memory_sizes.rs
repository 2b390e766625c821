//! Part 3: Lambda durations by memory size. Every binary of part 1 runs with the CPU share
//! Lambda gives each `--memory-sizes` size (a cgroup per process, `local_cloud::cpu_quota`):
//! its init (spawn to first poll) and its warm duration over sequential happy-path
//! invocations, with what a million such requests cost at Lambda's arm64 prices, and the size
//! that the table recommends beside the template's `MemorySize`.

use crate::cold_start::{self, INVOKE_TIMEOUT, Subject, percentile};
use crate::runtime_api::RuntimeApi;
use crate::scenarios::Fixture;
use bytes::Bytes;
use local_cloud::cpu_quota::CpuQuota;
use plot::{Panel, Series};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Lambda arm64, us-east-1, first tier: per request and per GB-second.
pub const PRICE_PER_MILLION_REQUESTS: f64 = 0.20;
pub const PRICE_PER_GB_SECOND: f64 = 0.000_013_333_4;
/// Sizes whose warm cost is within this share of the lowest compete on warm p90.
pub const COST_TOLERANCE: f64 = 0.10;
/// The template's size follows the table when it is in the cost band and its warm p90 is
/// within this share of the pick's: two runs of the same binaries a few hours apart (2026-12-02
/// 02:42 and 05:44) moved sub-millisecond p90s by up to 25% (get-sale at 1024 MB 0.58 → 0.40
/// ms, at 1769 MB 0.37 → 0.46), which swapped the pick between neighbouring sizes.
pub const P90_TOLERANCE: f64 = 0.25;
/// The public figures the 128 MB rows are read against.
const LAMBDA_HELLO_INIT_MS: f64 = 14.0;
const LAMBDA_CRUD_WARM_P50_MS: f64 = 5.0;
/// The function compared with the public DynamoDB CRUD figure: one `GetItem` per request.
const CRUD_FUNCTION: &str = "get-user";

/// How part 3 measures each binary at each size.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub runs: u32,
    pub warmup: u32,
    pub invocations: u32,
}

/// One binary at one memory size.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SizeRow {
    pub memory_mb: u32,
    /// Each cold start: spawn to first poll, under the size's share.
    pub init_ms: Vec<f64>,
    pub init_failures: u32,
    /// Each measured warm invocation: event handed over to response received.
    pub warm_ms: Vec<f64>,
    /// CPU time the process used over the measured invocations (all its threads), ms: what
    /// the share throttles. None where `/proc` could not tell.
    pub cpu_ms: Option<f64>,
    pub invocations_failed: u32,
    pub first_error: Option<String>,
}

impl SizeRow {
    pub fn init_p50(&self) -> f64 {
        percentile(&self.init_ms, 0.5)
    }

    pub fn warm(&self, p: f64) -> f64 {
        percentile(&self.warm_ms, p)
    }

    /// CPU time per measured invocation, ms.
    pub fn cpu_per_invocation(&self) -> Option<f64> {
        self.cpu_ms.map(|ms| ms / self.warm_ms.len() as f64)
    }

    pub fn warm_mean(&self) -> f64 {
        self.warm_ms.iter().sum::<f64>() / self.warm_ms.len() as f64
    }

    /// Lambda bills each invocation's duration rounded up to the next millisecond.
    pub fn billed_mean_ms(&self) -> f64 {
        self.warm_ms.iter().map(|ms| ms.ceil()).sum::<f64>() / self.warm_ms.len() as f64
    }

    /// Dollars per million warm invocations: the request charge plus the billed GB-seconds.
    pub fn cost_per_million(&self) -> f64 {
        cost_per_million(self.memory_mb, self.billed_mean_ms())
    }
}

/// Dollars per million invocations of `memory_mb` each billed `billed_ms`.
pub fn cost_per_million(memory_mb: u32, billed_ms: f64) -> f64 {
    let gb_seconds = f64::from(memory_mb) / 1024.0 * billed_ms / 1000.0;
    PRICE_PER_MILLION_REQUESTS + 1e6 * gb_seconds * PRICE_PER_GB_SECOND
}

/// One binary at every size.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FunctionSizes {
    pub binary: String,
    /// The template's `MemorySize`; none for the baselines.
    pub template_mb: Option<u32>,
    pub sizes: Vec<SizeRow>,
}

impl FunctionSizes {
    /// The size with the lowest warm cost per million; among the sizes within
    /// [`COST_TOLERANCE`] of that cost, the one with the lowest warm p90 (the smaller on a tie).
    pub fn recommended(&self) -> Option<&SizeRow> {
        let band = self.cost_band()?;
        self.measured()
            .filter(|row| row.cost_per_million() <= band)
            .min_by(|a, b| {
                a.warm(0.9)
                    .total_cmp(&b.warm(0.9))
                    .then(a.memory_mb.cmp(&b.memory_mb))
            })
    }

    /// Whether `memory_mb` is as good a choice as the pick within the run's noise: its warm
    /// cost in the [`COST_TOLERANCE`] band and its warm p90 within [`P90_TOLERANCE`] of the
    /// pick's.
    pub fn follows(&self, memory_mb: u32) -> bool {
        let (Some(best), Some(band)) = (self.recommended(), self.cost_band()) else {
            return false;
        };
        self.measured().any(|row| {
            row.memory_mb == memory_mb
                && row.cost_per_million() <= band
                && row.warm(0.9) <= best.warm(0.9) * (1.0 + P90_TOLERANCE)
        })
    }

    /// The sizes measured cleanly: warm invocations, none failed.
    fn measured(&self) -> impl Iterator<Item = &SizeRow> {
        self.sizes
            .iter()
            .filter(|row| !row.warm_ms.is_empty() && row.invocations_failed == 0)
    }

    /// The highest warm cost per million that competes on p90: [`COST_TOLERANCE`] above the
    /// lowest.
    fn cost_band(&self) -> Option<f64> {
        let lowest = self
            .measured()
            .map(SizeRow::cost_per_million)
            .min_by(f64::total_cmp)?;
        Some(lowest * (1.0 + COST_TOLERANCE))
    }

    fn at(&self, memory_mb: u32) -> Option<&SizeRow> {
        self.sizes.iter().find(|row| row.memory_mb == memory_mb)
    }
}

/// What part 3 measured.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Part3 {
    /// The CFS period of the cgroups, ms.
    pub period_ms: f64,
    /// How late the stub answered every AWS call, ms (0 in runs before it did).
    #[serde(default)]
    pub aws_latency_ms: f64,
    pub sizes: Vec<u32>,
    pub runs: u32,
    pub warmup: u32,
    pub invocations: u32,
    pub functions: Vec<FunctionSizes>,
}

impl Part3 {
    pub fn init_failures(&self) -> u32 {
        self.rows().map(|row| row.init_failures).sum()
    }

    pub fn invocations_failed(&self) -> u32 {
        self.rows().map(|row| row.invocations_failed).sum()
    }

    fn rows(&self) -> impl Iterator<Item = &SizeRow> {
        self.functions.iter().flat_map(|f| f.sizes.iter())
    }
}

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
#[allow(clippy::too_many_arguments)]
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

fn is_baseline(binary: &str) -> bool {
    binary.starts_with("hello-")
}

/// The summary's lines for part 3: whether the template's sizes are the table's.
pub fn summary(out: &mut String, part3: &Part3) {
    let mut missed = Vec::new();
    let mut unclean = Vec::new();
    let mut no_scenario = Vec::new();
    for function in part3.functions.iter().filter(|f| !is_baseline(&f.binary)) {
        let Some(template) = function.template_mb else {
            continue;
        };
        let failed = function
            .sizes
            .iter()
            .any(|row| row.invocations_failed > 0 || row.init_failures > 0);
        match function.recommended() {
            Some(_) if function.follows(template) => {}
            Some(best) => missed.push(format!(
                "{}: template {template}, table {}",
                function.binary, best.memory_mb
            )),
            // The harness has no event for it: nothing to judge, and nothing failed.
            None if !failed => no_scenario.push(function.binary.clone()),
            None => unclean.push(function.binary.clone()),
        }
    }
    let _ = writeln!(
        out,
        "- Template MemorySize follows the table of part 3 (lowest warm cost per million; \
         within {:.0}% of it, lowest warm p90; the template's size passes within {:.0}% of \
         that p90, the run-to-run noise): {}{}{}",
        COST_TOLERANCE * 100.0,
        P90_TOLERANCE * 100.0,
        if missed.is_empty() && unclean.is_empty() {
            "MET".to_owned()
        } else if missed.is_empty() {
            "MISSED".to_owned()
        } else {
            format!("MISSED — {}", missed.join(", "))
        },
        crate::report::listed("; no clean measurement: ", &unclean),
        crate::report::listed(
            "; not measured (no happy-path event in the harness): ",
            &no_scenario
        )
    );
    let (init, invocations) = (part3.init_failures(), part3.invocations_failed());
    if init + invocations > 0 {
        let _ = writeln!(
            out,
            "- Part 3 off the happy path: {init} init failures, {invocations} failed invocations"
        );
    }
}

/// The report's section for part 3; `figure` is the file name of its SVG.
pub fn render(out: &mut String, part3: &Part3, figure: &str) {
    let sizes = part3
        .sizes
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(
        out,
        "\n## Part 3: Lambda durations by memory size\n\n\
         Lambda gives a function CPU in proportion to its memory: 1,769 MB is one vCPU, 128 MB \
         about 0.072. Each binary of part 1 runs here in a cgroup of its own whose CFS quota \
         is that share ({} ms period × size / 1769; Lambda does not publish its period, so the \
         period is an assumption: it shapes single short invocations, not the averages), for \
         each size of {sizes} MB, with `AWS_LAMBDA_FUNCTION_MEMORY_SIZE` set to it. Init = \
         spawn to first poll, the median of {} cold starts; the last process then serves {} \
         unmeasured and {} measured happy-path invocations one at a time, back to back, as a \
         busy Lambda instance does; warm = event handed over to response received. {} Cost per \
         million = ${PRICE_PER_MILLION_REQUESTS:.2} per million requests + \
         ${PRICE_PER_GB_SECOND} per GB-second (Lambda arm64, us-east-1, first tier), each \
         invocation's duration rounded up to the next 1 ms as Lambda bills it; warm \
         invocations only. CPU = the process's CPU time (all threads, `/proc/<pid>/task/*/schedstat`) \
         over the measured invocations, per invocation: where the share binds, warm mean ≈ \
         CPU × 1769 / MB. CPU per invocation itself tends to grow at the small sizes, so \
         durations can grow by more than the ratio of two sizes. Init is billed too, once per cold start, so it stands beside the \
         cost. The recommendation: the size with the lowest warm cost per million; among the \
         sizes within {:.0}% of that cost, the one with the lowest warm p90. The request charge \
         dominates below a few ms, so more memory often costs little more and answers sooner.\n",
        part3.period_ms,
        part3.runs,
        part3.warmup,
        part3.invocations,
        if part3.aws_latency_ms > 0.0 {
            format!(
                "Every AWS call is answered {} ms late here (a second `aws-stub --latency-ms`; \
                 an assumption standing for DynamoDB's and SQS's single-digit milliseconds \
                 within a region, `--memory-aws-latency-ms`): Lambda bills that wait at the \
                 size's price, and only the CPU part shrinks with more memory. Redis answers \
                 as fast as this machine's.",
                part3.aws_latency_ms
            )
        } else {
            "Every AWS call is answered at once, so the durations are CPU and the local \
             round trips only: more memory looks cheaper than it is for a function that waits \
             on the network."
                .to_owned()
        },
        COST_TOLERANCE * 100.0,
    );
    anchors(out, part3);
    let _ = writeln!(
        out,
        "![Warm p50 duration and cost per million requests by memory size, per binary]({figure})\n"
    );
    let _ = writeln!(
        out,
        "| binary | MB | init p50 ms | warm p50 ms | warm p90 ms | warm mean ms | CPU ms per invocation | billed mean ms | $ per million warm | failed | |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    let mut ordered: Vec<&FunctionSizes> = part3.functions.iter().collect();
    ordered.sort_by_key(|f| (!is_baseline(&f.binary), f.binary.clone()));
    for function in ordered {
        let best = function.recommended().map(|row| row.memory_mb);
        for row in &function.sizes {
            let mut marks = Vec::new();
            if best == Some(row.memory_mb) {
                marks.push("table's pick");
            }
            if function.template_mb == Some(row.memory_mb) {
                marks.push("template");
            }
            let _ = writeln!(
                out,
                "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {:.2} | {:.4} | {} | {} |",
                function.binary,
                row.memory_mb,
                row.init_p50(),
                row.warm(0.5),
                row.warm(0.9),
                row.warm_mean(),
                row.cpu_per_invocation()
                    .map_or("n/a".to_owned(), |ms| format!("{ms:.3}")),
                row.billed_mean_ms(),
                row.cost_per_million(),
                row.init_failures + row.invocations_failed,
                marks.join(", "),
            );
        }
    }
    let errors: Vec<String> = part3
        .functions
        .iter()
        .flat_map(|f| {
            f.sizes.iter().filter_map(|row| {
                row.first_error.as_ref().map(|e| {
                    format!(
                        "- `{}` at {} MB: {}",
                        f.binary,
                        row.memory_mb,
                        e.replace('\n', " ")
                    )
                })
            })
        })
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(
            out,
            "\nFirst error per binary and size:\n\n{}",
            errors.join("\n")
        );
    }
}

/// The 128 MB rows against the public figures.
fn anchors(out: &mut String, part3: &Part3) {
    let at_128 = |binary: &str| {
        part3
            .functions
            .iter()
            .find(|f| f.binary == binary)
            .and_then(|f| f.at(128))
    };
    let mut lines = Vec::new();
    if let Some(hello) = at_128("hello-runtime").filter(|row| !row.init_ms.is_empty()) {
        lines.push(format!(
            "- `hello-runtime` init at 128 MB: {:.1} ms here, against about \
             {LAMBDA_HELLO_INIT_MS:.0} ms published for a Rust hello world on Lambda, which \
             includes starting the sandbox (not done here) and reading the binary from the \
             function's image rather than a warm page cache.",
            hello.init_p50()
        ));
    }
    if let Some(crud) = at_128(CRUD_FUNCTION).filter(|row| !row.warm_ms.is_empty()) {
        let network = if part3.aws_latency_ms > 0.0 {
            format!(
                "which includes the real network round trip to DynamoDB; here it is the \
                 assumed {} ms",
                part3.aws_latency_ms
            )
        } else {
            "which includes the real network round trip to DynamoDB that the instant stub \
             does not have: the difference is roughly that round trip"
                .to_owned()
        };
        lines.push(format!(
            "- `{CRUD_FUNCTION}` (one DynamoDB `GetItem`) warm p50 at 128 MB: {:.2} ms here, \
             against about {LAMBDA_CRUD_WARM_P50_MS:.0} ms published for a Rust DynamoDB CRUD \
             function on Lambda, {network}.",
            crud.warm(0.5)
        ));
    }
    if !lines.is_empty() {
        let _ = writeln!(
            out,
            "Against public figures (128 MB):\n\n{}\n",
            lines.join("\n")
        );
    }
}

pub fn title(part3: &Part3, date: &str) -> String {
    format!(
        "Lambda durations and cost by memory size ({date}, {} ms CFS period)",
        part3.period_ms
    )
}

/// The figure: per binary, warm p50 and cost per million against memory size.
pub fn panels(part3: &Part3) -> Vec<Panel> {
    let mut durations = Panel {
        log_x: true,
        ..Panel::new(
            "Warm duration p50 by memory size (CPU share = size / 1769 MB)",
            "memory size, MB (log scale)",
            "ms",
        )
    };
    let mut costs = Panel {
        log_x: true,
        ..Panel::new(
            "Cost per million warm requests, Lambda arm64 us-east-1",
            "memory size, MB (log scale)",
            "$ per million",
        )
    };
    for function in &part3.functions {
        let measured: Vec<&SizeRow> = function
            .sizes
            .iter()
            .filter(|row| !row.warm_ms.is_empty())
            .collect();
        durations.series.push(Series::line(
            function.binary.clone(),
            measured
                .iter()
                .map(|row| (f64::from(row.memory_mb), row.warm(0.5)))
                .collect(),
        ));
        costs.series.push(Series::line(
            function.binary.clone(),
            measured
                .iter()
                .map(|row| (f64::from(row.memory_mb), row.cost_per_million()))
                .collect(),
        ));
    }
    vec![durations, costs]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(memory_mb: u32, warm_ms: &[f64]) -> SizeRow {
        SizeRow {
            memory_mb,
            init_ms: vec![10.0],
            warm_ms: warm_ms.to_vec(),
            ..SizeRow::default()
        }
    }

    #[test]
    fn cost_bills_each_invocation_rounded_up_to_the_millisecond() {
        // 0.2 ms and 1.5 ms are billed 1 ms and 2 ms.
        let at_1024 = row(1024, &[0.2, 1.5]);
        assert_eq!(at_1024.billed_mean_ms(), 1.5);
        // 1 GB × 1.5 ms = 0.0015 GB-s per request.
        let expected = 0.20 + 1e6 * 0.0015 * 0.000_013_333_4;
        assert!((at_1024.cost_per_million() - expected).abs() < 1e-12);
        // 128 MB for 10 ms: 0.00125 GB-s, $0.01666675 per million, plus the requests.
        assert!((cost_per_million(128, 10.0) - 0.216_666_75).abs() < 1e-9);
    }

    #[test]
    fn the_pick_is_the_fastest_p90_within_ten_percent_of_the_cheapest() {
        let function = FunctionSizes {
            binary: "f".into(),
            template_mb: Some(128),
            sizes: vec![
                // 128 MB, 40 ms: $0.2667 per million, the cheapest is 256 below.
                row(128, &[40.0; 10]),
                // 256 MB, 6 ms: $0.2100, the cheapest.
                row(256, &[6.0; 10]),
                // 512 MB, 2 ms: $0.2133, within 10%, and faster.
                row(512, &[2.0; 10]),
                // 1769 MB, 1 ms: $0.2230, within 10% (0.231), fastest of all.
                row(1769, &[0.6; 10]),
            ],
        };
        assert_eq!(function.recommended().map(|r| r.memory_mb), Some(1769));
        // Out of the 10% band: 10240 MB at 1 ms costs $0.3333.
        let mut narrow = function.clone();
        narrow.sizes.retain(|r| r.memory_mb != 1769);
        narrow.sizes.push(row(10_240, &[0.5; 10]));
        assert_eq!(narrow.recommended().map(|r| r.memory_mb), Some(512));
        // A size with a failed invocation is not recommended.
        let mut failed = narrow.clone();
        failed.sizes[2].invocations_failed = 1;
        assert_eq!(failed.recommended().map(|r| r.memory_mb), Some(256));
    }

    #[test]
    fn a_template_size_within_the_noise_of_the_pick_follows_the_table() {
        let function = FunctionSizes {
            binary: "f".into(),
            template_mb: Some(1024),
            sizes: vec![
                // 128 MB at 3 ms is the cheapest ($0.2050); 1024 MB ($0.2133) and 1769 MB
                // ($0.2230) are in the band, their p90s 0.4 and 0.33 ms.
                row(128, &[3.0; 10]),
                row(1024, &[0.4; 10]),
                row(1769, &[0.33; 10]),
            ],
        };
        assert_eq!(function.recommended().map(|r| r.memory_mb), Some(1769));
        // 0.4 is within 25% of 0.33 (0.4125); 0.45 would not be.
        assert!(function.follows(1024));
        let mut slower = function.clone();
        slower.sizes[1] = row(1024, &[0.45; 10]);
        assert!(!slower.follows(1024));
        // A size that was not measured does not follow anything.
        assert!(!function.follows(512));
    }

    fn part3() -> Part3 {
        Part3 {
            period_ms: 20.0,
            aws_latency_ms: 4.0,
            sizes: vec![128, 1769],
            runs: 1,
            warmup: 2,
            invocations: 3,
            functions: vec![
                FunctionSizes {
                    binary: "hello-runtime".into(),
                    template_mb: None,
                    sizes: vec![row(128, &[1.0, 1.2, 1.1]), row(1769, &[0.1, 0.1, 0.2])],
                },
                FunctionSizes {
                    binary: "get-user".into(),
                    template_mb: Some(128),
                    sizes: vec![row(128, &[9.0, 12.0, 10.0]), row(1769, &[0.5, 0.6, 0.7])],
                },
            ],
        }
    }

    #[test]
    fn the_summary_names_each_function_off_the_table() {
        let mut out = String::new();
        summary(&mut out, &part3());
        // get-user: 128 MB at 10.33 ms billed costs $0.2172, 1769 MB at 1 ms $0.2230 (within
        // 10%) and faster.
        assert!(
            out.contains("MISSED — get-user: template 128, table 1769"),
            "{out}"
        );
        let mut met = part3();
        met.functions[1].template_mb = Some(1769);
        let mut out = String::new();
        summary(&mut out, &met);
        assert!(out.contains("the run-to-run noise): MET\n"), "{out}");
        // A function the harness has no event for is not judged; one that failed is.
        let mut unmeasured = met.clone();
        unmeasured.functions.push(FunctionSizes {
            binary: "cache-failover".into(),
            template_mb: Some(128),
            sizes: vec![row(128, &[]), row(1769, &[])],
        });
        let mut out = String::new();
        summary(&mut out, &unmeasured);
        assert!(
            out.contains(
                "noise): MET; not measured (no happy-path event in the harness): cache-failover"
            ),
            "{out}"
        );
        unmeasured.functions[2].sizes[0].invocations_failed = 1;
        let mut out = String::new();
        summary(&mut out, &unmeasured);
        assert!(
            out.contains("noise): MISSED; no clean measurement: cache-failover"),
            "{out}"
        );
    }

    #[test]
    fn the_section_reads_the_128_mb_rows_against_the_public_figures() {
        let mut out = String::new();
        render(&mut out, &part3(), "functions-memory.svg");
        for text in [
            "## Part 3: Lambda durations by memory size",
            "about 14 ms published",
            "`get-user` (one DynamoDB `GetItem`) warm p50 at 128 MB: 10.00 ms",
            "](functions-memory.svg)",
            "Every AWS call is answered 4 ms late here",
            "| get-user | 1769 | 10.00 | 0.60 | 0.70 | 0.60 | n/a | 1.00 | 0.2230 | 0 | table's pick |",
            "| get-user | 128 |",
        ] {
            assert!(out.contains(text), "{text:?} missing from {out}");
        }
        let svg = plot::svg(&title(&part3(), "2026-12-02"), &panels(&part3())).unwrap();
        assert!(svg.contains("Cost per million"));
        assert!(svg.contains("get-user"));
    }

    #[test]
    fn part_3_is_optional_in_saved_results() {
        // A functions.json saved before part 3 existed still renders.
        let saved = serde_json::json!({
            "run": {
                "command": "loadtest/bench.sh functions", "command_line": "", "cores": "2",
                "date": "2026-12-01 18:00 UTC", "runs": 1, "invocations": 1,
                "binaries_dir": "target/release", "work_dir": ".local/bench-fn"
            },
            "part1": [],
            "part2": null
        });
        let results: crate::report::Results = serde_json::from_value(saved).unwrap();
        assert!(results.part3.is_none());
        let report = crate::report::render(&results, None, "functions.svg");
        assert!(!report.contains("Part 3"));
        // And one saved with part 3 renders it again.
        let results = crate::report::Results {
            part3: Some(part3()),
            ..results
        };
        let again: crate::report::Results =
            serde_json::from_str(&serde_json::to_string(&results).unwrap()).unwrap();
        let report = crate::report::render(&again, None, "functions.svg");
        assert!(report.contains("](functions-memory.svg)"), "{report}");
        assert!(report.contains("Template MemorySize follows the table"));
    }
}
