//! The payment provider's sandbox: an adapter of [`PaymentProvider`] whose checkout page is
//! the `payment-sandbox` function on the same origin, for `make dev` and the stacks deployed
//! with `EnablePaymentSandbox=true` (a template Rule refuses it with `EnvironmentName=prod`).
//!
//! - [`SandboxProvider::open`] answers `/sandbox/payments/{paymentId}?orderId=&amountCents=`
//!   `&returnUrl=`: nothing to call, the page is ours.
//! - `GET /sandbox/payments/{paymentId}` ([`page`]): the amount, the order, and two buttons,
//!   Pay and Fail.
//! - `POST /sandbox/payments/{paymentId}` `{"outcome": "PAY" | "FAIL", "orderId"}` with the
//!   buyer's bearer token ([`notice`]): the notice a provider would send and its
//!   `Payment-Signature`, signed with the **sandbox's own secret** (`PaymentSandboxSecret`,
//!   never the provider's), which never leaves the function; the page sends them to
//!   `POST /payments/callback`, which takes that secret only on a stack with the sandbox, and
//!   then takes the buyer back to the return URL. A test does the same with two requests.
//!
//! The sandbox signs only what a provider would: a notice for the **caller's own** order,
//! CONFIRMED and paid online, naming the payment the pay route opened for it, with the
//! order's amount and currency (the request names neither). Anything else is a 4xx and signs
//! nothing, so the sandbox cannot mint refunds or pay someone else's order.
//!
//! A real provider replaces the adapter (its `open` calls the provider's API; its servers
//! call back with the same header contract, or the callback route's verification is adapted
//! to theirs); the domain ([`crate::seckill::payment`]) does not change.

use crate::auth::Caller;
use crate::error_code::ErrorCode;
use crate::http::{ApiError, json, parse_body, path_parameter, query_parameter, record_id};
use crate::ids::{OrderId, PaymentId, valid_id};
use crate::layout::escape;
use crate::seckill::order::routes::store_error;
use crate::seckill::order::{OrderStatus, OrderStore};
use crate::seckill::payment::{
    Currency, PaymentNotice, PaymentProvider, PaymentSession, PaymentStatus, ProviderError,
    SIGNATURE_HEADER, WebhookSecret,
};
use async_trait::async_trait;
use lambda_http::http::{HeaderValue, StatusCode, header};
use lambda_http::{Body, Request, Response};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::{Deserialize, Serialize};

/// The sandbox's pages, under this path of the API's origin.
pub const SANDBOX_PATH: &str = "/sandbox/payments";

/// Where the sandbox sends the signed notice.
pub const CALLBACK_PATH: &str = "/payments/callback";

/// The provider whose checkout is the sandbox page.
#[derive(Clone, Copy, Debug, Default)]
pub struct SandboxProvider;

/// What a query value escapes: all but RFC 3986's unreserved characters.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn encode(value: &str) -> String {
    utf8_percent_encode(value, QUERY_VALUE).to_string()
}

#[async_trait]
impl PaymentProvider for SandboxProvider {
    async fn open(&self, session: &PaymentSession) -> Result<String, ProviderError> {
        Ok(format!(
            "{SANDBOX_PATH}/{}?orderId={}&amountCents={}&returnUrl={}",
            encode(&session.payment_id),
            encode(session.order_id.as_str()),
            session.amount_cents,
            encode(&session.return_url),
        ))
    }

    /// The sandbox moved no money, so it gives none back: the refund is recorded as done, its
    /// id the refund's own key (the same for every request of the same refund).
    async fn refund(
        &self,
        refund: &crate::seckill::payment::refunds::RefundRequest,
    ) -> Result<String, ProviderError> {
        Ok(format!("sandbox-{}", refund.key()))
    }
}

/// A return URL the sandbox accepts: a page of the shop on this origin, nothing else (an
/// open redirect would send buyers anywhere).
fn return_url(raw: Option<String>) -> String {
    raw.filter(|url| {
        url.starts_with("/shop/")
            && !url.contains("//")
            && url.chars().all(|c| c.is_ascii_graphic())
    })
    .unwrap_or_else(|| "/shop/".to_owned())
}

fn id_parameter(value: Option<String>, name: &str) -> Result<String, ApiError> {
    value
        .filter(|id| valid_id(id))
        .ok_or_else(|| ApiError::bad_request(format!("{name} is missing or malformed")))
}

const PAGE: &str = include_str!("sandbox.html");

