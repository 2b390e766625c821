//! The decoupling experiment (docs/DESIGN.md §6): follows at a fixed arrival rate, once as they are and
//! once with every notification write slowed to 500 ms by the runner's fault proxy, each on a
//! fresh stack in the same run. The follow's latency must not care (p99 within 1.1x), the
//! notification backlog must drain afterwards, and no notification may be lost or duplicated.
//!
//! `DECOUPLING_RATE` (follows/s, default 10) and `DECOUPLING_SECONDS` (default 3) size it;
//! `DECOUPLING_CONTROL=1` adds a third run without the notification consumer at all (the
//! follows then share the emulator with nothing but the follower counts);
//! `make bench` runs it longer and keeps the `decoupling:` lines it prints. No loss and no
//! duplicate are always asserted, and so is a bound on the follow's latency that holds on a
//! loaded 2-core machine (see the test); the design's 1.1x on the p99 only when
//! `DECOUPLING_ASSERT_RATIO=1`: a few dozen samples on a shared CI machine say nothing about a
//! p99, and on one machine the emulator's single DynamoDB lock couples the two paths
//! (loadtest/results).
//!
//! Every run's series (each follow's latency by when it was sent, the notification backlog
//! over time) goes to `$LOCAL_STATE/decoupling/series.json`, which `loadtest/bench-e2e.sh`
//! draws with `plot decoupling` beside its results.

use crate::support::{
    Api, eventually, options, queue_depth, queue_url, report, sdk, start, unique_stack,
};
use local_cloud::faults::{Action, Rule, Service};
use percentiles::Percentiles;
use serde_json::json;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const NOTIFIER: &str = "NotificationConsumerFunction";
const POSTERS: usize = 5;
/// What the fault proxy adds to every notification write in the slowed run.
const SLOW_WRITE: Duration = Duration::from_millis(500);

