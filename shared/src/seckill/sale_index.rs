//! DynamoDB reads and writes of the commerce table's sale indexes (key design in
//! [`super::keys`]): the live sales, a sparse gsi1 partition `SALES#LIVE` that only a published,
//! not yet retired sale is in, and every sale newest first, gsi2 `SALES`.
//!
//! Reconciliation, the failover and the home page's listing read the live sales with one
//! keyed query (its pages): what it costs grows with the live sales, never with the orders,
//! buyers and refunds beside them in the table.

use super::keys::{LIVE_SALES_PK, SALE_SK, sale_pk};
use super::sale::Lifecycle;
use crate::dynamo::{Item, Table, key, s, write_retrying};
use crate::retry::Backoff;
use anyhow::Context;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;

/// The index of the live sales (sparse) and of a user's orders.
pub const LIVE_INDEX: &str = "gsi1";

/// The index of every sale, newest first.
pub const ALL_SALES_INDEX: &str = "gsi2";

/// Every item of the live partition, and the items the queries read (`ScannedCount`, their
/// cost). Eventually consistent, as an index is: a sale published a moment ago may be missing
/// for that moment.
pub(super) async fn live_items(table: &Table) -> anyhow::Result<(Vec<Item>, usize)> {
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
            .context("failed to query the live sales")?;
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
pub(super) async fn retire(table: &Table, sale_id: &str, now: &str) -> anyhow::Result<bool> {
    let update = table
        .update_item(key(sale_pk(sale_id), SALE_SK))
        .update_expression("REMOVE gsi1pk, gsi1sk SET #state = :ended, retiredAt = :now")
        .condition_expression("attribute_exists(gsi1pk)")
        .expression_attribute_names("#state", "state")
        .expression_attribute_values(":ended", s(Lifecycle::Ended.as_str()))
        .expression_attribute_values(":now", s(now));
    let result = write_retrying(&Backoff::default(), "UpdateItem sale retired", || {
        update.clone().send()
    })
    .await;
    match result {
        Ok(_) => Ok(true),
        Err(err)
            if matches!(
                err.as_service_error(),
                Some(UpdateItemError::ConditionalCheckFailedException(_))
            ) =>
        {
            Ok(false)
        }
        Err(err) => Err(anyhow::Error::new(err).context("failed to retire the sale")),
    }
}
