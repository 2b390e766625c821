//! DynamoDB adapter helpers: transactions whose cancellation says which item failed, and
//! attribute conversions.
//!
//! A cancelled `TransactWriteItems` reports one reason per item, in request order. Callers
//! label each item with a value of their own type (usually a small enum), so that a failed
//! condition comes back as that label: "the edge already exists", not "item 1 failed".

use crate::cursor::Cursor;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::builders::UpdateBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;

/// DynamoDB refuses transactions of more items than this.
pub const MAX_TRANSACTION_ITEMS: usize = 100;

/// Why a transaction did not commit.
#[derive(Debug, thiserror::Error)]
pub enum TransactError<L: Debug> {
    /// The condition of the item labelled `label` did not hold; nothing was written.
    #[error("the condition on {label:?} failed")]
    ConditionFailed { label: L },
    /// Another transaction was writing the same items; retrying may succeed.
    #[error("the transaction conflicted with a concurrent one")]
    Conflict,
    #[error("the transaction has {0} items, more than DynamoDB allows")]
    TooManyItems(usize),
    #[error("DynamoDB TransactWriteItems failed")]
    Sdk(#[source] Box<aws_sdk_dynamodb::Error>),
}

/// A `TransactWriteItems` request under construction, each item with its label.
#[derive(Debug)]
pub struct Transaction<L> {
    items: Vec<TransactWriteItem>,
    labels: Vec<L>,
}

impl<L> Default for Transaction<L> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            labels: Vec::new(),
        }
    }
}

impl<L: Clone + Debug> Transaction<L> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(mut self, label: L, item: TransactWriteItem) -> Self {
        self.items.push(item);
        self.labels.push(label);
        self
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Commits all items or none.
    #[tracing::instrument(skip_all, fields(items = self.items.len()))]
    pub async fn commit(self, client: &Client) -> Result<(), TransactError<L>> {
        if self.items.len() > MAX_TRANSACTION_ITEMS {
            return Err(TransactError::TooManyItems(self.items.len()));
        }
        match client
            .transact_write_items()
            .set_transact_items(Some(self.items))
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(err) => Err(classify(err, &self.labels)),
        }
    }
}

fn classify<L: Clone + Debug>(
    err: SdkError<TransactWriteItemsError>,
    labels: &[L],
) -> TransactError<L> {
    if let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
        err.as_service_error()
    {
        let codes: Vec<Option<&str>> = cancelled
            .cancellation_reasons()
            .iter()
            .map(|reason| reason.code())
            .collect();
        if let Some(index) = codes
            .iter()
            .position(|code| *code == Some("ConditionalCheckFailed"))
            && let Some(label) = labels.get(index)
        {
            return TransactError::ConditionFailed {
                label: label.clone(),
            };
        }
        if codes.contains(&Some("TransactionConflict")) {
            return TransactError::Conflict;
        }
    }
    TransactError::Sdk(Box::new(err.into()))
}

/// A string attribute.
pub fn s(value: impl Into<String>) -> AttributeValue {
    AttributeValue::S(value.into())
}

/// A number attribute.
pub fn n(value: impl ToString) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

/// An item's primary key in the `pk`/`sk` layout that every table here uses.
pub fn key(pk: impl Into<String>, sk: impl Into<String>) -> HashMap<String, AttributeValue> {
    HashMap::from([("pk".to_owned(), s(pk)), ("sk".to_owned(), s(sk))])
}

/// Why an item read from DynamoDB does not have the shape we wrote.
#[derive(Debug, thiserror::Error)]
#[error("item attribute {name} is missing or not a {expected}")]
pub struct BadItem {
    pub name: &'static str,
    pub expected: &'static str,
}

/// A string attribute of an item.
pub fn get_s<'a>(
    item: &'a HashMap<String, AttributeValue>,
    name: &'static str,
) -> Result<&'a str, BadItem> {
    item.get(name)
        .and_then(|value| value.as_s().ok())
        .map(String::as_str)
        .ok_or(BadItem {
            name,
            expected: "string",
        })
}

/// A number attribute of an item, parsed.
pub fn get_n<T: std::str::FromStr>(
    item: &HashMap<String, AttributeValue>,
    name: &'static str,
) -> Result<T, BadItem> {
    item.get(name)
        .and_then(|value| value.as_n().ok())
        .and_then(|raw| raw.parse().ok())
        .ok_or(BadItem {
            name,
            expected: "number",
        })
}

/// The cursor of the next page: a query's `LastEvaluatedKey`, whose attributes are all
/// strings in the `pk`/`sk`/`gsi*` key layout of every table here.
pub fn cursor_of(last: &HashMap<String, AttributeValue>) -> anyhow::Result<Cursor> {
    let attributes = last
        .iter()
        .map(|(name, value)| match value {
            AttributeValue::S(text) => Ok((name.clone(), text.clone())),
            _ => Err(anyhow::anyhow!(
                "LastEvaluatedKey attribute {name} is not a string"
            )),
        })
        .collect::<anyhow::Result<BTreeMap<_, _>>>()?;
    Ok(Cursor::new(attributes))
}

/// A transaction item that creates `item` in `table` only if no item has its key.
pub fn put_if_absent(table: &str, item: HashMap<String, AttributeValue>) -> TransactWriteItem {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression("attribute_not_exists(pk)")
        .build()
        .expect("table and item are set");
    TransactWriteItem::builder().put(put).build()
}

/// A transaction item of an update (key and expression already set) on `table`.
pub fn update_in(table: &str, update: UpdateBuilder) -> TransactWriteItem {
    let update = update
        .table_name(table)
        .build()
        .expect("table, key and expression are set");
    TransactWriteItem::builder().update(update).build()
}
