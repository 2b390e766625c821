//! DynamoDB adapter of [`OrderStore`]: the orders and sales in the commerce table (key design
//! in [`crate::seckill::keys`]).

use crate::config::{ConfigError, Env};
use crate::cursor::{Cursor, PageLimit};
use crate::dynamo::{
    Item, MAX_TRANSACTION_ITEMS, Table, TransactError, Transaction, UnitItem, get_n, get_s, key, n,
    put_if_absent, query_page, s, start_of, update_in, write_if,
};
use crate::ids::{OrderId, SaleId, UserId};
use crate::once::{Rejected, Unit, unit_indices};
use crate::retry::Backoff;
use crate::seckill::admission::checkout::Address;
use crate::seckill::keys::{
    BUYER_SK, ORDER_SK, SALE_SK, buyer_pk, order_pk, order_shard, sale_orders_pk, sale_orders_sk,
    sale_pk, user_orders_pk, user_orders_sk,
};
use crate::seckill::order::refund::{Currency, Refund};
use crate::seckill::order::refund::{
    OrderRefund, Outstanding, RefundPage, RefundRecord, RefundState,
};
use crate::seckill::order::{
    ConfirmRejected, HeldOrder, LiveSale, LiveSales, NewOrder, Order, OrderLimits, OrderPage,
    OrderStatus, OrderStore, OrderStoreError, PaymentMethod, SaleGuards,
};
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, TransactWriteItem, Update};
use std::collections::HashMap;
use time::format_description::well_known::Rfc3339;

mod refunds;

pub(crate) use refunds::REFUNDS_INDEX;

/// The units of every order in `units`.
fn total_units(units: &[Unit<NewOrder>]) -> i64 {
    units.iter().map(|unit| unit.payload.units()).sum()
}

/// The index of a user's orders, newest first.
const USER_ORDERS_INDEX: &str = "gsi1";

/// Whether one transaction takes `orders` orders of `buyers` distinct buyers: an item per
/// order, one per buyer, and the sale's.
pub(crate) fn fits_one_transaction(orders: usize, buyers: usize) -> bool {
    orders + buyers < MAX_TRANSACTION_ITEMS
}

pub(crate) const LIMITS: OrderLimits = OrderLimits {
    confirm_takes: fits_one_transaction,
    // A reject transaction holds the orders, in the room a confirmation leaves for the sale.
    reject: MAX_TRANSACTION_ITEMS - 1,
    // A cancellation's transaction holds the orders, as many buyer items at most, and the sale.
    cancel: (MAX_TRANSACTION_ITEMS - 1) / 2,
};

/// Each distinct buyer and the sum of their orders' units, from `(buyer, units)` per order, in
/// order of first appearance: one transaction may write a buyer's item only once.
pub(crate) fn per_buyer<'a>(
    orders: impl IntoIterator<Item = (&'a str, i64)>,
) -> Vec<(&'a str, i64)> {
    let mut counts: Vec<(&str, i64)> = Vec::new();
    for (buyer, units) in orders {
        match counts.iter_mut().find(|(seen, _)| *seen == buyer) {
            Some((_, k)) => *k += units,
            None => counts.push((buyer, units)),
        }
    }
    counts
}

/// The address as a map attribute (absent optional fields left out).
fn address_attribute(address: &Address) -> AttributeValue {
    let mut fields = HashMap::from([
        ("recipient".to_owned(), s(&address.recipient)),
        ("line1".to_owned(), s(&address.line1)),
        ("city".to_owned(), s(&address.city)),
        ("postalCode".to_owned(), s(&address.postal_code)),
        ("country".to_owned(), s(&address.country)),
    ]);
    for (name, value) in [("line2", &address.line2), ("phone", &address.phone)] {
        if let Some(value) = value {
            fields.insert(name.to_owned(), s(value));
        }
    }
    AttributeValue::M(fields)
}

fn address_from(value: &AttributeValue) -> anyhow::Result<Address> {
    let fields = value
        .as_m()
        .map_err(|_| anyhow::anyhow!("stored address is not a map"))?;
    let optional = |name: &str| fields.get(name).and_then(|v| v.as_s().ok()).cloned();
    Ok(Address {
        recipient: get_s(fields, "recipient")?.to_owned(),
        line1: get_s(fields, "line1")?.to_owned(),
        line2: optional("line2"),
        city: get_s(fields, "city")?.to_owned(),
        postal_code: get_s(fields, "postalCode")?.to_owned(),
        country: get_s(fields, "country")?.to_owned(),
        phone: optional("phone"),
    })
}

