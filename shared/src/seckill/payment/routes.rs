//! HTTP entry points of payment: the provider's callback, `POST /payments/callback` (no user
//! token; the `Payment-Signature` header authenticates it, [`crate::seckill::payment`]); a
//! buyer paying an order, `POST /orders/{orderId}/pay`; and the operators' refund routes (admin
//! only), the refunds due oldest first and settling one through the payment provider
//! ([`crate::seckill::payment::refunds`]).

use crate::auth::Caller;
use crate::emf;
use crate::error_code::ErrorCode;
use crate::http::{ApiError, json, parse_body, record_id};
use crate::http::{page_query, path_parameter};
use crate::ids::{OrderId, valid_id};
use crate::seckill::order::routes::{own_order, path_order_id, store_error};
use crate::seckill::order::{Order, OrderStatus, OrderStore, PaymentMethod};
use crate::seckill::payment::refunds::{self, RefundRecord, SettleRefundError};
use crate::seckill::payment::{
    CallbackSecrets, PaymentNotice, SIGNATURE_HEADER, SettleError, SignatureError, settle,
};
use crate::seckill::payment::{PaymentProvider, PaymentSession};
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::{Deserialize, Serialize};
use serde_json::json as body;
use time::OffsetDateTime;

impl From<SignatureError> for ApiError {
    fn from(err: SignatureError) -> Self {
        let code = match err {
            SignatureError::Stale => ErrorCode::StaleSignature,
            SignatureError::Malformed | SignatureError::Mismatch => ErrorCode::BadSignature,
        };
        ApiError::new(StatusCode::UNAUTHORIZED, code, err.to_string())
    }
}

