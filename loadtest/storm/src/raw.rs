//! The raw phase: the reserve script straight from here (`EVALSHA` through
//! `app::seckill::sale::redis::RedisSales`) on a fresh preheated sale of the same shape, with
//! the same attempts, users and concurrency, in `loadgen`'s closed loop.

use crate::cli::Args;
use crate::report::{Phase, Raw, mark};
use crate::scenario::{bounds, rfc3339};
use crate::user_name;
use anyhow::Context;
use app::clock::epoch_ms;
use app::ids::{OrderId, UserId};
use app::seckill::admission::checkout::Checkout;
use app::seckill::admission::{Admission, Reservation, Verdict};
use app::seckill::sale::redis::RedisSales;
use app::seckill::sale::{Lifecycle, Sale, SaleCache, SaleId};
use loadgen::Worker;
use std::collections::BTreeMap;
use std::sync::Arc;
use time::OffsetDateTime;

fn verdict_name(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::Reserved { .. } => "OK",
        Verdict::UnknownSale => "UNKNOWN_SALE",
        Verdict::NotStarted => "NOT_STARTED",
        Verdict::Ended => "ENDED",
        Verdict::NotReserved => "NOT_RESERVED",
        Verdict::RateLimited => "RATE_LIMITED",
        Verdict::LimitReached { .. } => "LIMIT_REACHED",
        Verdict::SoldOut => "SOLD_OUT",
        Verdict::NotEnoughStock { .. } => "NOT_ENOUGH_STOCK",
        Verdict::Replayed { .. } => "REPLAY",
        Verdict::KeyReused => "KEY_REUSED",
    }
}

/// One task of the raw phase, on one of the shared Redis connections.
struct Reserver {
    store: RedisSales,
    users: Arc<Vec<UserId>>,
    sale_id: SaleId,
    rate_limit: u32,
}

impl Worker for Reserver {
    type Request = Reservation;
    /// The verdict's name, or `error: ...`.
    type Answer = String;

    fn prepare(&mut self, index: u64) -> Option<Reservation> {
        Some(Reservation {
            order_id: OrderId::generate(&self.sale_id),
            sale_id: self.sale_id.clone(),
            user_id: self.users[(index % self.users.len() as u64) as usize].clone(),
            checkout: Checkout::default(),
            now_ms: epoch_ms(OffsetDateTime::now_utc()),
            rate_limit_per_second: self.rate_limit,
            idempotency: None,
        })
    }

    async fn send(&mut self, reservation: Reservation) -> String {
        match self.store.reserve(&reservation).await {
            Ok(verdict) => verdict_name(&verdict).to_owned(),
            Err(err) => format!("error: {:#}", err.0),
        }
    }
}

pub(crate) async fn raw_phase(args: &Args, redis_url: &str, run: &str) -> anyhow::Result<Raw> {
    let client = redis::Client::open(redis_url).context("invalid --redis-url")?;
    let mut stores = Vec::new();
    for _ in 0..args.redis_connections.max(1) {
        let connection = redis::aio::ConnectionManager::new(client.clone())
            .await
            .context("failed to connect to Redis")?;
        stores.push(RedisSales::new(connection));
    }
    stores[0].load_scripts().await?;
    let now = OffsetDateTime::now_utc();
    let sale = Sale {
        id: SaleId::generate(),
        product_id: "storm-phone".to_owned(),
        title: "Storm phone".to_owned(),
        price_cents: 19900,
        initial_stock: args.stock,
        stock_remaining: args.stock,
        per_user_limit: 1,
        starts_at: now - time::Duration::minutes(1),
        ends_at: now + time::Duration::hours(1),
        state: Lifecycle::Published,
        created_at: rfc3339(now),
        reservation_opens_at: None,
    };
    stores[0].preheat(&sale, &[]).await?;
    mark("raw-start");
    let users: Arc<Vec<UserId>> = Arc::new(
        (0..args.users)
            .map(|u| UserId::parse(&user_name(run, u)))
            .collect::<Result<_, _>>()?,
    );
    let loop_run = loadgen::closed_loop(bounds(args.concurrency, args.attempts), |w| {
        let worker = Reserver {
            store: stores[w % stores.len()].clone(),
            users: users.clone(),
            sale_id: sale.id.clone(),
            rate_limit: args.rate_limit,
        };
        async move { Ok(worker) }
    })
    .await?;
    let mut micros = Vec::with_capacity(loop_run.samples.len());
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    for sample in loop_run.samples {
        micros.push(sample.micros);
        *outcomes.entry(sample.answer).or_default() += 1;
    }
    let accepted = outcomes.get("OK").copied().unwrap_or(0);
    Ok(Raw {
        sale_id: sale.id.as_str().to_owned(),
        redis_connections: stores.len(),
        phase: Phase::new(micros, loop_run.seconds, outcomes),
        accepted,
    })
}
