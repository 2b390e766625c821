//! `bench`: the functions' benchmark against the design's targets (docs/DESIGN.md §6), written as a
//! Markdown report with the command that produced each figure.
//!
//! - Part 1 ([`cold_start`]): every function binary of the template and the hello-world
//!   `lambda_runtime` fixture, spawned one at a time against an in-process Runtime API
//!   ([`runtime_api`]): init time (spawn to first `GET .../invocation/next`), median and p90
//!   over `--runs`; stripped size; peak memory (`VmHWM`) after `--invocations` happy-path
//!   invocations ([`scenarios`]).
//! - Part 2 ([`throughput`]): every HTTP function through `local-cloud up`, closed-loop load
//!   ([`load`]) at a fixed concurrency and count, beside the hello-world `lambda_http`
//!   fixture behind a second runner with the same instances, before and after; and where
//!   each function's CPU per request goes ([`sdk_cost`]): hello-http's, its AWS calls at the
//!   SDK's per-call cost measured in the same run by `sdk-floor` (beside the floor under the
//!   SDK, hyper + SigV4), and the rest, its own.
//! - Part 3 ([`memory_sizes`]): every binary of part 1 under the CPU share Lambda gives each
//!   of `--memory-sizes` (a cgroup per process, `local_cloud::cpu_quota`; 1769 MB = one
//!   vCPU): init, warm duration over sequential invocations (p50 / p90 / mean), cost per
//!   million requests at Lambda's arm64 prices, and the size the table recommends beside
//!   the template's `MemorySize`. Needs a writable cgroup cpu controller (root).
//!
//! Every AWS call goes to `aws-stub` (answers at once, canned data); Redis is a real
//! `redis-server`. `loadtest/bench.sh functions` starts both and runs this.

mod cold_start;
mod figure;
mod memory_sizes;
mod report;
mod runtime_api;
mod scenarios;
mod sdk_cost;
mod throughput;

