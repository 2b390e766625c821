//! The flash-sale ("seckill") product: sales preheated into Redis, orders admitted by one
//! atomic Lua script, materialized from a queue into DynamoDB, never oversold.
//!
//! # Layout
//!
//! Domain modules name no AWS or Redis type; each states its ports as traits, and the
//! adapters implement them. Routes only translate HTTP to domain calls. The events it emits
//! and consumes are in [`crate::events`], its ids ([`crate::ids::SaleId`],
//! [`crate::ids::OrderId`]) in [`crate::ids`].
//!
//! - [`sale`] (domain, port): a new sale's rules, its lifecycle, the buyer's state; the
//!   `SaleStore` and `SaleCache` ports.
//! - [`admission`] (domain, port): placing an order; the `Admission` (reserve, release) and
//!   `OrderPublisher` ports.
//! - [`back_office`] (domain, port): the operators' list of every sale, a draft edited, a
//!   sale ended early, and the home page's listing of the live sales; the `SaleOffice` and
//!   `SaleCloser` ports.
//! - [`figures`] (domain, port): one sale's figures for operators (units in Redis and in
//!   DynamoDB, orders by status, units sold, revenue, refunds due); the `SaleLedger` port.
//! - [`checkout`] (domain): what the buyer chooses for an order (quantity, address, payment
//!   method), checked.
//! - [`orders`] (domain, port): the order's states; the `OrderStore`, `Reservations`,
//!   `PendingOrders` and `PaymentDueSink` ports.
//! - [`payment`] (domain, port): online payment, the provider's signed callback and refunds;
//!   the `PaymentProvider` port.
//! - [`refunds`] (domain): the refunds due, listed oldest first and settled once through the
//!   `PaymentProvider` port.
//! - [`order_consumer`] (domain): materializing `OrderPlaced` events, the stock written once
//!   per batch.
//! - [`payment_timeout`] (domain): expiring unpaid orders, their units given back.
//! - [`reconcile`] (domain): giving back reservations that never became orders.
//! - [`failover`] (domain, port): after the cache failed over, every live sale put back in
//!   order; the `CacheControl` port.
//! - [`sale_page`] (domain, port): the static detail page of a published sale, rendered
//!   in one pass with every value escaped, and the page writer that renders it from the
//!   table; the `SalePages` and `PageRequests` ports.
//! - [`keys`] (adapter): the Redis and DynamoDB key design.
//! - [`redis_store`] (adapter): Redis adapter of `SaleCache` and `Admission` (the Lua
//!   scripts).
//! - [`reservations`] (adapter): Redis adapter of `Reservations` and `PendingOrders`.
//! - [`sale_store`] (adapter): DynamoDB adapter of `SaleStore`.
//! - [`sale_office_store`] (adapter): DynamoDB adapter of `SaleOffice`.
//! - [`sale_index`] (adapter): the commerce table's sale indexes, the sparse one of the live
//!   sales and the one of every sale, newest first.
//! - [`page_store`] (adapter): S3 adapter of `SalePages`.
//! - [`page_queue`] (adapter): SQS adapter of `PageRequests` (`SalePageRequested`).
//! - [`order_store`] (adapter): DynamoDB adapter of `OrderStore` and `SaleLedger`.
//! - [`payment_due_sink`] (adapter): SQS adapter of `PaymentDueSink`.
//! - [`order_publisher`] (adapter): SQS adapter of `OrderPublisher`.
//! - [`cache_control`] (adapter): ElastiCache adapter of `CacheControl`.
//! - [`sale_routes`] (routes): `/seckill/activities/...`: create, publish, read a sale,
//!   place an order.
//! - [`back_office_routes`] (routes): `GET /seckill/activities`, `PATCH`, `POST .../end`
//!   and `GET .../figures` of one, for operators; `GET /seckill/listing`, the home page's, public.
//! - [`order_routes`] (routes): `/orders/...`: a buyer's orders and paying them.
//! - [`payment_routes`] (routes): `/payments/callback`, the provider's signed callback.
//! - [`refund_routes`] (routes): `/admin/refunds...`: operators list and settle refunds.
//! - [`sandbox`] (adapter, routes): the sandbox provider of `PaymentProvider` and its pages,
//!   `/sandbox/payments/...` (not on prod stacks).
//! - `memory` (tests only): in-memory fakes of the order path's ports.

pub mod admission;
pub mod back_office;
pub mod back_office_routes;
pub mod backfill;
pub mod cache_control;
pub mod checkout;
pub mod failover;
pub mod figures;
pub mod keys;
pub mod order_consumer;
pub mod order_publisher;
pub mod order_routes;
pub mod order_store;
pub mod orders;
pub mod page_queue;
pub mod page_store;
pub mod payment;
pub mod payment_due_sink;
pub mod payment_routes;
pub mod payment_timeout;
pub mod reconcile;
pub mod redis_store;
pub mod refund_routes;
pub mod refunds;
pub mod reservations;
pub mod sale;
pub mod sale_index;
pub mod sale_office_store;
pub mod sale_page;
pub mod sale_routes;
pub mod sale_store;
pub mod sandbox;

#[cfg(test)]
mod memory;
