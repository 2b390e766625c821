//! The flash sale's key design, in Redis and in the commerce table (its events are in
//! [`crate::events`]).
//!
//! Redis (every key of one sale shares the hash tag `{<saleId>}`, so that a script on one
//! sale's keys stays in one hash slot; the admission script also counts the user's attempts in
//! the user's own key, which the cache allows because it runs with cluster mode disabled, see
//! `reserve.lua`):
//!
//! | key | type | what |
//! |---|---|---|
//! | `sale:{<id>}:info` | hash | `title`, `priceCents`, `perUserLimit`, `startsAtMs`, `endsAtMs`, `stock` (initial), `productId`: what the detail page and the admission script read |
//! | `sale:{<id>}:stock` | string (integer) | units left to reserve |
//! | `sale:{<id>}:bought` | hash userId → n | units each user holds (reserved, confirmed or paid) |
//! | `sale:{<id>}:pending` | hash orderId → `userId:reservedAtMs:units` | reservations not yet materialized in DynamoDB (the reconciliation's worklist) |
//! | `sale:{<id>}:claimed` | hash orderId → `userId:reservedAtMs:units` | the reservations the order consumer took over from `pending` (`claim.lua`): what it materializes, whatever a message says, and answers again when a message comes back |
//! | `sale:{<id>}:released` | set of orderIds | reservations given back, so that a release happens once |
//! | `sale:{<id>}:orders` | hash orderId → userId | every order the script admitted and its owner, so that `GET /orders/{orderId}` answers `PENDING` before the order is materialized; removed only when the reservation is given up while still pending (it never became an order, and its `Idempotency-Key` is free again), otherwise kept (one small field per admitted order, so at most the stock plus the releases; it goes with the sale's other keys) |
//! | `sale:{<id>}:reserved` | set of userIds | the buyers who reserved (预约) a sale that requires it: the admission script lets only them order (`NOT_RESERVED` otherwise), its size is the detail page's reservation count; written after the durable reservation item, loaded from those items at every preheat |
//! | `user:{<userId>}:order-key:<key>` | hash `request`, `order`, `price` (expiring after 24 hours) | what the buyer's `Idempotency-Key` admitted: the request's fingerprint (sale and checkout, hashed), the order and its unit price; written by the admission script in the step that reserves, only for an admission, so at most one per order |
//! | `user:{<userId>}:order-rate` | string (integer, expiring after a second) | the user's order attempts in the current one-second window, on every sale and whatever they answered (so `NOT_STARTED`, `ENDED` and unknown sales count too); one key per user, not per sale, so that spreading attempts over sales buys no extra budget |
//!
//! Commerce table:
//!
//! | item | `pk` | `sk` | index keys | access pattern |
//! |---|---|---|---|---|
//! | sale | `SALE#<id>` | `SALE` | gsi2 `SALES` / `<createdAt>#<id>`, always; gsi1 `SALES#LIVE` / `<startsAt>#<id>` from publishing until retired | the sale's definition, `state` (DRAFT, PUBLISHED, ENDED), `perUserLimit` and `stockRemaining`, DynamoDB's final guard against oversell; every sale newest first (the back office); the live sales (the home page, reconciliation, failover) |
//!
//! The live sales are a sparse index: only a sale between its publishing and its retirement
//! (reconciliation takes it off once it ended and its grace period passed, [`crate::seckill::recovery::reconcile`])
//! carries the gsi1 keys, so reading them costs the live sales, not the table: never a scan.
//! | buyer | `SALE#<id>#BUYER#<userId>` | `BUYER` | | `units`: how many of the sale's units the user holds (CONFIRMED or PAID orders), DynamoDB's final guard of `perUserLimit` when Redis lost its `bought` hash; the order consumer adds to it in the transaction that confirms the orders, the payment timeout takes back in the one that cancels them |
//!
//! A buyer's item is written once per transaction that confirms or cancels that buyer's
//! orders, so it is not hot. It has a partition key of its own rather than sitting under the
//! sale's (`SALE#<id>` / `BUYER#<userId>`): the write limit is a partition's, and all of a
//! sale's buyers written under its key would add their writes to the partition of the sale's
//! stock item, the hottest of the sale.
//! | order | `ORDER#<orderId>` | `ORDER` | gsi1 `USER#<u>` / `<createdAt>#<orderId>`; gsi3 `SALE#<saleId>#ORDERS#<n>` / `<createdAt>#<orderId>` (`n` = [`order_shard`], 0 to 7) | one order by id (owner checked); a user's orders newest first; a sale's orders, for its figures (gsi3 projects only `status`, `quantity`, `priceCents`) |
//!
//! A sale's orders are spread over [`SALE_ORDER_SHARDS`] index partitions by a stable hash of
//! the order id: a flash sale writes thousands of orders a second, and every one of them (and
//! every change of its status) is a write of its gsi3 partition, whose limit is a partition's
//! (1,000 writes/s); a throttled index throttles the table's writes behind it, the order
//! consumer's transactions included. Eight partitions take 8,000 writes/s. The figures read
//! the eight partitions, each with its key. Orders written before gsi3 existed have no gsi3
//! keys and are not counted (see docs/operations.md).
//! | refund | `REFUND#<paymentId>` | `ORDER#<orderId>` | gsi1 `REFUNDS#DUE` (then `REFUNDS#REFUNDED`) / `<recordedAt>#<paymentId>` | a payment that succeeded for an order that could not take it, recorded once per payment and order (`orderId`, `userId`, `amountCents`, `currency`, `reason`, `state` DUE, then REFUNDED with `refundedAt` and `providerRefundId` once an operator settled it): a notice naming the payment with another order records its own item, never blocking the genuine one; the refunds to pay back, oldest first, a keyed query of `REFUNDS#DUE`; the order item lists its refunds (`refunds`, each entry's `state` following the refund's) |
//! | payment's refund ledger | `REFUND#<paymentId>` | `PAYMENT` | | `refundedFor`: the order whose refund of the payment an operator settled (or is settling), taken before the provider is asked, so that two refunds recorded for one payment (notices naming it with two orders) pay it back once |
//! | reservation (预约) | `SALE#<id>#RESERVATION#<userId>` | `RESERVATION` | gsi3 `SALE#<saleId>#RESERVATIONS#<n>` / `<userId>` (`n` = [`reservation_shard`], 0 to 7) | the buyer's reservation of a sale that requires one (`reservedAt`), the durable truth that a preheat loads into Redis's `reserved` set; each its own partition, and spread over eight index partitions as orders are, so that thousands reserving at once write no hot key |
//! | applied marker | `APPLIED#<consumer>#<eventId>` | `APPLIED` | | an event a consumer already applied |

