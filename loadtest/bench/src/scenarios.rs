//! What each function is asked in the benchmark: one happy-path HTTP request per HTTP
//! function (varied by request index, so that per-user limits never trip), and one realistic
//! batch per event consumer. The AWS stub's canned data makes every one of them succeed.

use app::seckill::payment::{SIGNATURE_HEADER, WebhookSecret};
use serde_json::{Value, json};

/// The user who owns every order the stub answers (`aws-stub --order-owner`).
pub const ORDER_OWNER: &str = "bench-user";
/// The operator who creates and publishes sales.
pub const ADMIN: &str = "bench-admin";
/// Distinct buyers: place-order allows 5 attempts per user and second, 100 units per user.
pub const USERS: u64 = 5_000;

/// Who calls a route, as the JWT authorizer would pass it.
#[derive(Clone, Debug)]
pub struct Caller {
    pub sub: String,
    pub admin: bool,
}

/// One HTTP request to a function's route, and the status its happy path answers.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: &'static str,
    /// The route as the template writes it, e.g. `/users/{userId}/follow`.
    pub route: &'static str,
    pub path_parameters: Vec<(&'static str, String)>,
    pub query: &'static str,
    pub body: Option<String>,
    pub caller: Option<Caller>,
    /// Headers beyond the content type and the caller's token.
    pub headers: Vec<(&'static str, String)>,
    pub expected: u16,
}

impl Call {
    /// The concrete path, e.g. `/users/user-00002/follow`.
    pub fn path(&self) -> String {
        let mut path = self.route.to_owned();
        for (name, value) in &self.path_parameters {
            path = path.replace(&format!("{{{name}}}"), value);
        }
        path
    }

    /// The path with its query string.
    pub fn path_and_query(&self) -> String {
        if self.query.is_empty() {
            self.path()
        } else {
            format!("{}?{}", self.path(), self.query)
        }
    }

    /// The API Gateway HTTP API (payload 2.0) event that Lambda would get for this request.
    pub fn event(&self) -> Value {
        let route_key = format!("{} {}", self.method, self.route);
        let path = self.path();
        let query: serde_json::Map<String, Value> = self
            .query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_owned(), json!(v)))
            .collect();
        let mut context = json!({
            "accountId": "123456789012",
            "apiId": "bench",
            "domainName": "127.0.0.1",
            "domainPrefix": "127",
            "http": {
                "method": self.method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": "bench",
            },
            "requestId": uuid::Uuid::new_v4().to_string(),
            "routeKey": route_key,
            "stage": "$default",
            "time": "30/Nov/2026:18:00:00 +0000",
            "timeEpoch": 1_795_975_200_000_i64,
        });
        if let Some(caller) = &self.caller {
            let mut claims = json!({ "sub": caller.sub });
            if caller.admin {
                claims["cognito:groups"] = json!("[admin]");
            }
            context["authorizer"] = json!({ "jwt": { "claims": claims, "scopes": null } });
        }
        let mut event = json!({
            "version": "2.0",
            "routeKey": route_key,
            "rawPath": path,
            "rawQueryString": self.query,
            "headers": self
                .headers
                .iter()
                .map(|(name, value)| (name.to_string(), json!(value)))
                .chain([
                    ("content-type".to_owned(), json!("application/json")),
                    ("host".to_owned(), json!("127.0.0.1")),
                ])
                .collect::<serde_json::Map<_, _>>(),
            "requestContext": context,
            "isBase64Encoded": false,
        });
        if !self.path_parameters.is_empty() {
            event["pathParameters"] = self
                .path_parameters
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect::<serde_json::Map<_, _>>()
                .into();
        }
        if !query.is_empty() {
            event["queryStringParameters"] = query.into();
        }
        if let Some(body) = &self.body {
            event["body"] = json!(body);
        }
        event
    }
}

/// The sale and order every request of one run talks about.
#[derive(Clone, Debug)]
pub struct Fixture {
    pub sale_id: String,
    pub order_id: String,
    pub starts_at: String,
    pub ends_at: String,
}

impl Fixture {
    pub fn new() -> Self {
        let now = time::OffsetDateTime::now_utc();
        let rfc3339 = |at: time::OffsetDateTime| {
            at.format(&time::format_description::well_known::Rfc3339)
                .expect("a UTC time formats")
        };
        let sale_id = uuid::Uuid::now_v7().hyphenated().to_string();
        Self {
            order_id: format!("{sale_id}.{}", uuid::Uuid::now_v7().simple()),
            sale_id,
            starts_at: rfc3339(now - time::Duration::minutes(1)),
            ends_at: rfc3339(now + time::Duration::hours(2)),
        }
    }
}

