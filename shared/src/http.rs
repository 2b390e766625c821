//! The HTTP boundary: JSON in and out, and the one error type every route answers with.
//!
//! Errors leave as `{"error": {"code": "...", "message": "..."}}` with a fitting status. A
//! failure of ours is an opaque 500 whose cause goes to the log, never to the client.

use lambda_http::http::{StatusCode, header};
use lambda_http::{Body, Request, RequestExt, Response, service_fn};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::convert::Infallible;
use std::future::Future;
use std::sync::OnceLock;
use std::time::Instant;

use crate::emf;
use crate::error_code::ErrorCode;

/// An error answer: status, a stable machine-readable code and a message for people.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: ErrorCode,
    message: String,
    cause: Option<anyhow::Error>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            cause: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ErrorCode::BadRequest, message)
    }

    pub fn unauthenticated() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            ErrorCode::Unauthenticated,
            "a valid bearer token is required",
        )
    }

    pub fn forbidden() -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            ErrorCode::Forbidden,
            "this route is for operators only",
        )
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, message)
    }

    pub fn conflict(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    /// A temporary refusal that the client may retry, e.g. [`ErrorCode::Retry`].
    pub fn unavailable(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, code, message)
    }

    /// A store (Redis, DynamoDB) failing or unreachable, e.g. restarting or failing over: a
    /// `503 RETRY`, since a retry may well succeed. The cause is logged, never shown.
    pub fn store_unavailable(cause: impl Into<anyhow::Error>) -> Self {
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: ErrorCode::Retry,
            message: "briefly unavailable, please retry".to_owned(),
            cause: Some(cause.into()),
        }
    }

    /// A failure of ours. The client learns only that it happened; the cause is logged. A
    /// cause that is a cloud call failing for a moment ([`crate::fault::Transient`]) is a
    /// [`Self::store_unavailable`] instead: the client may send the request again.
    pub fn internal(cause: impl Into<anyhow::Error>) -> Self {
        let cause = cause.into();
        if crate::fault::is_transient(cause.as_ref()) {
            return Self::store_unavailable(cause);
        }
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: ErrorCode::Internal,
            message: "internal error".to_owned(),
            cause: Some(cause),
        }
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    pub fn code(&self) -> ErrorCode {
        self.code
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The response to send, logging the cause of a 5xx on the way out.
    pub fn into_response(self) -> Response<Body> {
        if let Some(cause) = &self.cause {
            tracing::error!(status = self.status.as_u16(), error = ?cause, "request failed");
        }
        json(
            self.status,
            &ErrorBody {
                error: ErrorDetail {
                    code: self.code.as_str(),
                    message: &self.message,
                },
            },
        )
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.code,
            self.message
        )
    }
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

#[derive(Serialize)]
struct ErrorDetail<'a> {
    code: &'a str,
    message: &'a str,
}

