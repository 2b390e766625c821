//! The refunds of the commerce table: a payment's refund claimed once, the refund records
//! written with their order's entry in one transaction, listed while due and marked refunded
//! once. [`OrderStore`]'s refund methods call these.

use super::{DynamoOrderStore, stored_order_id};
use crate::cursor::{Cursor, PageLimit};
use crate::dynamo::{
    Item, TransactError, Transaction, get_n, get_s, key, n, put_if_absent, query_page_in, s,
    start_of, update_in, write_if,
};
use crate::fault::OrFault;
use crate::ids::OrderId;
use crate::retry::Backoff;
use crate::seckill::keys::{
    ORDER_SK, PAYMENT_REFUND_SK, REFUNDS_DUE_PK, REFUNDS_SETTLED_PK, order_pk, refund_pk, refund_sk,
};
use crate::seckill::order::OrderStoreError;
use crate::seckill::order::refund::{Currency, Refund};
use crate::seckill::order::refund::{Outstanding, RefundPage, RefundRecord, RefundState};
use anyhow::Context;
use aws_sdk_dynamodb::types::{AttributeValue, Select, Update};
use std::collections::HashMap;

/// A refund item.
fn refund_from_item(item: &Item) -> anyhow::Result<RefundRecord> {
    Ok(RefundRecord {
        payment_id: get_s(item, "paymentId")?.to_owned(),
        order_id: stored_order_id(item)?,
        user_id: get_s(item, "userId")?.to_owned(),
        amount_cents: get_n(item, "amountCents")?,
        currency: Currency::parse(get_s(item, "currency")?)?,
        reason: get_s(item, "reason")?.to_owned(),
        state: RefundState::parse(get_s(item, "state")?).context("stored refund state")?,
        recorded_at: get_s(item, "recordedAt")?.to_owned(),
        refunded_at: item.get("refundedAt").and_then(|v| v.as_s().ok()).cloned(),
        provider_refund_id: item
            .get("providerRefundId")
            .and_then(|v| v.as_s().ok())
            .cloned(),
    })
}

/// The index of the refunds due, oldest first (the refund items' `gsi1`).
pub(crate) const REFUNDS_INDEX: &str = "gsi1";

/// What a refund transaction's item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefundItem {
    Refund,
    Order,
}

/// The keyed query of the refunds still due, oldest first (the index sorts them by when
/// they were recorded): the list's pages and the reconciliation's count read it.
fn due_query(
    store: &DynamoOrderStore,
) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
    store
        .table
        .client
        .query()
        .table_name(&store.table.name)
        .index_name(REFUNDS_INDEX)
        .key_condition_expression("gsi1pk = :pk")
        .expression_attribute_values(":pk", s(REFUNDS_DUE_PK))
}

pub(super) async fn claim_payment_refund(
    store: &DynamoOrderStore,
    payment_id: &str,
    order_id: &OrderId,
) -> Result<Option<OrderId>, OrderStoreError> {
    let ledger = key(refund_pk(payment_id), PAYMENT_REFUND_SK);
    let update = store
        .table
        .update_item(ledger.clone())
        .update_expression("SET refundedFor = :order")
        .condition_expression("attribute_not_exists(refundedFor) OR refundedFor = :order")
        .expression_attribute_values(":order", s(order_id.as_str()));
    let what = "failed to claim a payment's refund";
    if write_if(&Backoff::default(), what, || update.clone().send())
        .await?
        .is_some()
    {
        return Ok(None);
    }
    let item = store
        .table
        .get_consistent(ledger, Some("refundedFor"), what)
        .await?
        .context("a payment's refund ledger vanished")?;
    let holder = get_s(&item, "refundedFor").map_err(anyhow::Error::from)?;
    Ok(Some(OrderId::parse(holder).map_err(|_| {
        anyhow::anyhow!("a payment's refund ledger names {holder:?}")
    })?))
}

