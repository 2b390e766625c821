//! A sale for a test, set up the way an operator does it: [`sale`] gives the body of a valid
//! sale, each setter changes one field of it, and [`SaleBuilder::create`] or
//! [`SaleBuilder::publish`] sends it as an operator, asserting each step succeeds.
//!
//! Times are relative to the moment [`sale`] was called, so that a test's start and end are
//! measured from one instant, as the operator's form does.

use super::Api;
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

/// A sale of 5 units at 19.99, one per buyer, open from a minute ago for an hour.
pub fn sale() -> SaleBuilder {
    let now = OffsetDateTime::now_utc();
    SaleBuilder {
        now,
        product: "p-1".to_owned(),
        title: "Flash sale".to_owned(),
        price_cents: 1999,
        stock: 5,
        per_user_limit: 1,
        starts_at: now - Duration::minutes(1),
        ends_at: now + Duration::hours(1),
        reservation_opens_at: None,
    }
}

/// What [`sale`] starts from, changed field by field.
#[derive(Clone, Debug)]
pub struct SaleBuilder {
    now: OffsetDateTime,
    product: String,
    title: String,
    price_cents: u64,
    stock: u32,
    per_user_limit: u32,
    starts_at: OffsetDateTime,
    ends_at: OffsetDateTime,
    /// Set when the sale sells only to the buyers who reserved it.
    reservation_opens_at: Option<OffsetDateTime>,
}

fn rfc3339(at: OffsetDateTime) -> String {
    at.format(&Rfc3339).unwrap()
}

impl SaleBuilder {
    pub fn product(mut self, product: &str) -> Self {
        product.clone_into(&mut self.product);
        self
    }

    pub fn title(mut self, title: &str) -> Self {
        title.clone_into(&mut self.title);
        self
    }

    pub fn price_cents(mut self, price_cents: u64) -> Self {
        self.price_cents = price_cents;
        self
    }

    pub fn stock(mut self, stock: u32) -> Self {
        self.stock = stock;
        self
    }

    pub fn per_user_limit(mut self, per_user_limit: u32) -> Self {
        self.per_user_limit = per_user_limit;
        self
    }

    /// Opens `from_now` after [`sale`] was called (before it when negative).
    pub fn starts_in(mut self, from_now: Duration) -> Self {
        self.starts_at = self.now + from_now;
        self
    }

    pub fn starts_at(mut self, at: OffsetDateTime) -> Self {
        self.starts_at = at;
        self
    }

    /// Ends `from_now` after [`sale`] was called.
    pub fn ends_in(mut self, from_now: Duration) -> Self {
        self.ends_at = self.now + from_now;
        self
    }

    pub fn ends_at(mut self, at: OffsetDateTime) -> Self {
        self.ends_at = at;
        self
    }

    /// Sells only to the buyers who reserved it, reservations opening `from_now` after
    /// [`sale`] was called.
    pub fn reservation_required(mut self, opens_in: Duration) -> Self {
        self.reservation_opens_at = Some(self.now + opens_in);
        self
    }

    /// The body of the create route.
    pub fn body(&self) -> Value {
        let mut body = json!({
            "productId": self.product,
            "title": self.title,
            "priceCents": self.price_cents,
            "stock": self.stock,
            "perUserLimit": self.per_user_limit,
            "startsAt": rfc3339(self.starts_at),
            "endsAt": rfc3339(self.ends_at),
        });
        if let Some(opens_at) = self.reservation_opens_at {
            body["reservationRequired"] = json!(true);
            body["reservationOpensAt"] = json!(rfc3339(opens_at));
        }
        body
    }

    /// Creates the sale as `operator`, a draft; answers its id.
    pub async fn create(&self, operator: &Api) -> String {
        let (status, sale) = operator
            .call("POST", "/seckill/activities", Some(self.body()))
            .await;
        assert_eq!(status, 201, "{sale}");
        sale["id"].as_str().unwrap().to_owned()
    }

    /// Creates the sale as `operator` and publishes it; answers its id.
    pub async fn publish(&self, operator: &Api) -> String {
        let id = self.create(operator).await;
        let (status, body) = operator
            .call("POST", &format!("/seckill/activities/{id}/publish"), None)
            .await;
        assert_eq!(status, 200, "{body}");
        id
    }
}
