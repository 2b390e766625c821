//! Redis adapter of [`Reservations`]: the order path's side of a sale's keys (key design in
//! [`crate::seckill::keys`]). Releasing goes through the admission's `release.lua` (via
//! [`RedisSales`]), so that a unit is given back once, whoever releases it; the consumer's
//! `claim.lua` (contract at its top) makes a release and a confirmation exclusive. Also the
//! Redis adapter of [`PendingOrders`]: an admitted order's owner, for `GET /orders/{orderId}`.

use crate::cloud::RedisSetupError;
use crate::config::Env;
use crate::ids::{OrderId, SaleId};
use crate::script::LuaScript;
use crate::seckill::admission::{Admission, Holder};
use crate::seckill::keys::SaleKeys;
use crate::seckill::order::{
    AdmittedOrder, Claim, PendingError, PendingOrders, PendingReservation, Reservations,
    ReservationsError,
};
use crate::seckill::sale::redis::RedisSales;
use anyhow::Context;
use async_trait::async_trait;
use redis::AsyncCommands;
use redis::aio::ConnectionManager;
use std::collections::HashMap;

const CLAIM: &str = include_str!("../lua/claim.lua");
const CAP: &str = include_str!("../lua/cap.lua");

/// Why the reservations could not be set up at cold start.
#[derive(Debug, thiserror::Error)]
pub enum ReservationsSetupError {
    #[error(transparent)]
    Redis(#[from] RedisSetupError),
    #[error("failed to load the Lua scripts")]
    Scripts(#[source] redis::RedisError),
}

/// The reservations in Redis; cheap to clone.
#[derive(Clone)]
pub struct RedisReservations {
    connection: ConnectionManager,
    sales: RedisSales,
    claim: LuaScript,
    cap: LuaScript,
}

impl RedisReservations {
    pub fn new(connection: ConnectionManager) -> Self {
        Self {
            sales: RedisSales::new(connection.clone()),
            claim: LuaScript::new("claim", CLAIM),
            cap: LuaScript::new("cap", CAP),
            connection,
        }
    }

    /// The connection, shared (e.g. with a [`RedisSales`] of the same function).
    pub fn connection(&self) -> ConnectionManager {
        self.connection.clone()
    }

    /// Connects to the configured Redis ([`crate::cloud::redis_from_env`]) without loading
    /// the scripts: enough for [`PendingOrders`], which only reads.
    pub async fn reader_from_env(env: &Env) -> Result<Self, RedisSetupError> {
        Ok(Self::new(crate::cloud::redis_from_env(env).await?))
    }

    /// Connects to the configured Redis ([`crate::cloud::redis_from_env`]) and loads the
    /// scripts: a cold start's work.
    pub async fn from_env(env: &Env) -> Result<Self, ReservationsSetupError> {
        let connection = crate::cloud::redis_from_env(env).await?;
        let reservations = Self::new(connection);
        let [reserve, release] = reservations.sales.scripts();
        let scripts = [reserve, release, &reservations.claim, &reservations.cap];
        LuaScript::load_all(&scripts, &reservations.connection)
            .await
            .map_err(ReservationsSetupError::Scripts)?;
        Ok(reservations)
    }
}

/// A `pending` field and entry: an [`OrderId`] and `userId:reservedAtMs:units` (user ids never
/// hold ':'); an entry written before orders had a quantity, `userId:reservedAtMs`, is one
/// unit.
fn parse_pending(order_id: &str, entry: &str) -> Option<PendingReservation> {
    let order_id = OrderId::parse(order_id).ok()?;
    let mut fields = entry.split(':');
    let user_id = fields.next()?.to_owned();
    let reserved_at_ms = fields.next()?.parse().ok()?;
    let units = match fields.next() {
        Some(units) => units.parse().ok().filter(|units| *units > 0)?,
        None => 1,
    };
    if fields.next().is_some() {
        return None;
    }
    Some(PendingReservation {
        order_id,
        user_id,
        reserved_at_ms,
        units,
    })
}

/// The ids as Redis takes them.
fn raw(order_ids: &[OrderId]) -> Vec<&str> {
    order_ids.iter().map(OrderId::as_str).collect()
}

#[async_trait]
impl Reservations for RedisReservations {
    #[tracing::instrument(level = "debug", skip(self, order_ids), fields(orders = order_ids.len()))]
    async fn confirm(
        &self,
        sale_id: &SaleId,
        order_ids: &[OrderId],
    ) -> Result<(), ReservationsError> {
        if order_ids.is_empty() {
            return Ok(());
        }
        let keys = SaleKeys::new(sale_id);
        let mut connection = self.connection.clone();
        let _: i64 = connection
            .hdel(&keys.pending, raw(order_ids))
            .await
            .context("failed to remove confirmed reservations from pending")?;
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip(self, order_ids), fields(orders = order_ids.len()))]
    async fn claim(
        &self,
        sale_id: &SaleId,
        order_ids: &[OrderId],
    ) -> Result<Vec<Claim>, ReservationsError> {
        if order_ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys = SaleKeys::new(sale_id);
        let script_keys = [keys.pending.as_str(), &keys.released, &keys.claimed];
        let answers: Vec<String> = self
            .claim
            .call(&self.connection, &script_keys, |call| {
                call.arg(raw(order_ids));
            })
            .await
            .context("the claim script failed")?;
        if answers.len() != order_ids.len() {
            return Err(anyhow::anyhow!(
                "the claim script answered {} of {} orders",
                answers.len(),
                order_ids.len()
            )
            .into());
        }
        let claims = order_ids.iter().zip(&answers).map(|(id, answer)| {
            Ok(match answer.as_str() {
                "!" => Claim::Released,
                "" => Claim::Unknown,
                entry => Claim::Held(
                    parse_pending(id.as_str(), entry)
                        .with_context(|| format!("the claim script answered {entry:?} for {id}"))?,
                ),
            })
        });
        Ok(claims.collect::<anyhow::Result<_>>()?)
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn release(
        &self,
        sale_id: &SaleId,
        order_id: &OrderId,
        holder: Option<&Holder>,
    ) -> Result<bool, ReservationsError> {
        Ok(self
            .sales
            .release(sale_id, order_id, holder)
            .await
            .map_err(anyhow::Error::from)?)
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn pending(
        &self,
        sale_id: &SaleId,
    ) -> Result<Vec<PendingReservation>, ReservationsError> {
        let keys = SaleKeys::new(sale_id);
        let mut connection = self.connection.clone();
        let entries: HashMap<String, String> = connection
            .hgetall(&keys.pending)
            .await
            .context("failed to read pending reservations")?;
        let mut pending = Vec::with_capacity(entries.len());
        for (order_id, entry) in entries {
            match parse_pending(&order_id, &entry) {
                Some(reservation) => pending.push(reservation),
                None => tracing::error!(%sale_id, order_id, entry, "malformed pending entry"),
            }
        }
        pending.sort_by_key(|p| p.reserved_at_ms);
        Ok(pending)
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn stock(&self, sale_id: &SaleId) -> Result<Option<i64>, ReservationsError> {
        let keys = SaleKeys::new(sale_id);
        let mut connection = self.connection.clone();
        connection
            .get(&keys.stock)
            .await
            .context("failed to read the Redis stock")
            .map_err(Into::into)
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn cap_stock(
        &self,
        sale_id: &SaleId,
        dynamo_stock_remaining: i64,
    ) -> Result<i64, ReservationsError> {
        let keys = SaleKeys::new(sale_id);
        let script_keys = [keys.stock.as_str(), &keys.pending];
        self.cap
            .call(&self.connection, &script_keys, |call| {
                call.arg(dynamo_stock_remaining);
            })
            .await
            .context("the cap script failed")
            .map_err(Into::into)
    }
}

#[async_trait]
impl PendingOrders for RedisReservations {
    #[tracing::instrument(level = "debug", skip(self))]
    async fn admitted(&self, order_id: &OrderId) -> Result<Option<AdmittedOrder>, PendingError> {
        let keys = SaleKeys::new(order_id.sale_id());
        let mut connection = self.connection.clone();
        let (owner, released): (Option<String>, bool) = redis::pipe()
            .hget(&keys.orders, order_id.as_str())
            .sismember(&keys.released, order_id.as_str())
            .query_async(&mut connection)
            .await
            .context("failed to read an admitted order")?;
        Ok(owner.map(|user_id| AdmittedOrder { user_id, released }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_entries_carry_their_units_and_old_ones_are_one_unit() {
        let order = OrderId::generate(&SaleId::generate());
        let o = order.as_str();
        let parsed = parse_pending(o, "ann:1700:3").unwrap();
        assert_eq!(
            (parsed.user_id.as_str(), parsed.reserved_at_ms, parsed.units),
            ("ann", 1700, 3)
        );
        assert_eq!(parsed.order_id, order);
        assert_eq!(parse_pending(o, "ann:1700").unwrap().units, 1);
        for bad in ["ann", "ann:x", "ann:1700:0", "ann:1700:2:9", "ann:1700:-2"] {
            assert_eq!(parse_pending(o, bad), None, "{bad}");
        }
    }

    #[test]
    fn a_pending_field_that_is_no_order_id_is_malformed() {
        for bad in ["o", "o#1", ""] {
            assert_eq!(parse_pending(bad, "ann:1700:1"), None, "{bad}");
        }
    }
}
