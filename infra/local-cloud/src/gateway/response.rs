//! The HTTP response from a function's answer, as API Gateway HTTP APIs read it (payload
//! format 2.0), and the gateway's own error responses.

use crate::runtime::InvokeError;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http::header::{
    CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue, SET_COOKIE,
    TRANSFER_ENCODING, WWW_AUTHENTICATE,
};
use http::{Response, StatusCode};
use http_body_util::Full;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

pub(crate) type HttpResponse = Response<Full<Bytes>>;

const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// A response with API Gateway's `{"message": ...}` body.
pub(crate) fn message(status: StatusCode, body: &'static str) -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    response
}

pub(crate) fn not_found() -> HttpResponse {
    message(StatusCode::NOT_FOUND, r#"{"message":"Not Found"}"#)
}

pub(crate) fn too_large() -> HttpResponse {
    message(
        StatusCode::PAYLOAD_TOO_LARGE,
        r#"{"message":"Request Entity Too Large"}"#,
    )
}

/// A request turned away by the route's throttling.
pub(crate) fn too_many_requests() -> HttpResponse {
    message(
        StatusCode::TOO_MANY_REQUESTS,
        r#"{"message":"Too Many Requests"}"#,
    )
}

/// A web ACL rule's block: its custom response, or WAF's bare 403.
pub(crate) fn blocked(limit: &crate::model::EdgeLimit) -> HttpResponse {
    let (body, content_type) = match &limit.body {
        Some((body, content_type)) => (Bytes::from(body.clone()), content_type.as_str()),
        None => (Bytes::from_static(b"Forbidden"), "text/plain"),
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = StatusCode::from_u16(limit.status).unwrap_or(StatusCode::FORBIDDEN);
    if let Ok(value) = http::HeaderValue::from_str(content_type) {
        response.headers_mut().insert(CONTENT_TYPE, value);
    }
    response
}

pub(crate) fn bad_request() -> HttpResponse {
    message(StatusCode::BAD_REQUEST, r#"{"message":"Bad Request"}"#)
}

/// The HTTP API's answer when an integration outlives its 30 s limit.
pub(crate) fn integration_timeout() -> HttpResponse {
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        r#"{"message":"Service Unavailable"}"#,
    )
}

/// 401 with the `www-authenticate` challenge API Gateway's JWT authorizer sends.
pub(crate) fn unauthorized(challenge: HeaderValue) -> HttpResponse {
    let mut response = message(StatusCode::UNAUTHORIZED, r#"{"message":"Unauthorized"}"#);
    response.headers_mut().insert(WWW_AUTHENTICATE, challenge);
    response
}

const INTERNAL_ERROR: &str = r#"{"message":"Internal Server Error"}"#;

/// What the client gets for an invocation's outcome. The cause of a failure stays in the
/// runner's log, never in the response, as in the cloud.
pub(crate) fn from_invocation(result: Result<Bytes, InvokeError>) -> HttpResponse {
    match result {
        Ok(payload) => from_payload(&payload).unwrap_or_else(malformed),
        Err(InvokeError::Function { .. }) => {
            message(StatusCode::INTERNAL_SERVER_ERROR, INTERNAL_ERROR)
        }
        Err(InvokeError::Crashed(_) | InvokeError::InitFailed(_)) => malformed(),
        Err(InvokeError::Timeout(_)) => message(
            StatusCode::GATEWAY_TIMEOUT,
            r#"{"message":"Service Unavailable"}"#,
        ),
    }
}

fn malformed() -> HttpResponse {
    message(StatusCode::BAD_GATEWAY, INTERNAL_ERROR)
}

/// The function's structured response. Strings borrow from the payload when they can.
#[derive(serde::Deserialize)]
struct Structured<'a> {
    #[serde(rename = "statusCode")]
    status_code: Option<serde_json::Number>,
    #[serde(default, borrow)]
    headers: Option<Pairs<'a, Text<'a>>>,
    #[serde(rename = "multiValueHeaders", default, borrow)]
    multi_value_headers: Option<Pairs<'a, Option<Vec<Text<'a>>>>>,
    #[serde(default, borrow)]
    cookies: Option<Vec<Cow<'a, str>>>,
    #[serde(default, borrow)]
    body: Option<Cow<'a, str>>,
    #[serde(rename = "isBase64Encoded", default)]
    is_base64_encoded: Option<bool>,
}

/// `None` when the payload is malformed.
fn from_payload(payload: &Bytes) -> Option<HttpResponse> {
    let structured = match serde_json::from_slice::<Structured<'_>>(payload) {
        Ok(structured) => structured,
        Err(_) => return passthrough_or_malformed(payload),
    };
    let Some(status) = structured.status_code else {
        // An object without statusCode: format 2.0 returns it as the JSON body.
        return Some(passthrough(payload));
    };
    let status = status
        .as_u64()
        .and_then(|code| u16::try_from(code).ok())
        .and_then(|code| StatusCode::from_u16(code).ok())?;

    let body = match structured.body {
        None => Bytes::new(),
        Some(body) if structured.is_base64_encoded == Some(true) => {
            Bytes::from(STANDARD.decode(body.as_bytes()).ok()?)
        }
        Some(Cow::Borrowed(text)) => payload.slice_ref(text.as_bytes()),
        Some(Cow::Owned(text)) => Bytes::from(text),
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    for (name, value) in structured.headers.iter().flat_map(|pairs| &pairs.0) {
        let Some(value) = &value.0 else { continue };
        headers.append(header_name(name)?, header_value(value)?);
    }
    for (name, values) in structured
        .multi_value_headers
        .iter()
        .flat_map(|pairs| &pairs.0)
    {
        let name = header_name(name)?;
        // `headers` wins over `multiValueHeaders` for a name in both, rather than doubling it.
        if headers.contains_key(&name) {
            continue;
        }
        for value in values.iter().flatten() {
            if let Some(value) = &value.0 {
                headers.append(name.clone(), header_value(value)?);
            }
        }
    }
    for cookie in structured.cookies.iter().flatten() {
        headers.append(SET_COOKIE, header_value(cookie)?);
    }
    Some(response)
}

/// Valid JSON that is not a structured response is the body; an object with a `statusCode`
/// that did not read as one is malformed.
fn passthrough_or_malformed(payload: &Bytes) -> Option<HttpResponse> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "statusCode")]
        status_code: Option<IgnoredAny>,
    }
    match serde_json::from_slice::<Probe>(payload) {
        Ok(Probe {
            status_code: Some(_),
        }) => None,
        Ok(Probe { status_code: None }) => Some(passthrough(payload)),
        Err(_) => serde_json::from_slice::<IgnoredAny>(payload)
            .ok()
            .map(|_| passthrough(payload)),
    }
}