/// A JSON response.
pub fn json<T: Serialize + ?Sized>(status: StatusCode, body: &T) -> Response<Body> {
    // Serializing our own response types cannot fail; if it ever did, a 500 is the truth.
    let (status, text) = match serde_json::to_string(body) {
        Ok(text) => (status, text),
        Err(err) => {
            tracing::error!(error = %err, "failed to serialize a response");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                r#"{"error":{"code":"INTERNAL","message":"internal error"}}"#.to_owned(),
            )
        }
    };
    let mut response = Response::new(Body::Text(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// A path parameter of the route (`{name}` in its path), or a 400 naming it.
pub fn path_parameter(request: &Request, name: &str) -> Result<String, ApiError> {
    request
        .path_parameters_ref()
        .and_then(|parameters| parameters.first(name))
        .map(str::to_owned)
        .ok_or_else(|| ApiError::bad_request(format!("the path parameter {name} is missing")))
}

/// The path parameter `name` parsed by `parse` (a 400 naming it when it is missing or does not
/// parse), recorded as this request's `field` ([`record_id`]).
pub fn path_id<T: std::fmt::Display, E: std::fmt::Display>(
    request: &Request,
    name: &str,
    field: &'static str,
    parse: impl FnOnce(&str) -> Result<T, E>,
) -> Result<T, ApiError> {
    let raw = path_parameter(request, name)?;
    let id =
        parse(&raw).map_err(|err| ApiError::bad_request(format!("{name} in the path: {err}")))?;
    record_id(field, &id);
    Ok(id)
}

/// A query string parameter, if present (the first, if repeated).
pub fn query_parameter(request: &Request, name: &str) -> Option<String> {
    request
        .query_string_parameters_ref()
        .and_then(|parameters| parameters.first(name))
        .map(str::to_owned)
}

/// A list route's `limit` and `cursor` query parameters, or a 400 that says which is wrong.
pub fn page_query(
    request: &Request,
) -> Result<(crate::cursor::PageLimit, Option<crate::cursor::Cursor>), ApiError> {
    let limit = crate::cursor::PageLimit::parse(query_parameter(request, "limit").as_deref())
        .map_err(|err| ApiError::bad_request(err.to_string()))?;
    let cursor = query_parameter(request, "cursor")
        .map(|raw| crate::cursor::Cursor::parse(&raw))
        .transpose()
        .map_err(|err| ApiError::bad_request(err.to_string()))?;
    Ok((limit, cursor))
}

/// The request body parsed as JSON, or a 400 that says what is wrong with it.
///
/// Every body of the API is a JSON object; anything else is refused up front, so that the
/// message speaks of the request rather than of the Rust type it was going to fill.
pub fn parse_body<T: DeserializeOwned>(request: &Request) -> Result<T, ApiError> {
    let bytes: &[u8] = request.body().as_ref();
    let Some(first) = bytes.iter().find(|b| !b.is_ascii_whitespace()) else {
        return Err(ApiError::bad_request("a JSON request body is required"));
    };
    if *first != b'{' {
        return Err(ApiError::bad_request(
            "invalid request body: it must be a JSON object",
        ));
    }
    serde_json::from_slice(bytes)
        .map_err(|err| ApiError::bad_request(format!("invalid request body: {err}")))
}

/// The largest request body any route takes. The biggest real one, a sale's definition or
/// 100 notification ids, is under 4 KiB; API Gateway and Lambda would pass up to 6 MB.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// A 413 for a body over [`MAX_BODY_BYTES`], whatever the route: refused before anything
/// reads it.
pub fn refuse_large_body(request: &Request) -> Result<(), ApiError> {
    let size = request.body().as_ref().len();
    if size > MAX_BODY_BYTES {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::PayloadTooLarge,
            format!("the request body is {size} bytes; at most {MAX_BODY_BYTES} are accepted"),
        ));
    }
    Ok(())
}

/// The header CloudFront adds to every request it sends the API (the distribution's
/// `OriginCustomHeaders`), whose value only the distribution and the functions know.
pub const ORIGIN_VERIFY_HEADER: &str = "x-origin-verify";

/// The variable holding that value. Set (and not empty), a request without the header, or
/// with another value, is refused 403 before anything else: it reached the API some other
/// way than through the distribution (the `execute-api` endpoint), past the web ACL's
/// per-source limits. The template sets it on every function; `sam local`, which has no
/// distribution in front, sets it empty.
pub const ORIGIN_VERIFY_ENV: &str = "ORIGIN_VERIFY";

/// [`ORIGIN_VERIFY_ENV`]'s value, read once.
fn origin_secret() -> Option<&'static str> {
    static SECRET: OnceLock<Option<String>> = OnceLock::new();
    SECRET
        .get_or_init(|| {
            std::env::var(ORIGIN_VERIFY_ENV)
                .ok()
                .filter(|value| !value.is_empty())
        })
        .as_deref()
}

/// A 403 for a request that did not come through the distribution, when `expected` is the
/// value the distribution sends; `None`: no check (no distribution in front).
pub fn refuse_foreign_origin(request: &Request, expected: Option<&str>) -> Result<(), ApiError> {
    let Some(expected) = expected else {
        return Ok(());
    };
    let sent = request
        .headers()
        .get(ORIGIN_VERIFY_HEADER)
        .map(|value| value.as_bytes())
        .unwrap_or_default();
    if same_secret(sent, expected.as_bytes()) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::Forbidden,
            "requests are taken only through the shop's own address",
        ))
    }
}

/// Compares without stopping at the first difference, so that the time taken tells a caller
/// guessing the value nothing about how much of it was right.
fn same_secret(sent: &[u8], expected: &[u8]) -> bool {
    sent.len() == expected.len()
        && sent
            .iter()
            .zip(expected)
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}

