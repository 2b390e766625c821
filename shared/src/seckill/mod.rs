//! The flash-sale ("seckill") product: sales preheated into Redis, orders admitted by one
//! atomic Lua script, materialized from a queue into DynamoDB, never oversold.
//!
//! - [`keys`]: the Redis and DynamoDB key design, and the order events.
//! - [`sale`]: the sale's domain: a new sale's rules, its lifecycle, the buyer's state; the
//!   `SaleStore` and `SaleCache` ports.
//! - [`admission`]: placing an order: the `Admission` port (reserve, release) and the
//!   `OrderPublisher` port.
//! - [`redis_store`]: the Redis adapter of `SaleCache` and `Admission` (the Lua scripts).
//! - [`sale_store`]: the DynamoDB adapter of `SaleStore`.
//! - [`order_publisher`]: the SQS adapter of `OrderPublisher`.
//! - [`handlers`]: the HTTP entry points of the sale routes.
//! - [`orders`]: the order's domain: states, events, and the `OrderStore`, `Reservations`
//!   and `PaymentDueSink` ports.
//! - [`order_consumer`], [`payment_timeout`], [`reconcile`]: materializing orders, expiring
//!   unpaid ones, giving back reservations that never became orders.
//! - [`order_routes`]: the HTTP entry points of the order routes.
//! - [`order_store`]: the DynamoDB adapter of `OrderStore` and the SQS adapter of
//!   `PaymentDueSink`; [`reservations`]: the Redis adapter of `Reservations`.
//! - [`failover`]: after the cache failed over, every live sale put back in order (the
//!   `CacheControl` port); [`cache_control`]: its ElastiCache adapter.

pub mod admission;
pub mod cache_control;
pub mod failover;
pub mod handlers;
pub mod keys;
pub mod order_consumer;
pub mod order_publisher;
pub mod order_routes;
pub mod order_store;
pub mod orders;
pub mod payment_timeout;
pub mod reconcile;
pub mod redis_store;
pub mod reservations;
pub mod sale;
pub mod sale_store;

#[cfg(test)]
mod memory;
