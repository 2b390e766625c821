//! HTTP entry points of the order routes: only ever the caller's own orders; someone else's
//! order is as unknown as one that does not exist.
//!
//! `GET` reads an order from the commerce table once the order consumer materialized it
//! (normally within a second of the `202` of the order route); before that, the order id
//! names its sale, whose Redis keys say who placed it, so its owner reads it as `PENDING`
//! ([`find_order`]). Paying needs the materialized order.

use super::orders::{
    Order, OrderStatus, OrderStore, OrderStoreError, PaymentMethod, PendingOrders, find_order,
};
use super::payment::{PaymentProvider, PaymentSession};
use crate::auth::Caller;
use crate::emf;
use crate::http::{ApiError, json, parse_body, path_parameter, record_id};
use crate::ids::{UserId, valid_id};
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::{Deserialize, Serialize};

pub(super) fn store_error(err: OrderStoreError) -> ApiError {
    match err {
        OrderStoreError::InvalidCursor(err) => ApiError::bad_request(err.to_string()),
        OrderStoreError::Busy(cause) => ApiError::store_unavailable(cause),
        OrderStoreError::Failed(cause) => ApiError::internal(cause),
    }
}

fn not_found() -> ApiError {
    ApiError::not_found("no such order")
}

/// The `{orderId}` of the path: a malformed one is a 400 (it cannot name any order), a
/// well-formed one that is unknown or someone else's is the same 404.
fn path_order(request: &Request) -> Result<String, ApiError> {
    let order_id = path_parameter(request, "orderId")?;
    if !valid_id(&order_id) {
        return Err(ApiError::bad_request(
            "orderId in the path must be 1 to 128 characters of letters, digits, '-', '_' or '.'",
        ));
    }
    record_id("order", &order_id);
    Ok(order_id)
}

/// The caller's order named by the path, or a 404.
async fn own_order(
    store: &dyn OrderStore,
    request: &Request,
    caller: &UserId,
) -> Result<Order, ApiError> {
    let order_id = path_order(request)?;
    match store.order(&order_id).await.map_err(store_error)? {
        Some(order) if order.user_id == *caller => Ok(order),
        _ => Err(not_found()),
    }
}

/// `GET /orders/{orderId}`: the caller's order, materialized or `PENDING`; 404 otherwise.
pub async fn get_order(
    store: &dyn OrderStore,
    pending: &dyn PendingOrders,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    let caller = Caller::from_request(&request)?;
    let order_id = path_order(&request)?;
    match find_order(store, pending, &caller.user_id, &order_id)
        .await
        .map_err(store_error)?
    {
        Some(order) => Ok(json(StatusCode::OK, &order)),
        None => Err(not_found()),
    }
}

/// `GET /orders?limit=&cursor=`: the caller's orders, newest first.
pub async fn list_orders(
    store: &dyn OrderStore,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    let caller = Caller::from_request(&request)?;
    let (limit, cursor) = crate::http::page_query(&request)?;
    let page = store
        .orders_of(&caller.user_id, limit, cursor.as_ref())
        .await
        .map_err(store_error)?;
    Ok(json(
        StatusCode::OK,
        &OrdersPage {
            items: &page.items,
            next_cursor: page.next.map(|c| c.encode()),
        },
    ))
}

/// `GET /orders`' answer, serialized straight from the orders (through a `serde_json::Value`
/// every order would be copied into a map first).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OrdersPage<'a> {
    items: &'a [super::orders::Order],
    next_cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PayBody {
    method: String,
}

/// What the pay route needs, built once at cold start.
pub struct PayRoute<'a> {
    pub store: &'a dyn OrderStore,
    /// `None` on a stack without a payment provider: online payment answers 503.
    pub provider: Option<&'a dyn PaymentProvider>,
}

/// Where the buyer goes to pay.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PaymentLink {
    payment_id: String,
    redirect_url: String,
}

/// The order, and where to pay it.
#[derive(Serialize)]
struct Opened<'a> {
    #[serde(flatten)]
    order: &'a Order,
    payment: PaymentLink,
}

/// Where the provider sends the buyer back: the order's page.
pub fn order_page(order_id: &str) -> String {
    format!("/shop/order.html?id={order_id}")
}

/// The order as it is now: a settled one is a 200, anything else is not payable.
fn settled_or_refused(order: &Order) -> Result<Response<Body>, ApiError> {
    match order.status {
        status if status.is_settled() => Ok(json(StatusCode::OK, order)),
        status => Err(ApiError::conflict(
            "ORDER_NOT_PAYABLE",
            format!("the order is {}", status.as_str()),
        )),
    }
}