pub(super) async fn record_refund(
    store: &DynamoOrderStore,
    refund: &Refund,
) -> Result<bool, OrderStoreError> {
    let mut item = key(refund_pk(&refund.payment_id), refund_sk(&refund.order_id));
    item.extend([
        ("paymentId".to_owned(), s(&refund.payment_id)),
        ("orderId".to_owned(), s(refund.order_id.as_str())),
        ("userId".to_owned(), s(&refund.user_id)),
        ("amountCents".to_owned(), n(refund.amount_cents)),
        ("currency".to_owned(), s(refund.currency.as_str())),
        ("reason".to_owned(), s(refund.reason.as_str())),
        ("state".to_owned(), s(RefundState::Due.as_str())),
        ("recordedAt".to_owned(), s(&refund.recorded_at)),
        ("gsi1pk".to_owned(), s(REFUNDS_DUE_PK)),
        (
            "gsi1sk".to_owned(),
            s(format!("{}#{}", refund.recorded_at, refund.payment_id)),
        ),
    ]);
    // The order shows its refunds: an entry appended in the same transaction.
    let entry = AttributeValue::M(HashMap::from([
        ("paymentId".to_owned(), s(&refund.payment_id)),
        ("amountCents".to_owned(), n(refund.amount_cents)),
        ("currency".to_owned(), s(refund.currency.as_str())),
        ("reason".to_owned(), s(refund.reason.as_str())),
        ("state".to_owned(), s(RefundState::Due.as_str())),
        ("recordedAt".to_owned(), s(&refund.recorded_at)),
    ]));
    let order = Update::builder()
        .set_key(Some(key(order_pk(&refund.order_id), ORDER_SK)))
        .update_expression("SET refunds = list_append(if_not_exists(refunds, :none), :one)")
        .condition_expression("attribute_exists(pk)")
        .expression_attribute_values(":none", AttributeValue::L(Vec::new()))
        .expression_attribute_values(":one", AttributeValue::L(vec![entry]));
    let transaction = Transaction::new()
        .push(
            RefundItem::Refund,
            put_if_absent(&store.table.name, item.clone()),
        )
        .push(RefundItem::Order, update_in(&store.table.name, order));
    match transaction.commit(&store.table.client).await {
        Ok(()) => return Ok(true),
        Err(TransactError::ConditionFailed {
            label: RefundItem::Refund,
            ..
        }) => return Ok(false),
        // No such order item (the notice's order is always read first, so only an order
        // deleted by hand): the refund is recorded all the same, never lost.
        Err(TransactError::ConditionFailed {
            label: RefundItem::Order,
            ..
        }) => {}
        Err(TransactError::Conflict) => {
            return Err(OrderStoreError::Busy(anyhow::anyhow!(
                "the refund's order stayed busy"
            )));
        }
        Err(err) => {
            return Err(anyhow::Error::from(err)
                .context("failed to record a refund")
                .into());
        }
    }
    let put = store
        .table
        .client
        .put_item()
        .table_name(&store.table.name)
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(pk)");
    Ok(
        write_if(&Backoff::default(), "failed to record a refund", || {
            put.clone().send()
        })
        .await?
        .is_some(),
    )
}

pub(super) async fn refunds_due(
    store: &DynamoOrderStore,
    limit: PageLimit,
    cursor: Option<&Cursor>,
) -> Result<RefundPage, OrderStoreError> {
    let fits = |cursor: &Cursor| {
        cursor.get("gsi1pk") == Some(REFUNDS_DUE_PK)
            && cursor.get("pk").is_some_and(|pk| pk.starts_with("REFUND#"))
            && cursor.get("sk").is_some_and(|sk| sk.starts_with("ORDER#"))
    };
    let start = start_of(cursor, &["pk", "sk", "gsi1pk", "gsi1sk"], fits)?;
    let query = due_query(store);
    let failed = "failed to query the refunds due";
    let (items, next) = query_page_in(query, true, limit, start, failed, refund_from_item).await?;
    Ok(RefundPage { items, next })
}

