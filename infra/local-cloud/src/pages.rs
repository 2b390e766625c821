//! The shop's pages under `/shop/`, as the cloud's distribution serves them from the pages
//! bucket: locally the runner creates the template's buckets in the emulator, uploads the
//! static pages (the site of the project's `shop/` directory beside the template, expanded by
//! [`crate::layout`] as for the cloud's deploy step) with a `shop/config.json` that points
//! sign-in at the development sign-in, and
//! answers `GET /shop/...` from the bucket, before any API route (no route uses `/shop/`).
//! Sale pages that the page writer stores in the bucket are served the same way.
//!
//! As the distribution does: its viewer-request function (`ShopIndexFunction` in the
//! template, ported here as [`viewer_request`]; a contract test runs the template's code with
//! node against it) gives a URI ending in `/` its `index.html` and redirects `/shop` to
//! `/shop/`; the rest is the object of the URI's key as S3 answers it behind an origin access
//! control without `s3:ListBucket`: a key that does not exist is a 403 `AccessDenied`, not a
//! 404, and there is no index document of S3's own.
//!
//! Every answer of the site, a page's or the API's, carries [`SECURITY_HEADERS`], the
//! headers the distribution's response headers policy (`ShopSecurityHeadersPolicy`) adds in
//! the cloud; a contract test keeps the two equal.

use anyhow::Context as _;
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;
use http::header::{
    ALLOW, CACHE_CONTROL, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, LOCATION,
};
use http::{Method, Response, StatusCode};
use http_body_util::Full;
use std::path::Path;

use crate::model::Model;

/// The template's bucket that holds the pages (what the distribution's `/shop/*` reads).
pub const PAGES_BUCKET: &str = "ShopBucket";
/// The site's prefix of the pages, and their keys' in the bucket.
pub const PREFIX: &str = "/shop/";

/// The local configuration of the pages: sign in with the runner's development sign-in.
const LOCAL_CONFIG: &str = r#"{"signIn":"local","signInUrl":"/_local/sign-in"}"#;

/// The site's Content-Security-Policy: scripts, styles and everything else from this origin
/// only, nothing inline (the pages have none, the payment sandbox's page included), calls to
/// the API on this origin and to Cognito's token endpoint (the callback's code exchange), no
/// plugin, no `<base>`, forms posting here only, and never inside another site's frame.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
style-src 'self'; img-src 'self'; font-src 'self'; connect-src 'self' https://*.amazoncognito.com; \
object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The headers of every answer of the site, as the distribution's response headers policy
/// (`ShopSecurityHeadersPolicy` in the template) sends them: lower-case name, value.
pub const SECURITY_HEADERS: [(&str, &str); 5] = [
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    (
        "strict-transport-security",
        "max-age=63072000; includeSubDomains",
    ),
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "same-origin"),
];

/// Sets [`SECURITY_HEADERS`] on an answer of the site, over any the origin sent (the
/// policy's `Override: true`).
pub(crate) fn secure(headers: &mut HeaderMap) {
    for (name, value) in SECURITY_HEADERS {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
}

/// Whether a request path is a page's (`/shop` or under `/shop/`).
pub(crate) fn is_page(path: &str) -> bool {
    path == "/shop" || path.starts_with(PREFIX)
}

/// The content type of a page's file, by extension.
pub fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|ext| ext.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        _ => "application/octet-stream",
    }
}

/// The pages of the model, when its template has the pages bucket.
#[derive(Clone, Debug)]
pub struct Pages {
    s3: aws_sdk_s3::Client,
    bucket: String,
}

impl Pages {
    pub fn new(s3: aws_sdk_s3::Client, bucket: String) -> Self {
        Self { s3, bucket }
    }

    /// The pages bucket of `model`, if it has one.
    pub fn of(model: &Model, s3: &aws_sdk_s3::Client) -> Option<Self> {
        model
            .bucket(PAGES_BUCKET)
            .map(|bucket| Self::new(s3.clone(), bucket.name.clone()))
    }

    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// Uploads the site of `dir` ([`crate::layout::site`]: its files but the sources, each
    /// page with its layout included) to `shop/<key>`, then the local `shop/config.json`: the
    /// local form of the deploy step. Answers how many files.
    pub async fn upload(&self, dir: &Path) -> anyhow::Result<usize> {
        let site = crate::layout::site(dir)?;
        for file in &site {
            self.put(
                &format!("shop/{}", file.key),
                file.content_type,
                file.body.clone(),
            )
            .await?;
        }
        self.put(
            "shop/config.json",
            "application/json",
            LOCAL_CONFIG.as_bytes().to_vec(),
        )
        .await?;
        Ok(site.len() + 1)
    }

    async fn put(&self, key: &str, content_type: &str, body: Vec<u8>) -> anyhow::Result<()> {
        self.s3
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .body(ByteStream::from(body))
            .send()
            .await
            .with_context(|| format!("failed to upload {key} to bucket {}", self.bucket))?;
        Ok(())
    }

