//! A cloud call's failure, told apart by whether sending it again may succeed.
//!
//! A timeout, a request that never reached the service, a response cut short, throttling or a
//! 5xx of the service goes away by itself: it becomes a [`Transient`], which every route
//! answers `503 RETRY` ([`crate::http::ApiError::internal`] looks for it in the cause chain),
//! so that a client retries a request it may safely send again. Anything else (a validation
//! error, a missing table, a denied permission) stays an error of ours, a 500.
//!
//! Every write a route makes is safe to send again: a follow, an order or a refund is keyed
//! by what it is, so a retry after a write that did land finds it there and answers as the
//! first one would have.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use std::error::Error;
use std::fmt::Display;

/// A call that failed for a moment: `what` was being done, `source` is the SDK's error.
#[derive(Debug, thiserror::Error)]
#[error("{what}: the service was briefly unavailable")]
pub struct Transient {
    what: String,
    #[source]
    source: Box<dyn Error + Send + Sync>,
}

impl Transient {
    pub fn new(what: impl Display, source: impl Error + Send + Sync + 'static) -> Self {
        Self {
            what: what.to_string(),
            source: Box::new(source),
        }
    }
}

/// Whether `cause` or any error under it is a [`Transient`].
pub fn is_transient(cause: &(dyn Error + 'static)) -> bool {
    let mut next = Some(cause);
    while let Some(error) = next {
        if error.is::<Transient>() {
            return true;
        }
        next = error.source();
    }
    false
}

/// Whether a failed call may succeed when sent again (see the module's documentation).
pub fn passes<E: ProvideErrorMetadata>(err: &SdkError<E, HttpResponse>) -> bool {
    match err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            true
        }
        SdkError::ServiceError(context) => {
            context.raw().status().is_server_error()
                || err
                    .code()
                    .is_some_and(|code| transient_code(code).is_some())
        }
        _ => false,
    }
}

/// `err` as the error of `what`: a [`Transient`] when it [`passes`], else with `what` as its
/// context.
pub fn failure<E>(err: SdkError<E, HttpResponse>, what: impl Display) -> anyhow::Error
where
    E: ProvideErrorMetadata + Error + Send + Sync + 'static,
{
    if passes(&err) {
        anyhow::Error::new(Transient::new(what, err))
    } else {
        anyhow::Error::new(err).context(what.to_string())
    }
}

/// [`failure`] as a method of a call's result: `.send().await.or_fault("failed to ...")?`.
pub trait OrFault<T> {
    fn or_fault(self, what: impl Display) -> anyhow::Result<T>;
}

impl<T, E> OrFault<T> for Result<T, SdkError<E, HttpResponse>>
where
    E: ProvideErrorMetadata + Error + Send + Sync + 'static,
{
    fn or_fault(self, what: impl Display) -> anyhow::Result<T> {
        self.map_err(|err| failure(err, what))
    }
}

/// Error codes, and transaction cancellation reasons, that a later attempt may not meet.
pub(crate) fn transient_code(code: &str) -> Option<&'static str> {
    Some(match code {
        // A cancellation reason: another transaction held the item.
        "TransactionConflict" => "TransactionConflict",
        // A single-item write on an item that an ongoing transaction includes.
        "TransactionConflictException" => "TransactionConflictException",
        // Throttling: a cancellation reason, and the errors of every operation.
        "ThrottlingError" | "ThrottlingException" | "Throttling" => "Throttling",
        "ProvisionedThroughputExceeded" | "ProvisionedThroughputExceededException" => {
            "ProvisionedThroughputExceeded"
        }
        "RequestLimitExceeded" => "RequestLimitExceeded",
        // The same ClientRequestToken still being processed.
        "TransactionInProgressException" => "TransactionInProgress",
        // A fault of the service itself.
        "InternalServerError" | "ServiceUnavailable" => "ServiceUnavailable",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_dynamodb::error::ConnectorError;
    use aws_sdk_dynamodb::operation::get_item::GetItemError;
    use aws_sdk_dynamodb::types::error::ResourceNotFoundException;
    use aws_smithy_runtime_api::http::StatusCode;
    use aws_smithy_types::body::SdkBody;

    fn response(status: u16) -> HttpResponse {
        HttpResponse::new(StatusCode::try_from(status).unwrap(), SdkBody::empty())
    }

    fn service(code: &str, status: u16) -> SdkError<GetItemError, HttpResponse> {
        let meta = aws_sdk_dynamodb::error::ErrorMetadata::builder()
            .code(code)
            .build();
        SdkError::service_error(GetItemError::generic(meta), response(status))
    }

    #[test]
    fn timeouts_dispatch_failures_throttling_and_5xx_pass_and_the_rest_do_not() {
        let timeout: SdkError<GetItemError, HttpResponse> =
            SdkError::timeout_error("operation timed out after 3s");
        let dispatch: SdkError<GetItemError, HttpResponse> =
            SdkError::dispatch_failure(ConnectorError::io("connection refused".into()));
        assert!(passes(&timeout));
        assert!(passes(&dispatch));
        assert!(passes(&service(
            "ProvisionedThroughputExceededException",
            400
        )));
        assert!(passes(&service("ThrottlingException", 400)));
        assert!(passes(&service("InternalServerError", 500)));
        assert!(!passes(&service("ValidationException", 400)));
        let missing = SdkError::service_error(
            GetItemError::ResourceNotFoundException(ResourceNotFoundException::builder().build()),
            response(400),
        );
        assert!(!passes(&missing));
        assert!(!passes(
            &SdkError::<GetItemError, HttpResponse>::construction_failure("no table name")
        ));
    }

    #[test]
    fn a_transient_failure_is_found_under_any_context_and_a_final_one_is_not() {
        let timeout: Result<(), SdkError<GetItemError, HttpResponse>> =
            Err(SdkError::timeout_error("operation timed out after 3s"));
        let err = timeout
            .or_fault("failed to read the profile")
            .unwrap_err()
            .context("the follow failed");
        assert!(is_transient(err.as_ref()));
        let refused: Result<(), _> = Err(service("ValidationException", 400));
        let err = refused.or_fault("failed to read the profile").unwrap_err();
        assert!(!is_transient(err.as_ref()));
        assert!(format!("{err:#}").contains("failed to read the profile"));
    }
}
