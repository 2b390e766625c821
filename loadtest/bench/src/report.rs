//! The Markdown report: a table per part, the commands, the machine, and which targets are
//! met or missed and by how much.

use crate::cold_start::ColdStart;
use crate::memory_sizes::{self, Part3};
use crate::sdk_cost::{self, SdkCost};
use crate::throughput::Throughput;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use loadgen::LoadShape;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Cold start bound, as a multiple of the hello-world `lambda_runtime` binary's.
pub const INIT_RATIO_MAX: f64 = 1.5;
pub const SIZE_MAX_MIB: f64 = 8.0;
pub const MEMORY_MAX_MIB: f64 = 32.0;
/// Throughput floor, as a multiple of the hello-world `lambda_http` function's.
pub const THROUGHPUT_RATIO_MIN: f64 = 0.8;
/// The most of a function's CPU per request that may be its own: what is left after
/// hello-http's and its AWS calls at the SDK's measured cost.
pub const OWN_SHARE_MAX: f64 = 0.2;
/// A function's CPU per request may be at most hello-http's + this × its AWS calls × the
/// SDK's per-call cost.
pub const SDK_CEILING_FACTOR: f64 = 1.3;

const MIB: f64 = 1024.0 * 1024.0;

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Part2Row {
    pub measured: Throughput,
    /// Calls the stub served during this function's load, by `X-Amz-Target`.
    pub aws_calls: BTreeMap<String, u64>,
    /// Commands Redis served during this function's load (absent from older runs).
    #[serde(default)]
    pub redis_commands: u64,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Part2 {
    pub shape: LoadShape,
    pub instances: u32,
    pub app_command: String,
    pub hello_command: String,
    /// Before and after the functions.
    pub hello: [Throughput; 2],
    /// hello-http with one `GetItem` per request (`None` in a run saved before it was
    /// measured): what one AWS call costs inside a Lambda process.
    #[serde(default)]
    pub hello_getitem: Option<Throughput>,
    pub rows: Vec<Part2Row>,
}

impl Part2 {
    fn hello_rps(&self) -> f64 {
        (self.hello[0].report.requests_per_second + self.hello[1].report.requests_per_second) / 2.0
    }

    /// hello-http's CPU per request, ms: the mean of before and after.
    fn hello_cpu_ms(&self) -> f64 {
        (self.hello[0].cpu.function_ms + self.hello[1].cpu.function_ms) / 2.0
    }

    /// What one `GetItem` costs inside a Lambda process, as a multiple of the probe's:
    /// hello-getitem's CPU per request less hello-http's, over the SDK's `GetItem` with idle
    /// gaps. `None` from a run saved before hello-getitem was measured.
    fn in_function_factor(&self, sdk: &SdkCost) -> Option<f64> {
        let getitem = self.hello_getitem.as_ref()?;
        Some((getitem.cpu.function_ms - self.hello_cpu_ms()) / sdk.sdk_ms())
    }

    fn requests_in_window(&self, row: &Part2Row) -> f64 {
        (row.measured.report.requests + self.shape.warmup).max(1) as f64
    }
}

/// Where one function's CPU per request went (ms): hello-http's, its AWS calls at the SDK's
/// per-call cost, its Redis commands at Redis's, and the rest, its own.
#[derive(Clone, Copy)]
struct Breakdown {
    cpu: f64,
    hello: f64,
    calls: f64,
    /// The calls' cost per request through the SDK: each operation at its own probe's cost.
    aws: f64,
    redis_commands: f64,
    redis: f64,
}

impl Breakdown {
    fn of(part2: &Part2, row: &Part2Row, sdk: &SdkCost) -> Self {
        let calls: u64 = row.aws_calls.values().sum();
        let requests = part2.requests_in_window(row);
        let aws: f64 = row
            .aws_calls
            .iter()
            .map(|(operation, n)| {
                // The stub counts `<service prefix>.<operation>`.
                let operation = operation.rsplit('.').next().unwrap_or(operation);
                *n as f64 / requests * sdk.operation_ms(operation)
            })
            .sum();
        Self {
            cpu: row.measured.cpu.function_ms,
            hello: part2.hello_cpu_ms(),
            calls: calls as f64 / requests,
            aws,
            redis_commands: row.redis_commands as f64 / requests,
            redis: sdk.redis_ms(),
        }
    }

    /// What the calls out cost: AWS's through the SDK, and Redis's.
    fn calls_cost(&self) -> f64 {
        self.aws + self.redis_commands * self.redis
    }

    fn own(&self) -> f64 {
        self.cpu - self.hello - self.calls_cost()
    }

    fn own_share(&self) -> f64 {
        self.own() / self.cpu
    }

    fn ceiling(&self) -> f64 {
        self.hello + SDK_CEILING_FACTOR * self.calls_cost()
    }

    /// The breakdown with every AWS call charged at `factor` × its probe's cost: what the
    /// call costs inside a Lambda process ([`Part2::in_function_factor`]).
    fn in_function(&self, factor: f64) -> Self {
        Self {
            aws: self.aws * factor,
            ..*self
        }
    }
}

/// Why a per-request target, which charges each call at the probe's cost, is missed: what one
/// `GetItem` costs inside a Lambda process (hello-getitem), and the target (`judged`: a
/// route's figure and whether it is over) read with every call charged at that. Empty when
/// no route is over, or without hello-getitem.
fn per_request_bound(
    part2: &Part2,
    sdk: &SdkCost,
    rows: &[(&str, Breakdown)],
    judged: impl Fn(&Breakdown) -> (f64, bool),
    shown: impl Fn(f64) -> String,
) -> String {
    let Some(factor) = part2.in_function_factor(sdk) else {
        return String::new();
    };
    if !rows.iter().any(|(_, b)| judged(b).1) {
        return String::new();
    }
    let Some((binary, worst)) = rows
        .iter()
        .map(|(binary, b)| (binary, judged(&b.in_function(factor))))
        .max_by(|a, b| a.1.0.total_cmp(&b.1.0))
    else {
        return String::new();
    };
    let still_over: Vec<String> = rows
        .iter()
        .filter_map(|(binary, b)| {
            let (figure, over) = judged(&b.in_function(factor));
            let calls = if b.calls > 0.0 { "" } else { ", no AWS call" };
            over.then(|| format!("{binary} {}{calls}", shown(figure)))
        })
        .collect();
    format!(
        ". What bounds it: one `GetItem` from an otherwise empty `lambda_http` function \
         (hello-getitem) costs {:.3} ms of CPU over hello-http's, {factor:.2}x the probe's \
         {:.3} ms: inside a Lambda process a call also brings its share of the Runtime API \
         exchange and of the I/O driver's wake-ups, which the probe, running no Runtime API, \
         does not see. With every call charged at {factor:.2}x its probe's cost, worst \
         {binary} at {}, and {} of {} routes within the bound{}",
        factor * sdk.sdk_ms(),
        sdk.sdk_ms(),
        shown(worst.0),
        rows.len() - still_over.len(),
        rows.len(),
        listed("; still over: ", &still_over),
    )
}

/// The two per-request cost targets of the breakdown, one summary line each.
fn breakdown_summary(out: &mut String, part2: &Part2, sdk: &SdkCost) {
    let sdk_ms = sdk.sdk_ms();
    let rows: Vec<(&str, Breakdown)> = part2
        .rows
        .iter()
        .map(|row| (row.measured.binary.as_str(), Breakdown::of(part2, row, sdk)))
        .collect();
    let worst_share = rows
        .iter()
        .max_by(|a, b| a.1.own_share().total_cmp(&b.1.own_share()));
    if let Some((binary, worst)) = worst_share {
        let over: Vec<String> = rows
            .iter()
            .filter(|(_, b)| b.own_share() > OWN_SHARE_MAX)
            .map(|(binary, b)| format!("{binary} {:.0}%", b.own_share() * 100.0))
            .collect();
        let bound = per_request_bound(
            part2,
            sdk,
            &rows,
            |b| (b.own_share(), b.own_share() > OWN_SHARE_MAX),
            |share| format!("{:.0}%", share * 100.0),
        );
        let _ = writeln!(
            out,
            "- The function's own CPU at most {:.0}% of its CPU per request (after hello-http's {:.3} ms, its AWS calls at the SDK's cost per operation, `GetItem` {:.3} ms, and its Redis commands × {:.3} ms): {} — worst {binary} at {:.3} of {:.3} ms = {:.0}%{}{bound}",
            OWN_SHARE_MAX * 100.0,
            part2.hello_cpu_ms(),
            sdk_ms,
            sdk.redis_ms(),
            verdict(over.is_empty()),
            worst.own(),
            worst.cpu,
            worst.own_share() * 100.0,
            listed("; over: ", &over)
        );
    }
    let ratio = |b: &Breakdown| b.cpu / b.ceiling();
    if let Some((binary, worst)) = rows
        .iter()
        .max_by(|a, b| ratio(&a.1).total_cmp(&ratio(&b.1)))
    {
        let over: Vec<String> = rows
            .iter()
            .filter(|(_, b)| ratio(b) > 1.0)
            .map(|(binary, b)| format!("{binary} {:+.0}%", (ratio(b) - 1.0) * 100.0))
            .collect();
        let bound = per_request_bound(
            part2,
            sdk,
            &rows,
            |b| (ratio(b), ratio(b) > 1.0),
            |ratio| format!("{:+.0}% against the bound", (ratio - 1.0) * 100.0),
        );
        let _ = writeln!(
            out,
            "- CPU per request at most hello-http's + {SDK_CEILING_FACTOR} × (AWS calls × the SDK's per-call cost + Redis commands × Redis's): {} — worst {binary} at {:.3} ms against {:.3} ms ({:+.0}% against the bound){}{bound}",
            verdict(over.is_empty()),
            worst.cpu,
            worst.ceiling(),
            (ratio(worst) - 1.0) * 100.0,
            listed("; over: ", &over)
        );
    }
}

/// The SDK's cost and its floor, then part 2's CPU per request split by where it went.
fn render_breakdown(out: &mut String, part2: &Part2, sdk: &SdkCost) {
    let gap = sdk_cost::GAP_US;
    let (sdk_gap, floor_gap) = (sdk.cpu_us("sdk", gap), sdk.cpu_us("floor", gap));
    let (sdk_tight, floor_tight) = (sdk.cpu_us("sdk", 0), sdk.cpu_us("floor", 0));
    let rounds = sdk.probes_of("sdk", sdk_cost::GET_ITEM, gap).count();
    let _ = writeln!(
        out,
        "\n## Part 2, where the CPU goes: the SDK, its floor, and the functions' own\n\n\
         One DynamoDB `GetItem` against the same stub, from a process of its own on a \
         `current_thread` runtime as the functions run (rounds: {rounds}, the clients \
         alternating; CPU of every thread from `/proc/self/task/*/schedstat`, median of the \
         rounds): through the SDK as the functions configure it (`app::cloud::sdk_config`), \
         and through the floor, a hyper client sending the same request signed by the SDK's \
         own SigV4 signer and parsing the answer, with no retries, timeouts or interceptors; \
         and one Redis `GET` on the functions' connection (`app::cloud::redis`). \
         Command: `{}`; failed calls: {}.\n\n\
         | client | CPU µs per call, {gap} µs idle between calls | wall µs | CPU µs per call, back to back | wall µs |\n\
         |---|---:|---:|---:|---:|\n\
         | SDK | {sdk_gap:.1} | {:.1} | {sdk_tight:.1} | {:.1} |\n\
         | floor: hyper + SigV4 | {floor_gap:.1} | {:.1} | {floor_tight:.1} | {:.1} |\n\
         | SDK / floor | {:.2}x | | {:.2}x | |\n\
         | Redis `GET` | {:.1} | {:.1} | {:.1} | {:.1} |\n",
        sdk.command,
        sdk.failed(),
        sdk.wall_us("sdk", gap),
        sdk.wall_us("sdk", 0),
        sdk.wall_us("floor", gap),
        sdk.wall_us("floor", 0),
        sdk_gap / floor_gap,
        sdk_tight / floor_tight,
        sdk.cpu_us("redis", gap),
        sdk.wall_us("redis", gap),
        sdk.cpu_us("redis", 0),
        sdk.wall_us("redis", 0),
    );
    let get_item = sdk.operation_us(sdk_cost::GET_ITEM);
    let _ = writeln!(
        out,
        "The SDK's other calls, each shaped like a route's and measured the same way with idle \
         gaps (`sdk-floor --operation`); the stub's answer is part of the shape (a page of 20 \
         items costs the SDK its parsing):\n\n\
         | operation | shape | CPU µs per call | / `GetItem` |\n\
         |---|---|---:|---:|\n\
         | `GetItem` | one profile (get-user) | {get_item:.1} | 1.00x |"
    );
    for (_, operation, shape) in sdk_cost::OPERATIONS {
        let us = sdk.operation_us(operation);
        if us.is_nan() {
            let _ = writeln!(out, "| `{operation}` | {shape} | not measured | |");
        } else {
            let _ = writeln!(
                out,
                "| `{operation}` | {shape} | {us:.1} | {:.2}x |",
                us / get_item
            );
        }
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "Each function's CPU per request (part 2) = hello-http's (the mean of before and after, \
         {:.3} ms: the runtime, the event and the answer) + its AWS calls per request, each \
         at its operation's cost through the SDK with idle gaps (above; `GetItem` {:.3} ms, \
         and an operation not measured at that) + its Redis commands per request (from \
         `INFO commandstats` around its load) × Redis's per-command cost ({:.3} ms) + what is \
         left: the function's own (its routing, claims, validation, spans and logs, metrics \
         line, response). Targets: its own at most {:.0}% of its CPU; its CPU at most \
         hello-http's + {SDK_CEILING_FACTOR} × what its calls cost.\n\n\
         The probe runs no Runtime API. What one call costs inside a Lambda process is measured \
         beside hello-http, behind the same runner: hello-getitem, the same `lambda_http` \
         function with one `GetItem` per request through the functions' SDK setup and nothing \
         else, {}. The last two columns charge every AWS call at that multiple of its probe's \
         cost.\n\n\
         | function | CPU ms per request | hello-http's | AWS calls | Redis commands | × per-call costs | own | own share | ceiling | CPU / ceiling | own, calls as in a function | its share |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        part2.hello_cpu_ms(),
        sdk.sdk_ms(),
        sdk.redis_ms(),
        OWN_SHARE_MAX * 100.0,
        match (&part2.hello_getitem, part2.in_function_factor(sdk)) {
            (Some(getitem), Some(factor)) => format!(
                "{:.3} ms per request ({} requests, {} unexpected answers): {:.3} ms over \
                 hello-http's, {factor:.2}x the probe's `GetItem`",
                getitem.cpu.function_ms,
                getitem.report.requests,
                getitem.report.unexpected,
                getitem.cpu.function_ms - part2.hello_cpu_ms(),
            ),
            _ => "not measured in this run".to_owned(),
        },
    );
    let factor = part2.in_function_factor(sdk);
    for row in &part2.rows {
        let b = Breakdown::of(part2, row, sdk);
        let flag = |bad: bool| if bad { " ✗" } else { "" };
        let (own_in, share_in) = factor.map_or(("n/a".to_owned(), "n/a".to_owned()), |factor| {
            let b = b.in_function(factor);
            (
                format!("{:.3}", b.own()),
                format!(
                    "{:.0}%{}",
                    b.own_share() * 100.0,
                    flag(b.own_share() > OWN_SHARE_MAX)
                ),
            )
        });
        let _ = writeln!(
            out,
            "| {} | {:.3} | {:.3} | {:.2} | {:.2} | {:.3} | {:.3} | {:.0}%{} | {:.3} | {:.2}x{} | {own_in} | {share_in} |",
            row.measured.binary,
            b.cpu,
            b.hello,
            b.calls,
            b.redis_commands,
            b.calls_cost(),
            b.own(),
            b.own_share() * 100.0,
            flag(b.own_share() > OWN_SHARE_MAX),
            b.ceiling(),
            b.cpu / b.ceiling(),
            flag(b.cpu > b.ceiling()),
        );
    }
}

/// The stub's count of every operation it served so far.
pub async fn stub_calls(stub_url: &str) -> anyhow::Result<BTreeMap<String, u64>> {
    let uri: http::Uri = format!("{}/__stub/stats", stub_url.trim_end_matches('/')).parse()?;
    let address = format!(
        "{}:{}",
        uri.host().unwrap_or("127.0.0.1"),
        uri.port_u16().unwrap_or(80)
    );
    let stream = tokio::net::TcpStream::connect(&address).await?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let request = http::Request::get(uri.path())
        .header("host", address)
        .body(Empty::<Bytes>::new())?;
    let body = sender
        .send_request(request)
        .await?
        .into_body()
        .collect()
        .await?;
    Ok(serde_json::from_slice(&body.to_bytes())?)
}

fn mib(kb: Option<u64>) -> String {
    kb.map_or("n/a".to_owned(), |kb| format!("{:.1}", kb as f64 / 1024.0))
}

/// The peak memory of `cold`'s binary when it served through the runner (part 2), if measured.
fn peak_kb_through_runner(cold: &ColdStart, part2: Option<&Part2>) -> Option<u64> {
    part2.and_then(|part2| {
        part2
            .rows
            .iter()
            .find(|row| row.measured.binary == cold.binary)
            .and_then(|row| row.measured.vm_hwm_kb)
    })
}

fn peak_kb(cold: &ColdStart, part2: Option<&Part2>) -> Option<u64> {
    cold.vm_hwm_kb.max(peak_kb_through_runner(cold, part2))
}

/// How many MiB of something a function takes.
type MibOf<'a> = dyn Fn(&ColdStart) -> f64 + 'a;

fn verdict(ok: bool) -> &'static str {
    if ok { "MET" } else { "MISSED" }
}

