//! What one AWS call costs a function in CPU, measured in the same run as part 2 and against
//! the same stub: the SDK as the functions configure it, and the floor under it (hyper and
//! the SDK's SigV4 signer, nothing else), by the `sdk-floor` binary (`src/bin/sdk-floor.rs`),
//! one process per measurement, the clients alternating round by round; and what one Redis
//! command costs on the functions' connection.
//!
//! Part 2's breakdown reads a function's CPU per request as hello-http's + its AWS calls × the
//! SDK's per-call cost here + its Redis commands × Redis's per-command cost + what is left,
//! which is the function's own.

use anyhow::Context;
use std::path::Path;
use std::process::Stdio;

/// One `sdk-floor` measurement (its JSON line).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Probe {
    pub client: String,
    /// The SDK's call (`GetItem` for the floor's comparison; a run before the per-operation
    /// probes measured only that one).
    #[serde(default = "get_item")]
    pub operation: String,
    pub calls: u32,
    pub gap_us: u64,
    pub cpu_us_per_call: f64,
    pub wall_us_per_call: f64,
    pub failed: u32,
}

fn get_item() -> String {
    GET_ITEM.to_owned()
}

/// The call the SDK and the floor both make.
pub const GET_ITEM: &str = "GetItem";

/// The SDK's other calls, each shaped like a route's (`sdk-floor --operation`, its doc says
/// how): the flag, the operation as the stub counts it, and the shape in words.
pub const OPERATIONS: [(&str, &str, &str); 6] = [
    ("query", "Query", "a page of 20 edges (list-followers)"),
    (
        "batch-get-item",
        "BatchGetItem",
        "20 profiles (the lists' display names)",
    ),
    (
        "transact-write-items",
        "TransactWriteItems",
        "4 items: an edge, two counters, an outbox event (follow)",
    ),
    ("update-item", "UpdateItem", "one counter, conditional"),
    (
        "put-item",
        "PutItem",
        "a sale of 11 attributes, conditional (create-sale)",
    ),
    (
        "send-message",
        "SendMessage",
        "an order event of about 200 bytes (place-order)",
    ),
];

/// Every round of both clients, with and without idle gaps between calls.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SdkCost {
    /// The probe's command line, without the client.
    pub command: String,
    pub probes: Vec<Probe>,
}

impl SdkCost {
    /// The median CPU µs per call of `client` with `gap_us` between calls.
    pub fn cpu_us(&self, client: &str, gap_us: u64) -> f64 {
        self.median(client, gap_us, |probe| probe.cpu_us_per_call)
    }

    /// The median wall µs per call, the same way.
    pub fn wall_us(&self, client: &str, gap_us: u64) -> f64 {
        self.median(client, gap_us, |probe| probe.wall_us_per_call)
    }

    fn median(&self, client: &str, gap_us: u64, figure: fn(&Probe) -> f64) -> f64 {
        let values: Vec<f64> = self
            .probes_of(client, GET_ITEM, gap_us)
            .map(figure)
            .collect();
        crate::cold_start::percentile(&values, 0.5)
    }

    /// The probes of `client` with `gap_us`; the SDK's only of `operation` (the floor and Redis
    /// make one call each, whatever their probe names it).
    pub fn probes_of<'a>(
        &'a self,
        client: &'a str,
        operation: &'a str,
        gap_us: u64,
    ) -> impl Iterator<Item = &'a Probe> {
        self.probes.iter().filter(move |probe| {
            probe.client == client
                && probe.gap_us == gap_us
                && (client != "sdk" || probe.operation == operation)
        })
    }

    /// The SDK's per-call cost the breakdown uses: with idle gaps, as a function makes them.
    pub fn sdk_ms(&self) -> f64 {
        self.cpu_us("sdk", GAP_US) / 1e3
    }

    /// The SDK's CPU µs per call of `operation` with idle gaps (the median of its rounds); NaN
    /// when it was not measured.
    pub fn operation_us(&self, operation: &str) -> f64 {
        let values: Vec<f64> = self
            .probes_of("sdk", operation, GAP_US)
            .map(|probe| probe.cpu_us_per_call)
            .collect();
        crate::cold_start::percentile(&values, 0.5)
    }

    /// What one call of `operation` costs through the SDK, ms: its own probe's figure, or the
    /// `GetItem`'s where that operation was not measured.
    pub fn operation_ms(&self, operation: &str) -> f64 {
        let us = self.operation_us(operation);
        if us.is_nan() { self.sdk_ms() } else { us / 1e3 }
    }

    /// Redis's per-command cost, the same way (0 when it was not measured).
    pub fn redis_ms(&self) -> f64 {
        let us = self.cpu_us("redis", GAP_US);
        if us.is_nan() { 0.0 } else { us / 1e3 }
    }

    pub fn failed(&self) -> u32 {
        self.probes.iter().map(|probe| probe.failed).sum()
    }
}

