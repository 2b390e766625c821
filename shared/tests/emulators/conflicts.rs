//! The emulator's DynamoDB models AWS's transaction conflicts (infra/emulators/moto_server.py):
//! a transaction holds its items from its arrival until its answer, a second transaction on
//! a held item is cancelled with `TransactionConflict`, and a single-item write on one is
//! refused with `TransactionConflictException`.
//!
//! A transaction's time in flight is made long and known with the emulator's
//! `POST /_local/hold-dynamodb?ms=N`, which keeps its DynamoDB lock for N ms: a transaction
//! sent meanwhile waits behind it, holding its items. Conflicts are counted per table at
//! `GET /_local/conflicts?table=NAME`; every test makes its own table, so the counts are its
//! own although the tests share the emulator.
//!
//! With the switch off (`DYNAMODB_CONFLICTS=off`) the conflict tests check the opposite:
//! nothing conflicts.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use crate::support::{clients, create_table};
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, Put, TransactWriteItem, Update};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tokio::time::sleep;

/// How long the hold keeps the lock, and the pause between the steps inside it: the first
/// transaction arrives 150 ms into the hold and the second one 150 ms later, both well
/// before the hold ends.
const HOLD_MS: u64 = 800;
const STEP: Duration = Duration::from_millis(150);
/// A busy emulator (the whole suite runs against it) may serve the first transaction before
/// the hold takes the lock; such an attempt is noticed and made again with fresh items.
const ATTEMPTS: u32 = 5;

const ONGOING: &str = "Transaction is ongoing for the item";

type TransactResult = Result<
    aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsOutput,
    aws_sdk_dynamodb::error::SdkError<TransactWriteItemsError>,
>;

/// One of the emulator's `/_local/` endpoints: the status and the JSON answer.
async fn local(method: Method, path_and_query: &str) -> (StatusCode, Value) {
    let base = std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL is set");
    let client = HttpClient::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let request = Request::builder()
        .method(method)
        .uri(format!("{base}{path_and_query}"))
        .body(Empty::new())
        .unwrap();
    let response = client.request(request).await.expect("the emulator answers");
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let json = serde_json::from_slice(&body)
        .unwrap_or_else(|e| panic!("{path_and_query} answered {body:?}: {e}"));
    (status, json)
}

/// Whether the emulator models conflicts (`--conflicts on`).
async fn conflicts_enabled() -> bool {
    let (status, answer) = local(Method::GET, "/_local/conflicts").await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer["enabled"]
        .as_bool()
        .unwrap_or_else(|| panic!("no enabled flag in {answer}"))
}

/// This table's counters: (transactions cancelled, single-item writes refused).
async fn conflict_counts(table: &str) -> (u64, u64) {
    let (status, answer) = local(Method::GET, &format!("/_local/conflicts?table={table}")).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let entry = &answer["tables"][table];
    let count = |name: &str| {
        entry[name]
            .as_u64()
            .unwrap_or_else(|| panic!("no {name} for {table} in {answer}"))
    };
    (count("transactionConflicts"), count("writeConflicts"))
}

/// Runs `first` so that it is in flight, queued behind the held DynamoDB lock, while
/// `second` runs; both answers once both are done. `None` when the hold did not catch
/// `first` (it had answered before `second` would start): `second` was not run, and the
/// caller tries again with fresh items.
async fn while_in_flight<F, S>(first: F, second: S) -> Option<(F::Output, S::Output)>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    S: Future,
{
    let hold = tokio::spawn(async {
        local(Method::POST, &format!("/_local/hold-dynamodb?ms={HOLD_MS}")).await
    });
    sleep(STEP).await;
    let first = tokio::spawn(first);
    sleep(STEP).await;
    let second = if first.is_finished() {
        eprintln!("the hold did not catch the first request (a busy emulator); trying again");
        None
    } else {
        Some(second.await)
    };
    let first = first.await.unwrap();
    let (status, answer) = hold.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["heldMs"], HOLD_MS, "{answer}");
    second.map(|second| (first, second))
}

fn key(pk: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([
        ("pk".to_owned(), AttributeValue::S(pk.to_owned())),
        ("sk".to_owned(), AttributeValue::S("A".to_owned())),
    ])
}

fn increment(table: &str, pk: &str) -> TransactWriteItem {
    let update = Update::builder()
        .set_key(Some(key(pk)))
        .update_expression("ADD n :one")
        .expression_attribute_values(":one", AttributeValue::N("1".to_owned()));
    app::dynamo::update_in(table, update)
}

fn put(table: &str, pk: &str) -> TransactWriteItem {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(key(pk)))
        .build()
        .unwrap();
    TransactWriteItem::builder().put(put).build()
}

