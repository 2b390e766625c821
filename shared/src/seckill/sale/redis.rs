//! Redis adapter of [`SaleCache`]: the preheated sale and the detail read in one round trip;
//! and [`RedisSales`], the sales in Redis, which the admission ([`crate::seckill::admission`]'s
//! `Admission`) and the back office (`SaleCloser`) implement their ports on, with the Lua
//! scripts of `lua/` (`reserve.lua`, `release.lua`, `end.lua`, contracts at their tops) called
//! by hash with `EVALSHA`.
//!
//! The key design is in [`crate::seckill::keys`].

use crate::clock::epoch_ms;
use crate::ids::{SaleId, UserId};
use crate::script::LuaScript;
use crate::seckill::keys::SaleKeys;
use crate::seckill::sale::{Lifecycle, Sale, SaleCache, SaleDetail, StoreError};
use anyhow::Context;
use async_trait::async_trait;
use redis::aio::ConnectionManager;
use std::collections::HashMap;

const RESERVE: &str = include_str!("../lua/reserve.lua");
const RELEASE: &str = include_str!("../lua/release.lua");
const END: &str = include_str!("../lua/end.lua");

/// The sales in Redis; cheap to clone.
#[derive(Clone)]
pub struct RedisSales {
    pub(crate) connection: ConnectionManager,
    pub(crate) reserve: LuaScript,
    pub(crate) release: LuaScript,
    /// Rarely called (an operator ending a sale): loaded on first use, not at cold start.
    pub(crate) end: LuaScript,
}

impl RedisSales {
    /// The adapter over `connection`; call [`Self::load_scripts`] at cold start where the
    /// scripts are used.
    pub fn new(connection: ConnectionManager) -> Self {
        Self {
            connection,
            reserve: LuaScript::new("reserve", RESERVE),
            release: LuaScript::new("release", RELEASE),
            end: LuaScript::new("end", END),
        }
    }

    /// `SCRIPT LOAD`s both scripts, so that the first `EVALSHA` finds them.
    pub async fn load_scripts(&self) -> redis::RedisResult<()> {
        LuaScript::load_all(&self.scripts(), &self.connection).await
    }

    /// The scripts [`Self::load_scripts`] loads.
    pub(crate) fn scripts(&self) -> [&LuaScript; 2] {
        [&self.reserve, &self.release]
    }
}

fn field<T: std::str::FromStr>(info: &HashMap<String, String>, name: &str) -> anyhow::Result<T> {
    info.get(name)
        .and_then(|raw| raw.parse().ok())
        .with_context(|| format!("sale info field {name} is missing or malformed"))
}

fn detail_from(
    id: &SaleId,
    info: &HashMap<String, String>,
    stock: Option<i64>,
    reservations: u64,
) -> anyhow::Result<SaleDetail> {
    Ok(SaleDetail {
        id: id.clone(),
        product_id: field(info, "productId")?,
        title: field(info, "title")?,
        price_cents: field(info, "priceCents")?,
        per_user_limit: field(info, "perUserLimit")?,
        starts_at_ms: field(info, "startsAtMs")?,
        ends_at_ms: field(info, "endsAtMs")?,
        stock: field(info, "stock")?,
        // No stock key beside the details: nothing can be reserved.
        stock_remaining: stock.unwrap_or(0),
        reservation_opens_at_ms: match info.get("reservationOpensAtMs") {
            Some(_) => Some(field(info, "reservationOpensAtMs")?),
            None => None,
        },
        reservations,
    })
}

#[async_trait]
impl SaleCache for RedisSales {
    #[tracing::instrument(level = "debug", skip_all, fields(sale = %sale.id))]
    async fn preheat(&self, sale: &Sale, reserved: &[UserId]) -> Result<(), StoreError> {
        let keys = SaleKeys::new(&sale.id);
        let mut info: Vec<(&str, String)> = vec![
            ("title", sale.title.clone()),
            ("priceCents", sale.price_cents.to_string()),
            ("perUserLimit", sale.per_user_limit.to_string()),
            ("startsAtMs", epoch_ms(sale.starts_at).to_string()),
            ("endsAtMs", epoch_ms(sale.ends_at).to_string()),
            ("stock", sale.initial_stock.to_string()),
            ("productId", sale.product_id.clone()),
        ];
        // reserve.lua refuses every buyer not in `reserved` once this field is there.
        if let Some(opens_at) = sale.reservation_opens_at {
            info.push(("reservationOpensAtMs", epoch_ms(opens_at).to_string()));
        }
        // MULTI/EXEC: the script never sees details without a stock. SET NX: re-publishing
        // never resets the live stock.
        let mut connection = self.connection.clone();
        let mut pipe = redis::pipe();
        pipe.atomic().hset_multiple(&keys.info, &info).ignore();
        // An ended sale preheated again (a failover) stays ended: reserve.lua checks `ended`.
        if sale.state == Lifecycle::Ended {
            pipe.hset(&keys.info, "ended", "1").ignore();
        }
        // In batches, so that a sale reserved by a million buyers is loaded in bounded commands.
        for users in reserved.chunks(1_000) {
            let users: Vec<&str> = users.iter().map(UserId::as_str).collect();
            pipe.sadd(&keys.reserved, users).ignore();
        }
        pipe.set_nx(&keys.stock, sale.stock_remaining)
            .ignore()
            .query_async::<()>(&mut connection)
            .await
            .context("failed to preheat the sale")?;
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn detail(&self, id: &SaleId) -> Result<Option<SaleDetail>, StoreError> {
        let keys = SaleKeys::new(id);
        let mut connection = self.connection.clone();
        let (info, stock, reservations): (HashMap<String, String>, Option<i64>, u64) =
            redis::pipe()
                .hgetall(&keys.info)
                .get(&keys.stock)
                .scard(&keys.reserved)
                .query_async(&mut connection)
                .await
                .context("failed to read the sale")?;
        if info.is_empty() {
            return Ok(None);
        }
        Ok(Some(detail_from(id, &info, stock, reservations)?))
    }
}
