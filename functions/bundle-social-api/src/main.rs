//! The social API: profiles, follows, follower lists and notifications.
//!
//! The bootstrap Lambda runs for these functions ([`app::boot::run_bundle`]): each is
//! deployed as a function of its own and runs the `main` of the folder its `Handler` names.

#[path = "../../follow/src/main.rs"]
mod follow;
#[path = "../../get-user/src/main.rs"]
mod get_user;
#[path = "../../list-followers/src/main.rs"]
mod list_followers;
#[path = "../../list-following/src/main.rs"]
mod list_following;
#[path = "../../list-notifications/src/main.rs"]
mod list_notifications;
#[path = "../../mark-notifications-read/src/main.rs"]
mod mark_notifications_read;
#[path = "../../put-profile/src/main.rs"]
mod put_profile;
#[path = "../../unfollow/src/main.rs"]
mod unfollow;

fn main() -> Result<(), lambda_runtime::Error> {
    app::boot::run_bundle(&[
        ("follow", follow::main),
        ("unfollow", unfollow::main),
        ("get-user", get_user::main),
        ("put-profile", put_profile::main),
        ("list-followers", list_followers::main),
        ("list-following", list_following::main),
        ("list-notifications", list_notifications::main),
        ("mark-notifications-read", mark_notifications_read::main),
    ])
}
