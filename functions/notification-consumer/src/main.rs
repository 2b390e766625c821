//! SQS on the notification queue: a follow notification per `UserFollowed`, once ever.

use app::config::Env;
use app::social::derived_store::DynamoDerivedStore;
use app::social::notifications;
use app::{cloud, consumer, telemetry};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    telemetry::init();
    let clients = cloud::Clients::new(&cloud::sdk_config().await);
    let store = DynamoDerivedStore::from_env(&Env::process(), clients.dynamodb)
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    consumer::run(|messages| notifications::handle_batch(&store, messages)).await
}
