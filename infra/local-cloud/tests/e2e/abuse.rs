//! Limits against abuse, end to end: names and titles that hide or fake text are refused,
//! a mark-read of unknown ids costs a bounded number of transactions, and every order attempt
//! counts toward the buyer's rate limit (docs/security.md, "Abuse resistance"). Route throttling is in
//! `throttling.rs`, the follow limits in `follow.rs`.

use crate::follow::sign_up;
use crate::hostile::{Raw, WAIT, assert_error, bearer, phone_sale, user_token};
use crate::support::{Api, eventually, options, report, start, start_with, unique_stack};
use serde_json::json;
use std::time::Duration;
use time::OffsetDateTime;

#[tokio::test]
async fn names_and_titles_that_hide_or_fake_text_are_400s_and_every_script_is_accepted() {
    let (cloud, raw) = Raw::start().await;
    let user = "textrules";
    let token = bearer(&user_token(user, &[]));
    let operator = bearer(&user_token("operator", &["admin"]));

    // Each refused with the code point and the rule in the message.
    let hostile = [
        (
            "a bidi override",
            "Ann\u{202E}nimda",
            "U+202E: an invisible format",
        ),
        (
            "a bidi isolate",
            "\u{2067}Ann",
            "U+2067: an invisible format",
        ),
        (
            "a zero-width space",
            "Ad\u{200B}min",
            "U+200B: an invisible format",
        ),
        (
            "a zero width joiner in a word",
            "Ad\u{200D}min",
            "U+200D: a zero width joiner",
        ),
        (
            "only zero-width characters",
            "\u{200B}\u{200C}\u{2060}",
            "U+200B",
        ),
        ("only a Hangul filler", "\u{3164}", "U+3164: a filler"),
        (
            "only Braille blanks",
            "\u{2800}\u{2800}",
            "U+2800: a filler",
        ),
        ("ASCII smuggled in tags", "Ann\u{E0061}\u{E0064}", "U+E0061"),
        ("a no-break space", "Ann\u{00A0}Lee", "U+00A0: a separator"),
        (
            "a private-use character",
            "Ann\u{E000}",
            "U+E000: a private-use",
        ),
        (
            "only combining marks",
            "\u{0301}\u{0301}",
            "U+0301: a combining mark",
        ),
        (
            "zalgo",
            "Z\u{0351}\u{036B}\u{0313}\u{036A}\u{0302}algo",
            "U+036A: more than 3 combining marks",
        ),
    ];
    for (what, name, names) in hostile {
        let body = json!({ "displayName": name }).to_string();
        let answer = raw.send("PUT", "/users/me", Some(&token), &body).await;
        assert_error(&answer, 400, "BAD_REQUEST", names, what);
        let (_, body) = &answer;
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("displayName must not contain"),
            "{what}: {body}"
        );
    }
    let (status, _) = raw
        .send("GET", &format!("/users/{user}"), Some(&token), "")
        .await;
    assert_eq!(status, 404, "none of them created the profile");

    // Ordinary names of every script are stored, in NFC (a decomposed é is stored composed).
    for (name, stored) in [
        ("Jose\u{0301} Müller", "José Müller"),
        ("  李小龍  ", "李小龍"),
        ("محمد عبد الله", "محمد عبد الله"),
        ("דוד", "דוד"),
        ("Ann 👩🏽\u{200D}💻 🇫🇷", "Ann 👩🏽\u{200D}💻 🇫🇷"),
    ] {
        let body = json!({ "displayName": name }).to_string();
        let (status, profile) = raw.send("PUT", "/users/me", Some(&token), &body).await;
        assert_eq!(
            (status, profile["displayName"].as_str()),
            (200, Some(stored)),
            "{name:?}: {profile}"
        );
        let (status, profile) = raw
            .send("GET", &format!("/users/{user}"), Some(&token), "")
            .await;
        assert_eq!(
            (status, profile["displayName"].as_str()),
            (200, Some(stored)),
            "{name:?} read back: {profile}"
        );
    }

    // A sale's title follows the same rules, through the admin route.
    for (title, names) in [
        ("Phone\u{202E}99.0$", "title must not contain U+202E"),
        ("\u{200B}", "title must not contain U+200B"),
        ("\u{3164}\u{3164}", "title must not contain U+3164"),
    ] {
        let answer = raw
            .create_sale(&operator, |body| body["title"] = json!(title))
            .await;
        assert_error(&answer, 400, "BAD_REQUEST", names, title);
    }
    for (title, stored) in [
        ("Cafe\u{0301} crème", "Café crème"),
        ("限时抢购 手机", "限时抢购 手机"),
    ] {
        let (status, sale) = raw
            .create_sale(&operator, |body| body["title"] = json!(title))
            .await;
        assert_eq!(
            (status, sale["title"].as_str()),
            (201, Some(stored)),
            "{title:?}: {sale}"
        );
    }
    report(
        "hostile-text",
        "Hostile caller: names and sale titles that hide or fake text",
        "PUT /users/me, POST /seckill/activities with bidi, zero-width, fillers, tags, zalgo",
        &[
            "every one 400 BAD_REQUEST naming the code point; no profile created".to_owned(),
            "accents, CJK, Arabic, Hebrew and emoji sequences accepted, stored as NFC".to_owned(),
        ],
    );
    cloud.stop().await;
}

