//! The AWS fault proxy of one function: forwards its DynamoDB and SQS requests to the
//! emulator, applying the function's live rules and counting its writes per item.
//!
//! Both services speak JSON over POST with the operation in `X-Amz-Target`
//! (`DynamoDB_20120810.PutItem`, `AmazonSQS.SendMessage`), so one small proxy reads both.

use super::{Action, Faults, ItemKey, Service};
use anyhow::Context as _;
use bytes::Bytes;
use http::header::{HOST, HeaderValue};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A running proxy; dropping it stops it.
pub struct Proxy {
    pub address: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct State {
    function: String,
    upstream: Uri,
    upstream_host: HeaderValue,
    faults: Arc<Faults>,
    client: Client<HttpConnector, Full<Bytes>>,
}

/// Starts `function`'s proxy to `upstream` (the emulator's endpoint) on a free loopback port.
pub async fn start(function: &str, upstream: &str, faults: Arc<Faults>) -> anyhow::Result<Proxy> {
    let upstream: Uri = upstream
        .parse()
        .with_context(|| format!("invalid AWS endpoint {upstream:?}"))?;
    let upstream_host = upstream
        .authority()
        .context("the AWS endpoint has no host")?
        .as_str()
        .parse()?;
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let address = listener.local_addr()?;
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let state = Arc::new(State {
        function: function.to_owned(),
        upstream,
        upstream_host,
        faults,
        client: Client::builder(TokioExecutor::new()).build(connector),
    });
    let task = tokio::spawn(crate::loopback::serve(
        listener,
        state,
        |state, request| async move { handle(&state, request).await },
    ));
    Ok(Proxy { address, task })
}

async fn handle(state: &State, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let (mut parts, body) = request.into_parts();
    let body = match body.collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return error(StatusCode::BAD_REQUEST, None, "unreadable request body"),
    };
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let (service, operation) = match target.as_str().split_once('.') {
        Some((prefix, op)) if prefix.starts_with("DynamoDB") => (Some(Service::DynamoDb), op),
        Some(("AmazonSQS", op)) => (Some(Service::Sqs), op),
        _ => (None, ""),
    };
    if service.is_some() {
        state.faults.count_request(&state.function, operation);
    }
    let action =
        service.and_then(|service| state.faults.action(&state.function, service, operation));
    match action {
        Some(Action::Fail(_)) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                service,
                "injected fault: the local cloud failed this request on purpose",
            );
        }
        Some(Action::Delay(delay)) => tokio::time::sleep(delay).await,
        _ => {}
    }

    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let Ok(uri) = format!(
        "{}{}",
        state.upstream.to_string().trim_end_matches('/'),
        path
    )
    .parse::<Uri>() else {
        return error(StatusCode::BAD_REQUEST, service, "invalid request path");
    };
    parts.uri = uri;
    parts.headers.insert(HOST, state.upstream_host.clone());
    // Parsed once, for the write counts and the conflict counts.
    let request = (service == Some(Service::DynamoDb))
        .then(|| serde_json::from_slice::<Value>(&body).ok())
        .flatten();
    let written = request
        .as_ref()
        .map(|request| written_items(operation, request))
        .unwrap_or_default();
    let fingerprint = request
        .filter(|_| !written.is_empty())
        .map(|request| fingerprint(operation, request));
    if let Some(fingerprint) = fingerprint {
        state.faults.note_write(&state.function, fingerprint);
    }
    let forwarded = Request::from_parts(parts, Full::new(body));
    let response = match state.client.request(forwarded).await {
        Ok(response) => response,
        Err(err) => {
            tracing::warn!(error = %err, "the fault proxy could not reach the emulator");
            return error(
                StatusCode::BAD_GATEWAY,
                service,
                "the emulator is unreachable",
            );
        }
    };
    let (parts, body) = response.into_parts();
    let body = crate::loopback::body_bytes(body).await;
    if parts.status.is_success() && !written.is_empty() {
        state.faults.count_writes(written);
    }
    if let Some(fingerprint) = fingerprint
        && parts.status == StatusCode::BAD_REQUEST
        && is_conflict(&body)
    {
        state.faults.note_conflict(&state.function, fingerprint);
    }
    if let Some(Action::Hang(hang)) = action {
        tokio::time::sleep(hang).await;
    }
    Response::from_parts(parts, Full::new(body))
}

