//! DynamoDB Streams on the social table: relay each outbox event to the consumers' queues.

use app::boot::Boot;
use app::social::event_sink::SqsEventSink;
use app::social::relay;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_runtime::Error> {
    let boot = Boot::start();
    let sqs = boot.sqs().await;
    let sink = |name| boot.must(SqsEventSink::from_env(boot.env(), sqs.clone(), name));
    let notifications = sink("NOTIFICATION_QUEUE_URL");
    let follower_counts = sink("FOLLOWER_COUNT_QUEUE_URL");
    relay::run(&[&notifications, &follower_counts]).await
}
