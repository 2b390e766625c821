//! DynamoDB adapter of [`SaleStore`]: the sale item `SALE#<id>` / `SALE` of the commerce
//! table (key design in [`super::keys`]).

use super::keys::{ALL_SALES_PK, LIVE_SALES_PK, SALE_SK, all_sales_sk, live_sale_sk, sale_pk};
use super::sale::{Lifecycle, Sale, SaleStore, StoreError};
use crate::config::{ConfigError, Env};
use crate::dynamo::{Item, Table, get_n, get_s, key, n, s, write_retrying};
use crate::ids::SaleId;
use crate::retry::Backoff;
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::ReturnValue;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The commerce table's sales.
#[derive(Clone, Debug)]
pub struct DynamoSaleStore {
    pub(super) table: Table,
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

pub(super) fn sale_item(sale: &Sale) -> Item {
    let mut item = key(sale_pk(sale.id.as_str()), SALE_SK);
    item.extend([
        ("gsi2pk".to_owned(), s(ALL_SALES_PK)),
        (
            "gsi2sk".to_owned(),
            s(all_sales_sk(&sale.created_at, sale.id.as_str())),
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
    item
}

pub(super) fn sale_from_item(item: &Item) -> anyhow::Result<Sale> {
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
            .context("failed to create the sale")?;
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
            .update_item(key(sale_pk(id.as_str()), SALE_SK))
            .update_expression(
                "SET #state = :published, publishedAt = :now, gsi1pk = :live, gsi1sk = :start",
            )
            .condition_expression("attribute_exists(pk) AND #state = :draft")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":published", s(Lifecycle::Published.as_str()))
            .expression_attribute_values(":draft", s(Lifecycle::Draft.as_str()))
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":live", s(LIVE_SALES_PK))
            .expression_attribute_values(":start", s(live_sale_sk(&starts_at, id.as_str())))
            .return_values(ReturnValue::AllNew);
        let result = write_retrying(&Backoff::default(), "UpdateItem sale published", || {
            update.clone().send()
        })
        .await;
        match result {
            Ok(output) => {
                let item = output
                    .attributes
                    .context("UpdateItem returned no attributes")?;
                Ok(Some(sale_from_item(&item)?))
            }
            Err(err)
                if matches!(
                    err.as_service_error(),
                    Some(UpdateItemError::ConditionalCheckFailedException(_))
                ) =>
            {
                // Unknown, or already published or ended: publishing is idempotent.
                match self.get(id).await? {
                    Some(sale) if sale.state != Lifecycle::Draft => Ok(Some(sale)),
                    Some(_) => {
                        Err(anyhow::anyhow!("the sale changed while being published").into())
                    }
                    None => Ok(None),
                }
            }
            Err(err) => Err(anyhow::Error::new(err)
                .context("failed to publish the sale")
                .into()),
        }
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn get(&self, id: &SaleId) -> Result<Option<Sale>, StoreError> {
        let key = key(sale_pk(id.as_str()), SALE_SK);
        let item = self
            .table
            .get_consistent(key, None, "failed to read the sale");
        Ok(item.await?.as_ref().map(sale_from_item).transpose()?)
    }
}
