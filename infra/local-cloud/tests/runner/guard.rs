//! The runner against a web page its developer visits: Lambda's Invoke API and the tools under
//! `/_local/` answer only requests to the runner itself from its own pages, so another site
//! can neither run a function nor mint a token through the developer's browser; and a runner
//! other machines could reach does not start with the public development secret.

use crate::gateway::{Reply, echo_function, spawn_api};
use crate::support::{binaries_dir, unique};
use http::Method;
use local_cloud::cloud::{CloudOptions, LocalCloud, function_env_from_process};
use serde_json::json;

const INVOKE: &str = "/2015-03-31/functions/EchoFunction/invocations";

fn message(reply: &Reply) -> String {
    reply.json()["message"]
        .as_str()
        .unwrap_or_else(|| panic!("no message: {:?}", reply.body))
        .to_owned()
}

/// What a page of another site sends with `fetch(runner, {method: 'POST', mode: 'no-cors'})`
/// (which needs no preflight) is refused before anything runs; the same call from the
/// runner's own page, or from `make invoke`, runs the function.
#[tokio::test]
async fn a_cross_site_post_to_the_invoke_api_runs_nothing() {
    let api = spawn_api(vec![echo_function(&unique("guard"))], 1, false).await;
    let echo = api.function("EchoFunction");
    for headers in [
        &[
            ("origin", "https://evil.example"),
            ("sec-fetch-site", "cross-site"),
        ][..],
        &[("origin", "https://evil.example")],
        &[("origin", "null")],
        &[("sec-fetch-site", "cross-site")],
        &[("sec-fetch-site", "same-site")],
    ] {
        let mut request = api
            .request(Method::POST, INVOKE)
            .header("content-type", "text/plain");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let reply = api.send(request, r#"{"admin": true}"#).await;
        assert_eq!(reply.status, 403, "{headers:?}: {:?}", reply.body);
        assert_eq!(
            reply.headers["x-amzn-errortype"], "AccessDeniedException",
            "{headers:?}"
        );
        let message = message(&reply);
        assert!(
            message.starts_with("Forbidden: Lambda's Invoke API answers only its own pages"),
            "{message}"
        );
    }
    assert_eq!(echo.invocations(), 0, "a refused call ran the function");

    let own = format!("http://{}", api.address);
    let from_its_page = api
        .request(Method::POST, INVOKE)
        .header("origin", &own)
        .header("sec-fetch-site", "same-origin");
    let reply = api.send(from_its_page, "{}").await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    // `make invoke` and the SDKs: no Origin, the address they were given.
    let reply = api.send(api.request(Method::POST, INVOKE), "{}").await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let by_name = api
        .request(Method::POST, INVOKE)
        .header("host", format!("localhost:{}", api.address.port()));
    assert_eq!(api.send(by_name, "{}").await.status, 200);
    assert_eq!(echo.invocations(), 3);
    api.stop().await;
}

/// DNS rebinding: a page of `evil.example` whose name now resolves to 127.0.0.1 is same-origin
/// with the runner to the browser, but names itself in `Host`, and is refused.
#[tokio::test]
async fn a_rebound_name_reaches_neither_the_invoke_api_nor_the_local_tools() {
    let api = spawn_api(vec![echo_function(&unique("guard"))], 1, false).await;
    let echo = api.function("EchoFunction");
    let rebound = format!("evil.example:{}", api.address.port());
    let origin = format!("http://{rebound}");

    let invoke = api
        .request(Method::POST, INVOKE)
        .header("host", &rebound)
        .header("origin", &origin)
        .header("sec-fetch-site", "same-origin");
    let reply = api.send(invoke, "{}").await;
    assert_eq!(reply.status, 403, "{:?}", reply.body);
    assert!(message(&reply).contains("another name for this machine is refused"));
    assert_eq!(echo.invocations(), 0);

    let sign_in = api
        .request(Method::POST, "/_local/sign-in")
        .header("host", &rebound)
        .header("origin", &origin)
        .header("content-type", "application/json");
    let reply = api
        .send(sign_in, json!({"user": "ops", "admin": true}).to_string())
        .await;
    assert_eq!(reply.status, 403, "{:?}", reply.body);
    assert!(reply.json().get("token").is_none());
    assert!(
        message(&reply).starts_with("Forbidden: the development sign-in answers only requests"),
        "{}",
        message(&reply)
    );

    let data = api
        .request(Method::GET, "/_local/dashboard/data")
        .header("host", &rebound);
    let reply = api.send(data, "").await;
    assert_eq!(reply.status, 403, "{:?}", reply.body);
    assert_eq!(reply.headers["content-type"], "application/json");
    let message = message(&reply);
    assert!(
        message.contains(&format!("not to \"{rebound}\"")),
        "{message}"
    );

    // The browser on the runner's own address: the dashboard's poll and the sign-in's form.
    let own = format!("http://{}", api.address);
    let poll = api
        .request(Method::GET, "/_local/dashboard/data")
        .header("sec-fetch-site", "same-origin")
        .header("sec-fetch-mode", "cors");
    assert_eq!(api.send(poll, "").await.status, 200);
    let form = api
        .request(Method::POST, "/_local/sign-in")
        .header("origin", &own)
        .header("sec-fetch-site", "same-origin")
        .header("sec-fetch-mode", "navigate")
        .header("content-type", "application/x-www-form-urlencoded");
    let reply = api.send(form, "user=ops&admin=on").await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert!(String::from_utf8_lossy(&reply.body).contains("Signed in as ops (admin)"));
    api.stop().await;
}

/// On an address other machines reach, anyone who knows the public development secret could
/// mint an admin token: the runner says which variable to set, before it creates anything.
#[tokio::test]
async fn a_runner_on_a_non_loopback_address_refuses_the_default_secret() {
    let options = CloudOptions {
        template: crate::support::fixture_template(),
        parameter_overrides: Default::default(),
        stack_name: unique("exposed"),
        address: "0.0.0.0:0".parse().unwrap(),
        instances: 1,
        binaries_dir: binaries_dir(),
        jwt_secret: local_cloud::jwt::DEFAULT_LOCAL_SECRET.as_bytes().to_vec(),
        log_invocations: false,
        account_id: local_cloud::cloud::DEFAULT_ACCOUNT_ID.to_owned(),
        function_env: function_env_from_process(),
        disabled_sources: Vec::new(),
        faults: Default::default(),
        route_throttling: true,
        trust_forwarded_for: false,
        lambda_cpu: None,
    };
    let refused = LocalCloud::start(options)
        .await
        .err()
        .expect("the runner refuses to start");
    let message = format!("{refused:#}");
    assert!(
        message.contains("0.0.0.0:0") && message.contains("LOCAL_JWT_SECRET"),
        "{message}"
    );
}