fn is_baseline(binary: &str) -> bool {
    binary.starts_with("hello-")
}

/// What bounds a missed cold start, by measurement: the worst's init on a CPU, its page faults
/// and its wait, beside hello-runtime's (empty from a run that did not read them).
fn init_bound(worst: &ColdStart, baseline: Option<&ColdStart>) -> String {
    let Some(baseline) = baseline else {
        return String::new();
    };
    let (Some(worst_split), Some(base)) = (worst.init_split(), baseline.init_split()) else {
        return String::new();
    };
    let extra = worst.percentile(0.5) - baseline.percentile(0.5);
    format!(
        ". What bounds it: {}'s init ran {:.2} ms on a CPU with {:.0} page faults and waited \
         {:.2} ms, against hello-runtime's {:.2} ms, {:.0} faults and {:.2} ms: of its {:.2} ms \
         more, {:.2} ms is CPU (the kernel mapping a larger binary and faulting it in, and its \
         own setup) and {:.2} ms waiting (Redis, the scheduler)",
        worst.binary,
        worst_split.cpu_ms,
        worst_split.faults,
        worst_split.wait_ms,
        base.cpu_ms,
        base.faults,
        base.wait_ms,
        extra,
        worst_split.cpu_ms - base.cpu_ms,
        worst_split.wait_ms - base.wait_ms,
    )
}

