//! `POST /notifications/read`: mark some or all of the caller's notifications read.

use app::config::Env;
use app::social::derived_store::DynamoDerivedStore;
use app::social::notification_routes;
use app::{cloud, http, telemetry};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let clients = cloud::Clients::new(&cloud::sdk_config().await);
    let store = DynamoDerivedStore::from_env(&Env::process(), clients.dynamodb)
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    http::run(|request| notification_routes::mark_notifications_read(&store, request)).await
}
