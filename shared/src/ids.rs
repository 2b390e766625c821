//! Identifiers, parsed once at the boundary so that the rest of the code can trust them: every
//! id rule of both products lives here (users, sales, orders, products).
//!
//! Ids end up inside DynamoDB keys such as `USER#<id>` and Redis keys such as `sale:{<id>}`,
//! so the characters that the key designs use as separators are refused here
//! ([`is_key_safe`]).

use std::fmt;

/// A user, as named by the identity provider's `sub` claim.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct UserId(String);

/// Why a string is not a valid id.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{what} must be 1 to {max} characters of letters, digits, '-', '_' or '.'")]
pub struct InvalidId {
    pub what: &'static str,
    pub max: usize,
}

const MAX_ID: usize = 128;

/// 1 to `max` characters of letters, digits, '-', '_' or '.': never a key separator.
pub fn is_key_safe(raw: &str, max: usize) -> bool {
    !raw.is_empty()
        && raw.len() <= max
        && raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// An id that may go into a key (at most 128 characters, see [`is_key_safe`]): what a payment
/// id must be, and what an order id in a path must be not to be a malformed request (a
/// key-safe one that is no [`OrderId`] names no order).
pub fn valid_id(raw: &str) -> bool {
    is_key_safe(raw, MAX_ID)
}

impl UserId {
    pub fn parse(raw: &str) -> Result<Self, InvalidId> {
        if valid_id(raw) {
            Ok(Self(raw.to_owned()))
        } else {
            Err(InvalidId {
                what: "user id",
                max: MAX_ID,
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A sale's id: a UUID (v7 when we mint it), in its hyphenated lowercase form.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct SaleId(String);

/// Why a string is not a sale id.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a sale id is a UUID")]
pub struct InvalidSaleId;

impl SaleId {
    /// A new, time-ordered id.
    pub fn generate() -> Self {
        Self(uuid::Uuid::now_v7().hyphenated().to_string())
    }

    pub fn parse(raw: &str) -> Result<Self, InvalidSaleId> {
        let id = uuid::Uuid::try_parse(raw).map_err(|_| InvalidSaleId)?;
        Ok(Self(id.hyphenated().to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SaleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An order id as the order route mints it: `<saleId>.<uuid v7, simple form>`, so that the
/// order names its sale (whose Redis keys say who placed it while it is not materialized).
/// A sale id is a hyphenated lowercase UUID (hex digits and `-`), so the `.` cannot occur in
/// it; the whole (69 characters) is a [`valid_id`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OrderId {
    raw: String,
    sale_id: SaleId,
}

/// Why a string is not an order id of the form [`OrderId`] mints.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("an order id is <saleId>.<uuid>")]
pub struct InvalidOrderId;

impl OrderId {
    /// A new, time-ordered id of an order of `sale_id`.
    pub fn generate(sale_id: &SaleId) -> Self {
        Self {
            raw: format!("{sale_id}.{}", uuid::Uuid::now_v7().simple()),
            sale_id: sale_id.clone(),
        }
    }

    /// Only the canonical form [`Self::generate`] produces: one id, one spelling.
    pub fn parse(raw: &str) -> Result<Self, InvalidOrderId> {
        let (sale, rest) = raw.split_once('.').ok_or(InvalidOrderId)?;
        let sale_id = SaleId::parse(sale).map_err(|_| InvalidOrderId)?;
        let rest_id = uuid::Uuid::try_parse(rest).map_err(|_| InvalidOrderId)?;
        if sale_id.as_str() != sale || rest_id.simple().to_string() != rest {
            return Err(InvalidOrderId);
        }
        Ok(Self {
            raw: raw.to_owned(),
            sale_id,
        })
    }

    pub fn sale_id(&self) -> &SaleId {
        &self.sale_id
    }

    pub fn as_str(&self) -> &str {
        &self.raw
    }
}

impl fmt::Display for OrderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

/// A payment's id, as the pay route mints it (`pay_<uuid v7, simple form>`) or a provider
/// names it: a [`valid_id`], since it becomes part of keys (`REFUND#<paymentId>`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PaymentId(String);

impl PaymentId {
    /// A new, time-ordered id.
    pub fn generate() -> Self {
        Self(format!("pay_{}", uuid::Uuid::now_v7().simple()))
    }

    pub fn parse(raw: &str) -> Result<Self, InvalidId> {
        if valid_id(raw) {
            Ok(Self(raw.to_owned()))
        } else {
            Err(InvalidId {
                what: "paymentId",
                max: MAX_ID,
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for PaymentId {
    type Error = InvalidId;

    fn try_from(raw: String) -> Result<Self, InvalidId> {
        Self::parse(&raw)
    }
}

impl From<PaymentId> for String {
    fn from(id: PaymentId) -> Self {
        id.0
    }
}

impl fmt::Display for PaymentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl serde::Serialize for OrderId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.raw)
    }
}

impl<'de> serde::Deserialize<'de> for OrderId {
    /// Only the canonical form: a notice or a body naming another spelling is refused.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        Self::parse(&raw).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cognito_subs_and_local_names_are_user_ids() {
        for raw in ["3f1c2d9e-8b7a-4c1e-9f00-123456789abc", "alice", "user_42.b"] {
            assert_eq!(UserId::parse(raw).unwrap().as_str(), raw);
        }
    }

    #[test]
    fn key_separators_empty_and_overlong_ids_are_refused() {
        for raw in ["", "a#b", "a b", "über", &"x".repeat(129)] {
            assert!(UserId::parse(raw).is_err(), "{raw:?} should be refused");
        }
    }

    const S1: &str = "0190f0e2-1c2b-7a00-8000-000000000001";

    #[test]
    fn sale_ids_are_uuids() {
        let id = SaleId::generate();
        assert_eq!(SaleId::parse(id.as_str()).unwrap(), id);
        assert_eq!(
            SaleId::parse("0190F0E2-1C2B-7A00-8000-000000000001")
                .unwrap()
                .as_str(),
            "0190f0e2-1c2b-7a00-8000-000000000001"
        );
        for raw in ["", "s1", "SALE#x"] {
            assert_eq!(SaleId::parse(raw), Err(InvalidSaleId));
        }
    }

    #[test]
    fn payment_ids_are_key_safe_and_parsed_when_deserialized() {
        let id = PaymentId::generate();
        assert!(id.as_str().starts_with("pay_"), "{id}");
        assert_eq!(PaymentId::parse(id.as_str()).unwrap(), id);
        for raw in ["", "pay#1", "REFUND#x", "a b", &"p".repeat(129)] {
            assert!(PaymentId::parse(raw).is_err(), "{raw:?} should be refused");
            let json = serde_json::to_string(raw).unwrap();
            assert!(serde_json::from_str::<PaymentId>(&json).is_err(), "{raw:?}");
        }
        let parsed: PaymentId = serde_json::from_str(r#""pay_1""#).unwrap();
        assert_eq!(serde_json::to_string(&parsed).unwrap(), r#""pay_1""#);
    }

    #[test]
    fn an_order_id_deserializes_only_in_its_canonical_form() {
        let id = OrderId::generate(&SaleId::parse(S1).unwrap());
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, format!("\"{id}\""));
        assert_eq!(serde_json::from_str::<OrderId>(&json).unwrap(), id);
        for bad in [r#""o1""#, r#""a#b""#, r#""""#] {
            assert!(serde_json::from_str::<OrderId>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_order_id_names_its_sale_in_one_spelling_only() {
        let sale = SaleId::parse(S1).unwrap();
        let id = OrderId::generate(&sale);
        assert!(valid_id(id.as_str()), "{id}");
        let parsed = OrderId::parse(id.as_str()).unwrap();
        assert_eq!(parsed, id);
        assert_eq!(parsed.sale_id(), &sale);
        let rest = id.as_str().split_once('.').unwrap().1.to_owned();
        let upper = format!("{}.{rest}", S1.to_uppercase());
        let hyphenated = format!(
            "{S1}.{}",
            uuid::Uuid::try_parse(&rest).unwrap().hyphenated()
        );
        let bad: [&str; 9] = [
            "",
            "o1",
            S1,
            &format!("{S1}."),
            &format!("{S1}.nope"),
            &format!("{S1}.{rest}.x"),
            &format!("s1.{rest}"),
            &upper,
            &hyphenated,
        ];
        for bad in bad {
            assert_eq!(OrderId::parse(bad), Err(InvalidOrderId), "{bad}");
        }
    }
}