fn check_absent(table: &str, pk: &str) -> TransactWriteItem {
    let check = ConditionCheck::builder()
        .table_name(table)
        .set_key(Some(key(pk)))
        .condition_expression("attribute_not_exists(pk)")
        .build()
        .unwrap();
    TransactWriteItem::builder().condition_check(check).build()
}

async fn transact(client: Client, items: Vec<TransactWriteItem>) -> TransactResult {
    client
        .transact_write_items()
        .set_transact_items(Some(items))
        .send()
        .await
}

/// The cancellation reasons' codes, in request order; panics on any other outcome.
fn cancellation_codes(result: &TransactResult) -> Vec<String> {
    let err = match result {
        Ok(_) => panic!("the transaction was not cancelled"),
        Err(err) => err,
    };
    let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
        err.as_service_error()
    else {
        panic!("expected TransactionCanceledException, got {err:?}");
    };
    cancelled
        .cancellation_reasons()
        .iter()
        .map(|reason| {
            let code = reason.code().unwrap_or_default().to_owned();
            if code == "TransactionConflict" {
                assert_eq!(reason.message(), Some(ONGOING), "{reason:?}");
            }
            code
        })
        .collect()
}

/// A single-item put of the item `pk`.
async fn put_item(client: &Client, table: &str, pk: &str) -> Result<(), SdkError<PutItemError>> {
    let put = client.put_item().table_name(table).set_item(Some(key(pk)));
    put.send().await.map(|_| ())
}

/// Asserts that a single-item write was refused because a transaction holds its item.
fn assert_refused<E: ProvideErrorMetadata + std::fmt::Debug>(result: Result<(), SdkError<E>>) {
    let err = result.expect_err("a single-item write on the item in flight is refused");
    assert_eq!(err.code(), Some("TransactionConflictException"), "{err:?}");
}

/// A fresh table, and whether the emulator models conflicts.
async fn fresh_table() -> (Client, String, bool) {
    let clients = clients().await;
    let table = create_table(&clients).await;
    (clients.dynamodb, table, conflicts_enabled().await)
}

/// Runs [`while_in_flight`] on the requests that `requests(attempt)` makes (on fresh items
/// each attempt) until the hold catches the first; answers that attempt and both answers.
async fn caught_in_flight<F, S>(
    what: &str,
    mut requests: impl FnMut(u32) -> (F, S),
) -> (u32, F::Output, S::Output)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    S: Future,
{
    for attempt in 0..ATTEMPTS {
        let (first, second) = requests(attempt);
        if let Some((first, second)) = while_in_flight(first, second).await {
            return (attempt, first, second);
        }
    }
    panic!("in {ATTEMPTS} attempts the hold never caught {what}");
}

/// The item's `n`, or `None` when the item does not exist.
async fn counter(client: &Client, table: &str, pk: &str) -> Option<String> {
    let item = client
        .get_item()
        .table_name(table)
        .set_key(Some(key(pk)))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item?;
    Some(match item.get("n") {
        Some(AttributeValue::N(n)) => n.clone(),
        _ => String::new(),
    })
}

#[tokio::test]
async fn a_transaction_on_an_item_in_flight_is_cancelled_with_transaction_conflict() {
    let (client, table, enabled) = fresh_table().await;
    let client = &client;
    assert_eq!(conflict_counts(&table).await, (0, 0));
    let names = |attempt| (format!("x{attempt}"), format!("y{attempt}"));
    let second_items = |(x, y): &(String, String)| vec![increment(&table, x), put(&table, y)];
    let (attempt, first, second) = caught_in_flight("the first transaction", |attempt| {
        let names = names(attempt);
        let first = transact(client.clone(), vec![increment(&table, &names.0)]);
        (first, transact(client.clone(), second_items(&names)))
    })
    .await;
    let (x, y) = names(attempt);
    first.expect("the transaction in flight succeeds");
    if !enabled {
        second.expect("with conflicts off, nothing conflicts");
        assert_eq!(counter(client, &table, &x).await.as_deref(), Some("2"));
        assert_eq!(conflict_counts(&table).await, (0, 0));
        return;
    }
    assert_eq!(
        cancellation_codes(&second),
        ["TransactionConflict", "None"],
        "one reason per item, in request order"
    );
    assert_eq!(
        counter(client, &table, &y).await,
        None,
        "nothing was written"
    );
    assert_eq!(counter(client, &table, &x).await.as_deref(), Some("1"));

    // Once the first answered, nothing stays in flight.
    transact(client.clone(), second_items(&names(attempt)))
        .await
        .expect("the same transaction, sent again, succeeds");
    assert_eq!(counter(client, &table, &x).await.as_deref(), Some("2"));
    assert!(counter(client, &table, &y).await.is_some());
    assert_eq!(conflict_counts(&table).await, (1, 0));
}

