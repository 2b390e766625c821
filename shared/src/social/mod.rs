//! The social follow product: profiles, follows and notifications.
//!
//! - [`profile`]: the domain: profiles, validation and the store port.
//! - [`follow`]: the domain of following: follow, unfollow and the lists, the graph port.
//! - [`keys`]: the social table's key design.
//! - [`store`]: the DynamoDB adapter of the ports.
//! - [`graph_store`]: the DynamoDB adapter of the graph port: transactions and index queries.
//! - [`handlers`]: the HTTP entry points, translating requests to domain calls.

pub mod async_store;
pub use crate::cursor;
pub mod follow;
pub mod follower_count;
pub mod graph_store;
pub mod handlers;
pub mod keys;
pub mod notification_routes;
pub mod notifications;
pub mod profile;
pub mod relay;
pub mod store;

pub use cursor::{Cursor, PageLimit};
pub use follow::{Direction, FollowError, FollowLimits, GraphStore, Relationship};
pub use profile::{DisplayName, Profile, ProfileStore, UserStatus};
pub use store::DynamoSocialStore;