/// Runs an HTTP function: every request is [`answer`]ed.
pub async fn run<F, Fut>(handler: F) -> Result<(), lambda_http::Error>
where
    F: Fn(Request) -> Fut,
    Fut: Future<Output = Result<Response<Body>, ApiError>> + Send,
{
    lambda_http::run(service_fn(move |request: Request| {
        use lambda_http::RequestExt as _;
        let ids = request
            .lambda_context_ref()
            .map(emf::Ids::from)
            .unwrap_or_default();
        let answer = emf::invocation(ids, answer(&handler, request));
        async move { Ok::<_, Infallible>(answer.await) }
    }))
    .await
}

/// The ids a request may concern, in the order a log line shows them: who calls, the user the
/// call is about, the sale, the order. The route names each with [`record_id`] once it has
/// parsed it.
const REQUEST_IDS: [&str; 4] = ["caller", "target", "sale", "order"];

/// One request: one that did not come through the distribution is refused first
/// ([`refuse_foreign_origin`], when [`ORIGIN_VERIFY_ENV`] is set), then a body over
/// [`MAX_BODY_BYTES`], and an `Err` becomes its error
/// response, so the runtime never sees a handler failure and a client never sees a bare
/// runtime error; each request is counted with its outcome and time ([`emf::request`]). All of it runs in one `request` span holding [`REQUEST_IDS`], so every line
/// logged for the request, the failure's included, says whom it concerns.
pub fn answer<F, Fut>(
    handler: &F,
    request: Request,
) -> impl Future<Output = Response<Body>> + use<F, Fut>
where
    F: Fn(Request) -> Fut,
    Fut: Future<Output = Result<Response<Body>, ApiError>>,
{
    use tracing::Instrument as _;
    let span = tracing::info_span!(
        "request",
        caller = tracing::field::Empty,
        target = tracing::field::Empty,
        sale = tracing::field::Empty,
        order = tracing::field::Empty,
    );
    let started = Instant::now();
    let answer = span.in_scope(|| {
        refuse_foreign_origin(&request, origin_secret())
            .and_then(|()| refuse_large_body(&request))
            .map(|()| handler(request))
    });
    async move {
        let answer = match answer {
            Ok(answer) => answer.await,
            Err(err) => Err(err),
        };
        let (outcome, response) = match answer {
            Ok(response) => ("OK", response),
            Err(err) => (err.code().as_str(), err.into_response()),
        };
        emf::request(outcome, started.elapsed());
        response
    }
    .instrument(span)
}