fn passthrough(payload: &Bytes) -> HttpResponse {
    let mut response = Response::new(Full::new(payload.clone()));
    response.headers_mut().insert(CONTENT_TYPE, JSON);
    response
}

/// `None` for an invalid name. Framing headers are the gateway's business, not the
/// function's: a wrong `content-length` would break the connection, so they map to an
/// ignored `x-amzn-remapped-` header as API Gateway does.
fn header_name(name: &str) -> Option<HeaderName> {
    let header = HeaderName::from_bytes(name.as_bytes()).ok()?;
    if header == CONTENT_LENGTH || header == TRANSFER_ENCODING || header == CONNECTION {
        return HeaderName::from_bytes(format!("x-amzn-remapped-{header}").as_bytes()).ok();
    }
    Some(header)
}

fn header_value(value: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(value).ok()
}

/// A JSON object read as its entries, in order, without a map.
struct Pairs<'a, V>(Vec<(Cow<'a, str>, V)>);

impl<'de: 'a, 'a, V: Deserialize<'de>> Deserialize<'de> for Pairs<'a, V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PairsVisitor<'a, V>(std::marker::PhantomData<(Cow<'a, str>, V)>);
        impl<'de: 'a, 'a, V: Deserialize<'de>> Visitor<'de> for PairsVisitor<'a, V> {
            type Value = Pairs<'a, V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(key) = map.next_key::<Key<'a>>()? {
                    pairs.push((key.0, map.next_value()?));
                }
                Ok(Pairs(pairs))
            }
        }
        deserializer.deserialize_map(PairsVisitor(std::marker::PhantomData))
    }
}