    /// The answer to `method` on `path` (a page's path, [`is_page`]) as the distribution
    /// gives it: the viewer-request function's redirect, or the object of the key its URI
    /// names, with its content type; S3's 403 for a key that does not exist.
    pub(crate) async fn respond(&self, method: &Method, path: &str) -> Response<Full<Bytes>> {
        if method != Method::GET && method != Method::HEAD {
            let mut response = text(
                StatusCode::METHOD_NOT_ALLOWED,
                "Method Not Allowed: the shop's pages answer GET and HEAD".to_owned(),
            );
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            return response;
        }
        let key = match viewer_request(path) {
            ViewerRequest::Redirect(location) => return redirect(&location),
            ViewerRequest::Origin(uri) => object_key(&uri),
        };
        let answer = self
            .s3
            .get_object()
            .bucket(&self.bucket)
            .key(&key)
            .send()
            .await;
        let object = match answer {
            Ok(object) => object,
            Err(err) if err.as_service_error().is_some_and(|e| e.is_no_such_key()) => {
                return access_denied(method);
            }
            Err(err) => {
                tracing::warn!(error = %aws_sdk_s3::error::DisplayErrorContext(&err), key, "GetObject failed");
                return text(
                    StatusCode::BAD_GATEWAY,
                    format!("the pages bucket {} did not answer", self.bucket),
                );
            }
        };
        let kind = object
            .content_type()
            .and_then(|kind| HeaderValue::from_str(kind).ok())
            .unwrap_or(HeaderValue::from_static("application/octet-stream"));
        let cache = object
            .cache_control()
            .and_then(|value| HeaderValue::from_str(value).ok());
        let body = match object.body.collect().await {
            Ok(body) => body.into_bytes(),
            Err(err) => {
                tracing::warn!(error = %err, key, "reading a page failed");
                return text(
                    StatusCode::BAD_GATEWAY,
                    format!("the pages bucket {} broke off", self.bucket),
                );
            }
        };
        let mut response = Response::new(Full::new(if method == Method::HEAD {
            Bytes::new()
        } else {
            body
        }));
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, kind);
        if let Some(cache) = cache {
            headers.insert(CACHE_CONTROL, cache);
        }
        response
    }
}

/// What the distribution's viewer-request function of the pages does with a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ViewerRequest {
    /// Answers a 301 to this location, without asking the bucket.
    Redirect(String),
    /// Asks the bucket for the object of this URI.
    Origin(String),
}

/// `ShopIndexFunction` of the template, for a request's URI: `/shop` is redirected to
/// `/shop/`, a URI ending in `/` gets `index.html`, any other goes to the bucket as it is.
pub fn viewer_request(uri: &str) -> ViewerRequest {
    if uri == "/shop" {
        return ViewerRequest::Redirect(PREFIX.to_owned());
    }
    if uri.ends_with('/') {
        ViewerRequest::Origin(format!("{uri}index.html"))
    } else {
        ViewerRequest::Origin(uri.to_owned())
    }
}

/// The bucket key of a URI the bucket is asked for: the URI without its leading `/`, as the
/// distribution's S3 origin takes it (`/shop/` would be the key `shop/`, which no object has).
pub(crate) fn object_key(uri: &str) -> String {
    uri.trim_start_matches('/').to_owned()
}

/// The function's redirect.
fn redirect(location: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::MOVED_PERMANENTLY;
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(LOCATION, value);
    }
    response
}

/// What S3 answers for a key that does not exist when the reader may not list the bucket
/// (the distribution's origin access control has `s3:GetObject` only).
fn access_denied(method: &Method) -> Response<Full<Bytes>> {
    let body = if method == Method::HEAD {
        Bytes::new()
    } else {
        Bytes::from_static(
            b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>",
        )
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = StatusCode::FORBIDDEN;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/xml"));
    response
}

fn text(status: StatusCode, message: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(message)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_security_header_is_set_over_the_origins_own() {
        let mut headers = HeaderMap::new();
        headers.insert("x-frame-options", HeaderValue::from_static("ALLOWALL"));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/html"));
        secure(&mut headers);
        for (name, value) in SECURITY_HEADERS {
            assert_eq!(headers[name], value, "{name}");
        }
        assert_eq!(headers[CONTENT_TYPE], "text/html");
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe-"));
    }

    #[test]
    fn pages_are_under_shop_only() {
        for path in ["/shop", "/shop/", "/shop/sales/x", "/shop/shop.css"] {
            assert!(is_page(path), "{path}");
        }
        for path in ["/shopping", "/seckill/activities/x", "/_local/shop/", "/"] {
            assert!(!is_page(path), "{path}");
        }
    }

    #[test]
    fn a_directory_is_its_index_and_shop_goes_to_shop_slash() {
        let origin = |uri: &str| ViewerRequest::Origin(uri.to_owned());
        assert_eq!(viewer_request("/shop/sales/abc"), origin("/shop/sales/abc"));
        assert_eq!(viewer_request("/shop/"), origin("/shop/index.html"));
        assert_eq!(
            viewer_request("/shop/sales/"),
            origin("/shop/sales/index.html")
        );
        assert_eq!(
            viewer_request("/shop"),
            ViewerRequest::Redirect("/shop/".to_owned())
        );
        // Without the function, /shop/ would be the key shop/, which S3 denies.
        assert_eq!(object_key("/shop/"), "shop/");
        assert_eq!(object_key("/shop/index.html"), "shop/index.html");
    }

    #[test]
    fn files_are_served_as_their_kind() {
        assert_eq!(
            content_type(Path::new("a/order.html")),
            "text/html; charset=utf-8"
        );
        assert_eq!(
            content_type(Path::new("shop.js")),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(
            content_type(Path::new("shop.css")),
            "text/css; charset=utf-8"
        );
        assert_eq!(content_type(Path::new("config.json")), "application/json");
    }
}
