//! SQS on the notification queue: a follow notification per `UserFollowed`, once ever.

use app::boot::Boot;
use app::consumer;
use app::social::notifications;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_runtime::Error> {
    let store = Boot::start().derived_store().await;
    consumer::run(|messages| notifications::handle_batch(&store, messages)).await
}
