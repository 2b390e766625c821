//! Redis adapter of [`ReservationList`] on [`RedisSales`]: the sale's `reserved` set beside
//! its `info` hash (key design in [`crate::seckill::keys`]).

use crate::ids::{SaleId, UserId};
use crate::seckill::keys::SaleKeys;
use crate::seckill::reservation::{ReservationList, Standing, Window};
use crate::seckill::sale::StoreError;
use crate::seckill::sale::redis::RedisSales;
use anyhow::Context;
use async_trait::async_trait;

type Info = (Option<i64>, Option<i64>, Option<String>);

#[async_trait]
impl ReservationList for RedisSales {
    #[tracing::instrument(level = "debug", skip(self))]
    async fn standing(&self, sale: &SaleId, user: &UserId) -> Result<Option<Standing>, StoreError> {
        let keys = SaleKeys::new(sale);
        let mut connection = self.connection.clone();
        let ((starts_at_ms, opens_at_ms, ended), reserved, reservations): (Info, bool, u64) =
            redis::pipe()
                .hmget(&keys.info, &["startsAtMs", "reservationOpensAtMs", "ended"])
                .sismember(&keys.reserved, user.as_str())
                .scard(&keys.reserved)
                .query_async(&mut connection)
                .await
                .context("failed to read the sale's reservations")?;
        let Some(starts_at_ms) = starts_at_ms else {
            return Ok(None);
        };
        Ok(Some(Standing {
            window: Window {
                opens_at_ms,
                starts_at_ms,
                ended: ended.is_some(),
            },
            reserved,
            reservations,
        }))
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn set(&self, sale: &SaleId, user: &UserId, reserved: bool) -> Result<u64, StoreError> {
        let keys = SaleKeys::new(sale);
        let mut connection = self.connection.clone();
        let mut pipe = redis::pipe();
        if reserved {
            pipe.sadd(&keys.reserved, user.as_str()).ignore();
        } else {
            pipe.srem(&keys.reserved, user.as_str()).ignore();
        }
        let (count,): (u64,) = pipe
            .scard(&keys.reserved)
            .query_async(&mut connection)
            .await
            .context("failed to write the reservation to the cache")?;
        Ok(count)
    }
}
