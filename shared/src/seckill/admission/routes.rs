//! HTTP entry point of the order route, `POST /seckill/activities/{id}/orders`: a buyer's
//! attempt admitted by the Redis script (never DynamoDB), answered `202 PENDING` with its
//! order id, or refused with the contract's code.

use crate::auth::Caller;
use crate::clock::epoch_ms;
use crate::config::{ConfigError, Env};
use crate::error_code::ErrorCode;
use crate::http::{ApiError, json, parse_body, record_id};
use crate::ids::{OrderId, SaleId};
use crate::seckill::admission::checkout::{Checkout, CheckoutDto};
use crate::seckill::admission::{
    self, Admission, OrderKey, OrderPublisher, PlaceOrderError, Reservation,
};
use crate::seckill::sale::routes::path_sale;
use lambda_http::http::{HeaderValue, StatusCode};
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use time::OffsetDateTime;

/// What the order route needs, built once at cold start.
pub struct OrderRoute<'a> {
    pub admission: &'a dyn Admission,
    pub publisher: &'a dyn OrderPublisher,
    /// `ORDER_RATE_LIMIT_PER_SECOND`: attempts per user per second, over every sale.
    pub rate_limit_per_second: u32,
}

/// `ORDER_RATE_LIMIT_PER_SECOND`, 5 when unset.
pub fn rate_limit_from_env(env: &Env) -> Result<u32, ConfigError> {
    let limit = env.parsed_or("ORDER_RATE_LIMIT_PER_SECOND", 5u32)?;
    if limit == 0 {
        return Err(ConfigError::Invalid {
            name: "ORDER_RATE_LIMIT_PER_SECOND".to_owned(),
            reason: "must be at least 1".to_owned(),
        });
    }
    Ok(limit)
}

impl From<PlaceOrderError> for ApiError {
    fn from(err: PlaceOrderError) -> Self {
        let message = err.to_string();
        match err {
            PlaceOrderError::UnknownSale => ApiError::not_found(message),
            PlaceOrderError::NotStarted => ApiError::conflict(ErrorCode::NotStarted, message),
            PlaceOrderError::Ended => ApiError::conflict(ErrorCode::Ended, message),
            PlaceOrderError::NotReserved => ApiError::conflict(ErrorCode::NotReserved, message),
            PlaceOrderError::LimitReached { .. } => {
                ApiError::conflict(ErrorCode::LimitReached, message)
            }
            PlaceOrderError::SoldOut => ApiError::conflict(ErrorCode::SoldOut, message),
            PlaceOrderError::NotEnoughStock { .. } => {
                ApiError::conflict(ErrorCode::NotEnoughStock, message)
            }
            PlaceOrderError::KeyReused => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::IdempotencyKeyReused,
                message,
            ),
            PlaceOrderError::RateLimited => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::RateLimited,
                message,
            ),
            PlaceOrderError::Unavailable(_) => ApiError::unavailable(ErrorCode::Retry, message),
            PlaceOrderError::Admission(err) => {
                // Redis, the admission store, failing or unreachable (restarting, failing
                // over): the buyer was told nothing, and a retry may succeed. The cause is
                // logged, never shown.
                tracing::error!(error = ?anyhow::Error::from(err), "the admission store failed");
                ApiError::unavailable(
                    ErrorCode::Retry,
                    "the sale is briefly unavailable, please retry",
                )
            }
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AcceptedBody<'a> {
    order_id: &'a OrderId,
    status: &'static str,
}

/// The order route's optional body: none (or blank) is one unit with nothing chosen.
fn checkout(request: &Request) -> Result<Checkout, ApiError> {
    if request.body().as_ref().iter().all(u8::is_ascii_whitespace) {
        return Ok(Checkout::default());
    }
    let dto: CheckoutDto = parse_body(request)?;
    Checkout::parse(dto).map_err(|err| ApiError::bad_request(err.to_string()))
}

/// The header naming one order attempt, as payment APIs do.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";
/// Set on an answer that repeats an earlier attempt's (the same `Idempotency-Key`).
pub const IDEMPOTENT_REPLAYED: &str = "idempotent-replayed";

/// The request's `Idempotency-Key` for this sale and checkout, if it has one; a malformed one
/// (or more than one) is a 400.
fn order_key(
    request: &Request,
    sale_id: &SaleId,
    checkout: &Checkout,
) -> Result<Option<OrderKey>, ApiError> {
    let mut values = request.headers().get_all(IDEMPOTENCY_KEY).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .filter(|_| values.next().is_none())
        .and_then(|key| OrderKey::new(key, sale_id, checkout))
        .map(Some)
        .ok_or_else(|| {
            ApiError::bad_request(
                "Idempotency-Key must be one header of 1 to 128 characters of letters, digits, \
                 '-', '_' or '.'",
            )
        })
}

