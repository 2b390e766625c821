//! The flash sale's page writer: each published sale's static detail page, written to S3.
//!
//! The bootstrap Lambda runs for these functions ([`app::boot::run_bundle`]): each is
//! deployed as a function of its own and runs the `main` of the folder its `Handler` names.

#[path = "../../sale-page-writer/src/main.rs"]
mod sale_page_writer;

fn main() -> Result<(), lambda_runtime::Error> {
    app::boot::run_bundle(&[("sale-page-writer", sale_page_writer::main)])
}