/// The idle time between two calls of the figure the breakdown uses: a function's process is
/// idle between invocations, and its thread parks while its call is in flight.
pub const GAP_US: u64 = 1_000;

/// Measures both clients `rounds` times each, with [`GAP_US`] between calls and back to back.
pub async fn measure(
    program: &Path,
    env: &[(String, String)],
    rounds: u32,
    calls: u32,
    warmup: u32,
) -> anyhow::Result<SdkCost> {
    let mut cost = SdkCost {
        command: format!(
            "{} --client sdk|floor|redis --calls {calls} --warmup {warmup} --gap-us {GAP_US}|0; the SDK's other operations with --gap-us {GAP_US} only: --client sdk --operation query|batch-get-item|transact-write-items|update-item|put-item|send-message",
            program.display()
        ),
        probes: Vec::new(),
    };
    for round in 0..rounds {
        eprintln!("  SDK and floor: round {}/{rounds}", round + 1);
        for gap_us in [GAP_US, 0] {
            // Alternate which client goes first, so drift spreads over both.
            let clients = if round % 2 == 0 {
                ["sdk", "floor", "redis"]
            } else {
                ["redis", "floor", "sdk"]
            };
            for client in clients {
                cost.probes
                    .push(probe(program, env, &["--client", client], calls, warmup, gap_us).await?);
            }
        }
        for (flag, _, _) in OPERATIONS {
            let args = ["--client", "sdk", "--operation", flag];
            cost.probes
                .push(probe(program, env, &args, calls, warmup, GAP_US).await?);
        }
    }
    Ok(cost)
}

async fn probe(
    program: &Path,
    env: &[(String, String)],
    which: &[&str],
    calls: u32,
    warmup: u32,
    gap_us: u64,
) -> anyhow::Result<Probe> {
    let which = which.join(" ");
    let output = tokio::process::Command::new(program)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args(which.split(' '))
        .args(["--calls", &calls.to_string()])
        .args(["--warmup", &warmup.to_string()])
        .args(["--gap-us", &gap_us.to_string()])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("failed to run {}", program.display()))?;
    anyhow::ensure!(
        output.status.success(),
        "{} {which} failed: {}",
        program.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout)
        .with_context(|| format!("{} {which} printed no result", program.display()))
}

/// Commands Redis has served so far (`INFO commandstats`, every command but `INFO` itself).
pub async fn redis_commands(url: &str) -> anyhow::Result<u64> {
    let client = redis::Client::open(url)?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut connection)
        .await?;
    Ok(count_commands(&info))
}

/// The sum of `calls=` over `INFO commandstats`' lines, but `INFO`'s own.
fn count_commands(info: &str) -> u64 {
    info.lines()
        .filter(|line| line.starts_with("cmdstat_") && !line.starts_with("cmdstat_info:"))
        .filter_map(|line| {
            line.split([':', ','])
                .find_map(|field| field.strip_prefix("calls="))?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    #[test]
    fn redis_commands_are_counted_from_commandstats_without_info() {
        let info = "# Commandstats\r\n\
                    cmdstat_get:calls=12,usec=30,usec_per_call=2.50,rejected_calls=0,failed_calls=0\r\n\
                    cmdstat_evalsha:calls=5,usec=100,usec_per_call=20.00,rejected_calls=0,failed_calls=0\r\n\
                    cmdstat_info:calls=7,usec=70,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n";
        assert_eq!(super::count_commands(info), 17);
    }
}
