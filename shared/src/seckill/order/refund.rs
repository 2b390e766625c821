//! The refund records an order keeps: a payment to give back ([`Refund`], once per payment and
//! order, in the currency it was paid in), where it is ([`RefundState`]), and the lists of them
//! the order store answers. The order store writes and reads them beside the orders; paying
//! them back is the payment concern's ([`crate::seckill::payment`]).

use crate::cursor::Cursor;
use crate::ids::OrderId;
use crate::seckill::order::Order;
use serde::{Deserialize, Serialize};

/// An ISO 4217 currency code: three capital letters (`EUR`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Currency(String);

/// Why a string is not a currency code.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("currency must be an ISO 4217 code of three capital letters, e.g. EUR")]
pub struct InvalidCurrency;

/// The shop's currency: every price, order total and payment is in it.
pub const SHOP_CURRENCY: &str = "EUR";

impl Currency {
    pub fn parse(raw: &str) -> Result<Self, InvalidCurrency> {
        if raw.len() == 3 && raw.bytes().all(|b| b.is_ascii_uppercase()) {
            Ok(Self(raw.to_owned()))
        } else {
            Err(InvalidCurrency)
        }
    }

    /// [`SHOP_CURRENCY`]: the currency of every order.
    pub fn shop() -> Self {
        Self(SHOP_CURRENCY.to_owned())
    }

    /// The currency `order` is paid in (the shop's: prices have no other).
    pub fn of(_order: &Order) -> Self {
        Self::shop()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for Currency {
    type Error = InvalidCurrency;

    fn try_from(raw: String) -> Result<Self, InvalidCurrency> {
        Self::parse(&raw)
    }
}

impl From<Currency> for String {
    fn from(currency: Currency) -> Self {
        currency.0
    }
}

/// Why a payment that succeeded is to be refunded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RefundReason {
    /// The payment window ended first: the order was cancelled and its units went back.
    OrderCancelled,
    OrderRejected,
    /// The order was already paid by another payment, or kept for cash on delivery.
    AlreadySettled,
    /// The amount is not the order's total.
    AmountMismatch,
    /// The currency is not the order's.
    CurrencyMismatch,
    /// Not the payment this service opened for the order.
    UnknownPayment,
}

impl RefundReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OrderCancelled => "ORDER_CANCELLED",
            Self::OrderRejected => "ORDER_REJECTED",
            Self::AlreadySettled => "ALREADY_SETTLED",
            Self::AmountMismatch => "AMOUNT_MISMATCH",
            Self::CurrencyMismatch => "CURRENCY_MISMATCH",
            Self::UnknownPayment => "UNKNOWN_PAYMENT",
        }
    }
}

/// A payment to give back, as the commerce table records it (once per payment and order).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refund {
    pub payment_id: String,
    pub order_id: OrderId,
    pub user_id: String,
    pub amount_cents: u64,
    pub currency: Currency,
    pub reason: RefundReason,
    pub recorded_at: String,
}

/// Where a refund is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RefundState {
    /// Recorded, not paid back yet.
    Due,
    /// Paid back through the provider.
    Refunded,
}

impl RefundState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Due => "DUE",
            Self::Refunded => "REFUNDED",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "DUE" => Some(Self::Due),
            "REFUNDED" => Some(Self::Refunded),
            _ => None,
        }
    }
}

/// A refund as the commerce table holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RefundRecord {
    pub payment_id: String,
    pub order_id: OrderId,
    pub user_id: String,
    pub amount_cents: u64,
    pub currency: Currency,
    /// Why it is refunded (`ORDER_CANCELLED`, ...), as recorded.
    pub reason: String,
    pub state: RefundState,
    pub recorded_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refunded_at: Option<String>,
    /// The provider's id of the refund.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_refund_id: Option<String>,
}

/// A refund as its order shows it (`GET /orders/{orderId}`: `refunds`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderRefund {
    pub payment_id: String,
    pub amount_cents: u64,
    pub currency: Currency,
    pub reason: String,
    pub state: RefundState,
    pub recorded_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refunded_at: Option<String>,
}

/// One page of refunds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefundPage {
    pub items: Vec<RefundRecord>,
    pub next: Option<Cursor>,
}

/// The refunds still due, as reconciliation reports them every run: the count and the age of
/// the oldest follow the state, so the alarm on them clears once ops settled them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outstanding {
    pub count: u64,
    /// When the oldest refund still due was recorded (RFC 3339), if any is.
    pub oldest_recorded_at: Option<String>,
}

impl Outstanding {
    /// Seconds since the oldest due refund was recorded at `now` (0 when none is due, or its
    /// time does not parse: the count still says that there is one).
    pub fn oldest_age_seconds(&self, now: time::OffsetDateTime) -> u64 {
        self.oldest_recorded_at
            .as_deref()
            .and_then(|at| {
                time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).ok()
            })
            .map_or(0, |at| {
                u64::try_from((now - at).whole_seconds()).unwrap_or(0)
            })
    }
}
