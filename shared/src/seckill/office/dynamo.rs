//! DynamoDB adapter of [`SaleOffice`] on the commerce table's sale items: the back office's
//! list (gsi2, every sale newest first), the live sales (gsi1, sparse), a draft replaced and a
//! sale ended, each a conditional write (key design in [`crate::seckill::keys`]); and of
//! [`SaleLedger`] on the order store: a sale's orders tallied from its sharded index (gsi3)
//! and its refunds due.

use crate::cursor::{Cursor, PageLimit};
use crate::dynamo::{get_n, get_s, key, query_page, s, start_of, write_if};
use crate::fault::OrFault;
use crate::ids::SaleId;
use crate::retry::Backoff;
use crate::seckill::keys::{
    ALL_SALES_PK, REFUNDS_DUE_PK, SALE_ORDER_SHARDS, SALE_SK, sale_orders_pk, sale_pk,
};
use crate::seckill::office::figures::{OrderTallies, RefundsDue, SaleLedger};
use crate::seckill::office::{Ending, OfficeError, SaleOffice, SalePage};
use crate::seckill::order::dynamo::{DynamoOrderStore, REFUNDS_INDEX};
use crate::seckill::order::{OrderStatus, OrderStoreError};
use crate::seckill::sale::dynamo::{ALL_SALES_INDEX, live_items};
use crate::seckill::sale::dynamo::{DynamoSaleStore, sale_from_item, sale_item};
use crate::seckill::sale::{Lifecycle, Sale, SaleStore, StoreError};
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_dynamodb::types::ReturnValue;
use time::OffsetDateTime;

#[async_trait]
impl SaleOffice for DynamoSaleStore {
    #[tracing::instrument(level = "debug", skip(self, cursor))]
    async fn page(
        &self,
        state: Option<Lifecycle>,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<SalePage, OfficeError> {
        let fits = |cursor: &Cursor| {
            cursor.get("gsi2pk") == Some(ALL_SALES_PK)
                && cursor.get("sk") == Some(SALE_SK)
                && cursor.get("pk").is_some_and(|pk| pk.starts_with("SALE#"))
        };
        let start = start_of(cursor, &["pk", "sk", "gsi2pk", "gsi2sk"], fits)?;
        let mut query = self
            .table
            .client
            .query()
            .table_name(&self.table.name)
            .index_name(ALL_SALES_INDEX)
            .key_condition_expression("gsi2pk = :all")
            .expression_attribute_values(":all", s(ALL_SALES_PK));
        // Read with the key, then filtered: a page may hold fewer than `limit` sales.
        if let Some(state) = state {
            query = query
                .filter_expression("#state = :state")
                .expression_attribute_names("#state", "state")
                .expression_attribute_values(":state", s(state.as_str()));
        }
        let (items, next) = query_page(query, limit, start, "failed to list the sales", |item| {
            sale_from_item(item)
        })
        .await
        .map_err(StoreError::from)?;
        Ok(SalePage { items, next })
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn live(&self) -> Result<Vec<Sale>, StoreError> {
        let (items, _) = live_items(&self.table).await?;
        Ok(items
            .iter()
            .map(sale_from_item)
            .collect::<anyhow::Result<Vec<_>>>()?)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(sale = %sale.id))]
    async fn replace_draft(&self, sale: &Sale) -> Result<bool, StoreError> {
        let put = self
            .table
            .client
            .put_item()
            .table_name(&self.table.name)
            .set_item(Some(sale_item(sale)))
            .condition_expression("#state = :draft")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":draft", s(Lifecycle::Draft.as_str()));
        Ok(
            write_if(&Backoff::default(), "failed to replace the draft", || {
                put.clone().send()
            })
            .await?
            .is_some(),
        )
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn end(&self, id: &SaleId, now: OffsetDateTime) -> Result<Ending, StoreError> {
        let now = crate::clock::format(now);
        // `endsAt` is in the tables' one format, so its text orders as its time.
        let update = self
            .table
            .update_item(key(sale_pk(id), SALE_SK))
            .update_expression(
                "SET #state = :ended, scheduledEndsAt = endsAt, endsAt = :now, endedAt = :now",
            )
            .condition_expression("#state = :published AND endsAt > :now")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":ended", s(Lifecycle::Ended.as_str()))
            .expression_attribute_values(":published", s(Lifecycle::Published.as_str()))
            .expression_attribute_values(":now", s(&now))
            .return_values(ReturnValue::AllNew);
        // The sale item is in the order path's transactions: a conflict is retried.
        match write_if(&Backoff::default(), "failed to end the sale", || {
            update.clone().send()
        })
        .await?
        {
            Some(output) => {
                let item = output
                    .attributes
                    .context("UpdateItem returned no attributes")?;
                Ok(Ending::Ended(sale_from_item(&item)?))
            }
            None => Ok(match SaleStore::get(self, id).await? {
                None => Ending::Unknown,
                Some(sale) => match sale.state {
                    Lifecycle::Draft => Ending::Draft,
                    Lifecycle::Ended => Ending::AlreadyEnded(sale),
                    Lifecycle::Published => Ending::Over(sale),
                },
            }),
        }
    }

