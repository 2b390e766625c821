//! DynamoDB adapter helpers: transactions whose cancellation says which item failed and that
//! retry conflicts, the commit of units ([`UnitItem`]), key-addressed reads and writes, the
//! paged query of every list ([`query_page`]), and attribute conversions.
//!
//! A cancelled `TransactWriteItems` reports one reason per item, in request order. Callers
//! label each item with a value of their own type (usually a small enum), so that a failed
//! condition comes back as that label: "the edge already exists", not "item 1 failed".
//!
//! A transaction cancelled because another one held one of its items (`TransactionConflict`)
//! or because the partition was throttled wrote nothing, so it is sent again as it was, with
//! the backoff of [`crate::retry`]; so is a single-item write refused with
//! `TransactionConflictException` ([`transient`]).

use crate::cursor::{Cursor, InvalidCursor, PageLimit};
use crate::fault::OrFault;
use crate::fault::transient_code;
use crate::once::{Rejected, Unit, UnitLabel, unit_indices};
use crate::retry::{Attempt, Backoff, retrying};
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::builders::UpdateBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;

/// A table and the client that reaches it: what every DynamoDB adapter holds.
#[derive(Clone, Debug)]
pub struct Table {
    pub client: Client,
    pub name: String,
}

impl Table {
    pub fn new(client: Client, name: impl Into<String>) -> Self {
        Self {
            client,
            name: name.into(),
        }
    }

    /// The table whose name is in the variable `var` (`SOCIAL_TABLE`, `COMMERCE_TABLE`).
    pub fn from_env(
        env: &crate::config::Env,
        client: Client,
        var: &str,
    ) -> Result<Self, crate::config::ConfigError> {
        Ok(Self::new(client, env.required(var)?))
    }

    /// A `GetItem` of the item at `key`, for the caller to add what it reads.
    pub fn get_item(&self, key: Item) -> GetItemFluentBuilder {
        self.client
            .get_item()
            .table_name(&self.name)
            .set_key(Some(key))
    }

    /// An `UpdateItem` of the item at `key`, for the caller to add its expressions.
    pub fn update_item(&self, key: Item) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.name)
            .set_key(Some(key))
    }

    /// Reads the item at `key`, strongly consistent, only the attributes of `projection` (all
    /// of them when `None`); `failed` says what failed when the read does.
    pub async fn get_consistent(
        &self,
        key: Item,
        projection: Option<&str>,
        failed: &'static str,
    ) -> anyhow::Result<Option<Item>> {
        let output = self
            .get_item(key)
            .set_projection_expression(projection.map(str::to_owned))
            .consistent_read(true)
            .send()
            .await
            .or_fault(failed)?;
        Ok(output.item)
    }
}

/// DynamoDB refuses transactions of more items than this.
pub const MAX_TRANSACTION_ITEMS: usize = 100;

/// An item's attributes, or a key's.
pub type Item = HashMap<String, AttributeValue>;

