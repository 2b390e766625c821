//! The profile store against DynamoDB: create, then rename without losing counters.

use crate::support::{clients, create_table};
use app::ids::UserId;
use app::social::{DisplayName, DynamoSocialStore, ProfileStore, UserStatus};

#[tokio::test]
async fn a_profile_is_created_then_renamed_keeping_its_creation_time() {
    let clients = clients().await;
    let table = create_table(&clients).await;
    let store = DynamoSocialStore::new(clients.dynamodb.clone(), &table);
    let ada = UserId::parse("ada").unwrap();

    let upsert = |name: &str, now: &'static str| {
        let name = DisplayName::parse(name).unwrap();
        let store = &store;
        let ada = &ada;
        async move { store.upsert_profile(ada, &name, now).await.unwrap() }
    };

    let created = upsert("Ada", "2026-11-30T18:00:00Z").await;
    assert_eq!(created.display_name, "Ada");
    assert_eq!(created.following_count, 0);
    assert_eq!(created.follower_count, 0);
    assert_eq!(created.status, UserStatus::Active);

    let renamed = upsert("Countess", "2026-11-30T19:00:00Z").await;
    assert_eq!(renamed.display_name, "Countess");
    assert_eq!(renamed.created_at, "2026-11-30T18:00:00Z");
    assert_eq!(renamed.user_id, ada);
}
