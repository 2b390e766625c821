//! The report of a run: a table per part, the commands, the machine, and which targets are
//! met or missed and by how much.
//!
//! Layout:
//! - here, what was measured: the targets, part 2's rows ([`Part2`]), how the run was made
//!   ([`RunInfo`]), everything saved ([`Results`]), and the stub's call counts.
//! - `verdicts`: the judging, one summary line per target, met or missed and what bounds it
//!   ([`summary`]).
//! - `markdown`: the rendering, the whole report ([`render`]).

mod markdown;
mod verdicts;

pub use markdown::{listed, memory_figure, render};
pub use verdicts::summary;

use crate::cold_start::ColdStart;
use crate::memory_sizes::Part3;
use crate::sdk_cost::SdkCost;
use crate::throughput::Throughput;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use loadgen::LoadShape;
use std::collections::BTreeMap;

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

fn is_baseline(binary: &str) -> bool {
    binary.starts_with("hello-")
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