/// Why a transaction did not commit.
#[derive(Debug, thiserror::Error)]
pub enum TransactError<L: Debug> {
    /// The condition of the item labelled `label` did not hold, the first of those in
    /// `all` (every item whose condition failed, in request order); nothing was written.
    #[error("the condition on {label:?} failed")]
    ConditionFailed { label: L, all: Vec<L> },
    /// Other transactions kept holding its items (or the partition kept being throttled)
    /// through every retry; nothing was written, and trying again later may succeed.
    #[error("the transaction kept conflicting with concurrent ones or being throttled")]
    Conflict,
    #[error("the transaction has {0} items, more than DynamoDB allows")]
    TooManyItems(usize),
    #[error("DynamoDB TransactWriteItems failed")]
    Sdk(#[source] Box<aws_sdk_dynamodb::Error>),
    /// Timed out, not sent, or a fault of the service's: it may or may not have been
    /// applied, and sending it again may succeed.
    #[error("DynamoDB TransactWriteItems failed for a moment")]
    Unavailable(#[source] crate::fault::Transient),
}

/// A `TransactWriteItems` request under construction, each item with its label.
#[derive(Debug)]
pub struct Transaction<L> {
    items: Vec<TransactWriteItem>,
    labels: Vec<L>,
    backoff: Backoff,
}

impl<L> Default for Transaction<L> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            labels: Vec::new(),
            backoff: Backoff::default(),
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

    /// Retries conflicts and throttling with `backoff` instead of the default.
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Commits all items or none, sending the transaction again while it is cancelled for a
    /// conflict or throttling (see the module's documentation).
    #[tracing::instrument(level = "debug", skip_all, fields(items = self.items.len()))]
    pub async fn commit(self, client: &Client) -> Result<(), TransactError<L>> {
        if self.items.len() > MAX_TRANSACTION_ITEMS {
            return Err(TransactError::TooManyItems(self.items.len()));
        }
        let request = client
            .transact_write_items()
            .set_transact_items(Some(self.items));
        let labels = &self.labels;
        retrying(&self.backoff, "TransactWriteItems", || {
            let request = request.clone();
            async move {
                match request.send().await {
                    Ok(_) => Attempt::Done(Ok(())),
                    Err(err) => match classify(err, labels) {
                        Classified::Transient(reason) => Attempt::Transient {
                            reason,
                            error: TransactError::Conflict,
                        },
                        Classified::Final(err) => Attempt::Done(Err(err)),
                    },
                }
            }
        })
        .await?
    }
}

/// What an item of a transaction that commits units ([`crate::once`]) is, so that a failed
/// condition says what it means for the commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitItem {
    /// The marker of the unit at this index in the commit: it failed, so the unit was
    /// already applied.
    Unit(usize),
    /// The aggregate: its condition refuses the whole commit.
    Aggregate,
    /// An item that guards the aggregate (by its index in the adapter's own list, such as a
    /// buyer's units): it refuses the whole commit as the aggregate does.
    Guard(usize),
    /// Any other item: its condition failing is an error.
    Other,
}

impl UnitLabel for UnitItem {
    fn unit(&self) -> Option<usize> {
        match self {
            UnitItem::Unit(index) => Some(*index),
            _ => None,
        }
    }
}

/// A cancelled commit of units as [`crate::once`] answers it: the units already applied, or
/// the aggregate's refusal, or a failure.
pub fn rejected(err: TransactError<UnitItem>) -> Rejected {
    match err {
        TransactError::ConditionFailed {
            label: UnitItem::Unit(_),
            all,
        } => Rejected::AlreadyApplied(unit_indices(&all)),
        TransactError::ConditionFailed {
            label: UnitItem::Aggregate | UnitItem::Guard(_),
            ..
        } => Rejected::Aggregate,
        other => Rejected::Failed(other.into()),
    }
}

impl Transaction<UnitItem> {
    /// A transaction of one item per unit, `item(unit)`, each labelled with its index.
    pub fn of_units<P>(units: &[Unit<P>], item: impl FnMut(&Unit<P>) -> TransactWriteItem) -> Self {
        units
            .iter()
            .map(item)
            .enumerate()
            .fold(Self::new(), |transaction, (index, item)| {
                transaction.push(UnitItem::Unit(index), item)
            })
    }

    /// Commits, answering a cancellation as [`rejected`] does.
    pub async fn commit_units(self, client: &Client) -> Result<(), Rejected> {
        self.commit(client).await.map_err(rejected)
    }
}