fn user(i: u64) -> String {
    format!("user-{:05}", i % USERS)
}

fn caller(sub: impl Into<String>) -> Option<Caller> {
    Some(Caller {
        sub: sub.into(),
        admin: false,
    })
}

fn admin() -> Option<Caller> {
    Some(Caller {
        sub: ADMIN.to_owned(),
        admin: true,
    })
}

/// Request `i` of an HTTP function's benchmark; `None` for a function that has no route.
pub fn http_call(binary: &str, fixture: &Fixture, i: u64) -> Option<Call> {
    let me = user(i);
    let other = user(i + 1);
    let call = |method, route, path_parameters: Vec<(&'static str, String)>| Call {
        method,
        route,
        path_parameters,
        query: "",
        body: None,
        caller: caller(me.clone()),
        headers: Vec::new(),
        expected: 200,
    };
    Some(match binary {
        "hello-http" => Call {
            caller: None,
            ..call("GET", "/hello", vec![])
        },
        "hello-getitem" => Call {
            caller: None,
            ..call("GET", "/hello/item", vec![])
        },
        "put-profile" => Call {
            body: Some(json!({ "displayName": format!("Bench {me}") }).to_string()),
            ..call("PUT", "/users/me", vec![])
        },
        "get-user" => call("GET", "/users/{userId}", vec![("userId", other)]),
        "follow" => call("PUT", "/users/{userId}/follow", vec![("userId", other)]),
        "unfollow" => call("DELETE", "/users/{userId}/follow", vec![("userId", other)]),
        "list-followers" => Call {
            query: "limit=20",
            ..call("GET", "/users/{userId}/followers", vec![("userId", other)])
        },
        "list-following" => Call {
            query: "limit=20",
            ..call("GET", "/users/{userId}/following", vec![("userId", other)])
        },
        "list-notifications" => Call {
            query: "limit=20",
            ..call("GET", "/notifications", vec![])
        },
        "mark-notifications-read" => Call {
            body: Some(json!({ "all": true }).to_string()),
            ..call("POST", "/notifications/read", vec![])
        },
        "create-sale" => Call {
            body: Some(
                json!({
                    "productId": "p-bench",
                    "title": "Benchmark phone",
                    "priceCents": 19_900,
                    "stock": 1_000,
                    "perUserLimit": 1,
                    "startsAt": fixture.starts_at,
                    "endsAt": fixture.ends_at,
                })
                .to_string(),
            ),
            caller: admin(),
            expected: 201,
            ..call("POST", "/seckill/activities", vec![])
        },
        "publish-sale" => Call {
            caller: admin(),
            ..call(
                "POST",
                "/seckill/activities/{id}/publish",
                vec![("id", fixture.sale_id.clone())],
            )
        },
        "list-sales" => Call {
            query: "limit=20",
            caller: admin(),
            ..call("GET", "/seckill/activities", vec![])
        },
        // The stub answers a sale whose id starts with `00000000-` as a draft.
        "edit-sale" => Call {
            body: Some(json!({ "title": format!("Benchmark phone {i}") }).to_string()),
            caller: admin(),
            ..call(
                "PATCH",
                "/seckill/activities/{id}",
                vec![("id", format!("00000000-0000-4000-8000-{i:012x}"))],
            )
        },
        // A sale per request, never the benchmark's own (its orders are measured after): the
        // stub answers each as published, and Redis does not hold it.
        "end-sale" => Call {
            caller: admin(),
            ..call(
                "POST",
                "/seckill/activities/{id}/end",
                vec![("id", format!("0193a4b2-7c00-7000-8000-{i:012x}"))],
            )
        },
        // The benchmark's own sale: its Redis keys are there; the stub answers each of the
        // order index's partitions with a page of orders.
        "sale-figures" => Call {
            caller: admin(),
            ..call(
                "GET",
                "/seckill/activities/{id}/figures",
                vec![("id", fixture.sale_id.clone())],
            )
        },
        "sale-listing" => Call {
            caller: None,
            ..call("GET", "/seckill/listing", vec![])
        },
        "list-refunds" => Call {
            query: "limit=20",
            caller: admin(),
            ..call("GET", "/admin/refunds", vec![])
        },
        // The stub answers the order kept for delivery, now confirmed.
        "confirm-delivery" => Call {
            caller: admin(),
            ..call(
                "POST",
                "/admin/orders/{orderId}/confirm-delivery",
                vec![("orderId", fixture.order_id.clone())],
            )
        },
        // The stub answers every refund as due, and the sandbox refunds it.
        "settle-refund" => Call {
            caller: admin(),
            ..call(
                "POST",
                "/admin/refunds/{paymentId}/{orderId}/settle",
                vec![
                    ("paymentId", format!("pay-{i}")),
                    ("orderId", fixture.order_id.clone()),
                ],
            )
        },
        "get-sale" => Call {
            caller: None,
            ..call(
                "GET",
                "/seckill/activities/{id}",
                vec![("id", fixture.sale_id.clone())],
            )
        },
        // The benchmark's sale requires no reservation: reserving and cancelling are measured
        // up to their refusal, 409 after the one Redis round trip that reads the window (the
        // table's write is not measured here); reading one's standing is the whole route.
        "reserve-sale" => Call {
            expected: 409,
            ..call(
                "PUT",
                "/seckill/activities/{id}/reservation",
                vec![("id", fixture.sale_id.clone())],
            )
        },
        "cancel-reservation" => Call {
            expected: 409,
            ..call(
                "DELETE",
                "/seckill/activities/{id}/reservation",
                vec![("id", fixture.sale_id.clone())],
            )
        },
        "get-reservation" => call(
            "GET",
            "/seckill/activities/{id}/reservation",
            vec![("id", fixture.sale_id.clone())],
        ),
        "place-order" => Call {
            expected: 202,
            ..call(
                "POST",
                "/seckill/activities/{id}/orders",
                vec![("id", fixture.sale_id.clone())],
            )
        },
        "get-order" => Call {
            caller: caller(ORDER_OWNER),
            ..call(
                "GET",
                "/orders/{orderId}",
                vec![("orderId", fixture.order_id.clone())],
            )
        },
        "list-orders" => Call {
            query: "limit=20",
            caller: caller(ORDER_OWNER),
            ..call("GET", "/orders", vec![])
        },
        "payment-callback" => {
            // A success for the stub's CONFIRMED order, signed as the provider does with the
            // secret's local value (the stub answers it too); the order has no such payment,
            // so it is recorded for refund: a GetItem and a conditional PutItem, 200.
            let notice = json!({"eventId": format!("evt-{i}"), "paymentId": format!("pay-{i}"),
                                "orderId": fixture.order_id, "amountCents": 1999,
                                "currency": "EUR", "status": "SUCCEEDED"})
            .to_string();
            let secret =
                WebhookSecret::new(local_cloud::secrets::local_value("PaymentWebhookSecret"))
                    .expect("the local value is long enough");
            let now = time::OffsetDateTime::now_utc().unix_timestamp();
            Call {
                caller: None,
                headers: vec![(SIGNATURE_HEADER, secret.sign(now, notice.as_bytes()))],
                body: Some(notice),
                ..call("POST", "/payments/callback", vec![])
            }
        }
        "payment-sandbox" => Call {
            caller: None,
            query: "orderId=bench.order&amountCents=1999&returnUrl=%2Fshop%2F",
            ..call(
                "GET",
                "/sandbox/payments/{paymentId}",
                vec![("paymentId", format!("pay-{i}"))],
            )
        },
        "pay-order" => Call {
            body: Some(json!({ "method": "COD" }).to_string()),
            caller: caller(ORDER_OWNER),
            ..call(
                "POST",
                "/orders/{orderId}/pay",
                vec![("orderId", fixture.order_id.clone())],
            )
        },
        _ => return None,
    })
}