/// The service's own shape of a 500, so that the SDK reads it as that service's error.
fn error(status: StatusCode, service: Option<Service>, message: &str) -> Response<Full<Bytes>> {
    let kind = match service {
        Some(Service::Sqs) => "com.amazonaws.sqs#InternalError",
        _ => "com.amazonaws.dynamodb.v20120810#InternalServerError",
    };
    let body = serde_json::json!({ "__type": kind, "message": message }).to_string();
    Response::builder()
        .status(status)
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amzn-query-error", "InternalError;Receiver")
        .body(Full::new(Bytes::from(body)))
        .expect("a static response is valid")
}

/// The items a DynamoDB write request writes (condition checks write nothing).
pub(crate) fn written_items(operation: &str, request: &Value) -> Vec<ItemKey> {
    let table = |v: &Value| v["TableName"].as_str().unwrap_or_default().to_owned();
    let mut items = Vec::new();
    match operation {
        "PutItem" => items.push(ItemKey {
            table: table(request),
            key: key_of(&request["Item"]),
        }),
        "UpdateItem" | "DeleteItem" => items.push(ItemKey {
            table: table(request),
            key: key_of(&request["Key"]),
        }),
        "TransactWriteItems" => {
            for item in request["TransactItems"].as_array().into_iter().flatten() {
                if let Some(put) = item.get("Put") {
                    items.push(ItemKey {
                        table: table(put),
                        key: key_of(&put["Item"]),
                    });
                }
                for kind in ["Update", "Delete"] {
                    if let Some(write) = item.get(kind) {
                        items.push(ItemKey {
                            table: table(write),
                            key: key_of(&write["Key"]),
                        });
                    }
                }
            }
        }
        "BatchWriteItem" => {
            for (name, requests) in request["RequestItems"].as_object().into_iter().flatten() {
                for write in requests.as_array().into_iter().flatten() {
                    let key = write
                        .pointer("/PutRequest/Item")
                        .or_else(|| write.pointer("/DeleteRequest/Key"));
                    if let Some(key) = key {
                        items.push(ItemKey {
                            table: name.clone(),
                            key: key_of(key),
                        });
                    }
                }
            }
        }
        _ => {}
    }
    items
}

/// What identifies a write request across its retries: the operation and the request's JSON
/// in a canonical form (objects with sorted keys, whatever order the SDK's maps serialized
/// in), without the `ClientRequestToken` that the SDK draws anew for every send.
fn fingerprint(operation: &str, mut request: Value) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    if let Some(object) = request.as_object_mut() {
        object.remove("ClientRequestToken");
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    operation.hash(&mut hasher);
    hash_canonical(&request, &mut hasher);
    hasher.finish()
}

/// Hashes `value` with every object's members in key order, whatever order they came in (and
/// whether or not serde_json keeps insertion order, as its `preserve_order` feature does).
fn hash_canonical(value: &Value, hasher: &mut impl std::hash::Hasher) {
    use std::hash::Hash as _;
    match value {
        Value::Object(members) => {
            let mut sorted: Vec<_> = members.iter().collect();
            sorted.sort_unstable_by_key(|(key, _)| *key);
            for (key, member) in sorted {
                key.hash(hasher);
                hash_canonical(member, hasher);
            }
            '}'.hash(hasher);
        }
        Value::Array(items) => {
            for item in items {
                hash_canonical(item, hasher);
            }
            ']'.hash(hasher);
        }
        scalar => scalar.to_string().hash(hasher),
    }
}

