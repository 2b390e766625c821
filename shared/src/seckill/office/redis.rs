//! Redis adapter of [`SaleCloser`]: `end.lua` (contract at its top, in `lua/`) on
//! [`RedisSales`], the sales in Redis, ends a sale's admissions at once.

use crate::ids::SaleId;
use crate::seckill::keys::SaleKeys;
use crate::seckill::office::SaleCloser;
use crate::seckill::sale::StoreError;
use crate::seckill::sale::redis::RedisSales;
use anyhow::Context;
use async_trait::async_trait;

#[async_trait]
impl SaleCloser for RedisSales {
    #[tracing::instrument(level = "debug", skip(self))]
    async fn close(&self, id: &SaleId, ends_at_ms: i64) -> Result<(), StoreError> {
        let keys = SaleKeys::new(id);
        let _held: i64 = self
            .end
            .call(&self.connection, &[keys.info.as_str()], |call| {
                call.arg(ends_at_ms);
            })
            .await
            .context("the end script failed")?;
        Ok(())
    }
}
