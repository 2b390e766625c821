//! The project's `template.yaml` as the runner reads it: its functions, queues and tables, its
//! parameters and their checks, its user pool's triggers and its routes' throttling.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use local_cloud::model::{
    CognitoTrigger, EventSpec, FunctionSpec, HttpRoute, JwtAuthorizer, Model, QueueSpec,
    RouteThrottle, TableSpec,
};
use local_cloud::template::{LocalNames, load};
use serde_json::json;

const ACCOUNT: &str = "123456789012";
const SQS: &str = "http://127.0.0.1:4566";

fn names() -> LocalNames {
    LocalNames {
        stack_name: "local".into(),
        region: "us-east-1".into(),
        account_id: ACCOUNT.into(),
        sqs_endpoint: SQS.into(),
    }
}

fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn template_path() -> PathBuf {
    super::support::root().join("template.yaml")
}

fn project(pairs: &[(&str, &str)]) -> anyhow::Result<Model> {
    load(&template_path(), &overrides(pairs), &names())
}

fn function<'m>(model: &'m Model, id: &str) -> &'m FunctionSpec {
    model
        .function(id)
        .unwrap_or_else(|| panic!("function {id}"))
}

fn queue<'m>(model: &'m Model, id: &str) -> &'m QueueSpec {
    model.queue(id).unwrap_or_else(|| panic!("queue {id}"))
}

fn table<'m>(model: &'m Model, id: &str) -> &'m TableSpec {
    model.table(id).unwrap_or_else(|| panic!("table {id}"))
}

fn url(name: &str) -> String {
    format!("{SQS}/{ACCOUNT}/{name}")
}

fn queue_arn(name: &str) -> String {
    format!("arn:aws:sqs:us-east-1:{ACCOUNT}:{name}")
}

fn jwt(name: &str) -> Option<JwtAuthorizer> {
    Some(JwtAuthorizer {
        name: name.into(),
        identity_source: "$request.header.Authorization".into(),
    })
}

fn routes(model: &Model) -> BTreeMap<String, Option<RouteThrottle>> {
    model
        .http_routes()
        .map(|route| (route.key(), route.throttle))
        .collect()
}

#[test]
fn project_template_loads() {
    let model = project(&[]).expect("template.yaml loads");

    let put = function(&model, "PutProfileFunction");
    assert_eq!(put.binary, "bundle-social-api");
    assert_eq!(put.handler, "put-profile");
    assert_eq!(put.timeout, Duration::from_secs(10));
    // Its own MemorySize (from the bench's memory-size table) wins over the Globals' 128.
    assert_eq!(put.memory_mb, 256);
    assert_eq!(function(&model, "SalePageWriterFunction").memory_mb, 128);
    assert_eq!(put.environment["APP_ENV"], "dev");
    assert_eq!(put.environment["SOCIAL_TABLE"], "local-SocialTable");
    assert!(put.events.contains(&EventSpec::Http(HttpRoute {
        event_name: "PutProfile".into(),
        method: "PUT".into(),
        path: "/users/me".into(),
        authorizer: jwt("CognitoJwt"),
        // The stage default (throttling's own tests cover the rest).
        throttle: Some(RouteThrottle::new(4_000.0, 2_000)),
    })));
    for function in &model.functions {
        assert!(
            !function.binary.is_empty(),
            "{} has a binary",
            function.logical_id
        );
        assert_eq!(function.environment["SOCIAL_TABLE"], "local-SocialTable");
    }

    for (main, dlq, name) in [
        (
            "NotificationQueue",
            "NotificationDeadLetterQueue",
            "notification",
        ),
        (
            "FollowerCountQueue",
            "FollowerCountDeadLetterQueue",
            "follower-count",
        ),
        ("OrderQueue", "OrderDeadLetterQueue", "order"),
        (
            "OrderTimeoutQueue",
            "OrderTimeoutDeadLetterQueue",
            "order-timeout",
        ),
    ] {
        let main_queue = queue(&model, main);
        assert_eq!(main_queue.name, format!("local-{name}"));
        assert_eq!(main_queue.url, url(&format!("local-{name}")));
        assert_eq!(main_queue.attributes["VisibilityTimeout"], "60");
        let redrive: serde_json::Value =
            serde_json::from_str(&main_queue.attributes["RedrivePolicy"]).unwrap();
        assert_eq!(
            redrive,
            json!({"deadLetterTargetArn": queue_arn(&format!("local-{dlq}")), "maxReceiveCount": 5})
        );
        let dlq_queue = queue(&model, dlq);
        assert_eq!(dlq_queue.name, format!("local-{dlq}"));
        assert_eq!(dlq_queue.attributes["MessageRetentionPeriod"], "1209600");
        let allow: serde_json::Value =
            serde_json::from_str(&dlq_queue.attributes["RedriveAllowPolicy"]).unwrap();
        assert_eq!(
            allow,
            json!({
                "redrivePermission": "byQueue",
                "sourceQueueArns": [queue_arn(&format!("local-{name}"))],
            })
        );
        assert!(!dlq_queue.attributes.contains_key("SqsManagedSseEnabled"));
    }
    assert_eq!(
        queue(&model, "OrderTimeoutQueue").attributes["DelaySeconds"],
        "900"
    );

    let social = table(&model, "SocialTable");
    assert_eq!(social.name, "local-SocialTable");
    let gsis: Vec<_> = social
        .global_secondary_indexes
        .iter()
        .map(|i| {
            (
                i.name.as_str(),
                i.projection_type.as_str(),
                i.key_schema.len(),
            )
        })
        .collect();
    assert_eq!(gsis, [("gsi1", "ALL", 2), ("gsi2", "ALL", 2)]);
    assert_eq!(
        social.stream_view_type.as_deref(),
        Some("NEW_AND_OLD_IMAGES")
    );
    assert_eq!(social.ttl_attribute.as_deref(), Some("expiresAt"));
    let commerce = table(&model, "CommerceTable");
    // Orders by user, refunds due and the live sales (gsi1); every sale (gsi2); a sale's
    // orders, projecting only what its figures sum (gsi3).
    assert_eq!(commerce.global_secondary_indexes.len(), 3);
    let orders = &commerce.global_secondary_indexes[2];
    assert_eq!(orders.name, "gsi3");
    assert_eq!(orders.projection_type, "INCLUDE");
    assert_eq!(
        orders.non_key_attributes,
        ["status", "quantity", "priceCents"]
    );
    assert_eq!(commerce.stream_view_type, None);
    assert_eq!(commerce.ttl_attribute.as_deref(), Some("expiresAt"));
}