/// The orders and sales of the commerce table.
#[derive(Clone, Debug)]
pub struct DynamoOrderStore {
    pub(crate) table: Table,
}

impl DynamoOrderStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            table: Table::new(client, table),
        }
    }

    /// The store named by `COMMERCE_TABLE`.
    pub fn from_env(env: &Env, client: Client) -> Result<Self, ConfigError> {
        Table::from_env(env, client, "COMMERCE_TABLE").map(|table| Self { table })
    }

    fn put_order(&self, order: &NewOrder, status: OrderStatus) -> TransactWriteItem {
        let mut item = key(order_pk(&order.order_id), ORDER_SK);
        if let Some(address) = &order.address {
            item.insert("address".to_owned(), address_attribute(address));
        }
        if let Some(method) = order.payment_method {
            item.insert("paymentMethod".to_owned(), s(method.as_str()));
        }
        item.extend([
            ("orderId".to_owned(), s(order.order_id.as_str())),
            ("saleId".to_owned(), s(order.sale_id.as_str())),
            ("userId".to_owned(), s(order.user_id.as_str())),
            ("priceCents".to_owned(), n(order.price_cents)),
            ("quantity".to_owned(), n(order.quantity)),
            ("totalCents".to_owned(), n(order.total_cents())),
            ("status".to_owned(), s(status.as_str())),
            ("createdAt".to_owned(), s(&order.created_at)),
            (
                "gsi1pk".to_owned(),
                s(user_orders_pk(order.user_id.as_str())),
            ),
            (
                "gsi1sk".to_owned(),
                s(user_orders_sk(&order.created_at, &order.order_id)),
            ),
            (
                "gsi3pk".to_owned(),
                s(sale_orders_pk(&order.sale_id, order_shard(&order.order_id))),
            ),
            (
                "gsi3sk".to_owned(),
                s(sale_orders_sk(&order.created_at, &order.order_id)),
            ),
        ]);
        put_if_absent(&self.table.name, item)
    }

    /// `units += k` on the buyer's item, which must hold at most `limit` after it.
    fn add_units(&self, sale_id: &SaleId, buyer: &str, k: i64, limit: u32) -> TransactWriteItem {
        let room = i64::from(limit) - k;
        // A buyer with no room even before holding anything: only a stored `units` could
        // compare, and it is never negative, so the condition fails as it must.
        let condition = if room >= 0 {
            "attribute_not_exists(units) OR units <= :room"
        } else {
            "units <= :room"
        };
        let update = Update::builder()
            .set_key(Some(key(buyer_pk(sale_id, buyer), BUYER_SK)))
            .update_expression("ADD units :k")
            .condition_expression(condition)
            .expression_attribute_values(":k", n(k))
            .expression_attribute_values(":room", n(room));
        update_in(&self.table.name, update)
    }

    /// `units -= k` on the buyer's item, which must hold them: the transaction that confirmed
    /// the orders added them.
    fn take_units(&self, sale_id: &SaleId, buyer: &str, k: i64) -> TransactWriteItem {
        let update = Update::builder()
            .set_key(Some(key(buyer_pk(sale_id, buyer), BUYER_SK)))
            .update_expression("ADD units :minus")
            .condition_expression("units >= :k")
            .expression_attribute_values(":minus", n(-k))
            .expression_attribute_values(":k", n(k));
        update_in(&self.table.name, update)
    }

    /// A sale item's attribute, strongly consistent.
    async fn sale_attributes(
        &self,
        sale_id: &SaleId,
        projection: &str,
    ) -> anyhow::Result<Option<Item>> {
        let key = key(sale_pk(sale_id), SALE_SK);
        let failed = "failed to read the sale's stock";
        self.table
            .get_consistent(key, Some(projection), failed)
            .await
    }

    /// One transaction of an order per unit, each written as `status` of it.
    fn put_orders(
        &self,
        units: &[Unit<NewOrder>],
        status: impl Fn(&NewOrder) -> OrderStatus,
    ) -> Transaction<UnitItem> {
        Transaction::of_units(units, |unit| {
            self.put_order(&unit.payload, status(&unit.payload))
        })
    }
}

