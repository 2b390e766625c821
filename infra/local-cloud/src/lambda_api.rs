//! Lambda's Invoke API beside the HTTP API, `POST /2015-03-31/functions/{name}/invocations`:
//! what `aws lambda invoke --endpoint-url`, `cargo lambda invoke` and `make invoke` call to run
//! any function of the template once with an event of one's own (a consumer, a stream
//! handler, a schedule), answering as Lambda does: status codes, headers and error bodies.
//!
//! It is Lambda's API, not an HttpApi route: no authorizer, no route throttling; only a request
//! to the runner itself from no other site's page reaches it ([`crate::guard`]). `LogType: Tail`
//! (the log tail) and the client context are not served: the runner prints the function's
//! output anyway.

use crate::model::FunctionSpec;
use crate::runtime::{FunctionHandle, InvokeError};
use bytes::Bytes;
use http::header::{ALLOW, CONTENT_TYPE, HeaderName, HeaderValue};
use http::request::Parts;
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt as _, Full, LengthLimitError, Limited};
use serde_json::json;
use std::collections::HashMap;

/// The path of Lambda's function operations; no API route starts with it.
const PREFIX: &str = "/2015-03-31/functions/";
const INVOCATIONS: &str = "/invocations";
/// Lambda's quota on a synchronous invocation's request payload (6 MB).
pub const MAX_PAYLOAD_BYTES: usize = 6 * 1024 * 1024;

const INVOCATION_TYPE: HeaderName = HeaderName::from_static("x-amz-invocation-type");
const FUNCTION_ERROR: HeaderName = HeaderName::from_static("x-amz-function-error");
const EXECUTED_VERSION: HeaderName = HeaderName::from_static("x-amz-executed-version");
const ERROR_TYPE: HeaderName = HeaderName::from_static("x-amzn-errortype");
const REQUEST_ID: HeaderName = HeaderName::from_static("x-amzn-requestid");
const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// Whether `path` is Lambda's rather than the HTTP API's.
pub fn is_lambda_api(path: &str) -> bool {
    path.starts_with(PREFIX)
}

/// The functions the Invoke API reaches, and the region and account of their ARNs.
pub struct LambdaApi {
    /// Every function under its name and under its logical id.
    functions: HashMap<String, FunctionHandle>,
    region: String,
    account_id: String,
}

impl LambdaApi {
    pub fn new<'a>(
        functions: impl IntoIterator<Item = (&'a FunctionSpec, FunctionHandle)>,
        region: &str,
        account_id: &str,
    ) -> Self {
        let mut by_name = HashMap::new();
        for (spec, handle) in functions {
            by_name.insert(spec.logical_id.clone(), handle.clone());
            by_name.insert(spec.name.clone(), handle);
        }
        Self {
            functions: by_name,
            region: region.to_owned(),
            account_id: account_id.to_owned(),
        }
    }

    /// Answers one request under [`PREFIX`].
    pub async fn respond<B>(&self, parts: &Parts, body: B) -> Response<Full<Bytes>>
    where
        B: hyper::body::Body,
        B::Error: std::error::Error + Send + Sync + 'static,
    {
        let Some(name) = parts
            .uri
            .path()
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.strip_suffix(INVOCATIONS))
        else {
            // Lambda's other operations (GetFunction, ListFunctions, ...) are not emulated.
            return error(
                StatusCode::NOT_FOUND,
                "UnknownOperationException",
                "Unknown operation",
            );
        };
        if parts.method != Method::POST {
            let mut response = error(
                StatusCode::METHOD_NOT_ALLOWED,
                "UnknownOperationException",
                "Unknown operation",
            );
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("POST"));
            return response;
        }
        // The SDKs percent-encode the name: an ARN's colons arrive as %3A.
        let name = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
        let Some(function) = self.functions.get(unqualified(&name)) else {
            let arn = if name.starts_with("arn:") {
                name.into_owned()
            } else {
                format!(
                    "arn:aws:lambda:{}:{}:function:{name}",
                    self.region, self.account_id
                )
            };
            return error(
                StatusCode::NOT_FOUND,
                "ResourceNotFoundException",
                &format!("Function not found: {arn}"),
            );
        };
        let mode = match parts
            .headers
            .get(INVOCATION_TYPE)
            .map(HeaderValue::as_bytes)
        {
            None | Some(b"RequestResponse") => Mode::RequestResponse,
            Some(b"Event") => Mode::Event,
            Some(b"DryRun") => Mode::DryRun,
            Some(other) => {
                let message = format!(
                    "1 validation error detected: Value '{}' at 'invocationType' failed to \
                     satisfy constraint: Member must satisfy enum value set: \
                     [Event, RequestResponse, DryRun]",
                    String::from_utf8_lossy(other)
                );
                return error(StatusCode::BAD_REQUEST, "ValidationException", &message);
            }
        };
        let payload = match Limited::new(body, MAX_PAYLOAD_BYTES).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(cause) if cause.downcast_ref::<LengthLimitError>().is_some() => {
                return error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "RequestTooLargeException",
                    &format!(
                        "Request must be smaller than {MAX_PAYLOAD_BYTES} bytes for the \
                         InvokeFunction operation"
                    ),
                );
            }
            // The client broke off: nobody reads the answer.
            Err(_) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "InvalidRequestContentException",
                    "Could not read the request body",
                );
            }
        };
        // No payload is an empty object to the function, as `aws lambda invoke` without
        // `--payload` shows.
        let payload = if payload.iter().all(u8::is_ascii_whitespace) {
            Bytes::from_static(b"{}")
        } else {
            payload
        };
        if let Err(cause) = serde_json::from_slice::<serde::de::IgnoredAny>(&payload) {
            return error(
                StatusCode::BAD_REQUEST,
                "InvalidRequestContentException",
                &format!(
                    "Could not parse request body into json: Could not parse payload into \
                     json: {cause}"
                ),
            );
        }
        match mode {
            Mode::DryRun => answer(StatusCode::NO_CONTENT, Bytes::new()),
            Mode::Event => {
                // Lambda queues it and answers at once; its retries of a failed event are
                // not emulated: the runner's log shows the failure.
                let function = function.clone();
                tokio::spawn(async move {
                    let _ = function.invoke("lambda invoke (Event)", payload).await;
                });
                answer(StatusCode::ACCEPTED, Bytes::new())
            }
            Mode::RequestResponse => match function.invoke("lambda invoke", payload).await {
                Ok(result) => {
                    let mut response = answer(StatusCode::OK, result);
                    response
                        .headers_mut()
                        .insert(EXECUTED_VERSION, HeaderValue::from_static("$LATEST"));
                    response
                }
                Err(failure) => function_error(&failure),
            },
        }
    }
}

