//! The live dashboard at `/_local/dashboard`, as a developer uses it: traffic through the API,
//! then the page in a real (headless) browser, which must show that traffic.

use crate::browser::Browser;
use crate::support::{self, Api};
use fantoccini::Locator;
use std::time::Duration;
use time::format_description::well_known::Rfc3339;

/// `/_local/` belongs to the runner: the dashboard answers there, an unknown tool is a 404
/// with a message, and the API's routes are untouched.
#[tokio::test]
async fn local_paths_are_the_runners_not_the_apis() {
    let cloud = support::start(support::options(&support::unique_stack())).await;
    let anonymous = Api::new(&cloud, None);

    let (status, page) = anonymous.call("GET", "/_local/dashboard", None).await;
    assert_eq!(status, 200);
    assert!(
        page.as_str()
            .unwrap()
            .contains("<h1>Local cloud: live dashboard</h1>")
    );
    let (status, data) = anonymous.call("GET", "/_local/dashboard/data", None).await;
    assert_eq!(status, 200);
    assert!(data["functions"].as_array().unwrap().len() >= cloud.model.functions.len());

    for path in [
        "/_local/nothing-here",
        "/_local",
        "/_local/dashboard/../users/me",
    ] {
        let (status, body) = anonymous.call("GET", path, None).await;
        assert_eq!(status, 404, "{path}: {body}");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains("/_local/dashboard"), "{path}: {message}");
    }
    // Not a local path, so the API's own answer: its authorizer, not the dashboard.
    let (status, _) = anonymous.call("GET", "/_localx", None).await;
    assert_eq!(status, 404);
    let (status, _) = anonymous.call("PUT", "/users/me", None).await;
    assert_eq!(status, 401);
    cloud.stop().await;
}

/// The development sign-in: a token for a user name that the API's authorizer takes, as
/// `make token` mints; an operator's reaches the admin routes; a bad name is a 400 that says
/// what a user name is.
#[tokio::test]
async fn the_development_sign_in_mints_tokens_the_api_accepts() {
    let cloud = support::start(support::options(&support::unique_stack())).await;
    let anonymous = Api::new(&cloud, None);
    let base = format!("http://{}", cloud.address);

    let (status, form) = anonymous.call("GET", "/_local/sign-in", None).await;
    assert_eq!(status, 200);
    assert!(
        form.as_str().unwrap().contains("<h1>Local sign-in</h1>"),
        "{form}"
    );

    let sign_in = |body: serde_json::Value| {
        let anonymous = anonymous.clone();
        async move { anonymous.call("POST", "/_local/sign-in", Some(body)).await }
    };
    let (status, ann) = sign_in(serde_json::json!({"user": "ann"})).await;
    assert_eq!(status, 200, "{ann}");
    let token = ann["token"].as_str().unwrap();
    let (status, profile) = Api::with_token(&base, token)
        .call(
            "PUT",
            "/users/me",
            Some(serde_json::json!({"displayName": "Ann"})),
        )
        .await;
    assert_eq!(status, 200, "{profile}");
    assert_eq!(profile["userId"], "ann");
    // Not an operator: the admin route refuses her; the operator's token passes.
    let now = time::OffsetDateTime::now_utc();
    let at = |from_now: time::Duration| (now + from_now).format(&Rfc3339).unwrap();
    let sale = serde_json::json!({"productId": "p", "title": "t", "priceCents": 1, "stock": 1,
        "perUserLimit": 1, "startsAt": at(time::Duration::hours(1)),
        "endsAt": at(time::Duration::hours(2))});
    let (status, _) = Api::with_token(&base, token)
        .call("POST", "/seckill/activities", Some(sale.clone()))
        .await;
    assert_eq!(status, 403);
    let (status, ops) = sign_in(serde_json::json!({"user": "ops", "admin": true})).await;
    assert_eq!(
        (status, &ops["groups"]),
        (200, &serde_json::json!(["admin"]))
    );
    let (status, created) = Api::with_token(&base, ops["token"].as_str().unwrap())
        .call("POST", "/seckill/activities", Some(sale))
        .await;
    assert_eq!(status, 201, "{created}");

    let (status, refused) = sign_in(serde_json::json!({"user": "ann lee"})).await;
    assert_eq!(status, 400);
    assert!(
        refused["message"].as_str().unwrap().contains("user name"),
        "{refused}"
    );
    cloud.stop().await;
}

