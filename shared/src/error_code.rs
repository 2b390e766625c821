//! Every error code the API answers with, in `{"error": {"code": "...", "message": "..."}}`.
//!
//! A client branches on the code, so the set is part of the contract: `openapi.yaml`'s
//! `Error` schema enumerates exactly [`ErrorCode::ALL`] (a contract test in
//! `infra/local-cloud/tests/contract` holds them equal), and a route can answer no code that is
//! not declared here. API Gateway's own refusals carry `{"message": "..."}` instead, no code.

/// Declares the enum, its wire strings and [`ErrorCode::ALL`] from one list, so that a new
/// code cannot be left out of the list the contract test compares.
macro_rules! error_codes {
    ($($(#[doc = $doc:literal])* $variant:ident => $wire:literal,)+) => {
        /// A stable, machine-readable error code; [`ErrorCode::as_str`] is its wire form.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($(#[doc = $doc])* $variant,)+
        }

        impl ErrorCode {
            /// Every code, in declaration order.
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$variant,)+];

            /// The code as the client reads it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $wire,)+
                }
            }
        }
    };
}

error_codes! {
    /// 400: a malformed body, path or query; the message names the problem.
    BadRequest => "BAD_REQUEST",
    /// 400: a user asked to follow themself.
    SelfFollow => "SELF_FOLLOW",
    /// 401: no verified caller (under `sam local`, where the functions check the token).
    Unauthenticated => "UNAUTHENTICATED",
    /// 401: a payment notice whose signature is malformed or does not verify.
    BadSignature => "BAD_SIGNATURE",
    /// 401: a payment notice signed too long ago to be taken.
    StaleSignature => "STALE_SIGNATURE",
    /// 403: an operator's route called by someone else, or a request that did not come
    /// through the distribution.
    Forbidden => "FORBIDDEN",
    /// 404: unknown, or not the caller's.
    NotFound => "NOT_FOUND",
    /// 413: a body over the functions' limit, refused before it is read.
    PayloadTooLarge => "PAYLOAD_TOO_LARGE",
    /// 422: an idempotency key sent again with another sale or body.
    IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
    /// 409: the user to follow is deactivated.
    TargetInactive => "TARGET_INACTIVE",
    /// 409: the caller has no profile yet.
    ProfileRequired => "PROFILE_REQUIRED",
    /// 409: the caller already follows as many users as allowed.
    FollowingLimitReached => "FOLLOWING_LIMIT_REACHED",
    /// 409: a sale's rules change only while it is a draft.
    NotDraft => "NOT_DRAFT",
    /// 409: ending a sale that was never published.
    NotPublished => "NOT_PUBLISHED",
    /// 409: the sale is over.
    Ended => "ENDED",
    /// 409: the sale has not started.
    NotStarted => "NOT_STARTED",
    /// 409: the sale requires a reservation the caller does not hold.
    NotReserved => "NOT_RESERVED",
    /// 409: the caller's units would pass the sale's per-user limit.
    LimitReached => "LIMIT_REACHED",
    /// 409: no unit left.
    SoldOut => "SOLD_OUT",
    /// 409: fewer units left than asked.
    NotEnoughStock => "NOT_ENOUGH_STOCK",
    /// 409: reservations for the sale have not opened yet.
    ReservationNotOpen => "RESERVATION_NOT_OPEN",
    /// 409: the sale started or ended: reservations are neither taken nor cancelled.
    ReservationClosed => "RESERVATION_CLOSED",
    /// 409: anyone may order the sale; there is nothing to reserve.
    ReservationNotRequired => "RESERVATION_NOT_REQUIRED",
    /// 409: the order is cancelled or rejected, or not awaiting a payment.
    OrderNotPayable => "ORDER_NOT_PAYABLE",
    /// 409: the order is not kept for cash on delivery.
    OrderNotCod => "ORDER_NOT_COD",
    /// 409: the payment was already refunded for another order.
    PaymentRefunded => "PAYMENT_REFUNDED",
    /// 409: the payment is not the one opened for the order.
    NotTheOrdersPayment => "NOT_THE_ORDERS_PAYMENT",
    /// 429: the caller's own rate of follows or orders is over its limit.
    RateLimited => "RATE_LIMITED",
    /// 503: no payment provider on this stack.
    PaymentUnavailable => "PAYMENT_UNAVAILABLE",
    /// 503: a temporary refusal; the request may be sent again as it was.
    Retry => "RETRY",
    /// 500: a failure of ours; its cause is in the log, never in the answer.
    Internal => "INTERNAL",
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_code_is_screaming_snake_case_and_unique() {
        let mut seen = BTreeSet::new();
        for code in ErrorCode::ALL {
            let wire = code.as_str();
            assert!(
                wire.starts_with(|c: char| c.is_ascii_uppercase())
                    && wire.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                    && !wire.ends_with('_')
                    && !wire.contains("__"),
                "{code:?}: {wire}"
            );
            assert!(seen.insert(wire), "{wire} is declared twice");
        }
    }
}