#[tokio::test]
async fn marking_100_unknown_notifications_read_costs_a_bounded_number_of_transactions() {
    const FUNCTION: &str = "MarkNotificationsReadFunction";
    let cloud = start_with(&[&format!("{FUNCTION}:proxy")], &[]).await;
    let eve = sign_up(&cloud, "eve").await;
    let fay = sign_up(&cloud, "fay").await;
    eve.follow("fay").await;
    let real = eventually(WAIT, "fay is notified", || async {
        let (_, body) = fay.call("GET", "/notifications", None).await;
        body["items"][0]["notificationId"]
            .as_str()
            .map(str::to_owned)
    })
    .await;
    // One real id among 99 well-formed ids of notifications that do not exist: each of those
    // cancels the transaction it is in, and all of them must be dropped at once.
    let created_at = real.rsplit_once('_').unwrap().0.to_owned();
    let mut ids: Vec<String> = (0..99)
        .map(|_| format!("{created_at}_{}", uuid::Uuid::new_v4().simple()))
        .collect();
    ids.insert(40, real.clone());
    let (status, answer) = fay
        .call("POST", "/notifications/read", Some(json!({ "ids": ids })))
        .await;
    assert_eq!(
        (status, &answer),
        (200, &json!({"marked": 1, "unreadCount": 0}))
    );
    let requests = cloud.faults.requests(FUNCTION);
    let transactions = requests.get("TransactWriteItems").copied().unwrap_or(0);
    // 100 ids are two commits of at most 99; each costs its attempt and at most one retry
    // without the ids the cancellation named.
    assert!(
        (2..=4).contains(&transactions),
        "{transactions} transactions for 100 ids: {requests:?}"
    );
    let total: u64 = requests.values().sum();
    assert!(
        total <= 6,
        "{total} AWS requests for one call: {requests:?}"
    );
    let (_, listed) = fay.call("GET", "/notifications", None).await;
    assert_eq!(listed["items"][0]["read"], true, "{listed}");
    report(
        "hostile-mark-read",
        "Hostile caller: mark-read of 1 real and 99 well-formed unknown notification ids",
        "POST /notifications/read {ids: [100]}",
        &[
            "answers marked 1, unreadCount 0".to_owned(),
            format!(
                "{transactions} TransactWriteItems and {total} AWS requests in all (bound: 4 and 6)"
            ),
        ],
    );
    cloud.stop().await;
}

/// Creates and publishes a [`phone_sale`], but open from `starts` for an hour;
/// answers its id.
async fn published_sale(operator: &Api, starts: OffsetDateTime) -> String {
    phone_sale()
        .starts_at(starts)
        .ends_at(starts + time::Duration::hours(1))
        .publish(operator)
        .await
}

#[tokio::test]
async fn every_order_attempt_counts_against_one_rate_limit_whatever_it_answers_and_on_any_sale() {
    const LIMIT: usize = 4;
    let stack = unique_stack();
    let mut options = options(&stack);
    options
        .parameter_overrides
        .insert("OrderRateLimitPerSecond".to_owned(), LIMIT.to_string());
    let cloud = start(options).await;
    let operator = Api::admin(&cloud, "operator");
    let now = OffsetDateTime::now_utc();
    let upcoming = published_sale(&operator, now + time::Duration::hours(1)).await;
    let later = published_sale(&operator, now + time::Duration::hours(2)).await;
    let open = published_sale(&operator, now - time::Duration::minutes(1)).await;
    let unknown = uuid::Uuid::now_v7().to_string();
    // The counter is the user's, on a Redis that other tests share: a user of this stack only.
    let buyer = Api::new(&cloud, Some(&format!("prober-{stack}")));
    let order = |sale: &str| {
        let (buyer, path) = (buyer.clone(), format!("/seckill/activities/{sale}/orders"));
        async move { buyer.call("POST", &path, None).await }
    };

    // LIMIT attempts that buy nothing, on three sales (two not started, one unknown), then one
    // on the open sale: refused for the rate, though it would have been admitted. The window
    // is a second from the first attempt; a round that took longer proves nothing, so it is
    // tried again after the window expired.
    let mut proven = false;
    for _round in 0..5 {
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        let started = std::time::Instant::now();
        let mut answers = Vec::new();
        for sale in [&upcoming, &later, &unknown, &upcoming] {
            answers.push(order(sale).await);
        }
        let refused = order(&open).await;
        if started.elapsed() >= Duration::from_millis(1_000) {
            continue;
        }
        for (i, (status, body)) in answers.iter().enumerate() {
            let expected = if i == 2 {
                (404, "NOT_FOUND")
            } else {
                (409, "NOT_STARTED")
            };
            assert_eq!(
                (*status, body["error"]["code"].as_str().unwrap_or_default()),
                expected,
                "attempt {i}: {body}"
            );
        }
        assert_eq!(refused.0, 429, "{}", refused.1);
        assert_eq!(refused.1["error"]["code"], "RATE_LIMITED", "{}", refused.1);
        proven = true;
        break;
    }
    assert!(
        proven,
        "no round of {} attempts fit in one second",
        LIMIT + 1
    );

    // The window over, the same order is admitted: the budget is back, nothing else was held
    // against the buyer.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let (status, body) = order(&open).await;
    assert_eq!(status, 202, "{body}");
    report(
        "hostile-order-attempts",
        "Hostile caller: order attempts on sales not yet open or unknown",
        "OrderRateLimitPerSecond (place-order)",
        &[
            "attempts answered NOT_STARTED / unknown sale count toward the rate limit".to_owned(),
            "the next attempt, on an open sale, 429 RATE_LIMITED".to_owned(),
            "after the window the same order 202".to_owned(),
        ],
    );
    cloud.stop().await;
}
