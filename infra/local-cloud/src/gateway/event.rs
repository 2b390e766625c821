//! The request event that API Gateway HTTP APIs send to Lambda (payload format 2.0), written
//! straight from the request to JSON: no intermediate `Value`, no copy of the headers.

use super::router::percent_decode;
use crate::runtime::DEFAULT_ACCOUNT_ID;
use base64::display::Base64Display;
use base64::engine::general_purpose::STANDARD;
use http::header::{CONTENT_TYPE, COOKIE, HOST, USER_AGENT};
use http::request::Parts;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt::{self, Display, Write as _};
use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What the event is made of.
pub(crate) struct Source<'a> {
    /// `METHOD /path` as written in the template.
    pub(crate) route_key: &'a str,
    pub(crate) parts: &'a Parts,
    /// Names and raw (still percent-encoded) values.
    pub(crate) path_params: &'a [(&'a str, &'a str)],
    /// The verified token's claims, on routes with an authorizer.
    pub(crate) claims: Option<&'a Map<String, Value>>,
    pub(crate) body: &'a [u8],
    pub(crate) request_id: &'a str,
    pub(crate) peer: SocketAddr,
    pub(crate) local: SocketAddr,
}

/// The event as JSON.
pub(crate) fn build(source: &Source<'_>) -> Vec<u8> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let mut out = Vec::with_capacity(1024 + source.body.len() * 4 / 3);
    serde_json::to_writer(&mut out, &Event { source, now })
        .expect("an event always serializes to a Vec");
    out
}

struct Event<'a> {
    source: &'a Source<'a>,
    now: Duration,
}

impl Serialize for Event<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let source = self.source;
        let parts = source.parts;
        let raw_query = parts.uri.query().unwrap_or("");
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("version", "2.0")?;
        map.serialize_entry("routeKey", source.route_key)?;
        map.serialize_entry("rawPath", parts.uri.path())?;
        map.serialize_entry("rawQueryString", raw_query)?;
        let cookies = Cookies(parts);
        if cookies.iter().next().is_some() {
            map.serialize_entry("cookies", &cookies)?;
        }
        map.serialize_entry(
            "headers",
            &Headers {
                source,
                now: self.now,
            },
        )?;
        if !raw_query.is_empty() {
            map.serialize_entry("queryStringParameters", &Query(raw_query))?;
        }
        if !source.path_params.is_empty() {
            map.serialize_entry("pathParameters", &PathParams(source.path_params))?;
        }
        map.serialize_entry("stageVariables", &())?;
        map.serialize_entry(
            "requestContext",
            &Context {
                source,
                now: self.now,
            },
        )?;
        match body(parts, source.body) {
            None => map.serialize_entry("isBase64Encoded", &false)?,
            Some(Body::Text(text)) => {
                map.serialize_entry("body", text)?;
                map.serialize_entry("isBase64Encoded", &false)?;
            }
            Some(Body::Binary(bytes)) => {
                map.serialize_entry("body", &Collect(Base64Display::new(bytes, &STANDARD)))?;
                map.serialize_entry("isBase64Encoded", &true)?;
            }
        }
        map.end()
    }
}

enum Body<'a> {
    Text(&'a str),
    Binary(&'a [u8]),
}

/// As API Gateway: textual content types go as text, everything else base64. Without a
/// content type, UTF-8 goes as text.
fn body<'a>(parts: &Parts, body: &'a [u8]) -> Option<Body<'a>> {
    if body.is_empty() {
        return None;
    }
    let textual = parts
        .headers
        .get(CONTENT_TYPE)
        .map(|value| is_textual(value.as_bytes()));
    match (textual, std::str::from_utf8(body)) {
        (Some(true) | None, Ok(text)) => Some(Body::Text(text)),
        _ => Some(Body::Binary(body)),
    }
}

pub(crate) fn is_textual(content_type: &[u8]) -> bool {
    let essence = content_type
        .split(|&b| b == b';')
        .next()
        .unwrap_or_default()
        .trim_ascii();
    let Ok(essence) = std::str::from_utf8(essence) else {
        return false;
    };
    let essence = essence.to_ascii_lowercase();
    essence.starts_with("text/")
        || essence == "application/json"
        || essence.ends_with("+json")
        || essence == "application/xml"
        || essence.ends_with("+xml")
        || essence == "application/x-www-form-urlencoded"
        || essence.contains("javascript")
}

/// Writes a `Display` as a JSON string without an intermediate `String`.
struct Collect<T>(T);

impl<T: Display> Serialize for Collect<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

/// The `Cookie` headers, split: format 2.0 moves them out of `headers`.
struct Cookies<'a>(&'a Parts);

