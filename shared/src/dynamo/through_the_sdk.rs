//! The classification of [`super`], through the SDK itself: each error is the one DynamoDB
//! sends, parsed by the real client (AWS's `aws-smithy-mocks` answers in place of the
//! service), and what is checked is what a caller sees, the result and how many times the
//! request went out.

use super::*;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_dynamodb::error::ErrorMetadata;
use aws_sdk_dynamodb::operation::put_item::{PutItemError, PutItemOutput};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsOutput;
use aws_sdk_dynamodb::types::CancellationReason;
use aws_sdk_dynamodb::types::error::TransactionCanceledException;
use aws_smithy_mocks::{Rule, RuleMode, mock};
use std::time::Duration;

/// Three attempts, no pause between them.
const THREE: Backoff = Backoff {
    attempts: 3,
    base: Duration::ZERO,
    cap: Duration::ZERO,
};

/// A client answered by `rule`. The SDK's own retries are off, so that every request
/// counted is one this module sent.
fn client(rule: &Rule) -> Client {
    let interceptor = aws_smithy_mocks::MockResponseInterceptor::new()
        .rule_mode(RuleMode::MatchAny)
        .with_rule(rule);
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::from_static("us-east-1"))
        .credentials_provider(Credentials::new("id", "secret", None, None, "test"))
        .retry_config(RetryConfig::disabled())
        .http_client(aws_smithy_mocks::create_mock_http_client())
        .interceptor(interceptor)
        .build();
    Client::from_conf(config)
}

/// `TransactionCanceledException` with one reason per item, as DynamoDB words it.
fn cancelled(reasons: &[&str]) -> TransactWriteItemsError {
    let message = format!(
        "Transaction cancelled, please refer cancellation reasons for specific reasons [{}]",
        reasons.join(", ")
    );
    let reasons: Vec<CancellationReason> = reasons
        .iter()
        .map(|code| CancellationReason::builder().code(*code).build())
        .collect();
    let meta = ErrorMetadata::builder()
        .code("TransactionCanceledException")
        .message(&message);
    TransactWriteItemsError::TransactionCanceledException(
        TransactionCanceledException::builder()
            .set_cancellation_reasons(Some(reasons))
            .message(message)
            .meta(meta.build())
            .build(),
    )
}

fn three_items() -> Transaction<&'static str> {
    let item = || {
        let update = UpdateBuilder::default().key("pk", s("k"));
        update_in("t", update.update_expression("ADD n :one"))
    };
    Transaction::new()
        .push("a", item())
        .push("b", item())
        .push("c", item())
        .with_backoff(THREE)
}

#[tokio::test]
async fn every_cancellation_reason_is_answered_retried_or_final_as_it_says() {
    // (reasons, attempts made when every answer is that cancellation, what the caller gets)
    let cases: [(&[&str], usize, &str); 9] = [
        (
            &["None", "ConditionalCheckFailed", "None"],
            1,
            "condition b [b]",
        ),
        (
            &[
                "ConditionalCheckFailed",
                "TransactionConflict",
                "ConditionalCheckFailed",
            ],
            1,
            "condition a [a, c]",
        ),
        (&["None", "TransactionConflict", "None"], 3, "conflict"),
        (&["ThrottlingError", "None", "None"], 3, "conflict"),
        (
            &["None", "None", "ProvisionedThroughputExceeded"],
            3,
            "conflict",
        ),
        (&["ValidationError", "None", "None"], 1, "sdk"),
        (
            &["None", "ItemCollectionSizeLimitExceeded", "None"],
            1,
            "sdk",
        ),
        (&["None", "None", "None"], 1, "sdk"),
        (
            &["TransactionConflict", "ValidationError", "None"],
            1,
            "sdk",
        ),
    ];
    for (reasons, attempts, expected) in cases {
        let rule = mock!(Client::transact_write_items).then_error(move || cancelled(reasons));
        let got = match three_items().commit(&client(&rule)).await {
            Err(TransactError::ConditionFailed { label, all }) => {
                format!("condition {label} [{}]", all.join(", "))
            }
            Err(TransactError::Conflict) => "conflict".to_owned(),
            Err(TransactError::Sdk(_)) => "sdk".to_owned(),
            other => format!("{other:?}"),
        };
        assert_eq!(
            (got.as_str(), rule.num_calls()),
            (expected, attempts),
            "{reasons:?}"
        );
    }
}

#[tokio::test]
async fn a_conflict_that_clears_commits_on_the_next_attempt() {
    let rule = mock!(Client::transact_write_items)
        .sequence()
        .error(|| cancelled(&["TransactionConflict", "None", "None"]))
        .output(|| TransactWriteItemsOutput::builder().build())
        .build();
    three_items().commit(&client(&rule)).await.unwrap();
    assert_eq!(rule.num_calls(), 2);
}

#[tokio::test]
async fn request_level_errors_are_retried_only_when_they_pass_by_themselves() {
    for (code, attempts) in [
        ("ThrottlingException", 3),
        ("ProvisionedThroughputExceededException", 3),
        ("RequestLimitExceeded", 3),
        ("TransactionInProgressException", 3),
        ("ValidationException", 1),
        ("ResourceNotFoundException", 1),
        ("IdempotentParameterMismatchException", 1),
    ] {
        let rule = mock!(Client::transact_write_items).then_error(move || {
            TransactWriteItemsError::generic(ErrorMetadata::builder().code(code).build())
        });
        let result = three_items().commit(&client(&rule)).await;
        let expected_conflict = attempts > 1;
        assert_eq!(
            (
                matches!(result, Err(TransactError::Conflict)),
                rule.num_calls()
            ),
            (expected_conflict, attempts),
            "{code}: {result:?}"
        );
    }
}

#[tokio::test]
async fn a_single_item_write_retries_a_transaction_holding_its_item_not_a_condition() {
    for (code, attempts) in [
        ("TransactionConflictException", 3),
        ("ConditionalCheckFailedException", 1),
    ] {
        let rule = mock!(Client::put_item)
            .then_error(move || PutItemError::generic(ErrorMetadata::builder().code(code).build()));
        let client = client(&rule);
        let result = write_retrying(&THREE, "PutItem", || {
            client.put_item().table_name("t").send()
        })
        .await;
        assert_eq!(result.unwrap_err().code(), Some(code));
        assert_eq!(rule.num_calls(), attempts, "{code}");
    }
    let rule = mock!(Client::put_item)
        .sequence()
        .error(|| {
            let meta = ErrorMetadata::builder().code("TransactionConflictException");
            PutItemError::generic(meta.build())
        })
        .output(|| PutItemOutput::builder().build())
        .build();
    let client = client(&rule);
    write_retrying(&THREE, "PutItem", || {
        client.put_item().table_name("t").send()
    })
    .await
    .unwrap();
    assert_eq!(rule.num_calls(), 2);
}
