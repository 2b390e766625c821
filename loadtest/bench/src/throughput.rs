//! Part 2: each HTTP function's throughput through the local runner (`local-cloud up`, every
//! AWS call answered by the stub), beside the hello-world `lambda_http` fixture behind a
//! second runner with the same instances, measured before and after the functions.

use crate::cold_start::vm_hwm_kb;
use crate::scenarios::{self, ADMIN, Call, Fixture, ORDER_OWNER, USERS};
use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::Full;
use loadgen::{Bodies, Connection, LoadReport, LoadShape};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a runner may take to provision and start every instance.
const READY_TIMEOUT: Duration = Duration::from_secs(180);
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// One `local-cloud up`, stopped by PID.
pub struct Runner {
    child: tokio::process::Child,
    pub pid: u32,
    pub address: SocketAddr,
    pub command: String,
}

impl Runner {
    /// Starts the runner and waits until it serves the HTTP API.
    #[expect(
        clippy::too_many_arguments,
        reason = "each is one setting of the measurement, named at the call"
    )]
    pub async fn start(
        program: &Path,
        template: &Path,
        binaries_dir: &Path,
        address: SocketAddr,
        instances: u32,
        stack_name: &str,
        disabled_sources: &[String],
        env: &[(String, String)],
        log: &Path,
    ) -> anyhow::Result<Self> {
        let mut args: Vec<String> = vec![
            "up".into(),
            "--template".into(),
            template.display().to_string(),
            "--binaries-dir".into(),
            binaries_dir.display().to_string(),
            "--address".into(),
            address.to_string(),
            "--instances".into(),
            instances.to_string(),
            "--quiet".into(),
            "--stack-name".into(),
            stack_name.into(),
            // A throughput measurement drives each route far beyond the template's throttling.
            "--route-throttling".into(),
            "off".into(),
        ];
        for name in disabled_sources {
            args.push("--disable-sources".into());
            args.push(name.clone());
        }
        let command = format!("{} {}", program.display(), args.join(" "));
        let log_file = std::fs::File::create(log)
            .with_context(|| format!("failed to create {}", log.display()))?;
        let child = tokio::process::Command::new(program)
            .args(&args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("failed to start {}", program.display()))?;
        let pid = child.id().context("the runner exited at once")?;
        let mut runner = Self {
            child,
            pid,
            address,
            command,
        };
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            if text.contains("ready on") {
                return Ok(runner);
            }
            if let Some(status) = runner.child.try_wait()? {
                bail!("the runner exited ({status}) before it was ready:\n{text}");
            }
            if started.elapsed() > READY_TIMEOUT {
                runner.stop().await;
                bail!("the runner was not ready within {READY_TIMEOUT:?}:\n{text}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Its function processes: (pid, binary name).
    fn functions(&self) -> Vec<(u32, String)> {
        let mut found = Vec::new();
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return found;
        };
        for entry in entries.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // After the command name in parentheses: state, then the parent's pid.
            let parent = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|ppid| ppid.parse::<u32>().ok());
            if parent != Some(self.pid) {
                continue;
            }
            if let Some(binary) = std::fs::read_link(format!("/proc/{pid}/exe"))
                .ok()
                .and_then(|exe| exe.file_name().map(|n| n.to_string_lossy().into_owned()))
            {
                found.push((pid, binary));
            }
        }
        found
    }

    /// Peak memory (`VmHWM`, kB) of each of its function binaries, the highest instance's.
    pub fn function_peaks(&self) -> HashMap<String, u64> {
        let mut peaks = HashMap::new();
        for (pid, binary) in self.functions() {
            if let Some(kb) = vm_hwm_kb(pid) {
                let peak = peaks.entry(binary).or_insert(0);
                *peak = (*peak).max(kb);
            }
        }
        peaks
    }

    /// CPU seconds used so far by the runner itself and by the instances of `binary`.
    fn cpu(&self, binary: &str) -> (f64, f64) {
        let instances = self
            .functions()
            .into_iter()
            .filter(|(_, name)| name == binary)
            .filter_map(|(pid, _)| cpu_seconds(pid))
            .sum();
        (cpu_seconds(self.pid).unwrap_or(0.0), instances)
    }

    /// SIGINT (the runner stops its functions in order), then a kill if it lingers.
    pub async fn stop(&mut self) {
        let _ = std::process::Command::new("kill")
            .arg("-INT")
            .arg(self.pid.to_string())
            .status();
        if tokio::time::timeout(STOP_TIMEOUT, self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }
}

/// CPU seconds (user + system) a process has used, from `/proc/<pid>/stat`.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / CLOCK_TICKS)
}

/// `getconf CLK_TCK` on Linux.
const CLOCK_TICKS: f64 = 100.0;

