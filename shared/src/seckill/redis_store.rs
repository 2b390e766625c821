//! Redis adapter of [`Admission`], [`SaleCache`] and [`SaleCloser`]: the preheated sale, the
//! detail read in one round trip, and the Lua scripts (`reserve.lua`, `release.lua`,
//! `end.lua`, contracts at their tops) called by hash with `EVALSHA`.
//!
//! The key design is in [`super::keys`].

use super::admission::ORDER_KEY_TTL_MS;
use super::admission::{Admission, AdmissionError, Holder, Reservation, Verdict};
use super::back_office::SaleCloser;
use super::keys::{SaleKeys, order_key_key, order_rate_key};
use super::sale::{Lifecycle, Sale, SaleCache, SaleDetail, StoreError};
use crate::clock::epoch_ms;
use crate::ids::SaleId;
use crate::script::LuaScript;
use anyhow::Context;
use async_trait::async_trait;
use redis::aio::ConnectionManager;
use std::collections::HashMap;

const RESERVE: &str = include_str!("reserve.lua");
const RELEASE: &str = include_str!("release.lua");
const END: &str = include_str!("end.lua");

/// The sales in Redis; cheap to clone.
#[derive(Clone)]
pub struct RedisSales {
    connection: ConnectionManager,
    reserve: LuaScript,
    release: LuaScript,
    /// Rarely called (an operator ending a sale): loaded on first use, not at cold start.
    end: LuaScript,
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
    })
}

#[async_trait]
impl SaleCache for RedisSales {
    #[tracing::instrument(level = "debug", skip_all, fields(sale = %sale.id))]
    async fn preheat(&self, sale: &Sale) -> Result<(), StoreError> {
        let keys = SaleKeys::new(sale.id.as_str());
        let info: [(&str, String); 7] = [
            ("title", sale.title.clone()),
            ("priceCents", sale.price_cents.to_string()),
            ("perUserLimit", sale.per_user_limit.to_string()),
            ("startsAtMs", epoch_ms(sale.starts_at).to_string()),
            ("endsAtMs", epoch_ms(sale.ends_at).to_string()),
            ("stock", sale.initial_stock.to_string()),
            ("productId", sale.product_id.clone()),
        ];
        // MULTI/EXEC: the script never sees details without a stock. SET NX: re-publishing
        // never resets the live stock.
        let mut connection = self.connection.clone();
        let mut pipe = redis::pipe();
        pipe.atomic().hset_multiple(&keys.info, &info).ignore();
        // An ended sale preheated again (a failover) stays ended: reserve.lua checks `ended`.
        if sale.state == Lifecycle::Ended {
            pipe.hset(&keys.info, "ended", "1").ignore();
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
        let keys = SaleKeys::new(id.as_str());
        let mut connection = self.connection.clone();
        let (info, stock): (HashMap<String, String>, Option<i64>) = redis::pipe()
            .hgetall(&keys.info)
            .get(&keys.stock)
            .query_async(&mut connection)
            .await
            .context("failed to read the sale")?;
        if info.is_empty() {
            return Ok(None);
        }
        Ok(Some(detail_from(id, &info, stock)?))
    }
}

fn verdict(reply: &[String]) -> anyhow::Result<Verdict> {
    let status = reply.first().map(String::as_str).unwrap_or_default();
    let count = || -> anyhow::Result<u32> {
        reply
            .get(2)
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("the reserve script answered {status} without a count"))
    };
    Ok(match status {
        "OK" => Verdict::Reserved {
            price_cents: reply
                .get(1)
                .and_then(|price| price.parse().ok())
                .context("the reserve script answered OK without a price")?,
        },
        "UNKNOWN_SALE" => Verdict::UnknownSale,
        "NOT_STARTED" => Verdict::NotStarted,
        "ENDED" => Verdict::Ended,
        "RATE_LIMITED" => Verdict::RateLimited,
        "LIMIT_REACHED" => Verdict::LimitReached { room: count()? },
        "SOLD_OUT" => Verdict::SoldOut,
        "NOT_ENOUGH_STOCK" => Verdict::NotEnoughStock { left: count()? },
        "KEY_REUSED" => Verdict::KeyReused,
        "REPLAY" => Verdict::Replayed {
            price_cents: reply
                .get(1)
                .and_then(|price| price.parse().ok())
                .context("the reserve script answered REPLAY without a price")?,
            order_id: reply
                .get(2)
                .filter(|order| !order.is_empty())
                .context("the reserve script answered REPLAY without an order")?
                .clone(),
            pending_since_ms: match reply.get(3).map(String::as_str) {
                None | Some("") => None,
                Some(at) => Some(at.parse().context("the reserve script's reservedAtMs")?),
            },
        },
        other => anyhow::bail!("the reserve script answered {other:?}"),
    })
}

