//! HTTP entry points of the order routes: only ever the caller's own orders; someone else's
//! order is as unknown as one that does not exist.
//!
//! `GET` reads an order from the commerce table once the order consumer materialized it
//! (normally within a second of the `202` of the order route); before that, the order id
//! names its sale, whose Redis keys say who placed it, so its owner reads it as `PENDING`
//! ([`find_order`]). Paying needs the materialized order.

use crate::auth::Caller;
use crate::http::{ApiError, json, path_parameter, record_id};
use crate::ids::{OrderId, UserId, valid_id};
use crate::seckill::order::{Order, OrderStore, OrderStoreError, PendingOrders, find_order};
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Serialize;

pub(crate) fn store_error(err: OrderStoreError) -> ApiError {
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
fn path_order(request: &Request) -> Result<OrderId, ApiError> {
    path_order_id(request, "orderId", not_found)
}

/// The order id `name` of the path: a malformed one is a 400 (it cannot name any order); one
/// well-formed but not of the form the order route mints ([`OrderId`]) names no order, so it
/// is `unknown`, as an order that does not exist is.
pub(crate) fn path_order_id(
    request: &Request,
    name: &'static str,
    unknown: fn() -> ApiError,
) -> Result<OrderId, ApiError> {
    let raw = path_parameter(request, name)?;
    if !valid_id(&raw) {
        return Err(ApiError::bad_request(format!(
            "{name} in the path must be 1 to 128 characters of letters, digits, '-', '_' or '.'"
        )));
    }
    record_id("order", &raw);
    OrderId::parse(&raw).map_err(|_| unknown())
}

/// The caller's order named by the path, or a 404.
pub(crate) async fn own_order(
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
    items: &'a [crate::seckill::order::Order],
    next_cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::Message;
    use crate::ids::{OrderId, SaleId};
    use crate::seckill::order::Reservations;
    use crate::seckill::order::fake::{
        MemoryOrders, MemoryPayments, MemoryReservations, S1, S2, order_id, order_name, placed,
        seeded, with_order,
    };

    use crate::seckill::order::consumer as order_consumer;

    use crate::testing::{answer, api_request, assert_refused, claims_of};
    use lambda_http::RequestExt;
    use serde_json::Value;
    use std::collections::HashMap;

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
    async fn a_malformed_order_id_is_a_400_that_names_it_when_read() {
        let store = seeded(&[("o1", "alice")]).await;
        let long = "x".repeat(129);
        for id in ["a#b", "a b", "\u{e9}t\u{e9}", long.as_str()] {
            let refused = get(&store, "alice", id).await;
            assert_refused(&refused, 400, "BAD_REQUEST", "orderId");
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
        let released_id = OrderId::parse(&released).unwrap();
        assert!(redis.release(&sale, &released_id, None).await.unwrap());

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
            seal: crate::seckill::admission::seal::Seal::for_tests(),
        };
        let body = placed(&mine, S1, "alice");
        let message = Message {
            id: "m".to_owned(),
            seal: Some(crate::seckill::admission::seal::Seal::for_tests().sign(&body)),
            body,
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
        let ids: Vec<String> = first["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| order_name(o["orderId"].as_str().unwrap()))
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
        assert_eq!(second["items"][0]["orderId"], order_id(S1, "o1"));
        assert!(second["nextCursor"].is_null());
        for (name, value) in [("limit", "0"), ("cursor", "garbage!")] {
            let (status, _) = answer(list(HashMap::from([(name.into(), value.into())])).await);
            assert_eq!(status, 400, "{name}={value}");
        }
    }
}
