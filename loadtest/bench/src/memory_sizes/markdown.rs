//! The rendering of part 3: the report's section (the table, the public figures it is read
//! against) and its figure's panels.

use super::{
    COST_TOLERANCE, FunctionSizes, PRICE_PER_GB_SECOND, PRICE_PER_MILLION_REQUESTS, Part3, SizeRow,
    is_baseline,
};
use plot::{Panel, Series};
use std::fmt::Write as _;

/// The public figures the 128 MB rows are read against.
const LAMBDA_HELLO_INIT_MS: f64 = 14.0;
const LAMBDA_CRUD_WARM_P50_MS: f64 = 5.0;
/// The function compared with the public DynamoDB CRUD figure: one `GetItem` per request.
const CRUD_FUNCTION: &str = "get-user";

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
