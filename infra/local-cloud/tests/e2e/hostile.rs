//! Bad input and hostile callers, end to end through the gateway and the real functions: every
//! malformed request is a 4xx with the contract's error body and a message that names the
//! problem, no token gets in where it does not belong, and nothing of another user leaks.

use crate::follow::sign_up;
use crate::support::{Api, SaleBuilder, eventually, options, report, sale, start, unique_stack};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use local_cloud::cloud::LocalCloud;
use local_cloud::jwt::{DEFAULT_LOCAL_SECRET, LOCAL_ISSUER, local_token, sign};
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) const WAIT: Duration = Duration::from_secs(30);

/// A client that sends exactly the bytes and headers it is given.
pub(crate) struct Raw {
    base: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Raw {
    pub(crate) fn new(cloud: &LocalCloud) -> Self {
        Self {
            base: format!("http://{}", cloud.address),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// A local cloud of the project template on a stack of its own, and a raw client of it.
    pub(crate) async fn start() -> (LocalCloud, Self) {
        let cloud = start(options(&unique_stack())).await;
        let raw = Self::new(&cloud);
        (cloud, raw)
    }

    /// Sends a request; answers the status and the body as JSON (a string if it is not JSON).
    /// No answer is ever a 5xx: whatever a caller sends, the system keeps working.
    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        authorization: Option<&str>,
        body: impl AsRef<[u8]>,
    ) -> (u16, Value) {
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("content-type", "application/json");
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        let response = self
            .client
            .request(
                request
                    .body(Full::new(Bytes::copy_from_slice(body.as_ref())))
                    .unwrap(),
            )
            .await
            .expect("the API answers");
        let status = response.status().as_u16();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        assert!(status < 500, "{method} {path}: {status} {body}");
        (status, body)
    }

    /// Asks, with `operator`'s authorization, for a sale of [`sale_body`] as `change` leaves it.
    pub(crate) async fn create_sale(
        &self,
        operator: &str,
        change: impl FnOnce(&mut Value),
    ) -> (u16, Value) {
        let mut body = sale_body();
        change(&mut body);
        self.send(
            "POST",
            "/seckill/activities",
            Some(operator),
            body.to_string(),
        )
        .await
    }
}

pub(crate) fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

pub(crate) fn user_token(sub: &str, groups: &[&str]) -> String {
    let groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
    local_token(
        DEFAULT_LOCAL_SECRET.as_bytes(),
        sub,
        &groups,
        Duration::from_secs(600),
    )
    .unwrap()
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Asserts the contract's error body with `status` and `code`, its message naming `names`.
#[track_caller]
pub(crate) fn assert_error(
    answer: &(u16, Value),
    status: u16,
    code: &str,
    names: &str,
    what: &str,
) {
    let (got, body) = answer;
    assert_eq!(*got, status, "{what}: {body}");
    let error = body["error"].as_object().unwrap_or_else(|| {
        panic!("{what}: the contract's error body, got {body}");
    });
    assert_eq!(error.len(), 2, "{what}: only code and message: {body}");
    assert_eq!(error["code"], code, "{what}: {body}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(names),
        "{what}: the message {message:?} should name {names:?}"
    );
}

/// The sale these tests send: a phone, open from a minute ago for an hour.
pub(crate) fn phone_sale() -> SaleBuilder {
    sale().title("Phone").price_cents(19900)
}

/// A valid sale body, [`phone_sale`]'s.
pub(crate) fn sale_body() -> Value {
    phone_sale().body()
}

#[tokio::test]
async fn malformed_bodies_paths_and_queries_are_400s_that_name_the_problem() {
    let (cloud, raw) = Raw::start().await;
    let alice = bearer(&user_token("alice", &[]));
    let operator = bearer(&user_token("operator", &["admin"]));
    sign_up(&cloud, "alice").await;

    // Bodies: malformed JSON, the wrong shape, wrong types, unknown fields, none at all.
    for (body, names) in [
        ("{", "invalid request body"),
        (r#"{"displayName": "Al"#, "EOF while parsing"),
        ("[]", "it must be a JSON object"),
        ("null", "it must be a JSON object"),
        (r#""Alice""#, "it must be a JSON object"),
        ("displayName=Alice", "it must be a JSON object"),
        (r#"{"displayName": 7}"#, "invalid type: integer `7`"),
        (r#"{"displayName": ["a"]}"#, "invalid type: sequence"),
        (r#"{}"#, "missing field `displayName`"),
        (
            r#"{"displayName": "Al", "userId": "mallory"}"#,
            "unknown field `userId`",
        ),
        ("", "a JSON request body is required"),
        ("  \n", "a JSON request body is required"),
        (r#"{"displayName": "   "}"#, "displayName must be 1 to 50"),
        (
            r#"{"displayName": "a\u0000b"}"#,
            "displayName must not contain U+0000: a control character",
        ),
    ] {
        let answer = raw.send("PUT", "/users/me", Some(&alice), body).await;
        assert_error(&answer, 400, "BAD_REQUEST", names, body);
    }

    // A large body within the API's 10 MB is refused by the function for its size (16 KiB at
    // most), before it is read; one over 10 MB is refused by the gateway before any function
    // sees it.
    let large = json!({"displayName": "x".repeat(1 << 20)}).to_string();
    let answer = raw.send("PUT", "/users/me", Some(&alice), large).await;
    assert_error(&answer, 413, "PAYLOAD_TOO_LARGE", "at most 16384", "1 MB");
    let huge = format!(
        r#"{{"displayName": "{}"}}"#,
        "x".repeat(10 * 1024 * 1024 + 1)
    );
    let (status, body) = raw.send("PUT", "/users/me", Some(&alice), huge).await;
    assert_eq!(
        (status, &body),
        (413, &json!({"message": "Request Entity Too Large"}))
    );
    let (status, body) = raw.send("GET", "/users/alice", Some(&alice), "").await;
    assert_eq!(
        (status, body["displayName"].as_str()),
        (200, Some("alice")),
        "the profile is untouched: {body}"
    );

    // Sales: wrong types, negative, zero and absurd quantities, bad and far-off times.
    let sale_cases: Vec<(&str, Value, &str)> = vec![
        ("priceCents", json!("19900"), "invalid type: string"),
        ("priceCents", json!(199.5), "invalid type: floating point"),
        ("priceCents", json!(-1), "priceCents must be between 1 and"),
        ("priceCents", json!(0), "priceCents must be between 1 and"),
        ("priceCents", json!(u64::MAX), "invalid value: integer"),
        ("stock", json!(-5), "stock must be between 1 and"),
        ("stock", json!(0), "stock must be between 1 and"),
        (
            "stock",
            json!(1_000_000_000_000i64),
            "stock must be between 1 and",
        ),
        ("stock", json!(null), "invalid type: null"),
        (
            "perUserLimit",
            json!(0),
            "perUserLimit must be between 1 and the stock",
        ),
        (
            "perUserLimit",
            json!(6),
            "perUserLimit must be between 1 and the stock",
        ),
        ("perUserLimit", json!(true), "invalid type: boolean"),
        ("productId", json!("p#1"), "productId must be 1 to 64"),
        ("productId", json!(12), "invalid type: integer"),
        ("title", json!(""), "title must be 1 to 200"),
        ("title", json!("t".repeat(201)), "title must be 1 to 200"),
        (
            "startsAt",
            json!("yesterday"),
            "startsAt must be an RFC 3339 time",
        ),
        ("startsAt", json!(1_700_000_000), "invalid type: integer"),
        (
            "endsAt",
            json!("2026-13-45T99:00:00Z"),
            "endsAt must be an RFC 3339 time",
        ),
        (
            "endsAt",
            json!("+10000-01-01T00:00:00Z"),
            "endsAt must be an RFC 3339 time",
        ),
        (
            "endsAt",
            json!("9999-12-31T23:59:59Z"),
            "endsAt must be at most 365 days",
        ),
        (
            "startsAt",
            json!("0001-01-01T00:00:00Z"),
            "endsAt must be at most 365 days",
        ),
        ("discount", json!(10), "unknown field `discount`"),
    ];
    for (field, value, names) in sale_cases {
        let what = format!("{field} = {value}");
        let answer = raw.create_sale(&operator, |body| body[field] = value).await;
        assert_error(&answer, 400, "BAD_REQUEST", names, &what);
    }
    for (starts, ends, names) in [
        (
            "1970-01-01T00:00:00Z",
            "1970-01-02T00:00:00Z",
            "endsAt must be in the future",
        ),
        (
            "2010-01-01T00:00:00Z",
            "2011-01-01T00:00:00Z",
            "endsAt must be in the future",
        ),
        (
            "2100-01-01T00:00:00Z",
            "2100-01-02T00:00:00Z",
            "startsAt must be at most a year ahead",
        ),
        (
            "2100-01-02T00:00:00Z",
            "2100-01-01T00:00:00Z",
            "endsAt must be after startsAt",
        ),
    ] {
        let answer = raw
            .create_sale(&operator, |body| {
                body["startsAt"] = json!(starts);
                body["endsAt"] = json!(ends);
            })
            .await;
        assert_error(
            &answer,
            400,
            "BAD_REQUEST",
            names,
            &format!("{starts}..{ends}"),
        );
    }

    // Ids in the path: malformed ones are 400s naming the parameter; well-formed unknown
    // ones are 404s.
    let unknown_sale = uuid::Uuid::now_v7().to_string();
    for (method, path, who, names) in [
        ("GET", "/users/a%23b", &alice, "userId in the path"),
        ("GET", "/users/%C3%BCber", &alice, "userId in the path"),
        ("PUT", "/users/a%20b/follow", &alice, "userId in the path"),
        (
            "GET",
            "/users/a%23b/followers",
            &alice,
            "userId in the path",
        ),
        (
            "GET",
            "/seckill/activities/42",
            &alice,
            "a sale id is a UUID",
        ),
        (
            "POST",
            "/seckill/activities/nope/orders",
            &alice,
            "a sale id is a UUID",
        ),
        (
            "POST",
            "/seckill/activities/nope/publish",
            &operator,
            "a sale id is a UUID",
        ),
        ("GET", "/orders/a%23b", &alice, "orderId in the path"),
        (
            "GET",
            &format!("/orders/{}", "o".repeat(129)),
            &alice,
            "orderId in the path",
        ),
    ] {
        let answer = raw.send(method, path, Some(who), "").await;
        assert_error(&answer, 400, "BAD_REQUEST", names, path);
    }
    for (method, path, who) in [
        ("GET", "/users/nobody".to_owned(), &alice),
        ("GET", format!("/seckill/activities/{unknown_sale}"), &alice),
        (
            "POST",
            format!("/seckill/activities/{unknown_sale}/orders"),
            &alice,
        ),
        (
            "POST",
            format!("/seckill/activities/{unknown_sale}/publish"),
            &operator,
        ),
        (
            "GET",
            format!("/orders/{unknown_sale}.{}", "0".repeat(32)),
            &alice,
        ),
    ] {
        let (status, body) = raw.send(method, &path, Some(who), "").await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (404, Some("NOT_FOUND")),
            "{path}"
        );
    }

    // Page sizes.
    for list in [
        "/notifications",
        "/orders",
        "/users/alice/followers",
        "/users/alice/following",
    ] {
        for limit in ["0", "-1", "101", "99999999999999999999", "ten", "1.5", ""] {
            let path = format!("{list}?limit={limit}");
            let answer = raw.send("GET", &path, Some(&alice), "").await;
            assert_error(
                &answer,
                400,
                "BAD_REQUEST",
                "limit must be an integer from 1 to 100",
                &path,
            );
        }
    }

    // Cursors: garbage, forged, and a real one used on another list.
    let bob = sign_up(&cloud, "bob").await;
    let carol = sign_up(&cloud, "carol").await;
    for fan in [&bob, &carol] {
        fan.follow("alice").await;
    }
    let (status, page) = raw
        .send("GET", "/users/alice/followers?limit=1", Some(&alice), "")
        .await;
    assert_eq!(status, 200, "{page}");
    let cursor = page["nextCursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let (status, _) = raw
        .send(
            "GET",
            &format!("/users/alice/followers?limit=1&cursor={cursor}"),
            Some(&alice),
            "",
        )
        .await;
    assert_eq!(status, 200, "the cursor works on its own list");
    let forged = {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(r#"{"pk":"USER#bob","sk":"PROFILE"}"#)
    };
    for list in [
        "/users/bob/followers",
        "/users/alice/following",
        "/notifications",
        "/orders",
    ] {
        for garbage in ["%25%25%25", "bm9wZQ", "A", forged.as_str(), cursor.as_str()] {
            let path = format!("{list}?cursor={garbage}");
            let answer = raw.send("GET", &path, Some(&alice), "").await;
            assert_error(&answer, 400, "BAD_REQUEST", "cursor is invalid", &path);
        }
    }

    // Mark-read and pay bodies.
    let too_many = json!({"ids": vec!["x"; 101]}).to_string();
    for (body, names) in [
        (r#"{"ids": [1]}"#, "invalid type: integer"),
        (r#"{"ids": "all"}"#, "invalid type: string"),
        (r#"{"ids": []}"#, "ids must hold 1 to 100"),
        (too_many.as_str(), "ids must hold 1 to 100"),
        (r#"{"all": false}"#, "send either"),
        (r#"{"all": "yes"}"#, "invalid type: string"),
        (r#"{"ids": ["a"], "all": true}"#, "send either"),
        (
            r#"{"ids": ["a"], "recipient": "bob"}"#,
            "unknown field `recipient`",
        ),
    ] {
        let answer = raw
            .send("POST", "/notifications/read", Some(&alice), body)
            .await;
        assert_error(&answer, 400, "BAD_REQUEST", names, body);
    }
    let order = format!("/orders/{unknown_sale}.{}/pay", "0".repeat(32));
    for (body, names) in [
        (r#"{"method": "cash"}"#, "method must be"),
        (r#"{"method": 1}"#, "invalid type: integer"),
        (r#"{}"#, "missing field `method`"),
        (
            r#"{"method": "COD", "amountCents": 0}"#,
            "unknown field `amountCents`",
        ),
    ] {
        let answer = raw.send("POST", &order, Some(&alice), body).await;
        assert_error(&answer, 400, "BAD_REQUEST", names, body);
    }
    cloud.stop().await;
}

#[tokio::test]
async fn tokens_and_roles_are_checked_before_anything_is_done() {
    let (cloud, raw) = Raw::start().await;
    let secret = DEFAULT_LOCAL_SECRET.as_bytes();
    let now = now_unix();
    let claims = |exp: u64| {
        json!({"sub": "mallory", "iat": now - 7200, "exp": exp, "iss": LOCAL_ISSUER,
               "token_use": "access", "cognito:groups": ["admin"]})
    };
    let valid = sign(secret, &claims(now + 600)).unwrap();
    let (payload, signature) = valid.rsplit_once('.').unwrap();
    let tampered_signature = format!("{payload}.{}", signature.chars().rev().collect::<String>());
    let refused: Vec<(&str, Option<String>)> = vec![
        ("no token", None),
        ("an empty bearer", Some("Bearer ".to_owned())),
        ("not a JWT", Some("Bearer not-a-token".to_owned())),
        ("three garbage parts", Some("Bearer a.b.c".to_owned())),
        ("another scheme", Some(format!("Basic {valid}"))),
        (
            "signed with another secret",
            Some(bearer(
                &sign(b"not the secret", &claims(now + 600)).unwrap(),
            )),
        ),
        ("a tampered signature", Some(bearer(&tampered_signature))),
        (
            "expired",
            Some(bearer(&sign(secret, &claims(now - 60)).unwrap())),
        ),
        (
            "unsigned (alg none)",
            Some(bearer(&{
                use base64::Engine as _;
                let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
                format!(
                    "{}.{}.",
                    b64.encode(r#"{"alg":"none","typ":"JWT"}"#),
                    b64.encode(claims(now + 600).to_string())
                )
            })),
        ),
    ];
    let sale = sale_body().to_string();
    for (what, authorization) in &refused {
        for (method, path, body) in [
            ("PUT", "/users/me", r#"{"displayName": "Mallory"}"#),
            ("GET", "/notifications", ""),
            ("GET", "/orders", ""),
            ("POST", "/seckill/activities", sale.as_str()),
        ] {
            let (status, answer) = raw.send(method, path, authorization.as_deref(), body).await;
            assert_eq!(
                (status, &answer),
                (401, &json!({"message": "Unauthorized"})),
                "{what}: {method} {path}"
            );
        }
    }
    // Nothing was written by any of them: mallory has no profile.
    let (status, _) = raw
        .send(
            "GET",
            "/users/mallory",
            Some(&bearer(&user_token("alice", &[]))),
            "",
        )
        .await;
    assert_eq!(status, 404);

    // The public route needs no token (and an unknown sale is simply not found).
    let unknown = uuid::Uuid::now_v7();
    let (status, _) = raw
        .send("GET", &format!("/seckill/activities/{unknown}"), None, "")
        .await;
    assert_eq!(status, 404);

    // Operators only: a plain user, or a look-alike group, is 403 on both admin routes.
    let operator = Api::admin(&cloud, "operator");
    let (status, draft) = operator
        .call("POST", "/seckill/activities", Some(sale_body()))
        .await;
    assert_eq!(status, 201, "{draft}");
    let draft = draft["id"].as_str().unwrap().to_owned();
    for groups in [&[][..], &["admins"], &["Admin"], &["buyers"]] {
        let token = bearer(&user_token("ann", groups));
        let publish = format!("/seckill/activities/{draft}/publish");
        for (path, body) in [
            ("/seckill/activities", sale.clone()),
            (publish.as_str(), String::new()),
        ] {
            let answer = raw.send("POST", path, Some(&token), body).await;
            let context = format!("{groups:?} {path}");
            assert_error(&answer, 403, "FORBIDDEN", "operators only", &context);
        }
    }
    // The draft was not published by any of them.
    let (status, _) = raw
        .send("GET", &format!("/seckill/activities/{draft}"), None, "")
        .await;
    assert_eq!(status, 404, "an unpublished draft is invisible");

    // A verified token whose subject cannot be a user id is refused by the function.
    let odd = bearer(&local_token(secret, "a#b", &[], Duration::from_secs(60)).unwrap());
    let answer = raw.send("GET", "/notifications", Some(&odd), "").await;
    assert_error(&answer, 401, "UNAUTHENTICATED", "bearer token", "sub a#b");
    cloud.stop().await;
}

#[tokio::test]
async fn no_user_reads_or_pays_another_users_order_or_notifications() {
    let (cloud, raw) = Raw::start().await;
    let operator = Api::admin(&cloud, "operator");
    let sale = phone_sale().publish(&operator).await;

    let ann = Api::new(&cloud, Some("ann"));
    let bob = Api::new(&cloud, Some("bob"));
    let order = ann.place_order(&sale).await;
    // A well-formed order id that exists nowhere: what bob must see for ann's, byte for byte.
    let unknown = format!("{sale}.{}", uuid::Uuid::now_v7().simple());
    let (_, unknown_answer) = bob.call("GET", &format!("/orders/{unknown}"), None).await;
    let not_found = json!({"error": {"code": "NOT_FOUND", "message": "no such order"}});
    assert_eq!(unknown_answer, not_found);

    // Pending (in Redis only), then confirmed (in DynamoDB): the same 404 for bob.
    let (status, body) = bob.call("GET", &format!("/orders/{order}"), None).await;
    assert_eq!((status, &body), (404, &not_found), "pending");
    eventually(WAIT, "ann's order is confirmed", || async {
        let (status, body) = ann.call("GET", &format!("/orders/{order}"), None).await;
        (status == 200 && body["status"] == "CONFIRMED").then_some(())
    })
    .await;
    let (status, body) = bob.call("GET", &format!("/orders/{order}"), None).await;
    assert_eq!((status, &body), (404, &not_found), "confirmed");
    for method in ["COD", "ONLINE"] {
        let (status, body) = bob
            .call(
                "POST",
                &format!("/orders/{order}/pay"),
                Some(json!({"method": method})),
            )
            .await;
        assert_eq!((status, &body), (404, &not_found), "bob pays with {method}");
    }
    let (status, mine) = ann.call("GET", &format!("/orders/{order}"), None).await;
    assert_eq!(
        (status, mine["status"].as_str(), mine.get("paidAt")),
        (200, Some("CONFIRMED"), None),
        "bob's attempts changed nothing: {mine}"
    );
    let (status, list) = bob.call("GET", "/orders", None).await;
    assert_eq!(
        (status, &list["items"]),
        (200, &json!([])),
        "bob lists only his own"
    );
    let (status, list) = ann.call("GET", "/orders", None).await;
    assert_eq!(status, 200);
    assert_eq!(list["items"][0]["orderId"], order.as_str());
    assert!(list["items"][0].get("userId").is_none(), "{list}");

    // Notifications are the caller's only: the route has no user in its path at all.
    let cat = sign_up(&cloud, "cat").await;
    let dan = sign_up(&cloud, "dan").await;
    cat.follow("dan").await;
    let notification = eventually(WAIT, "dan is notified", || async {
        let (status, body) = dan.call("GET", "/notifications", None).await;
        assert_eq!(status, 200, "{body}");
        body["items"][0]["notificationId"]
            .as_str()
            .map(str::to_owned)
    })
    .await;
    let (status, theirs) = cat.call("GET", "/notifications", None).await;
    assert_eq!(status, 200);
    assert_eq!(theirs["items"], json!([]), "cat sees none of dan's");
    assert_eq!(theirs["unreadCount"], 0);
    let cat_token = bearer(&user_token("cat", &[]));
    for path in [
        "/users/dan/notifications",
        "/notifications/dan",
        "/notifications?userId=dan",
        "/notifications?recipient=dan",
    ] {
        let (status, body) = raw.send("GET", path, Some(&cat_token), "").await;
        assert!(
            status == 404 || body["items"] == json!([]),
            "{path}: {status} {body}"
        );
    }
    for body in [json!({"ids": [notification]}), json!({"all": true})] {
        let (status, answer) = cat.call("POST", "/notifications/read", Some(body)).await;
        assert_eq!(
            (status, &answer),
            (200, &json!({"marked": 0, "unreadCount": 0})),
            "cat marks dan's"
        );
    }
    let (_, still) = dan.call("GET", "/notifications", None).await;
    assert_eq!(still["unreadCount"], 1, "{still}");
    assert_eq!(still["items"][0]["read"], false, "{still}");
    let (status, answer) = dan
        .call(
            "POST",
            "/notifications/read",
            Some(json!({"ids": [notification]})),
        )
        .await;
    assert_eq!(
        (status, &answer),
        (200, &json!({"marked": 1, "unreadCount": 0}))
    );
    cloud.stop().await;
}

#[tokio::test]
async fn a_body_over_16_kib_is_413_on_every_route_before_it_is_read() {
    let (cloud, raw) = Raw::start().await;
    let user = bearer(&user_token("bulky", &[]));
    let admin = bearer(&user_token("ops", &["admin"]));
    // Well-formed JSON, padded past the limit: refused for its size, not its content.
    let big = json!({"displayName": "Ann", "padding": "x".repeat(20 * 1024)}).to_string();
    for (method, path, token) in [
        ("PUT", "/users/me", &user),
        ("POST", "/notifications/read", &user),
        ("POST", "/seckill/activities", &admin),
        (
            "POST",
            "/seckill/activities/0190a1b2-c3d4-7e5f-8a9b-000000000001/orders",
            &user,
        ),
        ("GET", "/users/bulky", &user),
    ] {
        let answer = raw.send(method, path, Some(token), &big).await;
        assert_error(
            &answer,
            413,
            "PAYLOAD_TOO_LARGE",
            "at most 16384",
            &format!("{method} {path}"),
        );
    }
    // At the limit it is read, and refused for what it says (an unknown field).
    let empty = json!({"displayName": "Ann", "padding": ""})
        .to_string()
        .len();
    let at_limit =
        json!({"displayName": "Ann", "padding": "x".repeat(16 * 1024 - empty)}).to_string();
    assert_eq!(at_limit.len(), 16 * 1024);
    let answer = raw.send("PUT", "/users/me", Some(&user), &at_limit).await;
    assert_error(
        &answer,
        400,
        "BAD_REQUEST",
        "padding",
        "a body at the limit",
    );
    report(
        "hostile-large-body",
        "Hostile caller: a 20 KiB JSON body on five routes",
        "PUT /users/me, POST /notifications/read, ... with 20 KiB",
        &[
            "413 PAYLOAD_TOO_LARGE on every route before the body is parsed".to_owned(),
            "a body of exactly 16 KiB is read (400 for its unknown field)".to_owned(),
        ],
    );
    cloud.stop().await;
}
