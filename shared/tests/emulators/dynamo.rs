//! Transactions: all or nothing, and a failed condition says which item it was.

use crate::support::{clients, create_table};
use app::dynamo::{TransactError, Transaction, get_n, get_s, key, n};
use app::retry::Backoff;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Item {
    Edge,
    Counter,
}

fn put_new(table: &str, pk: &str) -> TransactWriteItem {
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(key(pk, "A")))
        .condition_expression("attribute_not_exists(pk)")
        .build()
        .unwrap();
    TransactWriteItem::builder().put(put).build()
}

fn increment(table: &str, pk: &str) -> TransactWriteItem {
    let update = Update::builder()
        .table_name(table)
        .set_key(Some(key(pk, "A")))
        .update_expression("SET hits = if_not_exists(hits, :zero) + :one")
        .expression_attribute_values(":zero", n(0))
        .expression_attribute_values(":one", n(1))
        .build()
        .unwrap();
    TransactWriteItem::builder().update(update).build()
}

async fn exists(client: &Client, table: &str, pk: &str) -> bool {
    client
        .get_item()
        .table_name(table)
        .set_key(Some(key(pk, "A")))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .is_some()
}

#[tokio::test]
async fn a_transaction_whose_conditions_hold_writes_every_item() {
    let clients = clients().await;
    let table = create_table(&clients).await;
    Transaction::new()
        .push(Item::Edge, put_new(&table, "edge"))
        .push(Item::Counter, increment(&table, "counter"))
        .commit(&clients.dynamodb)
        .await
        .unwrap();
    assert!(exists(&clients.dynamodb, &table, "edge").await);
    assert!(exists(&clients.dynamodb, &table, "counter").await);
}

#[tokio::test]
async fn a_failed_condition_names_the_item_and_writes_nothing() {
    let clients = clients().await;
    let table = create_table(&clients).await;
    clients
        .dynamodb
        .put_item()
        .table_name(&table)
        .set_item(Some(key("edge", "A")))
        .send()
        .await
        .unwrap();

    let err = Transaction::new()
        .push(Item::Counter, increment(&table, "counter"))
        .push(Item::Edge, put_new(&table, "edge"))
        .commit(&clients.dynamodb)
        .await
        .unwrap_err();

    assert!(
        matches!(
            &err,
            TransactError::ConditionFailed {
                label: Item::Edge,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!exists(&clients.dynamodb, &table, "counter").await);
}

#[tokio::test]
async fn concurrent_transactions_on_one_item_count_exactly() {
    // moto races on concurrent transactions; the launcher serializes DynamoDB requests, and
    // this test fails if that workaround is lost (an HTTP 500 instead of an answer). With
    // conflicts modelled, as in DynamoDB, a transaction whose item another one holds is
    // cancelled: without retries, each one either commits or conflicts, and the counter holds
    // exactly the committed ones.
    let clients = clients().await;
    let table = create_table(&clients).await;
    let tasks = 16;
    let per_task = 10;
    let mut handles = Vec::new();
    for task in 0..tasks {
        let client = clients.dynamodb.clone();
        let table = table.clone();
        handles.push(tokio::spawn(async move {
            let (mut committed, mut conflicted) = (0u32, 0u32);
            for i in 0..per_task {
                let result = Transaction::new()
                    .with_backoff(Backoff::NONE)
                    .push(Item::Edge, put_new(&table, &format!("edge-{task}-{i}")))
                    .push(Item::Counter, increment(&table, "counter"))
                    .commit(&client)
                    .await;
                match result {
                    Ok(()) => committed += 1,
                    Err(TransactError::Conflict) => conflicted += 1,
                    Err(err) => panic!("a transaction failed: {err:?}"),
                }
            }
            (committed, conflicted)
        }));
    }
    let (mut committed, mut conflicted) = (0, 0);
    for handle in handles {
        let (c, k) = handle.await.unwrap();
        committed += c;
        conflicted += k;
    }
    assert_eq!(committed + conflicted, tasks * per_task);
    assert!(committed > 0);
    assert_eq!(counter_hits(&clients.dynamodb, &table).await, committed);
}

#[tokio::test]
async fn contended_transactions_all_commit_with_the_default_retries() {
    // Eight writers of one item, each transaction retried with backoff and full jitter: all
    // of them commit in the end, and the counter counts each once.
    let clients = clients().await;
    let table = create_table(&clients).await;
    let tasks = 8;
    let per_task = 5;
    let mut handles = Vec::new();
    for task in 0..tasks {
        let client = clients.dynamodb.clone();
        let table = table.clone();
        handles.push(tokio::spawn(async move {
            for i in 0..per_task {
                Transaction::new()
                    .push(Item::Edge, put_new(&table, &format!("edge-{task}-{i}")))
                    .push(Item::Counter, increment(&table, "counter"))
                    .commit(&client)
                    .await
                    .expect("retried until it commits");
            }
        }));
    }
    for handle in handles {
        handle.await.unwrap();
    }
    assert_eq!(
        counter_hits(&clients.dynamodb, &table).await,
        tasks * per_task
    );
}

/// The `hits` of the test's counter item, strongly consistent.
async fn counter_hits(client: &Client, table: &str) -> u32 {
    let item = client
        .get_item()
        .table_name(table)
        .set_key(Some(key("counter", "A")))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .expect("the counter exists");
    assert_eq!(get_s(&item, "pk").unwrap(), "counter");
    get_n(&item, "hits").unwrap()
}
