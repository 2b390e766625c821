//! What `template.yaml` must say for the hot paths to hold under AWS's concurrency: the
//! consumers that write one hot item per batch cap their concurrency, and the reconciliation's
//! grace period is computed from the order queue's real settings.

use crate::support::project_model;
use local_cloud::model::{EventSpec, FunctionSpec, Model};

fn function<'a>(model: &'a Model, logical_id: &str) -> &'a FunctionSpec {
    model
        .function(logical_id)
        .unwrap_or_else(|| panic!("no function {logical_id}"))
}

#[test]
fn consumers_of_hot_items_cap_their_concurrent_batches() {
    let model = project_model(&[]);
    for (consumer, queue) in [
        ("NotificationConsumerFunction", "NotificationQueue"),
        ("FollowerCountConsumerFunction", "FollowerCountQueue"),
        ("OrderConsumerFunction", "OrderQueue"),
        ("PaymentTimeoutConsumerFunction", "OrderTimeoutQueue"),
    ] {
        let sources: Vec<_> = function(&model, consumer)
            .events
            .iter()
            .filter_map(|event| match event {
                EventSpec::Sqs(source) => Some(source),
                _ => None,
            })
            .collect();
        assert_eq!(sources.len(), 1, "{consumer}");
        assert_eq!(sources[0].queue_logical_id, queue);
        let cap = sources[0]
            .maximum_concurrency
            .unwrap_or_else(|| panic!("{consumer} sets no ScalingConfig.MaximumConcurrency"));
        // Lambda's floor is 2; far above a handful, batches would mostly retry each other.
        assert!((2..=10).contains(&cap), "{consumer}: {cap}");
    }
}

#[test]
fn the_reconciliation_grace_follows_the_order_queue_settings() {
    for visibility in ["60", "17"] {
        let model = project_model(&[("QueueVisibilityTimeoutSeconds", visibility)]);
        let env = &function(&model, "ReconcileFunction").environment;
        let queue = model.queue("OrderQueue").expect("OrderQueue");
        let redrive: serde_json::Value =
            serde_json::from_str(&queue.attributes["RedrivePolicy"]).expect("a JSON policy");
        let max_receive = match &redrive["maxReceiveCount"] {
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::String(s) => s.clone(),
            other => panic!("maxReceiveCount {other}"),
        };
        assert_eq!(env["ORDER_QUEUE_MAX_RECEIVE_COUNT"], max_receive);
        assert_eq!(
            env["ORDER_QUEUE_VISIBILITY_TIMEOUT_SECONDS"],
            queue.attributes["VisibilityTimeout"]
        );
        assert_eq!(env["ORDER_QUEUE_VISIBILITY_TIMEOUT_SECONDS"], visibility);

        let consumer = function(&model, "OrderConsumerFunction");
        let window = consumer
            .events
            .iter()
            .find_map(|event| match event {
                EventSpec::Sqs(source) => Some(source.batching_window.as_secs()),
                _ => None,
            })
            .expect("the order consumer's SQS event");
        assert_eq!(
            env["ORDER_QUEUE_BATCHING_WINDOW_SECONDS"],
            window.to_string()
        );
        let place_order = function(&model, "PlaceOrderFunction");
        assert_eq!(
            env["PLACE_ORDER_TIMEOUT_SECONDS"],
            place_order.timeout.as_secs().to_string()
        );
    }
}