use anyhow::Context;
use clap::Parser;
use local_cloud::model::{EventSpec, FunctionSpec};
use local_cloud::template::{self, LocalNames};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser, Clone, Debug)]
#[command(version, about)]
pub struct Args {
    /// The SAM template whose functions are measured.
    #[arg(long, default_value = "template.yaml")]
    template: PathBuf,
    /// The runner's fixture template, for the hello-world `lambda_http` function.
    #[arg(long, default_value = "infra/local-cloud/fixtures/template.yaml")]
    fixtures_template: PathBuf,
    /// Where the function, fixture and runner binaries are.
    #[arg(long, default_value = "target/release")]
    binaries_dir: PathBuf,
    /// The AWS stub every function calls.
    #[arg(long, default_value = "http://127.0.0.1:3920")]
    stub_url: String,
    /// The real Redis the seckill functions use; required unless `--from-json`.
    #[arg(long, env = "REDIS_URL", default_value = "")]
    redis_url: String,
    /// The in-process Runtime API of part 1.
    #[arg(long, default_value = "127.0.0.1:3923")]
    runtime_address: SocketAddr,
    /// The runner of the template's functions (part 2).
    #[arg(long, default_value = "127.0.0.1:3921")]
    app_address: SocketAddr,
    /// The runner of the hello-world fixture (part 2).
    #[arg(long, default_value = "127.0.0.1:3922")]
    hello_address: SocketAddr,
    /// Cold starts per binary.
    #[arg(long, default_value_t = 20)]
    runs: u32,
    /// Part 1 waits (after `sync`) until the 1-minute load average is at most this: a cold
    /// start of a few milliseconds measured while a build's aftermath (its written files
    /// flushed, its jobs' load) still runs reads up to a third slower.
    #[arg(long, default_value_t = 0.5)]
    settle_load: f64,
    /// The longest part 1 waits for `--settle-load`, seconds (0: not at all); then it starts
    /// anyway, and the report says so.
    #[arg(long, default_value_t = 300)]
    settle_max_s: u64,
    /// Invocations served before peak memory is read.
    #[arg(long, default_value_t = 50)]
    invocations: u32,
    /// Instances per function in both runners.
    #[arg(long, default_value_t = 4)]
    instances: u32,
    #[arg(long, default_value_t = 32)]
    concurrency: u32,
    /// Measured requests per function.
    #[arg(long, default_value_t = 20_000)]
    requests: u64,
    /// Upper bound of each function's load, seconds.
    #[arg(long, default_value_t = 20.0)]
    duration: f64,
    /// Unmeasured requests per function first.
    #[arg(long, default_value_t = 500)]
    warmup: u64,
    /// The stub's process, whose CPU time part 2 reports (it shares the machine).
    #[arg(long)]
    stub_pid: Option<u32>,
    /// Rounds of the SDK and floor probes (each round: both clients, with and without idle gaps).
    #[arg(long, default_value_t = 3)]
    sdk_rounds: u32,
    /// Measured calls per probe.
    #[arg(long, default_value_t = 5_000)]
    sdk_calls: u32,
    /// Unmeasured calls per probe first.
    #[arg(long, default_value_t = 500)]
    sdk_warmup: u32,
    /// Part 3's AWS calls are answered this many ms late (a second `aws-stub --latency-ms`):
    /// Lambda bills the time a function waits on DynamoDB and SQS at its memory's price, and
    /// the instant stub would hide it. An assumption standing for their single-digit
    /// milliseconds within a region; 0 measures against the instant stub.
    #[arg(long, default_value_t = 4.0)]
    memory_aws_latency_ms: f64,
    /// Where part 3's late stub listens.
    #[arg(long, default_value = "127.0.0.1:3924")]
    memory_stub_address: SocketAddr,
    /// Only part 1.
    #[arg(long)]
    skip_throughput: bool,
    /// No part 3 (it needs a writable cgroup cpu controller).
    #[arg(long)]
    skip_memory_sizes: bool,
    /// Part 3's memory sizes, MB, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "128,256,512,1024,1769")]
    memory_sizes: Vec<u32>,
    /// Part 3's cold starts per binary and size (the median is reported).
    #[arg(long, default_value_t = 5)]
    memory_runs: u32,
    /// Part 3's measured warm invocations per binary and size.
    #[arg(long, default_value_t = 200)]
    memory_invocations: u32,
    /// Part 3's unmeasured invocations before them.
    #[arg(long, default_value_t = 20)]
    memory_warmup: u32,
    /// Part 3 measures only these binaries (repeatable; the baselines always run): the smoke
    /// run's subset.
    #[arg(long = "memory-only", value_name = "BINARY")]
    memory_only: Vec<String>,
    /// The CFS period of part 3's cgroups, ms. Lambda does not publish its own: an assumption.
    #[arg(long, default_value_t = 20)]
    cpu_period_ms: u64,
    /// Part 3 records each measured process with `perf record` (DWARF call stacks) into this
    /// directory, as `<binary>-<MB>.data`, over as many invocations again after the measured
    /// ones (`loadtest/bench.sh profile`).
    #[arg(long)]
    perf_dir: Option<PathBuf>,
    /// Measure only these binaries (repeatable; the baselines always run), e.g. to profile one.
    #[arg(long = "only", value_name = "BINARY")]
    only: Vec<String>,
    /// An extra variable for every process of part 1, as NAME=VALUE (repeatable): for
    /// experiments, e.g. `SSL_CERT_FILE=...` to see what loading the trust store costs.
    #[arg(long = "env", value_parser = parse_pair)]
    extra_env: Vec<(String, String)>,
    /// Where the report goes.
    #[arg(long, default_value = "loadtest/results/functions.md")]
    out: PathBuf,
    /// Logs, raw JSON results, scratch files.
    #[arg(long, default_value = ".local/bench-fn")]
    work_dir: PathBuf,
    /// The command line to print in the report as the one that produced it.
    #[arg(long, default_value = "loadtest/bench.sh functions")]
    command: String,
    /// Exit with an error when an init failed or any answer was not the happy path's (the
    /// smoke run's check); the figures themselves are never judged here.
    #[arg(long)]
    fail_off_happy_path: bool,
    /// Render the report again from a run's saved figures (its `functions.json`), measuring
    /// nothing.
    #[arg(long)]
    from_json: Option<PathBuf>,
    /// Hand-written analysis appended to the report.
    #[arg(long)]
    notes: Option<PathBuf>,
}