/// Whether a DynamoDB error answer is a conflict with an ongoing transaction.
fn is_conflict(body: &[u8]) -> bool {
    let Ok(error) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let kind = error["__type"].as_str().unwrap_or_default();
    if kind.ends_with("#TransactionConflictException") {
        return true;
    }
    kind.ends_with("#TransactionCanceledException")
        && error["CancellationReasons"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|reason| reason["Code"] == "TransactionConflict")
}

/// `pk|sk` of an item or key in DynamoDB JSON, or the whole key when it has no `pk`.
fn key_of(item: &Value) -> String {
    let attribute = |name: &str| item[name]["S"].as_str().map(str::to_owned);
    match (attribute("pk"), attribute("sk")) {
        (Some(pk), Some(sk)) => format!("{pk}|{sk}"),
        (Some(pk), None) => pk,
        _ => item.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transactions_count_their_writes_but_not_their_condition_checks() {
        let body = serde_json::json!({
            "TransactItems": [
                {"ConditionCheck": {"TableName": "t", "Key": {"pk": {"S": "USER#b"}, "sk": {"S": "PROFILE"}}}},
                {"Put": {"TableName": "t", "Item": {"pk": {"S": "USER#a"}, "sk": {"S": "FOLLOWS#b"}, "x": {"N": "1"}}}},
                {"Update": {"TableName": "t", "Key": {"pk": {"S": "USER#a"}, "sk": {"S": "PROFILE"}}}},
            ]
        });
        let items = written_items("TransactWriteItems", &body);
        let keys: Vec<_> = items.iter().map(|i| i.key.as_str()).collect();
        assert_eq!(keys, ["USER#a|FOLLOWS#b", "USER#a|PROFILE"]);
        assert!(written_items("GetItem", &body).is_empty());
    }

    #[test]
    fn a_retried_write_has_the_fingerprint_of_the_refused_one() {
        let first = br#"{"TransactItems":[{"Update":{"TableName":"t","Key":{"pk":{"S":"a"},"sk":{"S":"b"}}}}],"ClientRequestToken":"1"}"#;
        // Same request, maps serialized in another order, a new idempotency token.
        let again = br#"{"ClientRequestToken":"2","TransactItems":[{"Update":{"Key":{"sk":{"S":"b"},"pk":{"S":"a"}},"TableName":"t"}}]}"#;
        let other = br#"{"TransactItems":[{"Update":{"TableName":"t","Key":{"pk":{"S":"a"},"sk":{"S":"c"}}}}]}"#;
        let json = |body: &[u8]| serde_json::from_slice::<Value>(body).unwrap();
        let print = |body: &[u8]| fingerprint("TransactWriteItems", json(body));
        assert_eq!(print(first), print(again));
        assert_ne!(print(first), print(other));
        assert_ne!(print(first), fingerprint("PutItem", json(first)));
    }

    #[test]
    fn conflicts_are_told_from_other_cancellations() {
        let conflict = br#"{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","CancellationReasons":[{"Code":"None"},{"Code":"TransactionConflict"}]}"#;
        let condition = br#"{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException","CancellationReasons":[{"Code":"ConditionalCheckFailed"}]}"#;
        let single = br#"{"__type":"com.amazonaws.dynamodb.v20120810#TransactionConflictException","message":"x"}"#;
        assert!(is_conflict(conflict));
        assert!(!is_conflict(condition));
        assert!(is_conflict(single));
        assert!(!is_conflict(b"not json"));
    }

    #[test]
    fn batch_writes_name_their_tables() {
        let body = serde_json::json!({
            "RequestItems": {"t": [
                {"PutRequest": {"Item": {"pk": {"S": "A"}, "sk": {"S": "B"}}}},
                {"DeleteRequest": {"Key": {"pk": {"S": "C"}, "sk": {"S": "D"}}}},
            ]}
        });
        let items = written_items("BatchWriteItem", &body);
        assert_eq!(items.len(), 2);
        assert_eq!(items[1].table, "t");
        assert_eq!(items[1].key, "C|D");
    }
}
