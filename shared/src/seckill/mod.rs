//! The flash-sale ("seckill") product: sales preheated into Redis, orders admitted by one
//! atomic Lua script, materialized from a queue into DynamoDB, never oversold.
//!
//! - [`keys`]: the Redis and DynamoDB key design, and the order events.

pub mod keys;
