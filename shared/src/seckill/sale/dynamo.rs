//! DynamoDB adapter of [`SaleStore`]: the sale item `SALE#<id>` / `SALE` of the commerce
//! table (key design in [`crate::seckill::keys`]), and the sale indexes: the live sales, a sparse gsi1
//! partition `SALES#LIVE` that only a published, not yet retired sale is in, and every sale
//! newest first, gsi2 `SALES`.
//!
//! Reconciliation, the failover and the home page's listing read the live sales with one
//! keyed query (its pages): what it costs grows with the live sales, never with the orders,
//! buyers and refunds beside them in the table.

use crate::config::{ConfigError, Env};
use crate::dynamo::{Item, Table, get_n, get_s, key, n, s, write_if};
use crate::fault::OrFault;
use crate::ids::{SaleId, UserId};
use crate::retry::Backoff;
use crate::seckill::keys::{
    ALL_SALES_PK, LIVE_SALES_PK, SALE_ORDER_SHARDS, SALE_SK, all_sales_sk, live_sale_sk, sale_pk,
    sale_reservations_pk,
};
use crate::seckill::sale::{Lifecycle, Sale, SaleStore, StoreError};
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::ReturnValue;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The commerce table's sales.
#[derive(Clone, Debug)]
pub struct DynamoSaleStore {
    pub(crate) table: Table,
}

impl DynamoSaleStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            table: Table::new(client, table),
        }
    }

    /// The store named by `COMMERCE_TABLE`.
    pub fn from_env(env: &Env, client: Client) -> Result<Self, ConfigError> {
        Table::from_env(env, client, "COMMERCE_TABLE").map(|table| Self { table })
    }
}

pub(crate) fn sale_item(sale: &Sale) -> Item {
    let mut item = key(sale_pk(&sale.id), SALE_SK);
    item.extend([
        ("gsi2pk".to_owned(), s(ALL_SALES_PK)),
        (
            "gsi2sk".to_owned(),
            s(all_sales_sk(&sale.created_at, &sale.id)),
        ),
        ("entity".to_owned(), s("SALE")),
        ("saleId".to_owned(), s(sale.id.as_str())),
        ("productId".to_owned(), s(&sale.product_id)),
        ("title".to_owned(), s(&sale.title)),
        ("priceCents".to_owned(), n(sale.price_cents)),
        ("initialStock".to_owned(), n(sale.initial_stock)),
        ("stockRemaining".to_owned(), n(sale.stock_remaining)),
        ("perUserLimit".to_owned(), n(sale.per_user_limit)),
        (
            "startsAt".to_owned(),
            s(crate::clock::format(sale.starts_at)),
        ),
        ("endsAt".to_owned(), s(crate::clock::format(sale.ends_at))),
        ("state".to_owned(), s(sale.state.as_str())),
        ("createdAt".to_owned(), s(&sale.created_at)),
    ]);
    if let Some(opens_at) = sale.reservation_opens_at {
        item.insert(
            "reservationOpensAt".to_owned(),
            s(crate::clock::format(opens_at)),
        );
    }
    item
}

pub(crate) fn sale_from_item(item: &Item) -> anyhow::Result<Sale> {
    let time = |name: &'static str| -> anyhow::Result<OffsetDateTime> {
        OffsetDateTime::parse(get_s(item, name)?, &Rfc3339)
            .with_context(|| format!("stored {name} is not RFC 3339"))
    };
    Ok(Sale {
        id: SaleId::parse(get_s(item, "saleId")?).context("stored saleId is not a UUID")?,
        product_id: get_s(item, "productId")?.to_owned(),
        title: get_s(item, "title")?.to_owned(),
        price_cents: get_n(item, "priceCents")?,
        initial_stock: get_n(item, "initialStock")?,
        stock_remaining: get_n(item, "stockRemaining")?,
        per_user_limit: get_n(item, "perUserLimit")?,
        starts_at: time("startsAt")?,
        ends_at: time("endsAt")?,
        state: Lifecycle::parse(get_s(item, "state")?).context("stored state is unknown")?,
        created_at: get_s(item, "createdAt")?.to_owned(),
        reservation_opens_at: match item.get("reservationOpensAt") {
            Some(_) => Some(time("reservationOpensAt")?),
            None => None,
        },
    })
}

