//! `perf-attribution`: where a warm invocation's CPU goes, from the `perf record` files that
//! `bench --perf-dir` writes in part 3 (`loadtest/bench.sh profile`).
//!
//! Every sample's call stack (DWARF-unwound, inlined frames included) is walked from the leaf
//! up, and the first frame whose function belongs to a known owner names the sample's owner,
//! so a cost is charged to whoever asked for it: the `tracing` subscriber's work counts as
//! logging whether our span or the SDK's asked for it, a system call counts as its caller's,
//! and hyper's connection tasks count as the SDK's or the runtime client's by the body type
//! they carry. A sample with no user-space frame is the kernel's alone (an interrupt, a page
//! fault). CPU per invocation is part 3's, from the run's `functions.json`, measured over
//! invocations perf did not record (its DWARF stack copies cost the process CPU).
//!
//! `perf-attribution --results <functions.json> --perf-dir <dir>` prints a Markdown section:
//! one table of shares per recorded binary and size, and one of µs per invocation by owner
//! across them.

use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(clap::Parser, Debug)]
struct Args {
    /// The run's raw figures (`bench`'s `<work-dir>/functions.json`), for CPU per invocation.
    #[arg(long)]
    results: PathBuf,
    /// Where `bench --perf-dir` wrote `<binary>-<MB>.data`.
    #[arg(long)]
    perf_dir: PathBuf,
}

/// The owners a sample can have, in the order the tables list them, each with the frame
/// fragments that name it. The first frame from the leaf that holds any fragment wins.
const OWNERS: [(&str, &[&str]); 8] = [
    (
        "logging: the `tracing` subscriber (spans, fields, lines)",
        &[
            "tracing_subscriber",
            "tracing_core::dispatch",
            "sharded_slab",
        ],
    ),
    (
        "metrics: the EMF recorder and line",
        &["app::emf", "metrics_cloudwatch_embedded"],
    ),
    (
        "AWS SDK: build, sign, send, parse (and its HTTP connection)",
        &[
            "aws_smithy",
            "aws_sdk_",
            "aws_sigv4",
            "aws_runtime",
            "aws_types",
            "SdkBody",
        ],
    ),
    ("Redis client", &["redis::"]),
    (
        "ours: routes, stores, claims, validation, responses (`app::`)",
        &["app::"],
    ),
    (
        "lambda_http: the event into a request, the response out",
        &["lambda_http"],
    ),
    (
        "lambda_runtime: Runtime API polls, the event's JSON, its span",
        &["lambda_runtime", "aws_lambda_events"],
    ),
    (
        "tokio: its I/O and timer drivers, parking",
        &[
            "tokio::runtime::io",
            "tokio::runtime::time",
            "tokio::runtime::driver",
            "tokio::runtime::park",
            "mio::",
        ],
    ),
];

const KERNEL: &str = "kernel only: sockets, scheduling, faults (no user frame)";
const OTHER: &str = "other user space (allocator, std, unattributed glue)";

/// Samples per owner.
type Counts = BTreeMap<&'static str, u64>;

/// The path of the function a frame is in, without its generic arguments: `a::b::f` of
/// `a::b::f<T>`, and the type `X` of `<X as Trait>::f`. Generic arguments name other crates
/// (`process_invocation<…app::http::run…>` is lambda_runtime's, not ours).
fn head(frame: &str) -> &str {
    let inner = frame.strip_prefix('<').unwrap_or(frame);
    let end = inner.find(['<', '(', ' ']).unwrap_or(inner.len());
    &inner[..end]
}

/// The owner a frame names, if any: by its function's path, or for hyper's connection tasks
/// (whose functions are hyper's and futures') by the body type they carry.
fn frame_owner(frame: &str) -> Option<&'static str> {
    let path = head(frame);
    for (name, fragments) in OWNERS {
        if fragments.iter().any(|fragment| path.contains(fragment)) {
            return Some(name);
        }
    }
    if frame.contains("SdkBody") {
        return Some(OWNERS[SDK].0);
    }
    if frame.contains("lambda_runtime_api_client") {
        return Some(OWNERS[RUNTIME].0);
    }
    None
}

/// Indexes into [`OWNERS`].
const SDK: usize = 2;
const OURS: usize = 4;
const RUNTIME: usize = 6;