/// Messages in an SQS event, as Lambda's event source mapping delivers them.
/// `event`'s messages sealed as the order route seals them, with the runner's key: the order
/// consumer takes an order no reservation in Redis holds only under a seal.
fn sealed(mut event: Value) -> Value {
    let seal = app::sample_events::local_order_seal();
    for record in event["Records"].as_array_mut().into_iter().flatten() {
        let body = record["body"].as_str().unwrap_or_default().to_owned();
        record["messageAttributes"] = json!({
            app::seckill::admission::seal::SEAL_ATTRIBUTE: {"stringValue": seal.sign(&body), "dataType": "String"}
        });
    }
    event
}

fn sqs_event(bodies: Vec<String>) -> Value {
    let records: Vec<Value> = bodies
        .into_iter()
        .enumerate()
        .map(|(i, body)| {
            json!({
                "messageId": uuid::Uuid::new_v4().to_string(),
                "receiptHandle": format!("bench-{i}"),
                "body": body,
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": "1795975200000",
                    "SenderId": "123456789012",
                    "ApproximateFirstReceiveTimestamp": "1795975200000",
                },
                "messageAttributes": {},
                "md5OfBody": "",
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:bench",
                "awsRegion": "us-east-1",
            })
        })
        .collect();
    json!({ "Records": records })
}