#[test]
fn parameter_overrides_apply_and_bad_values_are_rejected() {
    let model = project(&[("EnvironmentName", "prod"), ("PaymentWindowSeconds", "60")])
        .expect("valid overrides");
    assert_eq!(
        function(&model, "PutProfileFunction").environment["APP_ENV"],
        "prod"
    );
    assert_eq!(
        queue(&model, "OrderTimeoutQueue").attributes["DelaySeconds"],
        "60"
    );

    // A refused override, and what its message must say.
    for (name, value, says) in [
        ("EnvironmentName", "staging", "parameter EnvironmentName"),
        (
            "EnvironmentName",
            "staging",
            "\"staging\" is not one of the AllowedValues",
        ),
        (
            "PaymentWindowSeconds",
            "901",
            "parameter PaymentWindowSeconds: the value 901 is outside",
        ),
        ("PaymentWindowSeconds", "soon", "\"soon\" is not a number"),
    ] {
        let err = format!("{:#}", project(&[(name, value)]).unwrap_err());
        assert!(err.contains(says), "{name}={value}: {err}");
    }
    let err = format!("{:#}", project(&[("Nope", "1")]).unwrap_err());
    assert!(
        err.ends_with("parameter override Nope: the template has no such parameter"),
        "{err}"
    );
}

#[test]
fn the_admin_mfa_guard_is_the_pools_v2_trigger_unless_everyone_has_mfa() {
    let guarded = project(&[]).unwrap();
    assert_eq!(
        function(&guarded, "AdminMfaGuardFunction").events,
        [EventSpec::Cognito(CognitoTrigger {
            user_pool: "UserPool".into(),
            trigger: "PreTokenGeneration".into(),
            version: "V2_0".into(),
        })]
    );
    let everyone = project(&[("MfaScope", "everyone")]).unwrap();
    assert!(
        everyone
            .functions
            .iter()
            .all(|f| f.logical_id != "AdminMfaGuardFunction"),
        "with MFA for everyone the pool has no trigger and the guard does not exist"
    );
}

