//! After the cache failed over: ElastiCache's event for the sale's Redis arrives on an SNS
//! topic, and every live sale is put back in order at once.
//!
//! Replication from the primary to its replica is asynchronous, so a promoted replica may lack
//! the last writes before the failover, and a node replaced or rebooted without persistence
//! comes back empty. What is lost decides what is done, sale by sale:
//!
//! - the sale's details or stock (an empty node): preheated again from DynamoDB, as publishing
//!   does; buyers see `UNKNOWN_SALE` until then;
//! - the last admissions (their `DECR` of the stock): Redis would admit more than DynamoDB can
//!   confirm, and the order consumer would reject the excess after having said `202`. So the
//!   stock is capped ([`crate::seckill::order::Reservations::cap_stock`]) at DynamoDB's
//!   `stockRemaining` minus the reservations still pending, the most that can be left;
//! - the last releases (their `INCR`): Redis undersells those units, never oversells; the
//!   cap never raises a stock;
//! - the last reservations (预约) of a sale that requires one: every reservation item of every
//!   such live sale is added to its set again (`SADD` is idempotent), so no buyer who reserved
//!   meets `NOT_RESERVED`;
//! - reservations whose orders were never sent: released by the usual reconciliation after
//!   the grace period ([`crate::seckill::recovery::reconcile`]), which runs for every sale right away.
//!
//! DynamoDB's guards (the sale's stock, each buyer's item) stay the last word whatever Redis
//! lost, including the `bought` hash of per-user counts.
//!
//! Before touching Redis the group is checked with the ElastiCache API: until it is
//! `available` with a primary endpoint the run fails, and Lambda retries the asynchronous SNS
//! invocation later.

use crate::ids::SaleId;
use crate::seckill::order::{OrderStore, Reservations};
use crate::seckill::recovery::reconcile::{self, Summary};
use crate::seckill::sale::{SaleCache, SaleStore};
use anyhow::Context;
use async_trait::async_trait;
use serde::Serialize;
use std::time::Duration;

/// The ElastiCache events after which Redis may have lost writes.
const RECOVERY_EVENTS: [&str; 4] = [
    "ElastiCache:FailoverComplete",
    "ElastiCache:CacheNodeReplaceComplete",
    "ElastiCache:CacheNodesRebooted",
    "ElastiCache:CacheClusterRecoveryComplete",
];

/// One ElastiCache event: its name (`ElastiCache:FailoverComplete`) and its source, the
/// cache node or replication group (`follow-seckill-rg-0001-001`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CacheEvent {
    pub name: String,
    pub source: String,
}

impl CacheEvent {
    /// The events of one SNS message from ElastiCache: a JSON object of event name to source
    /// (`{"ElastiCache:FailoverComplete":"rg-0001-001"}`), or the console's text form
    /// (`ElastiCache:FailoverComplete : rg-0001-001`). Anything else gives no event.
    pub fn parse(message: &str) -> Vec<Self> {
        if let Ok(serde_json::Value::Object(map)) = serde_json::from_str(message) {
            return map
                .into_iter()
                .filter(|(name, _)| name.starts_with("ElastiCache:"))
                .map(|(name, source)| Self {
                    name,
                    source: source.as_str().unwrap_or_default().trim().to_owned(),
                })
                .collect();
        }
        match message.split_once(" : ") {
            Some((name, source)) if name.trim().starts_with("ElastiCache:") => vec![Self {
                name: name.trim().to_owned(),
                source: source.trim().to_owned(),
            }],
            _ => Vec::new(),
        }
    }

    /// Whether this event may have cost `group` writes: a recovery event whose source is the
    /// group or one of its nodes (`<group>-0001-001`). ElastiCache ids are lower case.
    pub fn concerns(&self, group: &str) -> bool {
        let group = group.to_ascii_lowercase();
        let source = self.source.to_ascii_lowercase();
        RECOVERY_EVENTS.contains(&self.name.as_str())
            && (source == group
                || source
                    .strip_prefix(&group)
                    .is_some_and(|rest| rest.starts_with('-')))
    }
}

/// The replication group as the control plane describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheGroup {
    pub status: String,
    /// `host:port` of the primary, when it has one.
    pub primary: Option<String>,
}

/// Why the cache's control plane could not be asked: the adapter's own message, which names
/// the group it asked about.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct CacheControlError(#[from] pub anyhow::Error);