/// One line per target: met or missed, the worst case and the margin.
pub fn summary(
    part1: &[ColdStart],
    part2: Option<&Part2>,
    sdk: Option<&SdkCost>,
    part3: Option<&Part3>,
) -> String {
    let mut out = String::new();
    let floor = part1
        .iter()
        .find(|c| c.binary == "hello-runtime")
        .map_or(f64::NAN, |c| c.percentile(0.5));
    let functions: Vec<&ColdStart> = part1.iter().filter(|c| !is_baseline(&c.binary)).collect();

    let failed: Vec<&str> = functions
        .iter()
        .filter(|c| c.init_ms.is_empty() || c.init_failures > 0)
        .map(|c| c.binary.as_str())
        .collect();
    if let Some(worst) = functions
        .iter()
        .filter(|c| !c.init_ms.is_empty())
        .max_by(|a, b| a.percentile(0.5).total_cmp(&b.percentile(0.5)))
    {
        let ratio = worst.percentile(0.5) / floor;
        let over: Vec<String> = functions
            .iter()
            .filter(|c| c.percentile(0.5) / floor > INIT_RATIO_MAX)
            .map(|c| format!("{} {:.2}x", c.binary, c.percentile(0.5) / floor))
            .collect();
        let baseline = part1.iter().find(|c| c.binary == "hello-runtime");
        let _ = writeln!(
            out,
            "- Cold start within {INIT_RATIO_MAX}x of hello-runtime (p50 {floor:.2} ms): {} — worst {} at {:.2} ms = {ratio:.2}x ({:+.0}% against the bound){}{}{}",
            verdict(over.is_empty() && failed.is_empty()),
            worst.binary,
            worst.percentile(0.5),
            (ratio / INIT_RATIO_MAX - 1.0) * 100.0,
            listed("; over the bound: ", &over),
            listed("; init failures: ", &failed),
            if over.is_empty() {
                String::new()
            } else {
                init_bound(worst, baseline)
            },
        );
    }
    // Bounds in MiB that every function must stay under, met or missed by the function with
    // the most: (what, its superlative, decimals shown, the bound, a function's MiB).
    let size = |c: &ColdStart| c.stripped_bytes.unwrap_or(c.size_bytes) as f64 / MIB;
    let peak = |c: &ColdStart| peak_kb(c, part2).unwrap_or(0) as f64 / 1024.0;
    let bounds: [(&str, &str, usize, f64, &MibOf); 2] = [
        ("Stripped binary", "largest", 2, SIZE_MAX_MIB, &size),
        ("Peak memory", "highest", 1, MEMORY_MAX_MIB, &peak),
    ];
    for (what, most, digits, bound, mib) in bounds {
        if let Some(worst) = functions.iter().max_by(|a, b| mib(a).total_cmp(&mib(b))) {
            let _ = writeln!(
                out,
                "- {what} under {bound} MiB: {} — {most} {} at {:.digits$} MiB ({:+.0}% against the bound)",
                verdict(mib(worst) < bound),
                worst.binary,
                mib(worst),
                (mib(worst) / bound - 1.0) * 100.0
            );
        }
    }
    let invocation_failures: Vec<String> = part1
        .iter()
        .filter(|c| c.invocations_failed > 0)
        .map(|c| format!("{} ({} failed)", c.binary, c.invocations_failed))
        .collect();
    line_if_any(
        &mut out,
        "- Part 1 invocations off the happy path: ",
        &invocation_failures,
        ", ",
    );
    if let Some(part2) = part2 {
        let hello = part2.hello_rps();
        let ratio = |row: &&Part2Row| row.measured.report.requests_per_second / hello;
        if let Some(worst) = part2
            .rows
            .iter()
            .min_by(|a, b| ratio(a).total_cmp(&ratio(b)))
        {
            let under: Vec<String> = part2
                .rows
                .iter()
                .filter(|row| ratio(row) < THROUGHPUT_RATIO_MIN)
                .map(|row| format!("{} {:.2}x", row.measured.binary, ratio(&row)))
                .collect();
            let _ = writeln!(
                out,
                "- Throughput at least {THROUGHPUT_RATIO_MIN}x of hello-http ({hello:.0} requests/s): {} — lowest {} at {:.0} requests/s = {:.2}x ({:+.0}% against the bound){}",
                verdict(under.is_empty()),
                worst.measured.binary,
                worst.measured.report.requests_per_second,
                ratio(&worst),
                (ratio(&worst) / THROUGHPUT_RATIO_MIN - 1.0) * 100.0,
                listed("; under the bound: ", &under)
            );
        }
        let unexpected: u64 = part2
            .rows
            .iter()
            .map(|row| row.measured.report.unexpected)
            .sum();
        let _ = writeln!(
            out,
            "- Every response the expected 2xx: {} — {unexpected} unexpected answers in part 2",
            verdict(unexpected == 0)
        );
        if let Some(sdk) = sdk {
            breakdown_summary(&mut out, part2, sdk);
        }
    }
    if let Some(part3) = part3 {
        memory_sizes::summary(&mut out, part3);
    }
    out
}