fn knob(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Run {
    p50_ms: f64,
    p99_ms: f64,
    follows: usize,
    peak_backlog: u32,
    drain: Duration,
    /// (seconds from the first follow's send to this one's, its latency in ms), in send order.
    latencies: Vec<(f64, f64)>,
    /// (seconds from the first follow's send, messages in the notification queue).
    backlog: Vec<(f64, u32)>,
}

/// The `q` quantile of the follows' latencies, by the project's percentiles.
fn percentile(latencies: &Percentiles, q: f64) -> f64 {
    latencies.value_at(q).expect("follows were sent")
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Baseline,
    /// Every notification write waits 500 ms in the runner's proxy.
    Slowed,
    /// The control: the notification consumer does not run at all, so nothing but the follows
    /// and the follower counts touch the emulator's DynamoDB.
    ConsumerOff,
}

async fn run(mode: Mode, rate: f64, seconds: f64) -> Run {
    let slow = mode == Mode::Slowed;
    let mut options = options(&unique_stack());
    options.log_invocations = false;
    // DECOUPLING_RATE sets the arrival rate (`make bench` chooses it): a follow p99 is
    // measured, not the route limits (throttling.rs), so a 429 must not cut the run short.
    options.route_throttling = false;
    if mode == Mode::ConsumerOff {
        options.disabled_sources = vec![NOTIFIER.to_owned()];
    }
    options
        .faults
        .add(&format!("{NOTIFIER}:proxy"))
        .expect("a valid switch");
    let cloud = start(options).await;
    let follows = (rate * seconds).round() as usize;
    let posters: Vec<Api> = (0..POSTERS)
        .map(|i| Api::new(&cloud, Some(&format!("poster{i}"))))
        .collect();
    let fans: Vec<Api> = (0..follows)
        .map(|i| Api::new(&cloud, Some(&format!("fan{i}"))))
        .collect();
    for api in posters.iter().chain(&fans) {
        api.put_profile("x").await;
    }
    if slow {
        cloud.faults.set_rules(
            NOTIFIER,
            vec![Rule {
                service: Service::DynamoDb,
                operations: [
                    "PutItem",
                    "UpdateItem",
                    "TransactWriteItems",
                    "BatchWriteItem",
                ]
                .map(str::to_owned)
                .to_vec(),
                action: Action::Delay(SLOW_WRITE),
            }],
        );
    }

    // The backlog, sampled while the load runs and drains; time 0 is the first follow's send.
    let sqs = aws_sdk_sqs::Client::new(&sdk().await);
    let queue = queue_url(&cloud, "NotificationQueue");
    let started = Instant::now();
    let backlog = Arc::new(Mutex::new(Vec::<(f64, u32)>::new()));
    let sampling = {
        let (sqs, queue, backlog) = (sqs.clone(), queue.clone(), backlog.clone());
        tokio::spawn(async move {
            loop {
                let depth = queue_depth(&sqs, &queue).await;
                let at = started.elapsed().as_secs_f64();
                backlog.lock().unwrap().push((at, depth));
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let peak_of = |backlog: &[(f64, u32)]| backlog.iter().map(|(_, d)| *d).max().unwrap_or(0);

    // Open loop: one follow every 1/rate s, whatever the previous ones are doing.
    let interval = Duration::from_secs_f64(1.0 / rate);
    let mut tasks = Vec::new();
    for (i, fan) in fans.iter().enumerate() {
        tokio::time::sleep_until((started + interval * i as u32).into()).await;
        let fan = fan.clone();
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            let (status, body) = fan
                .call("PUT", &format!("/users/poster{}/follow", i % POSTERS), None)
                .await;
            assert_eq!(status, 200, "{body}");
            (
                sent.duration_since(started).as_secs_f64(),
                sent.elapsed().as_secs_f64() * 1000.0,
            )
        }));
    }
    let mut series = Vec::new();
    for task in tasks {
        series.push(task.await.unwrap());
    }
    let load_ended = Instant::now();
    let latencies: Percentiles = series.iter().map(|(_, ms)| *ms).collect();
    if mode == Mode::ConsumerOff {
        sampling.abort();
        let backlog = std::mem::take(&mut *backlog.lock().unwrap());
        cloud.stop().await;
        return Run {
            p50_ms: percentile(&latencies, 0.5),
            p99_ms: percentile(&latencies, 0.99),
            follows,
            peak_backlog: peak_of(&backlog),
            drain: Duration::ZERO,
            latencies: series,
            backlog,
        };
    }

    // Every notification arrives once: each poster has exactly its fans, no more.
    let expected = |p: usize| (0..follows).filter(|i| i % POSTERS == p).count();
    eventually(
        Duration::from_secs(180),
        "the notification backlog drains",
        || async {
            for (p, poster) in posters.iter().enumerate() {
                let (_, listed) = poster.call("GET", "/notifications?limit=100", None).await;
                if listed["unreadCount"].as_u64() != Some(expected(p) as u64) {
                    return None;
                }
            }
            (queue_depth(&sqs, &queue).await == 0).then_some(())
        },
    )
    .await;
    let drain = load_ended.elapsed();
    sampling.abort();
    tokio::time::sleep(Duration::from_secs(3)).await;
    for (p, poster) in posters.iter().enumerate() {
        let mut actors: Vec<String> = poster
            .all_notifications()
            .await
            .iter()
            .map(|item| item["actorId"].as_str().unwrap().to_owned())
            .collect();
        let total = actors.len();
        actors.sort();
        actors.dedup();
        assert_eq!(total, actors.len(), "poster{p}: a duplicated notification");
        assert_eq!(total, expected(p), "poster{p}: a lost notification");
    }
    let backlog = std::mem::take(&mut *backlog.lock().unwrap());
    cloud.stop().await;
    Run {
        p50_ms: percentile(&latencies, 0.5),
        p99_ms: percentile(&latencies, 0.99),
        follows,
        peak_backlog: peak_of(&backlog),
        drain,
        latencies: series,
        backlog,
    }
}

/// Writes every run's raw series for `plot decoupling` to `$LOCAL_STATE/decoupling/series.json`
/// (the state directory resolved as `support::report` does).
fn write_series(rate: f64, seconds: f64, runs: &[(&str, &Run)]) {
    let state = std::env::var("LOCAL_STATE").unwrap_or_else(|_| ".local/test".to_owned());
    let state = PathBuf::from(state);
    let dir = if state.is_absolute() {
        state
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(state)
    }
    .join("decoupling");
    std::fs::create_dir_all(&dir).expect("the decoupling series directory");
    let runs: Vec<_> = runs
        .iter()
        .map(|(name, run)| {
            json!({
                "name": name,
                "follows": run.follows,
                "p50_ms": run.p50_ms,
                "p99_ms": run.p99_ms,
                "latencies": run.latencies,
                "backlog": run.backlog,
            })
        })
        .collect();
    let series = json!({
        "rate_per_second": rate,
        "seconds": seconds,
        "slow_write_ms": SLOW_WRITE.as_millis() as u64,
        "runs": runs,
    });
    std::fs::write(
        dir.join("series.json"),
        serde_json::to_string(&series).unwrap(),
    )
    .expect("the decoupling series written");
}

#[tokio::test]
async fn a_slow_notification_store_never_slows_the_follow() {
    let rate = knob("DECOUPLING_RATE", 10.0);
    let seconds = knob("DECOUPLING_SECONDS", 3.0);
    let baseline = run(Mode::Baseline, rate, seconds).await;
    let slowed = run(Mode::Slowed, rate, seconds).await;
    let control = if std::env::var("DECOUPLING_CONTROL").as_deref() == Ok("1") {
        Some(run(Mode::ConsumerOff, rate, seconds).await)
    } else {
        None
    };
    let mut series = vec![
        ("baseline", &baseline),
        ("notification writes +500 ms", &slowed),
    ];
    if let Some(off) = &control {
        series.push(("control: notification consumer off", off));
    }
    write_series(rate, seconds, &series);
    if let Some(off) = &control {
        println!(
            "decoupling: control, notification consumer not running: {} follows at {rate}/s: \
             p50 {:.1} ms, p99 {:.1} ms (baseline p99 / control = {:.2}, slowed p99 / control = {:.2})",
            off.follows,
            off.p50_ms,
            off.p99_ms,
            baseline.p99_ms / off.p99_ms,
            slowed.p99_ms / off.p99_ms
        );
    }
    for (name, r) in [
        ("baseline", &baseline),
        ("notification writes +500 ms", &slowed),
    ] {
        println!(
            "decoupling: {name}: {} follows at {rate}/s: p50 {:.1} ms, p99 {:.1} ms; \
             notification backlog peak {}, drained {:.1} s after the load; 0 lost, 0 duplicated",
            r.follows,
            r.p50_ms,
            r.p99_ms,
            r.peak_backlog,
            r.drain.as_secs_f64()
        );
    }
    let ratio = slowed.p99_ms / baseline.p99_ms;
    println!(
        "decoupling: p99 ratio slowed/baseline = {ratio:.2} (target <= 1.1); p50 ratio = {:.2}",
        slowed.p50_ms / baseline.p50_ms
    );
    report(
        "slow-notification-store",
        "every notification write slowed to 500 ms while follows arrive at a fixed rate",
        "--fault NotificationConsumerFunction:dynamodb.writes:delay=500ms",
        &[
            format!(
                "{} follows answered 200, p99 {:.1} ms vs {:.1} ms without ({ratio:.2}x)",
                slowed.follows, slowed.p99_ms, baseline.p99_ms
            ),
            format!(
                "backlog peak {} drained {:.1} s after the load",
                slowed.peak_backlog,
                slowed.drain.as_secs_f64()
            ),
            "every notification once: 0 lost, 0 duplicated".to_owned(),
        ],
    );
    // Always asserted, on the median: loadtest/results/decoupling-hot-keys.md measured the p99
    // of such runs swinging from 0.47x to 2.62x between identical runs on a 2-core machine
    // (a few dozen samples, one emulator lock shared by every function), while the p50 ratio
    // stayed within 0.92 to 1.01. A follow that waited for even one notification write would
    // take the whole delay more; half of it leaves room for a loaded machine.
    let margin_ms = SLOW_WRITE.as_secs_f64() * 1000.0 / 2.0;
    assert!(
        slowed.p50_ms <= baseline.p50_ms + margin_ms,
        "follow p50 {:.1} ms under a slow notification store vs {:.1} ms without",
        slowed.p50_ms,
        baseline.p50_ms
    );
    // The design's target, for long runs on a quiet machine (`make bench` sizes them).
    if std::env::var("DECOUPLING_ASSERT_RATIO").as_deref() == Ok("1") {
        assert!(
            ratio <= 1.1,
            "follow p99 {ratio:.2}x under a slow notification store"
        );
    }
}
