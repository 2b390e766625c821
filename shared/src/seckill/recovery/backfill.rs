//! Index keys for commerce items written before their index existed: sales without the
//! all-sales keys (gsi2) or, published and not retired, without the live keys (gsi1), and
//! orders without the per-sale keys (gsi3). Such items are invisible to the back office's
//! list, the home page's listing, reconciliation and a sale's figures until they get them.
//!
//! An operator runs it once after deploying a version that added an index
//! (`local-cloud backfill-indexes`, docs/operations.md). It is the one Scan of the table,
//! on purpose: a one-off that reads every item once, a page at a time, filtered to the items
//! that lack a key. Each key is added by a conditional write that holds only while the key is
//! still missing, so a run repeated, resumed from a page's cursor, or racing the functions
//! (which write the keys themselves) changes nothing twice and never overwrites a key.

use crate::cursor::Cursor;
use crate::dynamo::{Item, Table, cursor_of, get_s, key, s, start_key, write_if};
use crate::fault::OrFault;
use crate::ids::{OrderId, SaleId};
use crate::retry::Backoff;
use crate::seckill::keys::{
    ALL_SALES_PK, LIVE_SALES_PK, ORDER_SK, SALE_SK, all_sales_sk, live_sale_sk, order_pk,
    order_shard, sale_orders_pk, sale_orders_sk,
};
use crate::seckill::sale::Lifecycle;
use anyhow::Context;

/// What one page of the backfill did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageReport {
    /// Items the Scan read (its cost), and those among them that lacked a key.
    pub scanned: u64,
    pub lacking: u64,
    /// Keys added by this page; a key found already there (written meanwhile) is not counted.
    pub sales_listed: u64,
    pub sales_made_live: u64,
    pub orders_indexed: u64,
    /// Where the next page starts; `None` when the table was read to its end.
    pub next: Option<Cursor>,
}

/// Adds the missing index keys of one page of the table, starting at `start` (a previous
/// page's `next`), reading at most `page_size` items.
pub async fn backfill_page(
    table: &Table,
    start: Option<&Cursor>,
    page_size: i32,
) -> anyhow::Result<PageReport> {
    let output = table
        .client
        .scan()
        .table_name(&table.name)
        .filter_expression(
            "(sk = :sale AND (attribute_not_exists(gsi2pk) OR (#state = :published AND \
             attribute_not_exists(gsi1pk) AND attribute_not_exists(retiredAt)))) \
             OR (sk = :order AND attribute_not_exists(gsi3pk))",
        )
        .expression_attribute_names("#state", "state")
        .expression_attribute_values(":sale", s(SALE_SK))
        .expression_attribute_values(":order", s(ORDER_SK))
        .expression_attribute_values(":published", s(Lifecycle::Published.as_str()))
        .limit(page_size)
        .set_exclusive_start_key(start.map(start_key))
        .consistent_read(true)
        .send()
        .await
        .or_fault("failed to scan the commerce table")?;
    let mut report = PageReport {
        scanned: u64::try_from(output.scanned_count()).unwrap_or(0),
        lacking: u64::try_from(output.count()).unwrap_or(0),
        next: output.last_evaluated_key().map(cursor_of).transpose()?,
        ..PageReport::default()
    };
    for item in output.items() {
        match get_s(item, "sk").map_err(anyhow::Error::from)? {
            SALE_SK => {
                let (listed, live) = backfill_sale(table, item).await?;
                report.sales_listed += u64::from(listed);
                report.sales_made_live += u64::from(live);
            }
            ORDER_SK => report.orders_indexed += u64::from(backfill_order(table, item).await?),
            _ => {}
        }
    }
    Ok(report)
}

/// The sale's missing keys: gsi2 always, gsi1 while it is published and not retired.
async fn backfill_sale(table: &Table, item: &Item) -> anyhow::Result<(bool, bool)> {
    let sale_id = stored_sale_id(item)?;
    let sale_id = &sale_id;
    let created_at = get_s(item, "createdAt")?;
    let listed = add_if_missing(
        table,
        key(crate::seckill::keys::sale_pk(sale_id), SALE_SK),
        "gsi2pk",
        s(ALL_SALES_PK),
        s(all_sales_sk(created_at, sale_id)),
        None,
    )
    .await
    .with_context(|| format!("failed to list sale {sale_id}"))?;
    let live = get_s(item, "state").ok() == Some(Lifecycle::Published.as_str())
        && !item.contains_key("retiredAt");
    let made_live = if live {
        let starts_at = get_s(item, "startsAt")?;
        add_if_missing(
            table,
            key(crate::seckill::keys::sale_pk(sale_id), SALE_SK),
            "gsi1pk",
            s(LIVE_SALES_PK),
            s(live_sale_sk(starts_at, sale_id)),
            Some(Lifecycle::Published),
        )
        .await
        .with_context(|| format!("failed to make sale {sale_id} live"))?
    } else {
        false
    };
    Ok((listed, made_live))
}

/// The item's `saleId`, which must be a [`SaleId`].
fn stored_sale_id(item: &Item) -> anyhow::Result<SaleId> {
    let raw = get_s(item, "saleId")?;
    SaleId::parse(raw).with_context(|| format!("stored saleId {raw:?} is not a UUID"))
}

/// The order's missing per-sale keys (gsi3).
async fn backfill_order(table: &Table, item: &Item) -> anyhow::Result<bool> {
    let raw = get_s(item, "orderId")?;
    let order_id = &OrderId::parse(raw)
        .with_context(|| format!("stored orderId {raw:?} is not an order id"))?;
    let sale_id = &stored_sale_id(item)?;
    let created_at = get_s(item, "createdAt")?;
    add_if_missing(
        table,
        key(order_pk(order_id), ORDER_SK),
        "gsi3pk",
        s(sale_orders_pk(sale_id, order_shard(order_id))),
        s(sale_orders_sk(created_at, order_id)),
        None,
    )
    .await
    .with_context(|| format!("failed to index order {order_id}"))
}

/// `SET <pk_name> = pk, <sk name> = sk` only while the item exists without `pk_name` (and is
/// in `state`, if given): `false` when the condition did not hold, which is not an error.
async fn add_if_missing(
    table: &Table,
    item_key: Item,
    pk_name: &'static str,
    pk: aws_sdk_dynamodb::types::AttributeValue,
    sk: aws_sdk_dynamodb::types::AttributeValue,
    state: Option<Lifecycle>,
) -> anyhow::Result<bool> {
    let sk_name = pk_name.replace("pk", "sk");
    let mut condition = format!("attribute_exists(pk) AND attribute_not_exists({pk_name})");
    let mut update = table
        .update_item(item_key)
        .update_expression(format!("SET {pk_name} = :pk, {sk_name} = :sk"))
        .expression_attribute_values(":pk", pk)
        .expression_attribute_values(":sk", sk);
    if let Some(state) = state {
        condition.push_str(" AND #state = :state AND attribute_not_exists(retiredAt)");
        update = update
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":state", s(state.as_str()));
    }
    let update = update.condition_expression(condition);
    // A sale's item is in its orders' transactions: a conflict is retried.
    Ok(write_if(&Backoff::default(), "UpdateItem index keys", || {
        update.clone().send()
    })
    .await?
    .is_some())
}