use crate::ids::{OrderId, SaleId};

/// The Redis keys of one sale.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaleKeys {
    pub info: String,
    pub stock: String,
    pub bought: String,
    pub pending: String,
    pub released: String,
    pub orders: String,
    pub reserved: String,
    pub claimed: String,
}

impl SaleKeys {
    pub fn new(sale_id: &SaleId) -> Self {
        let tag = format!("sale:{{{sale_id}}}");
        Self {
            info: format!("{tag}:info"),
            stock: format!("{tag}:stock"),
            bought: format!("{tag}:bought"),
            pending: format!("{tag}:pending"),
            released: format!("{tag}:released"),
            orders: format!("{tag}:orders"),
            reserved: format!("{tag}:reserved"),
            claimed: format!("{tag}:claimed"),
        }
    }
}

/// The Redis key counting `user_id`'s order attempts in the current one-second window, across
/// every sale (the admission script's rate limit).
pub fn order_rate_key(user_id: &str) -> String {
    format!("user:{{{user_id}}}:order-rate")
}

/// The Redis key of what `user_id`'s `Idempotency-Key` `key` admitted (keys are per buyer:
/// another buyer's same key is another key).
pub fn order_key_key(user_id: &str, key: &str) -> String {
    format!("user:{{{user_id}}}:order-key:{key}")
}

pub const SALE_SK: &str = "SALE";
pub const ORDER_SK: &str = "ORDER";

pub fn sale_pk(sale_id: &SaleId) -> String {
    format!("SALE#{sale_id}")
}

/// The gsi1 partition of the live sales: published, not yet retired.
pub const LIVE_SALES_PK: &str = "SALES#LIVE";

/// A live sale's gsi1 sort key: soonest start first.
pub fn live_sale_sk(starts_at: &str, sale_id: &SaleId) -> String {
    format!("{starts_at}#{sale_id}")
}

/// The gsi2 partition of every sale, drafts included (the back office's list).
pub const ALL_SALES_PK: &str = "SALES";

/// A sale's gsi2 sort key: newest first when read backwards.
pub fn all_sales_sk(created_at: &str, sale_id: &SaleId) -> String {
    format!("{created_at}#{sale_id}")
}

pub const BUYER_SK: &str = "BUYER";

/// The partition key of what `user_id` holds of the sale.
pub fn buyer_pk(sale_id: &SaleId, user_id: &str) -> String {
    format!("SALE#{sale_id}#BUYER#{user_id}")
}

