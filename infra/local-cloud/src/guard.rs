//! Who may use the runner's own tools (everything under `/_local/`) and Lambda's Invoke API:
//! only requests made to the runner itself, from no other site. Both mint power a web page
//! must not borrow: the sign-in hands out admin tokens, the Invoke API runs any function with
//! any event (an admin's claims included), and the developer's browser reaches the runner on
//! 127.0.0.1 from every page it opens.
//!
//! A request is refused, a 403 that says why, when
//!
//! - its `Host` (or the request line's authority) is not the runner's own address: the
//!   listener's, the one the connection came in on (they differ when the runner listens on
//!   every interface) or `localhost`, each with the runner's port. Any other name, even one
//!   that resolves to 127.0.0.1, is how DNS rebinding makes the runner the page's own origin.
//! - it comes from another site's page: an `Origin` that is not `http://` and one of those
//!   addresses (`null` included), or `Sec-Fetch-Site` other than `same-origin` or `none` (a
//!   page on another port of `localhost` is `same-site` and refused too). A `GET` or `HEAD`
//!   navigation (`Sec-Fetch-Mode: navigate`) is let through whatever site it comes from: a
//!   link to the dashboard or the sign-in form only opens a page, and nothing under `/_local/`
//!   changes anything on a `GET`.
//!
//! Clients that are not browsers (`make invoke`, `aws lambda invoke --endpoint-url`, the
//! tests) send no `Origin` and name the address they were given, and pass.

use http::{HeaderMap, Method, Request};
use std::net::{IpAddr, SocketAddr};

/// The addresses a request names the runner by: `host:port` in lower case.
#[derive(Debug)]
pub(crate) struct OwnAddress {
    hosts: Vec<String>,
    port: u16,
}

impl OwnAddress {
    /// The runner listening on `listener`, reached through a connection to `connection`.
    pub(crate) fn new(listener: SocketAddr, connection: SocketAddr) -> Self {
        let port = listener.port();
        let mut hosts = Vec::new();
        for ip in [listener.ip(), connection.ip()] {
            // A listener on every interface is no address a client can name.
            if ip.is_unspecified() {
                continue;
            }
            let host = match ip.to_canonical() {
                IpAddr::V4(v4) => format!("{v4}:{port}"),
                IpAddr::V6(v6) => format!("[{v6}]:{port}"),
            };
            if !hosts.contains(&host) {
                hosts.push(host);
            }
        }
        hosts.push(format!("localhost:{port}"));
        Self { hosts, port }
    }

    /// Whether `host` (`name:port`, or `name` alone for port 80) is one of the runner's own.
    fn is_own(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.hosts.contains(&host)
            || (self.port == 80 && self.hosts.contains(&format!("{host}:80")))
    }

    /// The addresses, for a message.
    fn shown(&self) -> String {
        self.hosts.join(" or ")
    }
}

/// Why `request` to `tool` (named in the message, e.g. "Lambda's Invoke API") is refused, if
/// it is: a message starting with `Forbidden:`.
pub(crate) fn refusal<B>(own: &OwnAddress, tool: &str, request: &Request<B>) -> Option<String> {
    let header = |name| header(request.headers(), name);
    let host = header(http::header::HOST).or(request.uri().authority().map(|a| a.as_str()));
    let problem = match host {
        None => Some(format!(
            "{tool} answers only requests to this runner ({}); this one names no host",
            own.shown()
        )),
        Some(host) if !own.is_own(host) => Some(format!(
            "{tool} answers only requests to this runner ({}), not to {:?}: another name for \
             this machine is refused, as a page of another site could use it to reach the \
             runner",
            own.shown(),
            shown(host)
        )),
        Some(_) if is_navigation(request.method(), request.headers()) => None,
        Some(_) => cross_site(own, tool, request.headers()),
    };
    problem.map(|problem| format!("Forbidden: {problem}"))
}

/// A browser opening a page: it shows the developer the page, and hands another site nothing.
fn is_navigation(method: &Method, headers: &HeaderMap) -> bool {
    matches!(*method, Method::GET | Method::HEAD)
        && header(headers, SEC_FETCH_MODE).is_some_and(|mode| mode.eq_ignore_ascii_case("navigate"))
}

/// Why a request with these headers comes from another site's page, if it does.
fn cross_site(own: &OwnAddress, tool: &str, headers: &HeaderMap) -> Option<String> {
    if let Some(origin) = header(headers, http::header::ORIGIN) {
        let own_origin = origin
            .to_ascii_lowercase()
            .strip_prefix("http://")
            .is_some_and(|host| own.is_own(host));
        if !own_origin {
            return Some(format!(
                "{tool} answers only its own pages (http://{}), not a request from {:?}",
                own.hosts[0],
                shown(origin)
            ));
        }
    }
    match header(headers, SEC_FETCH_SITE) {
        Some(site) if !["same-origin", "none"].contains(&site.to_ascii_lowercase().as_str()) => {
            Some(format!(
                "{tool} answers only its own pages (http://{}), not a request another \
                 site's page made (Sec-Fetch-Site: {})",
                own.hosts[0],
                shown(site)
            ))
        }
        _ => None,
    }
}

const SEC_FETCH_SITE: &str = "sec-fetch-site";
const SEC_FETCH_MODE: &str = "sec-fetch-mode";

