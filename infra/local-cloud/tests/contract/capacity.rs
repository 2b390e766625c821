//! The template's defaults against the flash-sale seed's load (docs/capacity.md): the order
//! route admits 4,000 attempts/s with the concurrency to serve them at the benchmark's measured
//! durations, the routes' throttles fit the account's, a 10,000-unit sale is confirmed within
//! a minute of selling out, and `make load DISTRIBUTED=fargate` builds a command that drives
//! that rate.

use crate::support::{project_model, root};
use local_cloud::model::{EventSpec, FunctionSpec, Model, RouteThrottle};
use std::process::Command;

/// The seed's order attempts per second.
const SEED_ORDER_RATE: f64 = 4_000.0;
/// The seed's sale, confirmed within [`CONFIRM_WITHIN_S`] of selling out.
const SEED_SALE_UNITS: f64 = 10_000.0;
const CONFIRM_WITHIN_S: f64 = 60.0;
/// What the budgets keep over the benchmark's durations, which answer every AWS call 4 ms
/// late: a slower call adds to every invocation (docs/capacity.md).
const MARGIN: f64 = 8.0;
/// API Gateway's throttle per account and region, and its burst bucket.
const ACCOUNT_RATE: f64 = 10_000.0;
const ACCOUNT_BURST: u32 = 5_000;
/// Lambda's default concurrency per account, of which 100 must stay unreserved.
const ACCOUNT_CONCURRENCY: u32 = 1_000;

fn function<'a>(model: &'a Model, logical_id: &str) -> &'a FunctionSpec {
    model
        .function(logical_id)
        .unwrap_or_else(|| panic!("no function {logical_id}"))
}

fn throttle(model: &Model, key: &str) -> RouteThrottle {
    model
        .http_routes()
        .find(|route| route.key() == key)
        .and_then(|route| route.throttle)
        .unwrap_or_else(|| panic!("{key} has no throttle"))
}

/// The warm mean duration in ms of `binary` at `memory_mb` (part 3 of
/// loadtest/results/functions.md: a route's one request, a consumer's batch of 10 events).
fn measured_ms(binary: &str, memory_mb: u32) -> f64 {
    let table = std::fs::read_to_string(root().join("loadtest/results/functions.md")).unwrap();
    let start = table
        .find("## Part 3")
        .expect("functions.md has its part 3");
    let row = table[start..]
        .lines()
        .map(|line| line.split('|').map(str::trim).collect::<Vec<_>>())
        .find(|cells| cells.len() > 6 && cells[1] == binary && cells[2] == memory_mb.to_string())
        .unwrap_or_else(|| panic!("no row for {binary} at {memory_mb} MB in functions.md"));
    // | binary | MB | init p50 | warm p50 | warm p90 | warm mean | ...
    row[6]
        .parse()
        .unwrap_or_else(|_| panic!("{binary}: warm mean {:?}", row[6]))
}

#[test]
fn the_order_route_admits_the_seeds_attempts_with_the_concurrency_to_serve_them() {
    let model = project_model(&[]);
    let orders = throttle(&model, "POST /seckill/activities/{id}/orders");
    assert!(
        orders.rate_per_second >= SEED_ORDER_RATE,
        "the order route is throttled at {}/s, below the seed's {SEED_ORDER_RATE}/s",
        orders.rate_per_second
    );
    let place_order = function(&model, "PlaceOrderFunction");
    let reserved = place_order
        .reserved_concurrency
        .expect("place-order reserves its concurrency");
    let ms = measured_ms("place-order", place_order.memory_mb);
    // Little's law: busy executions = rate × duration, with the margin.
    let needed = orders.rate_per_second * ms / 1_000.0 * MARGIN;
    assert!(
        f64::from(reserved) >= needed,
        "{reserved} reserved executions for {}/s at {ms} ms × {MARGIN}: {needed:.0} needed",
        orders.rate_per_second
    );

    let detail = throttle(&model, "GET /seckill/activities/{id}");
    let get_sale = function(&model, "GetSaleFunction");
    let ms = measured_ms("get-sale", get_sale.memory_mb);
    let needed = detail.rate_per_second * ms / 1_000.0 * MARGIN;
    assert!(f64::from(get_sale.reserved_concurrency.unwrap()) >= needed);

    // Reservations leave Lambda's 100 unreserved of the account's default.
    let reserved_total: u32 = model
        .functions
        .iter()
        .filter_map(|f| f.reserved_concurrency)
        .sum();
    assert!(
        reserved_total + 100 <= ACCOUNT_CONCURRENCY,
        "{reserved_total}"
    );
}

#[test]
fn the_routes_throttles_fit_the_accounts() {
    // One route flooded at the default, both sale routes and the callback at their limits.
    let model = project_model(&[]);
    let default = throttle(&model, "PUT /users/me");
    let limits = [
        default,
        throttle(&model, "POST /seckill/activities/{id}/orders"),
        throttle(&model, "GET /seckill/activities/{id}"),
        throttle(&model, "POST /payments/callback"),
    ];
    let rate: f64 = limits.iter().map(|t| t.rate_per_second).sum();
    let burst: u32 = limits.iter().map(|t| t.burst).sum();
    assert!(
        rate <= ACCOUNT_RATE,
        "{rate}/s over the account's {ACCOUNT_RATE}"
    );
    assert!(burst <= ACCOUNT_BURST, "burst {burst} over {ACCOUNT_BURST}");
}

