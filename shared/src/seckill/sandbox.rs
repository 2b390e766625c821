//! The payment provider's sandbox: an adapter of [`PaymentProvider`] whose checkout page is
//! the `payment-sandbox` function on the same origin, for `make dev` and non-prod stacks
//! (the template deploys it only where `EnvironmentName` is not `prod`).
//!
//! - [`SandboxProvider::open`] answers `/sandbox/payments/{paymentId}?orderId=&amountCents=`
//!   `&returnUrl=`: nothing to call, the page is ours.
//! - `GET /sandbox/payments/{paymentId}` ([`page`]): the amount, the order, and two buttons,
//!   Pay and Fail.
//! - `POST /sandbox/payments/{paymentId}` `{"outcome": "PAY" | "FAIL", "orderId",
//!   "amountCents"}` ([`notice`]): the notice a provider would send and its
//!   `Payment-Signature`, signed with the shared secret, which never leaves the function; the
//!   page sends them to `POST /payments/callback` and then takes the buyer back to the
//!   return URL. A test does the same with two requests.
//!
//! A real provider replaces the adapter (its `open` calls the provider's API; its servers
//! call back with the same header contract, or the callback route's verification is adapted
//! to theirs); the domain ([`super::payment`]) does not change.

use super::payment::{
    PaymentNotice, PaymentProvider, PaymentSession, PaymentStatus, SIGNATURE_HEADER, WebhookSecret,
};
use super::sale_page::escape;
use crate::http::{ApiError, json, parse_body, path_parameter, query_parameter};
use crate::ids::valid_id;
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
    async fn open(&self, session: &PaymentSession) -> anyhow::Result<String> {
        Ok(format!(
            "{SANDBOX_PATH}/{}?orderId={}&amountCents={}&returnUrl={}",
            encode(&session.payment_id),
            encode(&session.order_id),
            session.amount_cents,
            encode(&session.return_url),
        ))
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
    order_id: String,
    amount_cents: u64,
}

/// The signed notice, for the page to send to the callback.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SignedNotice {
    callback_url: &'static str,
    body: String,
    signature: String,
}

/// `POST /sandbox/payments/{paymentId}` `{"outcome", "orderId", "amountCents"}`: the notice of
/// the payment's outcome and its signature, made at `now` (unix seconds).
pub fn notice(
    secret: &WebhookSecret,
    request: &Request,
    now: i64,
) -> Result<Response<Body>, ApiError> {
    let payment_id = id_parameter(path_parameter(request, "paymentId").ok(), "paymentId")?;
    let chosen: NoticeRequest = parse_body(request)?;
    let order_id = id_parameter(Some(chosen.order_id), "orderId")?;
    let notice = PaymentNotice {
        event_id: format!("evt_{}", uuid::Uuid::now_v7().simple()),
        payment_id,
        order_id,
        amount_cents: chosen.amount_cents,
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
    use crate::testing::{answer, api_request};
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
        let session = PaymentSession {
            payment_id: "pay_1".into(),
            order_id: "s.o".into(),
            amount_cents: 1_998,
            return_url: "/shop/order.html?id=s.o".into(),
        };
        let url = SandboxProvider.open(&session).await.unwrap();
        assert_eq!(
            url,
            "/sandbox/payments/pay_1?orderId=s.o&amountCents=1998&returnUrl=%2Fshop%2Forder.html%3Fid%3Ds.o"
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

    #[test]
    fn the_notice_is_signed_with_the_shared_secret() {
        let secret = WebhookSecret::new(b"sandbox-test-secret!".to_vec()).unwrap();
        let body = json!({"outcome": "PAY", "orderId": "s.o", "amountCents": 1998}).to_string();
        let request = with_payment(api_request("POST", "/p", &body, json!(null)), &[]);
        let (status, signed) = answer(notice(&secret, &request, 1_000));
        assert_eq!(status, 200, "{signed}");
        let sent = signed["body"].as_str().unwrap();
        let header = signed["signature"].as_str().unwrap();
        assert_eq!(secret.verify(Some(header), sent.as_bytes(), 1_000), Ok(()));
        let parsed: PaymentNotice = serde_json::from_str(sent).unwrap();
        assert_eq!(parsed.status, PaymentStatus::Succeeded);
        assert_eq!(
            (parsed.payment_id.as_str(), parsed.amount_cents),
            ("pay_1", 1998)
        );
        let bad = json!({"outcome": "MAYBE", "orderId": "s.o", "amountCents": 1}).to_string();
        let request = with_payment(api_request("POST", "/p", &bad, json!(null)), &[]);
        assert_eq!(answer(notice(&secret, &request, 1_000)).0, 400);
    }
}
