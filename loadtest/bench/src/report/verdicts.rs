//! The judging: one line per target, met or missed, the worst case and the margin, and for
//! a missed one what bounds it.

use super::markdown::{line_if_any, listed};
use super::{
    INIT_RATIO_MAX, MEMORY_MAX_MIB, MIB, OWN_SHARE_MAX, Part2, Part2Row, SDK_CEILING_FACTOR,
    SIZE_MAX_MIB, THROUGHPUT_RATIO_MIN, is_baseline, peak_kb,
};
use crate::cold_start::ColdStart;
use crate::memory_sizes::{self, Part3};
use crate::sdk_cost::SdkCost;
use std::fmt::Write as _;

/// Where one function's CPU per request went (ms): hello-http's, its AWS calls at the SDK's
/// per-call cost, its Redis commands at Redis's, and the rest, its own.
#[derive(Clone, Copy)]
pub(super) struct Breakdown {
    pub(super) cpu: f64,
    pub(super) hello: f64,
    pub(super) calls: f64,
    /// The calls' cost per request through the SDK: each operation at its own probe's cost.
    pub(super) aws: f64,
    pub(super) redis_commands: f64,
    pub(super) redis: f64,
}

impl Breakdown {
    pub(super) fn of(part2: &Part2, row: &Part2Row, sdk: &SdkCost) -> Self {
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
    pub(super) fn calls_cost(&self) -> f64 {
        self.aws + self.redis_commands * self.redis
    }

    pub(super) fn own(&self) -> f64 {
        self.cpu - self.hello - self.calls_cost()
    }

    pub(super) fn own_share(&self) -> f64 {
        self.own() / self.cpu
    }

    pub(super) fn ceiling(&self) -> f64 {
        self.hello + SDK_CEILING_FACTOR * self.calls_cost()
    }

    /// The breakdown with every AWS call charged at `factor` × its probe's cost: what the
    /// call costs inside a Lambda process ([`Part2::in_function_factor`]).
    pub(super) fn in_function(&self, factor: f64) -> Self {
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

/// How many MiB of something a function takes.
type MibOf<'a> = dyn Fn(&ColdStart) -> f64 + 'a;

fn verdict(ok: bool) -> &'static str {
    if ok { "MET" } else { "MISSED" }
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
