//! HTTP entry point of the payment provider's callback, `POST /payments/callback`: no user
//! token; the `Payment-Signature` header authenticates it ([`super::payment`]).

use super::order_routes::store_error;
use super::payment::{
    CallbackSecrets, PaymentNotice, SIGNATURE_HEADER, SettleError, SignatureError, settle,
};
use crate::http::{ApiError, json, parse_body, record_id};
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde_json::json as body;

impl From<SignatureError> for ApiError {
    fn from(err: SignatureError) -> Self {
        let code = match err {
            SignatureError::Stale => "STALE_SIGNATURE",
            SignatureError::Malformed | SignatureError::Mismatch => "BAD_SIGNATURE",
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
    store: &dyn super::orders::OrderStore,
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
            if let super::payment::Settlement::Paid = settlement {
                crate::emf::orders(super::orders::OrderStatus::Paid.as_str(), 1);
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
