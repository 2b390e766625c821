//! The flash sale's orders after admission: reading them, paying, the provider's callback and sandbox, delivery and refunds.
//!
//! The bootstrap Lambda runs for these functions ([`app::boot::run_bundle`]): each is
//! deployed as a function of its own and runs the `main` of the folder its `Handler` names.

#[path = "../../confirm-delivery/src/main.rs"]
mod confirm_delivery;
#[path = "../../get-order/src/main.rs"]
mod get_order;
#[path = "../../list-orders/src/main.rs"]
mod list_orders;
#[path = "../../list-refunds/src/main.rs"]
mod list_refunds;
#[path = "../../pay-order/src/main.rs"]
mod pay_order;
#[path = "../../payment-callback/src/main.rs"]
mod payment_callback;
#[path = "../../payment-sandbox/src/main.rs"]
mod payment_sandbox;
#[path = "../../settle-refund/src/main.rs"]
mod settle_refund;

fn main() -> Result<(), lambda_runtime::Error> {
    app::boot::run_bundle(&[
        ("get-order", get_order::main),
        ("list-orders", list_orders::main),
        ("pay-order", pay_order::main),
        ("payment-callback", payment_callback::main),
        ("payment-sandbox", payment_sandbox::main),
        ("confirm-delivery", confirm_delivery::main),
        ("settle-refund", settle_refund::main),
        ("list-refunds", list_refunds::main),
    ])
}
