//! `plot`: draws a benchmark's figure from the raw series a test wrote.
//!
//! `plot decoupling --series $LOCAL_STATE/decoupling/series.json --out decoupling.svg`: the
//! decoupling experiment (`infra/local-cloud/tests/e2e/decoupling.rs`), each follow's latency
//! by when it was sent and the notification backlog over time, one colour per run (baseline,
//! notification writes slowed, and the control without the notification consumer).

use anyhow::Context;
use clap::{Parser, Subcommand};
use plot::{Panel, Series};
use serde::Deserialize;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    #[command(subcommand)]
    figure: Figure,
}

#[derive(Subcommand, Debug)]
enum Figure {
    /// The decoupling experiment's series.json.
    Decoupling {
        #[arg(long)]
        series: PathBuf,
        #[arg(long)]
        out: PathBuf,
    },
}

/// What the decoupling test writes.
#[derive(Deserialize, Debug)]
struct Decoupling {
    rate_per_second: f64,
    slow_write_ms: u64,
    runs: Vec<DecouplingRun>,
}

#[derive(Deserialize, Debug)]
struct DecouplingRun {
    name: String,
    follows: usize,
    p50_ms: f64,
    p99_ms: f64,
    /// (seconds since the run's first follow was sent, that follow's latency in ms).
    latencies: Vec<(f64, f64)>,
    /// (seconds since the run's first follow was sent, messages in the notification queue).
    backlog: Vec<(f64, f64)>,
}

fn decoupling(data: &Decoupling) -> (String, Vec<Panel>) {
    let follows = data.runs.first().map_or(0, |run| run.follows);
    let title = format!(
        "Decoupling: {follows} follows per run at {}/s; notification writes +{} ms in one run",
        data.rate_per_second, data.slow_write_ms
    );
    let x = "seconds since the run's first follow";
    let mut latency = Panel::new("Each follow's latency, by when it was sent", x, "ms");
    let mut backlog = Panel::new(
        "Notification backlog (messages in NotificationQueue)",
        x,
        "messages",
    );
    for run in &data.runs {
        latency.series.push(Series::dots(
            format!(
                "{} (p50 {:.1} ms, p99 {:.1} ms)",
                run.name, run.p50_ms, run.p99_ms
            ),
            run.latencies.clone(),
        ));
        let peak = run
            .backlog
            .iter()
            .map(|(_, depth)| *depth)
            .fold(0.0, f64::max);
        backlog.series.push(Series::line(
            format!("{} (peak {peak:.0})", run.name),
            run.backlog.clone(),
        ));
    }
    (title, vec![latency, backlog])
}

fn main() -> anyhow::Result<()> {
    match Args::parse().figure {
        Figure::Decoupling { series, out } => {
            let text = std::fs::read_to_string(&series)
                .with_context(|| format!("failed to read {}", series.display()))?;
            let data: Decoupling = serde_json::from_str(&text)
                .with_context(|| format!("{} is not the decoupling series", series.display()))?;
            let (title, panels) = decoupling(&data);
            plot::write(&out, &title, &panels)?;
            eprintln!("wrote {}", out.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape `decoupling.rs` writes (`write_series`).
    const SERIES: &str = r#"{
        "rate_per_second": 10.0, "seconds": 0.3, "slow_write_ms": 500,
        "runs": [
            {"name": "baseline", "follows": 3, "p50_ms": 7.5, "p99_ms": 9.0,
             "latencies": [[0.0, 7.5], [0.1, 6.0], [0.2, 9.0]],
             "backlog": [[0.0, 0], [0.25, 2], [0.5, 0]]},
            {"name": "notification writes +500 ms", "follows": 3, "p50_ms": 7.0, "p99_ms": 8.0,
             "latencies": [[0.0, 7.0], [0.1, 8.0], [0.2, 6.5]],
             "backlog": [[0.0, 0], [0.25, 3], [0.5, 3], [1.75, 0]]}
        ]
    }"#;

    #[test]
    fn the_decoupling_figure_shows_every_run_latency_and_backlog() {
        let data: Decoupling = serde_json::from_str(SERIES).unwrap();
        let (title, panels) = decoupling(&data);
        let svg = plot::svg(&title, &panels).unwrap();
        for text in [
            "3 follows per run at 10/s",
            "Each follow",
            "Notification backlog",
            "baseline (p50 7.5 ms, p99 9.0 ms)",
            "notification writes +500 ms (peak 3)",
        ] {
            assert!(svg.contains(text), "{text:?} missing");
        }
        assert_eq!(panels[0].series[1].points.len(), 3);
        assert_eq!(panels[1].series[1].points.len(), 4);
        // Six follows, and a legend dot per run.
        assert_eq!(svg.matches("<circle").count(), 6 + 2);
    }
}
