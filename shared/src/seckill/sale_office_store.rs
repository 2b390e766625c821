//! DynamoDB adapter of [`SaleOffice`] on the commerce table's sale items: the back office's
//! list (gsi2, every sale newest first), the live sales (gsi1, sparse), a draft replaced and a
//! sale ended, each a conditional write (key design in [`super::keys`]).

use super::back_office::{Ending, OfficeError, SaleOffice, SalePage};
use super::keys::{ALL_SALES_PK, SALE_SK, sale_pk};
use super::sale::{Lifecycle, Sale, SaleStore, StoreError};
use super::sale_index::{ALL_SALES_INDEX, live_items};
use super::sale_store::{DynamoSaleStore, sale_from_item, sale_item};
use crate::cursor::{Cursor, PageLimit};
use crate::dynamo::{key, query_page, s, start_of, write_retrying};
use crate::ids::SaleId;
use crate::retry::Backoff;
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
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
        let result = self
            .table
            .client
            .put_item()
            .table_name(&self.table.name)
            .set_item(Some(sale_item(sale)))
            .condition_expression("#state = :draft")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":draft", s(Lifecycle::Draft.as_str()))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(err)
                if matches!(
                    err.as_service_error(),
                    Some(PutItemError::ConditionalCheckFailedException(_))
                ) =>
            {
                Ok(false)
            }
            Err(err) => Err(anyhow::Error::new(err)
                .context("failed to replace the draft")
                .into()),
        }
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn end(&self, id: &SaleId, now: OffsetDateTime) -> Result<Ending, StoreError> {
        let now = crate::clock::format(now);
        // `endsAt` is in the tables' one format, so its text orders as its time.
        let update = self
            .table
            .update_item(key(sale_pk(id.as_str()), SALE_SK))
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
        let result = write_retrying(&Backoff::default(), "UpdateItem sale ended", || {
            update.clone().send()
        })
        .await;
        match result {
            Ok(output) => {
                let item = output
                    .attributes
                    .context("UpdateItem returned no attributes")?;
                Ok(Ending::Ended(sale_from_item(&item)?))
            }
            Err(err)
                if matches!(
                    err.as_service_error(),
                    Some(UpdateItemError::ConditionalCheckFailedException(_))
                ) =>
            {
                Ok(match SaleStore::get(self, id).await? {
                    None => Ending::Unknown,
                    Some(sale) => match sale.state {
                        Lifecycle::Draft => Ending::Draft,
                        Lifecycle::Ended => Ending::AlreadyEnded(sale),
                        Lifecycle::Published => Ending::Over(sale),
                    },
                })
            }
            Err(err) => Err(anyhow::Error::new(err)
                .context("failed to end the sale")
                .into()),
        }
    }

    async fn get(&self, id: &SaleId) -> Result<Option<Sale>, StoreError> {
        SaleStore::get(self, id).await
    }
}