#[async_trait]
impl Admission for RedisSales {
    #[tracing::instrument(level = "debug", skip_all, fields(sale = %r.sale_id, order = %r.order_id))]
    async fn reserve(&self, r: &Reservation) -> Result<Verdict, AdmissionError> {
        let keys = SaleKeys::new(r.sale_id.as_str());
        // The user's key, not the sale's: every attempt counts, on every sale.
        let rate = order_rate_key(r.user_id.as_str());
        let order_key = r
            .idempotency
            .as_ref()
            .map(|key| order_key_key(r.user_id.as_str(), &key.key));
        let mut script_keys = vec![
            keys.info.as_str(),
            &keys.stock,
            &keys.bought,
            &keys.pending,
            &rate,
            &keys.orders,
        ];
        script_keys.extend(order_key.as_deref());
        let reply: Vec<String> = self
            .reserve
            .call(&self.connection, &script_keys, |call| {
                call.arg(r.user_id.as_str())
                    .arg(&r.order_id)
                    .arg(r.now_ms)
                    .arg(r.rate_limit_per_second)
                    .arg(r.checkout.quantity);
                if let Some(key) = &r.idempotency {
                    call.arg(&key.fingerprint).arg(ORDER_KEY_TTL_MS);
                }
            })
            .await
            .context("the reserve script failed")?;
        Ok(verdict(&reply)?)
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn release(
        &self,
        sale_id: &SaleId,
        order_id: &str,
        holder: Option<&Holder>,
    ) -> Result<bool, AdmissionError> {
        let keys = SaleKeys::new(sale_id.as_str());
        let script_keys = [
            &keys.stock,
            &keys.bought,
            &keys.pending,
            &keys.released,
            &keys.orders,
        ];
        let released: i64 = self
            .release
            .call(&self.connection, &script_keys.map(String::as_str), |call| {
                call.arg(order_id)
                    .arg(holder.map_or("", |holder| holder.user_id.as_str()))
                    .arg(holder.map_or(1, |holder| holder.units));
            })
            .await
            .context("the release script failed")?;
        Ok(released == 1)
    }
}

#[async_trait]
impl SaleCloser for RedisSales {
    #[tracing::instrument(level = "debug", skip(self))]
    async fn close(&self, id: &SaleId, ends_at_ms: i64) -> Result<(), StoreError> {
        let keys = SaleKeys::new(id.as_str());
        let _held: i64 = self
            .end
            .call(&self.connection, &[keys.info.as_str()], |call| {
                call.arg(ends_at_ms);
            })
            .await
            .context("the end script failed")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_statuses_map_to_verdicts() {
        let reply = |s: &[&str]| s.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            verdict(&reply(&["OK", "500"])).unwrap(),
            Verdict::Reserved { price_cents: 500 }
        );
        assert_eq!(
            verdict(&reply(&["SOLD_OUT", "500", ""])).unwrap(),
            Verdict::SoldOut
        );
        assert_eq!(
            verdict(&reply(&["LIMIT_REACHED", "500", "1"])).unwrap(),
            Verdict::LimitReached { room: 1 }
        );
        assert_eq!(
            verdict(&reply(&["NOT_ENOUGH_STOCK", "500", "2"])).unwrap(),
            Verdict::NotEnoughStock { left: 2 }
        );
        assert!(verdict(&reply(&["NOT_ENOUGH_STOCK", "500", ""])).is_err());
        assert_eq!(
            verdict(&reply(&["UNKNOWN_SALE", ""])).unwrap(),
            Verdict::UnknownSale
        );
        assert_eq!(
            verdict(&reply(&["RATE_LIMITED", ""])).unwrap(),
            Verdict::RateLimited
        );
        assert!(verdict(&reply(&["OK", ""])).is_err());
        assert_eq!(
            verdict(&reply(&["REPLAY", "500", "s.o", "1700"])).unwrap(),
            Verdict::Replayed {
                order_id: "s.o".to_owned(),
                price_cents: 500,
                pending_since_ms: Some(1700)
            }
        );
        assert_eq!(
            verdict(&reply(&["REPLAY", "500", "s.o", ""])).unwrap(),
            Verdict::Replayed {
                order_id: "s.o".to_owned(),
                price_cents: 500,
                pending_since_ms: None
            }
        );
        assert!(verdict(&reply(&["REPLAY", "500", ""])).is_err());
        assert_eq!(
            verdict(&reply(&["KEY_REUSED", ""])).unwrap(),
            Verdict::KeyReused
        );
        assert!(verdict(&reply(&["MAYBE"])).is_err());
    }
}