/// An order's conditional update: `true` when it was written, `false` when its condition
/// failed ([`write_if`]).
async fn conditional(
    update: UpdateItemFluentBuilder,
    what: &'static str,
) -> Result<bool, OrderStoreError> {
    Ok(
        write_if(&Backoff::default(), what, || update.clone().send())
            .await?
            .is_some(),
    )
}

/// A refund's entry in its order's `refunds` list.
fn order_refund_from(value: &AttributeValue) -> anyhow::Result<OrderRefund> {
    let fields = value
        .as_m()
        .map_err(|_| anyhow::anyhow!("stored refund entry is not a map"))?;
    Ok(OrderRefund {
        payment_id: get_s(fields, "paymentId")?.to_owned(),
        amount_cents: get_n(fields, "amountCents")?,
        currency: Currency::parse(get_s(fields, "currency")?)?,
        reason: get_s(fields, "reason")?.to_owned(),
        state: RefundState::parse(get_s(fields, "state")?).context("stored refund state")?,
        recorded_at: get_s(fields, "recordedAt")?.to_owned(),
        refunded_at: fields
            .get("refundedAt")
            .and_then(|v| v.as_s().ok())
            .cloned(),
    })
}

/// The item's `orderId`, which must be an [`OrderId`].
fn stored_order_id(item: &Item) -> anyhow::Result<OrderId> {
    let raw = get_s(item, "orderId")?;
    OrderId::parse(raw).with_context(|| format!("stored orderId {raw:?} is not an order id"))
}

fn order_from_item(item: &Item) -> anyhow::Result<Order> {
    let status = get_s(item, "status")?;
    let method = item
        .get("paymentMethod")
        .and_then(|v| v.as_s().ok())
        .map(|raw| PaymentMethod::parse(raw).context("stored paymentMethod is unknown"))
        .transpose()?;
    let price_cents: u64 = get_n(item, "priceCents")?;
    // Orders written before orders had a quantity are one unit.
    let quantity: u32 = match item.get("quantity") {
        Some(_) => get_n(item, "quantity")?,
        None => 1,
    };
    Ok(Order {
        order_id: stored_order_id(item)?,
        sale_id: SaleId::parse(get_s(item, "saleId")?).context("stored saleId is not a UUID")?,
        user_id: UserId::parse(get_s(item, "userId")?).context("stored userId is malformed")?,
        price_cents,
        quantity,
        total_cents: price_cents.saturating_mul(u64::from(quantity)),
        status: OrderStatus::parse(status).context("stored status is unknown")?,
        created_at: get_s(item, "createdAt")?.to_owned(),
        address: item.get("address").map(address_from).transpose()?,
        payment_method: method,
        payment_id: item.get("paymentId").and_then(|v| v.as_s().ok()).cloned(),
        paid_at: item.get("paidAt").and_then(|v| v.as_s().ok()).cloned(),
        delivery_confirmed_at: item
            .get("deliveryConfirmedAt")
            .and_then(|v| v.as_s().ok())
            .cloned(),
        refunds: match item.get("refunds") {
            Some(list) => list
                .as_l()
                .map_err(|_| anyhow::anyhow!("stored refunds is not a list"))?
                .iter()
                .map(order_refund_from)
                .collect::<anyhow::Result<_>>()?,
            None => Vec::new(),
        },
    })
}

#[async_trait]
impl OrderStore for DynamoOrderStore {
    fn limits(&self) -> OrderLimits {
        LIMITS
    }

