//! Lambda's Invoke API on the runner's address: the fixture's SQS, stream and schedule
//! functions invoked over HTTP as `aws lambda invoke --endpoint-url` does, and Lambda's
//! answers when the call is wrong.

use crate::support::{gather, queue_url, sdk, start_fixture_cloud, unique};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use local_cloud::cloud::{DEFAULT_ACCOUNT_ID, LocalCloud};
use serde_json::{Value, json};
use std::time::Duration;

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|_| {
            panic!("not JSON: {}", String::from_utf8_lossy(&self.body));
        })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }
}

/// `POST /2015-03-31/functions/{function}/invocations` (any method), as the SDKs send it.
async fn call(
    cloud: &LocalCloud,
    method: Method,
    function: &str,
    invocation_type: Option<&str>,
    payload: impl Into<Bytes>,
) -> Answer {
    let mut request = Request::builder().method(method).uri(format!(
        "http://{}/2015-03-31/functions/{function}/invocations",
        cloud.address
    ));
    if let Some(kind) = invocation_type {
        request = request.header("X-Amz-Invocation-Type", kind);
    }
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let response = tokio::time::timeout(
        Duration::from_secs(20),
        client.request(request.body(Full::new(payload.into())).unwrap()),
    )
    .await
    .expect("the Invoke API answers")
    .expect("the request goes through");
    let (parts, body) = response.into_parts();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body: local_cloud::loopback::body_bytes(body).await,
    }
}

async fn invoke(cloud: &LocalCloud, function: &str, payload: Value) -> Answer {
    call(cloud, Method::POST, function, None, payload.to_string()).await
}

fn sqs_record(id: &str, body: &str) -> Value {
    json!({"messageId": id, "body": body, "attributes": {"ApproximateReceiveCount": "1"}})
}

fn stream_record(pk: &str, poison: bool) -> Value {
    json!({
        "eventName": "INSERT",
        "dynamodb": {
            "Keys": {"pk": {"S": pk}},
            "NewImage": {"pk": {"S": pk}, "kind": {"S": "keep"}, "poison": {"BOOL": poison}},
        },
    })
}

fn region() -> String {
    std::env::var("AWS_REGION")
        .or_else(|_| std::env::var("AWS_DEFAULT_REGION"))
        .unwrap_or_else(|_| "us-east-1".to_owned())
}

#[tokio::test]
async fn invoke_answers_the_functions_result_by_logical_id_or_arn() {
    let cloud = start_fixture_cloud().await;

    let batch = json!({"Records": [sqs_record("m-1", "ok"), sqs_record("m-2", "fail")]});
    let answer = invoke(&cloud, "WorkerFunction", batch).await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    assert_eq!(
        answer.json(),
        json!({"batchItemFailures": [{"itemIdentifier": "m-2"}]})
    );
    assert_eq!(answer.header("x-amz-executed-version"), Some("$LATEST"));
    assert_eq!(answer.header("x-amz-function-error"), None);

    // The SDKs send an ARN with its colons percent-encoded.
    let arn = format!(
        "arn:aws:lambda:{}:{DEFAULT_ACCOUNT_ID}:function:StreamFunction",
        region()
    );
    let answer = invoke(
        &cloud,
        &arn.replace(':', "%3A"),
        json!({"Records": [stream_record("keep-1", false)]}),
    )
    .await;
    assert_eq!(answer.status, StatusCode::OK, "{:?}", answer.body);
    assert_eq!(answer.json(), Value::Null, "the handler returns ()");
    cloud.stop().await;
}

#[tokio::test]
async fn invoke_reports_a_function_error_as_lambda_does() {
    let cloud = start_fixture_cloud().await;
    let answer = invoke(
        &cloud,
        "StreamFunction",
        json!({"Records": [stream_record("keep-2", true)]}),
    )
    .await;
    // The call succeeded; the function did not.
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(answer.header("x-amz-function-error"), Some("Unhandled"));
    let error = answer.json();
    assert_eq!(error["errorMessage"], "a poison record", "{error}");
    assert!(
        error["errorType"].as_str().is_some_and(|t| !t.is_empty()),
        "{error}"
    );
    cloud.stop().await;
}

#[tokio::test]
async fn invoke_refuses_unknown_functions_bad_payloads_and_other_methods() {
    let cloud = start_fixture_cloud().await;

    let answer = invoke(&cloud, "NoSuchFunction", json!({})).await;
    assert_eq!(answer.status, StatusCode::NOT_FOUND);
    assert_eq!(
        answer.header("x-amzn-errortype"),
        Some("ResourceNotFoundException")
    );
    let arn = format!(
        "arn:aws:lambda:{}:{DEFAULT_ACCOUNT_ID}:function:NoSuchFunction",
        region()
    );
    assert_eq!(
        answer.json(),
        json!({"Type": "User", "message": format!("Function not found: {arn}")})
    );

    let before = cloud.invocations("WorkerFunction").unwrap();
    let answer = call(&cloud, Method::POST, "WorkerFunction", None, "{not json").await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer.header("x-amzn-errortype"),
        Some("InvalidRequestContentException")
    );
    let message = answer.json()["message"].as_str().unwrap().to_owned();
    assert!(
        message.starts_with("Could not parse request body into json: "),
        "{message}"
    );

    let answer = call(&cloud, Method::GET, "WorkerFunction", None, "").await;
    assert_eq!(answer.status, StatusCode::METHOD_NOT_ALLOWED);

    let answer = call(&cloud, Method::POST, "WorkerFunction", Some("DryRun"), "{}").await;
    assert_eq!(answer.status, StatusCode::NO_CONTENT);
    assert!(answer.body.is_empty());

    let answer = call(&cloud, Method::POST, "WorkerFunction", Some("Later"), "{}").await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        answer.header("x-amzn-errortype"),
        Some("ValidationException")
    );

    assert_eq!(
        cloud.invocations("WorkerFunction"),
        Some(before),
        "none of these invoked the function"
    );
    cloud.stop().await;
}

#[tokio::test]
async fn invoke_event_answers_202_and_runs_the_function_in_the_background() {
    let cloud = start_fixture_cloud().await;
    let marker = unique("event");
    let answer = call(
        &cloud,
        Method::POST,
        "TickFunction",
        Some("Event"),
        json!({"marker": marker}).to_string(),
    )
    .await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    assert!(answer.body.is_empty());

    // The schedule ticks every second too: look for this event among its reports.
    let sqs = aws_sdk_sqs::Client::new(&sdk().await);
    let output = queue_url(&cloud, "OutputQueue");
    let ours = |seen: &[Value]| seen.iter().any(|r| r["event"]["marker"] == marker);
    let seen = gather(&sqs, &output, Duration::from_secs(20), ours).await;
    assert!(ours(&seen), "the event never ran: {seen:?}");
    cloud.stop().await;
}
