//! What CloudFront and its web ACL do before a request reaches API Gateway: the web ACL's
//! rate-based rules, counted per source IP, and the origin's custom headers added to the
//! request. A request a rule blocks never reaches a route, so it takes no token from the
//! route's bucket that every other client shares.
//!
//! A rule counts every request of its scope from a source, blocked ones too (so a flood that
//! goes on stays blocked), over a window that starts with the source's first request and
//! restarts once it has passed; WAF's window slides, so it lets a source that stops through a
//! little sooner. WAF also takes some seconds to notice a source over its limit; here the
//! request after the limit is blocked, so a test sees the limit itself.

use crate::model::EdgeLimit;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::Instant;

/// How many sources a rule remembers before it forgets those whose window has passed.
const PRUNE_ABOVE: usize = 10_000;

/// The distribution in front of the HTTP API, as the template configures it.
#[derive(Debug, Default)]
pub struct Edge {
    rules: Vec<Rule>,
    /// Added to every request, replacing a header of the same name the client sent, as
    /// CloudFront's `OriginCustomHeaders` are (names in lower case).
    pub(crate) origin_headers: Vec<(String, String)>,
    /// Whether the source is the first address of `X-Forwarded-For` rather than the peer:
    /// only for tests that play clients from several addresses on one machine.
    trust_forwarded_for: bool,
}

#[derive(Debug)]
struct Rule {
    limit: EdgeLimit,
    windows: Mutex<HashMap<IpAddr, Window>>,
}

#[derive(Debug)]
struct Window {
    started: Instant,
    count: u64,
}

impl Edge {
    /// `limits` in the order WAF evaluates them; none: every request passes.
    pub fn new(
        limits: Vec<EdgeLimit>,
        origin_headers: Vec<(String, String)>,
        trust_forwarded_for: bool,
    ) -> Self {
        Self {
            rules: limits
                .into_iter()
                .map(|limit| Rule {
                    limit,
                    windows: Mutex::default(),
                })
                .collect(),
            origin_headers,
            trust_forwarded_for,
        }
    }

    /// The client's address: the peer, or what `X-Forwarded-For` names first when trusted.
    pub(crate) fn source(&self, peer: SocketAddr, forwarded_for: Option<&str>) -> IpAddr {
        if self.trust_forwarded_for
            && let Some(first) = forwarded_for.and_then(|value| value.split(',').next())
            && let Ok(address) = first.trim().parse()
        {
            return address;
        }
        peer.ip()
    }

    /// Counts a request from `source` in every rule whose scope it matches; the first rule
    /// whose count it takes over the limit blocks it (WAF stops at a terminating action).
    pub(crate) fn blocked_by(
        &self,
        method: &str,
        path: &str,
        source: IpAddr,
        now: Instant,
    ) -> Option<&EdgeLimit> {
        self.rules
            .iter()
            .filter(|rule| rule.limit.applies(method, path))
            .find(|rule| rule.count(source, now) > rule.limit.limit)
            .map(|rule| &rule.limit)
    }
}

impl Rule {
    /// This request's place in its source's window.
    fn count(&self, source: IpAddr, now: Instant) -> u64 {
        let mut windows = self
            .windows
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if windows.len() > PRUNE_ABOVE {
            let window = self.limit.window;
            windows.retain(|_, open| now.saturating_duration_since(open.started) < window);
        }
        let open = windows.entry(source).or_insert(Window {
            started: now,
            count: 0,
        });
        if now.saturating_duration_since(open.started) >= self.limit.window {
            *open = Window {
                started: now,
                count: 0,
            };
        }
        open.count += 1;
        open.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EdgeField, EdgeMatch, Positional};
    use std::time::Duration;

    fn orders_rule(limit: u64) -> EdgeLimit {
        EdgeLimit {
            name: "orders".into(),
            limit,
            window: Duration::from_secs(60),
            scope: vec![
                EdgeMatch {
                    field: EdgeField::Method,
                    constraint: Positional::Exactly,
                    value: "POST".into(),
                },
                EdgeMatch {
                    field: EdgeField::UriPath,
                    constraint: Positional::EndsWith,
                    value: "/orders".into(),
                },
            ],
            status: 429,
            body: None,
        }
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_source_over_its_limit_is_blocked_and_others_are_not() {
        let edge = Edge::new(vec![orders_rule(3)], Vec::new(), false);
        let now = Instant::now();
        let stranger = ip("203.0.113.9");
        for _ in 0..3 {
            assert!(
                edge.blocked_by("POST", "/s/1/orders", stranger, now)
                    .is_none()
            );
        }
        for _ in 0..100 {
            assert!(
                edge.blocked_by("POST", "/s/1/orders", stranger, now)
                    .is_some()
            );
        }
        assert!(
            edge.blocked_by("POST", "/s/1/orders", ip("198.51.100.1"), now)
                .is_none()
        );
        // Out of the rule's scope: not counted, not blocked.
        assert!(
            edge.blocked_by("GET", "/s/1/orders", stranger, now)
                .is_none()
        );
        assert!(edge.blocked_by("POST", "/s/1/end", stranger, now).is_none());
        // The next window starts from nothing.
        let later = now + Duration::from_secs(60);
        assert!(
            edge.blocked_by("POST", "/s/1/orders", stranger, later)
                .is_none()
        );
    }

    #[test]
    fn the_forwarded_address_is_the_source_only_when_trusted() {
        let peer: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let trusting = Edge::new(Vec::new(), Vec::new(), true);
        assert_eq!(
            trusting.source(peer, Some("10.0.0.7, 127.0.0.1")),
            ip("10.0.0.7")
        );
        assert_eq!(trusting.source(peer, Some("junk")), ip("127.0.0.1"));
        assert_eq!(trusting.source(peer, None), ip("127.0.0.1"));
        let plain = Edge::new(Vec::new(), Vec::new(), false);
        assert_eq!(plain.source(peer, Some("10.0.0.7")), ip("127.0.0.1"));
    }
}
