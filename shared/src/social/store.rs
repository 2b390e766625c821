//! DynamoDB adapter of the social ports.
//!
//! The key design is in [`super::keys`].

use super::keys::{PROFILE_SK, user_pk};
use super::profile::{DisplayName, Profile, ProfileStore, StoreError, UserStatus};
use crate::config::{ConfigError, Env};
use crate::dynamo::{Table, get_n, get_s, key, n, s, write_retrying};
use crate::fault::OrFault;
use crate::ids::UserId;
use crate::retry::Backoff;
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, ReturnValue};
use std::collections::HashMap;
use std::time::Duration;

/// The social table.
#[derive(Clone, Debug)]
pub struct DynamoSocialStore {
    pub(super) table: Table,
    /// How writes retry conflicts and throttling (see [`crate::retry`]).
    pub(super) backoff: Backoff,
}

impl DynamoSocialStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            table: Table::new(client, table),
            backoff: Backoff::default(),
        }
    }

    /// Retries conflicts and throttling with `backoff` instead of the default.
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// The store named by `SOCIAL_TABLE`.
    pub fn from_env(env: &Env, client: Client) -> Result<Self, ConfigError> {
        Table::from_env(env, client, "SOCIAL_TABLE").map(|table| Self {
            table,
            backoff: Backoff::default(),
        })
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

fn name_from_item(item: &HashMap<String, AttributeValue>) -> anyhow::Result<(UserId, String)> {
    let user = UserId::parse(get_s(item, "userId")?).context("stored userId is not a valid id")?;
    Ok((user, get_s(item, "displayName")?.to_owned()))
}

#[async_trait]
impl ProfileStore for DynamoSocialStore {
    #[tracing::instrument(level = "debug", skip(self, name))]
    async fn upsert_profile(
        &self,
        user: &UserId,
        name: &DisplayName,
        now: &str,
    ) -> Result<Profile, StoreError> {
        // One UpdateItem creates or renames: counters and status start at their initial
        // values only when absent, so a rename never resets what follows have counted. The
        // profile is in the owner's follow transactions and the follower-count consumer's:
        // a write during one of them is refused for a moment, and retried.
        let update = self
            .table
            .update_item(key(user_pk(user), PROFILE_SK))
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
            .return_values(ReturnValue::AllNew);
        let output = write_retrying(&self.backoff, "UpdateItem profile", || {
            update.clone().send()
        })
        .await
        .or_fault("failed to upsert the profile")?;
        let item = output
            .attributes
            .context("UpdateItem returned no attributes")?;
        Ok(profile_from_item(&item)?)
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn get_profile(&self, user: &UserId) -> Result<Option<Profile>, StoreError> {
        let output = self
            .table
            .get_item(key(user_pk(user), PROFILE_SK))
            .send()
            .await
            .or_fault("failed to read the profile")?;
        Ok(output.item.as_ref().map(profile_from_item).transpose()?)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(users = users.len()))]
    async fn display_names(&self, users: &[UserId]) -> Result<HashMap<UserId, String>, StoreError> {
        let mut names = HashMap::with_capacity(users.len());
        let mut unique: Vec<&UserId> = users.iter().collect();
        unique.sort();
        unique.dedup();
        for chunk in unique.chunks(MAX_BATCH_GET) {
            let keys = chunk
                .iter()
                .map(|user| key(user_pk(user), PROFILE_SK))
                .collect();
            let request = KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .projection_expression("userId, displayName")
                .build()
                .context("failed to build a BatchGetItem request")?;
            let mut pending = Some(HashMap::from([(self.table.name.clone(), request)]));
            let mut round = 0;
            while let Some(request_items) = pending.take().filter(|items| !items.is_empty()) {
                if round == MAX_BATCH_ROUNDS {
                    return Err(anyhow::anyhow!(
                        "BatchGetItem left keys unprocessed after {MAX_BATCH_ROUNDS} rounds"
                    )
                    .into());
                }
                if round > 0 {
                    // Unprocessed keys mean throttling: back off before asking again.
                    tokio::time::sleep(Duration::from_millis(20 << round)).await;
                }
                round += 1;
                let output = self
                    .table
                    .client
                    .batch_get_item()
                    .set_request_items(Some(request_items))
                    .send()
                    .await
                    .or_fault("failed to read display names")?;
                for item in output.responses.unwrap_or_default().into_values().flatten() {
                    let (user, name) = name_from_item(&item)?;
                    names.insert(user, name);
                }
                pending = output.unprocessed_keys;
            }
        }
        Ok(names)
    }
}

/// DynamoDB reads at most this many items per `BatchGetItem`.
const MAX_BATCH_GET: usize = 100;
/// How many times to ask again for keys that `BatchGetItem` left unprocessed.
const MAX_BATCH_ROUNDS: u32 = 4;