impl<'a> Cookies<'a> {
    fn iter(&self) -> impl Iterator<Item = Cow<'a, str>> + 'a {
        self.0
            .headers
            .get_all(COOKIE)
            .iter()
            .flat_map(|value| value.as_bytes().split(|&b| b == b';'))
            .map(<[u8]>::trim_ascii)
            .filter(|cookie| !cookie.is_empty())
            .map(String::from_utf8_lossy)
    }
}

impl Serialize for Cookies<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        for cookie in self.iter() {
            seq.serialize_element(&*cookie)?;
        }
        seq.end()
    }
}

/// Headers API Gateway sets itself, replacing what the client sent.
const SET_BY_GATEWAY: [&str; 4] = [
    "x-forwarded-for",
    "x-forwarded-port",
    "x-forwarded-proto",
    "x-amzn-trace-id",
];

struct Headers<'a> {
    source: &'a Source<'a>,
    now: Duration,
}

impl Serialize for Headers<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let headers = &self.source.parts.headers;
        let mut map = serializer.serialize_map(None)?;
        for name in headers.keys() {
            if name == COOKIE || SET_BY_GATEWAY.contains(&name.as_str()) {
                continue;
            }
            map.serialize_entry(name.as_str(), &Collect(Joined(headers.get_all(name))))?;
        }
        let forwarded = headers.get_all("x-forwarded-for");
        let peer = self.source.peer.ip();
        if forwarded.iter().next().is_some() {
            map.serialize_entry(
                "x-forwarded-for",
                &Collect(format_args!("{}, {peer}", Joined(forwarded))),
            )?;
        } else {
            map.serialize_entry("x-forwarded-for", &Collect(peer))?;
        }
        map.serialize_entry("x-forwarded-port", &Collect(self.source.local.port()))?;
        map.serialize_entry("x-forwarded-proto", "http")?;
        map.serialize_entry(
            "x-amzn-trace-id",
            &Collect(TraceId {
                seconds: self.now.as_secs(),
                request_id: self.source.request_id,
            }),
        )?;
        map.end()
    }
}

/// Repeated headers, joined with commas as format 2.0 does.
struct Joined<'a>(http::header::GetAll<'a, http::HeaderValue>);

impl Display for Joined<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, value) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_char(',')?;
            }
            f.write_str(&String::from_utf8_lossy(value.as_bytes()))?;
        }
        Ok(())
    }
}

struct TraceId<'a> {
    seconds: u64,
    request_id: &'a str,
}

impl Display for TraceId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Root=1-{:08x}-", self.seconds as u32)?;
        // 24 hex digits from the request id, which is unique.
        for byte in self.request_id.bytes().take(12) {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

/// `queryStringParameters`: decoded, repeated keys joined with commas.
struct Query<'a>(&'a str);

pub(crate) fn query_pairs(raw: &str) -> Vec<(Cow<'_, str>, Cow<'_, str>)> {
    let mut pairs: Vec<(Cow<'_, str>, Cow<'_, str>)> = Vec::new();
    for pair in raw.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let (key, value) = (percent_decode(key), percent_decode(value));
        match pairs.iter_mut().find(|(existing, _)| *existing == key) {
            Some((_, joined)) => {
                let joined = joined.to_mut();
                joined.push(',');
                joined.push_str(&value);
            }
            None => pairs.push((key, value)),
        }
    }
    pairs
}

impl Serialize for Query<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(query_pairs(self.0))
    }
}

struct PathParams<'a>(&'a [(&'a str, &'a str)]);

impl Serialize for PathParams<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(
            self.0
                .iter()
                .map(|(name, value)| (*name, percent_decode(value))),
        )
    }
}

struct Context<'a> {
    source: &'a Source<'a>,
    now: Duration,
}

impl Serialize for Context<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let source = self.source;
        let parts = source.parts;
        let host = parts
            .headers
            .get(HOST)
            .and_then(|value| value.to_str().ok());
        let local = source.local.to_string();
        let domain = host.unwrap_or(&local);
        let prefix = domain.split(['.', ':']).next().unwrap_or(domain);
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("accountId", DEFAULT_ACCOUNT_ID)?;
        map.serialize_entry("apiId", "local")?;
        if let Some(claims) = source.claims {
            map.serialize_entry("authorizer", &Authorizer(claims))?;
        }
        map.serialize_entry("domainName", domain)?;
        map.serialize_entry("domainPrefix", prefix)?;
        map.serialize_entry("http", &HttpContext(source))?;
        map.serialize_entry("requestId", source.request_id)?;
        map.serialize_entry("routeKey", source.route_key)?;
        map.serialize_entry("stage", "$default")?;
        map.serialize_entry("time", &Collect(RequestTime(self.now.as_secs())))?;
        map.serialize_entry("timeEpoch", &(self.now.as_millis() as u64))?;
        map.end()
    }
}

