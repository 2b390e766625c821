//! Route selection as API Gateway HTTP APIs do it: the most specific route wins. A route
//! without a greedy variable beats one with it; then, segment by segment from the left, a
//! literal beats `{param}`, which beats `{proxy+}`; then an exact method beats `ANY`; the
//! `$default` route, if any, catches the rest.

use anyhow::{bail, ensure};
use http::Method;
use std::borrow::Cow;
use std::cmp::Ordering;

/// A compiled route, pointing at a target by index.
struct Compiled {
    /// `None` for `ANY`.
    method: Option<Method>,
    segments: Vec<Segment>,
    target: usize,
    /// `METHOD /path`, for messages.
    key: String,
}

enum Segment {
    Literal(String),
    Param(String),
    Greedy(String),
}

impl Segment {
    /// Specificity at one position: higher wins.
    fn rank(&self) -> u8 {
        match self {
            Segment::Literal(_) => 2,
            Segment::Param(_) => 1,
            Segment::Greedy(_) => 0,
        }
    }
}

pub(crate) struct Router {
    /// Most specific first, so that the first match is the best one.
    routes: Vec<Compiled>,
    default: Option<usize>,
}

/// The route a request matched, with its path parameters (raw, not yet decoded).
pub(crate) struct Matched<'r, 'p> {
    pub(crate) target: usize,
    pub(crate) params: Vec<(&'r str, &'p str)>,
}

impl Router {
    /// `routes` are `(method, path, target)`; the path as written in the template.
    pub(crate) fn new<'a>(
        routes: impl IntoIterator<Item = (&'a str, &'a str, usize)>,
    ) -> anyhow::Result<Self> {
        let mut compiled = Vec::new();
        let mut default = None;
        for (method, path, target) in routes {
            if path == "$default" {
                ensure!(default.is_none(), "two $default routes");
                default = Some(target);
                continue;
            }
            let method_name = method.to_ascii_uppercase();
            let method = match method_name.as_str() {
                "ANY" | "*" => None,
                other => Some(
                    Method::from_bytes(other.as_bytes())
                        .map_err(|_| anyhow::anyhow!("route {other} {path}: invalid method"))?,
                ),
            };
            compiled.push(Compiled {
                method,
                segments: parse_path(path)?,
                target,
                key: format!("{method_name} {path}"),
            });
        }
        compiled.sort_by(|a, b| specificity(b, a));
        for (i, a) in compiled.iter().enumerate() {
            if let Some(b) = compiled[i + 1..].iter().find(|b| same_shape(a, b)) {
                bail!("routes {} and {} are the same route", a.key, b.key);
            }
        }
        Ok(Self {
            routes: compiled,
            default,
        })
    }

    pub(crate) fn find<'r, 'p>(
        &'r self,
        method: &Method,
        path: &'p str,
    ) -> Option<Matched<'r, 'p>> {
        let mut params = Vec::new();
        for route in &self.routes {
            if route.method.as_ref().is_some_and(|m| m != method) {
                continue;
            }
            params.clear();
            if matches(route, path, &mut params) {
                return Some(Matched {
                    target: route.target,
                    params,
                });
            }
        }
        self.default.map(|target| Matched {
            target,
            params: Vec::new(),
        })
    }
}

fn parse_path(path: &str) -> anyhow::Result<Vec<Segment>> {
    let Some(rest) = path.strip_prefix('/') else {
        bail!("route path {path:?} does not start with /");
    };
    if rest.is_empty() {
        return Ok(Vec::new());
    }
    let parts: Vec<&str> = rest.split('/').collect();
    let last = parts.len() - 1;
    parts
        .iter()
        .enumerate()
        .map(|(i, part)| {
            let segment = match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                Some(name) => match name.strip_suffix('+') {
                    Some(name) => {
                        ensure!(
                            i == last,
                            "route path {path:?}: a greedy variable must come last"
                        );
                        Segment::Greedy(name.to_owned())
                    }
                    None => Segment::Param(name.to_owned()),
                },
                None => Segment::Literal((*part).to_owned()),
            };
            if let Segment::Param(name) | Segment::Greedy(name) = &segment {
                ensure!(!name.is_empty(), "route path {path:?}: unnamed variable");
            }
            Ok(segment)
        })
        .collect()
}

/// Which of two routes wins when both match a request.
fn specificity(a: &Compiled, b: &Compiled) -> Ordering {
    let greedy = |r: &Compiled| matches!(r.segments.last(), Some(Segment::Greedy(_)));
    greedy(b)
        .cmp(&greedy(a))
        .then_with(|| {
            a.segments
                .iter()
                .map(Segment::rank)
                .cmp(b.segments.iter().map(Segment::rank))
        })
        .then_with(|| a.method.is_some().cmp(&b.method.is_some()))
}

fn same_shape(a: &Compiled, b: &Compiled) -> bool {
    a.method == b.method
        && a.segments.len() == b.segments.len()
        && a.segments
            .iter()
            .zip(&b.segments)
            .all(|(x, y)| match (x, y) {
                (Segment::Literal(x), Segment::Literal(y)) => x == y,
                (Segment::Param(_), Segment::Param(_))
                | (Segment::Greedy(_), Segment::Greedy(_)) => true,
                _ => false,
            })
}