fn parse_pair(raw: &str) -> Result<(String, String), String> {
    raw.split_once('=')
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .ok_or_else(|| format!("expected NAME=VALUE, got {raw:?}"))
}

pub const REGION: &str = "us-east-1";
pub const ACCOUNT: &str = "123456789012";

/// Endpoints, region and credentials every function process and runner gets.
fn base_env(args: &Args) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = ["PATH", "HOME"]
        .iter()
        .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
        .collect();
    env.extend(
        [
            ("AWS_ENDPOINT_URL", args.stub_url.as_str()),
            ("AWS_REGION", REGION),
            ("AWS_DEFAULT_REGION", REGION),
            ("AWS_ACCESS_KEY_ID", "bench"),
            ("AWS_SECRET_ACCESS_KEY", "bench"),
            ("REDIS_URL", args.redis_url.as_str()),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned())),
    );
    env
}

/// A function's environment as the runner and Lambda give it, but for the Runtime API. The
/// bench's endpoints win over the template's: it declares `AWS_ENDPOINT_URL` and `REDIS_URL`
/// empty (for `sam local`'s env-vars file), and an empty one would send the functions to AWS.
fn function_env(args: &Args, spec: Option<&FunctionSpec>, binary: &str) -> Vec<(String, String)> {
    let task_root = std::path::absolute(&args.binaries_dir).unwrap_or_default();
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    if let Some(spec) = spec {
        env.extend(spec.environment.clone());
    }
    env.extend(base_env(args));
    // Invoked straight through the Runtime API, with no distribution in front to add the
    // header that the template's value would require, as under `sam local`.
    env.insert(app::http::ORIGIN_VERIFY_ENV.to_owned(), String::new());
    let name = spec.map_or(binary, |spec| spec.name.as_str()).to_owned();
    let memory = spec.map_or(128, |spec| spec.memory_mb);
    env.extend(
        [
            ("AWS_LAMBDA_FUNCTION_NAME", name.clone()),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", memory.to_string()),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST".to_owned()),
            ("AWS_LAMBDA_LOG_GROUP_NAME", format!("/aws/lambda/{name}")),
            ("AWS_LAMBDA_INITIALIZATION_TYPE", "on-demand".to_owned()),
            (
                "_HANDLER",
                spec.map_or("bootstrap", |spec| spec.handler.as_str())
                    .to_owned(),
            ),
            ("LAMBDA_TASK_ROOT", task_root.display().to_string()),
        ]
        .map(|(k, v)| (k.to_owned(), v)),
    );
    env.extend(args.extra_env.iter().cloned());
    env.into_iter().collect()
}

fn is_http(spec: &FunctionSpec) -> bool {
    spec.events
        .iter()
        .any(|event| matches!(event, EventSpec::Http(_)))
}

fn load_model(args: &Args, path: &Path, stack: &str) -> anyhow::Result<Vec<FunctionSpec>> {
    let names = LocalNames {
        stack_name: stack.to_owned(),
        region: REGION.to_owned(),
        account_id: ACCOUNT.to_owned(),
        sqs_endpoint: args.stub_url.trim_end_matches('/').to_owned(),
    };
    let mut functions = template::load(path, &BTreeMap::new(), &names)?.functions;
    // Each function is measured as the binary of its own crate (functions/<Handler>), not as
    // the bundle the template deploys it in (functions/bundle-*), whose size would blur whose
    // code is measured; `--sam-build` links each function's name to its bundle's bootstrap,
    // which runs the function that `_HANDLER` names.
    for spec in &mut functions {
        if spec.handler != "bootstrap" {
            spec.binary = spec.handler.clone();
        }
    }
    Ok(functions)
}