enum Classified<L: Debug> {
    /// Cancelled or refused for a moment: nothing was written, the same request may pass.
    Transient(&'static str),
    Final(TransactError<L>),
}

fn classify<L: Clone + Debug>(
    err: SdkError<TransactWriteItemsError>,
    labels: &[L],
) -> Classified<L> {
    if let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
        err.as_service_error()
    {
        let codes: Vec<Option<&str>> = cancelled
            .cancellation_reasons()
            .iter()
            .map(|reason| reason.code())
            .collect();
        if let Some(classified) = cancellation(&codes, labels) {
            return classified;
        }
    }
    if let Some(reason) = transient(&err) {
        return Classified::Transient(reason);
    }
    if crate::fault::passes(&err) {
        let transient = crate::fault::Transient::new("TransactWriteItems", err);
        return Classified::Final(TransactError::Unavailable(transient));
    }
    Classified::Final(TransactError::Sdk(Box::new(err.into())))
}

/// What a cancellation's reasons (one per item, in request order) call for, if they say.
fn cancellation<L: Clone + Debug>(codes: &[Option<&str>], labels: &[L]) -> Option<Classified<L>> {
    // A failed condition is an answer, whatever else held the other items. DynamoDB names
    // every item whose condition failed, so a caller can drop them all at once.
    let all: Vec<L> = codes
        .iter()
        .zip(labels)
        .filter(|(code, _)| **code == Some("ConditionalCheckFailed"))
        .map(|(_, label)| label.clone())
        .collect();
    if let Some(label) = all.first() {
        return Some(Classified::Final(TransactError::ConditionFailed {
            label: label.clone(),
            all,
        }));
    }
    // Retried only when every reason given passes by itself: an item refused for good (a
    // validation error, a collection over its size) is refused again on every attempt.
    let reasons: Vec<&str> = codes
        .iter()
        .flatten()
        .filter(|code| **code != "None")
        .copied()
        .collect();
    if reasons.iter().any(|code| transient_code(code).is_none()) {
        return None;
    }
    reasons
        .first()
        .and_then(|code| transient_code(code))
        .map(Classified::Transient)
}

/// The reason to retry a DynamoDB error that goes away by itself (a single-item write on an
/// item that a transaction holds, throttling), or `None` for any other error.
pub fn transient(err: &impl ProvideErrorMetadata) -> Option<&'static str> {
    err.code().and_then(transient_code)
}

/// Sends a single-item write with `send` until it is not refused for a moment
/// ([`transient`]) or `backoff` runs out; answers its last result.
pub async fn write_retrying<T, E, F, Fut>(
    backoff: &Backoff,
    what: &str,
    mut send: F,
) -> Result<T, SdkError<E>>
where
    E: ProvideErrorMetadata,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, SdkError<E>>>,
{
    retrying(backoff, what, || {
        let sent = send();
        async move {
            match sent.await {
                Err(err) => match transient(&err) {
                    Some(reason) => Attempt::Transient { reason, error: err },
                    None => Attempt::Done(Err(err)),
                },
                ok => Attempt::Done(ok),
            }
        }
    })
    .await?
}

/// The error of a single-item write that may carry a condition.
pub trait ConditionalError {
    /// Whether the write was refused because its condition failed.
    fn condition_failed(&self) -> bool;
}

impl ConditionalError for UpdateItemError {
    fn condition_failed(&self) -> bool {
        matches!(self, Self::ConditionalCheckFailedException(_))
    }
}

impl ConditionalError for PutItemError {
    fn condition_failed(&self) -> bool {
        matches!(self, Self::ConditionalCheckFailedException(_))
    }
}

impl ConditionalError for DeleteItemError {
    fn condition_failed(&self) -> bool {
        matches!(self, Self::ConditionalCheckFailedException(_))
    }
}