struct HttpContext<'a>(&'a Source<'a>);

impl Serialize for HttpContext<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let parts = self.0.parts;
        let user_agent = parts
            .headers
            .get(USER_AGENT)
            .map(|value| String::from_utf8_lossy(value.as_bytes()))
            .unwrap_or_default();
        let mut map = serializer.serialize_map(Some(5))?;
        map.serialize_entry("method", parts.method.as_str())?;
        map.serialize_entry("path", parts.uri.path())?;
        map.serialize_entry("protocol", &Collect(format_args!("{:?}", parts.version)))?;
        map.serialize_entry("sourceIp", &Collect(self.0.peer.ip()))?;
        map.serialize_entry("userAgent", &*user_agent)?;
        map.end()
    }
}

/// `{"jwt": {"claims": {...}, "scopes": null}}`, every claim as a string.
struct Authorizer<'a>(&'a Map<String, Value>);

impl Serialize for Authorizer<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Jwt<'a>(&'a Map<String, Value>);
        impl Serialize for Jwt<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("claims", &Claims(self.0))?;
                map.serialize_entry("scopes", &())?;
                map.end()
            }
        }
        struct Claims<'a>(&'a Map<String, Value>);
        impl Serialize for Claims<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_map(
                    self.0
                        .iter()
                        .map(|(name, value)| (name, Collect(ClaimText(value)))),
                )
            }
        }
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("jwt", &Jwt(self.0))?;
        map.end()
    }
}

/// A claim as API Gateway passes it: strings as they are, arrays as `[a b]`, numbers and
/// booleans as their JSON text.
pub(crate) struct ClaimText<'a>(pub(crate) &'a Value);

impl Display for ClaimText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Value::String(text) => f.write_str(text),
            Value::Array(items) => {
                f.write_char('[')?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_char(' ')?;
                    }
                    write!(f, "{}", ClaimText(item))?;
                }
                f.write_char(']')
            }
            other => write!(f, "{other}"),
        }
    }
}

/// `requestContext.time`: `12/Mar/2020:19:03:58 +0000`.
struct RequestTime(u64);