pub fn order_pk(order_id: &OrderId) -> String {
    format!("ORDER#{order_id}")
}

/// The index partition of the refunds still to pay back, oldest first (rare: a payment that
/// arrived after its order was cancelled).
pub const REFUNDS_DUE_PK: &str = "REFUNDS#DUE";

/// The index partition of the refunds paid back (settled by an operator), oldest first.
pub const REFUNDS_SETTLED_PK: &str = "REFUNDS#REFUNDED";

pub fn refund_pk(payment_id: &str) -> String {
    format!("REFUND#{payment_id}")
}

/// The sort key of a payment's refund ledger under [`refund_pk`]: `refundedFor`, the one
/// order whose refund of the payment is paid back (a payment is refunded at most once).
pub const PAYMENT_REFUND_SK: &str = "PAYMENT";

/// A refund's sort key: the order the notice named, so that each (payment, order) pair is
/// recorded once and one pair never blocks or overwrites another.
pub fn refund_sk(order_id: &OrderId) -> String {
    format!("ORDER#{order_id}")
}

/// How many gsi3 partitions a sale's orders are spread over.
pub const SALE_ORDER_SHARDS: u8 = 8;

/// The gsi3 partition of `order_id` among its sale's: a stable hash of the id (its SHA-256's
/// first byte), so that a redelivered order lands in the same one.
pub fn order_shard(order_id: &OrderId) -> u8 {
    use sha2::Digest;
    sha2::Sha256::digest(order_id.as_str().as_bytes())[0] % SALE_ORDER_SHARDS
}

/// The gsi3 partition key of one shard of a sale's orders.
pub fn sale_orders_pk(sale_id: &SaleId, shard: u8) -> String {
    format!("SALE#{sale_id}#ORDERS#{shard}")
}

/// An order's gsi3 sort key: its sale's orders oldest first.
pub fn sale_orders_sk(created_at: &str, order_id: &OrderId) -> String {
    format!("{created_at}#{order_id}")
}

pub const RESERVATION_SK: &str = "RESERVATION";

/// The partition key of `user_id`'s reservation (预约) of a sale.
pub fn reservation_pk(sale_id: &SaleId, user_id: &str) -> String {
    format!("SALE#{sale_id}#RESERVATION#{user_id}")
}

/// The gsi3 partition of `user_id`'s reservation among its sale's, as [`order_shard`].
pub fn reservation_shard(user_id: &str) -> u8 {
    use sha2::Digest;
    sha2::Sha256::digest(user_id.as_bytes())[0] % SALE_ORDER_SHARDS
}

/// The gsi3 partition key of one shard of a sale's reservations.
pub fn sale_reservations_pk(sale_id: &SaleId, shard: u8) -> String {
    format!("SALE#{sale_id}#RESERVATIONS#{shard}")
}

pub fn user_orders_pk(user_id: &str) -> String {
    format!("USER#{user_id}")
}

pub fn user_orders_sk(created_at: &str, order_id: &OrderId) -> String {
    format!("{created_at}#{order_id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const S1: &str = "0190f0e2-1c2b-7a00-8000-000000000001";

    #[test]
    fn every_key_of_a_sale_shares_its_hash_tag() {
        let keys = SaleKeys::new(&SaleId::parse(S1).unwrap());
        for key in [
            &keys.info,
            &keys.stock,
            &keys.bought,
            &keys.pending,
            &keys.released,
            &keys.orders,
            &keys.reserved,
            &keys.claimed,
        ] {
            assert!(key.starts_with(&format!("sale:{{{S1}}}:")), "{key}");
        }
    }

    #[test]
    fn an_order_keeps_its_shard_and_a_sales_orders_spread_over_every_shard() {
        let sale = SaleId::parse(S1).unwrap();
        let order = OrderId::generate(&sale);
        assert_eq!(order_shard(&order), order_shard(&order.clone()));
        let mut seen = [0u32; SALE_ORDER_SHARDS as usize];
        for i in 0..800 {
            let order = OrderId::parse(&format!("{S1}.{i:032x}")).unwrap();
            seen[usize::from(order_shard(&order))] += 1;
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
        assert_eq!(sale_orders_pk(&sale, 3), format!("SALE#{S1}#ORDERS#3"));
    }

    #[test]
    fn the_order_rate_key_is_the_users_whatever_the_sale() {
        assert_eq!(order_rate_key("ann"), "user:{ann}:order-rate");
        assert!(!order_rate_key("ann").contains("sale"));
    }
}
