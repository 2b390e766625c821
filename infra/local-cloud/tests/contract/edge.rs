//! What stands between a stranger and the routes' shared buckets: the distribution's web ACL
//! limits each source on the routes a flood could take from the buyers, the API answers only
//! requests that came through the distribution (the execute-api endpoint cannot be disabled
//! without a custom domain), and the cached sale detail's key holds nothing a reader can vary,
//! so no reader can miss the cache on purpose. The runner reads the same rules and headers.

use crate::support::{project_model, root, yaml};
use yaml_serde::Value;

fn resource(id: &str) -> Value {
    yaml("template.yaml")["Resources"]
        .get(id)
        .unwrap_or_else(|| panic!("template.yaml has no {id}"))
        .clone()
}

/// A value as written, an intrinsic as `!Tag argument`.
fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Tagged(tagged) => format!("{} {}", tagged.tag, text(&tagged.value)),
        Value::Sequence(items) => items.iter().map(text).collect::<Vec<_>>().join(" "),
        other => format!("{other:?}"),
    }
}

fn distribution_config() -> Value {
    resource("ShopDistribution")["Properties"]["DistributionConfig"].clone()
}

/// The behaviour of the distribution serving `pattern`.
fn behaviour(pattern: &str) -> Value {
    distribution_config()["CacheBehaviors"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|b| b["PathPattern"] == pattern)
        .unwrap_or_else(|| panic!("no behaviour {pattern}"))
        .clone()
}