#[tokio::test]
async fn a_single_item_write_on_an_item_in_flight_is_refused() {
    let (client, table, enabled) = fresh_table().await;
    let (client, table) = (&client, table.as_str());
    let names = |attempt| (format!("x{attempt}"), format!("z{attempt}"));
    let (attempt, first, (update, put, delete, other)) =
        caught_in_flight("the transaction", |attempt| {
            let (x, z) = names(attempt);
            let first = transact(client.clone(), vec![increment(table, &x)]);
            let second = async move {
                let update = client
                    .update_item()
                    .table_name(table)
                    .set_key(Some(key(&x)))
                    .update_expression("ADD n :ten")
                    .expression_attribute_values(":ten", AttributeValue::N("10".to_owned()))
                    .send()
                    .await
                    .map(|_| ());
                let put = put_item(client, table, &x).await;
                let delete = client
                    .delete_item()
                    .table_name(table)
                    .set_key(Some(key(&x)));
                let delete = delete.send().await.map(|_| ());
                // Another item is free: this one waits for the lock, then goes through.
                let other = put_item(client, table, &z).await;
                (update, put, delete, other)
            };
            (first, second)
        })
        .await;
    let (x, z) = names(attempt);
    first.expect("the transaction in flight succeeds");
    other.expect("a write on another item goes through");
    assert!(counter(client, table, &z).await.is_some());
    if !enabled {
        update.expect("with conflicts off, nothing conflicts");
        put.expect("with conflicts off, nothing conflicts");
        delete.expect("with conflicts off, nothing conflicts");
        assert_eq!(conflict_counts(table).await, (0, 0));
        return;
    }
    if let Err(err) = &update {
        assert_eq!(err.message(), Some(ONGOING), "{err:?}");
    }
    assert_refused(update);
    assert_refused(put);
    assert_refused(delete);
    assert_eq!(
        counter(client, table, &x).await.as_deref(),
        Some("1"),
        "only the transaction wrote the item"
    );
    assert_eq!(conflict_counts(table).await, (0, 3));
}

#[tokio::test]
async fn a_condition_check_holds_its_item_too() {
    let (client, table, enabled) = fresh_table().await;
    let client = &client;
    let names = |attempt| {
        let name = |prefix: &str| format!("{prefix}{attempt}");
        (name("x"), name("w"), name("v"))
    };
    let (attempt, first, second) = caught_in_flight("the first transaction", |attempt| {
        let (x, w, v) = names(attempt);
        // The first only checks X; the second writes it.
        let first = vec![check_absent(&table, &x), put(&table, &w)];
        let second = vec![put(&table, &v), increment(&table, &x)];
        let transact = |items| transact(client.clone(), items);
        (transact(first), transact(second))
    })
    .await;
    let (x, _, v) = names(attempt);
    first.expect("the transaction in flight succeeds");
    if !enabled {
        second.expect("with conflicts off, nothing conflicts");
        assert_eq!(conflict_counts(&table).await, (0, 0));
        return;
    }
    assert_eq!(cancellation_codes(&second), ["None", "TransactionConflict"]);
    assert_eq!(counter(client, &table, &x).await, None);
    assert_eq!(counter(client, &table, &v).await, None);
    assert_eq!(conflict_counts(&table).await, (1, 0));
}

#[tokio::test]
async fn a_queued_single_item_write_holds_nothing() {
    // Only transactions hold items: a PutItem waiting for the lock does not make a
    // transaction on the same item conflict.
    let (client, table, _) = fresh_table().await;
    let (_, first, second) = caught_in_flight("the write", |attempt| {
        let x = format!("x{attempt}");
        let second = transact(client.clone(), vec![increment(&table, &x)]);
        let (client, table) = (client.clone(), table.clone());
        let first = async move { put_item(&client, &table, &x).await };
        (first, second)
    })
    .await;
    first.expect("the single-item write succeeds");
    second.expect("the transaction is not cancelled by a single-item write");
    assert_eq!(conflict_counts(&table).await, (0, 0));
}

#[tokio::test]
async fn the_hold_endpoint_refuses_durations_out_of_range() {
    for ms in ["0", "5001", "", "x"] {
        let (status, answer) = local(Method::POST, &format!("/_local/hold-dynamodb?ms={ms}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "ms={ms}: {answer}");
    }
    let (status, answer) = local(Method::GET, "/_local/hold-dynamodb?ms=5").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{answer}");
}