    #[tracing::instrument(level = "debug", skip(self, units), fields(units = units.len()))]
    async fn confirm_orders(
        &self,
        sale_id: &SaleId,
        per_user_limit: u32,
        units: &[Unit<NewOrder>],
    ) -> Result<(), ConfirmRejected> {
        // Orders first, then buyers, then the sale: a cancellation reports the first failed
        // condition, so a redelivered order shows as such before its buyer's count would seem
        // to exceed the limit because of it.
        let mut transaction = self.put_orders(units, NewOrder::confirmed_status);
        let buyers = per_buyer(
            units
                .iter()
                .map(|unit| (unit.payload.user_id.as_str(), unit.payload.units())),
        );
        for (index, (buyer, k)) in buyers.iter().enumerate() {
            transaction = transaction.push(
                UnitItem::Guard(index),
                self.add_units(sale_id, buyer, *k, per_user_limit),
            );
        }
        let update = Update::builder()
            .set_key(Some(key(sale_pk(sale_id), SALE_SK)))
            .update_expression("SET stockRemaining = stockRemaining - :n")
            .condition_expression("stockRemaining >= :n")
            .expression_attribute_values(":n", n(total_units(units)));
        transaction = transaction.push(UnitItem::Aggregate, update_in(&self.table.name, update));
        match transaction.commit(&self.table.client).await {
            Ok(()) => Ok(()),
            Err(TransactError::ConditionFailed {
                label: UnitItem::Unit(_),
                all,
            }) => Err(ConfirmRejected::AlreadyApplied(unit_indices(&all))),
            Err(TransactError::ConditionFailed {
                label: UnitItem::Guard(index),
                ..
            }) => {
                let buyer = buyers
                    .get(index)
                    .and_then(|(buyer, _)| UserId::parse(buyer).ok())
                    .context("a cancellation reason names no buyer of the transaction")
                    .map_err(ConfirmRejected::Failed)?;
                Err(ConfirmRejected::OverLimit(buyer))
            }
            Err(TransactError::ConditionFailed {
                label: UnitItem::Aggregate,
                ..
            }) => Err(ConfirmRejected::SoldOut),
            Err(other) => Err(ConfirmRejected::Failed(other.into())),
        }
    }

    #[tracing::instrument(level = "debug", skip(self, units), fields(units = units.len()))]
    async fn reject_orders(&self, units: &[Unit<NewOrder>]) -> Result<(), Rejected> {
        self.put_orders(units, |_| OrderStatus::Rejected)
            .commit_units(&self.table.client)
            .await
    }

