//! The social follow product: profiles, follows and notifications.
//!
//! - [`profile`]: the domain: profiles, validation and the store port.
//! - [`keys`]: the social table's key design.
//! - [`store`]: the DynamoDB adapter of the ports.
//! - [`handlers`]: the HTTP entry points, translating requests to domain calls.

pub mod handlers;
pub mod keys;
pub mod profile;
pub mod store;

pub use profile::{DisplayName, Profile, ProfileStore, UserStatus};
pub use store::DynamoSocialStore;