    async fn get(&self, id: &SaleId) -> Result<Option<Sale>, StoreError> {
        SaleStore::get(self, id).await
    }

    async fn reservations(&self, id: &SaleId) -> Result<u64, StoreError> {
        Ok(SaleStore::reserved(self, id).await?.len() as u64)
    }
}

/// The index of a sale's orders, spread over [`SALE_ORDER_SHARDS`] partitions.
const SALE_ORDERS_INDEX: &str = "gsi3";

#[async_trait]
impl SaleLedger for DynamoOrderStore {
    #[tracing::instrument(level = "debug", skip(self))]
    async fn order_tallies(&self, sale_id: &SaleId) -> Result<OrderTallies, OrderStoreError> {
        let shards = (0..SALE_ORDER_SHARDS).map(|shard| self.shard_tally(sale_id, shard));
        let mut tallies = OrderTallies::default();
        for shard in futures_util::future::join_all(shards).await {
            let shard = shard?;
            tallies.items_read += shard.items_read;
            for (status, tally) in shard.by_status {
                let sum = tallies.by_status.entry(status).or_default();
                sum.orders += tally.orders;
                sum.units += tally.units;
                sum.amount_cents = sum.amount_cents.saturating_add(tally.amount_cents);
            }
        }
        Ok(tallies)
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn refunds_due_of(&self, sale_id: &SaleId) -> Result<RefundsDue, OrderStoreError> {
        // Every refund due is read (a short list: see the figures' module), those of the
        // sale's orders kept: an order id is `<saleId>.<uuid>`.
        let mut due = RefundsDue::default();
        let mut start = None;
        loop {
            let output = self
                .table
                .client
                .query()
                .table_name(&self.table.name)
                .index_name(REFUNDS_INDEX)
                .key_condition_expression("gsi1pk = :pk")
                .filter_expression("begins_with(orderId, :sale)")
                .expression_attribute_values(":pk", s(REFUNDS_DUE_PK))
                .expression_attribute_values(":sale", s(format!("{sale_id}.")))
                .projection_expression("amountCents")
                .set_exclusive_start_key(start)
                .send()
                .await
                .or_fault("failed to query the sale's refunds due")?;
            for item in output.items() {
                due.count += 1;
                let amount: u64 = get_n(item, "amountCents").map_err(anyhow::Error::from)?;
                due.amount_cents = due.amount_cents.saturating_add(amount);
            }
            match output.last_evaluated_key() {
                Some(last) => start = Some(last.clone()),
                None => break,
            }
        }
        Ok(due)
    }
}

impl DynamoOrderStore {
    /// The orders of one of the sale's index partitions, tallied, every page of it.
    async fn shard_tally(
        &self,
        sale_id: &SaleId,
        shard: u8,
    ) -> Result<OrderTallies, OrderStoreError> {
        let mut tallies = OrderTallies::default();
        let mut start = None;
        loop {
            let output = self
                .table
                .client
                .query()
                .table_name(&self.table.name)
                .index_name(SALE_ORDERS_INDEX)
                .key_condition_expression("gsi3pk = :pk")
                .expression_attribute_values(":pk", s(sale_orders_pk(sale_id, shard)))
                .projection_expression("#status, quantity, priceCents")
                .expression_attribute_names("#status", "status")
                .set_exclusive_start_key(start)
                .send()
                .await
                .or_fault("failed to query the sale's orders")?;
            tallies.items_read += u64::try_from(output.scanned_count()).unwrap_or(0);
            for item in output.items() {
                let status =
                    OrderStatus::parse(get_s(item, "status").map_err(anyhow::Error::from)?)
                        .context("stored status is unknown")?;
                // Orders written before orders had a quantity are one unit.
                let units: u32 = match item.get("quantity") {
                    Some(_) => get_n(item, "quantity").map_err(anyhow::Error::from)?,
                    None => 1,
                };
                let price: u64 = get_n(item, "priceCents").map_err(anyhow::Error::from)?;
                tallies.add(status, units, price);
            }
            match output.last_evaluated_key() {
                Some(last) => start = Some(last.clone()),
                None => break,
            }
        }
        Ok(tallies)
    }
}