async fn part2(
    args: &Args,
    functions: &[FunctionSpec],
    stack: &str,
    fixture: &Arc<scenarios::Fixture>,
) -> anyhow::Result<report::Part2> {
    let tokens = Arc::new(throughput::Tokens::mint()?);
    let runner = throughput::runner_program(&args.binaries_dir);
    let env = base_env(args);
    // From the whole template: `--only` narrows what is measured, not what runs.
    let disabled: Vec<String> = load_model(args, &args.template, stack)?
        .iter()
        .filter(|spec| !is_http(spec))
        .map(|spec| spec.name.clone())
        .collect();
    eprintln!("part 2: starting the runners");
    let mut app = throughput::Runner::start(
        &runner,
        &args.template,
        &args.binaries_dir,
        args.app_address,
        args.instances,
        stack,
        &disabled,
        &env,
        &args.work_dir.join("runner-app.log"),
    )
    .await
    .context("failed to start the runner of the template")?;
    // Only the route runs: the fixtures' queue and stream pollers would add their own calls.
    let hello_stack = format!("{stack}-hello");
    let hello_disabled: Vec<String> = load_model(args, &args.fixtures_template, &hello_stack)?
        .iter()
        .filter(|spec| !is_http(spec))
        .map(|spec| spec.name.clone())
        .collect();
    let hello = throughput::Runner::start(
        &runner,
        &args.fixtures_template,
        &args.binaries_dir,
        args.hello_address,
        args.instances,
        &hello_stack,
        &hello_disabled,
        &env,
        &args.work_dir.join("runner-hello.log"),
    )
    .await;
    let mut hello = match hello {
        Ok(hello) => hello,
        Err(err) => {
            app.stop().await;
            return Err(err.context("failed to start the runner of the fixtures"));
        }
    };
    let result = async {
        let shape = loadgen::LoadShape {
            concurrency: args.concurrency,
            requests: args.requests,
            duration: Duration::from_secs_f64(args.duration),
            warmup: args.warmup,
        };
        let published = throughput::call_once("publish-sale", &app, fixture, &tokens).await?;
        anyhow::ensure!(
            published == 200,
            "publishing the benchmark's sale answered {published}"
        );
        let mut rows = Vec::new();
        eprintln!("  hello-http (before)");
        let before =
            throughput::measure("hello-http", &hello, shape, fixture, &tokens, args.stub_pid)
                .await?;
        eprintln!("  hello-getitem (hello-http + one GetItem)");
        let hello_getitem = throughput::measure(
            "hello-getitem",
            &hello,
            shape,
            fixture,
            &tokens,
            args.stub_pid,
        )
        .await?;
        for spec in functions.iter().filter(|spec| is_http(spec)) {
            eprintln!("  {}", spec.binary);
            let calls_before = report::stub_calls(&args.stub_url).await.unwrap_or_default();
            let redis_before = sdk_cost::redis_commands(&args.redis_url).await?;
            let mut row = report::Part2Row {
                measured: throughput::measure(
                    &spec.binary,
                    &app,
                    shape,
                    fixture,
                    &tokens,
                    args.stub_pid,
                )
                .await?,
                aws_calls: BTreeMap::new(),
                redis_commands: 0,
            };
            // Less the one `INFO` of each count: it is not in the sum.
            row.redis_commands = sdk_cost::redis_commands(&args.redis_url).await? - redis_before;
            let calls_after = report::stub_calls(&args.stub_url).await.unwrap_or_default();
            for (operation, count) in calls_after {
                let delta = count - calls_before.get(&operation).copied().unwrap_or(0);
                if delta > 0 {
                    row.aws_calls.insert(operation, delta);
                }
            }
            rows.push(row);
        }
        eprintln!("  hello-http (after)");
        let after =
            throughput::measure("hello-http", &hello, shape, fixture, &tokens, args.stub_pid)
                .await?;
        Ok(report::Part2 {
            shape,
            instances: args.instances,
            app_command: app.command.clone(),
            hello_command: hello.command.clone(),
            hello: [before, after],
            hello_getitem: Some(hello_getitem),
            rows,
        })
    }
    .await;
    app.stop().await;
    hello.stop().await;
    result
}

