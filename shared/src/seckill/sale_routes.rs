//! HTTP entry points of the sale routes: operators create and publish, buyers read and order.
//!
//! The buyer routes (`get_sale`, `place_order`) read only the cache and the admission store,
//! never DynamoDB.

use super::admission::{self, Admission, OrderKey, OrderPublisher, PlaceOrderError, Reservation};
use super::checkout::{Checkout, CheckoutDto};
use super::sale::{
    self, Lifecycle, NewSale, NewSaleDto, PublishError, Sale, SaleCache, SaleDetail, SaleState,
    SaleStore,
};
use super::sale_page::PageRequests;
use crate::auth::Caller;
use crate::clock::epoch_ms;
use crate::config::{ConfigError, Env};
use crate::http::{ApiError, json, parse_body, path_id, record_id};
use crate::ids::{OrderId, SaleId};
use lambda_http::http::{HeaderValue, StatusCode, header};
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use time::OffsetDateTime;

/// The `{id}` of the path.
pub(super) fn path_sale(request: &Request) -> Result<SaleId, ApiError> {
    path_id(request, "id", "sale", SaleId::parse)
}

fn rfc3339_of_ms(ms: i64) -> String {
    crate::clock::from_epoch_ms(ms)
        .map(crate::clock::format)
        .unwrap_or_default()
}

/// A sale as operators see it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct SaleBody<'a> {
    id: &'a SaleId,
    product_id: &'a str,
    title: &'a str,
    price_cents: u64,
    stock: u32,
    stock_remaining: u32,
    per_user_limit: u32,
    starts_at: String,
    ends_at: String,
    state: Lifecycle,
    created_at: &'a str,
}

pub(super) fn sale_body(sale: &Sale) -> SaleBody<'_> {
    SaleBody {
        id: &sale.id,
        product_id: &sale.product_id,
        title: &sale.title,
        price_cents: sale.price_cents,
        stock: sale.initial_stock,
        stock_remaining: sale.stock_remaining,
        per_user_limit: sale.per_user_limit,
        starts_at: crate::clock::format(sale.starts_at),
        ends_at: crate::clock::format(sale.ends_at),
        state: sale.state,
        created_at: &sale.created_at,
    }
}

/// `POST /seckill/activities` (admin): creates a draft sale; 201 with it.
pub async fn create_sale(
    store: &dyn SaleStore,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    Caller::from_request(&request)?.require_admin()?;
    let dto: NewSaleDto = parse_body(&request)?;
    let now = OffsetDateTime::now_utc();
    let new = NewSale::parse(dto, now).map_err(|err| ApiError::bad_request(err.to_string()))?;
    let sale = Sale::draft(SaleId::generate(), new, crate::clock::format(now));
    record_id("sale", &sale.id);
    store.create(&sale).await.map_err(ApiError::internal)?;
    Ok(json(StatusCode::CREATED, &sale_body(&sale)))
}

/// What the publish route needs, built once at cold start.
pub struct PublishRoute<'a> {
    pub store: &'a dyn SaleStore,
    pub cache: &'a dyn SaleCache,
    pub pages: &'a dyn PageRequests,
}

/// `POST /seckill/activities/{id}/publish` (admin): publishes, preheats and asks for the sale's
/// page at `/shop/sales/{id}` (the page writer renders it from the table); idempotent.
pub async fn publish_sale(
    route: &PublishRoute<'_>,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    Caller::from_request(&request)?.require_admin()?;
    let id = path_sale(&request)?;
    let now = crate::clock::now_rfc3339();
    match sale::publish(route.store, route.cache, route.pages, &id, &now).await {
        Ok(sale) => Ok(json(StatusCode::OK, &sale_body(&sale))),
        Err(err @ PublishError::NotFound(_)) => Err(ApiError::not_found(err.to_string())),
        Err(err @ PublishError::Ended(_)) => Err(ApiError::conflict("ENDED", err.to_string())),
        // The table or the cache failing: publishing again is how the operator retries.
        Err(PublishError::Store(err)) => Err(ApiError::store_unavailable(err)),
        Err(PublishError::Page(err)) => {
            tracing::error!(error = ?anyhow::Error::from(err), "the sale page was not written");
            Err(ApiError::unavailable(
                "RETRY",
                "the sale is published but its page could not be queued; publish it again",
            ))
        }
    }
}