/// The cache's control plane (ElastiCache).
#[async_trait]
pub trait CacheControl: Send + Sync {
    async fn group(&self, id: &str) -> Result<CacheGroup, CacheControlError>;
}

/// What the recovery needs.
#[derive(Clone, Copy)]
pub struct FailoverDeps<'a> {
    pub control: &'a dyn CacheControl,
    pub orders: &'a dyn OrderStore,
    pub sales: &'a dyn SaleStore,
    pub cache: &'a dyn SaleCache,
    pub reservations: &'a dyn Reservations,
}

/// What a run did; the function's answer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recovery {
    /// The events that concerned the group; none means nothing was done.
    pub events: Vec<CacheEvent>,
    pub group: Option<CacheGroup>,
    /// Sales whose details were missing from Redis and were preheated again.
    pub preheated: Vec<SaleId>,
    pub reconciled: Summary,
}

/// Puts every live sale back in order if one of `events` concerns `group`.
#[tracing::instrument(skip(deps, events), fields(events = events.len()))]
pub async fn recover(
    deps: FailoverDeps<'_>,
    group: &str,
    events: Vec<CacheEvent>,
    grace: Duration,
    now_ms: i64,
) -> anyhow::Result<Recovery> {
    let (relevant, other): (Vec<_>, Vec<_>) =
        events.into_iter().partition(|event| event.concerns(group));
    for event in &other {
        tracing::info!(name = %event.name, source = %event.source, "cache event needs nothing");
    }
    if relevant.is_empty() {
        return Ok(Recovery::default());
    }
    tracing::warn!(
        ?relevant,
        "the cache may have lost writes: reconciling every live sale"
    );
    let described = deps.control.group(group).await?;
    anyhow::ensure!(
        described.status == "available" && described.primary.is_some(),
        "the replication group {group} is {} (primary {:?}): not yet available, try again",
        described.status,
        described.primary
    );

    let mut preheated = Vec::new();
    for published in deps.orders.live_sales().await?.sales {
        let id = published.sale_id.clone();
        // A sale the cache still holds is left as it is, but for its reservations (预约): a
        // promoted replica may lack the last ones, and their buyers could not order.
        let held = deps.cache.detail(&id).await?;
        if held
            .as_ref()
            .is_some_and(|detail| detail.reservation_opens_at_ms.is_none())
        {
            continue;
        }
        let sale = deps
            .sales
            .get(&id)
            .await?
            .with_context(|| format!("the published sale {id} has no item"))?;
        crate::seckill::sale::preheat(deps.sales, deps.cache, &sale).await?;
        if held.is_some() {
            tracing::info!(sale_id = %id, "reloaded the sale's reservations");
            continue;
        }
        tracing::warn!(sale_id = %id, stock = sale.stock_remaining, "preheated a sale the cache had lost");
        preheated.push(published.sale_id);
    }
    let reconciled = reconcile::reconcile(deps.orders, deps.reservations, grace, now_ms).await?;
    Ok(Recovery {
        events: relevant,
        group: Some(described),
        preheated,
        reconciled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seckill::order::fake::{MemoryOrders, MemoryReservations, S1};
    use crate::seckill::sale::fake::MemorySales;
    use crate::seckill::sale::{Lifecycle, NewSale, Sale};
    use std::sync::Mutex;
    use time::OffsetDateTime;

    /// The control plane, answering `status` and counting its calls.
    struct Control {
        status: &'static str,
        calls: Mutex<usize>,
    }

    #[async_trait]
    impl CacheControl for Control {
        async fn group(&self, _id: &str) -> Result<CacheGroup, CacheControlError> {
            *self.calls.lock().unwrap() += 1;
            Ok(CacheGroup {
                status: self.status.to_owned(),
                primary: Some("master.rg.cache.example:6379".to_owned()),
            })
        }
    }

    struct World {
        control: Control,
        orders: MemoryOrders,
        sales: MemorySales,
        reservations: MemoryReservations,
    }

    impl World {
        /// S1 published with 10 units, 6 left in DynamoDB; Redis holds nothing of it.
        fn new(status: &'static str) -> Self {
            let orders = MemoryOrders::default();
            orders.add_sale(S1, 6);
            let now = OffsetDateTime::now_utc();
            let new = NewSale {
                product_id: "p1".into(),
                title: "Lamp".into(),
                price_cents: 990,
                stock: 10,
                per_user_limit: 1,
                starts_at: now,
                ends_at: now + time::Duration::hours(1),
                reservation_opens_at: None,
            };
            let mut sale = Sale::draft(
                SaleId::parse(S1).unwrap(),
                new,
                "2026-12-01T10:00:00Z".into(),
            );
            sale.state = Lifecycle::Published;
            sale.stock_remaining = 6;
            let sales = MemorySales::default();
            sales.sales.lock().unwrap().insert(sale.id.clone(), sale);
            Self {
                control: Control {
                    status,
                    calls: Mutex::new(0),
                },
                orders,
                sales,
                reservations: MemoryReservations::default(),
            }
        }

        async fn recover(&self, message: &str) -> anyhow::Result<Recovery> {
            let deps = FailoverDeps {
                control: &self.control,
                orders: &self.orders,
                sales: &self.sales,
                cache: &self.sales,
                reservations: &self.reservations,
            };
            recover(
                deps,
                "rg",
                CacheEvent::parse(message),
                Duration::from_secs(60),
                0,
            )
            .await
        }
    }

    #[tokio::test]
    async fn a_failover_preheats_what_redis_lost_and_caps_a_stock_too_high() {
        let world = World::new("available");
        // The promoted replica kept a stock 3 above what DynamoDB can confirm.
        world.reservations.set_stock(S1, 9);

        let recovery = world
            .recover(r#"{"ElastiCache:FailoverComplete":"rg-0001-002"}"#)
            .await
            .unwrap();

        assert_eq!(recovery.events.len(), 1);
        assert_eq!(recovery.preheated, [SaleId::parse(S1).unwrap()]);
        let detail = world.sales.cached.lock().unwrap()[&SaleId::parse(S1).unwrap()].clone();
        assert_eq!(detail.stock_remaining, 6);
        assert_eq!(recovery.reconciled.sales[0].capped, 3);
        assert_eq!(world.reservations.stock_of(S1), 6);

        // Once in order, a second event finds nothing to do.
        let again = world
            .recover(r#"{"ElastiCache:FailoverComplete":"rg-0001-001"}"#)
            .await
            .unwrap();
        assert!(again.preheated.is_empty());
        assert_eq!(again.reconciled.sales[0].capped, 0);
    }

    #[tokio::test]
    async fn nothing_is_touched_for_other_events_or_before_the_group_is_available() {
        let world = World::new("modifying");
        let ignored = world
            .recover(r#"{"ElastiCache:SnapshotComplete":"rg"}"#)
            .await
            .unwrap();
        assert_eq!(ignored, Recovery::default());
        assert_eq!(*world.control.calls.lock().unwrap(), 0);

        let err = world
            .recover(r#"{"ElastiCache:FailoverComplete":"rg-0001-002"}"#)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("is modifying"), "{err}");
        assert!(
            world.sales.cached.lock().unwrap().is_empty(),
            "nothing preheated"
        );
    }

    #[test]
    fn elasticache_messages_give_their_events() {
        assert_eq!(
            CacheEvent::parse(r#"{"ElastiCache:FailoverComplete":"sales-rg-0001-002"}"#),
            [CacheEvent {
                name: "ElastiCache:FailoverComplete".into(),
                source: "sales-rg-0001-002".into()
            }]
        );
        assert_eq!(
            CacheEvent::parse("ElastiCache:CacheNodesRebooted : sales-rg-0001-001"),
            [CacheEvent {
                name: "ElastiCache:CacheNodesRebooted".into(),
                source: "sales-rg-0001-001".into()
            }]
        );
        for other in ["", "hello", "{}", "[1]", r#"{"Other:Thing":"x"}"#, "A : b"] {
            assert!(CacheEvent::parse(other).is_empty(), "{other}");
        }
    }

    #[test]
    fn only_recovery_events_of_our_group_or_its_nodes_concern_it() {
        let event = |name: &str, source: &str| CacheEvent {
            name: name.into(),
            source: source.into(),
        };
        let failover = "ElastiCache:FailoverComplete";
        assert!(event(failover, "sales-rg").concerns("Sales-RG"));
        assert!(event(failover, "sales-rg-0001-002").concerns("sales-rg"));
        assert!(
            event("ElastiCache:CacheNodeReplaceComplete", "sales-rg-0001-001").concerns("sales-rg")
        );
        assert!(!event(failover, "sales-rg2-0001-001").concerns("sales-rg"));
        assert!(!event(failover, "other").concerns("sales-rg"));
        assert!(!event("ElastiCache:SnapshotComplete", "sales-rg").concerns("sales-rg"));
    }
}