/// Where the CPU went during one load, in milliseconds per request.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct CpuPerRequest {
    pub function_ms: f64,
    pub runner_ms: f64,
    pub stub_ms: f64,
    pub load_generator_ms: f64,
}

/// One function's load through the runner.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Throughput {
    pub binary: String,
    pub route: String,
    pub expected: u16,
    pub report: LoadReport,
    /// Highest `VmHWM` of its instances after the load, kB.
    pub vm_hwm_kb: Option<u64>,
    pub cpu: CpuPerRequest,
}

/// Bearer tokens of every user the scenarios use, minted once.
pub struct Tokens(HashMap<String, String>);

impl Tokens {
    pub fn mint() -> anyhow::Result<Self> {
        let secret = local_cloud::jwt::secret_from_env();
        let ttl = Duration::from_secs(3 * 3600);
        let mut tokens = HashMap::new();
        let mut add = |sub: String, groups: &[String]| -> anyhow::Result<()> {
            let token = local_cloud::jwt::local_token(&secret, &sub, groups, ttl)?;
            tokens.insert(sub, token);
            Ok(())
        };
        for i in 0..USERS {
            add(format!("user-{i:05}"), &[])?;
        }
        add(ORDER_OWNER.to_owned(), &[])?;
        add(ADMIN.to_owned(), &["admin".to_owned()])?;
        Ok(Self(tokens))
    }
}

fn http_request(call: &Call, address: SocketAddr, tokens: &Tokens) -> http::Request<Full<Bytes>> {
    let mut builder = http::Request::builder()
        .method(call.method)
        .uri(call.path_and_query())
        .header("host", address.to_string());
    if let Some(caller) = &call.caller
        && let Some(token) = tokens.0.get(&caller.sub)
    {
        builder = builder.header("authorization", format!("Bearer {token}"));
    }
    for (name, value) in &call.headers {
        builder = builder.header(*name, value);
    }
    let body = match &call.body {
        Some(body) => {
            builder = builder.header("content-type", "application/json");
            Bytes::from(body.clone())
        }
        None => Bytes::new(),
    };
    builder.body(Full::new(body)).expect("a valid request")
}

/// Loads one function's route (`binary` as the scenarios know it) through `runner`.
pub async fn measure(
    binary: &str,
    runner: &Runner,
    shape: LoadShape,
    fixture: &Arc<Fixture>,
    tokens: &Arc<Tokens>,
    stub_pid: Option<u32>,
) -> anyhow::Result<Throughput> {
    let first = scenarios::http_call(binary, fixture, 0)
        .with_context(|| format!("no scenario for {binary}"))?;
    let address = runner.address;
    let me = std::process::id();
    let snapshot = || {
        let (runner_cpu, function_cpu) = runner.cpu(binary);
        (
            function_cpu,
            runner_cpu,
            stub_pid.and_then(cpu_seconds).unwrap_or(0.0),
            cpu_seconds(me).unwrap_or(0.0),
        )
    };
    let before = snapshot();
    let (name, fixture, tokens) = (binary.to_owned(), fixture.clone(), tokens.clone());
    let report = loadgen::run(address, shape, first.expected, move |i| {
        let call = scenarios::http_call(&name, &fixture, i).expect("checked above");
        http_request(&call, address, &tokens)
    })
    .await?;
    let after = snapshot();
    // Warm-up requests are inside the window too.
    let per_request =
        |from: f64, to: f64| (to - from) * 1e3 / (report.requests + shape.warmup).max(1) as f64;
    let cpu = CpuPerRequest {
        function_ms: per_request(before.0, after.0),
        runner_ms: per_request(before.1, after.1),
        stub_ms: per_request(before.2, after.2),
        load_generator_ms: per_request(before.3, after.3),
    };
    Ok(Throughput {
        binary: binary.to_owned(),
        route: format!("{} {}", first.method, first.route),
        expected: first.expected,
        report,
        vm_hwm_kb: runner.function_peaks().get(binary).copied(),
        cpu,
    })
}

/// Sends one request and answers its status (the sale must be published before it is read).
pub async fn call_once(
    binary: &str,
    runner: &Runner,
    fixture: &Fixture,
    tokens: &Tokens,
) -> anyhow::Result<u16> {
    let call = scenarios::http_call(binary, fixture, 0).context("no scenario")?;
    let request = http_request(&call, runner.address, tokens);
    let mut connection = Connection::open(runner.address).await?;
    let answer = connection
        .send(request, Bodies::Drop)
        .await
        .map_err(|err| anyhow::anyhow!("no answer: {err}"))?;
    Ok(answer.status)
}

/// Where the runner's binaries are, for the report.
pub fn runner_program(binaries_dir: &Path) -> PathBuf {
    binaries_dir.join("local-cloud")
}
