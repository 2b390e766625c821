//! Redis adapter of [`Admission`]: `reserve.lua` and `release.lua` (contracts at their tops,
//! in `lua/`) on [`RedisSales`], the sales in Redis.
//!
//! The key design is in [`crate::seckill::keys`].

use crate::ids::{OrderId, SaleId};
use crate::seckill::admission::ORDER_KEY_TTL_MS;
use crate::seckill::admission::{Admission, AdmissionError, Holder, Reservation, Verdict};
use crate::seckill::keys::{SaleKeys, order_key_key, order_rate_key};
use crate::seckill::sale::redis::RedisSales;
use anyhow::Context;
use async_trait::async_trait;

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
        "NOT_RESERVED" => Verdict::NotReserved,
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
                .context("the reserve script answered REPLAY without an order")
                .and_then(|order| {
                    OrderId::parse(order)
                        .with_context(|| format!("the reserve script replayed {order:?}"))
                })?,
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
        let keys = SaleKeys::new(&r.sale_id);
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
            &keys.reserved,
        ];
        script_keys.extend(order_key.as_deref());
        let reply: Vec<String> = self
            .reserve
            .call(&self.connection, &script_keys, |call| {
                call.arg(r.user_id.as_str())
                    .arg(r.order_id.as_str())
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
        order_id: &OrderId,
        holder: Option<&Holder>,
    ) -> Result<bool, AdmissionError> {
        let keys = SaleKeys::new(sale_id);
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
                call.arg(order_id.as_str())
                    .arg(holder.map_or("", |holder| holder.user_id.as_str()))
                    .arg(holder.map_or(1, |holder| holder.units));
            })
            .await
            .context("the release script failed")?;
        Ok(released == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_statuses_map_to_verdicts() {
        let order = OrderId::generate(&SaleId::generate());
        let o = order.as_str();
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
            verdict(&reply(&["REPLAY", "500", o, "1700"])).unwrap(),
            Verdict::Replayed {
                order_id: order.clone(),
                price_cents: 500,
                pending_since_ms: Some(1700)
            }
        );
        assert_eq!(
            verdict(&reply(&["REPLAY", "500", o, ""])).unwrap(),
            Verdict::Replayed {
                order_id: order.clone(),
                price_cents: 500,
                pending_since_ms: None
            }
        );
        assert!(verdict(&reply(&["REPLAY", "500", ""])).is_err());
        assert!(verdict(&reply(&["REPLAY", "500", "s.o", ""])).is_err());
        assert_eq!(
            verdict(&reply(&["KEY_REUSED", ""])).unwrap(),
            Verdict::KeyReused
        );
        assert!(verdict(&reply(&["MAYBE"])).is_err());
    }
}