fn owner(frames: &[String]) -> &'static str {
    if frames.iter().all(|frame| frame.starts_with("[k]")) {
        return KERNEL;
    }
    // A system call is charged to whoever made it: the kernel's frames are skipped.
    frames
        .iter()
        .filter(|frame| !frame.starts_with("[k]"))
        .find_map(|frame| frame_owner(frame))
        .unwrap_or(OTHER)
}

/// Counts the samples of `perf script -F ip,sym --no-inline` output by owner. Kernel frames
/// are marked `[k]` (their addresses are in the kernel's half).
fn attribute(script: &str) -> Counts {
    let mut counts = Counts::new();
    let mut frames: Vec<String> = Vec::new();
    let finish = |frames: &mut Vec<String>, counts: &mut Counts| {
        if !frames.is_empty() {
            *counts.entry(owner(frames)).or_default() += 1;
        }
        frames.clear();
    };
    for line in script.lines() {
        if line.trim().is_empty() {
            finish(&mut frames, &mut counts);
        } else if line.starts_with(char::is_whitespace) {
            let mut parts = line.split_whitespace();
            let address = parts.next().unwrap_or_default();
            let symbol = parts.collect::<Vec<_>>().join(" ");
            let kernel = address.len() == 16 && address.starts_with("ffff");
            frames.push(if kernel {
                format!("[k]{symbol}")
            } else {
                symbol
            });
        } else {
            // A new sample's header (perf prints one before the frames).
            finish(&mut frames, &mut counts);
        }
    }
    finish(&mut frames, &mut counts);
    counts
}

fn perf_script(data: &Path) -> anyhow::Result<String> {
    let output = std::process::Command::new("perf")
        // Inlined frames too: their names carry the generic arguments that tell whose
        // connection a hyper task serves.
        .args(["script", "-F", "comm,ip,sym", "-i"])
        .arg(data)
        .output()
        .context("cannot run perf (Debian's linux-perf)")?;
    anyhow::ensure!(
        output.status.success(),
        "perf script -i {} failed: {}",
        data.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Part 3's CPU ms per warm invocation of `binary` at `memory_mb`, from the run's JSON.
fn cpu_ms(results: &serde_json::Value, binary: &str, memory_mb: u64) -> Option<f64> {
    let function = results
        .pointer("/part3/functions")?
        .as_array()?
        .iter()
        .find(|f| f.get("binary").and_then(|b| b.as_str()) == Some(binary))?;
    let row = function
        .get("sizes")?
        .as_array()?
        .iter()
        .find(|row| row.get("memory_mb").and_then(|m| m.as_u64()) == Some(memory_mb))?;
    let cpu = row.get("cpu_ms")?.as_f64()?;
    let invocations = row.get("warm_ms")?.as_array()?.len();
    (invocations > 0).then(|| cpu / invocations as f64)
}

struct Recorded {
    binary: String,
    memory_mb: u64,
    counts: Counts,
    cpu_us: Option<f64>,
}

impl Recorded {
    fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    fn share(&self, owner: &str) -> f64 {
        self.counts.get(owner).copied().unwrap_or(0) as f64 / self.total().max(1) as f64
    }
}

fn owners() -> impl Iterator<Item = &'static str> {
    OWNERS.iter().map(|(name, _)| *name).chain([OTHER, KERNEL])
}

fn render(recorded: &[Recorded]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let header: Vec<String> = recorded
        .iter()
        .map(|r| format!("{} ({} MB)", r.binary, r.memory_mb))
        .collect();
    let _ = writeln!(
        out,
        "| owner | {} |\n|---|{}",
        header.join(" | "),
        "---:|".repeat(recorded.len())
    );
    for owner in owners() {
        let cells: Vec<String> = recorded
            .iter()
            .map(|r| match r.cpu_us {
                Some(cpu) => format!(
                    "{:.1} ({:.0}%)",
                    cpu * r.share(owner),
                    r.share(owner) * 100.0
                ),
                None => format!("{:.0}%", r.share(owner) * 100.0),
            })
            .collect();
        let _ = writeln!(out, "| {owner} | {} |", cells.join(" | "));
    }
    // The function's own, as the per-request target counts it: our code, its logs, its metrics.
    let own_owners = [OWNERS[0].0, OWNERS[1].0, OWNERS[OURS].0];
    let own: Vec<String> = recorded
        .iter()
        .map(|r| {
            let share: f64 = own_owners.iter().map(|owner| r.share(owner)).sum();
            match r.cpu_us {
                Some(cpu) => format!("**{:.1} ({:.0}%)**", cpu * share, share * 100.0),
                None => format!("**{:.0}%**", share * 100.0),
            }
        })
        .collect();
    let _ = writeln!(
        out,
        "| **the function's own: ours, logging and metrics** | {} |",
        own.join(" | ")
    );
    let totals: Vec<String> = recorded
        .iter()
        .map(|r| match r.cpu_us {
            Some(cpu) => format!("**{cpu:.1}** ({} samples)", r.total()),
            None => format!("({} samples)", r.total()),
        })
        .collect();
    let _ = writeln!(
        out,
        "| CPU µs per warm invocation (part 3) | {} |",
        totals.join(" | ")
    );
    out
}

fn main() -> anyhow::Result<()> {
    let args = <Args as clap::Parser>::parse();
    let results: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&args.results)
            .with_context(|| format!("cannot read {}", args.results.display()))?,
    )?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&args.perf_dir)
        .with_context(|| format!("cannot read {}", args.perf_dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "data"))
        .collect();
    files.sort();
    anyhow::ensure!(
        !files.is_empty(),
        "no perf recording in {}",
        args.perf_dir.display()
    );
    let mut recorded = Vec::new();
    for file in files {
        let stem = file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let (binary, memory) = stem
            .rsplit_once('-')
            .with_context(|| format!("{} is not <binary>-<MB>.data", file.display()))?;
        let memory_mb: u64 = memory.parse()?;
        eprintln!("  attributing {binary} at {memory_mb} MB");
        let counts = attribute(&perf_script(&file)?);
        recorded.push(Recorded {
            binary: binary.to_owned(),
            memory_mb,
            cpu_us: cpu_ms(&results, binary, memory_mb).map(|ms| ms * 1e3),
            counts,
        });
    }
    print!("{}", render(&recorded));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "\
get-user 
\t          46f5e0 core::fmt::write
\t          3e47ed tracing_subscriber::fmt::format::DefaultVisitor::record_str
\t          233af2 aws_smithy_runtime::client::orchestrator::invoke
\t          23ab6e get_user::main