pub(super) async fn refunds_outstanding(
    store: &DynamoOrderStore,
) -> Result<Outstanding, OrderStoreError> {
    let due = || due_query(store);
    // Counted by DynamoDB, not fetched: a page of a count query holds no item.
    let mut count = 0u64;
    let mut start = None;
    loop {
        let output = due()
            .select(Select::Count)
            .set_exclusive_start_key(start)
            .send()
            .await
            .or_fault("failed to count the refunds due")?;
        count += u64::try_from(output.count()).unwrap_or(0);
        match output.last_evaluated_key() {
            Some(last) => start = Some(last.clone()),
            None => break,
        }
    }
    // The index sorts the due refunds by when they were recorded.
    let oldest = due()
        .limit(1)
        .projection_expression("recordedAt")
        .send()
        .await
        .or_fault("failed to read the oldest refund due")?;
    let oldest_recorded_at = oldest
        .items()
        .first()
        .and_then(|item| get_s(item, "recordedAt").ok())
        .map(str::to_owned);
    Ok(Outstanding {
        count,
        oldest_recorded_at,
    })
}

pub(super) async fn refund(
    store: &DynamoOrderStore,
    payment_id: &str,
    order_id: &OrderId,
) -> Result<Option<RefundRecord>, OrderStoreError> {
    let key = key(refund_pk(payment_id), refund_sk(order_id));
    let item = store
        .table
        .get_consistent(key, None, "failed to read a refund")
        .await?;
    Ok(item.as_ref().map(refund_from_item).transpose()?)
}

pub(super) async fn mark_refunded(
    store: &DynamoOrderStore,
    refund: &RefundRecord,
    provider_refund_id: &str,
    at: &str,
) -> Result<bool, OrderStoreError> {
    let refunded = s(RefundState::Refunded.as_str());
    // Out of the due list, into the settled refunds (same sort key: when it was recorded).
    let update = Update::builder()
        .set_key(Some(key(
            refund_pk(&refund.payment_id),
            refund_sk(&refund.order_id),
        )))
        .update_expression(
            "SET #state = :refunded, refundedAt = :at, providerRefundId = :provider, \
             gsi1pk = :settled",
        )
        .condition_expression("#state = :due")
        .expression_attribute_names("#state", "state")
        .expression_attribute_values(":refunded", refunded.clone())
        .expression_attribute_values(":at", s(at))
        .expression_attribute_values(":provider", s(provider_refund_id))
        .expression_attribute_values(":settled", s(REFUNDS_SETTLED_PK))
        .expression_attribute_values(":due", s(RefundState::Due.as_str()));
    let mut transaction =
        Transaction::new().push(RefundItem::Refund, update_in(&store.table.name, update));
    // The refund's entry on its order, found by its payment (entries are only appended,
    // so its index stays); an order recorded before orders listed their refunds has none.
    let order = store
        .table
        .get_consistent(
            key(order_pk(&refund.order_id), ORDER_SK),
            Some("refunds"),
            "failed to read the refund's order",
        )
        .await?;
    let index = order
        .as_ref()
        .and_then(|item| item.get("refunds"))
        .and_then(|list| list.as_l().ok())
        .and_then(|list| {
            list.iter().position(|entry| {
                entry
                    .as_m()
                    .ok()
                    .and_then(|m| m.get("paymentId"))
                    .and_then(|p| p.as_s().ok())
                    == Some(&refund.payment_id)
            })
        });
    if let Some(i) = index {
        let update = Update::builder()
            .set_key(Some(key(order_pk(&refund.order_id), ORDER_SK)))
            .update_expression(format!(
                "SET refunds[{i}].#state = :refunded, refunds[{i}].refundedAt = :at"
            ))
            .condition_expression(format!("refunds[{i}].paymentId = :payment"))
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":refunded", refunded)
            .expression_attribute_values(":at", s(at))
            .expression_attribute_values(":payment", s(&refund.payment_id));
        transaction = transaction.push(RefundItem::Order, update_in(&store.table.name, update));
    }
    match transaction.commit(&store.table.client).await {
        Ok(()) => Ok(true),
        Err(TransactError::ConditionFailed {
            label: RefundItem::Refund,
            ..
        }) => Ok(false),
        Err(TransactError::Conflict) => Err(OrderStoreError::Busy(anyhow::anyhow!(
            "the refund or its order stayed busy"
        ))),
        Err(err) => Err(anyhow::Error::from(err)
            .context("failed to mark a refund refunded")
            .into()),
    }
}
