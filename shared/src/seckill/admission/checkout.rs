//! What a buyer chooses at checkout: how many units, where they go, how they will be paid.
//!
//! The order route's optional body `{quantity, address, paymentMethod}` (no body: one unit, no
//! address, the payment method chosen later) is checked here, before anything touches Redis,
//! so that a bad field costs the buyer a 400 that names it and costs the sale nothing.

use crate::seckill::sale::NewSale;
use crate::text::{TextError, clean};
use serde::{Deserialize, Serialize};

/// A shipping address, as the buyer typed it (trimmed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Address {
    pub recipient: String,
    pub line1: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line2: Option<String>,
    pub city: String,
    pub postal_code: String,
    /// ISO 3166-1 alpha-2, upper case.
    pub country: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
}

impl From<Address> for crate::events::Address {
    fn from(address: Address) -> Self {
        let Address {
            recipient,
            line1,
            line2,
            city,
            postal_code,
            country,
            phone,
        } = address;
        Self {
            recipient,
            line1,
            line2,
            city,
            postal_code,
            country,
            phone,
        }
    }
}

impl From<crate::events::Address> for Address {
    fn from(address: crate::events::Address) -> Self {
        let crate::events::Address {
            recipient,
            line1,
            line2,
            city,
            postal_code,
            country,
            phone,
        } = address;
        Self {
            recipient,
            line1,
            line2,
            city,
            postal_code,
            country,
            phone,
        }
    }
}

/// The order route's body, as sent.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CheckoutDto {
    pub quantity: Option<i64>,
    pub address: Option<Address>,
    pub payment_method: Option<String>,
}

/// A checked checkout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkout {
    /// At least 1; the sale's per-user limit is checked by the admission script.
    pub quantity: u32,
    pub address: Option<Address>,
    /// Chosen at checkout: a COD order is kept for delivery as soon as it is confirmed.
    pub payment_method: Option<PaymentMethod>,
}

impl Default for Checkout {
    /// No body: one unit, no address, the payment method chosen when paying.
    fn default() -> Self {
        Self {
            quantity: 1,
            address: None,
            payment_method: None,
        }
    }
}

/// Why a checkout is refused (a 400 with this message).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InvalidCheckout {
    #[error("quantity must be a whole number between 1 and {max}", max = NewSale::MAX_PER_USER)]
    Quantity,
    #[error("paymentMethod must be ONLINE or COD")]
    PaymentMethod,
    #[error("address.{field} {rule}")]
    Address {
        field: &'static str,
        rule: &'static str,
    },
    /// A free-text field of the address (the message names it).
    #[error(transparent)]
    Text(#[from] TextError),
}

/// An ASCII field's rule: its name in the body, its length, and what its characters may be.
struct AsciiRule {
    name: &'static str,
    chars: std::ops::RangeInclusive<usize>,
    allowed: fn(char) -> bool,
    rule: &'static str,
}

const POSTAL_CODE: AsciiRule = AsciiRule {
    name: "postalCode",
    chars: 1..=12,
    allowed: |c| c.is_ascii_alphanumeric() || c == ' ' || c == '-',
    rule: "must be 1 to 12 letters, digits, spaces or hyphens",
};
const PHONE: AsciiRule = AsciiRule {
    name: "phone",
    chars: 4..=24,
    allowed: |c| c.is_ascii_digit() || " +-()".contains(c),
    rule: "must be 4 to 24 digits, spaces or + - ( )",
};

impl AsciiRule {
    /// The trimmed value, or why not.
    fn check(&self, raw: &str) -> Result<String, InvalidCheckout> {
        let value = raw.trim();
        if !self.chars.contains(&value.chars().count()) || !value.chars().all(self.allowed) {
            return Err(InvalidCheckout::Address {
                field: self.name,
                rule: self.rule,
            });
        }
        Ok(value.to_owned())
    }
}

/// An optional field: absent or blank is `None`, anything else is checked.
fn optional<T>(
    raw: Option<&str>,
    check: impl FnOnce(&str) -> Result<T, InvalidCheckout>,
) -> Result<Option<T>, InvalidCheckout> {
    raw.filter(|value| !value.trim().is_empty())
        .map(check)
        .transpose()
}

impl Address {
    /// The address with every field trimmed and checked: the free text (recipient, lines,
    /// city) by the rules of every name other people see ([`crate::text::clean`]: a label and
    /// the operators' screens show it), the codes as ASCII.
    pub fn checked(self) -> Result<Self, InvalidCheckout> {
        let country = self.country.trim().to_ascii_uppercase();
        if country.len() != 2 || !country.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(InvalidCheckout::Address {
                field: "country",
                rule: "must be a two-letter ISO 3166 country code",
            });
        }
        Ok(Self {
            recipient: clean("address.recipient", &self.recipient, 100)?,
            line1: clean("address.line1", &self.line1, 200)?,
            line2: optional(self.line2.as_deref(), |raw| {
                Ok(clean("address.line2", raw, 200)?)
            })?,
            city: clean("address.city", &self.city, 100)?,
            postal_code: POSTAL_CODE.check(&self.postal_code)?,
            country,
            phone: optional(self.phone.as_deref(), |raw| PHONE.check(raw))?,
        })
    }
}

