//! The shop's pages in the cloud: a private bucket that only this stack's distribution reads
//! (through its origin access control, only the pages), a distribution that serves `/shop/*`
//! from it and the rest from the API (uncached, but the public sale detail for its
//! `max-age=1`), publish-sale writing pages only, and a sign-in client without a secret that
//! uses the authorization code flow. The runner reads the bucket and gives publish-sale its
//! local name. The pages' shared head and layout are written once (`shop/_layout/`), every
//! page is uploaded with it included, and the deploy step uploads what the runner serves.
//!
//! Here, the cloud's resources; the pages themselves, and every way into them, in `pages.rs`.

mod pages;

use crate::support::{project_model, yaml};
use std::collections::BTreeMap;
use yaml_serde::Value;

/// The managed cache and origin request policies the distribution names.
const CACHING_DISABLED: &str = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad";
const CACHING_OPTIMIZED: &str = "658327ea-f89d-4fab-a63d-7e88639e58f6";
const ALL_VIEWER_EXCEPT_HOST: &str = "b689b0a8-53d0-40ab-baf2-68738e2966ac";

fn resource(id: &str) -> Value {
    let template = yaml("template.yaml");
    template["Resources"]
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

fn list(value: &Value) -> Vec<String> {
    match value {
        Value::Sequence(items) => items.iter().map(text).collect(),
        other => vec![text(other)],
    }
}

#[test]
fn the_pages_bucket_is_private_encrypted_and_owned_by_the_account() {
    let bucket = resource("ShopBucket");
    assert_eq!(bucket["Type"], "AWS::S3::Bucket");
    let properties = &bucket["Properties"];
    let block = &properties["PublicAccessBlockConfiguration"];
    for setting in [
        "BlockPublicAcls",
        "BlockPublicPolicy",
        "IgnorePublicAcls",
        "RestrictPublicBuckets",
    ] {
        assert_eq!(block[setting], Value::Bool(true), "{setting}");
    }
    assert_eq!(
        properties["OwnershipControls"]["Rules"][0]["ObjectOwnership"],
        "BucketOwnerEnforced"
    );
    let encryption = &properties["BucketEncryption"]["ServerSideEncryptionConfiguration"][0];
    assert!(
        encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"].is_string(),
        "{encryption:?}"
    );
    assert!(properties.get("WebsiteConfiguration").is_none());
}

#[test]
fn only_this_stacks_distribution_reads_the_pages_and_only_over_tls() {
    let policy = resource("ShopBucketPolicy");
    assert_eq!(text(&policy["Properties"]["Bucket"]), "!Ref ShopBucket");
    let statements = policy["Properties"]["PolicyDocument"]["Statement"]
        .as_sequence()
        .unwrap();
    let allows: Vec<&Value> = statements
        .iter()
        .filter(|s| s["Effect"] == "Allow")
        .collect();
    assert_eq!(allows.len(), 1, "one grant: the distribution's reads");
    let allow = allows[0];
    assert_eq!(
        allow["Principal"]["Service"], "cloudfront.amazonaws.com",
        "{allow:?}"
    );
    assert_eq!(list(&allow["Action"]), ["s3:GetObject"]);
    assert_eq!(list(&allow["Resource"]), ["!Sub ${ShopBucket.Arn}/shop/*"]);
    let source = text(&allow["Condition"]["StringEquals"]["AWS:SourceArn"]);
    assert!(
        source.ends_with(":distribution/${ShopDistribution}"),
        "{source}"
    );
    let deny = statements
        .iter()
        .find(|s| s["Effect"] == "Deny")
        .expect("a Deny of plain HTTP");
    assert_eq!(
        deny["Condition"]["Bool"]["aws:SecureTransport"],
        Value::Bool(false)
    );

    let control = &resource("ShopOriginAccessControl")["Properties"]["OriginAccessControlConfig"];
    assert_eq!(control["OriginAccessControlOriginType"], "s3");
    assert_eq!(control["SigningBehavior"], "always");
    assert_eq!(control["SigningProtocol"], "sigv4");
}

#[test]
fn the_distribution_serves_the_pages_from_the_bucket_and_the_rest_from_the_api() {
    let config = &resource("ShopDistribution")["Properties"]["DistributionConfig"];
    let origins = config["Origins"].as_sequence().unwrap();
    let origin = |id: &str| {
        origins
            .iter()
            .find(|o| o["Id"] == id)
            .unwrap_or_else(|| panic!("no origin {id}"))
    };
    let pages = origin("pages");
    assert_eq!(
        text(&pages["DomainName"]),
        "!GetAtt ShopBucket.RegionalDomainName"
    );
    assert_eq!(
        text(&pages["OriginAccessControlId"]),
        "!GetAtt ShopOriginAccessControl.Id"
    );
    assert_eq!(pages["S3OriginConfig"]["OriginAccessIdentity"], "");
    let api = origin("api");
    assert!(
        text(&api["DomainName"]).starts_with("!Sub ${HttpApi}.execute-api."),
        "{api:?}"
    );
    assert_eq!(
        api["CustomOriginConfig"]["OriginProtocolPolicy"],
        "https-only"
    );

    let default = &config["DefaultCacheBehavior"];
    assert_eq!(default["TargetOriginId"], "api");
    assert_eq!(default["CachePolicyId"], CACHING_DISABLED);
    assert_eq!(default["OriginRequestPolicyId"], ALL_VIEWER_EXCEPT_HOST);
    assert_eq!(default["ViewerProtocolPolicy"], "redirect-to-https");

    let behaviours = config["CacheBehaviors"].as_sequence().unwrap();
    let behaviour = |pattern: &str| {
        behaviours
            .iter()
            .find(|b| b["PathPattern"] == pattern)
            .unwrap_or_else(|| panic!("no behaviour for {pattern}"))
    };
    let shop = behaviour("/shop/*");
    assert_eq!(shop["TargetOriginId"], "pages");
    assert_eq!(list(&shop["AllowedMethods"]), ["GET", "HEAD"]);
    assert_eq!(shop["CachePolicyId"], CACHING_OPTIMIZED);

    // Ordering and publishing pass through uncached, Authorization forwarded; they come
    // before the cached detail, since the first pattern that matches wins.
    let position = |pattern: &str| {
        behaviours
            .iter()
            .position(|b| b["PathPattern"] == pattern)
            .unwrap()
    };
    for pattern in [
        "/seckill/activities/*/orders",
        "/seckill/activities/*/publish",
        "/seckill/activities/*/end",
        "/seckill/activities/*/figures",
        "/seckill/activities/*/reservation",
    ] {
        let writes = behaviour(pattern);
        assert_eq!(writes["TargetOriginId"], "api", "{pattern}");
        assert_eq!(writes["CachePolicyId"], CACHING_DISABLED, "{pattern}");
        assert_eq!(writes["OriginRequestPolicyId"], ALL_VIEWER_EXCEPT_HOST);
        assert!(list(&writes["AllowedMethods"]).contains(&"POST".to_owned()));
        assert!(
            position(pattern) < position("/seckill/activities/*"),
            "{pattern}"
        );
    }
    let detail = behaviour("/seckill/activities/*");
    assert_eq!(detail["TargetOriginId"], "api");
    assert_eq!(text(&detail["CachePolicyId"]), "!Ref SaleDetailCachePolicy");
    assert!(detail.get("OriginRequestPolicyId").is_none(), "{detail:?}");
    // The draft's edit (PATCH) shares the detail's path.
    assert!(list(&detail["AllowedMethods"]).contains(&"PATCH".to_owned()));
    assert_eq!(list(&detail["CachedMethods"]), ["GET", "HEAD"]);
    // Every route under the cached prefix other than the detail is a write behaviour's.
    let model = project_model(&[]);
    for route in model.http_routes() {
        if let Some(rest) = route.path.strip_prefix("/seckill/activities/") {
            let covered = rest == "{id}"
                || rest.ends_with("/orders")
                || rest.ends_with("/publish")
                || rest.ends_with("/end")
                || rest.ends_with("/figures")
                || rest.ends_with("/reservation");
            assert!(
                covered,
                "{} {} has no behaviour of its own",
                route.method, route.path
            );
        }
    }
    // The route's max-age=1 (shared/src/seckill/sale/routes.rs) is honoured, never stretched.
    let ttl = &resource("SaleDetailCachePolicy")["Properties"]["CachePolicyConfig"];
    assert_eq!(ttl["MinTTL"], 0);
    assert_eq!(ttl["MaxTTL"], 1);
    let key = &ttl["ParametersInCacheKeyAndForwardedToOrigin"];
    // Only the token, which buyers' reads do not send, and the edit needs forwarded.
    assert_eq!(key["HeadersConfig"]["HeaderBehavior"], "whitelist");
    assert_eq!(list(&key["HeadersConfig"]["Headers"]), ["Authorization"]);
    assert_eq!(key["CookiesConfig"]["CookieBehavior"], "none");

    // The home page's listing: public, cached for its max-age=2 (back_office_routes.rs).
    let listing = behaviour("/seckill/listing");
    assert_eq!(listing["TargetOriginId"], "api");
    assert_eq!(
        text(&listing["CachePolicyId"]),
        "!Ref SaleListingCachePolicy"
    );
    assert_eq!(list(&listing["AllowedMethods"]), ["GET", "HEAD"]);
    let ttl = &resource("SaleListingCachePolicy")["Properties"]["CachePolicyConfig"];
    assert_eq!(ttl["MaxTTL"], 2);
    let key = &ttl["ParametersInCacheKeyAndForwardedToOrigin"];
    assert_eq!(key["HeadersConfig"]["HeaderBehavior"], "none");
    assert_eq!(key["QueryStringsConfig"]["QueryStringBehavior"], "none");

    let outputs = yaml("template.yaml");
    let url = text(&outputs["Outputs"]["ShopUrl"]["Value"]);
    assert_eq!(url, "!Sub https://${ShopDistribution.DomainName}/shop/");
}

#[test]
fn the_pages_sign_in_with_the_code_flow_and_no_client_secret() {
    let client = &resource("ShopClient")["Properties"];
    assert_eq!(client["GenerateSecret"], Value::Bool(false));
    assert_eq!(client["AllowedOAuthFlowsUserPoolClient"], Value::Bool(true));
    assert_eq!(list(&client["AllowedOAuthFlows"]), ["code"]);
    let callback = text(&client["CallbackURLs"]);
    assert!(
        callback.contains("https://${ShopDomain}/shop/callback.html"),
        "{callback}"
    );
    assert_eq!(
        text(&resource("ShopSignInDomain")["Properties"]["UserPoolId"]),
        "!Ref UserPool"
    );
    // The API accepts the pages' tokens.
    let api = resource("HttpApi");
    let audience = list(
        &api["Properties"]["Auth"]["Authorizers"]["CognitoJwt"]["JwtConfiguration"]["audience"],
    );
    assert!(
        audience.contains(&"!Ref ShopClient".to_owned()),
        "{audience:?}"
    );
}

#[test]
fn the_page_writer_stores_in_the_pages_bucket_which_the_runner_provisions() {
    let model = project_model(&[]);
    let bucket = model
        .bucket("ShopBucket")
        .expect("the runner reads the bucket");
    assert_eq!(bucket.name, "contract-shopbucket");
    let writer = model.function("SalePageWriterFunction").unwrap();
    assert_eq!(
        writer.environment.get("SHOP_BUCKET"),
        Some(&bucket.name),
        "the page writer stores the pages in the bucket the runner serves"
    );
    let publish = model.function("PublishSaleFunction").unwrap();
    let queue = model
        .queue("SalePageQueue")
        .expect("the runner reads the queue");
    assert_eq!(
        publish.environment.get("SALE_PAGE_QUEUE_URL"),
        Some(&queue.url),
        "publish-sale sends its pages to the writer's queue"
    );
}

/// The headers a response headers policy's `SecurityHeadersConfig` makes CloudFront send:
/// lower-case name, value, as the browser reads them. Every setting must override the
/// origin's own header.
fn headers_of_policy(config: &Value) -> BTreeMap<String, String> {
    let mut headers = BTreeMap::new();
    let overrides = |setting: &str| {
        assert_eq!(
            config[setting]["Override"],
            Value::Bool(true),
            "{setting} must override the origin's header"
        );
    };
    if let Some(csp) = config.get("ContentSecurityPolicy") {
        overrides("ContentSecurityPolicy");
        headers.insert(
            "content-security-policy".to_owned(),
            text(&csp["ContentSecurityPolicy"]),
        );
    }
    if let Some(hsts) = config.get("StrictTransportSecurity") {
        overrides("StrictTransportSecurity");
        let mut value = format!("max-age={}", text(&hsts["AccessControlMaxAgeSec"]));
        if hsts.get("IncludeSubdomains") == Some(&Value::Bool(true)) {
            value.push_str("; includeSubDomains");
        }
        if hsts.get("Preload") == Some(&Value::Bool(true)) {
            value.push_str("; preload");
        }
        headers.insert("strict-transport-security".to_owned(), value);
    }
    if config.get("ContentTypeOptions").is_some() {
        overrides("ContentTypeOptions");
        headers.insert("x-content-type-options".to_owned(), "nosniff".to_owned());
    }
    if let Some(frames) = config.get("FrameOptions") {
        overrides("FrameOptions");
        headers.insert("x-frame-options".to_owned(), text(&frames["FrameOption"]));
    }
    if let Some(referrer) = config.get("ReferrerPolicy") {
        overrides("ReferrerPolicy");
        headers.insert(
            "referrer-policy".to_owned(),
            text(&referrer["ReferrerPolicy"]),
        );
    }
    headers
}

/// Every behaviour of the distribution adds the stack's security headers, and the runner
/// sends exactly those: a Content-Security-Policy without `unsafe-inline` or `unsafe-eval`
/// that keeps scripts to this origin and the site out of frames, HSTS, nosniff, frame
/// options and a referrer policy.
#[test]
fn the_distribution_and_the_runner_send_the_same_security_headers() {
    let policy = resource("ShopSecurityHeadersPolicy");
    assert_eq!(policy["Type"], "AWS::CloudFront::ResponseHeadersPolicy");
    let config = &policy["Properties"]["ResponseHeadersPolicyConfig"];
    assert!(
        config.get("CustomHeadersConfig").is_none() && config.get("RemoveHeadersConfig").is_none(),
        "the runner sends the security headers only"
    );
    let cloud = headers_of_policy(&config["SecurityHeadersConfig"]);
    let local: BTreeMap<String, String> = local_cloud::pages::SECURITY_HEADERS
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    assert_eq!(
        cloud, local,
        "the template's ShopSecurityHeadersPolicy and the runner's SECURITY_HEADERS differ"
    );
    for name in [
        "content-security-policy",
        "strict-transport-security",
        "x-content-type-options",
        "x-frame-options",
        "referrer-policy",
    ] {
        assert!(cloud.contains_key(name), "the policy sends no {name}");
    }

    let csp = &cloud["content-security-policy"];
    let directives: BTreeMap<&str, &str> = csp
        .split(';')
        .filter_map(|directive| {
            let directive = directive.trim();
            let (name, sources) = directive.split_once(' ').unwrap_or((directive, ""));
            (!name.is_empty()).then_some((name, sources.trim()))
        })
        .collect();
    assert!(!csp.contains("unsafe-"), "{csp}");
    for (directive, sources) in [
        ("default-src", "'self'"),
        ("script-src", "'self'"),
        ("style-src", "'self'"),
        ("object-src", "'none'"),
        ("base-uri", "'none'"),
        ("frame-ancestors", "'none'"),
    ] {
        assert_eq!(directives.get(directive), Some(&sources), "{csp}");
    }
    assert!(
        cloud["strict-transport-security"].starts_with("max-age=")
            && cloud["strict-transport-security"]["max-age=".len()..]
                .split(';')
                .next()
                .and_then(|age| age.parse::<u64>().ok())
                .is_some_and(|age| age >= 31_536_000),
        "HSTS for a year at least: {}",
        cloud["strict-transport-security"]
    );
    assert_eq!(cloud["x-frame-options"], "DENY");

    let distribution = &resource("ShopDistribution")["Properties"]["DistributionConfig"];
    let behaviours = std::iter::once(&distribution["DefaultCacheBehavior"]).chain(
        distribution["CacheBehaviors"]
            .as_sequence()
            .expect("the distribution's behaviours"),
    );
    for behaviour in behaviours {
        assert_eq!(
            text(&behaviour["ResponseHeadersPolicyId"]),
            "!Ref ShopSecurityHeadersPolicy",
            "{:?}",
            behaviour.get("PathPattern")
        );
    }
}

/// The error codes CloudFront caches, by default for 10 seconds, whatever the cache policy
/// says (CloudFront's guide, "Caching error responses").
const CACHED_ERRORS: [u16; 11] = [400, 403, 404, 405, 414, 416, 500, 501, 502, 503, 504];

/// An error must not outlive the route's own answer at the edge: a sale detail's 404 just
/// before the sale is published, or a 503 at its opening, kept 10 s would be every buyer's
/// answer at that edge. Each error a cached behaviour can return has a custom error response
/// keeping it at most as long as the shortest TTL of a cached API behaviour (the detail's
/// `max-age=1`), and none replaces the API's JSON error by a page.
#[test]
fn no_error_is_cached_longer_than_the_routes_own_answer() {
    let config = &resource("ShopDistribution")["Properties"]["DistributionConfig"];
    let behaviours = config["CacheBehaviors"].as_sequence().unwrap();
    let cached: Vec<&Value> = std::iter::once(&config["DefaultCacheBehavior"])
        .chain(behaviours)
        .filter(|b| b["CachePolicyId"] != CACHING_DISABLED)
        .collect();
    assert!(
        cached.len() >= 2,
        "the pages and the sale detail are cached: {cached:?}"
    );
    let detail_ttl = resource("SaleDetailCachePolicy")["Properties"]["CachePolicyConfig"]["MaxTTL"]
        .as_u64()
        .unwrap();
    let responses = config["CustomErrorResponses"]
        .as_sequence()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for code in CACHED_ERRORS {
        let response = responses
            .iter()
            .find(|r| r["ErrorCode"].as_u64() == Some(code.into()))
            .unwrap_or_else(|| {
                panic!("no custom error response for {code}: CloudFront keeps it 10 s")
            });
        let ttl = response["ErrorCachingMinTTL"]
            .as_u64()
            .unwrap_or_else(|| panic!("{code}: no ErrorCachingMinTTL (the default is 10 s)"));
        assert!(
            ttl <= detail_ttl,
            "{code} is kept {ttl} s, longer than the detail's {detail_ttl} s"
        );
        for key in ["ResponsePagePath", "ResponseCode"] {
            assert!(
                response.get(key).is_none(),
                "{code}: {key} would replace the API's own error answer"
            );
        }
    }
}
