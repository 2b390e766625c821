//! Domain events on the queues: versioned JSON envelopes
//! `{"type", "version", "id", "occurredAt", "payload"}`.
//!
//! Every event of both products is defined here, and nowhere else: its name, its payload
//! and how a consumer parses it. The product modules produce and consume them; a newcomer
//! looking for what goes over a queue reads this file.
//!
//! - Social: `UserFollowed`, `UserUnfollowed` ([`SocialEvent`]), written to the outbox by a
//!   follow or an unfollow and relayed to the consumers' queues.
//! - Flash sale: `SalePageRequested` (publish-sale to the page writer), `OrderPlaced` (the
//!   order route to the order consumer) and `PaymentDue` (the
//!   order consumer to the payment timeout, delayed by the payment window).
//!
//! A consumer parses an envelope into a known event or refuses it with a reason; a refused
//! message can never succeed, so it belongs in the dead-letter queue, not in a retry loop.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The envelope of every event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope<P> {
    #[serde(rename = "type")]
    pub kind: String,
    pub version: u32,
    /// Unique per event; consumers use it to apply an event once.
    pub id: String,
    /// RFC 3339 UTC.
    pub occurred_at: String,
    pub payload: P,
}

/// Who followed or unfollowed whom.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FollowPayload {
    pub follower_id: String,
    pub followee_id: String,
}

pub const USER_FOLLOWED: &str = "UserFollowed";
pub const USER_UNFOLLOWED: &str = "UserUnfollowed";

/// The social events, as consumers see them.
#[derive(Clone, Debug, PartialEq)]
pub enum SocialEvent {
    UserFollowed(Envelope<FollowPayload>),
    UserUnfollowed(Envelope<FollowPayload>),
}

pub const SALE_PAGE_REQUESTED: &str = "SalePageRequested";

/// Retired: `SalePageRendered` v1 carried the page's HTML, which the page writer stored as it
/// came, so whoever could send to the queue published markup on the shop's origin. The writer
/// refuses it (to the dead-letter queue, where its alarm shows it): it renders every page
/// itself, and publishing the sale again repairs a page whose v1 message was refused.
pub const SALE_PAGE_RENDERED: &str = "SalePageRendered";

/// `SalePageRequested` v1, sent by publish-sale: which sale's static page to write. Only the
/// id: the page writer reads the sale from the commerce table and renders the page itself,
/// and only for a published sale. A sale never changes once published, so every render of it
/// is the same page, and the order in which they are stored does not matter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SalePageRequested {
    pub sale_id: String,
}

pub const ORDER_PLACED: &str = "OrderPlaced";
pub const PAYMENT_DUE: &str = "PaymentDue";

/// A shipping address in `OrderPlaced` v2, as the buyer typed it (trimmed). The wire's own
/// type: the checkout converts to and from it (`seckill::admission::checkout`), so that a change to the
/// domain's address cannot change a queue message's schema unnoticed.
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

/// How the buyer chose to pay, in `OrderPlaced` v2 (`ONLINE`, `COD`); converted to and from
/// `seckill::admission::checkout::PaymentMethod`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PaymentMethod {
    Online,
    Cod,
}

/// `OrderPlaced` v2, sent by the order route after the script reserved the order's units.
///
/// v2 added `quantity`, `address` and `paymentMethod`; a v1 event (still in a queue when
/// v2's route was deployed) reads as one unit with nothing chosen ([`OrderPlacedV1`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrderPlaced {
    pub order_id: String,
    pub sale_id: String,
    pub user_id: String,
    /// The unit price.
    pub price_cents: u64,
    /// Epoch milliseconds, as the script recorded the reservation.
    pub reserved_at_ms: i64,
    /// Units reserved, at least 1.
    pub quantity: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<Address>,
    /// When chosen at checkout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_method: Option<PaymentMethod>,
}

/// `OrderPlaced` v1: one unit, nothing chosen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrderPlacedV1 {
    pub order_id: String,
    pub sale_id: String,
    pub user_id: String,
    pub price_cents: u64,
    pub reserved_at_ms: i64,
}

impl From<OrderPlacedV1> for OrderPlaced {
    fn from(v1: OrderPlacedV1) -> Self {
        Self {
            order_id: v1.order_id,
            sale_id: v1.sale_id,
            user_id: v1.user_id,
            price_cents: v1.price_cents,
            reserved_at_ms: v1.reserved_at_ms,
            quantity: 1,
            address: None,
            payment_method: None,
        }
    }
}

/// An `OrderPlaced` message of either version, as v2.
pub fn parse_order_placed(body: &str) -> Result<Envelope<OrderPlaced>, EventError> {
    let envelope = Envelope::parse(body)?;
    match (envelope.kind.as_str(), envelope.version) {
        (ORDER_PLACED, 1) => {
            let v1: Envelope<OrderPlacedV1> = envelope.typed()?;
            Ok(Envelope {
                kind: v1.kind,
                version: v1.version,
                id: v1.id,
                occurred_at: v1.occurred_at,
                payload: v1.payload.into(),
            })
        }
        (ORDER_PLACED, 2) => envelope.typed(),
        _ => Err(EventError::Unknown {
            kind: envelope.kind,
            version: envelope.version,
        }),
    }
}

/// `PaymentDue` v1, sent with the payment window as its delay when an order is confirmed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PaymentDue {
    pub order_id: String,
    pub sale_id: String,
}