/// `POST /orders/{orderId}/pay` `{"method": "ONLINE" | "COD"}`, on a CONFIRMED order:
/// `COD` keeps it for cash on delivery (status COD); `ONLINE` opens a payment with the
/// provider (once: asking again answers the same payment) and answers the order with
/// `payment: {paymentId, redirectUrl}`, where to send the buyer; the order becomes PAID only
/// when the provider's signed callback says so ([`super::payment`]). A settled order answers
/// as it is; a cancelled or rejected one is a 409.
pub async fn pay_order(route: &PayRoute<'_>, request: Request) -> Result<Response<Body>, ApiError> {
    let caller = Caller::from_request(&request)?;
    let body: PayBody = parse_body(&request)?;
    let method = PaymentMethod::parse(&body.method)
        .ok_or_else(|| ApiError::bad_request(r#"method must be "ONLINE" or "COD""#))?;
    let store = route.store;
    let order = own_order(store, &request, &caller.user_id).await?;
    if order.status != OrderStatus::Confirmed {
        return settled_or_refused(&order);
    }
    match method {
        PaymentMethod::Cod => {
            if store
                .keep_for_delivery(&order.order_id, &caller.user_id)
                .await
                .map_err(store_error)?
            {
                emf::orders(OrderStatus::Cod.as_str(), 1);
                let kept = Order {
                    status: OrderStatus::Cod,
                    payment_method: Some(PaymentMethod::Cod),
                    ..order
                };
                return Ok(json(StatusCode::OK, &kept));
            }
        }
        PaymentMethod::Online => {
            let provider = route.provider.ok_or_else(|| {
                ApiError::unavailable(
                    "PAYMENT_UNAVAILABLE",
                    "online payment is not available on this stack; pay cash on delivery",
                )
            })?;
            let new_id = crate::ids::PaymentId::generate();
            let opened = store
                .open_payment(&order.order_id, &caller.user_id, new_id.as_str())
                .await
                .map_err(store_error)?;
            if let Some(payment_id) = opened {
                let session = PaymentSession {
                    payment_id: payment_id.clone(),
                    order_id: order.order_id.clone(),
                    amount_cents: order.total_cents,
                    currency: super::payment::Currency::of(&order),
                    return_url: order_page(&order.order_id),
                };
                let redirect_url = provider.open(&session).await.map_err(|err| {
                    tracing::error!(error = ?err, "the payment provider failed");
                    ApiError::unavailable(
                        "RETRY",
                        "the payment provider is unavailable, please retry",
                    )
                })?;
                let order = Order {
                    payment_id: Some(payment_id.clone()),
                    ..order
                };
                let payment = PaymentLink {
                    payment_id,
                    redirect_url,
                };
                return Ok(json(
                    StatusCode::OK,
                    &Opened {
                        order: &order,
                        payment,
                    },
                ));
            }
        }
    }
    // Settled by a concurrent request, or cancelled meanwhile: answer what it is now.
    settled_or_refused(&own_order(store, &request, &caller.user_id).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::Message;
    use crate::ids::{OrderId, SaleId};
    use crate::seckill::memory::{
        MemoryOrders, MemoryPayments, MemoryReservations, S1, S2, due, placed,
    };
    use crate::seckill::orders::Reservations;
    use crate::seckill::sandbox::SandboxProvider;
    use crate::seckill::{order_consumer, payment_timeout};
    use crate::testing::{answer, api_request, assert_refused, claims_of, logged};
    use lambda_http::RequestExt;
    use serde_json::Value;
    use std::collections::HashMap;

    async fn seeded(orders: &[(&str, &str)]) -> MemoryOrders {
        let store = MemoryOrders::default();
        store.add_sale(S1, 10);
        let reservations = MemoryReservations::default();
        let payments = MemoryPayments::default();
        let messages = orders
            .iter()
            .map(|(order, user)| Message {
                id: (*order).to_owned(),
                body: placed(order, S1, user),
            })
            .collect();
        let deps = order_consumer::OrderDeps {
            store: &store,
            reservations: &reservations,
            payments: &payments,
        };
        assert!(
            order_consumer::handle_batch(deps, messages)
                .await
                .is_empty()
        );
        store
    }

    fn with_order(request: Request, order: &str) -> Request {
        request.with_path_parameters(HashMap::from([("orderId".to_owned(), order.to_owned())]))
    }

    async fn get(store: &MemoryOrders, user: &str, order: &str) -> (u16, Value) {
        get_with(store, &MemoryReservations::default(), user, order).await
    }

    async fn get_with(
        store: &MemoryOrders,
        pending: &MemoryReservations,
        user: &str,
        order: &str,
    ) -> (u16, Value) {
        let request = with_order(api_request("GET", "/orders/x", "", claims_of(user)), order);
        answer(get_order(store, pending, request).await)
    }

    async fn pay(store: &MemoryOrders, user: &str, order: &str, body: &str) -> (u16, Value) {
        let request = with_order(
            api_request("POST", "/orders/x/pay", body, claims_of(user)),
            order,
        );
        let route = PayRoute {
            store,
            provider: Some(&SandboxProvider),
        };
        answer(pay_order(&route, request).await)
    }

    #[tokio::test]
    async fn a_payment_is_logged_with_its_payer_and_order() {
        let store = seeded(&[("o1", "alice")]).await;
        let route = PayRoute {
            store: &store,
            provider: Some(&SandboxProvider),
        };
        let handler = |request| pay_order(&route, request);
        let request = with_order(
            api_request(
                "POST",
                "/orders/x/pay",
                r#"{"method":"ONLINE"}"#,
                claims_of("alice"),
            ),
            "o1",
        );
        let (response, log) = logged(async { crate::http::answer(&handler, request).await }).await;
        assert_eq!(response.status(), 200);
        assert!(log.contains("request{caller=alice order=o1}"), "{log}");
    }

    #[tokio::test]
    async fn only_the_owner_sees_an_order() {
        let store = seeded(&[("o1", "alice")]).await;
        let (status, order) = get(&store, "alice", "o1").await;
        assert_eq!(status, 200);
        assert_eq!(order["status"], "CONFIRMED");
        assert_eq!(order["saleId"], S1);
        assert!(order.get("userId").is_none());
        for (user, id) in [("eve", "o1"), ("alice", "nope")] {
            let (status, body) = get(&store, user, id).await;
            assert_eq!(status, 404, "{user} {id}");
            assert_eq!(
                body,
                serde_json::json!({"error": {"code": "NOT_FOUND", "message": "no such order"}})
            );
        }
    }

    #[tokio::test]
    async fn a_malformed_order_id_is_a_400_that_names_it_on_every_order_route() {
        let store = seeded(&[("o1", "alice")]).await;
        let long = "x".repeat(129);
        for id in ["a#b", "a b", "\u{e9}t\u{e9}", long.as_str()] {
            for refused in [
                get(&store, "alice", id).await,
                pay(&store, "alice", id, r#"{"method": "COD"}"#).await,
            ] {
                assert_refused(&refused, 400, "BAD_REQUEST", "orderId");
            }
        }
    }

    #[tokio::test]
    async fn an_admitted_order_reads_as_pending_to_its_owner_only_until_materialized() {
        let store = MemoryOrders::default();
        store.add_sale(S1, 10);
        let redis = MemoryReservations::default();
        let sale = SaleId::parse(S1).unwrap();
        let [mine, released, foreign_sale] =
            [S1, S1, S2].map(|s| OrderId::generate(&SaleId::parse(s).unwrap()).to_string());
        redis.reserve(S1, &mine, "alice");
        redis.reserve(S1, &released, "alice");
        assert!(redis.release(S1, &released, None).await.unwrap());

        let (status, body) = get_with(&store, &redis, "alice", &mine).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body,
            serde_json::json!({"orderId": mine, "saleId": sale, "status": "PENDING"})
        );
        // Someone else's, a released one, an unknown one (also of a sale Redis does not know),
        // an id of another (well-formed) form: all the same 404.
        let unknown = OrderId::generate(&sale).to_string();
        for (user, id) in [
            ("eve", mine.as_str()),
            ("alice", released.as_str()),
            ("alice", unknown.as_str()),
            ("alice", foreign_sale.as_str()),
            ("alice", "o1"),
        ] {
            let (status, body) = get_with(&store, &redis, user, id).await;
            assert_eq!(status, 404, "{user} {id}");
            assert_eq!(body["error"]["code"], "NOT_FOUND");
        }

        // Materialized: its stored status, from DynamoDB (even while Redis still knows it).
        let deps = order_consumer::OrderDeps {
            store: &store,
            reservations: &redis,
            payments: &MemoryPayments::default(),
        };
        let message = Message {
            id: "m".to_owned(),
            body: placed(&mine, S1, "alice"),
        };
        assert!(
            order_consumer::handle_batch(deps, vec![message])
                .await
                .is_empty()
        );
        let (status, body) = get_with(&store, &redis, "alice", &mine).await;
        assert_eq!((status, body["status"].as_str()), (200, Some("CONFIRMED")));
        assert_eq!(body["priceCents"], 990);
        assert_eq!(get_with(&store, &redis, "eve", &mine).await.0, 404);
    }

    #[tokio::test]
    async fn paying_is_owner_only_idempotent_and_refused_for_cancelled_orders() {
        let store = seeded(&[("o1", "alice"), ("o2", "alice"), ("o3", "alice")]).await;
        for body in [
            "",
            "{}",
            r#"{"method": "cash"}"#,
            r#"{"method": "COD", "x": 1}"#,
        ] {
            assert_eq!(pay(&store, "alice", "o1", body).await.0, 400, "{body}");
        }
        assert_eq!(
            pay(&store, "eve", "o1", r#"{"method": "COD"}"#).await.0,
            404
        );
        // Cash on delivery keeps the order, not paid yet; asking again changes nothing.
        let (status, kept) = pay(&store, "alice", "o1", r#"{"method": "COD"}"#).await;
        assert_eq!(status, 200);
        assert_eq!(kept["status"], "COD");
        assert_eq!(kept["paymentMethod"], "COD");
        assert!(kept.get("paidAt").is_none(), "{kept}");
        let (status, again) = pay(&store, "alice", "o1", r#"{"method": "ONLINE"}"#).await;
        assert_eq!((status, &again), (200, &kept));
        // Online: a payment is opened, once, and the order waits for the provider's callback.
        let (status, opened) = pay(&store, "alice", "o3", r#"{"method": "ONLINE"}"#).await;
        assert_eq!(status, 200, "{opened}");
        assert_eq!(opened["status"], "CONFIRMED");
        let payment_id = opened["payment"]["paymentId"].as_str().unwrap().to_owned();
        assert_eq!(opened["paymentId"], payment_id.as_str());
        let url = opened["payment"]["redirectUrl"].as_str().unwrap();
        assert!(
            url.starts_with(&format!(
                "/sandbox/payments/{payment_id}?orderId=o3&amountCents=990&"
            )),
            "{url}"
        );
        let (_, again) = pay(&store, "alice", "o3", r#"{"method": "ONLINE"}"#).await;
        assert_eq!(again["payment"]["paymentId"], payment_id.as_str());
        assert_eq!(store.status("o3"), Some(OrderStatus::Confirmed));
        // A stack without a provider says so, and cash on delivery still works there.
        let without = PayRoute {
            store: &store,
            provider: None,
        };
        let request = with_order(
            api_request(
                "POST",
                "/orders/x/pay",
                r#"{"method": "ONLINE"}"#,
                claims_of("alice"),
            ),
            "o3",
        );
        assert_refused(
            &answer(pay_order(&without, request).await),
            503,
            "PAYMENT_UNAVAILABLE",
            "not available",
        );

        let reservations = MemoryReservations::default();
        let message = Message {
            id: "m".to_owned(),
            body: due("o2", S1),
        };
        assert!(
            payment_timeout::handle_batch(&store, &reservations, vec![message])
                .await
                .is_empty()
        );
        let (status, body) = pay(&store, "alice", "o2", r#"{"method": "ONLINE"}"#).await;
        assert_eq!(status, 409);
        assert_eq!(body["error"]["code"], "ORDER_NOT_PAYABLE");
    }

    #[tokio::test]
    async fn the_caller_pages_through_their_own_orders_newest_first() {
        let store = seeded(&[
            ("o1", "alice"),
            ("o2", "alice"),
            ("o3", "alice"),
            ("o4", "bob"),
        ])
        .await;
        let list = |query: HashMap<String, String>| {
            let request = api_request("GET", "/orders", "", claims_of("alice"))
                .with_query_string_parameters(query);
            list_orders(&store, request)
        };
        let (status, first) = answer(list(HashMap::from([("limit".into(), "2".into())])).await);
        assert_eq!(status, 200);
        let ids: Vec<&str> = first["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["orderId"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["o3", "o2"]);
        let cursor = first["nextCursor"].as_str().unwrap().to_owned();
        let (_, second) = answer(
            list(HashMap::from([
                ("limit".into(), "2".into()),
                ("cursor".into(), cursor),
            ]))
            .await,
        );
        assert_eq!(second["items"][0]["orderId"], "o1");
        assert!(second["nextCursor"].is_null());
        for (name, value) in [("limit", "0"), ("cursor", "garbage!")] {
            let (status, _) = answer(list(HashMap::from([(name.into(), value.into())])).await);
            assert_eq!(status, 400, "{name}={value}");
        }
    }
}