/// A sale as buyers see it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DetailBody<'a> {
    id: &'a SaleId,
    product_id: &'a str,
    title: &'a str,
    price_cents: u64,
    per_user_limit: u32,
    starts_at: String,
    ends_at: String,
    stock: u32,
    stock_remaining: i64,
    state: SaleState,
    /// The server's clock when the answer was made, for the page's countdown.
    server_time: String,
}

fn detail_body(detail: &SaleDetail, now_ms: i64) -> DetailBody<'_> {
    DetailBody {
        id: &detail.id,
        product_id: &detail.product_id,
        title: &detail.title,
        price_cents: detail.price_cents,
        per_user_limit: detail.per_user_limit,
        starts_at: rfc3339_of_ms(detail.starts_at_ms),
        ends_at: rfc3339_of_ms(detail.ends_at_ms),
        stock: detail.stock,
        stock_remaining: detail.stock_remaining.max(0),
        state: detail.state(now_ms),
        server_time: rfc3339_of_ms(now_ms),
    }
}

/// How long a CDN or browser may reuse a detail page: short, since the stock is live.
pub const DETAIL_CACHE_CONTROL: &str = "public, max-age=1";

/// `GET /seckill/activities/{id}` (public): the published sale with its live stock and state,
/// from one Redis round trip.
pub async fn get_sale(cache: &dyn SaleCache, request: Request) -> Result<Response<Body>, ApiError> {
    let id = path_sale(&request)?;
    let detail = cache
        .detail(&id)
        .await
        .map_err(ApiError::store_unavailable)?
        .ok_or_else(|| ApiError::not_found(format!("no sale {id}")))?;
    let now_ms = epoch_ms(OffsetDateTime::now_utc());
    let mut response = json(StatusCode::OK, &detail_body(&detail, now_ms));
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(DETAIL_CACHE_CONTROL),
    );
    Ok(response)
}

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
            PlaceOrderError::NotStarted => ApiError::conflict("NOT_STARTED", message),
            PlaceOrderError::Ended => ApiError::conflict("ENDED", message),
            PlaceOrderError::LimitReached { .. } => ApiError::conflict("LIMIT_REACHED", message),
            PlaceOrderError::SoldOut => ApiError::conflict("SOLD_OUT", message),
            PlaceOrderError::NotEnoughStock { .. } => {
                ApiError::conflict("NOT_ENOUGH_STOCK", message)
            }
            PlaceOrderError::KeyReused => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "IDEMPOTENCY_KEY_REUSED",
                message,
            ),
            PlaceOrderError::RateLimited => {
                ApiError::new(StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED", message)
            }
            PlaceOrderError::Unavailable(_) => ApiError::unavailable("RETRY", message),
            PlaceOrderError::Admission(err) => {
                // Redis, the admission store, failing or unreachable (restarting, failing
                // over): the buyer was told nothing, and a retry may succeed. The cause is
                // logged, never shown.
                tracing::error!(error = ?anyhow::Error::from(err), "the admission store failed");
                ApiError::unavailable("RETRY", "the sale is briefly unavailable, please retry")
            }
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AcceptedBody<'a> {
    order_id: &'a str,
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
    let order_id = OrderId::generate(&sale_id).to_string();
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
    use crate::seckill::sale::fake::MemorySales;
    use crate::seckill::sale_page::fake::MemoryPageRequests;
    use crate::testing::{answer, api_request, assert_refused, claims_of, logged};
    use lambda_http::RequestExt;
    use serde_json::{Value, json};
    use std::collections::HashMap;
    use std::sync::atomic::Ordering;

    fn admin() -> Value {
        json!({"jwt": {"claims": {"sub": "op", "cognito:groups": "[admin]"}, "scopes": null}})
    }

    fn publish_route<'a>(
        sales: &'a MemorySales,
        pages: &'a MemoryPageRequests,
    ) -> PublishRoute<'a> {
        PublishRoute {
            store: sales,
            cache: sales,
            pages,
        }
    }

    fn with_id(request: Request, id: &str) -> Request {
        request.with_path_parameters(HashMap::from([("id".to_owned(), id.to_owned())]))
    }

    fn new_sale_body(starts_in_s: i64) -> String {
        let now = OffsetDateTime::now_utc();
        json!({
            "productId": "sku-1", "title": "Phone", "priceCents": 500, "stock": 3,
            "perUserLimit": 1,
            "startsAt": crate::clock::format(now + time::Duration::seconds(starts_in_s)),
            "endsAt": crate::clock::format(now + time::Duration::hours(1)),
        })
        .to_string()
    }

    #[tokio::test]
    async fn only_operators_create_and_publish() {
        let sales = MemorySales::default();
        let request = api_request(
            "POST",
            "/seckill/activities",
            &new_sale_body(0),
            claims_of("bob"),
        );
        let (status, body) = answer(create_sale(&sales, request).await);
        assert_eq!(status, 403, "{body}");
        let request = with_id(
            api_request("POST", "/p", "", claims_of("bob")),
            SaleId::generate().as_str(),
        );
        let pages = MemoryPageRequests::default();
        let route = publish_route(&sales, &pages);
        assert_eq!(answer(publish_sale(&route, request).await).0, 403);
    }

    #[tokio::test]
    async fn a_bad_sale_is_a_400_that_says_why() {
        let sales = MemorySales::default();
        let field = |name: &str, value: Value| {
            let mut body: Value = serde_json::from_str(&new_sale_body(0)).unwrap();
            body[name] = value;
            body.to_string()
        };
        for (body, says) in [
            (field("discount", json!(10)), "unknown field `discount`"),
            (field("perUserLimit", json!(4)), "perUserLimit"),
        ] {
            let request = api_request("POST", "/seckill/activities", &body, admin());
            assert_refused(
                &answer(create_sale(&sales, request).await),
                400,
                "BAD_REQUEST",
                says,
            );
        }
    }

    #[tokio::test]
    async fn a_sale_is_created_published_and_read_publicly() {
        let sales = MemorySales::default();
        let request = api_request("POST", "/seckill/activities", &new_sale_body(-1), admin());
        let (status, created) = answer(create_sale(&sales, request).await);
        assert_eq!(status, 201, "{created}");
        assert_eq!(created["state"], "DRAFT");
        assert_eq!(created["stockRemaining"], 3);
        let id = created["id"].as_str().unwrap().to_owned();

        let read = || {
            let request = with_id(api_request("GET", "/d", "", json!(null)), &id);
            get_sale(&sales, request)
        };
        assert_eq!(answer(read().await).0, 404);

        let pages = MemoryPageRequests::default();
        let route = publish_route(&sales, &pages);
        pages.fail.store(true, Ordering::SeqCst);
        let request = with_id(api_request("POST", "/p", "", admin()), &id);
        assert_refused(
            &answer(publish_sale(&route, request).await),
            503,
            "RETRY",
            "publish it again",
        );
        pages.fail.store(false, Ordering::SeqCst);
        let request = with_id(api_request("POST", "/p", "", admin()), &id);
        let (status, published) = answer(publish_sale(&route, request).await);
        assert_eq!(status, 200);
        assert_eq!(published["state"], "PUBLISHED");
        let request = with_id(api_request("POST", "/p", "", admin()), &id);
        assert_eq!(answer(publish_sale(&route, request).await).0, 200);
        let sale_id = SaleId::parse(&id).unwrap();
        // Asked for once per publish that succeeded; the writer renders it from the table.
        assert_eq!(*pages.requested.lock().unwrap(), [sale_id.clone(), sale_id]);

        let response = read().await.unwrap();
        assert_eq!(
            response.headers()[header::CACHE_CONTROL],
            DETAIL_CACHE_CONTROL
        );
        let (status, detail) = answer(Ok(response));
        assert_eq!(status, 200);
        assert_eq!(detail["state"], "ONGOING");
        assert_eq!(detail["stock"], 3);
        assert_eq!(detail["stockRemaining"], 3);
        assert_eq!(detail["priceCents"], 500);
        let server_time = detail["serverTime"].as_str().unwrap();
        let then =
            OffsetDateTime::parse(server_time, &time::format_description::well_known::Rfc3339);
        let lag = OffsetDateTime::now_utc() - then.unwrap();
        assert!(lag.whole_seconds().abs() < 5, "{server_time}");

        let request = with_id(
            api_request("POST", "/p", "", admin()),
            SaleId::generate().as_str(),
        );
        assert_eq!(answer(publish_sale(&route, request).await).0, 404);
        let request = with_id(api_request("GET", "/d", "", json!(null)), "nope");
        assert_eq!(answer(get_sale(&sales, request).await).0, 400);
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
            _: &str,
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
            order_id: OrderId::generate(&sale).to_string(),
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
        assert_eq!(sent[0].payload.order_id, first.order_id);
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