    #[tracing::instrument(level = "debug", skip(self, units), fields(units = units.len()))]
    async fn cancel_orders(
        &self,
        sale_id: &SaleId,
        units: &[Unit<HeldOrder>],
    ) -> Result<(), Rejected> {
        let now = crate::clock::now_rfc3339();
        let mut transaction = Transaction::of_units(units, |unit| {
            let update = Update::builder()
                .set_key(Some(key(order_pk(&unit.payload.order_id), ORDER_SK)))
                .update_expression("SET #status = :cancelled, cancelledAt = :now")
                .condition_expression(
                    "#status = :confirmed OR (#status = :cod AND attribute_not_exists(deliveryConfirmedAt))",
                )
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":cancelled", s(OrderStatus::Cancelled.as_str()))
                .expression_attribute_values(":confirmed", s(OrderStatus::Confirmed.as_str()))
                .expression_attribute_values(":cod", s(OrderStatus::Cod.as_str()))
                .expression_attribute_values(":now", s(&now));
            update_in(&self.table.name, update)
        });
        let buyers = per_buyer(units.iter().map(|unit| {
            let holder = &unit.payload.holder;
            (holder.user_id.as_str(), i64::from(holder.units))
        }));
        for (index, (buyer, k)) in buyers.iter().enumerate() {
            transaction =
                transaction.push(UnitItem::Guard(index), self.take_units(sale_id, buyer, *k));
        }
        let update = Update::builder()
            .set_key(Some(key(sale_pk(sale_id), SALE_SK)))
            .update_expression("SET stockRemaining = stockRemaining + :n")
            .condition_expression("attribute_exists(stockRemaining)")
            .expression_attribute_values(
                ":n",
                n(units
                    .iter()
                    .map(|unit| unit.payload.holder.units)
                    .sum::<u32>()),
            );
        transaction
            .push(UnitItem::Aggregate, update_in(&self.table.name, update))
            .commit_units(&self.table.client)
            .await
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn stock_remaining(&self, sale_id: &SaleId) -> Result<Option<i64>, OrderStoreError> {
        let item = self.sale_attributes(sale_id, "stockRemaining").await?;
        Ok(match item {
            Some(item) => Some(get_n(&item, "stockRemaining").map_err(anyhow::Error::from)?),
            None => None,
        })
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn sale_guards(&self, sale_id: &SaleId) -> Result<Option<SaleGuards>, OrderStoreError> {
        let item = self
            .sale_attributes(sale_id, "stockRemaining, perUserLimit, priceCents")
            .await?;
        let Some(item) = item else {
            return Ok(None);
        };
        Ok(Some(SaleGuards {
            stock_remaining: get_n(&item, "stockRemaining").map_err(anyhow::Error::from)?,
            per_user_limit: get_n(&item, "perUserLimit").map_err(anyhow::Error::from)?,
            price_cents: get_n(&item, "priceCents").map_err(anyhow::Error::from)?,
        }))
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn buyer_units(&self, sale_id: &SaleId, user: &UserId) -> Result<i64, OrderStoreError> {
        let key = key(buyer_pk(sale_id, user.as_str()), BUYER_SK);
        let failed = "failed to read what a buyer holds";
        let item = self
            .table
            .get_consistent(key, Some("units"), failed)
            .await?;
        Ok(match item {
            Some(item) => get_n(&item, "units").map_err(anyhow::Error::from)?,
            None => 0,
        })
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn order(&self, order_id: &OrderId) -> Result<Option<Order>, OrderStoreError> {
        let key = key(order_pk(order_id), ORDER_SK);
        let item = self
            .table
            .get_consistent(key, None, "failed to read an order");
        Ok(item.await?.as_ref().map(order_from_item).transpose()?)
    }

    #[tracing::instrument(level = "debug", skip(self, cursor))]
    async fn orders_of(
        &self,
        user: &UserId,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<OrderPage, OrderStoreError> {
        let gsi1pk = user_orders_pk(user.as_str());
        let fits = |cursor: &Cursor| {
            cursor.get("gsi1pk") == Some(gsi1pk.as_str())
                && cursor.get("sk") == Some(ORDER_SK)
                && cursor.get("pk").is_some_and(|pk| pk.starts_with("ORDER#"))
        };
        let start = start_of(cursor, &["pk", "sk", "gsi1pk", "gsi1sk"], fits)?;
        let query = self
            .table
            .client
            .query()
            .table_name(&self.table.name)
            .index_name(USER_ORDERS_INDEX)
            .key_condition_expression("gsi1pk = :pk")
            .expression_attribute_values(":pk", s(&gsi1pk));
        let failed = "failed to query a user's orders";
        let (items, next) = query_page(query, limit, start, failed, order_from_item).await?;
        Ok(OrderPage { items, next })
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn keep_for_delivery(
        &self,
        order_id: &OrderId,
        user: &UserId,
    ) -> Result<bool, OrderStoreError> {
        // Cash on delivery is not paid yet: no `paidAt`.
        let update = self
            .table
            .update_item(key(order_pk(order_id), ORDER_SK))
            .update_expression("SET #status = :cod, paymentMethod = :cod")
            .condition_expression("#status = :confirmed AND userId = :user")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":cod", s(OrderStatus::Cod.as_str()))
            .expression_attribute_values(":confirmed", s(OrderStatus::Confirmed.as_str()))
            .expression_attribute_values(":user", s(user.as_str()));
        conditional(update, "UpdateItem order kept for delivery").await
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn open_payment(
        &self,
        order_id: &OrderId,
        user: &UserId,
        new_payment_id: &str,
    ) -> Result<Option<String>, OrderStoreError> {
        let update = self
            .table
            .update_item(key(order_pk(order_id), ORDER_SK))
            .update_expression("SET paymentId = if_not_exists(paymentId, :new)")
            .condition_expression("#status = :confirmed AND userId = :user")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":new", s(new_payment_id))
            .expression_attribute_values(":confirmed", s(OrderStatus::Confirmed.as_str()))
            .expression_attribute_values(":user", s(user.as_str()))
            // The whole item: an attribute the update left as it was is not "updated".
            .return_values(ReturnValue::AllNew);
        let Some(output) = write_if(&Backoff::default(), "failed to open a payment", || {
            update.clone().send()
        })
        .await?
        else {
            return Ok(None);
        };
        let attributes = output.attributes().cloned().unwrap_or_default();
        let payment_id = get_s(&attributes, "paymentId").map_err(anyhow::Error::from)?;
        Ok(Some(payment_id.to_owned()))
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn confirm_delivery(
        &self,
        order_id: &OrderId,
        at: &str,
    ) -> Result<Option<Order>, OrderStoreError> {
        let update = self
            .table
            .update_item(key(order_pk(order_id), ORDER_SK))
            .update_expression("SET deliveryConfirmedAt = if_not_exists(deliveryConfirmedAt, :at)")
            .condition_expression("#status = :cod")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":cod", s(OrderStatus::Cod.as_str()))
            .expression_attribute_values(":at", s(at))
            .return_values(ReturnValue::AllNew);
        let confirmed = write_if(
            &Backoff::default(),
            "failed to confirm an order for delivery",
            || update.clone().send(),
        )
        .await?;
        match confirmed.and_then(|output| output.attributes) {
            Some(item) => Ok(Some(order_from_item(&item)?)),
            // Not COD, or no such order: as it is.
            None => self.order(order_id).await,
        }
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn claim_payment_refund(
        &self,
        payment_id: &str,
        order_id: &OrderId,
    ) -> Result<Option<OrderId>, OrderStoreError> {
        refunds::claim_payment_refund(self, payment_id, order_id).await
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn settle_online(
        &self,
        order_id: &OrderId,
        payment_id: &str,
        at: &str,
    ) -> Result<bool, OrderStoreError> {
        // The order is in the payment-timeout consumer's cancelling transaction: a write while
        // that one is in flight is refused for a moment, and retried; whichever lands first
        // decides.
        let update = self
            .table
            .update_item(key(order_pk(order_id), ORDER_SK))
            .update_expression("SET #status = :paid, paymentMethod = :online, paidAt = :at")
            .condition_expression("#status = :confirmed AND paymentId = :payment")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":paid", s(OrderStatus::Paid.as_str()))
            .expression_attribute_values(":online", s(PaymentMethod::Online.as_str()))
            .expression_attribute_values(":at", s(at))
            .expression_attribute_values(":confirmed", s(OrderStatus::Confirmed.as_str()))
            .expression_attribute_values(":payment", s(payment_id));
        conditional(update, "UpdateItem order paid").await
    }

    #[tracing::instrument(level = "debug", skip(self, refund), fields(payment = %refund.payment_id))]
    async fn record_refund(&self, refund: &Refund) -> Result<bool, OrderStoreError> {
        refunds::record_refund(self, refund).await
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn refunds_due(
        &self,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<RefundPage, OrderStoreError> {
        refunds::refunds_due(self, limit, cursor).await
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn refunds_outstanding(&self) -> Result<Outstanding, OrderStoreError> {
        refunds::refunds_outstanding(self).await
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn refund(
        &self,
        payment_id: &str,
        order_id: &OrderId,
    ) -> Result<Option<RefundRecord>, OrderStoreError> {
        refunds::refund(self, payment_id, order_id).await
    }

    #[tracing::instrument(level = "debug", skip(self, refund), fields(payment = %refund.payment_id))]
    async fn mark_refunded(
        &self,
        refund: &RefundRecord,
        provider_refund_id: &str,
        at: &str,
    ) -> Result<bool, OrderStoreError> {
        refunds::mark_refunded(self, refund, provider_refund_id, at).await
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn live_sales(&self) -> Result<LiveSales, OrderStoreError> {
        let (items, items_read) = crate::seckill::sale::dynamo::live_items(&self.table).await?;
        let mut sales = Vec::with_capacity(items.len());
        for item in &items {
            let pk = get_s(item, "pk").map_err(anyhow::Error::from)?;
            let Some(sale_id) = pk.strip_prefix("SALE#") else {
                continue;
            };
            let sale_id = SaleId::parse(sale_id)
                .with_context(|| format!("live sale item {pk:?} names no sale id"))?;
            let ends_at = get_s(item, "endsAt").map_err(anyhow::Error::from)?;
            let ends_at = time::OffsetDateTime::parse(ends_at, &Rfc3339)
                .context("stored endsAt is not RFC 3339")?;
            sales.push(LiveSale {
                sale_id,
                stock_remaining: get_n(item, "stockRemaining").ok(),
                ends_at_ms: crate::clock::epoch_ms(ends_at),
            });
        }
        Ok(LiveSales { sales, items_read })
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn retire_sale(&self, sale_id: &SaleId, now: &str) -> Result<bool, OrderStoreError> {
        Ok(crate::seckill::sale::dynamo::retire(&self.table, sale_id, now).await?)
    }
}