fn header(headers: &HeaderMap, name: impl http::header::AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// At most 100 characters of a header the client chose, for a message.
fn shown(text: &str) -> String {
    text.chars().take(100).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: Method, headers: &[(&str, &str)]) -> Request<()> {
        let mut request = Request::builder().method(method).uri("/_local/sign-in");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap()
    }

    fn own() -> OwnAddress {
        let local: SocketAddr = "127.0.0.1:3000".parse().unwrap();
        OwnAddress::new(local, local)
    }

    /// Another name for 127.0.0.1 (DNS rebinding) and another site's page (login CSRF, a
    /// forged invocation) are refused, with a message that says why; the runner's own address
    /// and `localhost` with its port, a request from its own page, a client that sends no
    /// `Origin` and a navigation from a link elsewhere are not.
    #[test]
    fn only_requests_to_the_runner_itself_from_its_own_page_are_answered() {
        let own = own();
        for (method, headers) in [
            (Method::GET, &[("host", "127.0.0.1:3000")][..]),
            (Method::GET, &[("host", "localhost:3000")]),
            (Method::POST, &[("host", "LOCALHOST:3000")]),
            (
                Method::POST,
                &[
                    ("host", "127.0.0.1:3000"),
                    ("origin", "http://127.0.0.1:3000"),
                    ("sec-fetch-site", "same-origin"),
                ],
            ),
            (
                Method::POST,
                &[
                    ("host", "127.0.0.1:3000"),
                    ("origin", "http://localhost:3000"),
                ],
            ),
            // Typed into the address bar.
            (
                Method::GET,
                &[("host", "127.0.0.1:3000"), ("sec-fetch-site", "none")],
            ),
            // A link on another site opens the page, and that is all it does.
            (
                Method::GET,
                &[
                    ("host", "127.0.0.1:3000"),
                    ("sec-fetch-site", "cross-site"),
                    ("sec-fetch-mode", "navigate"),
                ],
            ),
        ] {
            let request = request(method.clone(), headers);
            assert_eq!(
                refusal(&own, "the development sign-in", &request),
                None,
                "{method} {headers:?}"
            );
        }
        for (method, headers, says) in [
            (
                Method::GET,
                &[("host", "evil.example:3000")][..],
                "not to \"evil.example:3000\"",
            ),
            (
                Method::POST,
                &[
                    ("host", "rebound.evil.example:3000"),
                    ("origin", "http://rebound.evil.example:3000"),
                ],
                "another name",
            ),
            // Rebinding is refused whatever the request looks like.
            (
                Method::GET,
                &[
                    ("host", "evil.example:3000"),
                    ("sec-fetch-mode", "navigate"),
                ],
                "another name",
            ),
            (Method::GET, &[("host", "127.0.0.1:8080")], "127.0.0.1:3000"),
            (Method::GET, &[("host", "127.0.0.1")], "not to"),
            (Method::GET, &[], "names no host"),
            (
                Method::POST,
                &[
                    ("host", "127.0.0.1:3000"),
                    ("origin", "https://evil.example"),
                ],
                "not a request from \"https://evil.example\"",
            ),
            (
                Method::POST,
                &[("host", "127.0.0.1:3000"), ("origin", "null")],
                "only its own pages",
            ),
            (
                Method::POST,
                &[
                    ("host", "127.0.0.1:3000"),
                    ("origin", "http://127.0.0.1:3001"),
                ],
                "only its own pages",
            ),
            (
                Method::POST,
                &[
                    ("host", "localhost:3000"),
                    ("origin", "https://localhost:3000"),
                ],
                "only its own pages",
            ),
            // A script's fetch from another site, even one that only reads.
            (
                Method::GET,
                &[
                    ("host", "127.0.0.1:3000"),
                    ("origin", "https://evil.example"),
                ],
                "not a request from",
            ),
            (
                Method::POST,
                &[("host", "127.0.0.1:3000"), ("sec-fetch-site", "cross-site")],
                "Sec-Fetch-Site: cross-site",
            ),
            // Another port of localhost is the same site, not the same origin.
            (
                Method::POST,
                &[("host", "localhost:3000"), ("sec-fetch-site", "same-site")],
                "Sec-Fetch-Site: same-site",
            ),
            // A form posted across sites is a navigation too, and still refused.
            (
                Method::POST,
                &[
                    ("host", "127.0.0.1:3000"),
                    ("sec-fetch-site", "cross-site"),
                    ("sec-fetch-mode", "navigate"),
                ],
                "Sec-Fetch-Site: cross-site",
            ),
        ] {
            let request = request(method.clone(), headers);
            let message = refusal(&own, "the development sign-in", &request)
                .unwrap_or_else(|| panic!("{method} {headers:?} was answered"));
            assert!(
                message.starts_with("Forbidden: the development sign-in answers only"),
                "{message}"
            );
            assert!(message.contains(says), "{method} {headers:?}: {message}");
        }
    }

    /// On every interface, the runner is named by the address the client connected to, and
    /// by no other name.
    #[test]
    fn a_runner_on_every_interface_answers_the_address_it_was_reached_at() {
        let own = OwnAddress::new(
            "0.0.0.0:3000".parse().unwrap(),
            "192.0.2.7:3000".parse().unwrap(),
        );
        let to = |host| request(Method::POST, &[("host", host)]);
        assert_eq!(refusal(&own, "x", &to("192.0.2.7:3000")), None);
        assert!(refusal(&own, "x", &to("0.0.0.0:3000")).is_some());
        assert!(refusal(&own, "x", &to("evil.example:3000")).is_some());

        let own = OwnAddress::new(
            "[::]:3000".parse().unwrap(),
            "[::ffff:127.0.0.1]:3000".parse().unwrap(),
        );
        assert_eq!(refusal(&own, "x", &to("127.0.0.1:3000")), None);
        let own = OwnAddress::new("[::1]:80".parse().unwrap(), "[::1]:80".parse().unwrap());
        assert_eq!(refusal(&own, "x", &to("[::1]")), None);
        assert_eq!(refusal(&own, "x", &to("localhost")), None);
    }
}
