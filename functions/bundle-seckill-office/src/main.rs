//! The flash sale's operator routes: creating, editing, publishing and ending sales, and their figures.
//!
//! The bootstrap Lambda runs for these functions ([`app::boot::run_bundle`]): each is
//! deployed as a function of its own and runs the `main` of the folder its `Handler` names.

#[path = "../../create-sale/src/main.rs"]
mod create_sale;
#[path = "../../edit-sale/src/main.rs"]
mod edit_sale;
#[path = "../../end-sale/src/main.rs"]
mod end_sale;
#[path = "../../list-sales/src/main.rs"]
mod list_sales;
#[path = "../../publish-sale/src/main.rs"]
mod publish_sale;
#[path = "../../sale-figures/src/main.rs"]
mod sale_figures;
#[path = "../../sale-listing/src/main.rs"]
mod sale_listing;

fn main() -> Result<(), lambda_runtime::Error> {
    app::boot::run_bundle(&[
        ("create-sale", create_sale::main),
        ("edit-sale", edit_sale::main),
        ("publish-sale", publish_sale::main),
        ("end-sale", end_sale::main),
        ("list-sales", list_sales::main),
        ("sale-listing", sale_listing::main),
        ("sale-figures", sale_figures::main),
    ])
}