/// How a run was made: what the report says besides the figures.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RunInfo {
    /// The entry point, e.g. `loadtest/bench.sh functions`.
    pub command: String,
    /// The harness's own command line.
    pub command_line: String,
    pub cores: String,
    pub date: String,
    pub runs: u32,
    pub invocations: u32,
    pub binaries_dir: String,
    pub work_dir: String,
    /// `/proc/loadavg` when the run started and when it ended: other work on the machine.
    #[serde(default)]
    pub load_average: Vec<String>,
    /// How part 1 waited for a quiet machine (`None` in a run saved before it did).
    #[serde(default)]
    pub settled: Option<String>,
}

impl RunInfo {
    pub fn now(
        command: &str,
        runs: u32,
        invocations: u32,
        binaries_dir: &str,
        work_dir: &str,
    ) -> Self {
        let now = time::OffsetDateTime::now_utc();
        let cores = std::process::Command::new("nproc")
            .output()
            .ok()
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
            .filter(|out| !out.is_empty())
            .unwrap_or_else(|| "unknown".to_owned());
        Self {
            command: command.to_owned(),
            command_line: command_line(),
            cores,
            date: format!(
                "{:04}-{:02}-{:02} {:02}:{:02} UTC",
                now.year(),
                u8::from(now.month()),
                now.day(),
                now.hour(),
                now.minute()
            ),
            runs,
            invocations,
            binaries_dir: binaries_dir.to_owned(),
            work_dir: work_dir.to_owned(),
            load_average: vec![load_average()],
            settled: None,
        }
    }
}

