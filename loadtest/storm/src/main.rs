//! `storm`: the flash-sale storm, measured through the local cloud runner.
//!
//! 1. As an operator (a local token with the group `admin`), creates and publishes a sale of
//!    `--stock` units, one per user, open from a minute ago for an hour.
//! 2. Detail phase: `--detail-requests` GETs of the public detail route.
//! 3. Order phase: `--attempts` POSTs of place-order from `--users` distinct users (one token
//!    minted per user beforehand; attempt `i` is user `i % users`).
//! 4. Settle: polls `GET /orders/{id}` as each accepted order's owner until every one reads
//!    CONFIRMED (bounded by `--settle-timeout`), then checks accepted == CONFIRMED == stock.
//! 5. Raw phase (with `--redis-url`): the same attempts, users and concurrency straight to
//!    the reserve script (`EVALSHA` through `app::seckill::sale::redis::RedisSales`) on a
//!    fresh preheated sale of the same shape.
//!
//! Every phase is `loadgen`'s closed loop; each HTTP worker holds one keep-alive HTTP/1.1
//! connection. Exits non-zero when a check fails. With `--plot`, draws the order phase's
//! answers per second by outcome and the stock remaining as an SVG.
//!
//! Layout: `cli` (the options and the API's address), `scenario` (the phases through the
//! runner), `raw` (the phase straight to Redis), `report` (the figures and their printing).

mod cli;
mod raw;
mod report;
mod scenario;

use anyhow::{bail, ensure};
use clap::Parser;
use cli::{Args, Target};
use report::{Report, mark, print_phase, say};
use scenario::{create_sale, detail_phase, order_phase, settle};
use std::sync::Arc;
use std::time::Duration;
use time::OffsetDateTime;

pub(crate) fn user_name(run: &str, u: u64) -> String {
    format!("storm-{run}-u{u:05}")
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    ensure!(
        args.users > 0 && args.concurrency > 0,
        "--users and --concurrency must be positive"
    );
    let target = Arc::new(Target::resolve(&args.url).await?);
    let secret = args.jwt_secret.as_bytes();
    let ttl = Duration::from_secs(3 * 3600);
    let run = format!("{:x}", OffsetDateTime::now_utc().unix_timestamp());

    let admin = local_cloud::jwt::local_token(secret, "storm-ops", &["admin".to_owned()], ttl)?;
    let tokens: Arc<Vec<String>> = Arc::new(
        (0..args.users)
            .map(|u| local_cloud::jwt::local_token(secret, &user_name(&run, u), &[], ttl))
            .collect::<Result<_, _>>()?,
    );

    let sale_id = create_sale(&target, &admin, args.stock).await?;
    eprintln!("sale {sale_id} published: {} units, 1 per user", args.stock);

    let detail = detail_phase(&target, &args, &sale_id).await?;
    mark("detail-end");
    print_phase(args.json, "detail", "reads", &detail);

    let scenario::Orders {
        phase: orders,
        accepted,
        sold_out,
        timeline,
    } = order_phase(&target, &args, &sale_id, &tokens).await?;
    mark("orders-end");
    if let Some(path) = &args.plot {
        let title = format!(
            "Flash-sale storm: {} order attempts from {} users on {} units",
            orders.requests, args.users, args.stock
        );
        // A figure that fails must not cost the run's figures: bench-storm.sh says it is missing.
        match timeline.plot(path, &title) {
            Ok(()) => eprintln!("plot written to {}", path.display()),
            Err(err) => eprintln!("no plot: {err:#}"),
        }
    }
    print_phase(args.json, "orders", "attempts", &orders);
    say(
        args.json,
        format!(
            "sold out after {:.2} s and {} attempts; then {} attempts at {:.0}/s",
            sold_out.after_seconds,
            sold_out.attempts_before,
            sold_out.attempts_after,
            sold_out.after_per_second
        ),
    );
    say(
        args.json,
        format!(
            "accepted {} of {} attempts",
            accepted.len(),
            orders.requests
        ),
    );

    let settled = settle(&target, &args, &tokens, &accepted).await?;
    say(
        args.json,
        format!(
            "settled in {:.1} s: {:?}",
            settled.seconds, settled.by_status
        ),
    );

    let raw = match &args.redis_url {
        Some(url) => {
            let raw = raw::raw_phase(&args, url, &run).await?;
            mark("raw-end");
            print_phase(args.json, "evalsha", "calls", &raw.phase);
            Some(raw)
        }
        None => None,
    };
    let ratio = raw
        .as_ref()
        .map(|raw| orders.per_second / raw.phase.per_second);
    if let Some(ratio) = ratio {
        say(args.json, format!("orders/s ÷ EVALSHA/s = {ratio:.3}"));
    }

    let stock = u64::from(args.stock);
    let confirmed = settled.by_status.get("CONFIRMED").copied().unwrap_or(0);
    let mut checks = vec![
        (
            format!("accepted == stock ({} == {stock})", accepted.len()),
            accepted.len() as u64 == stock,
        ),
        (
            format!("CONFIRMED == stock ({confirmed} == {stock})"),
            confirmed == stock,
        ),
        (
            format!(
                "every attempt answered ({} == {})",
                orders.requests, args.attempts
            ),
            orders.requests == args.attempts,
        ),
    ];
    if let Some(raw) = &raw {
        checks.push((
            format!("raw accepted == stock ({} == {stock})", raw.accepted),
            raw.accepted == stock,
        ));
    }
    let failed: Vec<String> = checks
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(name, _)| name.clone())
        .collect();
    for (name, ok) in &checks {
        say(
            args.json,
            format!("check {}: {name}", if *ok { "ok    " } else { "FAILED" }),
        );
    }
    let report = Report {
        url: args.url.clone(),
        sale_id,
        stock: args.stock,
        users: args.users,
        attempts: args.attempts,
        concurrency: args.concurrency,
        detail,
        orders,
        accepted: accepted.len() as u64,
        sold_out,
        timeline,
        settle: settled,
        raw,
        orders_to_evalsha_ratio: ratio,
        checks: checks.into_iter().map(|(name, _)| name).collect(),
        failed_checks: failed.clone(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    if !failed.is_empty() {
        bail!("{} check(s) failed: {}", failed.len(), failed.join("; "));
    }
    Ok(())
}
