//! The report's figure, an SVG beside it: every cold start per binary, and for part 2 each
//! route's latency distribution, its p50 / p90 / p99 and its throughput as a share of
//! hello-http's, the baselines among the functions.

use crate::report::{Part2, Results, THROUGHPUT_RATIO_MIN};
use crate::throughput::Throughput;
use plot::{Legend, Panel, Series};

/// The figure's panels; the ones part 2 fills only when it ran.
pub fn panels(results: &Results) -> Vec<Panel> {
    let mut panels = vec![cold_starts(results)];
    if let Some(part2) = &results.part2 {
        let routes = routes(part2);
        if routes
            .iter()
            .any(|(_, t)| !t.report.distribution.is_empty())
        {
            panels.push(distributions(&routes));
        }
        panels.push(percentiles(&routes));
        panels.push(shares(part2, &routes));
    }
    panels
}

pub fn title(results: &Results) -> String {
    format!(
        "Functions beside hello-world baselines ({}, {} cores)",
        results.run.date, results.run.cores
    )
}

/// Each binary's cold starts as dots on its row, the baselines on top.
fn cold_starts(results: &Results) -> Panel {
    let mut ordered: Vec<_> = results.part1.iter().collect();
    ordered.sort_by_key(|c| (c.binary.starts_with("hello-"), std::cmp::Reverse(&c.binary)));
    let mut points = Vec::new();
    for (row, cold) in ordered.iter().enumerate() {
        points.extend(cold.init_ms.iter().map(|ms| (*ms, row as f64)));
    }
    Panel {
        y_categories: ordered.iter().map(|c| c.binary.clone()).collect(),
        ..Panel::new(
            format!(
                "Cold start: spawn to first Runtime API poll, {} runs each",
                results.run.runs
            ),
            "ms",
            "",
        )
    }
    .with(Series::dots("each cold start", points))
}

/// Part 2's rows, top to bottom: hello-http before, the functions, hello-http after.
fn routes(part2: &Part2) -> Vec<(String, &Throughput)> {
    let mut routes = vec![("hello-http (before)".to_owned(), &part2.hello[0])];
    routes.extend(
        part2
            .rows
            .iter()
            .map(|row| (row.measured.binary.clone(), &row.measured)),
    );
    routes.push(("hello-http (after)".to_owned(), &part2.hello[1]));
    routes
}

fn distributions(routes: &[(String, &Throughput)]) -> Panel {
    let mut panel = Panel {
        log_x: true,
        legend: Legend::LowerRight,
        ..Panel::new(
            "Latency through the runner: share of requests answered within x ms",
            "ms (log scale)",
            "share of requests",
        )
    };
    for (name, measured) in routes {
        panel.series.push(Series::line(
            name.clone(),
            measured
                .report
                .distribution
                .iter()
                .map(|(share, ms)| (*ms, *share))
                .collect(),
        ));
    }
    panel
}

/// The rows of a category panel: bottom to top is the reverse of the table's order.
fn rows(routes: &[(String, &Throughput)]) -> Vec<String> {
    routes.iter().rev().map(|(name, _)| name.clone()).collect()
}

fn percentiles(routes: &[(String, &Throughput)]) -> Panel {
    let at = |pick: fn(&Throughput) -> f64| {
        routes
            .iter()
            .rev()
            .enumerate()
            .map(|(row, (_, measured))| (pick(measured), row as f64))
            .collect()
    };
    Panel {
        y_categories: rows(routes),
        ..Panel::new("Latency through the runner: p50, p90, p99", "ms", "")
    }
    .with(Series::dots("p50", at(|t| t.report.p50_ms)))
    .with(Series::dots("p90", at(|t| t.report.p90_ms)))
    .with(Series::dots("p99", at(|t| t.report.p99_ms)))
}

