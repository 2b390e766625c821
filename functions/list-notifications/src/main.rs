//! `GET /notifications`: the caller's notifications, newest first, with the unread count.

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
    http::run(|request| notification_routes::list_notifications(&store, request)).await
}
