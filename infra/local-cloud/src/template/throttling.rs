//! An HttpApi stage's route throttling, as the template sets it: `DefaultRouteSettings` for
//! every route, and `RouteSettings` keyed by route key (`GET /items/{id}`, on the API, or on
//! the event) for the routes that have their own.
//!
//! A `RouteSettings` key that names no route of its API is an error here as in AWS, where the
//! stage fails to deploy: a limit meant for a route must not silently protect nothing.

use yaml_serde::Value;

use super::error::Problem;
use super::intrinsics::Resolver;
use super::yaml::{Node, scalar_string};
use crate::model::RouteThrottle;
use std::collections::BTreeSet;

/// API Gateway's quota per account and region, which stands in for a limit that a route's
/// settings leave out while setting the other.
const ACCOUNT_RATE_PER_SECOND: f64 = 10_000.0;
const ACCOUNT_BURST: u32 = 5_000;

/// One settings entry's two limits; `None` where the entry leaves one out.
#[derive(Default)]
struct Limits {
    rate_per_second: Option<f64>,
    burst: Option<u32>,
}

impl Limits {
    fn read(settings: &Node<'_>) -> anyhow::Result<Self> {
        let rate_per_second = match settings.get("ThrottlingRateLimit")? {
            Some(node) => Some(rate(&node)?),
            None => None,
        };
        let burst = match settings.get("ThrottlingBurstLimit")? {
            Some(node) => Some(node.u32()?),
            None => None,
        };
        Ok(Self {
            rate_per_second,
            burst,
        })
    }

    /// `over`'s limits where it sets them, these elsewhere: SAM merges an event's
    /// `RouteSettings` over the API's entry for its route this way.
    fn under(self, over: Limits) -> Limits {
        Limits {
            rate_per_second: over.rate_per_second.or(self.rate_per_second),
            burst: over.burst.or(self.burst),
        }
    }
}

/// `ThrottlingRateLimit` is a double: requests per second, 0 or more.
fn rate(node: &Node<'_>) -> anyhow::Result<f64> {
    scalar_string(&node.value)
        .and_then(|text| text.trim().parse::<f64>().ok())
        .filter(|rate| rate.is_finite() && *rate >= 0.0)
        .ok_or_else(|| node.type_error("a number of requests per second, 0 or more"))
}

/// The throttle of the route `route_key` of `api` (the API's settings with `Globals.HttpApi`
/// merged in), whose event's properties are `event`; `None` when nothing sets a limit.
///
/// A route with settings of its own (the API's `RouteSettings` entry, with the event's
/// `RouteSettings` merged over it by SAM) takes them *instead of* the stage default, not
/// field by field: a limit it leaves out is the account's, as API Gateway has it. A route
/// without its own settings takes `DefaultRouteSettings`.
pub(super) fn route_throttle(
    api: &Node<'_>,
    event: &Node<'_>,
    route_key: &str,
) -> anyhow::Result<Option<RouteThrottle>> {
    let on_api = api.path(&["RouteSettings", route_key])?;
    let on_event = event.get("RouteSettings")?;
    let limits = if on_api.is_none() && on_event.is_none() {
        match api.get("DefaultRouteSettings")? {
            Some(default) => Limits::read(&default)?,
            None => Limits::default(),
        }
    } else {
        let api_limits = match on_api {
            Some(entry) => Limits::read(&entry)?,
            None => Limits::default(),
        };
        let event_limits = match on_event {
            Some(entry) => Limits::read(&entry)?,
            None => Limits::default(),
        };
        api_limits.under(event_limits)
    };
    if limits.rate_per_second.is_none() && limits.burst.is_none() {
        return Ok(None);
    }
    Ok(Some(RouteThrottle::new(
        limits.rate_per_second.unwrap_or(ACCOUNT_RATE_PER_SECOND),
        limits.burst.unwrap_or(ACCOUNT_BURST),
    )))
}

/// Every `RouteSettings` key of `api` must be one of `routes`, the route keys of the
/// functions' events on that API.
pub(super) fn check_route_keys(
    r: &Resolver<'_>,
    api: &Node<'_>,
    routes: &BTreeSet<String>,
) -> anyhow::Result<()> {
    let Some(settings) = api.get("RouteSettings")? else {
        return Ok(());
    };
    if !matches!(&*settings.value, Value::Mapping(_)) {
        return Err(settings.type_error("a mapping of route keys to settings"));
    }
    for (key, _) in settings.entries()? {
        if !routes.contains(&key) {
            return Err(r.fail(
                &settings.at.key(&key),
                Problem::NotLocal(format!(
                    "no route {key:?} on this API: API Gateway refuses a stage whose \
                     RouteSettings name a route it does not have (route keys are \
                     `METHOD /path` as the events write them, e.g. `GET /items/{{id}}`)"
                )),
            ));
        }
    }
    Ok(())
}

/// The key of a route as `RouteSettings` names it.
pub(super) fn route_key(method: &str, path: &str) -> String {
    if path == "$default" {
        path.to_owned()
    } else {
        format!("{method} {path}")
    }
}

/// For messages: where an API's settings are.
pub(super) fn api_name(api: &Node<'_>) -> String {
    api.at.owner.clone()
}

#[cfg(test)]
mod tests {
    use super::super::{LocalNames, load_str};
    use crate::model::{Model, RouteThrottle};
    use std::collections::BTreeMap;

    fn names() -> LocalNames {
        LocalNames {
            stack_name: "local".into(),
            region: "us-east-1".into(),
            account_id: "123456789012".into(),
            sqs_endpoint: "http://127.0.0.1:4566".into(),
        }
    }