fn shares(part2: &Part2, routes: &[(String, &Throughput)]) -> Panel {
    let hello = (part2.hello[0].report.requests_per_second
        + part2.hello[1].report.requests_per_second)
        / 2.0;
    let points = routes
        .iter()
        .rev()
        .enumerate()
        .map(|(row, (_, t))| (t.report.requests_per_second / hello, row as f64))
        .collect();
    let top = routes.len() as f64 - 0.5;
    Panel {
        y_categories: rows(routes),
        ..Panel::new(
            format!(
                "Throughput as a share of hello-http's ({hello:.0} requests/s); \
                 the line: the target, at least {THROUGHPUT_RATIO_MIN}"
            ),
            "requests/s ÷ hello-http's",
            "",
        )
    }
    .with(Series::dots("", points))
    .with(Series::line(
        "",
        vec![(THROUGHPUT_RATIO_MIN, -0.5), (THROUGHPUT_RATIO_MIN, top)],
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cold_start::ColdStart;
    use crate::report::{Part2Row, RunInfo};
    use crate::throughput::CpuPerRequest;
    use loadgen::{LoadReport, LoadShape};
    use std::time::Duration;

    fn cold(binary: &str, init_ms: &[f64]) -> ColdStart {
        ColdStart {
            binary: binary.to_owned(),
            init_ms: init_ms.to_vec(),
            init_cpu_ms: Vec::new(),
            init_faults: Vec::new(),
            init_failures: 0,
            size_bytes: 1 << 20,
            stripped_bytes: None,
            vm_hwm_kb: Some(4096),
            invocations_ok: 2,
            invocations_failed: 0,
            first_error: None,
        }
    }

    fn load(binary: &str, per_second: f64, p50_ms: f64) -> Throughput {
        Throughput {
            binary: binary.to_owned(),
            route: "GET /x".to_owned(),
            expected: 200,
            report: LoadReport {
                requests: 100,
                requests_per_second: per_second,
                p50_ms,
                p90_ms: p50_ms * 1.5,
                p99_ms: p50_ms * 2.0,
                distribution: vec![(0.0, p50_ms / 2.0), (0.5, p50_ms), (1.0, p50_ms * 3.0)],
                ..LoadReport::default()
            },
            vm_hwm_kb: None,
            cpu: CpuPerRequest::default(),
        }
    }

    fn results() -> Results {
        Results {
            run: RunInfo {
                command: "loadtest/bench.sh functions --smoke".to_owned(),
                command_line: String::new(),
                cores: "2".to_owned(),
                date: "2026-12-01 18:00 UTC".to_owned(),
                runs: 2,
                invocations: 2,
                binaries_dir: "target/debug".to_owned(),
                work_dir: ".local/bench-fn".to_owned(),
                load_average: Vec::new(),
                settled: None,
            },
            part1: vec![
                cold("hello-runtime", &[1.5, 1.6]),
                cold("follow", &[2.7, 2.9]),
            ],
            part2: Some(Part2 {
                shape: LoadShape {
                    concurrency: 2,
                    requests: 100,
                    duration: Duration::from_secs(5),
                    warmup: 5,
                },
                instances: 1,
                app_command: String::new(),
                hello_command: String::new(),
                hello: [
                    load("hello-http", 1000.0, 3.0),
                    load("hello-http", 900.0, 3.2),
                ],
                hello_getitem: None,
                rows: vec![Part2Row {
                    measured: load("follow", 160.0, 19.0),
                    aws_calls: Default::default(),
                    redis_commands: 0,
                }],
            }),
            sdk: None,
            part3: None,
        }
    }

    fn probe(client: &str, gap_us: u64, cpu_us_per_call: f64) -> crate::sdk_cost::Probe {
        crate::sdk_cost::Probe {
            client: client.to_owned(),
            operation: crate::sdk_cost::GET_ITEM.to_owned(),
            calls: 100,
            gap_us,
            cpu_us_per_call,
            wall_us_per_call: 2.0 * cpu_us_per_call,
            failed: 0,
        }
    }

    #[test]
    fn the_report_splits_each_function_cpu_into_hello_http_sdk_calls_and_its_own() {
        use crate::sdk_cost::GAP_US;
        let mut results = results();
        let part2 = results.part2.as_mut().unwrap();
        // hello-http 0.1 ms per request; follow 0.5 ms with 3 calls per request (105 requests
        // in the window: 100 measured + 5 warm-up).
        for hello in &mut part2.hello {
            hello.cpu.function_ms = 0.1;
        }
        part2.rows[0].measured.cpu.function_ms = 0.5;
        part2.rows[0].aws_calls = [("DynamoDB_20120810.GetItem".to_owned(), 315)].into();
        part2.rows[0].redis_commands = 210;
        results.sdk = Some(crate::sdk_cost::SdkCost {
            command: "sdk-floor".to_owned(),
            // The SDK's median with gaps is 100 us; the floor's 40; Redis's 10.
            probes: vec![
                probe("sdk", GAP_US, 90.0),
                probe("sdk", GAP_US, 100.0),
                probe("sdk", GAP_US, 130.0),
                probe("floor", GAP_US, 40.0),
                probe("redis", GAP_US, 10.0),
                probe("sdk", 0, 70.0),
                probe("floor", 0, 30.0),
                probe("redis", 0, 8.0),
            ],
        });
        let report = crate::report::render(&results, None, "functions.svg");
        // Calls: 3 x 0.1 + 2 x 0.01 = 0.32 ms; own = 0.5 - 0.1 - 0.32 = 0.08 ms = 16%;
        // ceiling 0.1 + 1.3 x 0.32 = 0.516 ms.
        for line in [
            "| follow | 0.500 | 0.100 | 3.00 | 2.00 | 0.320 | 0.080 | 16% | 0.516 | 0.97x |",
            "| SDK / floor | 2.50x | | 2.33x | |",
            "| Redis `GET` | 10.0 | 20.0 | 8.0 | 16.0 |",
            "own CPU at most 20% of its CPU per request (after hello-http's 0.100 ms, its AWS \
             calls at the SDK's cost per operation, `GetItem` 0.100 ms, and its Redis commands \
             × 0.010 ms): MET — worst follow at 0.080 of 0.500 ms = 16%",
            "Redis's): MET — worst follow at 0.500 ms against 0.516 ms (-3% against the bound)",
        ] {
            assert!(report.contains(line), "{line:?} missing from:\n{report}");
        }
        // The smallest call cost that breaks the ceiling: 0.55 ms is over it.
        results.part2.as_mut().unwrap().rows[0]
            .measured
            .cpu
            .function_ms = 0.55;
        let report = crate::report::render(&results, None, "functions.svg");
        assert!(report.contains("| 1.07x ✗ |"), "{report}");
        assert!(report.contains("over: follow +7%"), "{report}");

        // A Query measured at 0.16 ms is charged at its own cost: 2 GetItem + 1 Query per
        // request = 0.2 + 0.16 + Redis's 0.02 = 0.38 ms; own 0.55 - 0.1 - 0.38 = 0.07 ms.
        let row = &mut results.part2.as_mut().unwrap().rows[0];
        row.aws_calls = [
            ("DynamoDB_20120810.GetItem".to_owned(), 210),
            ("DynamoDB_20120810.Query".to_owned(), 105),
        ]
        .into();
        let mut query = probe("sdk", GAP_US, 160.0);
        query.operation = "Query".to_owned();
        results.sdk.as_mut().unwrap().probes.push(query);
        let report = crate::report::render(&results, None, "functions.svg");
        for line in [
            "| follow | 0.550 | 0.100 | 3.00 | 2.00 | 0.380 | 0.070 | 13% |",
            "| `Query` | a page of 20 edges (list-followers) | 160.0 | 1.60x |",
            "| `PutItem` | a sale of 11 attributes, conditional (create-sale) | not measured | |",
        ] {
            assert!(report.contains(line), "{line:?} missing from:\n{report}");
        }
    }

    #[test]
    fn a_missed_per_request_target_is_read_again_at_a_calls_cost_inside_a_function() {
        use crate::sdk_cost::GAP_US;
        let mut results = results();
        let part2 = results.part2.as_mut().unwrap();
        for hello in &mut part2.hello {
            hello.cpu.function_ms = 0.1;
        }
        // follow: 0.6 ms with 3 GetItem (0.1 ms each at the probe) and 2 Redis commands
        // (0.01) per request: own 0.6 - 0.1 - 0.32 = 0.18 ms = 30%; ceiling 0.516 ms.
        part2.rows[0].measured.cpu.function_ms = 0.6;
        part2.rows[0].aws_calls = [("DynamoDB_20120810.GetItem".to_owned(), 315)].into();
        part2.rows[0].redis_commands = 210;
        results.sdk = Some(crate::sdk_cost::SdkCost {
            command: "sdk-floor".to_owned(),
            probes: vec![probe("sdk", GAP_US, 100.0), probe("redis", GAP_US, 10.0)],
        });
        let report = crate::report::render(&results, None, "functions.svg");
        assert!(report.contains("= 30%; over: follow 30%\n"), "{report}");
        assert!(
            report.contains("(+16% against the bound); over: follow +16%\n"),
            "{report}"
        );
        assert!(report.contains("not measured in this run"), "{report}");
        assert!(report.contains("| 1.16x ✗ | n/a | n/a |"), "{report}");

        // hello-getitem at 0.23 ms: a GetItem costs 0.13 ms inside a function, 1.3x the
        // probe's. At that: own 0.6 - 0.1 - 0.39 - 0.02 = 0.09 ms = 15%; the ceiling
        // 0.1 + 1.3 x 0.41 = 0.633 ms, which 0.6 is 5% under.
        let mut getitem = load("hello-getitem", 900.0, 3.5);
        getitem.cpu.function_ms = 0.23;
        results.part2.as_mut().unwrap().hello_getitem = Some(getitem);
        let report = crate::report::render(&results, None, "functions.svg");
        for line in [
            "= 30%; over: follow 30%. What bounds it: one `GetItem` from an otherwise empty \
             `lambda_http` function (hello-getitem) costs 0.130 ms of CPU over hello-http's, \
             1.30x the probe's 0.100 ms",
            "With every call charged at 1.30x its probe's cost, worst follow at 15%, and 1 of 1 \
             routes within the bound\n",
            "worst follow at -5% against the bound, and 1 of 1 routes within the bound\n",
            "0.230 ms per request (100 requests, 0 unexpected answers): 0.130 ms over \
             hello-http's, 1.30x the probe's `GetItem`",
            "| 1.16x ✗ | 0.090 | 15% |",
        ] {
            assert!(report.contains(line), "{line:?} missing from:\n{report}");
        }

        // A route with no AWS call stays where it was, and is named as still over.
        let mut sandbox = load("payment-sandbox", 900.0, 3.0);
        sandbox.cpu.function_ms = 0.3;
        results.part2.as_mut().unwrap().rows.push(Part2Row {
            measured: sandbox,
            aws_calls: Default::default(),
            redis_commands: 0,
        });
        let report = crate::report::render(&results, None, "functions.svg");
        assert!(
            report.contains(
                "worst payment-sandbox at 67%, and 1 of 2 routes within the bound; still over: \
                 payment-sandbox 67%, no AWS call\n"
            ),
            "{report}"
        );
    }

    #[test]
    fn the_figure_shows_every_binary_and_route_beside_the_baselines() {
        let results = results();
        let panels = panels(&results);
        assert_eq!(panels.len(), 4);
        let svg = plot::svg(&title(&results), &panels).unwrap();
        for text in [
            "Cold start",
            "hello-runtime",
            "each cold start",
            "share of requests answered within x ms",
            "hello-http (before)",
            "hello-http (after)",
            "follow",
            "p99",
            "950 requests/s",
            "the line: the target, at least 0.8",
        ] {
            assert!(svg.contains(text), "{text:?} missing");
        }
        // Four cold starts, three percentiles of three routes, three shares; a legend dot for
        // the cold starts and each percentile (the shares' panel has none).
        assert_eq!(svg.matches("<circle").count(), 4 + 9 + 3 + 1 + 3);
        // follow's share of hello-http's 950 requests/s sits on its row.
        let shares = &panels[3].series[0].points;
        assert_eq!(panels[3].y_categories[1], "follow");
        assert!((shares[1].0 - 160.0 / 950.0).abs() < 1e-9, "{shares:?}");
    }

    #[test]
    fn a_report_saved_before_the_distributions_still_draws() {
        let mut results = results();
        let part2 = results.part2.as_mut().unwrap();
        for t in part2
            .hello
            .iter_mut()
            .chain(part2.rows.iter_mut().map(|r| &mut r.measured))
        {
            t.report.distribution.clear();
        }
        assert_eq!(panels(&results).len(), 3);
        plot::svg(&title(&results), &panels(&results)).unwrap();
    }
}