/// The detail's viewer-request function, run by node on a request with these method and
/// headers: the headers it sends on.
fn run_detail_function(method: &str, headers: &serde_json::Value) -> serde_json::Value {
    let associations = behaviour("/seckill/activities/*")["FunctionAssociations"].clone();
    let association = associations
        .as_sequence()
        .and_then(|all| all.iter().find(|a| a["EventType"] == "viewer-request"))
        .expect("the detail's behaviour has a viewer-request function");
    let arn = text(&association["FunctionARN"]);
    let id = arn
        .strip_prefix("!GetAtt ")
        .and_then(|a| a.strip_suffix(".FunctionARN"))
        .unwrap_or_else(|| panic!("{arn}"));
    let function = resource(id);
    assert_eq!(function["Type"], "AWS::CloudFront::Function");
    assert_eq!(function["Properties"]["AutoPublish"], true);
    let code = function["Properties"]["FunctionCode"].as_str().unwrap();
    let script = format!(
        "{code}\nvar answer = handler({{version: '1.0', context: {{eventType: 'viewer-request'}},\n\
           viewer: {{ip: '192.0.2.1'}}, request: {{method: {method}, uri: '/seckill/activities/s-1',\n\
           querystring: {{}}, headers: {headers}, cookies: {{}}}}}});\n\
         console.log(JSON.stringify(answer.headers));",
        method = serde_json::to_string(method).unwrap(),
    );
    let output = std::process::Command::new("node")
        .arg("-e")
        .arg(&script)
        .output()
        .expect("node runs the distribution's function (Node.js is a test dependency)");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A random header per request used to miss the detail's cache and reach get-sale's 1,000/s:
/// the key had `Authorization` in it. It holds no cookie, no query string, and no header but
/// Authorization, which CloudFront forwards only from a cache policy and the draft's PATCH on
/// the same path needs; the behaviour's function takes it off every read before the key is
/// made, so every read shares one key.
#[test]
fn the_sale_details_cache_key_holds_nothing_a_reader_can_vary() {
    let key = resource("SaleDetailCachePolicy")["Properties"]["CachePolicyConfig"]
        ["ParametersInCacheKeyAndForwardedToOrigin"]
        .clone();
    assert_eq!(key["CookiesConfig"]["CookieBehavior"], "none", "{key:?}");
    assert_eq!(key["QueryStringsConfig"]["QueryStringBehavior"], "none");
    let headers = &key["HeadersConfig"];
    let named: Vec<String> = match headers["HeaderBehavior"].as_str() {
        Some("none") => Vec::new(),
        Some("whitelist") => headers["Headers"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|h| text(h).to_ascii_lowercase())
            .collect(),
        other => panic!("the detail's key takes headers {other:?}"),
    };
    assert!(
        named.iter().all(|h| h == "authorization"),
        "a reader varies these at will: {named:?}"
    );

    let token = serde_json::json!({"authorization": {"value": "Bearer random-1f3a9c"}});
    for read in ["GET", "HEAD"] {
        let sent = run_detail_function(read, &token);
        assert!(
            sent.get("authorization").is_none(),
            "a {read} of the detail keeps Authorization in the cache key: {sent}"
        );
    }
    let edit = run_detail_function("PATCH", &token);
    assert_eq!(
        edit["authorization"]["value"], "Bearer random-1f3a9c",
        "the draft's PATCH keeps its token"
    );
    // The behaviour reads through this policy and no origin request policy, so nothing else a
    // reader sends reaches get-sale either.
    let detail = behaviour("/seckill/activities/*");
    assert!(detail.get("OriginRequestPolicyId").is_none(), "{detail:?}");
    assert_eq!(text(&detail["CachePolicyId"]), "!Ref SaleDetailCachePolicy");
}

/// Each route's throttle is one bucket for every client; a flood from one address used to
/// empty it for everyone. The web ACL counts each source's requests before the distribution's
/// cache and API Gateway: orders, the payment callback and the detail each have a rule of their
/// own and every path one more, each limit a parameter, and a source over one is answered
/// API Gateway's 429. It is optional (a cost), on in prod, and the runner plays its rules.
#[test]
fn the_web_acl_limits_each_source_before_the_routes_buckets() {
    let acl = resource("EdgeWebAcl");
    assert_eq!(acl["Type"], "AWS::WAFv2::WebACL");
    assert_eq!(acl["Condition"], "WafOn");
    assert_eq!(acl["Properties"]["Scope"], "CLOUDFRONT");
    assert!(acl["Properties"]["DefaultAction"].get("Allow").is_some());
    assert_eq!(
        text(&distribution_config()["WebACLId"]),
        "!If WafOn !GetAtt EdgeWebAcl.Arn !Ref AWS::NoValue"
    );
    let template = yaml("template.yaml");
    assert_eq!(
        text(&template["Conditions"]["WafOn"]),
        "!Equals !Ref EnableWaf true"
    );
    let enable = &template["Parameters"]["EnableWaf"];
    let description = text(&enable["Description"]);
    for cost in [
        "$5 per web ACL",
        "$1 per rule",
        "$0.60 per million requests",
    ] {
        assert!(
            description.contains(cost),
            "EnableWaf states {cost}: {description}"
        );
    }
    let samconfig = std::fs::read_to_string(root().join("samconfig.toml")).unwrap();
    let prod = samconfig.split("[prod.global.parameters]").nth(1).unwrap();
    assert!(
        prod.lines()
            .find(|line| line.starts_with("parameter_overrides"))
            .unwrap()
            .contains("EnableWaf=true"),
        "prod runs the web ACL"
    );

    for rule in acl["Properties"]["Rules"].as_sequence().unwrap() {
        let rate = &rule["Statement"]["RateBasedStatement"];
        assert_eq!(rate["AggregateKeyType"], "IP", "{rule:?}");
        assert!(
            text(&rate["Limit"]).starts_with("!Ref Waf"),
            "each limit is a parameter: {rule:?}"
        );
    }

    // As the runner reads it: which rule counts which request.
    let model = project_model(&[("EnvironmentName", "dev"), ("EnableWaf", "true")]);
    let counted_by = |method: &str, path: &str| -> Vec<String> {
        model
            .edge_limits
            .iter()
            .filter(|rule| rule.applies(method, path))
            .map(|rule| rule.name.clone())
            .collect()
    };
    assert_eq!(
        counted_by("POST", "/seckill/activities/s-1/orders"),
        ["per-source-orders", "per-source-all"]
    );
    assert_eq!(
        counted_by("POST", "/payments/callback"),
        ["per-source-callback", "per-source-all"]
    );
    assert_eq!(
        counted_by("GET", "/seckill/activities/s-1"),
        ["per-source-detail", "per-source-all"]
    );
    assert_eq!(counted_by("GET", "/users/me"), ["per-source-all"]);
    for rule in &model.edge_limits {
        assert_eq!(rule.status, 429, "{rule:?}");
        assert_eq!(
            rule.body,
            Some((
                r#"{"message":"Too Many Requests"}"#.to_owned(),
                "application/json".to_owned()
            )),
            "API Gateway's own 429, so that a client needs one retry rule"
        );
        assert_eq!(rule.window.as_secs(), 60, "{rule:?}");
    }
    let off = project_model(&[("EnvironmentName", "dev"), ("EnableWaf", "false")]);
    assert!(off.edge_limits.is_empty());
}

/// The execute-api endpoint stays reachable (disabling it needs a custom domain), and a caller
/// there skips the web ACL. So the distribution adds a header whose value is a generated secret
/// and every function is given that value and refuses a request without it: the variable is
/// set on every function in the template (an unset one would mean no check), the runner sends
/// the header as the distribution does, and `sam local`, with no distribution, turns it off.
#[test]
fn only_requests_through_the_distribution_reach_the_functions() {
    let template = yaml("template.yaml");
    let reference = "!Sub {{resolve:secretsmanager:${OriginVerifySecret}:SecretString}}";
    assert_eq!(
        text(&template["Globals"]["Function"]["Environment"]["Variables"]["ORIGIN_VERIFY"]),
        reference
    );
    let secret = resource("OriginVerifySecret");
    assert_eq!(secret["Type"], "AWS::SecretsManager::Secret");
    assert!(secret.get("Condition").is_none(), "on every stack");
    assert!(
        secret["Properties"]["GenerateSecretString"]["PasswordLength"]
            .as_u64()
            .unwrap()
            >= 32
    );
    let api = distribution_config()["Origins"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|origin| origin["Id"] == "api")
        .unwrap()
        .clone();
    let headers = api["OriginCustomHeaders"].as_sequence().unwrap();
    assert_eq!(headers.len(), 1, "{headers:?}");
    assert_eq!(
        text(&headers[0]["HeaderName"]).to_ascii_lowercase(),
        app::http::ORIGIN_VERIFY_HEADER
    );
    assert_eq!(text(&headers[0]["HeaderValue"]), reference);

    let model = project_model(&[("EnvironmentName", "dev")]);
    let sent = model
        .origin_headers
        .iter()
        .find(|(name, _)| name == app::http::ORIGIN_VERIFY_HEADER)
        .map(|(_, value)| value.clone())
        .expect("the runner sends the distribution's header");
    assert!(!sent.is_empty() && !sent.contains("resolve:"), "{sent}");
    for function in &model.functions {
        assert_eq!(
            function.environment.get(app::http::ORIGIN_VERIFY_ENV),
            Some(&sent),
            "{} checks the header the distribution sends",
            function.logical_id
        );
    }
    let sam = local_cloud::cloud::sam_env_vars(&model, "", "http://bridge:1", "redis://bridge:2");
    for function in &model.functions {
        assert_eq!(
            sam[&function.logical_id][app::http::ORIGIN_VERIFY_ENV],
            "",
            "sam local has no distribution in front of {}",
            function.logical_id
        );
    }
}