/// Names `value` as this request's `field`, one of [`REQUEST_IDS`], in the span [`answer`]
/// opened. Call it from the route's own code (not from inside a store call's span).
pub fn record_id(field: &'static str, value: &dyn std::fmt::Display) {
    debug_assert!(REQUEST_IDS.contains(&field), "{field} is not a request id");
    tracing::Span::current().record(field, tracing::field::display(value));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn body_json(response: &Response<Body>) -> Value {
        serde_json::from_slice(response.body().as_ref()).unwrap()
    }

    #[test]
    fn a_body_over_16_kib_is_413_and_one_at_the_limit_passes() {
        let request = |size: usize| {
            let mut request = Request::new(Body::Text("x".repeat(size)));
            *request.method_mut() = lambda_http::http::Method::PUT;
            request
        };
        assert!(refuse_large_body(&request(MAX_BODY_BYTES)).is_ok());
        assert!(refuse_large_body(&Request::default()).is_ok());
        let err = refuse_large_body(&request(MAX_BODY_BYTES + 1)).unwrap_err();
        assert_eq!(err.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(err.code(), ErrorCode::PayloadTooLarge);
        assert_eq!(
            err.message(),
            "the request body is 16385 bytes; at most 16384 are accepted"
        );
    }

    #[test]
    fn a_request_without_the_distributions_header_is_403_when_the_check_is_configured() {
        let request = |header: Option<&str>| {
            let mut request = Request::default();
            if let Some(value) = header {
                request
                    .headers_mut()
                    .insert(ORIGIN_VERIFY_HEADER, value.parse().unwrap());
            }
            request
        };
        let secret = Some("s3cret-from-the-distribution");
        assert!(
            refuse_foreign_origin(&request(Some("s3cret-from-the-distribution")), secret).is_ok()
        );
        for sent in [
            None,
            Some(""),
            Some("s3cret"),
            Some("s3cret-from-the-distributioN"),
        ] {
            let err = refuse_foreign_origin(&request(sent), secret).unwrap_err();
            assert_eq!(err.status(), StatusCode::FORBIDDEN, "{sent:?}");
            assert_eq!(err.code(), ErrorCode::Forbidden);
        }
        // No distribution in front (sam local): no check.
        assert!(refuse_foreign_origin(&request(None), None).is_ok());
    }

    #[tokio::test]
    async fn a_failure_is_logged_with_the_ids_the_route_recorded() {
        let handler = |request: Request| async move {
            crate::auth::Caller::from_request(&request)?;
            record_id("order", &"o-1");
            Err::<Response<Body>, _>(ApiError::internal(anyhow::anyhow!("table is gone")))
        };
        let request = crate::testing::api_request("GET", "/", "", crate::testing::claims_of("ada"));
        let (response, log) =
            crate::testing::logged(async { answer(&handler, request).await }).await;
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let failure = log
            .lines()
            .find(|line| line.contains("request failed"))
            .unwrap();
        assert!(failure.contains("request{caller=ada order=o-1}"), "{log}");
        assert!(failure.contains("table is gone"), "{log}");
    }

    #[tokio::test]
    async fn a_large_body_is_refused_before_the_route_runs() {
        let handler = |_: Request| async { panic!("the route must not run") };
        let mut request = Request::new(Body::Text("x".repeat(MAX_BODY_BYTES + 1)));
        *request.method_mut() = lambda_http::http::Method::PUT;
        let response = answer(&handler, request).await;
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[test]
    fn an_error_answers_with_the_contract_body() {
        let response =
            ApiError::conflict(ErrorCode::SoldOut, "the sale is sold out").into_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(
            body_json(&response),
            json!({"error": {"code": "SOLD_OUT", "message": "the sale is sold out"}})
        );
    }

    #[test]
    fn a_failure_of_ours_or_of_a_store_answers_without_its_cause() {
        let internal = anyhow::anyhow!("table arn:aws:dynamodb:secret-table is throttled");
        let outage = anyhow::anyhow!("connection refused to redis://10.0.0.7:6379");
        for (error, status, body) in [
            (
                ApiError::internal(internal),
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"error": {"code": "INTERNAL", "message": "internal error"}}),
            ),
            (
                ApiError::store_unavailable(outage),
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"error": {"code": "RETRY", "message": "briefly unavailable, please retry"}}),
            ),
        ] {
            let response = error.into_response();
            assert_eq!((response.status(), body_json(&response)), (status, body));
        }
    }

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        #[expect(
            dead_code,
            reason = "the body's one required field: only whether it parses is checked"
        )]
        name: String,
    }

    fn request_with_body(body: &str) -> Request {
        let mut request = Request::new(Body::Text(body.to_owned()));
        *request.method_mut() = lambda_http::http::Method::PUT;
        request
    }

    #[test]
    fn a_missing_body_is_a_bad_request() {
        let err = parse_body::<Sample>(&request_with_body("")).unwrap_err();
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
        assert_eq!(err.message(), "a JSON request body is required");
    }

    #[test]
    fn a_body_that_is_not_an_object_is_refused_without_naming_our_types() {
        for body in [
            "[]",
            "null",
            "7",
            r#""name""#,
            " [{\"name\": \"a\"}]",
            "nonsense",
        ] {
            let err = parse_body::<Sample>(&request_with_body(body)).unwrap_err();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(
                err.message(),
                "invalid request body: it must be a JSON object",
                "{body}"
            );
        }
    }

    #[test]
    fn malformed_json_wrong_types_and_unknown_fields_are_bad_requests() {
        for (body, expected) in [
            ("{", "EOF while parsing"),
            (r#"{"name": 3}"#, "invalid type: integer `3`"),
            (r#"{"name": "a", "admin": true}"#, "unknown field `admin`"),
        ] {
            let err = parse_body::<Sample>(&request_with_body(body)).unwrap_err();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST, "{body}");
            assert!(err.message().contains(expected), "{}", err.message());
        }
    }
}