/// `POST /seckill/activities/{id}/orders` (user): reserves the order's units (optional body
/// `{quantity, address, paymentMethod}`, [`Checkout`]) and queues the order;
/// `202 {orderId, status: "PENDING"}`, the order id naming the sale ([`OrderId`]).
///
/// With an `Idempotency-Key` header, an attempt that admitted an order binds the key to its
/// request for 24 hours: a retry of it (same buyer, key, sale and body) answers the same `202`
/// with `Idempotent-Replayed: true` and reserves nothing, even while the first attempt is still
/// under way (the retry does not wait for it: the reservation and the key are one atomic step,
/// and the retry sends the order's event again if it is still pending, which the consumer takes
/// once); the same key with another sale or body is a 422 `IDEMPOTENCY_KEY_REUSED`. An attempt
/// that reserved nothing (refused, or given up after a failed send) binds nothing: its retry is
/// judged again.
pub async fn place_order(
    route: &OrderRoute<'_>,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    let caller = Caller::from_request(&request)?;
    let sale_id = path_sale(&request)?;
    let checkout = checkout(&request)?;
    let idempotency = order_key(&request, &sale_id, &checkout)?;
    let now = OffsetDateTime::now_utc();
    let order_id = OrderId::generate(&sale_id);
    record_id("order", &order_id);
    let reservation = Reservation {
        order_id,
        sale_id,
        user_id: caller.user_id,
        checkout,
        now_ms: epoch_ms(now),
        rate_limit_per_second: route.rate_limit_per_second,
        idempotency,
    };
    let placed = admission::place_order(
        route.admission,
        route.publisher,
        &reservation,
        crate::clock::format(now),
    )
    .await?;
    if placed.replayed {
        record_id("order", &placed.order_id);
    }
    let mut response = json(
        StatusCode::ACCEPTED,
        &AcceptedBody {
            order_id: &placed.order_id,
            status: "PENDING",
        },
    );
    if placed.replayed {
        response
            .headers_mut()
            .insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::PaymentMethod;
    use crate::seckill::admission::fake::{MemoryAdmission, MemoryPublisher};
    use crate::seckill::admission::{AdmissionError, Verdict};
    use crate::testing::{answer, api_request, assert_refused, claims_of, logged};
    use lambda_http::RequestExt;
    use serde_json::{Value, json};
    use std::collections::HashMap;
    use std::sync::atomic::Ordering;

    fn with_id(request: Request, id: &str) -> Request {
        request.with_path_parameters(HashMap::from([("id".to_owned(), id.to_owned())]))
    }

    #[tokio::test]
    async fn an_order_is_logged_with_its_buyer_sale_and_order_ids() {
        let (admission, publisher) = (MemoryAdmission::default(), MemoryPublisher::default());
        let sale = SaleId::generate();
        let now = epoch_ms(OffsetDateTime::now_utc());
        let open = (now - 1_000, now + 60_000, 1, 500, 1);
        admission.sales.lock().unwrap().insert(sale.clone(), open);
        let route = OrderRoute {
            admission: &admission,
            publisher: &publisher,
            rate_limit_per_second: 5,
        };
        let handler = |request| place_order(&route, request);
        let request = with_id(
            api_request("POST", "/o", "", claims_of("ann")),
            sale.as_str(),
        );
        let (response, log) = logged(async { crate::http::answer(&handler, request).await }).await;
        let (status, body) = answer(Ok(response));
        assert_eq!(status, 202, "{body}");
        let ids = format!(
            "request{{caller=ann sale={sale} order={}}}",
            body["orderId"]
        );
        assert!(log.contains(&ids.replace('"', "")), "{log}");
    }

    #[tokio::test]
    async fn orders_are_accepted_then_refused_with_the_contract_codes() {
        let admission = MemoryAdmission::default();
        let publisher = MemoryPublisher::default();
        let sale = SaleId::generate();
        let now = epoch_ms(OffsetDateTime::now_utc());
        admission
            .sales
            .lock()
            .unwrap()
            .insert(sale.clone(), (now - 1_000, now + 60_000, 1, 500, 1));
        let route = OrderRoute {
            admission: &admission,
            publisher: &publisher,
            rate_limit_per_second: 5,
        };
        let order =
            |who: &str, id: &str| with_id(api_request("POST", "/o", "", claims_of(who)), id);
        let (status, body) = answer(place_order(&route, order("ann", sale.as_str())).await);
        assert_eq!(status, 202, "{body}");
        assert_eq!(body["status"], "PENDING");
        let order_id = OrderId::parse(body["orderId"].as_str().unwrap()).unwrap();
        assert_eq!(order_id.sale_id(), &sale);
        assert_eq!(
            publisher.sent.lock().unwrap()[0].payload.order_id,
            body["orderId"].as_str().unwrap()
        );
        let (status, body) = answer(place_order(&route, order("ann", sale.as_str())).await);
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (409, Some("LIMIT_REACHED"))
        );
        let (status, body) = answer(place_order(&route, order("bob", sale.as_str())).await);
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (409, Some("SOLD_OUT"))
        );
        let unknown = SaleId::generate();
        assert_eq!(
            answer(place_order(&route, order("bob", unknown.as_str())).await).0,
            404
        );
        // Attempts on an unknown sale count too: dan's sixth in the second is a 429.
        for _ in 0..5 {
            assert_eq!(
                answer(place_order(&route, order("dan", unknown.as_str())).await).0,
                404
            );
        }
        let (status, body) = answer(place_order(&route, order("dan", sale.as_str())).await);
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (429, Some("RATE_LIMITED"))
        );

        admission.sales.lock().unwrap().get_mut(&sale).unwrap().4 = 1;
        publisher.fail.store(true, Ordering::SeqCst);
        let (status, body) = answer(place_order(&route, order("cid", sale.as_str())).await);
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (503, Some("RETRY"))
        );
        assert_eq!(admission.stock(&sale), 1);
    }

    /// Redis unreachable, as while it restarts.
    struct DownAdmission;

    #[async_trait::async_trait]
    impl Admission for DownAdmission {
        async fn reserve(&self, _: &Reservation) -> Result<Verdict, AdmissionError> {
            Err(AdmissionError(anyhow::anyhow!("broken pipe")))
        }

        async fn release(
            &self,
            _: &SaleId,
            _: &OrderId,
            _: Option<&crate::seckill::admission::Holder>,
        ) -> Result<bool, AdmissionError> {
            Err(AdmissionError(anyhow::anyhow!("broken pipe")))
        }
    }

    #[tokio::test]
    async fn an_order_while_redis_is_down_is_a_503_to_retry_that_hides_the_cause() {
        let publisher = MemoryPublisher::default();
        let route = OrderRoute {
            admission: &DownAdmission,
            publisher: &publisher,
            rate_limit_per_second: 5,
        };
        let sale = SaleId::generate();
        let request = with_id(
            api_request("POST", "/o", "", claims_of("ann")),
            sale.as_str(),
        );
        let (status, body) = answer(place_order(&route, request).await);
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (503, Some("RETRY"))
        );
        assert!(!body.to_string().contains("pipe"), "{body}");
        assert!(publisher.sent.lock().unwrap().is_empty());
    }

    #[test]
    fn the_rate_limit_defaults_to_five_and_refuses_zero() {
        assert_eq!(rate_limit_from_env(&Env::from_pairs([])), Ok(5));
        assert_eq!(
            rate_limit_from_env(&Env::from_pairs([("ORDER_RATE_LIMIT_PER_SECOND", "50")])),
            Ok(50)
        );
        assert!(
            rate_limit_from_env(&Env::from_pairs([("ORDER_RATE_LIMIT_PER_SECOND", "0")])).is_err()
        );
    }

    #[tokio::test]
    async fn a_checkout_body_orders_its_quantity_and_bad_fields_are_400_naming_them() {
        let admission = MemoryAdmission::default();
        let publisher = MemoryPublisher::default();
        let sale = SaleId::generate();
        let now = epoch_ms(OffsetDateTime::now_utc());
        let open = (now - 1_000, now + 60_000, 3, 500, 4);
        admission.sales.lock().unwrap().insert(sale.clone(), open);
        let route = OrderRoute {
            admission: &admission,
            publisher: &publisher,
            rate_limit_per_second: 100,
        };
        let order = |who: &str, body: Value| {
            let request = api_request("POST", "/o", &body.to_string(), claims_of(who));
            place_order(&route, with_id(request, sale.as_str()))
        };
        let address = json!({"recipient": "Ann", "line1": "1 Rue de la Paix", "city": "Paris",
                             "postalCode": "75002", "country": "fr"});

        let refused = [
            (json!({"quantity": 0}), "quantity must be"),
            (json!({"quantity": "2"}), "invalid request body"),
            (json!({"paymentMethod": "CARD"}), "paymentMethod must be"),
            (
                json!({"address": {"recipient": "Ann"}}),
                "invalid request body",
            ),
            (
                json!({"address": {"recipient": "Ann", "line1": "1", "city": "P",
                                 "postalCode": "75002", "country": "FRA"}}),
                "address.country",
            ),
            (json!({"colour": "red"}), "invalid request body"),
        ];
        for (body, message) in refused {
            let (status, reply) = answer(order("ann", body.clone()).await);
            assert_eq!(status, 400, "{body}: {reply}");
            assert!(
                reply["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains(message),
                "{reply}"
            );
        }
        assert!(publisher.sent.lock().unwrap().is_empty());
        assert_eq!(admission.stock(&sale), 4);

        let body = json!({"quantity": 2, "address": address, "paymentMethod": "COD"});
        let (status, reply) = answer(order("ann", body).await);
        assert_eq!(status, 202, "{reply}");
        let sent = publisher.sent.lock().unwrap()[0].payload.clone();
        assert_eq!(
            (sent.quantity, sent.payment_method),
            (2, Some(PaymentMethod::Cod))
        );
        assert_eq!(sent.address.unwrap().country, "FR");
        assert_eq!(admission.stock(&sale), 2);

        // ann may buy 1 more; bob asks for 3 of the 2 left.
        let (status, reply) = answer(order("ann", json!({"quantity": 2})).await);
        assert_eq!(
            (status, reply["error"]["code"].as_str()),
            (409, Some("LIMIT_REACHED"))
        );
        assert_eq!(
            reply["error"]["message"],
            "you may buy 1 more unit of this sale"
        );
        let (status, reply) = answer(order("bob", json!({"quantity": 3})).await);
        assert_eq!(
            (status, reply["error"]["code"].as_str()),
            (409, Some("NOT_ENOUGH_STOCK"))
        );
        assert_eq!(reply["error"]["message"], "only 2 units are left");
        assert_eq!(admission.stock(&sale), 2);
    }

    fn keyed(who: &str, sale: &SaleId, key: &str, body: &str) -> Request {
        let mut request = with_id(
            api_request("POST", "/o", body, claims_of(who)),
            sale.as_str(),
        );
        request
            .headers_mut()
            .insert(IDEMPOTENCY_KEY, HeaderValue::from_str(key).unwrap());
        request
    }

    /// An open sale with `stock` units, at most `limit` per buyer.
    fn open_sale(admission: &MemoryAdmission, stock: i64, limit: u32) -> SaleId {
        let sale = SaleId::generate();
        let now = epoch_ms(OffsetDateTime::now_utc());
        let open = (now - 1_000, now + 60_000, limit, 500, stock);
        admission.sales.lock().unwrap().insert(sale.clone(), open);
        sale
    }

    #[tokio::test]
    async fn a_retry_with_the_same_idempotency_key_answers_the_first_order_and_reserves_nothing() {
        let (admission, publisher) = (MemoryAdmission::default(), MemoryPublisher::default());
        let sale = open_sale(&admission, 10, 3);
        let other = open_sale(&admission, 10, 3);
        let route = OrderRoute {
            admission: &admission,
            publisher: &publisher,
            rate_limit_per_second: 100,
        };
        let body = r#"{"quantity": 1}"#;
        let response = place_order(&route, keyed("ann", &sale, "k-1", body))
            .await
            .unwrap();
        assert!(response.headers().get(IDEMPOTENT_REPLAYED).is_none());
        let (status, first) = answer(Ok(response));
        assert_eq!(status, 202, "{first}");

        // The answer was lost; the retry gets the same answer, marked as a replay, and the
        // stock is taken once (without the key, ann could have reserved 3).
        for _ in 0..2 {
            let response = place_order(&route, keyed("ann", &sale, "k-1", body))
                .await
                .unwrap();
            assert_eq!(response.headers()[IDEMPOTENT_REPLAYED], "true");
            assert_eq!(answer(Ok(response)), (202, first.clone()));
        }
        assert_eq!(admission.stock(&sale), 9);
        // Still pending: the retries sent the order's event again, the same order each time.
        let sent: Vec<String> = (publisher.sent.lock().unwrap().iter())
            .map(|event| event.payload.order_id.clone())
            .collect();
        assert_eq!(sent, [first["orderId"].as_str().unwrap(); 3]);

        // The same key with another body or on another sale: refused, nothing reserved.
        for request in [
            keyed("ann", &sale, "k-1", r#"{"quantity": 2}"#),
            keyed(
                "ann",
                &sale,
                "k-1",
                r#"{"quantity": 1, "paymentMethod": "COD"}"#,
            ),
            keyed("ann", &other, "k-1", body),
        ] {
            assert_refused(
                &answer(place_order(&route, request).await),
                422,
                "IDEMPOTENCY_KEY_REUSED",
                "another order request",
            );
        }
        assert_eq!((admission.stock(&sale), admission.stock(&other)), (9, 10));
        // Keys are per buyer: bob's k-1 is his own, and a new key is a new order.
        let (status, bobs) = answer(place_order(&route, keyed("bob", &sale, "k-1", body)).await);
        assert_eq!(status, 202);
        assert_ne!(bobs["orderId"], first["orderId"]);
        let (status, second) = answer(place_order(&route, keyed("ann", &sale, "k-2", body)).await);
        assert_eq!(status, 202);
        assert_ne!(second["orderId"], first["orderId"]);
        assert_eq!(admission.stock(&sale), 7);
    }

    #[tokio::test]
    async fn a_malformed_idempotency_key_is_a_400_that_names_it() {
        let (admission, publisher) = (MemoryAdmission::default(), MemoryPublisher::default());
        let sale = open_sale(&admission, 10, 3);
        let route = OrderRoute {
            admission: &admission,
            publisher: &publisher,
            rate_limit_per_second: 100,
        };
        let long = "k".repeat(129);
        for key in ["", "a b", "a#b", "a:b", long.as_str()] {
            let refused = answer(place_order(&route, keyed("ann", &sale, key, "")).await);
            assert_refused(&refused, 400, "BAD_REQUEST", "Idempotency-Key");
        }
        let mut twice = keyed("ann", &sale, "k-1", "");
        (twice.headers_mut()).append(IDEMPOTENCY_KEY, HeaderValue::from_static("k-2"));
        let refused = answer(place_order(&route, twice).await);
        assert_refused(&refused, 400, "BAD_REQUEST", "Idempotency-Key");
        assert_eq!(admission.stock(&sale), 10);
        assert_eq!(
            answer(place_order(&route, keyed("ann", &sale, &"k".repeat(128), "")).await).0,
            202
        );
    }

    #[tokio::test]
    async fn a_retry_after_a_crash_before_the_send_sends_the_first_orders_event_once() {
        let (admission, publisher) = (MemoryAdmission::default(), MemoryPublisher::default());
        let sale = open_sale(&admission, 10, 3);
        let route = OrderRoute {
            admission: &admission,
            publisher: &publisher,
            rate_limit_per_second: 100,
        };
        // The first attempt reserved (key recorded in the same step), then its function died
        // before sending the event.
        let checkout = Checkout::default();
        let first = Reservation {
            sale_id: sale.clone(),
            user_id: crate::ids::UserId::parse("ann").unwrap(),
            order_id: OrderId::generate(&sale),
            checkout: checkout.clone(),
            now_ms: epoch_ms(OffsetDateTime::now_utc()) - 500,
            rate_limit_per_second: 100,
            idempotency: OrderKey::new("k-1", &sale, &checkout),
        };
        assert!(matches!(
            admission.reserve(&first).await.unwrap(),
            Verdict::Reserved { .. }
        ));
        let (status, body) = answer(place_order(&route, keyed("ann", &sale, "k-1", "")).await);
        assert_eq!(
            (status, body["orderId"].as_str()),
            (202, Some(first.order_id.as_str()))
        );
        let sent = publisher.sent.lock().unwrap().clone();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].payload.order_id, first.order_id.as_str());
        assert_eq!(sent[0].payload.reserved_at_ms, first.now_ms);
        assert_eq!(sent[0].payload.price_cents, 500);
        assert_eq!(admission.stock(&sale), 9);
    }

    #[tokio::test]
    async fn a_key_whose_attempt_failed_to_send_is_free_for_the_retry() {
        let (admission, publisher) = (MemoryAdmission::default(), MemoryPublisher::default());
        let sale = open_sale(&admission, 1, 1);
        let route = OrderRoute {
            admission: &admission,
            publisher: &publisher,
            rate_limit_per_second: 100,
        };
        publisher.fail.store(true, Ordering::SeqCst);
        let (status, _) = answer(place_order(&route, keyed("ann", &sale, "k-1", "")).await);
        assert_eq!(status, 503);
        assert_eq!(admission.stock(&sale), 1);
        publisher.fail.store(false, Ordering::SeqCst);
        let (status, body) = answer(place_order(&route, keyed("ann", &sale, "k-1", "")).await);
        assert_eq!(status, 202, "{body}");
        assert_eq!(admission.stock(&sale), 0);
        assert_eq!(publisher.sent.lock().unwrap().len(), 1);
    }
}