#[test]
fn the_project_template_throttles_the_sale_routes_tightest() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../template.yaml");
    let model = load(&path, &BTreeMap::new(), &names()).unwrap();
    let served = routes(&model);
    let detail = served["GET /seckill/activities/{id}"].expect("the detail route's limit");
    let orders = served["POST /seckill/activities/{id}/orders"].expect("place-order's limit");
    assert_eq!(detail, RouteThrottle::new(1_000.0, 500));
    // The flash-sale seed's 4,000 attempts/s (docs/capacity.md).
    assert_eq!(orders, RouteThrottle::new(4_000.0, 2_000));
    for (key, throttle) in &served {
        let throttle = throttle.unwrap_or_else(|| panic!("{key} has no limit"));
        if !key.starts_with("GET /seckill/activities/{id}")
            && !key.starts_with("POST /seckill/activities/{id}/orders")
            && key != "POST /payments/callback"
        {
            assert_eq!(throttle, RouteThrottle::new(4_000.0, 2_000), "{key}");
            assert!(throttle.rate_per_second >= orders.rate_per_second, "{key}");
        }
    }
    assert!(detail.rate_per_second < orders.rate_per_second);

    let overridden = load(
        &path,
        &BTreeMap::from([
            ("SaleDetailThrottlingRateLimit".to_owned(), "2".to_owned()),
            ("SaleDetailThrottlingBurstLimit".to_owned(), "4".to_owned()),
        ]),
        &names(),
    )
    .unwrap();
    assert_eq!(
        routes(&overridden)["GET /seckill/activities/{id}"],
        Some(RouteThrottle::new(2.0, 4))
    );
}

/// The unauthenticated payment callback has a bucket of its own (issue 29, item 5), from its
/// own pair of parameters: neither the default every other route takes, nor anything another
/// route's traffic spends, decides whether the provider's notices get through.
#[test]
fn the_payment_callback_is_throttled_on_its_own_parameters() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../template.yaml");
    let template: yaml_serde::Value =
        yaml_serde::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let settings =
        &template["Resources"]["HttpApi"]["Properties"]["RouteSettings"]["POST /payments/callback"];
    for (key, parameter) in [
        ("ThrottlingRateLimit", "PaymentCallbackThrottlingRateLimit"),
        (
            "ThrottlingBurstLimit",
            "PaymentCallbackThrottlingBurstLimit",
        ),
    ] {
        let yaml_serde::Value::Tagged(reference) = &settings[key] else {
            panic!("RouteSettings.\"POST /payments/callback\".{key} is !Ref {parameter}");
        };
        assert_eq!(reference.tag.to_string().trim_start_matches('!'), "Ref");
        assert_eq!(reference.value.as_str(), Some(parameter), "{key}");
        let declared = &template["Parameters"][parameter];
        assert_eq!(declared["Type"], "Number", "{parameter}");
        assert_eq!(declared["MinValue"].as_u64(), Some(0), "{parameter}");
    }

    let model = load(&path, &BTreeMap::new(), &names()).unwrap();
    let served = routes(&model);
    let callback = served["POST /payments/callback"].expect("the callback's limit");
    assert_eq!(callback, RouteThrottle::new(500.0, 250));
    assert_ne!(
        callback,
        RouteThrottle::new(4_000.0, 2_000),
        "not the default"
    );

    let overridden = load(
        &path,
        &BTreeMap::from([
            (
                "PaymentCallbackThrottlingRateLimit".to_owned(),
                "7".to_owned(),
            ),
            (
                "PaymentCallbackThrottlingBurstLimit".to_owned(),
                "3".to_owned(),
            ),
            ("ApiThrottlingRateLimit".to_owned(), "1".to_owned()),
            ("ApiThrottlingBurstLimit".to_owned(), "1".to_owned()),
        ]),
        &names(),
    )
    .unwrap();
    let served = routes(&overridden);
    assert_eq!(
        served["POST /payments/callback"],
        Some(RouteThrottle::new(7.0, 3)),
        "its own parameters, not the default's"
    );
    assert_eq!(
        served["POST /orders/{orderId}/pay"],
        Some(RouteThrottle::new(1.0, 1))
    );
}

#[test]
fn the_redis_routes_reserve_concurrency_unless_set_to_zero() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../template.yaml");
    let reserved = |overrides: &[(&str, &str)]| {
        let overrides = overrides
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let model = load(&path, &overrides, &names()).unwrap();
        ["GetSaleFunction", "PlaceOrderFunction"]
            .map(|id| function(&model, id).reserved_concurrency)
    };
    assert_eq!(reserved(&[]), [Some(50), Some(200)]);
    assert_eq!(
        reserved(&[
            ("GetSaleReservedConcurrency", "0"),
            ("PlaceOrderReservedConcurrency", "0")
        ]),
        [None, None]
    );
}

