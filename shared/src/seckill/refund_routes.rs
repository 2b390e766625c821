//! HTTP entry points of the operators' refund routes (admin only): the refunds due, oldest
//! first, and settling one through the payment provider ([`super::refunds`]).

use super::order_routes::store_error;
use super::orders::OrderStore;
use super::payment::PaymentProvider;
use super::refunds::{self, RefundRecord, SettleRefundError};
use crate::auth::Caller;
use crate::http::{ApiError, json, page_query, path_parameter, record_id};
use crate::ids::valid_id;
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use time::OffsetDateTime;

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
    let order_id = path_id(&request, "orderId")?;
    record_id("order", &order_id);
    let at = crate::clock::format(OffsetDateTime::now_utc());
    match refunds::settle_refund(route.store, route.provider, &payment_id, &order_id, &at).await {
        Ok(refund) => Ok(json(StatusCode::OK, &refund)),
        Err(SettleRefundError::UnknownRefund) => Err(ApiError::not_found("no such refund")),
        Err(err @ SettleRefundError::NoProvider) => Err(ApiError::unavailable(
            "PAYMENT_UNAVAILABLE",
            err.to_string(),
        )),
        Err(SettleRefundError::Provider(cause)) => {
            tracing::error!(error = ?cause, "the payment provider failed to refund");
            Err(ApiError::unavailable(
                "RETRY",
                "the payment provider is unavailable, please retry",
            ))
        }
        Err(SettleRefundError::Store(err)) => Err(store_error(err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seckill::memory::{MemoryOrders, MemoryReservations, S1, add_awaiting_payment};
    use crate::seckill::payment::{Currency, Refund, RefundReason};
    use crate::seckill::sandbox::SandboxProvider;
    use crate::testing::{answer, api_request, assert_refused, claims_of};
    use lambda_http::RequestExt;
    use serde_json::{Value, json};
    use std::collections::HashMap;

    fn admin() -> Value {
        json!({"jwt": {"claims": {"sub": "op", "cognito:groups": "[admin]"}, "scopes": null}})
    }

    async fn with_refund() -> MemoryOrders {
        let store = MemoryOrders::default();
        store.add_sale(S1, 10);
        add_awaiting_payment(&store, &MemoryReservations::default(), "o1", "ann", "p1").await;
        let refund = Refund {
            payment_id: "p1".to_owned(),
            order_id: "o1".to_owned(),
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
                ("orderId".to_owned(), order.to_owned()),
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
        assert_eq!(first["providerRefundId"], "sandbox-refund-p1-o1");
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
