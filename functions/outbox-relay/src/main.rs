//! DynamoDB Streams on the social table: relay each outbox event to the consumers' queues.

use app::config::Env;
use app::social::event_sink::SqsEventSink;
use app::social::relay;
use app::{cloud, telemetry};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    telemetry::init();
    let clients = cloud::Clients::new(&cloud::sdk_config().await);
    let env = Env::process();
    let sink = |name| {
        SqsEventSink::from_env(&env, clients.sqs.clone(), name)
            .unwrap_or_else(|err| telemetry::fail_cold_start(&err))
    };
    let notifications = sink("NOTIFICATION_QUEUE_URL");
    let follower_counts = sink("FOLLOWER_COUNT_QUEUE_URL");
    relay::run(&[&notifications, &follower_counts]).await
}