    fn load(yaml: &str) -> anyhow::Result<Model> {
        load_str("template.yaml", yaml, &BTreeMap::new(), &names())
    }

    fn routes(model: &Model) -> BTreeMap<String, Option<RouteThrottle>> {
        model
            .http_routes()
            .map(|route| (route.key(), route.throttle))
            .collect()
    }

    fn limit(rate_per_second: f64, burst: u32) -> Option<RouteThrottle> {
        Some(RouteThrottle::new(rate_per_second, burst))
    }

    /// An API with `settings` and a function serving four routes on it, one of which has
    /// `event_settings` of its own.
    fn template(settings: &str, event_settings: &str) -> String {
        format!(
            r#"
Parameters:
  Rate: {{Type: Number, Default: 7.5}}
Resources:
  Api:
    Type: AWS::Serverless::HttpApi
    Properties:
{settings}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn
      Events:
        List: {{Type: HttpApi, Properties: {{ApiId: !Ref Api, Path: /items, Method: get}}}}
        One: {{Type: HttpApi, Properties: {{ApiId: !Ref Api, Path: "/items/{{id}}", Method: GET}}}}
        Add: {{Type: HttpApi, Properties: {{ApiId: !Ref Api, Path: /items, Method: POST{event_settings}}}}}
        Any: {{Type: HttpApi, Properties: {{ApiId: !Ref Api, Path: "/any/{{proxy+}}", Method: ANY}}}}
"#
        )
    }

    #[test]
    fn the_default_applies_to_routes_without_their_own_settings() {
        let model = load(&template(
            r#"
      DefaultRouteSettings: {ThrottlingRateLimit: 100, ThrottlingBurstLimit: 50}
      RouteSettings:
        "GET /items/{id}": {ThrottlingRateLimit: !Ref Rate, ThrottlingBurstLimit: 3}
        "ANY /any/{proxy+}": {ThrottlingBurstLimit: 0, ThrottlingRateLimit: 0}"#,
            "",
        ))
        .unwrap();
        assert_eq!(
            routes(&model),
            BTreeMap::from([
                ("GET /items".to_owned(), limit(100.0, 50)),
                ("POST /items".to_owned(), limit(100.0, 50)),
                ("GET /items/{id}".to_owned(), limit(7.5, 3)),
                ("ANY /any/{proxy+}".to_owned(), limit(0.0, 0)),
            ])
        );
    }

    #[test]
    fn a_route_entry_replaces_the_default_and_the_event_merges_over_it() {
        // What a route's own entry leaves out is the account's quota, not the stage default.
        let model = load(&template(
            r#"
      DefaultRouteSettings: {ThrottlingRateLimit: 100, ThrottlingBurstLimit: 50}
      RouteSettings:
        "GET /items/{id}": {ThrottlingRateLimit: 5}
        "POST /items": {ThrottlingRateLimit: 5, ThrottlingBurstLimit: 9}"#,
            ", RouteSettings: {ThrottlingBurstLimit: 2}",
        ))
        .unwrap();
        let routes = routes(&model);
        assert_eq!(routes["GET /items/{id}"], limit(5.0, 5_000));
        assert_eq!(routes["POST /items"], limit(5.0, 2));
        assert_eq!(routes["GET /items"], limit(100.0, 50));
    }

    #[test]
    fn without_settings_routes_are_not_throttled() {
        let model = load(&template("      Description: no throttling", "")).unwrap();
        assert!(routes(&model).values().all(Option::is_none));
        let model = load(&template(
            "      DefaultRouteSettings: {DetailedMetricsEnabled: true}",
            "",
        ))
        .unwrap();
        assert!(routes(&model).values().all(Option::is_none));
    }

    #[test]
    fn settings_for_a_route_the_api_lacks_or_bad_limits_are_errors() {
        let err = format!(
            "{:#}",
            load(&template(
                r#"
      RouteSettings:
        "GET /items/{itemId}": {ThrottlingRateLimit: 5, ThrottlingBurstLimit: 5}"#,
                "",
            ))
            .unwrap_err()
        );
        assert!(
            err.contains("resource Api, RouteSettings.GET /items/{itemId}")
                && err.contains("no route \"GET /items/{itemId}\" on this API"),
            "{err}"
        );

        let err = format!(
            "{:#}",
            load(&template(
                "      DefaultRouteSettings: {ThrottlingRateLimit: -1}",
                ""
            ))
            .unwrap_err()
        );
        assert!(
            err.contains("DefaultRouteSettings.ThrottlingRateLimit") && err.contains("0 or more"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            load(&template(
                "      DefaultRouteSettings: {ThrottlingBurstLimit: lots}",
                ""
            ))
            .unwrap_err()
        );
        assert!(err.contains("ThrottlingBurstLimit"), "{err}");
    }

    #[test]
    fn globals_apply_to_the_implicit_api() {
        let model = load(
            r#"
Globals:
  HttpApi:
    DefaultRouteSettings: {ThrottlingRateLimit: 10, ThrottlingBurstLimit: 20}
    RouteSettings:
      "GET /hot": {ThrottlingRateLimit: 1, ThrottlingBurstLimit: 1}
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn
      Events:
        Hot: {Type: HttpApi, Properties: {Path: /hot, Method: GET}}
        Cold: {Type: HttpApi, Properties: {Path: /cold, Method: GET}}
"#,
        )
        .unwrap();
        let routes = routes(&model);
        assert_eq!(routes["GET /hot"], limit(1.0, 1));
        assert_eq!(routes["GET /cold"], limit(10.0, 20));
    }
}