/// Why a message is not an event this version understands.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("the message is not a JSON event envelope")]
    NotAnEnvelope(#[source] serde_json::Error),
    #[error("unknown event {kind} version {version}")]
    Unknown { kind: String, version: u32 },
    #[error("bad payload of {kind}")]
    BadPayload {
        kind: String,
        #[source]
        source: serde_json::Error,
    },
}

impl Envelope<Value> {
    /// Any envelope, its payload not yet typed.
    pub fn parse(body: &str) -> Result<Self, EventError> {
        serde_json::from_str(body).map_err(EventError::NotAnEnvelope)
    }

    /// The same envelope with its payload as `P`.
    pub fn typed<P: DeserializeOwned>(self) -> Result<Envelope<P>, EventError> {
        let payload =
            serde_json::from_value(self.payload).map_err(|source| EventError::BadPayload {
                kind: self.kind.clone(),
                source,
            })?;
        Ok(Envelope {
            kind: self.kind,
            version: self.version,
            id: self.id,
            occurred_at: self.occurred_at,
            payload,
        })
    }
}

/// The envelope of the event `kind` version 1, its payload as `P`; any other event is
/// [`EventError::Unknown`].
pub fn parse_v1<P: DeserializeOwned>(body: &str, kind: &str) -> Result<Envelope<P>, EventError> {
    let envelope = Envelope::parse(body)?;
    if envelope.kind != kind || envelope.version != 1 {
        return Err(EventError::Unknown {
            kind: envelope.kind,
            version: envelope.version,
        });
    }
    envelope.typed()
}

impl SocialEvent {
    pub fn parse(body: &str) -> Result<Self, EventError> {
        let envelope = Envelope::parse(body)?;
        match (envelope.kind.as_str(), envelope.version) {
            (USER_FOLLOWED, 1) => Ok(Self::UserFollowed(envelope.typed()?)),
            (USER_UNFOLLOWED, 1) => Ok(Self::UserUnfollowed(envelope.typed()?)),
            _ => Err(EventError::Unknown {
                kind: envelope.kind,
                version: envelope.version,
            }),
        }
    }

    pub fn id(&self) -> &str {
        match self {
            Self::UserFollowed(e) | Self::UserUnfollowed(e) => &e.id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_follow_event_round_trips() {
        let envelope = Envelope {
            kind: USER_FOLLOWED.to_owned(),
            version: 1,
            id: "e1".to_owned(),
            occurred_at: "2026-11-30T18:00:00Z".to_owned(),
            payload: FollowPayload {
                follower_id: "a".to_owned(),
                followee_id: "b".to_owned(),
            },
        };
        let body = serde_json::to_string(&envelope).unwrap();
        assert!(body.contains(r#""type":"UserFollowed""#), "{body}");
        assert!(body.contains(r#""occurredAt""#), "{body}");
        assert_eq!(
            SocialEvent::parse(&body).unwrap(),
            SocialEvent::UserFollowed(envelope)
        );
    }

    #[test]
    fn unknown_versions_and_garbage_are_refused() {
        let v2 = r#"{"type":"UserFollowed","version":2,"id":"e","occurredAt":"t","payload":{}}"#;
        assert!(matches!(
            SocialEvent::parse(v2),
            Err(EventError::Unknown { version: 2, .. })
        ));
        assert!(matches!(
            SocialEvent::parse("poison"),
            Err(EventError::NotAnEnvelope(_))
        ));
        let bad =
            r#"{"type":"UserFollowed","version":1,"id":"e","occurredAt":"t","payload":{"x":1}}"#;
        assert!(matches!(
            SocialEvent::parse(bad),
            Err(EventError::BadPayload { .. })
        ));
    }

    #[test]
    fn an_order_placed_v1_reads_as_one_unit_and_v2_carries_the_checkout() {
        let v1 = r#"{"type":"OrderPlaced","version":1,"id":"e","occurredAt":"t","payload":
            {"orderId":"o","saleId":"s","userId":"u","priceCents":5,"reservedAtMs":7}}"#;
        let order = parse_order_placed(v1).unwrap().payload;
        assert_eq!(
            (order.quantity, order.address, order.payment_method),
            (1, None, None)
        );
        let v2 = r#"{"type":"OrderPlaced","version":2,"id":"e","occurredAt":"t","payload":
            {"orderId":"o","saleId":"s","userId":"u","priceCents":5,"reservedAtMs":7,
             "quantity":2,"paymentMethod":"COD","address":{"recipient":"A","line1":"L",
             "city":"C","postalCode":"P","country":"FR"}}}"#;
        let order = parse_order_placed(v2).unwrap().payload;
        assert_eq!(order.quantity, 2);
        assert_eq!(order.payment_method, Some(PaymentMethod::Cod));
        assert_eq!(order.address.unwrap().country, "FR");
        // v1 does not take v2's fields, v2 requires its quantity, and v3 is unknown.
        let v1_with_quantity =
            v1.replace(r#""reservedAtMs":7"#, r#""reservedAtMs":7,"quantity":2"#);
        assert!(parse_order_placed(&v1_with_quantity).is_err());
        assert!(parse_order_placed(&v1.replace(r#""version":1"#, r#""version":2"#)).is_err());
        assert!(matches!(
            parse_order_placed(&v1.replace(r#""version":1"#, r#""version":3"#)),
            Err(EventError::Unknown { version: 3, .. })
        ));
    }
}