impl Display for RequestTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MONTHS: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        let time = time::OffsetDateTime::from_unix_timestamp(self.0 as i64)
            .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
        write!(
            f,
            "{:02}/{}/{}:{:02}:{:02}:{:02} +0000",
            time.day(),
            MONTHS[usize::from(u8::from(time.month())) - 1],
            time.year(),
            time.hour(),
            time.minute(),
            time.second()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
    use http::Request;

    fn parts(request: Request<()>) -> Parts {
        request.into_parts().0
    }

    fn source<'a>(
        parts: &'a Parts,
        params: &'a [(&'a str, &'a str)],
        claims: Option<&'a Map<String, Value>>,
        body: &'a [u8],
    ) -> Source<'a> {
        Source {
            route_key: "GET /items/{itemId}",
            parts,
            path_params: params,
            claims,
            body,
            request_id: "Mc7UVioPPHcEKPA=",
            peer: "127.0.0.1:50000".parse().unwrap(),
            local: "127.0.0.1:3000".parse().unwrap(),
        }
    }

    #[test]
    fn event_reads_as_the_lambda_events_type() {
        let parts = parts(
            Request::get("/items/a%20b?x=1&x=2&y=%C3%A9&flag")
                .header("host", "localhost:3000")
                .header("user-agent", "test/1.0")
                .header("accept", "text/plain")
                .header("accept", "application/json")
                .header("cookie", "a=1; b=2")
                .header("cookie", "c=3")
                .header("content-type", "application/json")
                .body(())
                .unwrap(),
        );
        let claims: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "sub": "alice", "cognito:groups": ["admin", "ops"], "exp": 1700000000, "admin": true
        }))
        .unwrap();
        let params = [("itemId", "a%20b")];
        let event = build(&source(&parts, &params, Some(&claims), br#"{"k":"v"}"#));
        let raw: Value = serde_json::from_slice(&event).unwrap();
        assert_eq!(raw["stageVariables"], Value::Null);
        assert_eq!(
            raw["requestContext"]["authorizer"]["jwt"]["scopes"],
            Value::Null
        );
        assert!(raw["headers"].get("cookie").is_none());

        let typed: ApiGatewayV2httpRequest = serde_json::from_slice(&event).unwrap();
        assert_eq!(typed.version.as_deref(), Some("2.0"));
        assert_eq!(typed.route_key.as_deref(), Some("GET /items/{itemId}"));
        assert_eq!(typed.raw_path.as_deref(), Some("/items/a%20b"));
        assert_eq!(
            typed.raw_query_string.as_deref(),
            Some("x=1&x=2&y=%C3%A9&flag")
        );
        assert_eq!(typed.cookies.unwrap(), ["a=1", "b=2", "c=3"]);
        assert_eq!(typed.headers["accept"], "text/plain,application/json");
        assert_eq!(typed.headers["x-forwarded-for"], "127.0.0.1");
        assert_eq!(typed.headers["x-forwarded-proto"], "http");
        assert_eq!(raw["queryStringParameters"]["x"], "1,2");
        // The lambda_events type splits joined values again.
        assert_eq!(typed.query_string_parameters.all("x"), Some(vec!["1", "2"]));
        assert_eq!(typed.query_string_parameters.first("y"), Some("é"));
        assert_eq!(typed.query_string_parameters.first("flag"), Some(""));
        assert_eq!(typed.path_parameters["itemId"], "a b");
        assert_eq!(typed.body.as_deref(), Some(r#"{"k":"v"}"#));
        assert!(!typed.is_base64_encoded);
        let context = typed.request_context;
        assert_eq!(context.http.method, http::Method::GET);
        assert_eq!(context.http.path.as_deref(), Some("/items/a%20b"));
        assert_eq!(context.http.protocol.as_deref(), Some("HTTP/1.1"));
        assert_eq!(context.http.source_ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(context.http.user_agent.as_deref(), Some("test/1.0"));
        assert_eq!(context.stage.as_deref(), Some("$default"));
        assert_eq!(context.domain_name.as_deref(), Some("localhost:3000"));
        assert_eq!(context.domain_prefix.as_deref(), Some("localhost"));
        assert_eq!(context.request_id.as_deref(), Some("Mc7UVioPPHcEKPA="));
        assert!(context.time_epoch > 1_600_000_000_000);
        let time = context.time.unwrap();
        assert_eq!(time.len(), "12/Mar/2020:19:03:58 +0000".len(), "{time}");
        let jwt_claims = context.authorizer.unwrap().jwt.unwrap().claims;
        assert_eq!(jwt_claims["sub"], "alice");
        assert_eq!(jwt_claims["cognito:groups"], "[admin ops]");
        assert_eq!(jwt_claims["exp"], "1700000000");
        assert_eq!(jwt_claims["admin"], "true");
    }

    #[test]
    fn binary_and_missing_bodies() {
        let binary = parts(
            Request::post("/up")
                .header("content-type", "image/png")
                .body(())
                .unwrap(),
        );
        let event = build(&source(&binary, &[], None, &[0, 159, 146, 150]));
        let typed: ApiGatewayV2httpRequest = serde_json::from_slice(&event).unwrap();
        assert!(typed.is_base64_encoded);
        assert_eq!(typed.body.as_deref(), Some("AJ+Slg=="));
        assert!(typed.request_context.authorizer.is_none());
        assert!(typed.cookies.is_none());

        let empty = parts(Request::get("/").body(()).unwrap());
        let raw: Value = serde_json::from_slice(&build(&source(&empty, &[], None, b""))).unwrap();
        assert!(raw.get("body").is_none());
        assert!(raw.get("queryStringParameters").is_none());
        assert!(raw.get("pathParameters").is_none());
        assert_eq!(raw["isBase64Encoded"], false);

        // Textual type, but not UTF-8: it can only go as base64.
        let latin1 = parts(
            Request::post("/")
                .header("content-type", "text/plain")
                .body(())
                .unwrap(),
        );
        let raw: Value =
            serde_json::from_slice(&build(&source(&latin1, &[], None, &[0xe9]))).unwrap();
        assert_eq!(raw["isBase64Encoded"], true);
    }

    #[test]
    fn textual_content_types() {
        for textual in [
            "text/html; charset=utf-8",
            "application/json",
            "application/problem+json",
            "application/xml",
            "application/atom+xml",
            "application/x-www-form-urlencoded",
            "application/javascript",
            "Application/JSON",
        ] {
            assert!(is_textual(textual.as_bytes()), "{textual}");
        }
        for binary in [
            "image/png",
            "application/octet-stream",
            "multipart/form-data",
        ] {
            assert!(!is_textual(binary.as_bytes()), "{binary}");
        }
    }

    #[test]
    fn claim_texts() {
        let text = |v: Value| ClaimText(&v).to_string();
        assert_eq!(text(serde_json::json!("x")), "x");
        assert_eq!(text(serde_json::json!(["a", "b"])), "[a b]");
        assert_eq!(text(serde_json::json!([1, "b"])), "[1 b]");
        assert_eq!(text(serde_json::json!(12)), "12");
        assert_eq!(text(serde_json::json!(1.5)), "1.5");
        assert_eq!(text(serde_json::json!(false)), "false");
    }

    #[test]
    fn request_time_format() {
        assert_eq!(
            RequestTime(1_584_039_838).to_string(),
            "12/Mar/2020:19:03:58 +0000"
        );
    }
}