/// `POST /payments/callback`: a provider's notice, verified against the shared secrets at
/// `now` (unix seconds) before anything is read, then parsed (a malformed `orderId`,
/// `paymentId` or `currency` is a 400) and settled: 200 `{received, outcome}` with
/// `outcome` PAID, ALREADY_PAID, FAILED or REFUND_DUE; 401 `BAD_SIGNATURE` or
/// `STALE_SIGNATURE`; 404 for an order that does not exist.
pub async fn callback(
    store: &dyn crate::seckill::order::OrderStore,
    secret: &CallbackSecrets,
    request: Request,
    now: i64,
) -> Result<Response<Body>, ApiError> {
    let signature = request
        .headers()
        .get(SIGNATURE_HEADER)
        .and_then(|value| value.to_str().ok());
    secret.verify(signature, request.body().as_ref(), now)?;
    let notice: PaymentNotice = parse_body(&request)?;
    record_id("order", &notice.order_id);
    let at = crate::clock::now_rfc3339();
    match settle(store, &notice, &at).await {
        Ok(settlement) => {
            if let crate::seckill::payment::Settlement::Paid = settlement {
                crate::emf::orders(crate::seckill::order::OrderStatus::Paid.as_str(), 1);
            }
            Ok(json(
                StatusCode::OK,
                &body!({"received": true, "outcome": settlement.as_str()}),
            ))
        }
        Err(SettleError::UnknownOrder) => Err(ApiError::not_found("no such order")),
        Err(SettleError::Store(err)) => Err(store_error(err)),
    }
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
pub fn order_page(order_id: &OrderId) -> String {
    format!("/shop/order.html?id={order_id}")
}

/// The order as it is now: a settled one is a 200, anything else is not payable.
fn settled_or_refused(order: &Order) -> Result<Response<Body>, ApiError> {
    match order.status {
        status if status.is_settled() => Ok(json(StatusCode::OK, order)),
        status => Err(ApiError::conflict(
            ErrorCode::OrderNotPayable,
            format!("the order is {}", status.as_str()),
        )),
    }
}

/// `POST /orders/{orderId}/pay` `{"method": "ONLINE" | "COD"}`, on a CONFIRMED order:
/// `COD` keeps it for cash on delivery (status COD); `ONLINE` opens a payment with the
/// provider (once: asking again answers the same payment) and answers the order with
/// `payment: {paymentId, redirectUrl}`, where to send the buyer; the order becomes PAID only
/// when the provider's signed callback says so ([`crate::seckill::payment`]). A settled order answers
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
                    ErrorCode::PaymentUnavailable,
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
                    currency: crate::seckill::payment::Currency::of(&order),
                    return_url: order_page(&order.order_id),
                };
                let redirect_url = provider.open(&session).await.map_err(|err| {
                    tracing::error!(error = ?err, "the payment provider failed");
                    ApiError::unavailable(
                        ErrorCode::Retry,
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

/// `GET /admin/refunds`' answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RefundsPage<'a> {
    items: &'a [RefundRecord],
    next_cursor: Option<String>,
}

/// `GET /admin/refunds?limit=&cursor=` (admin): the refunds still due, oldest first.
pub async fn list_refunds_due(
    store: &dyn OrderStore,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    Caller::from_request(&request)?.require_admin()?;
    let (limit, cursor) = page_query(&request)?;
    let page = refunds::refunds_due(store, limit, cursor.as_ref())
        .await
        .map_err(store_error)?;
    Ok(json(
        StatusCode::OK,
        &RefundsPage {
            items: &page.items,
            next_cursor: page.next.map(|c| c.encode()),
        },
    ))
}

/// An id of the path: a malformed one is a 400.
fn path_id(request: &Request, name: &'static str) -> Result<String, ApiError> {
    let id = path_parameter(request, name)?;
    if !valid_id(&id) {
        return Err(ApiError::bad_request(format!(
            "{name} in the path must be 1 to 128 characters of letters, digits, '-', '_' or '.'"
        )));
    }
    Ok(id)
}

/// `POST /admin/orders/{orderId}/confirm-delivery` (admin): a COD order confirmed for
/// delivery, so that its COD window no longer cancels it; 200 with the order, again as it is
/// when asked twice. 404 for an unknown order; 409 `ORDER_NOT_COD` for one not kept for cash
/// on delivery (a cancelled one too: its window ended first, and its units went back on sale).
pub async fn confirm_delivery(
    store: &dyn OrderStore,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    Caller::from_request(&request)?.require_admin()?;
    let order_id = path_order_id(&request, "orderId", || ApiError::not_found("no such order"))?;
    let at = crate::clock::format(OffsetDateTime::now_utc());
    match store
        .confirm_delivery(&order_id, &at)
        .await
        .map_err(store_error)?
    {
        None => Err(ApiError::not_found("no such order")),
        Some(order) if order.status == OrderStatus::Cod => Ok(json(StatusCode::OK, &order)),
        Some(order) => Err(ApiError::conflict(
            ErrorCode::OrderNotCod,
            format!(
                "the order is {}: only an order kept for cash on delivery is confirmed for delivery",
                order.status.as_str()
            ),
        )),
    }
}

/// What the settle route needs, built once at cold start.
pub struct SettleRoute<'a> {
    pub store: &'a dyn OrderStore,
    /// `None` on a stack without a payment provider: settling answers 503.
    pub provider: Option<&'a dyn PaymentProvider>,
}

/// `POST /admin/refunds/{paymentId}/{orderId}/settle` (admin): pays the refund back through
/// the provider, once; a refund already `REFUNDED` answers as it is (200 both ways). 404 for
/// an unknown refund; 503 `PAYMENT_UNAVAILABLE` on a stack without a provider, 503 `RETRY`
/// when the provider failed (nothing changed; settling again is safe).
pub async fn settle_refund(
    route: &SettleRoute<'_>,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    Caller::from_request(&request)?.require_admin()?;
    let payment_id = path_id(&request, "paymentId")?;
    let order_id = path_order_id(&request, "orderId", || {
        ApiError::not_found("no such refund")
    })?;
    let at = crate::clock::format(OffsetDateTime::now_utc());
    match refunds::settle_refund(route.store, route.provider, &payment_id, &order_id, &at).await {
        Ok(refund) => Ok(json(StatusCode::OK, &refund)),
        Err(SettleRefundError::UnknownRefund) => Err(ApiError::not_found("no such refund")),
        Err(err @ SettleRefundError::NoProvider) => Err(ApiError::unavailable(
            ErrorCode::PaymentUnavailable,
            err.to_string(),
        )),
        Err(err @ SettleRefundError::PaymentRefunded { .. }) => Err(ApiError::conflict(
            ErrorCode::PaymentRefunded,
            err.to_string(),
        )),
        Err(SettleRefundError::Provider(cause)) => {
            tracing::error!(error = ?cause, "the payment provider failed to refund");
            Err(ApiError::unavailable(
                ErrorCode::Retry,
                "the payment provider is unavailable, please retry",
            ))
        }
        Err(SettleRefundError::Store(err)) => Err(store_error(err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::Message;
    use crate::seckill::order::fake::{
        MemoryOrders, MemoryReservations, S1, add_awaiting_payment, due, oid, order_id, seeded,
        with_order,
    };
    use crate::seckill::payment::sandbox::SandboxProvider;
    use crate::seckill::payment::timeout as payment_timeout;
    use crate::seckill::payment::{Currency, Refund, RefundReason};
    use crate::testing::{answer, api_request, assert_refused, claims_of, logged};
    use lambda_http::RequestExt;
    use serde_json::{Value, json};
    use std::collections::HashMap;

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
        let o1 = order_id(S1, "o1");
        assert!(
            log.contains(&format!("request{{caller=alice order={o1}}}")),
            "{log}"
        );
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
                "/sandbox/payments/{payment_id}?orderId={}&amountCents=990&",
                order_id(S1, "o3")
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
            seal: None,
        };
        assert!(
            payment_timeout::handle_batch(
                crate::seckill::payment::timeout::test_deps(&store, &reservations),
                vec![message]
            )
            .await
            .is_empty()
        );
        let (status, body) = pay(&store, "alice", "o2", r#"{"method": "ONLINE"}"#).await;
        assert_eq!(status, 409);
        assert_eq!(body["error"]["code"], "ORDER_NOT_PAYABLE");
    }

    #[tokio::test]
    async fn a_malformed_order_id_is_a_400_that_names_it_when_paid() {
        let store = seeded(&[("o1", "alice")]).await;
        let long = "x".repeat(129);
        for id in ["a#b", "a b", "\u{e9}t\u{e9}", long.as_str()] {
            let refused = pay(&store, "alice", id, r#"{"method": "COD"}"#).await;
            assert_refused(&refused, 400, "BAD_REQUEST", "orderId");
        }
    }

    fn admin() -> Value {
        json!({"jwt": {"claims": {"sub": "op", "cognito:groups": "[admin]"}, "scopes": null}})
    }

    #[tokio::test]
    async fn an_operator_confirms_a_cod_order_for_delivery_once_and_nothing_else() {
        let store = seeded(&[("o1", "alice"), ("o2", "alice")]).await;
        assert_eq!(
            pay(&store, "alice", "o1", r#"{"method": "COD"}"#).await.0,
            200
        );
        let confirm = |who: Value, order: &str| {
            with_order(
                api_request("POST", "/admin/orders/x/confirm-delivery", "", who),
                order,
            )
        };
        for who in [claims_of("alice"), json!(null)] {
            let (status, _) = answer(confirm_delivery(&store, confirm(who, "o1")).await);
            assert!(status == 401 || status == 403, "{status}");
        }
        let (status, first) = answer(confirm_delivery(&store, confirm(admin(), "o1")).await);
        assert_eq!(status, 200, "{first}");
        assert_eq!(first["status"], "COD");
        assert!(first["deliveryConfirmedAt"].is_string(), "{first}");
        let (_, again) = answer(confirm_delivery(&store, confirm(admin(), "o1")).await);
        assert_eq!(again["deliveryConfirmedAt"], first["deliveryConfirmedAt"]);
        // A CONFIRMED order awaits its payment, not a delivery.
        assert_refused(
            &answer(confirm_delivery(&store, confirm(admin(), "o2")).await),
            409,
            "ORDER_NOT_COD",
            "the order is CONFIRMED",
        );
        let (status, _) = answer(confirm_delivery(&store, confirm(admin(), "o9")).await);
        assert_eq!(status, 404);
    }

    async fn with_refund() -> MemoryOrders {
        let store = MemoryOrders::default();
        store.add_sale(S1, 10);
        add_awaiting_payment(&store, &MemoryReservations::default(), "o1", "ann", "p1").await;
        let refund = Refund {
            payment_id: "p1".to_owned(),
            order_id: oid(S1, "o1"),
            user_id: "ann".to_owned(),
            amount_cents: 1_980,
            currency: Currency::shop(),
            reason: RefundReason::OrderCancelled,
            recorded_at: "2026-12-01T10:00:00Z".to_owned(),
        };
        assert!(store.record_refund(&refund).await.unwrap());
        store
    }

    fn settle(who: Value, payment: &str, order: &str) -> Request {
        api_request("POST", "/admin/refunds/x/y/settle", "", who).with_path_parameters(
            HashMap::from([
                ("paymentId".to_owned(), payment.to_owned()),
                ("orderId".to_owned(), order_id(S1, order)),
            ]),
        )
    }

    #[tokio::test]
    async fn an_operator_lists_and_settles_a_refund_once_and_nobody_else_may() {
        let store = with_refund().await;
        let route = SettleRoute {
            store: &store,
            provider: Some(&SandboxProvider),
        };
        for who in [claims_of("ann"), json!(null)] {
            let listed =
                answer(list_refunds_due(&store, api_request("GET", "/", "", who.clone())).await);
            assert!(matches!(listed.0, 401 | 403), "{listed:?}");
            let settled = answer(settle_refund(&route, settle(who, "p1", "o1")).await);
            assert!(matches!(settled.0, 401 | 403), "{settled:?}");
        }
        let (status, listed) =
            answer(list_refunds_due(&store, api_request("GET", "/", "", admin())).await);
        assert_eq!(status, 200, "{listed}");
        assert_eq!(listed["items"][0]["paymentId"], "p1");
        assert_eq!(listed["items"][0]["state"], "DUE");
        assert_eq!(listed["items"][0]["amountCents"], 1_980);
        assert!(listed["nextCursor"].is_null());

        let (status, first) = answer(settle_refund(&route, settle(admin(), "p1", "o1")).await);
        assert_eq!(status, 200, "{first}");
        assert_eq!(first["state"], "REFUNDED");
        assert_eq!(
            first["providerRefundId"],
            format!("sandbox-refund-p1-{}", order_id(S1, "o1"))
        );
        let again = answer(settle_refund(&route, settle(admin(), "p1", "o1")).await);
        assert_eq!(again, (200, first));
        let (_, listed) =
            answer(list_refunds_due(&store, api_request("GET", "/", "", admin())).await);
        assert_eq!(listed["items"], json!([]));

        assert_refused(
            &answer(settle_refund(&route, settle(admin(), "p2", "o1")).await),
            404,
            "NOT_FOUND",
            "no such refund",
        );
        assert_refused(
            &answer(settle_refund(&route, settle(admin(), "p#1", "o1")).await),
            400,
            "BAD_REQUEST",
            "paymentId",
        );
    }

    #[tokio::test]
    async fn without_a_provider_settling_says_so_and_the_refund_stays_due() {
        let store = with_refund().await;
        let route = SettleRoute {
            store: &store,
            provider: None,
        };
        assert_refused(
            &answer(settle_refund(&route, settle(admin(), "p1", "o1")).await),
            503,
            "PAYMENT_UNAVAILABLE",
            "no payment provider",
        );
        let (_, listed) =
            answer(list_refunds_due(&store, api_request("GET", "/", "", admin())).await);
        assert_eq!(listed["items"][0]["state"], "DUE");
    }
}