fn matches<'r, 'p>(
    route: &'r Compiled,
    path: &'p str,
    params: &mut Vec<(&'r str, &'p str)>,
) -> bool {
    let Some(mut rest) = path.strip_prefix('/') else {
        return false;
    };
    if route.segments.is_empty() {
        return rest.is_empty();
    }
    let last = route.segments.len() - 1;
    for (i, segment) in route.segments.iter().enumerate() {
        if let Segment::Greedy(name) = segment {
            if rest.is_empty() {
                return false;
            }
            params.push((name, rest));
            return true;
        }
        let (head, tail) = match rest.split_once('/') {
            Some((head, tail)) => (head, Some(tail)),
            None => (rest, None),
        };
        match segment {
            Segment::Literal(literal) => {
                if head != literal
                    && (!head.contains('%') || percent_decode(head) != literal.as_str())
                {
                    return false;
                }
            }
            Segment::Param(name) => {
                if head.is_empty() {
                    return false;
                }
                params.push((name, head));
            }
            Segment::Greedy(_) => unreachable!("handled above"),
        }
        match tail {
            Some(tail) if i < last => rest = tail,
            None if i == last => return true,
            _ => return false,
        }
    }
    false
}

/// Decodes `%XX` escapes; invalid escapes stay as they are, invalid UTF-8 is replaced.
pub(crate) fn percent_decode(text: &str) -> Cow<'_, str> {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router(routes: &[(&str, &str)]) -> Router {
        Router::new(routes.iter().enumerate().map(|(i, (m, p))| (*m, *p, i))).unwrap()
    }

    fn find(router: &Router, method: &str, path: &str) -> Option<(usize, Vec<(String, String)>)> {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        router.find(&method, path).map(|m| {
            (
                m.target,
                m.params
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        })
    }

    #[test]
    fn literal_beats_param_beats_greedy() {
        let r = router(&[
            ("GET", "/items/{proxy+}"),
            ("GET", "/items/{id}"),
            ("GET", "/items/special"),
            ("ANY", "/{proxy+}"),
        ]);
        assert_eq!(find(&r, "GET", "/items/special").unwrap().0, 2);
        assert_eq!(
            find(&r, "GET", "/items/42"),
            Some((1, vec![("id".into(), "42".into())]))
        );
        assert_eq!(
            find(&r, "GET", "/items/42/parts"),
            Some((0, vec![("proxy".into(), "42/parts".into())]))
        );
        assert_eq!(
            find(&r, "POST", "/items/42"),
            Some((3, vec![("proxy".into(), "items/42".into())]))
        );
    }

    #[test]
    fn exact_method_beats_any() {
        let r = router(&[("ANY", "/things/{id}"), ("DELETE", "/things/{id}")]);
        assert_eq!(find(&r, "DELETE", "/things/1").unwrap().0, 1);
        assert_eq!(find(&r, "GET", "/things/1").unwrap().0, 0);
    }

    #[test]
    fn leftmost_literal_wins() {
        let r = router(&[("GET", "/{a}/b"), ("GET", "/a/{b}")]);
        assert_eq!(find(&r, "GET", "/a/b").unwrap().0, 1);
    }

    #[test]
    fn no_match_and_default() {
        let r = router(&[("GET", "/items/{id}"), ("GET", "/")]);
        assert!(find(&r, "GET", "/items").is_none());
        assert!(find(&r, "GET", "/items/").is_none());
        assert!(find(&r, "GET", "/items/1/").is_none());
        assert!(find(&r, "GET", "/items/1/x").is_none());
        assert!(find(&r, "POST", "/items/1").is_none());
        assert_eq!(find(&r, "GET", "/").unwrap().0, 1);
        let r = router(&[("GET", "/items/{id}"), ("ANY", "$default")]);
        assert_eq!(find(&r, "GET", "/anything/else").unwrap().0, 1);
    }

    #[test]
    fn greedy_needs_something() {
        let r = router(&[("ANY", "/public/{proxy+}")]);
        assert!(find(&r, "GET", "/public").is_none());
        assert!(find(&r, "GET", "/public/").is_none());
        assert_eq!(
            find(&r, "GET", "/public/a/b/c"),
            Some((0, vec![("proxy".into(), "a/b/c".into())]))
        );
    }

    #[test]
    fn invalid_routes_are_refused() {
        assert!(Router::new([("GET", "/{proxy+}/x", 0)]).is_err());
        assert!(Router::new([("GET", "items", 0)]).is_err());
        assert!(Router::new([("GET", "/a/{id}", 0), ("GET", "/a/{other}", 1)]).is_err());
        assert!(Router::new([("GET", "/a/{}", 0)]).is_err());
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%20b%2Fc"), "a b/c");
        assert_eq!(percent_decode("%E2%9C%93"), "✓");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert!(matches!(percent_decode("plain"), Cow::Borrowed(_)));
    }
}