#[test]
fn a_sale_of_ten_thousand_units_is_confirmed_within_a_minute_of_selling_out() {
    let model = project_model(&[]);
    let consumer = function(&model, "OrderConsumerFunction");
    let source = consumer
        .events
        .iter()
        .find_map(|event| match event {
            EventSpec::Sqs(source) => Some(source),
            _ => None,
        })
        .expect("the order consumer's queue");
    let batches = f64::from(source.maximum_concurrency.expect("a cap"));
    let batch = f64::from(source.batch_size);
    // Measured per batch of 10; a batch of n makes fewer calls per order, so n/10 of it is an
    // upper bound.
    let per_batch_s =
        measured_ms("order-consumer", consumer.memory_mb) / 1_000.0 * (batch / 10.0) * MARGIN;
    let orders_per_s = batches * batch / per_batch_s;
    let seconds = source.batching_window.as_secs_f64() + SEED_SALE_UNITS / orders_per_s;
    assert!(
        seconds <= CONFIRM_WITHIN_S,
        "{SEED_SALE_UNITS} orders at {orders_per_s:.0}/s take {seconds:.1} s"
    );
}

/// `make load`'s distributed mode as a dry run: the command it would run, and what it says.
fn distributed(envs: &[(&str, &str)]) -> (i32, String) {
    let mut command = Command::new(root().join("loadtest/load.sh"));
    command.arg("seckill").current_dir(root());
    for name in [
        "TARGET",
        "STACK",
        "COUNT",
        "RATE",
        "REGION",
        "CPU",
        "MEMORY",
        "DURATION",
        "WARMUP",
        "AUTH_MODE",
        "AWS_REGION",
        "SCENARIO",
    ] {
        command.env_remove(name);
    }
    command.envs(envs.iter().copied());
    let output = command.output().expect("loadtest/load.sh runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    (output.status.code().unwrap_or(-1), text)
}

/// The flags `artillery run-fargate` takes (Artillery 2.0's `run-fargate` and its common run
/// flags): a flag outside them would fail the real run.
const RUN_FARGATE_FLAGS: [&str; 14] = [
    "--region",
    "--count",
    "--cpu",
    "--memory",
    "--max-duration",
    "--tags",
    "--launch-config",
    "--target",
    "--overrides",
    "--output",
    "--note",
    "--cluster",
    "--spot",
    "--secret",
];

#[test]
fn the_distributed_load_command_drives_the_seed_rate() {
    let (status, text) = distributed(&[
        ("DISTRIBUTED", "fargate"),
        ("DRY_RUN", "1"),
        ("STACK", "capacity-test"),
        ("COUNT", "7"),
        ("RATE", "4000"),
    ]);
    assert_eq!(status, 0, "{text}");
    let line = text
        .lines()
        .find(|line| line.contains("artillery run-fargate"))
        .unwrap_or_else(|| panic!("no run-fargate command: {text}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let value = |flag: &str| {
        let at = words.iter().position(|w| *w == flag);
        at.map(|i| words[i + 1])
            .unwrap_or_else(|| panic!("no {flag}: {line}"))
    };
    assert_eq!(value("--count"), "7");
    assert_eq!(value("--region"), "us-east-1");
    assert!(words.last().is_some_and(|w| *w == "seckill.yml"), "{line}");
    for flag in words.iter().filter(|w| w.starts_with("--")) {
        assert!(
            RUN_FARGATE_FLAGS.contains(flag),
            "run-fargate has no {flag}"
        );
    }
    // 7 workers of ceil(4000 / 7) = 572 buyers a second: 4,004, at least the seed's rate.
    // The overrides are computed when Artillery is installed, else printed as their command.
    assert!(
        line.contains("ARRIVAL_RATE=572 ") || line.contains(r#""arrivalRate":572"#),
        "{line}"
    );
    // The workers get the stack's pool, and the run's cost is stated before anything runs.
    assert!(
        line.contains(r#""name":"AUTH_MODE","value":"cognito""#),
        "{line}"
    );
    assert!(line.contains("COGNITO_USER_POOL_ID"), "{line}");
    assert!(text.contains("estimated cost: Fargate workers $"), "{text}");
    assert!(text.contains("DRY_RUN: nothing was run"), "{text}");

    // The workers run in AWS: a local target is refused, and so is a stack-less run.
    let (status, text) = distributed(&[
        ("DISTRIBUTED", "fargate"),
        ("DRY_RUN", "1"),
        ("TARGET", "http://127.0.0.1:3000"),
    ]);
    assert_eq!(status, 2, "{text}");
    assert!(text.contains("cannot reach"), "{text}");
    let (status, text) = distributed(&[("DISTRIBUTED", "fargate"), ("DRY_RUN", "1")]);
    assert_eq!(status, 2, "{text}");
    let (status, text) = distributed(&[("DISTRIBUTED", "lambda"), ("STACK", "x")]);
    assert_eq!(status, 2, "{text}");
}
