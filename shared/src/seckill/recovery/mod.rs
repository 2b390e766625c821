//! Putting the flash sale back in order after what goes wrong: reservations that never became
//! orders given back ([`reconcile`]), every live sale restored after the cache failed over
//! ([`failover`], with its ElastiCache adapter [`elasticache`]), and index keys added to items
//! written before their index existed ([`backfill`]).

pub mod backfill;
pub mod elasticache;
pub mod failover;
pub mod reconcile;
