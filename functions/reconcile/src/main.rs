//! On a schedule: releases reservations that never became orders and logs each published
//! sale's stock in Redis beside DynamoDB's; answers a JSON summary.

use app::boot::Boot;
use app::seckill::recovery::reconcile::{self, Grace};
use lambda_runtime::{LambdaEvent, service_fn};

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_runtime::Error> {
    let boot = Boot::start();
    let grace = boot.must(Grace::from_env(boot.env())).period();
    // Redis's connect and script loads wait on the network while the SDK is set up.
    let (reservations, store) = tokio::join!(boot.reservations(), boot.order_store());
    let (store, reservations) = (&store, &reservations);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<serde_json::Value>| {
        app::emf::invocation(app::emf::Ids::from(&event.context), async move {
            let now_ms = app::clock::now_epoch_ms();
            let summary = reconcile::reconcile(store, reservations, grace, now_ms).await?;
            Ok::<_, lambda_runtime::Error>(serde_json::to_value(summary)?)
        })
    }))
    .await
}
