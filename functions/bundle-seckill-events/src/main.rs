//! The flash sale's order consumers and its reconciliation of Redis with DynamoDB.
//!
//! The bootstrap Lambda runs for these functions ([`app::boot::run_bundle`]): each is
//! deployed as a function of its own and runs the `main` of the folder its `Handler` names.

#[path = "../../order-consumer/src/main.rs"]
mod order_consumer;
#[path = "../../payment-timeout-consumer/src/main.rs"]
mod payment_timeout_consumer;
#[path = "../../reconcile/src/main.rs"]
mod reconcile;

fn main() -> Result<(), lambda_runtime::Error> {
    app::boot::run_bundle(&[
        ("order-consumer", order_consumer::main),
        ("payment-timeout-consumer", payment_timeout_consumer::main),
        ("reconcile", reconcile::main),
    ])
}