/// A few profile writes and reads and a follow, then the page: its panels are there, the
/// function table counts exactly the requests sent, the invocation chart of the function
/// called has a point above zero, its duration percentiles are drawn, the queues are sampled,
/// the stream lag is drawn, and the functions' own metric lines have charts.
#[tokio::test]
async fn the_dashboard_shows_the_traffic_just_sent() {
    const PROFILES: usize = 3;
    const READS: usize = 4;
    let cloud = support::start(support::options(&support::unique_stack())).await;
    let put_profile = support::function_named(&cloud, "put-profile");
    let get_profile = support::function_named(&cloud, "get-user");
    let alice = Api::new(&cloud, Some("alice"));
    let users = ["alice", "bob", "carol"];
    for user in &users[..PROFILES] {
        alice.as_user(user).put_profile(user).await;
    }
    for _ in 0..READS {
        alice.expect("GET", "/users/bob", 200).await;
    }
    alice.follow("bob").await;

    let state = support::state_dir("dashboard");
    let browser = Browser::start(&state, 1400, 4200).await;
    let checked = check_page(
        &browser,
        &cloud,
        &put_profile,
        &get_profile,
        PROFILES,
        READS,
    )
    .await;
    let screenshot = state.join("dashboard.png");
    match browser.client.screenshot().await {
        Ok(png) => {
            std::fs::write(&screenshot, png).expect("the screenshot is written");
            println!("dashboard screenshot: {}", screenshot.display());
        }
        Err(err) => println!("no screenshot: {err}"),
    }
    browser.close().await;
    cloud.stop().await;
    checked.unwrap();
}