impl Checkout {
    pub fn parse(dto: CheckoutDto) -> Result<Self, InvalidCheckout> {
        let quantity = match dto.quantity {
            None => 1,
            Some(quantity) if (1..=NewSale::MAX_PER_USER).contains(&quantity) => {
                u32::try_from(quantity).map_err(|_| InvalidCheckout::Quantity)?
            }
            Some(_) => return Err(InvalidCheckout::Quantity),
        };
        let payment_method = dto
            .payment_method
            .map(|raw| PaymentMethod::parse(&raw).ok_or(InvalidCheckout::PaymentMethod))
            .transpose()?;
        Ok(Self {
            quantity,
            address: dto.address.map(Address::checked).transpose()?,
            payment_method,
        })
    }

    /// What the order costs: the unit price times the quantity.
    pub fn total_cents(&self, price_cents: u64) -> u64 {
        price_cents.saturating_mul(u64::from(self.quantity))
    }
}

/// How a buyer pays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PaymentMethod {
    Online,
    Cod,
}

impl From<PaymentMethod> for crate::events::PaymentMethod {
    fn from(method: PaymentMethod) -> Self {
        match method {
            PaymentMethod::Online => Self::Online,
            PaymentMethod::Cod => Self::Cod,
        }
    }
}

impl From<crate::events::PaymentMethod> for PaymentMethod {
    fn from(method: crate::events::PaymentMethod) -> Self {
        match method {
            crate::events::PaymentMethod::Online => Self::Online,
            crate::events::PaymentMethod::Cod => Self::Cod,
        }
    }
}

impl PaymentMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Online => "ONLINE",
            Self::Cod => "COD",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        [Self::Online, Self::Cod]
            .into_iter()
            .find(|method| method.as_str() == raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(body: serde_json::Value) -> Result<Checkout, InvalidCheckout> {
        Checkout::parse(serde_json::from_value(body).unwrap())
    }

    fn address() -> serde_json::Value {
        json!({"recipient": " Ada Lovelace ", "line1": "12 St James's Square", "city": "London",
               "postalCode": "SW1Y 4JH", "country": "gb"})
    }

    #[test]
    fn an_empty_body_is_one_unit_with_nothing_chosen() {
        assert_eq!(parse(json!({})).unwrap(), Checkout::default());
        assert_eq!(Checkout::default().quantity, 1);
    }

    #[test]
    fn a_full_checkout_is_trimmed_and_kept() {
        let checkout =
            parse(json!({"quantity": 2, "address": address(), "paymentMethod": "COD"})).unwrap();
        assert_eq!(checkout.quantity, 2);
        assert_eq!(checkout.payment_method, Some(PaymentMethod::Cod));
        let address = checkout.address.unwrap();
        assert_eq!(address.recipient, "Ada Lovelace");
        assert_eq!(address.country, "GB");
        assert_eq!(address.line2, None);
        assert_eq!(Checkout::default().total_cents(500), 500);
        assert_eq!(
            parse(json!({"quantity": 3})).unwrap().total_cents(500),
            1_500
        );
    }

    #[test]
    fn quantities_outside_one_to_the_largest_limit_are_refused() {
        for quantity in [0, -1, NewSale::MAX_PER_USER + 1] {
            assert_eq!(
                parse(json!({ "quantity": quantity })).unwrap_err(),
                InvalidCheckout::Quantity
            );
        }
        assert!(parse(json!({"quantity": NewSale::MAX_PER_USER})).is_ok());
    }

    #[test]
    fn each_bad_address_field_is_named() {
        let cases = [
            ("recipient", json!("   ")),
            ("recipient", json!("x".repeat(101))),
            ("line1", json!("")),
            ("line1", json!("a\u{0}b")),
            ("line1", json!("Main St \u{202E}")),
            ("city", json!("")),
            ("postalCode", json!("12#45")),
            ("postalCode", json!("1234567890123")),
            ("country", json!("GBR")),
            ("country", json!("g1")),
            ("phone", json!("12")),
            ("phone", json!("call me")),
            ("line2", json!("y".repeat(201))),
        ];
        for (field, value) in cases {
            let mut body = address();
            body[field] = value;
            let err = parse(json!({ "address": body })).unwrap_err();
            assert!(
                err.to_string().starts_with(&format!("address.{field} ")),
                "{field}: {err}"
            );
        }
    }

    #[test]
    fn optional_fields_may_be_blank_and_unknown_fields_are_refused() {
        let mut body = address();
        body["line2"] = json!("  ");
        body["phone"] = json!("+44 20 7946 0958");
        let address = parse(json!({ "address": body })).unwrap().address.unwrap();
        assert_eq!(address.line2, None);
        assert_eq!(address.phone.as_deref(), Some("+44 20 7946 0958"));
        assert_eq!(
            parse(json!({"paymentMethod": "CARD"})).unwrap_err(),
            InvalidCheckout::PaymentMethod
        );
        assert!(serde_json::from_value::<CheckoutDto>(json!({"qty": 1})).is_err());
        let mut body = self::address();
        body["planet"] = json!("Earth");
        assert!(serde_json::from_value::<CheckoutDto>(json!({ "address": body })).is_err());
    }
}
