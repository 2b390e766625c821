//! Transactions: all or nothing, and a failed condition says which item it was.

use crate::support::{clients, create_table};
use app::dynamo::{
    Item, Table, TransactError, Transaction, get_n, get_s, key, n, put_if_absent, update_in,
};
use app::retry::Backoff;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{TransactWriteItem, Update};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Label {
    Edge,
    Counter,
}

fn put_new(table: &str, pk: &str) -> TransactWriteItem {
    put_if_absent(table, key(pk, "A"))
}

fn increment(table: &str, pk: &str) -> TransactWriteItem {
    let update = Update::builder()
        .set_key(Some(key(pk, "A")))
        .update_expression("SET hits = if_not_exists(hits, :zero) + :one")
        .expression_attribute_values(":zero", n(0))
        .expression_attribute_values(":one", n(1));
    update_in(table, update)
}

/// The item `pk`, strongly consistent.
async fn item(client: &Client, table: &str, pk: &str) -> Option<Item> {
    let table = Table::new(client.clone(), table);
    let read = table.get_consistent(key(pk, "A"), None, "read a test item");
    read.await.unwrap()
}

async fn exists(client: &Client, table: &str, pk: &str) -> bool {
    item(client, table, pk).await.is_some()
}

/// Runs `tasks` writers at once, each committing `per_task` transactions (a new edge and the
/// shared counter) retried with `backoff`; answers each writer's results.
async fn writers(
    client: &Client,
    table: &str,
    tasks: u32,
    per_task: u32,
    backoff: Backoff,
) -> Vec<Vec<Result<(), TransactError<Label>>>> {
    let handles = (0..tasks).map(|task| {
        let (client, table) = (client.clone(), table.to_owned());
        tokio::spawn(async move {
            let mut results = Vec::new();
            for i in 0..per_task {
                let result = Transaction::new()
                    .with_backoff(backoff)
                    .push(Label::Edge, put_new(&table, &format!("edge-{task}-{i}")))
                    .push(Label::Counter, increment(&table, "counter"))
                    .commit(&client)
                    .await;
                results.push(result);
            }
            results
        })
    });
    let joined = futures_util::future::join_all(handles).await;
    joined.into_iter().map(|handle| handle.unwrap()).collect()
}

#[tokio::test]
async fn a_transaction_whose_conditions_hold_writes_every_item() {
    let clients = clients().await;
    let table = create_table(&clients).await;
    Transaction::new()
        .push(Label::Edge, put_new(&table, "edge"))
        .push(Label::Counter, increment(&table, "counter"))
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
        .push(Label::Counter, increment(&table, "counter"))
        .push(Label::Edge, put_new(&table, "edge"))
        .commit(&clients.dynamodb)
        .await
        .unwrap_err();

    assert!(
        matches!(
            &err,
            TransactError::ConditionFailed {
                label: Label::Edge,
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
    let (tasks, per_task) = (16, 10);
    let (mut committed, mut conflicted) = (0, 0);
    for results in writers(&clients.dynamodb, &table, tasks, per_task, Backoff::NONE).await {
        for result in results {
            match result {
                Ok(()) => committed += 1,
                Err(TransactError::Conflict) => conflicted += 1,
                Err(err) => panic!("a transaction failed: {err:?}"),
            }
        }
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
    let (tasks, per_task) = (8, 5);
    let backoff = Backoff::default();
    for results in writers(&clients.dynamodb, &table, tasks, per_task, backoff).await {
        for result in results {
            result.expect("retried until it commits");
        }
    }
    assert_eq!(
        counter_hits(&clients.dynamodb, &table).await,
        tasks * per_task
    );
}

/// The `hits` of the test's counter item, strongly consistent.
async fn counter_hits(client: &Client, table: &str) -> u32 {
    let item = item(client, table, "counter").await;
    let item = item.expect("the counter exists");
    assert_eq!(get_s(&item, "pk").unwrap(), "counter");
    get_n(&item, "hits").unwrap()
}