/// The 1, 5 and 15 minute load averages.
/// The 1-minute load average, when `/proc/loadavg` can be read.
pub fn one_minute_load() -> Option<f64> {
    load_average().split_whitespace().next()?.parse().ok()
}

pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// Everything one run measured, as saved and re-rendered.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Results {
    pub run: RunInfo,
    pub part1: Vec<ColdStart>,
    pub part2: Option<Part2>,
    /// The SDK's per-call cost and its floor (absent from runs before it was measured).
    #[serde(default)]
    pub sdk: Option<SdkCost>,
    /// Absent from runs saved before part 3 existed, and when it was skipped.
    #[serde(default)]
    pub part3: Option<Part3>,
}

/// The whole report; `figure` is the file name of its SVG, beside it.
pub fn render(results: &Results, notes: Option<&str>, figure: &str) -> String {
    let (run, part1, part2) = (&results.run, &results.part1, results.part2.as_ref());
    let mut out = String::new();
    let date = &run.date;
    let cores = &run.cores;
    let floor = part1
        .iter()
        .find(|c| c.binary == "hello-runtime")
        .map_or(f64::NAN, |c| c.percentile(0.5));
    let _ = writeln!(
        out,
        "# Functions: cold start, size, memory and per-request overhead\n\n\
         Generated by `loadtest/bench` (run {date}). Command: `{}`.\n\
         Machine: `nproc` = {cores}; the harness, the stub, Redis, the runners and every function \
         process share these cores, and so did other work: load average (1, 5, 15 min) {} at \
         the start, {} at the end.{}\n\n\
         Every AWS call goes to `aws-stub` (`infra/aws-stub`): it answers DynamoDB and SQS at \
         once with canned data derived from the request's key, keeps no state and evaluates no \
         condition, so every request takes its happy path. Redis is a real `redis-server`. \
         These are the functions' own costs on a floor no real endpoint reaches.\n\n\
         ## Summary\n\n{}",
        run.command,
        run.load_average.first().map_or("unknown", String::as_str),
        run.load_average.get(1).map_or("unknown", String::as_str),
        run.settled
            .as_ref()
            .map_or(String::new(), |settled| format!(" {settled}.")),
        summary(part1, part2, results.sdk.as_ref(), results.part3.as_ref())
    );
    let _ = writeln!(
        out,
        "![Every cold start per binary; each route's latency distribution, p50 / p90 / p99 and \
         throughput as a share of hello-http's]({figure})\n"
    );

    let _ = writeln!(
        out,
        "## Part 1: cold start, stripped size, peak memory\n\n\
         Each binary is spawned {} times, one process at a time, rounds interleaved in a \
         rotating order, with the environment the runner gives it (the template's variables, \
         Lambda's reserved ones, the stub's endpoint, `REDIS_URL`). Init = spawn to its first \
         `GET /2018-06-01/runtime/invocation/next` on the harness's in-process Runtime API (SDK \
         config loaded, clients built, Redis connected and scripts loaded where the function \
         does that). At that poll, the harness reads the process's time on a CPU so far (every \
         live thread's `/proc/<pid>/task/*/schedstat`) and its minor page faults \
         (`/proc/<pid>/stat`): the rest of its init it waited. Then one more process per binary serves {} happy-path invocations (API \
         Gateway events for the routes; batches of 10 events for the consumers), and its \
         `VmHWM` is read from `/proc/<pid>/status`. Sizes: `strip` of a copy (the release \
         profile already strips: `strip = true`). Baseline: `hello-runtime`, init p50 \
         {floor:.2} ms; `hello-http` is shown beside it.\n\n\
         Command: `{}` (via `{}`), binaries in `{}`.\n",
        run.runs, run.invocations, run.command_line, run.command, run.binaries_dir
    );
    let _ = writeln!(
        out,
        "| binary | init p50 ms | init p90 ms | p50 / hello-runtime | init on a CPU, p50 ms | init page faults, p50 | stripped MiB | peak MiB, {} invocations | peak MiB, through the runner | invocations ok / failed |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        run.invocations
    );
    let mut ordered: Vec<&ColdStart> = part1.iter().collect();
    ordered.sort_by_key(|c| (!is_baseline(&c.binary), c.binary.clone()));
    for cold in ordered {
        let through_runner = peak_kb_through_runner(cold, part2);
        let split = cold.init_split();
        let ratio = cold.percentile(0.5) / floor;
        let flag = |bad: bool| if bad { " ✗" } else { "" };
        let size = cold.stripped_bytes.unwrap_or(cold.size_bytes) as f64 / MIB;
        let _ = writeln!(
            out,
            "| {}{} | {:.2} | {:.2} | {:.2}x{} | {} | {} | {:.2}{} | {}{} | {} | {} / {} |",
            cold.binary,
            if cold.init_failures > 0 {
                format!(" ({} init failures)", cold.init_failures)
            } else {
                String::new()
            },
            cold.percentile(0.5),
            cold.percentile(0.9),
            ratio,
            flag(!is_baseline(&cold.binary) && ratio > INIT_RATIO_MAX),
            split.map_or("n/a".to_owned(), |split| format!("{:.2}", split.cpu_ms)),
            split.map_or("n/a".to_owned(), |split| format!("{:.0}", split.faults)),
            size,
            flag(size >= SIZE_MAX_MIB),
            mib(cold.vm_hwm_kb),
            flag(cold.vm_hwm_kb.unwrap_or(0) as f64 / 1024.0 >= MEMORY_MAX_MIB),
            mib(through_runner),
            cold.invocations_ok,
            cold.invocations_failed,
        );
    }
    let errors: Vec<String> = part1
        .iter()
        .filter_map(|c| {
            c.first_error
                .as_ref()
                .map(|e| format!("- `{}`: {}", c.binary, e.replace('\n', " ")))
        })
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(out, "\nFirst error per binary:\n\n{}", errors.join("\n"));
    }

    if let Some(part2) = part2 {
        let hello = part2.hello_rps();
        let shape = part2.shape;
        let _ = writeln!(
            out,
            "\n## Part 2: per-request overhead through the local runner\n\n\
             Each HTTP function's route through `local-cloud up` (JWT authorizer on, one bearer \
             token per user, {} instances per function, invocation log off, event sources of \
             the consumers off), closed-loop load from {} connections: {} unmeasured requests \
             first, then {} measured ones (or {} s, whichever ends first). The hello-world \
             `lambda_http` fixture runs behind a second runner with the same instances and is \
             measured before and after the functions; the ratio is to the mean of the two \
             ({hello:.0} requests/s). Requests vary by index: place-order is called by {} \
             users in turn, under its 5 attempts per user and second; get-order and pay-order \
             ask for the stub's order of `{}`. \"AWS calls\" are what the stub served during \
             the load, per measured or warm-up request; CPU is user + system time from `/proc` over \
             the same window, per request (the function's instances together; the stub's \
             includes its answers to every call).\n\n\
             Runners: `{}` and `{}`.\n",
            part2.instances,
            shape.concurrency,
            shape.warmup,
            shape.requests,
            shape.duration.as_secs_f64(),
            crate::scenarios::USERS,
            crate::scenarios::ORDER_OWNER,
            part2.app_command,
            part2.hello_command,
        );
        let _ = writeln!(
            out,
            "| function | route | expected | requests | requests/s | p50 ms | p99 ms | / hello-http | unexpected answers | CPU ms per request: function / runner / stub / load generator | AWS calls per request |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
        );
        row(
            &mut out,
            "hello-http (before)",
            &part2.hello[0],
            hello,
            "none",
        );
        for part2_row in &part2.rows {
            let measured = &part2_row.measured;
            let total = (measured.report.requests + shape.warmup).max(1) as f64;
            let calls = if part2_row.aws_calls.is_empty() {
                "none".to_owned()
            } else {
                part2_row
                    .aws_calls
                    .iter()
                    .map(|(op, count)| {
                        let op = op.split_once('.').map_or(op.as_str(), |(_, op)| op);
                        format!("{op} {:.2}", *count as f64 / total)
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            row(&mut out, &measured.binary, measured, hello, &calls);
        }
        row(
            &mut out,
            "hello-http (after)",
            &part2.hello[1],
            hello,
            "none",
        );
        let statuses: Vec<String> = part2
            .rows
            .iter()
            .filter(|r| r.measured.report.unexpected > 0)
            .map(|r| {
                format!(
                    "- `{}`: {:?}",
                    r.measured.binary, r.measured.report.statuses
                )
            })
            .collect();
        line_if_any(
            &mut out,
            "\nStatuses where some were unexpected:\n\n",
            &statuses,
            "\n",
        );
        if let Some(sdk) = &results.sdk {
            render_breakdown(&mut out, part2, sdk);
        }
    }
    if let Some(part3) = &results.part3 {
        memory_sizes::render(&mut out, part3, &memory_figure(figure));
    }
    let _ = writeln!(
        out,
        "\nRaw figures: `{}/functions.json` (not committed); `bench --from-json` renders them again.",
        run.work_dir
    );
    if let Some(notes) = notes {
        let _ = writeln!(out, "\n{}", notes.trim_end());
    }
    out
}

/// Part 3's figure beside the report's: `functions.svg` → `functions-memory.svg`.
pub fn memory_figure(figure: &str) -> String {
    let stem = figure.strip_suffix(".svg").unwrap_or(figure);
    format!("{stem}-memory.svg")
}

/// `label` and `items` joined by ", ", or nothing when there is no item: the tail of a
/// summary line that names what missed.
pub fn listed<S: AsRef<str>>(label: &str, items: &[S]) -> String {
    if items.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
        format!("{label}{}", names.join(", "))
    }
}

/// `heading` and `items` joined by `separator`, as a line of `out`, unless there is no item.
fn line_if_any(out: &mut String, heading: &str, items: &[String], separator: &str) {
    if !items.is_empty() {
        let _ = writeln!(out, "{heading}{}", items.join(separator));
    }
}

fn row(out: &mut String, label: &str, measured: &Throughput, hello: f64, calls: &str) {
    let report = &measured.report;
    let ratio = report.requests_per_second / hello;
    let flag = if !label.starts_with("hello") && ratio < THROUGHPUT_RATIO_MIN {
        " ✗"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "| {label} | `{}` | {} | {} | {:.0} | {:.3} | {:.3} | {ratio:.2}x{flag} | {} | {:.3} / {:.3} / {:.3} / {:.3} | {calls} |",
        measured.route,
        measured.expected,
        report.requests,
        report.requests_per_second,
        report.p50_ms,
        report.p99_ms,
        report.unexpected,
        measured.cpu.function_ms,
        measured.cpu.runner_ms,
        measured.cpu.stub_ms,
        measured.cpu.load_generator_ms,
    );
}

/// The harness's own command line, as run.
fn command_line() -> String {
    std::env::args()
        .map(|arg| {
            if arg.contains(' ') {
                format!("'{arg}'")
            } else {
                arg
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cold(binary: &str, init_ms: f64, cpu_ms: f64, faults: f64) -> ColdStart {
        ColdStart {
            binary: binary.to_owned(),
            init_ms: vec![init_ms],
            init_cpu_ms: vec![cpu_ms],
            init_faults: vec![faults],
            ..ColdStart::default()
        }
    }

    fn cold_start_line(part1: &[ColdStart]) -> String {
        summary(part1, None, None, None)
            .lines()
            .find(|line| line.starts_with("- Cold start"))
            .unwrap()
            .to_owned()
    }

    #[test]
    fn a_missed_cold_start_names_its_cpu_and_its_wait_beside_the_baselines() {
        let line = cold_start_line(&[
            cold("hello-runtime", 1.5, 1.0, 113.0),
            cold("get-user", 2.0, 1.5, 260.0),
            cold("place-order", 2.5, 1.6, 270.0),
        ]);
        assert!(
            line.contains("MISSED — worst place-order at 2.50 ms"),
            "{line}"
        );
        assert!(
            line.contains(
                "place-order's init ran 1.60 ms on a CPU with 270 page faults and waited \
                 0.90 ms, against hello-runtime's 1.00 ms, 113 faults and 0.50 ms: of its \
                 1.00 ms more, 0.60 ms is CPU"
            ),
            "{line}"
        );
        assert!(line.contains("and 0.40 ms waiting"), "{line}");

        // Met: nothing to explain.
        let line = cold_start_line(&[
            cold("hello-runtime", 1.5, 1.0, 113.0),
            cold("get-user", 2.0, 1.5, 260.0),
        ]);
        assert!(line.contains("MET"), "{line}");
        assert!(!line.contains("What bounds it"), "{line}");
    }
}