enum Mode {
    RequestResponse,
    Event,
    DryRun,
}

/// The function's own name out of a full or partial ARN
/// (`arn:aws:lambda:REGION:ACCOUNT:function:NAME`, `ACCOUNT:function:NAME`) of any region and
/// account, without the `$LATEST` qualifier: the only version the runner has.
fn unqualified(name: &str) -> &str {
    let name = name
        .rsplit_once(":function:")
        .map_or(name, |(_, name)| name);
    name.strip_suffix(":$LATEST").unwrap_or(name)
}

fn answer(status: StatusCode, body: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, JSON);
    headers.insert(REQUEST_ID, request_id());
    response
}

/// An error of Lambda's API itself: `x-amzn-ErrorType` and the `{"Type","message"}` body.
fn error(status: StatusCode, error_type: &'static str, message: &str) -> Response<Full<Bytes>> {
    let body = json!({"Type": "User", "message": message}).to_string();
    let mut response = answer(status, Bytes::from(body));
    response
        .headers_mut()
        .insert(ERROR_TYPE, HeaderValue::from_static(error_type));
    response
}

/// The refusal of a request that is not the runner's own ([`crate::guard`]), as Lambda refuses
/// a caller without the permission: 403 `AccessDeniedException`.
pub(crate) fn access_denied(message: &str) -> Response<Full<Bytes>> {
    error(StatusCode::FORBIDDEN, "AccessDeniedException", message)
}

/// A failed invocation is a successful call of the API: 200, `X-Amz-Function-Error` and the
/// error as the function reported it, or as Lambda reports a timeout or a crash.
fn function_error(failure: &InvokeError) -> Response<Full<Bytes>> {
    let (error_type, message) = match failure {
        InvokeError::Function {
            error_type,
            error_message,
        } => (error_type.as_str(), error_message.clone()),
        InvokeError::Timeout(_) => ("Sandbox.Timedout", failure.to_string()),
        InvokeError::Crashed(cause) => ("Runtime.ExitError", cause.clone()),
        InvokeError::InitFailed(cause) => ("Runtime.InitError", cause.clone()),
    };
    let body = json!({"errorMessage": message, "errorType": error_type}).to_string();
    let mut response = answer(StatusCode::OK, Bytes::from(body));
    let headers = response.headers_mut();
    headers.insert(FUNCTION_ERROR, HeaderValue::from_static("Unhandled"));
    headers.insert(EXECUTED_VERSION, HeaderValue::from_static("$LATEST"));
    response
}

/// A request id in Lambda's form, a UUID.
fn request_id() -> HeaderValue {
    HeaderValue::try_from(uuid::Uuid::new_v4().to_string()).expect("a UUID is a header value")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_arns_and_the_latest_qualifier_name_the_function() {
        for (given, name) in [
            ("OrderConsumerFunction", "OrderConsumerFunction"),
            (
                "arn:aws:lambda:us-east-1:123456789012:function:OrderConsumerFunction",
                "OrderConsumerFunction",
            ),
            (
                "123456789012:function:OrderConsumerFunction",
                "OrderConsumerFunction",
            ),
            ("OrderConsumerFunction:$LATEST", "OrderConsumerFunction"),
            ("OrderConsumerFunction:live", "OrderConsumerFunction:live"),
        ] {
            assert_eq!(unqualified(given), name, "{given}");
        }
    }

    #[test]
    fn only_lambdas_paths_are_taken_from_the_http_api() {
        assert!(is_lambda_api("/2015-03-31/functions/X/invocations"));
        assert!(!is_lambda_api("/2015-03-31"));
        assert!(!is_lambda_api("/functions/X/invocations"));
    }
}