/// A map key, borrowed when it has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Text::deserialize(deserializer).and_then(|text| {
            text.0
                .map(Key)
                .ok_or_else(|| serde::de::Error::custom("null key"))
        })
    }
}

/// A header value: a string, or a number or boolean in its JSON text; `null` is none.
struct Text<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Borrowed(text))))
            }
            fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Owned(text.to_owned()))))
            }
            fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Owned(text))))
            }
            fn visit_i64<E>(self, number: i64) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Owned(number.to_string()))))
            }
            fn visit_u64<E>(self, number: u64) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Owned(number.to_string()))))
            }
            fn visit_f64<E>(self, number: f64) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Owned(number.to_string()))))
            }
            fn visit_bool<E>(self, value: bool) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Borrowed(if value {
                    "true"
                } else {
                    "false"
                }))))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Text(None))
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Text(None))
            }
        }
        deserializer.deserialize_any(TextVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    fn respond(payload: &str) -> HttpResponse {
        from_invocation(Ok(Bytes::copy_from_slice(payload.as_bytes())))
    }

    async fn body(response: HttpResponse) -> Bytes {
        response.into_body().collect().await.unwrap().to_bytes()
    }

    #[tokio::test]
    async fn structured_response() {
        let response = respond(
            r#"{"statusCode":201,"headers":{"content-type":"text/plain","x-n":7,"x-null":null,
                "content-length":"999"},
                "multiValueHeaders":{"x-multi":["a","b"],"content-type":["ignored"]},
                "cookies":["a=1; Path=/","b=2"],"body":"caf\u00e9","isBase64Encoded":false}"#,
        );
        assert_eq!(response.status(), 201);
        let headers = response.headers();
        assert_eq!(headers["content-type"], "text/plain");
        assert_eq!(headers["x-n"], "7");
        assert!(!headers.contains_key("x-null"));
        assert!(!headers.contains_key("content-length"));
        assert_eq!(headers["x-amzn-remapped-content-length"], "999");
        assert_eq!(
            headers.get_all("x-multi").iter().collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(
            headers.get_all("set-cookie").iter().collect::<Vec<_>>(),
            ["a=1; Path=/", "b=2"]
        );
        assert_eq!(body(response).await, "café".as_bytes());
    }

    #[tokio::test]
    async fn base64_body() {
        let response = respond(r#"{"statusCode":200,"body":"AJ+Slg==","isBase64Encoded":true}"#);
        assert_eq!(body(response).await, &[0u8, 159, 146, 150][..]);
        let response = respond(r#"{"statusCode":200,"body":"not base64!","isBase64Encoded":true}"#);
        assert_eq!(response.status(), 502);
    }

    #[tokio::test]
    async fn unstructured_payloads_are_the_body() {
        for payload in [r#"{"hello":"world"}"#, r#""just a string""#, "[1,2]", "42"] {
            let response = respond(payload);
            assert_eq!(response.status(), 200, "{payload}");
            assert_eq!(response.headers()["content-type"], "application/json");
            assert_eq!(body(response).await, payload.as_bytes());
        }
    }

    #[test]
    fn malformed_payloads() {
        for payload in [
            "not json",
            r#"{"statusCode":"200"}"#,
            r#"{"statusCode":99}"#,
            r#"{"statusCode":200,"headers":["x"]}"#,
            r#"{"statusCode":200,"headers":{"bad name":"x"}}"#,
            r#"{"statusCode":200,"headers":{"x":"line\nbreak"}}"#,
        ] {
            assert_eq!(respond(payload).status(), 502, "{payload}");
        }
    }

    #[test]
    fn errors() {
        let function = InvokeError::Function {
            error_type: "E".into(),
            error_message: "m".into(),
        };
        assert_eq!(from_invocation(Err(function)).status(), 500);
        assert_eq!(
            from_invocation(Err(InvokeError::Crashed("x".into()))).status(),
            502
        );
        assert_eq!(
            from_invocation(Err(InvokeError::Timeout(std::time::Duration::from_secs(1)))).status(),
            504
        );
    }
}