#[async_trait]
impl SaleStore for DynamoSaleStore {
    #[tracing::instrument(level = "debug", skip_all, fields(sale = %sale.id))]
    async fn create(&self, sale: &Sale) -> Result<(), StoreError> {
        self.table
            .client
            .put_item()
            .table_name(&self.table.name)
            .set_item(Some(sale_item(sale)))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
            .or_fault("failed to create the sale")?;
        Ok(())
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn publish(&self, id: &SaleId, now: &str) -> Result<Option<Sale>, StoreError> {
        // Its start is the live index's sort key. Published or ended already: answered as it is.
        let starts_at = match self.get(id).await? {
            None => return Ok(None),
            Some(sale) if sale.state != Lifecycle::Draft => return Ok(Some(sale)),
            Some(sale) => crate::clock::format(sale.starts_at),
        };
        // The sale item is in every order-consumer transaction of the sale: publishing again
        // during the sale is refused while one is in flight, and retried.
        let update = self
            .table
            .update_item(key(sale_pk(id), SALE_SK))
            .update_expression(
                "SET #state = :published, publishedAt = :now, gsi1pk = :live, gsi1sk = :start",
            )
            .condition_expression("attribute_exists(pk) AND #state = :draft")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":published", s(Lifecycle::Published.as_str()))
            .expression_attribute_values(":draft", s(Lifecycle::Draft.as_str()))
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":live", s(LIVE_SALES_PK))
            .expression_attribute_values(":start", s(live_sale_sk(&starts_at, id)))
            .return_values(ReturnValue::AllNew);
        match write_if(&Backoff::default(), "failed to publish the sale", || {
            update.clone().send()
        })
        .await?
        {
            Some(output) => {
                let item = output
                    .attributes
                    .context("UpdateItem returned no attributes")?;
                Ok(Some(sale_from_item(&item)?))
            }
            // Unknown, or already published or ended: publishing is idempotent.
            None => match self.get(id).await? {
                Some(sale) if sale.state != Lifecycle::Draft => Ok(Some(sale)),
                Some(_) => Err(anyhow::anyhow!("the sale changed while being published").into()),
                None => Ok(None),
            },
        }
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn get(&self, id: &SaleId) -> Result<Option<Sale>, StoreError> {
        let key = key(sale_pk(id), SALE_SK);
        let item = self
            .table
            .get_consistent(key, None, "failed to read the sale");
        Ok(item.await?.as_ref().map(sale_from_item).transpose()?)
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn reserved(&self, id: &SaleId) -> Result<Vec<UserId>, StoreError> {
        let shards = (0..SALE_ORDER_SHARDS).map(|shard| self.reserved_in(id, shard));
        let mut users = Vec::new();
        for shard in futures_util::future::join_all(shards).await {
            users.extend(shard?);
        }
        Ok(users)
    }
}

impl DynamoSaleStore {
    /// The buyers of one of the sale's reservation partitions of gsi3, every page of it.
    async fn reserved_in(&self, id: &SaleId, shard: u8) -> Result<Vec<UserId>, StoreError> {
        let mut users = Vec::new();
        let mut start = None;
        loop {
            let output = self
                .table
                .client
                .query()
                .table_name(&self.table.name)
                .index_name(RESERVATIONS_INDEX)
                .key_condition_expression("gsi3pk = :pk")
                .expression_attribute_values(":pk", s(sale_reservations_pk(id, shard)))
                .projection_expression("gsi3sk")
                .set_exclusive_start_key(start)
                .send()
                .await
                .or_fault("failed to query the sale's reservations")?;
            for item in output.items() {
                let user = get_s(item, "gsi3sk").map_err(anyhow::Error::from)?;
                users.push(UserId::parse(user).context("stored reservation's user")?);
            }
            match output.last_evaluated_key() {
                Some(last) => start = Some(last.clone()),
                None => break,
            }
        }
        Ok(users)
    }
}

/// The index of a sale's reservations (and orders), spread over eight partitions each.
pub const RESERVATIONS_INDEX: &str = "gsi3";

// The sale indexes.

/// The index of the live sales (sparse) and of a user's orders.
pub const LIVE_INDEX: &str = "gsi1";

/// The index of every sale, newest first.
pub const ALL_SALES_INDEX: &str = "gsi2";

/// Every item of the live partition, and the items the queries read (`ScannedCount`, their
/// cost). Eventually consistent, as an index is: a sale published a moment ago may be missing
/// for that moment.
pub(crate) async fn live_items(table: &Table) -> anyhow::Result<(Vec<Item>, usize)> {
    let mut items = Vec::new();
    let mut read = 0usize;
    let mut start = None;
    loop {
        let output = table
            .client
            .query()
            .table_name(&table.name)
            .index_name(LIVE_INDEX)
            .key_condition_expression("gsi1pk = :live")
            .expression_attribute_values(":live", s(LIVE_SALES_PK))
            .set_exclusive_start_key(start)
            .send()
            .await
            .or_fault("failed to query the live sales")?;
        read += usize::try_from(output.scanned_count()).unwrap_or(0);
        items.extend(output.items().iter().cloned());
        match output.last_evaluated_key() {
            Some(last) => start = Some(last.clone()),
            None => break,
        }
    }
    Ok((items, read))
}

/// Takes sale `sale_id` off the live index and marks it ENDED at `now`; `false` when it was
/// not on it. Retried on conflicts: the sale item is in the order path's transactions.
pub(crate) async fn retire(table: &Table, sale_id: &SaleId, now: &str) -> anyhow::Result<bool> {
    let update = table
        .update_item(key(sale_pk(sale_id), SALE_SK))
        .update_expression("REMOVE gsi1pk, gsi1sk SET #state = :ended, retiredAt = :now")
        .condition_expression("attribute_exists(gsi1pk)")
        .expression_attribute_names("#state", "state")
        .expression_attribute_values(":ended", s(Lifecycle::Ended.as_str()))
        .expression_attribute_values(":now", s(now));
    Ok(
        write_if(&Backoff::default(), "failed to retire the sale", || {
            update.clone().send()
        })
        .await?
        .is_some(),
    )
}