#[test]
fn the_payment_sandbox_exists_only_where_enabled_signs_with_its_own_secret_and_needs_a_token() {
    // The local stack: dev with the sandbox (local_cloud::template::LOCAL_STACK).
    let local = project(&[]).expect("the local stack loads without overrides");
    assert_eq!(
        function(&local, "PutProfileFunction").environment["APP_ENV"],
        "dev"
    );
    let secrets: Vec<&str> = local
        .secrets
        .iter()
        .map(|s| s.logical_id.as_str())
        .collect();
    assert!(secrets.contains(&"PaymentSandboxSecret"), "{secrets:?}");
    let sandbox_secret = local
        .secrets
        .iter()
        .find(|s| s.logical_id == "PaymentSandboxSecret")
        .unwrap()
        .name
        .clone();
    let sandbox = function(&local, "PaymentSandboxFunction");
    assert_eq!(sandbox.environment["SANDBOX_SECRET_ARN"], sandbox_secret);
    assert!(
        !sandbox.environment.contains_key("PAYMENT_SECRET_ARN"),
        "the sandbox never holds the provider's secret"
    );
    let callback = function(&local, "PaymentCallbackFunction");
    assert_eq!(callback.environment["SANDBOX_SECRET_ARN"], sandbox_secret);
    assert_ne!(callback.environment["PAYMENT_SECRET_ARN"], sandbox_secret);
    assert_eq!(
        function(&local, "PayOrderFunction").environment["PAYMENT_PROVIDER"],
        "sandbox"
    );
    let routes: Vec<(&str, bool)> = sandbox
        .events
        .iter()
        .filter_map(EventSpec::as_http)
        .map(|r| (r.method.as_str(), r.authorizer.is_some()))
        .collect();
    assert_eq!(
        routes,
        [("GET", false), ("POST", true)],
        "the page is public, the notice needs the buyer's token"
    );

    // Without it (the template's default): no sandbox, no secret of its own, and the
    // callback takes the provider's signature only.
    let off = project(&[("EnablePaymentSandbox", "false")]).unwrap();
    assert!(off.function("PaymentSandboxFunction").is_none());
    assert!(
        off.secrets
            .iter()
            .all(|s| s.logical_id != "PaymentSandboxSecret")
    );
    let callback = function(&off, "PaymentCallbackFunction");
    assert!(!callback.environment.contains_key("SANDBOX_SECRET_ARN"));
    assert!(callback.environment.contains_key("PAYMENT_SECRET_ARN"));
    assert!(
        !function(&off, "PayOrderFunction")
            .environment
            .contains_key("PAYMENT_PROVIDER")
    );
}

/// ElastiCache's AUTH: the cache takes only TLS clients that present a token CloudFormation
/// resolves from a secret it generates (never a parameter, a literal or an output), and
/// exactly the functions that use Redis get that secret's ARN to read it at cold start.
#[test]
fn the_cache_requires_tls_and_an_auth_token_from_secrets_manager() {
    let template = super::support::yaml("template.yaml");
    let resources = &template["Resources"];
    let cache = &resources["RedisCache"]["Properties"];
    assert_eq!(cache["TransitEncryptionEnabled"].as_bool(), Some(true));
    let yaml_serde::Value::Tagged(token) = &cache["AuthToken"] else {
        panic!("RedisCache's AuthToken is a !Sub of a Secrets Manager dynamic reference");
    };
    assert_eq!(token.tag.to_string().trim_start_matches('!'), "Sub");
    assert_eq!(
        token.value.as_str(),
        Some("{{resolve:secretsmanager:${RedisAuthSecret}:SecretString}}")
    );
    let secret = &resources["RedisAuthSecret"];
    assert_eq!(secret["Type"], "AWS::SecretsManager::Secret");
    let generated = &secret["Properties"]["GenerateSecretString"];
    assert!(
        generated["PasswordLength"]
            .as_u64()
            .is_some_and(|n| (16..=128).contains(&n)),
        "ElastiCache takes a token of 16 to 128 characters"
    );
    assert_eq!(generated["ExcludePunctuation"].as_bool(), Some(true));
    assert!(secret["Properties"].get("SecretString").is_none());

    let model = project(&[]).unwrap();
    let arn = &model
        .secrets
        .iter()
        .find(|s| s.logical_id == "RedisAuthSecret")
        .expect("the runner creates the secret too")
        .name;
    for function in &model.functions {
        let uses_redis = function.environment.contains_key("REDIS_ENDPOINT");
        assert_eq!(
            function.environment.get("REDIS_AUTH_SECRET_ARN"),
            uses_redis.then_some(arn),
            "{}",
            function.logical_id
        );
    }
}
