//! SQS on the follower count queue: each followee's `followerCount`, once per event.

use app::boot::Boot;
use app::consumer;
use app::social::follower_count;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_runtime::Error> {
    let store = Boot::start().derived_store().await;
    consumer::run(|messages| follower_count::handle_batch(&store, messages)).await
}
