//! DynamoDB adapter of the social ports.
//!
//! The key design is in [`super::keys`].

use super::keys::{PROFILE_SK, user_pk};
use super::profile::{DisplayName, Profile, ProfileStore, StoreError, UserStatus};
use crate::config::{ConfigError, Env};
use crate::dynamo::{get_n, get_s, key, n, s};
use crate::ids::UserId;
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use std::collections::HashMap;

/// The social table.
#[derive(Clone, Debug)]
pub struct DynamoSocialStore {
    client: Client,
    table: String,
}

impl DynamoSocialStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    /// The store named by `SOCIAL_TABLE`.
    pub fn from_env(env: &Env, client: Client) -> Result<Self, ConfigError> {
        Ok(Self::new(client, env.required("SOCIAL_TABLE")?))
    }
}

fn profile_from_item(item: &HashMap<String, AttributeValue>) -> anyhow::Result<Profile> {
    let user_id = get_s(item, "userId")?;
    let status = get_s(item, "status")?;
    Ok(Profile {
        user_id: UserId::parse(user_id).context("stored userId is not a valid id")?,
        display_name: get_s(item, "displayName")?.to_owned(),
        following_count: get_n(item, "followingCount")?,
        follower_count: get_n(item, "followerCount")?,
        status: UserStatus::parse(status).context("stored status is unknown")?,
        created_at: get_s(item, "createdAt")?.to_owned(),
    })
}

#[async_trait]
impl ProfileStore for DynamoSocialStore {
    #[tracing::instrument(skip(self, name))]
    async fn upsert_profile(
        &self,
        user: &UserId,
        name: &DisplayName,
        now: &str,
    ) -> Result<Profile, StoreError> {
        // One UpdateItem creates or renames: counters and status start at their initial
        // values only when absent, so a rename never resets what follows have counted.
        let output = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(user_pk(user), PROFILE_SK)))
            .update_expression(
                "SET displayName = :name, updatedAt = :now, userId = :user, entity = :entity, \
                 createdAt = if_not_exists(createdAt, :now), \
                 followingCount = if_not_exists(followingCount, :zero), \
                 followerCount = if_not_exists(followerCount, :zero), \
                 #status = if_not_exists(#status, :active)",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":name", s(name.as_str()))
            .expression_attribute_values(":now", s(now))
            .expression_attribute_values(":user", s(user.as_str()))
            .expression_attribute_values(":entity", s("PROFILE"))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":active", s(UserStatus::Active.as_str()))
            .return_values(ReturnValue::AllNew)
            .send()
            .await
            .context("failed to upsert the profile")?;
        let item = output
            .attributes
            .context("UpdateItem returned no attributes")?;
        Ok(profile_from_item(&item)?)
    }
}