/// Draws the report's figure beside it (`functions.md` → `functions.svg`); answers its file
/// name, for the report's link.
fn draw_figure(results: &report::Results, out: &Path) -> anyhow::Result<String> {
    let path = out.with_extension("svg");
    plot::write(&path, &figure::title(results), &figure::panels(results))?;
    eprintln!("figure written to {}", path.display());
    if let Some(part3) = &results.part3 {
        let name = path.file_name().context("the figure has a file name")?;
        let memory = path.with_file_name(report::memory_figure(&name.to_string_lossy()));
        plot::write(
            &memory,
            &memory_sizes::title(part3, &results.run.date),
            &memory_sizes::panels(part3),
        )?;
        eprintln!("figure written to {}", memory.display());
    }
    Ok(path
        .file_name()
        .context("the report has a file name")?
        .to_string_lossy()
        .into_owned())
}

/// Waits for a quiet machine before part 1: `sync` (so that no build's written files are
/// flushed during it), then until the 1-minute load average is at most `load`, for at most
/// `max`. What it found, for the report.
async fn settle(load: f64, max: Duration) -> String {
    let _ = std::process::Command::new("sync").status();
    let started = std::time::Instant::now();
    loop {
        let now = report::one_minute_load();
        let waited = started.elapsed().as_secs();
        if now.is_some_and(|now| now <= load) {
            return format!(
                "Part 1 started after sync and {waited} s of waiting for the 1-minute load \
                 average to fall to {load:.2} (it read {:.2})",
                now.unwrap_or(f64::NAN)
            );
        }
        if started.elapsed() >= max || now.is_none() {
            return format!(
                "Part 1 started after sync and {waited} s of waiting, with the 1-minute load \
                 average at {} (above --settle-load {load:.2}: its figures read slower)",
                now.map_or("unknown".to_owned(), |now| format!("{now:.2}"))
            );
        }
        eprintln!(
            "  part 1 waits for a quiet machine: 1-minute load average {:.2}, above {load:.2} \
             ({waited} of at most {} s)",
            now.unwrap_or(f64::NAN),
            max.as_secs()
        );
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let notes = match &args.notes {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("failed to read {}", path.display()))?,
        ),
        None => None,
    };
    if let Some(path) = &args.from_json {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("failed to read {}", path.display()))?;
        let mut results: report::Results = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a bench result", path.display()))?;
        // Part 3 is read against the template as it is now: a MemorySize set from the table
        // since the run shows as followed.
        if let Some(part3) = &mut results.part3 {
            let sizes: BTreeMap<String, u32> = load_model(&args, &args.template, "rendered")?
                .into_iter()
                .map(|spec| (spec.binary, spec.memory_mb))
                .collect();
            for function in &mut part3.functions {
                if let Some(&memory_mb) = sizes.get(&function.binary) {
                    function.template_mb = Some(memory_mb);
                }
            }
        }
        let figure = draw_figure(&results, &args.out)?;
        std::fs::write(
            &args.out,
            report::render(&results, notes.as_deref(), &figure),
        )?;
        print!(
            "{}",
            report::summary(
                &results.part1,
                results.part2.as_ref(),
                results.sdk.as_ref(),
                results.part3.as_ref()
            )
        );
        eprintln!("written to {}", args.out.display());
        return Ok(());
    }
    for address in [args.runtime_address, args.app_address, args.hello_address] {
        anyhow::ensure!(
            address.ip().is_loopback(),
            "{address}: the harness listens and runs the runners on loopback only"
        );
    }
    anyhow::ensure!(
        !args.redis_url.is_empty(),
        "--redis-url (or REDIS_URL) is required to measure"
    );
    anyhow::ensure!(
        args.skip_memory_sizes
            || (!args.memory_sizes.is_empty() && !args.memory_sizes.contains(&0)),
        "--memory-sizes needs at least one size, none of them 0"
    );
    // Before anything is measured: a machine that cannot enforce Lambda's CPU share fails now.
    let cpu_quota = if args.skip_memory_sizes {
        None
    } else {
        Some(local_cloud::cpu_quota::CpuQuota::new(
            &format!("bench.{}", std::process::id()),
            Duration::from_millis(args.cpu_period_ms),
            "part 3 (--skip-memory-sizes)",
        )?)
    };
    let mut run = report::RunInfo::now(
        &args.command,
        args.runs,
        args.invocations,
        &args.binaries_dir.display().to_string(),
        &args.work_dir.display().to_string(),
    );
    // Each process runs in its binary's directory, as Lambda's task root; the runners are
    // given the directory as it was given (the report shows their command lines).
    let binaries = std::path::absolute(&args.binaries_dir)?;
    std::fs::create_dir_all(&args.work_dir)?;
    let stack = format!("bench{}", std::process::id());
    let functions: Vec<FunctionSpec> = load_model(&args, &args.template, &stack)?
        .into_iter()
        .filter(|spec| args.only.is_empty() || args.only.contains(&spec.binary))
        .collect();
    let fixture = Arc::new(scenarios::Fixture::new());

    let mut subjects: Vec<cold_start::Subject> = Vec::new();
    for baseline in ["hello-runtime", "hello-http"] {
        subjects.push(cold_start::Subject {
            binary: baseline.to_owned(),
            program: binaries.join(baseline),
            env: function_env(&args, None, baseline),
            http: baseline == "hello-http",
        });
    }
    for spec in &functions {
        subjects.push(cold_start::Subject {
            binary: spec.binary.clone(),
            program: binaries.join(&spec.binary),
            env: function_env(&args, Some(spec), &spec.binary),
            http: is_http(spec),
        });
    }

    eprintln!(
        "part 1: {} binaries, {} cold starts each",
        subjects.len(),
        args.runs
    );
    run.settled = Some(settle(args.settle_load, Duration::from_secs(args.settle_max_s)).await);
    let runtime = runtime_api::RuntimeApi::start(args.runtime_address).await?;
    let part1 = cold_start::measure(
        &subjects,
        &runtime,
        args.runs,
        args.invocations,
        &fixture,
        &args.work_dir,
    )
    .await?;

    let part3 = match &cpu_quota {
        Some(quota) => {
            // Against the late stub, when there is one (stopped when dropped).
            let late_stub = if args.memory_aws_latency_ms > 0.0 {
                Some(
                    memory_sizes::LateStub::start(
                        &binaries.join("aws-stub"),
                        args.memory_stub_address,
                        args.memory_aws_latency_ms,
                        &args.work_dir.join("stub-late.log"),
                    )
                    .await?,
                )
            } else {
                None
            };
            let measured: Vec<cold_start::Subject> = subjects
                .iter()
                .filter(|s| {
                    s.binary.starts_with("hello-")
                        || args.memory_only.is_empty()
                        || args.memory_only.contains(&s.binary)
                })
                .map(|subject| match &late_stub {
                    Some(stub) => stub.serve(subject),
                    None => subject.clone(),
                })
                .collect();
            let template_mb: BTreeMap<String, u32> = functions
                .iter()
                .map(|spec| (spec.binary.clone(), spec.memory_mb))
                .collect();
            eprintln!(
                "part 3: {} binaries at {:?} MB, {} cold starts and {} + {} invocations each",
                measured.len(),
                args.memory_sizes,
                args.memory_runs,
                args.memory_warmup,
                args.memory_invocations
            );
            let shape = memory_sizes::Shape {
                runs: args.memory_runs.max(1),
                warmup: args.memory_warmup,
                invocations: args.memory_invocations,
            };
            let mut part3 = memory_sizes::measure(
                &measured,
                &template_mb,
                quota,
                &runtime,
                &args.memory_sizes,
                shape,
                &fixture,
                &args.work_dir,
                args.perf_dir.as_deref(),
            )
            .await?;
            part3.aws_latency_ms = args.memory_aws_latency_ms.max(0.0);
            Some(part3)
        }
        None => None,
    };

    let (sdk, part2) = if args.skip_throughput {
        (None, None)
    } else {
        eprintln!("the SDK's per-call cost and its floor");
        let sdk = sdk_cost::measure(
            // As given (relative), for the report's command line.
            &args.binaries_dir.join("sdk-floor"),
            &base_env(&args),
            args.sdk_rounds,
            args.sdk_calls,
            args.sdk_warmup,
        )
        .await?;
        (
            Some(sdk),
            Some(part2(&args, &functions, &stack, &fixture).await?),
        )
    };

    run.load_average.push(report::load_average());
    let results = report::Results {
        run,
        part1,
        part2,
        sdk,
        part3,
    };
    std::fs::write(
        args.work_dir.join("functions.json"),
        serde_json::to_string_pretty(&results)?,
    )?;
    if let Some(parent) = args.out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let figure = draw_figure(&results, &args.out)?;
    let text = report::render(&results, notes.as_deref(), &figure);
    let (part1, part2, sdk, part3) = (results.part1, results.part2, results.sdk, results.part3);
    std::fs::write(&args.out, &text)?;
    print!(
        "{}",
        report::summary(&part1, part2.as_ref(), sdk.as_ref(), part3.as_ref())
    );
    eprintln!("written to {}", args.out.display());
    if args.fail_off_happy_path {
        let sdk_failures = sdk.as_ref().map_or(0, sdk_cost::SdkCost::failed);
        anyhow::ensure!(
            sdk_failures == 0,
            "{sdk_failures} calls of the SDK probe or its floor failed against the stub"
        );
        let init_failures: u32 = part1.iter().map(|c| c.init_failures).sum();
        let invocation_failures: u32 = part1.iter().map(|c| c.invocations_failed).sum();
        let unexpected: u64 = part2
            .iter()
            .flat_map(|part2| part2.rows.iter())
            .map(|row| row.measured.report.unexpected)
            .sum::<u64>()
            + part2.as_ref().map_or(0, |part2| {
                part2.hello.iter().map(|h| h.report.unexpected).sum()
            });
        let init_failures =
            init_failures + part3.as_ref().map_or(0, memory_sizes::Part3::init_failures);
        let invocation_failures = invocation_failures
            + part3
                .as_ref()
                .map_or(0, memory_sizes::Part3::invocations_failed);
        anyhow::ensure!(
            init_failures + invocation_failures == 0 && unexpected == 0,
            "off the happy path: {init_failures} init failures, {invocation_failures} failed \
             invocations, {unexpected} unexpected HTTP answers (see {})",
            args.out.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_function_of_the_template_gets_the_benchs_stub_and_redis() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let args = Args::parse_from([
            "bench",
            "--redis-url",
            "redis://127.0.0.1:6390",
            "--stub-url",
            "http://127.0.0.1:3999",
        ]);
        let functions = load_model(&args, &root.join("template.yaml"), "bench").expect("template");
        let place_order = functions
            .iter()
            .find(|spec| spec.name.contains("PlaceOrder"))
            .expect("the order function");
        assert!(place_order.environment.contains_key("REDIS_URL"));
        for spec in &functions {
            let env: BTreeMap<_, _> = function_env(&args, Some(spec), "x").into_iter().collect();
            assert_eq!(env["REDIS_URL"], "redis://127.0.0.1:6390", "{}", spec.name);
            assert_eq!(
                env["AWS_ENDPOINT_URL"], "http://127.0.0.1:3999",
                "{}",
                spec.name
            );
            // The events come straight from the harness, without the distribution's header.
            assert_eq!(env[app::http::ORIGIN_VERIFY_ENV], "", "{}", spec.name);
        }
    }

    /// Part 2 loads every HTTP function of the template: a function added without its
    /// scenario stops the benchmark ("no scenario for ..."), so it is caught here first, and a
    /// scenario must call its function's own route.
    #[test]
    fn every_http_function_of_the_template_has_a_scenario_on_its_route() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let args = Args::parse_from(["bench"]);
        let functions = load_model(&args, &root.join("template.yaml"), "bench").expect("template");
        let fixture = scenarios::Fixture::new();
        let mut checked = 0;
        for spec in functions.iter().filter(|spec| is_http(spec)) {
            let call = scenarios::http_call(&spec.binary, &fixture, 0)
                .unwrap_or_else(|| panic!("no scenario for {}", spec.binary));
            let routes: Vec<(String, String)> = spec
                .events
                .iter()
                .filter_map(|event| match event {
                    EventSpec::Http(route) => Some((route.method.clone(), route.path.clone())),
                    _ => None,
                })
                .collect();
            assert!(
                routes.contains(&(call.method.to_owned(), call.route.to_owned())),
                "{}'s scenario calls {} {}, its routes are {routes:?}",
                spec.binary,
                call.method,
                call.route
            );
            checked += 1;
        }
        assert!(
            checked >= 20,
            "only {checked} HTTP functions in the template"
        );
    }
}