/// What a user checks on the page; an error says what was missing.
async fn check_page(
    browser: &Browser,
    cloud: &local_cloud::cloud::LocalCloud,
    put_profile: &str,
    get_profile: &str,
    profiles: usize,
    reads: usize,
) -> anyhow::Result<()> {
    let client = &browser.client;
    client
        .goto(&format!("http://{}/_local/dashboard", cloud.address))
        .await?;
    anyhow::ensure!(
        client.title().await? == "Local cloud: live dashboard",
        "the page's title"
    );
    let mut headings = Vec::new();
    for heading in client.find_all(Locator::Css("main h2")).await? {
        headings.push(heading.text().await?);
    }
    anyhow::ensure!(
        headings == ["Functions", "Queues", "Streams", "Function metrics"],
        "the panels: {headings:?}"
    );

    // The table counts since the runner started: exactly what was sent.
    for (function, sent) in [(put_profile, profiles), (get_profile, reads)] {
        let cell = format!("#function-table tr[data-function='{function}'] td.invocations");
        let shown = wait_for_text(browser, &cell, &sent.to_string()).await;
        anyhow::ensure!(
            shown.as_deref() == Some(sent.to_string().as_str()),
            "the table shows {shown:?} invocations of {function}, {sent} were sent"
        );
    }
    let errors = text(
        browser,
        &format!("#function-table tr[data-function='{put_profile}'] td.errors"),
    )
    .await;
    anyhow::ensure!(
        errors.as_deref() == Some("0"),
        "errors of {put_profile}: {errors:?}"
    );

    // The invocation chart has the function's series, with a point above zero.
    let series = format!("#chart-invocations path[data-series='{put_profile}']");
    let max = attribute(browser, &series, "data-max").await;
    let max: f64 = max.as_deref().unwrap_or("0").parse()?;
    anyhow::ensure!(
        max >= 1.0,
        "the invocation chart of {put_profile} peaks at {max}"
    );
    // Its axes say what they show.
    let labels = client
        .find(Locator::Css("#chart-invocations svg"))
        .await?
        .text()
        .await?;
    anyhow::ensure!(
        labels.contains("invocations / s"),
        "the y axis label: {labels:?}"
    );

    // Duration percentiles of a function that ran.
    for percentile in ["p50", "p95", "p99"] {
        let selector = format!("#chart-durations path[data-series='{percentile}']");
        let max: f64 = attribute(browser, &selector, "data-max")
            .await
            .as_deref()
            .unwrap_or("0")
            .parse()?;
        anyhow::ensure!(max > 0.0, "the {percentile} duration line is at {max}");
    }

    // Every queue of the template is listed, and sampled while the page is open.
    let rows = client
        .find_all(Locator::Css("#queue-table tbody tr"))
        .await?;
    anyhow::ensure!(
        rows.len() == cloud.model.queues.len(),
        "{} queue rows for {} queues",
        rows.len(),
        cloud.model.queues.len()
    );
    let first_queue = &cloud.model.queues[0].logical_id;
    let visible = format!("#queue-table tr[data-queue='{first_queue}'] td.visible");
    let sampled = until(Duration::from_secs(10), || async {
        text(browser, &visible).await.filter(|shown| shown != "–")
    })
    .await;
    anyhow::ensure!(
        sampled
            .as_deref()
            .is_some_and(|shown| shown.parse::<u64>().is_ok()),
        "queue {first_queue} shows depth {sampled:?}"
    );

    // The follow went through the stream to the relay: its lag is drawn.
    let lines = until(Duration::from_secs(20), || async {
        let count = attribute(browser, "#chart-stream-lag svg", "data-series-count").await;
        count.filter(|count| count != "0")
    })
    .await;
    anyhow::ensure!(lines.is_some(), "the stream lag chart has no line");

    // The functions' own metric lines (EMF, whatever their names): a chart each, with a line.
    let charts = until(Duration::from_secs(10), || async {
        let mut drawn = 0;
        for chart in client
            .find_all(Locator::Css("#metric-charts figure svg"))
            .await
            .ok()?
        {
            let series = chart.attr("data-series-count").await.ok().flatten();
            drawn += usize::from(series.is_some_and(|count| count != "0"));
        }
        (drawn > 0).then_some(drawn)
    })
    .await;
    anyhow::ensure!(
        charts.is_some(),
        "no chart of the functions' own metrics has a line"
    );
    Ok(())
}

/// Polls `probe` until it answers `Some`, for `timeout` at most (then `None`): unlike
/// `support::eventually` it does not panic, so the browser is always closed.
async fn until<T, F, Fut>(timeout: Duration, mut probe: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = std::time::Instant::now();
    loop {
        if let Some(value) = probe().await {
            return Some(value);
        }
        if started.elapsed() > timeout {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The text of the element `selector` picks, once it shows `expected` (or the last text seen
/// after ten seconds of page updates).
async fn wait_for_text(browser: &Browser, selector: &str, expected: &str) -> Option<String> {
    let shown = until(Duration::from_secs(10), || async {
        text(browser, selector)
            .await
            .filter(|shown| shown == expected)
    })
    .await;
    match shown {
        Some(shown) => Some(shown),
        None => text(browser, selector).await,
    }
}

async fn text(browser: &Browser, selector: &str) -> Option<String> {
    let element = browser.client.find(Locator::Css(selector)).await.ok()?;
    element.text().await.ok()
}

async fn attribute(browser: &Browser, selector: &str, name: &str) -> Option<String> {
    let element = browser.client.find(Locator::Css(selector)).await.ok()?;
    element.attr(name).await.ok().flatten()
}