/// `GET /sandbox/payments/{paymentId}?orderId=&amountCents=&returnUrl=`: the sandbox's
/// checkout page.
pub fn page(request: &Request) -> Result<Response<Body>, ApiError> {
    let payment_id = id_parameter(path_parameter(request, "paymentId").ok(), "paymentId")?;
    let order_id = id_parameter(query_parameter(request, "orderId"), "orderId")?;
    let amount: u64 = query_parameter(request, "amountCents")
        .and_then(|raw| raw.parse().ok())
        .ok_or_else(|| ApiError::bad_request("amountCents must be a whole number of cents"))?;
    let back = return_url(query_parameter(request, "returnUrl"));
    let html = PAGE
        .replace("{{paymentId}}", &escape(&payment_id))
        .replace("{{orderId}}", &escape(&order_id))
        .replace("{{amountCents}}", &amount.to_string())
        .replace(
            "{{amount}}",
            &format!("{}.{:02}", amount / 100, amount % 100),
        )
        .replace("{{returnUrl}}", &escape(&back))
        .replace("{{callback}}", CALLBACK_PATH)
        .replace("{{header}}", SIGNATURE_HEADER);
    let mut response = Response::new(Body::Text(html));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// What the buyer chose on the sandbox page.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
enum Outcome {
    Pay,
    Fail,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NoticeRequest {
    outcome: Outcome,
    order_id: OrderId,
}

/// The signed notice, for the page to send to the callback.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SignedNotice {
    callback_url: &'static str,
    body: String,
    signature: String,
}

/// `POST /sandbox/payments/{paymentId}` `{"outcome", "orderId"}`, by the buyer (bearer
/// token): the notice of the payment's outcome for the caller's order, with the order's amount
/// and currency, and its signature made with the sandbox's secret at `now` (unix seconds).
/// 401 without a token; 400 for a malformed payment or order id; 404 for an order that does
/// not exist or is someone else's; 409 `ORDER_NOT_PAYABLE` for one not awaiting an online
/// payment, 409 `NOT_THE_ORDERS_PAYMENT` for a payment id the order's payment was not opened
/// with. Nothing is signed then.
pub async fn notice(
    store: &dyn OrderStore,
    secret: &WebhookSecret,
    request: &Request,
    now: i64,
) -> Result<Response<Body>, ApiError> {
    let caller = Caller::from_request(request)?;
    let payment_id = path_parameter(request, "paymentId")
        .ok()
        .and_then(|raw| PaymentId::parse(&raw).ok())
        .ok_or_else(|| ApiError::bad_request("paymentId in the path is missing or malformed"))?;
    let chosen: NoticeRequest = parse_body(request)?;
    record_id("order", &chosen.order_id);
    let order = match store.order(&chosen.order_id).await.map_err(store_error)? {
        Some(order) if order.user_id == caller.user_id => order,
        _ => return Err(ApiError::not_found("no such order")),
    };
    if order.status != OrderStatus::Confirmed {
        return Err(ApiError::conflict(
            ErrorCode::OrderNotPayable,
            format!(
                "the order is {}: it is not awaiting a payment",
                order.status.as_str()
            ),
        ));
    }
    if order.payment_id.as_deref() != Some(payment_id.as_str()) {
        return Err(ApiError::conflict(
            ErrorCode::NotTheOrdersPayment,
            format!(
                "{payment_id} is not the payment opened for this order: pay it from the \
                 order's page (POST /orders/{{orderId}}/pay)"
            ),
        ));
    }
    let notice = PaymentNotice {
        event_id: format!("evt_{}", uuid::Uuid::now_v7().simple()),
        payment_id,
        currency: Currency::of(&order),
        order_id: chosen.order_id,
        amount_cents: order.total_cents,
        status: match chosen.outcome {
            Outcome::Pay => PaymentStatus::Succeeded,
            Outcome::Fail => PaymentStatus::Failed,
        },
    };
    let body = serde_json::to_string(&notice).map_err(ApiError::internal)?;
    let signature = secret.sign(now, body.as_bytes());
    Ok(json(
        StatusCode::OK,
        &SignedNotice {
            callback_url: CALLBACK_PATH,
            body,
            signature,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seckill::order::fake::{O1, O2, S1, awaiting_payment};
    use crate::testing::{answer, api_request, assert_refused, claims_of};
    use lambda_http::RequestExt;
    use serde_json::json;
    use std::collections::HashMap;

    fn with_payment(request: Request, query: &[(&str, &str)]) -> Request {
        let query: HashMap<String, String> = query
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        request
            .with_path_parameters(HashMap::from([(
                "paymentId".to_owned(),
                "pay_1".to_owned(),
            )]))
            .with_query_string_parameters(query)
    }

    #[tokio::test]
    async fn the_provider_sends_the_buyer_to_the_sandbox_page_of_the_payment() {
        let order = crate::seckill::order::fake::O1;
        let session = PaymentSession {
            payment_id: "pay_1".into(),
            order_id: OrderId::parse(order).unwrap(),
            amount_cents: 1_998,
            currency: Currency::shop(),
            return_url: format!("/shop/order.html?id={order}"),
        };
        let url = SandboxProvider.open(&session).await.unwrap();
        assert_eq!(
            url,
            format!(
                "/sandbox/payments/pay_1?orderId={order}&amountCents=1998&returnUrl=%2Fshop%2Forder.html%3Fid%3D{order}"
            )
        );
    }

    #[test]
    fn the_page_shows_the_amount_and_returns_only_to_the_shop() {
        let query = [
            ("orderId", "s.o"),
            ("amountCents", "1998"),
            ("returnUrl", "/shop/order.html?id=s.o"),
        ];
        let request = with_payment(api_request("GET", "/p", "", json!(null)), &query);
        let response = page(&request).unwrap();
        let Body::Text(html) = response.body() else {
            panic!("a text body")
        };
        assert!(html.contains("19.98"), "{html}");
        assert!(
            html.contains(r#"data-return="/shop/order.html?id=s.o""#),
            "{html}"
        );
        assert_eq!(return_url(Some("https://evil.example/".into())), "/shop/");
        assert_eq!(return_url(Some("/shop//evil.example".into())), "/shop/");
        assert_eq!(return_url(None), "/shop/");
        let request = with_payment(
            api_request("GET", "/p", "", json!(null)),
            &[("orderId", "s.o"), ("amountCents", "-1")],
        );
        assert_eq!(
            page(&request).unwrap_err().status(),
            StatusCode::BAD_REQUEST
        );
    }

    fn sandbox_secret() -> WebhookSecret {
        WebhookSecret::new(b"sandbox-test-secret!".to_vec()).unwrap()
    }

    /// The sandbox's POST for `payment`, as `caller` (no token when `None`).
    async fn post(
        store: &dyn OrderStore,
        caller: Option<&str>,
        payment: &str,
        body: serde_json::Value,
    ) -> (u16, serde_json::Value) {
        let claims = caller.map(claims_of).unwrap_or(json!(null));
        let request = api_request("POST", "/p", &body.to_string(), claims).with_path_parameters(
            HashMap::from([("paymentId".to_owned(), payment.to_owned())]),
        );
        answer(notice(store, &sandbox_secret(), &request, 1_000).await)
    }

    #[tokio::test]
    async fn the_notice_of_the_callers_own_payment_is_signed_with_the_order_amount() {
        let (store, _) = awaiting_payment(O1, "ann", "pay_1").await;
        // The request names no amount: the order's total and currency are signed.
        let (status, signed) = post(
            &store,
            Some("ann"),
            "pay_1",
            json!({"outcome": "PAY", "orderId": O1}),
        )
        .await;
        assert_eq!(status, 200, "{signed}");
        let sent = signed["body"].as_str().unwrap();
        let header = signed["signature"].as_str().unwrap();
        assert_eq!(
            sandbox_secret().verify(Some(header), sent.as_bytes(), 1_000),
            Ok(())
        );
        let parsed: PaymentNotice = serde_json::from_str(sent).unwrap();
        assert_eq!(parsed.status, PaymentStatus::Succeeded);
        assert_eq!(
            (
                parsed.payment_id.as_str(),
                parsed.order_id.as_str(),
                parsed.amount_cents,
                parsed.currency.as_str()
            ),
            ("pay_1", O1, 1_980, "EUR")
        );
        let (status, failed) = post(
            &store,
            Some("ann"),
            "pay_1",
            json!({"outcome": "FAIL", "orderId": O1}),
        )
        .await;
        assert_eq!(status, 200, "{failed}");
        let amount = json!({"outcome": "PAY", "orderId": O1, "amountCents": 1});
        assert_eq!(post(&store, Some("ann"), "pay_1", amount).await.0, 400);
        let bad = json!({"outcome": "MAYBE", "orderId": O1});
        assert_eq!(post(&store, Some("ann"), "pay_1", bad).await.0, 400);
    }

    #[tokio::test]
    async fn the_sandbox_signs_nothing_for_a_stranger_another_payment_or_an_order_not_awaiting_one()
    {
        let (store, reservations) = awaiting_payment(O1, "ann", "pay_1").await;
        let pay = json!({"outcome": "PAY", "orderId": O1});
        let no_token = post(&store, None, "pay_1", pay.clone()).await;
        assert_eq!(no_token.0, 401, "{no_token:?}");
        let stranger = post(&store, Some("bob"), "pay_1", pay.clone()).await;
        assert_refused(&stranger, 404, "NOT_FOUND", "no such order");
        let other = post(&store, Some("ann"), "pay_2", pay.clone()).await;
        assert_refused(
            &other,
            409,
            "NOT_THE_ORDERS_PAYMENT",
            "pay_2 is not the payment opened for this order",
        );
        let malformed = post(&store, Some("ann"), "pay#1", pay.clone()).await;
        assert_refused(&malformed, 400, "BAD_REQUEST", "paymentId");
        let unknown = json!({"outcome": "PAY", "orderId": O2});
        assert_refused(
            &post(&store, Some("ann"), "pay_1", unknown).await,
            404,
            "NOT_FOUND",
            "no such order",
        );
        let loose = json!({"outcome": "PAY", "orderId": "o1"});
        assert_eq!(post(&store, Some("ann"), "pay_1", loose).await.0, 400);
        // An order whose window ended is not awaiting a payment any more.
        let due = crate::seckill::order::fake::due(O1, S1);
        let failed = crate::seckill::payment::timeout::handle_batch(
            crate::seckill::payment::timeout::test_deps(&store, &reservations),
            crate::testing::batch(&[due]),
        )
        .await;
        assert!(failed.is_empty());
        let late = post(&store, Some("ann"), "pay_1", pay).await;
        assert_refused(&late, 409, "ORDER_NOT_PAYABLE", "the order is CANCELLED");
        assert!(store.refunds().is_empty());
    }
}