fn envelope(kind: &str, payload: Value) -> String {
    json!({
        "type": kind,
        "version": 1,
        "id": uuid::Uuid::now_v7().to_string(),
        "occurredAt": "2026-11-30T18:00:00.000000Z",
        "payload": payload,
    })
    .to_string()
}

/// Invocation `i` of a function that is not behind a route: a batch of ten events it
/// handles on its happy path; `None` for an unknown function.
pub fn event_batch(binary: &str, fixture: &Fixture, i: u64) -> Option<Value> {
    let follows = || -> Vec<String> {
        (0..10)
            .map(|k| {
                envelope(
                    "UserFollowed",
                    json!({ "followerId": user(i * 10 + k), "followeeId": user(i * 10 + k + 1) }),
                )
            })
            .collect()
    };
    let now_ms = time::OffsetDateTime::now_utc().unix_timestamp() * 1000;
    let order_ids =
        || (0..10).map(|_| format!("{}.{}", fixture.sale_id, uuid::Uuid::now_v7().simple()));
    Some(match binary {
        "notification-consumer" | "follower-count-consumer" => sqs_event(follows()),
        "order-consumer" => sealed(sqs_event(
            order_ids()
                .enumerate()
                .map(|(k, order_id)| {
                    envelope(
                        "OrderPlaced",
                        json!({
                            "orderId": order_id,
                            "saleId": fixture.sale_id,
                            "userId": user(i * 10 + k as u64),
                            "priceCents": 19_900,
                            "reservedAtMs": now_ms,
                        }),
                    )
                })
                .collect(),
        )),
        "payment-timeout-consumer" => sqs_event(
            order_ids()
                .map(|order_id| {
                    envelope(
                        "PaymentDue",
                        json!({ "orderId": order_id, "saleId": fixture.sale_id }),
                    )
                })
                .collect(),
        ),
        "outbox-relay" => {
            let records: Vec<Value> = follows()
                .into_iter()
                .enumerate()
                .map(|(k, event)| {
                    let pk = format!("OUTBOX#{}", uuid::Uuid::now_v7());
                    json!({
                        "eventID": uuid::Uuid::new_v4().simple().to_string(),
                        "eventName": "INSERT",
                        "eventVersion": "1.1",
                        "eventSource": "aws:dynamodb",
                        "awsRegion": "us-east-1",
                        "dynamodb": {
                            "Keys": { "pk": { "S": pk }, "sk": { "S": "EVENT" } },
                            "NewImage": {
                                "pk": { "S": pk },
                                "sk": { "S": "EVENT" },
                                "event": { "S": event },
                                "expiresAt": { "N": "1796061600" },
                            },
                            "SequenceNumber": format!("{}", 1000 + i * 10 + k as u64),
                            "SizeBytes": 300,
                            "StreamViewType": "NEW_IMAGE",
                        },
                        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/bench/stream/2026",
                    })
                })
                .collect();
            json!({ "Records": records })
        }
        "reconcile" => json!({
            "version": "0",
            "id": uuid::Uuid::new_v4().to_string(),
            "detail-type": "Scheduled Event",
            "source": "aws.events",
            "account": "123456789012",
            "time": "2026-11-30T18:00:00Z",
            "region": "us-east-1",
            "resources": [],
            "detail": {},
        }),
        // A sign-in by a user in no group: answered without a call to Cognito, as most are.
        "admin-mfa-guard" => {
            local_cloud::check::sign_in_event("2", "us-east-1_Bench00000", "bench", &user(i))
        }
        "hello-runtime" => json!({ "hello": "world", "i": i }),
        _ => return None,
    })
}

/// Whether a consumer's answer is its happy path: no failed item reported.
pub fn batch_succeeded(answer: &Value) -> bool {
    answer
        .get("batchItemFailures")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
}
