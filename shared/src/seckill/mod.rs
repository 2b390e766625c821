//! The flash-sale ("seckill") product: sales preheated into Redis, orders admitted by one
//! atomic Lua script, materialized from a queue into DynamoDB, never oversold.
//!
//! # Layout
//!
//! One folder per concern. In each, `mod.rs` is the domain and its ports (traits that name no
//! AWS or Redis type), the adapters are named by the technology they speak (`dynamo.rs`,
//! `redis.rs`, `sqs.rs`, `s3.rs`, `elasticache.rs`), `routes.rs` translates HTTP to domain
//! calls and `fake.rs` holds the in-memory fakes of its ports for unit tests. A file grown
//! past one concern becomes a folder of that name: `order/dynamo/` keeps the refund records in
//! `refunds.rs`, `order/fake/` a file per store it fakes (`orders.rs`, `reservations.rs`). A
//! concern uses only the concerns listed before it, never one after it (a contract test
//! checks), so that each can be read with what it builds on:
//!
//! 1. [`sale`]: a sale's rules and lifecycle, the buyer's view of it, its detail page
//!    rendered in one pass with every value escaped; the `SaleStore`, `SaleCache`,
//!    `SalePages` and `PageRequests` ports. Routes: create, publish and read a sale.
//! 2. [`reservation`]: a buyer's reservation (预约) of a sale that requires one, durable in
//!    the table and listed in Redis for the admission script; the `ReservationBook` and
//!    `ReservationList` ports. Routes: reserve, cancel, and read one's reservation.
//! 3. [`admission`]: placing an order, what the buyer chooses at checkout, the seal of the
//!    order queue's messages; the `Admission` (reserve, release) and `OrderPublisher` ports.
//!    Route: place an order.
//! 4. [`order`]: the order's states, materializing `OrderPlaced` events (the stock written
//!    once per batch), the refund records an order keeps; the `OrderStore`, `Reservations`,
//!    `PendingOrders` and `PaymentDueSink` ports. Routes: a buyer's orders.
//! 5. [`payment`]: online payment, the provider's signed callback, unpaid orders expired,
//!    refunds listed and settled once, the sandbox provider; the `PaymentProvider` port.
//!    Routes: pay an order, the callback, the operators' refunds, the sandbox's pages.
//! 6. [`office`]: the operators' back office (every sale listed, a draft edited, a sale ended
//!    early, one sale's figures) and the home page's listing of the live sales; the
//!    `SaleOffice`, `SaleCloser` and `SaleLedger` ports.
//! 7. [`recovery`]: reservations that never became orders given back, every live sale put
//!    back in order after the cache failed over, index keys backfilled; the `CacheControl`
//!    port.
//!
//! [`keys`] is the Redis and DynamoDB key design that every adapter shares, and `lua/` holds
//! the Redis scripts (contracts at their tops). The events the product emits and consumes are
//! in [`crate::events`], its ids ([`crate::ids::SaleId`], [`crate::ids::OrderId`]) in
//! [`crate::ids`].

pub mod admission;
pub mod keys;
pub mod office;
pub mod order;
pub mod payment;
pub mod recovery;
pub mod reservation;
pub mod sale;