/// Sends a conditional single-item write with `send` ([`write_retrying`], so a conflict with a
/// transaction or throttling is tried again): `Some(output)` when it was written, `None` when
/// its condition failed. Any other failure is the error of `what`, a
/// [`crate::fault::Transient`] when sending it again later may succeed.
pub async fn write_if<T, E, F, Fut>(
    backoff: &Backoff,
    what: &'static str,
    send: F,
) -> anyhow::Result<Option<T>>
where
    E: ConditionalError + ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, SdkError<E>>>,
{
    match write_retrying(backoff, what, send).await {
        Ok(output) => Ok(Some(output)),
        Err(err) if err.as_service_error().is_some_and(E::condition_failed) => Ok(None),
        Err(err) => Err(crate::fault::failure(err, what)),
    }
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

/// The `ExclusiveStartKey` of a cursor that [`Cursor::check`] found to fit the list: the
/// inverse of [`cursor_of`].
pub fn start_key(cursor: &Cursor) -> HashMap<String, AttributeValue> {
    cursor
        .attributes()
        .iter()
        .map(|(name, value)| (name.clone(), s(value)))
        .collect()
}

/// The `ExclusiveStartKey` of the page a client's `cursor` asks for, if the cursor
/// [`Cursor::check`]s for the list: exactly the key attributes `names`, and `fits` holds.
pub fn start_of(
    cursor: Option<&Cursor>,
    names: &[&str],
    fits: impl FnOnce(&Cursor) -> bool,
) -> Result<Option<Item>, InvalidCursor> {
    cursor
        .map(|cursor| cursor.check(names, fits).map(start_key))
        .transpose()
}

/// One page of a list, newest first: `query` names the table, the index and the key
/// condition; `start` is where the page starts ([`start_of`]). Answers the page's items,
/// each read with `parse`, and the cursor of the next page if there is one; `failed` says
/// what failed when the query does.
pub async fn query_page<T>(
    query: QueryFluentBuilder,
    limit: PageLimit,
    start: Option<Item>,
    failed: &'static str,
    parse: impl FnMut(&Item) -> anyhow::Result<T>,
) -> anyhow::Result<(Vec<T>, Option<Cursor>)> {
    query_page_in(query, false, limit, start, failed, parse).await
}

/// [`query_page`], oldest first when `oldest_first`.
pub async fn query_page_in<T>(
    query: QueryFluentBuilder,
    oldest_first: bool,
    limit: PageLimit,
    start: Option<Item>,
    failed: &'static str,
    parse: impl FnMut(&Item) -> anyhow::Result<T>,
) -> anyhow::Result<(Vec<T>, Option<Cursor>)> {
    let output = query
        .scan_index_forward(oldest_first)
        .limit(i32::try_from(limit.get()).unwrap_or(100))
        .set_exclusive_start_key(start)
        .send()
        .await
        .or_fault(failed)?;
    let items = output
        .items()
        .iter()
        .map(parse)
        .collect::<anyhow::Result<Vec<_>>>()?;
    let next = output.last_evaluated_key().map(cursor_of).transpose()?;
    Ok((items, next))
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

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::error::ErrorMetadata;

    #[test]
    fn conflicts_and_throttling_are_retried_and_conditions_are_answers() {
        let labels = ["a", "b", "c"];
        for (codes, expected) in [
            (
                [None, Some("TransactionConflict"), Some("None")],
                "TransactionConflict",
            ),
            ([Some("ThrottlingError"), None, None], "Throttling"),
            (
                [None, None, Some("ProvisionedThroughputExceeded")],
                "ProvisionedThroughputExceeded",
            ),
        ] {
            match cancellation(&codes, &labels) {
                Some(Classified::Transient(reason)) => assert_eq!(reason, expected),
                Some(Classified::Final(err)) => panic!("{codes:?}: {err:?}"),
                None => panic!("{codes:?}: not classified"),
            }
        }
        // A failed condition wins over a conflict on another item, and names every failure.
        let codes = [
            Some("ConditionalCheckFailed"),
            Some("TransactionConflict"),
            Some("ConditionalCheckFailed"),
        ];
        match cancellation(&codes, &labels) {
            Some(Classified::Final(TransactError::ConditionFailed { label, all })) => {
                assert_eq!(label, "a");
                assert_eq!(all, ["a", "c"]);
            }
            Some(Classified::Final(err)) => panic!("{err:?}"),
            Some(Classified::Transient(reason)) => panic!("retried {reason}"),
            None => panic!("not classified"),
        }
        assert!(cancellation(&[Some("ValidationError"), None, None], &labels).is_none());
    }

    #[test]
    fn single_item_writes_are_retried_on_conflicts_and_throttling_only() {
        let error = |code: &str| ErrorMetadata::builder().code(code).build();
        assert_eq!(
            transient(&error("TransactionConflictException")),
            Some("TransactionConflictException")
        );
        assert_eq!(
            transient(&error("ProvisionedThroughputExceededException")),
            Some("ProvisionedThroughputExceeded")
        );
        assert_eq!(
            transient(&error("RequestLimitExceeded")),
            Some("RequestLimitExceeded")
        );
        assert_eq!(transient(&error("ConditionalCheckFailedException")), None);
        assert_eq!(transient(&error("ValidationException")), None);
    }
}

/// The classification above, through the SDK itself.
#[cfg(test)]
mod through_the_sdk;
