//! The social follow product: profiles, follows and notifications.
//!
//! # Layout
//!
//! Domain modules name no AWS type; each states its ports as traits, and the adapters
//! implement them. Routes only translate HTTP to domain calls. The events it emits and
//! consumes are in [`crate::events`], its ids in [`crate::ids`].
//!
//! - [`profile`] (domain, port): profiles, display names, the `ProfileStore` port.
//! - [`follow`] (domain, port): follow, unfollow and the lists, their limits, the
//!   `GraphStore` port.
//! - [`follower_count`] (domain, port): the followee's count derived from the follow events,
//!   the `FollowerCountStore` port.
//! - [`notifications`] (domain, port): follow notifications, the `NotificationStore` port.
//! - [`relay`] (domain, port): the outbox relay from DynamoDB Streams, the `EventSink` port.
//! - [`keys`] (adapter): the social table's key design.
//! - [`store`] (adapter): DynamoDB adapter of `ProfileStore`.
//! - [`graph_store`] (adapter): DynamoDB adapter of `GraphStore`: transactions and index
//!   queries.
//! - [`derived_store`] (adapter): DynamoDB adapter of `FollowerCountStore` and
//!   `NotificationStore`, the items the consumers derive.
//! - [`event_sink`] (adapter): SQS adapter of `EventSink`.
//! - [`user_routes`] (routes): `/users/...`: profiles, follow, unfollow, the lists.
//! - [`notification_routes`] (routes): `/notifications`.

pub mod derived_store;
pub mod event_sink;
pub mod follow;
pub mod follower_count;
pub mod graph_store;
pub mod keys;
pub mod notification_routes;
pub mod notifications;
pub mod profile;
pub mod relay;
pub mod store;
pub mod user_routes;

pub use follow::{Direction, FollowError, FollowLimits, GraphStore, Relationship};
pub use profile::{DisplayName, Profile, ProfileStore, UserStatus};
pub use store::DynamoSocialStore;
