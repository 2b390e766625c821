//! Part 3: Lambda durations by memory size. Every binary of part 1 runs with the CPU share
//! Lambda gives each `--memory-sizes` size (a cgroup per process, `local_cloud::cpu_quota`):
//! its init (spawn to first poll) and its warm duration over sequential happy-path
//! invocations, with what a million such requests cost at Lambda's arm64 prices, and the size
//! that the table recommends beside the template's `MemorySize`.
//!
//! Layout:
//! - here, what is measured: the prices, each binary's rows by size and their costs.
//! - `measure`: the measuring, the processes under their CPU quotas ([`measure()`]), and the
//!   stub that answers late ([`LateStub`]).
//! - `verdicts`: the judging, the table's pick and whether the template follows it
//!   ([`summary`]).
//! - `markdown`: the rendering, the report's section ([`render`]) and its figure
//!   ([`panels`]).

mod markdown;
mod measure;
mod verdicts;

pub use markdown::{panels, render, title};
pub use measure::{LateStub, measure};
pub use verdicts::summary;

use crate::cold_start::percentile;

/// Lambda arm64, us-east-1, first tier: per request and per GB-second.
pub const PRICE_PER_MILLION_REQUESTS: f64 = 0.20;
pub const PRICE_PER_GB_SECOND: f64 = 0.000_013_333_4;
/// Sizes whose warm cost is within this share of the lowest compete on warm p90.
pub const COST_TOLERANCE: f64 = 0.10;
/// The template's size follows the table when it is in the cost band and its warm p90 is
/// within this share of the pick's: sub-millisecond p90s of the same binaries move that much
/// between runs on one machine, which would swap the pick between neighbouring sizes.
pub const P90_TOLERANCE: f64 = 0.25;
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
    /// The sizes measured cleanly: warm invocations, none failed.
    fn measured(&self) -> impl Iterator<Item = &SizeRow> {
        self.sizes
            .iter()
            .filter(|row| !row.warm_ms.is_empty() && row.invocations_failed == 0)
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

fn is_baseline(binary: &str) -> bool {
    binary.starts_with("hello-")
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
