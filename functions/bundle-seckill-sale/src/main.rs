//! The flash sale's buyer routes up to admission: the sale, reservations and placing an order.
//!
//! The bootstrap Lambda runs for these functions ([`app::boot::run_bundle`]): each is
//! deployed as a function of its own and runs the `main` of the folder its `Handler` names.

#[path = "../../cancel-reservation/src/main.rs"]
mod cancel_reservation;
#[path = "../../get-reservation/src/main.rs"]
mod get_reservation;
#[path = "../../get-sale/src/main.rs"]
mod get_sale;
#[path = "../../place-order/src/main.rs"]
mod place_order;
#[path = "../../reserve-sale/src/main.rs"]
mod reserve_sale;

fn main() -> Result<(), lambda_runtime::Error> {
    app::boot::run_bundle(&[
        ("get-sale", get_sale::main),
        ("place-order", place_order::main),
        ("reserve-sale", reserve_sale::main),
        ("cancel-reservation", cancel_reservation::main),
        ("get-reservation", get_reservation::main),
    ])
}