get-user 
\t          46f5e0 hyper::proto::h1::dispatch::Dispatcher<hyper::body::Incoming, aws_smithy_types::body::SdkBody>::poll_write
\t          23ab6e tokio::runtime::task::raw::poll

get-user 
\tffffffff8226e079 _raw_spin_unlock_irqrestore
\tffffffff81e82f7e sock_def_readable

get-user 
\t          46f5e0 malloc
\t          233af2 app::http::answer
\t          241e7e lambda_http::TransformResponse::poll

get-user 
\t          46f5e0 memcpy

get-user 
\tffffffff8226e079 tcp_sendmsg
\t          46f5e0 __GI___writev
\t          3e47ed lambda_runtime::runtime::process_invocation<tower::util::service_fn::ServiceFn<app::http::run::{closure#0}>>
";

    #[test]
    fn each_sample_goes_to_the_first_owner_from_its_leaf() {
        let counts = attribute(SCRIPT);
        let of = |owner: &str| counts.get(owner).copied().unwrap_or(0);
        // The subscriber's formatting, though the SDK asked for the span.
        assert_eq!(of(OWNERS[0].0), 1);
        // hyper's connection task carrying the SDK's body.
        assert_eq!(of(OWNERS[2].0), 1);
        assert_eq!(of(KERNEL), 1);
        // The allocator called from our code is ours.
        assert_eq!(of(OWNERS[4].0), 1);
        assert_eq!(of(OTHER), 1);
        // A system call is its caller's; lambda_runtime's, though its generic argument is ours.
        assert_eq!(of(OWNERS[RUNTIME].0), 1);
        assert_eq!(counts.values().sum::<u64>(), 6);
    }

    #[test]
    fn cpu_per_invocation_comes_from_part_3s_row() {
        let results = serde_json::json!({"part3": {"functions": [
            {"binary": "get-user", "sizes": [
                {"memory_mb": 128, "cpu_ms": 1.0, "warm_ms": [1.0]},
                {"memory_mb": 1769, "cpu_ms": 3.0, "warm_ms": [0.5, 0.5, 0.5, 0.5]}
            ]}
        ]}});
        assert_eq!(cpu_ms(&results, "get-user", 1769), Some(0.75));
        assert_eq!(cpu_ms(&results, "get-user", 512), None);
        assert_eq!(cpu_ms(&results, "follow", 1769), None);
    }
}
