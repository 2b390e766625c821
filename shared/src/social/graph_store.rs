//! DynamoDB adapter of the follow graph port: the follow and unfollow transactions and the
//! follower and following lists.
//!
//! The key design is in [`super::keys`]. A follow is one `TransactWriteItems` of three items,
//! all of them the follower's: the edge, the follower's profile (`followingCount`, below the
//! cap) and the outbox event. The followee's profile is only read, before the transaction: a
//! transaction that included it (even as a `ConditionCheck`) would conflict with every
//! concurrent follow of the same user and with the follower-count consumer's update of it. A
//! failed condition comes back as the item's label, which is all the domain needs to answer.
//!
//! The follow rate counts in an item of the caller's alone, `USER#<u>` / `LIMIT#FOLLOW#<minute>`:
//! `ADD attempts :one` on the condition `attribute_not_exists(attempts) OR attempts < :limit`.
//! A follow sends it as one `UpdateItem` beside its read of the target (1 write unit, no extra
//! round trip); an unfollow puts it in its transaction as a fourth item (2 write units, as
//! every transactional write of a small item), and sends it alone only when the transaction
//! found no edge. A refused count writes nothing, but DynamoDB bills a failed conditional
//! write as a write: a caller over the limit costs 1 write unit per attempt (and the follow's
//! read of the target), never a transaction.

use super::follow::{
    Attempt, Counted, Direction, EdgeEntry, EdgePage, FollowWrite, GraphChange, GraphStore,
    ListEdgesError, Relationship, UnfollowWrite,
};
use super::keys::{
    FOLLOWERS_INDEX, FOLLOWING_INDEX, OUTBOX_SK, PROFILE_SK, edge_index_sk, follow_rate_sk,
    follow_sk, followers_pk, following_pk, outbox_pk, user_pk,
};
use super::profile::{StoreError, UserStatus};
use super::store::DynamoSocialStore;
use crate::cursor::{Cursor, InvalidCursor, PageLimit};
use crate::dynamo::{
    Item as Attributes, TransactError, Transaction, get_n, get_s, key, n, query_page, s, start_key,
    write_if,
};
use crate::fault::OrFault;
use crate::ids::UserId;
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{Delete, Put, TransactWriteItem, Update};
use std::collections::HashMap;

/// The items of a follow or unfollow transaction, named so that a failure says which.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Item {
    /// The edge: must be new to follow, must exist to unfollow.
    Edge,
    /// The follower's profile and `followingCount`.
    Follower,
    /// The outbox event.
    Outbox,
    /// The follower's window of the follow rate limit.
    Rate,
}

/// The update that counts an attempt in its window, unless the window is full.
const COUNT_ATTEMPT: &str = "SET entity = :entity, expiresAt = :expires ADD attempts :one";
const WINDOW_HAS_ROOM: &str = "attribute_not_exists(attempts) OR attempts < :limit";

impl DynamoSocialStore {
    fn edge_key(&self, relationship: &Relationship) -> Attributes {
        key(
            user_pk(&relationship.follower),
            follow_sk(&relationship.followee),
        )
    }

    fn rate_key(&self, attempt: &Attempt) -> Attributes {
        key(user_pk(&attempt.user), follow_rate_sk(attempt.window_start))
    }

    fn rate_values(attempt: &Attempt) -> Attributes {
        HashMap::from([
            (":entity".to_owned(), s("FOLLOW_RATE")),
            (":expires".to_owned(), n(attempt.expires_at)),
            (":one".to_owned(), n(1)),
            (":limit".to_owned(), n(attempt.limit)),
        ])
    }

    /// The count of `attempt`, as an item of a transaction.
    fn rate_update(&self, attempt: &Attempt) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(&self.table.name)
            .set_key(Some(self.rate_key(attempt)))
            .update_expression(COUNT_ATTEMPT)
            .condition_expression(WINDOW_HAS_ROOM)
            .set_expression_attribute_values(Some(Self::rate_values(attempt)))
            .build()
            .context("failed to build the rate update")?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// Why a follow's counter update failed its condition: no profile, or the cap. Read
    /// after the cancellation, so a concurrent change may have removed the reason.
    async fn follower_refusal(
        &self,
        follower: &UserId,
        max_following: u32,
    ) -> Result<FollowWrite, StoreError> {
        let key = key(user_pk(follower), PROFILE_SK);
        let failed = "failed to read the follower's count";
        let projection = Some("followingCount");
        let item = self.table.get_consistent(key, projection, failed).await?;
        let Some(item) = item else {
            return Ok(FollowWrite::NoFollowerProfile);
        };
        let count: u64 = get_n(&item, "followingCount").context("bad profile item")?;
        Ok(if count >= u64::from(max_following) {
            FollowWrite::FollowingLimitReached
        } else {
            FollowWrite::Overtaken
        })
    }

    fn outbox_put(&self, change: &GraphChange) -> Result<TransactWriteItem, StoreError> {
        let item = outbox_item(&change.event, change.event_expires_at)
            .context("failed to encode the event")?;
        let put = Put::builder()
            .table_name(&self.table.name)
            .set_item(Some(item))
            // Ids are UUIDs; the condition only makes a collision loud instead of silent.
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .context("failed to build the outbox put")?;
        Ok(TransactWriteItem::builder().put(put).build())
    }
}

/// The outbox item of a follow event, as the follow transaction writes it and the relay reads
/// it from the stream: the event's JSON under `OUTBOX#<eventId>` / `EVENT`, deletable by TTL
/// after `expires_at` (epoch seconds). The sample events (`crate::sample_events`) use it too.
pub fn outbox_item(
    event: &crate::events::Envelope<crate::events::FollowPayload>,
    expires_at: i64,
) -> Result<crate::dynamo::Item, serde_json::Error> {
    Ok(HashMap::from([
        ("pk".to_owned(), s(outbox_pk(&event.id))),
        ("sk".to_owned(), s(OUTBOX_SK)),
        ("event".to_owned(), s(serde_json::to_string(event)?)),
        ("expiresAt".to_owned(), n(expires_at)),
    ]))
}

fn unexpected(label: Item, what: &str) -> StoreError {
    StoreError(anyhow::anyhow!("the condition on {label:?} failed {what}"))
}

fn transact_failure(err: TransactError<Item>) -> StoreError {
    StoreError(anyhow::Error::new(err).context("the follow graph transaction failed"))
}

#[async_trait]
impl GraphStore for DynamoSocialStore {
    #[tracing::instrument(level = "debug", skip(self))]
    async fn follow_target(&self, user: &UserId) -> Result<Option<UserStatus>, StoreError> {
        // A read, even a strongly consistent one, never conflicts with a transaction.
        let output = self
            .table
            .get_item(key(user_pk(user), PROFILE_SK))
            .projection_expression("#status")
            .expression_attribute_names("#status", "status")
            .consistent_read(true)
            .send()
            .await
            .or_fault("failed to read the followee's status")?;
        let Some(item) = output.item else {
            return Ok(None);
        };
        let status = get_s(&item, "status").context("bad profile item")?;
        let status = UserStatus::parse(status).context("stored status is unknown")?;
        Ok(Some(status))
    }

    #[tracing::instrument(level = "debug", skip_all, fields(user = %attempt.user, window = attempt.window_start))]
    async fn count_attempt(&self, attempt: &Attempt) -> Result<Counted, StoreError> {
        let update = self
            .table
            .update_item(self.rate_key(attempt))
            .update_expression(COUNT_ATTEMPT)
            .condition_expression(WINDOW_HAS_ROOM)
            .set_expression_attribute_values(Some(Self::rate_values(attempt)));
        // Only the caller's own unfollow transactions include this item: a conflict with one
        // of them is retried like any other.
        let written = write_if(&self.backoff, "failed to count the follow attempt", || {
            update.clone().send()
        })
        .await
        .map_err(StoreError)?;
        Ok(match written {
            Some(_) => Counted::Admitted,
            None => Counted::Limited,
        })
    }

    #[tracing::instrument(level = "debug", skip_all, fields(follower = %change.relationship.follower, followee = %change.relationship.followee))]
    async fn follow(
        &self,
        change: &GraphChange,
        max_following: u32,
    ) -> Result<FollowWrite, StoreError> {
        let Relationship { follower, followee } = &change.relationship;
        let mut edge = self.edge_key(&change.relationship);
        edge.extend([
            ("entity".to_owned(), s("FOLLOW")),
            ("followerId".to_owned(), s(follower.as_str())),
            ("followeeId".to_owned(), s(followee.as_str())),
            ("followedAt".to_owned(), s(&change.at)),
            ("gsi1pk".to_owned(), s(followers_pk(followee))),
            ("gsi1sk".to_owned(), s(edge_index_sk(&change.at, follower))),
            ("gsi2pk".to_owned(), s(following_pk(follower))),
            ("gsi2sk".to_owned(), s(edge_index_sk(&change.at, followee))),
        ]);
        let edge = Put::builder()
            .table_name(&self.table.name)
            .set_item(Some(edge))
            .condition_expression("attribute_not_exists(pk)")
            .build()
            .context("failed to build the edge put")?;
        // The cap holds under concurrent follows: each is a condition on the same counter.
        let count = Update::builder()
            .table_name(&self.table.name)
            .set_key(Some(key(user_pk(follower), PROFILE_SK)))
            .update_expression("ADD followingCount :one")
            .condition_expression("attribute_exists(pk) AND followingCount < :max")
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":max", n(max_following))
            .build()
            .context("failed to build the counter update")?;
        let result = Transaction::new()
            .with_backoff(self.backoff)
            .push(Item::Edge, TransactWriteItem::builder().put(edge).build())
            .push(
                Item::Follower,
                TransactWriteItem::builder().update(count).build(),
            )
            .push(Item::Outbox, self.outbox_put(change)?)
            .commit(&self.table.client)
            .await;
        match result {
            Ok(()) => Ok(FollowWrite::Written),
            Err(TransactError::ConditionFailed { label, .. }) => match label {
                Item::Edge => Ok(FollowWrite::AlreadyFollowing),
                Item::Follower => self.follower_refusal(follower, max_following).await,
                Item::Outbox => Err(unexpected(label, "on a new event id")),
                Item::Rate => Err(unexpected(label, "though a follow does not include it")),
            },
            Err(TransactError::Conflict) => Ok(FollowWrite::Conflict),
            Err(err) => Err(transact_failure(err)),
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(follower = %change.relationship.follower, followee = %change.relationship.followee))]
    async fn unfollow(
        &self,
        change: &GraphChange,
        attempt: &Attempt,
    ) -> Result<UnfollowWrite, StoreError> {
        let edge = Delete::builder()
            .table_name(&self.table.name)
            .set_key(Some(self.edge_key(&change.relationship)))
            .condition_expression("attribute_exists(pk)")
            .build()
            .context("failed to build the edge delete")?;
        let count = Update::builder()
            .table_name(&self.table.name)
            .set_key(Some(key(
                user_pk(&change.relationship.follower),
                PROFILE_SK,
            )))
            .update_expression("ADD followingCount :minus_one")
            .condition_expression("followingCount > :zero")
            .expression_attribute_values(":minus_one", n(-1))
            .expression_attribute_values(":zero", n(0))
            .build()
            .context("failed to build the counter update")?;
        let result = Transaction::new()
            .with_backoff(self.backoff)
            .push(
                Item::Edge,
                TransactWriteItem::builder().delete(edge).build(),
            )
            .push(
                Item::Follower,
                TransactWriteItem::builder().update(count).build(),
            )
            .push(Item::Outbox, self.outbox_put(change)?)
            .push(Item::Rate, self.rate_update(attempt)?)
            .commit(&self.table.client)
            .await;
        match result {
            Ok(()) => Ok(UnfollowWrite::Written),
            // A full window refuses the attempt whether or not the edge exists.
            Err(TransactError::ConditionFailed { all, .. }) if all.contains(&Item::Rate) => {
                Ok(UnfollowWrite::RateLimited)
            }
            Err(TransactError::ConditionFailed {
                label: Item::Edge, ..
            }) => Ok(UnfollowWrite::NotFollowing),
            // An edge whose follower counts no following: the counter is out of step with
            // the edges. Refuse rather than make it negative; the log says which user.
            Err(TransactError::ConditionFailed { label, .. }) => Err(unexpected(
                label,
                "while the edge exists (followingCount out of step)",
            )),
            Err(TransactError::Conflict) => Ok(UnfollowWrite::Conflict),
            Err(err) => Err(transact_failure(err)),
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(follower = %relationship.follower, followee = %relationship.followee))]
    async fn followed_at(&self, relationship: &Relationship) -> Result<Option<String>, StoreError> {
        let key = self.edge_key(relationship);
        let failed = "failed to read the edge";
        let projection = Some("followedAt");
        let item = self.table.get_consistent(key, projection, failed).await?;
        let Some(item) = item else {
            return Ok(None);
        };
        let at = get_s(&item, "followedAt").context("bad edge item")?;
        Ok(Some(at.to_owned()))
    }

    #[tracing::instrument(level = "debug", skip(self, cursor))]
    async fn list_edges(
        &self,
        user: &UserId,
        direction: Direction,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<EdgePage, ListEdgesError> {
        let index = ListIndex::of(direction);
        let partition = index.partition(user);
        let start = cursor
            .map(|cursor| index.start_key(user, cursor))
            .transpose()?;
        let query = self
            .table
            .client
            .query()
            .table_name(&self.table.name)
            .index_name(index.name)
            .key_condition_expression("#pk = :pk")
            .expression_attribute_names("#pk", index.pk)
            .expression_attribute_values(":pk", s(partition));
        let entry = |item: &Attributes| {
            let user = get_s(item, index.other)?;
            Ok(EdgeEntry {
                user: UserId::parse(user).context("stored user id is not a valid id")?,
                followed_at: get_s(item, "followedAt")?.to_owned(),
            })
        };
        let failed = "failed to query the follow index";
        let (entries, next) = query_page(query, limit, start, failed, entry)
            .await
            .map_err(StoreError)?;
        Ok(EdgePage { entries, next })
    }
}

/// An index that lists one side of the graph, and how its cursors must look.
struct ListIndex {
    name: &'static str,
    pk: &'static str,
    sk: &'static str,
    /// The attribute naming the other user of an edge.
    other: &'static str,
    direction: Direction,
}

impl ListIndex {
    fn of(direction: Direction) -> Self {
        match direction {
            Direction::Followers => Self {
                name: FOLLOWERS_INDEX,
                pk: "gsi1pk",
                sk: "gsi1sk",
                other: "followerId",
                direction,
            },
            Direction::Following => Self {
                name: FOLLOWING_INDEX,
                pk: "gsi2pk",
                sk: "gsi2sk",
                other: "followeeId",
                direction,
            },
        }
    }

    fn partition(&self, user: &UserId) -> String {
        match self.direction {
            Direction::Followers => followers_pk(user),
            Direction::Following => following_pk(user),
        }
    }

    /// The `ExclusiveStartKey` of a cursor, if the cursor is the key of an edge in this list:
    /// exactly the table's and the index's key attributes, on this user's partition, and
    /// consistent with each other. Anything else was not made by us for this list.
    fn start_key(&self, user: &UserId, cursor: &Cursor) -> Result<Attributes, InvalidCursor> {
        let names = ["pk", "sk", self.pk, self.sk];
        let fits = |cursor: &Cursor| self.holds(user, cursor).is_some();
        Ok(start_key(cursor.check(&names, fits)?))
    }

    /// `Some` if the cursor's key attributes are those of an edge of `user` in this list.
    fn holds(&self, user: &UserId, cursor: &Cursor) -> Option<()> {
        if cursor.get(self.pk)? != self.partition(user) {
            return None;
        }
        let id = |raw: Option<&str>| UserId::parse(raw?).ok();
        let follower = id(cursor.get("pk")?.strip_prefix("USER#"))?;
        let followee = id(cursor.get("sk")?.strip_prefix("FOLLOWS#"))?;
        let (owner, other) = match self.direction {
            Direction::Followers => (followee, follower),
            Direction::Following => (follower, followee),
        };
        let at = cursor
            .get(self.sk)?
            .strip_suffix(other.as_str())?
            .strip_suffix('#')?;
        (&owner == user && !at.is_empty()).then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cursor(pairs: &[(&str, &str)]) -> Cursor {
        Cursor::new(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    fn bob() -> UserId {
        UserId::parse("bob").unwrap()
    }

    const AT: &str = "2026-11-30T18:00:00.000000Z";

    #[test]
    fn a_cursor_of_this_list_becomes_the_start_key() {
        let followers = format!("{AT}#ada");
        let following = format!("{AT}#cat");
        // Per list of bob's: a cursor of it, and the index partition its start key has.
        let cases = [
            (
                Direction::Followers,
                [
                    ("pk", "USER#ada"),
                    ("sk", "FOLLOWS#bob"),
                    ("gsi1pk", "FOLLOWERS#bob"),
                    ("gsi1sk", followers.as_str()),
                ],
                ("gsi1pk", "FOLLOWERS#bob"),
            ),
            (
                Direction::Following,
                [
                    ("pk", "USER#bob"),
                    ("sk", "FOLLOWS#cat"),
                    ("gsi2pk", "FOLLOWING#bob"),
                    ("gsi2sk", following.as_str()),
                ],
                ("gsi2pk", "FOLLOWING#bob"),
            ),
        ];
        for (direction, good, (name, partition)) in cases {
            let key = ListIndex::of(direction).start_key(&bob(), &cursor(&good));
            let key = key.unwrap_or_else(|err| panic!("{direction:?}: {err:?}"));
            assert_eq!(key[name], s(partition));
            assert_eq!(key.len(), 4);
        }
    }

    #[test]
    fn cursors_of_other_lists_or_forged_ones_are_refused() {
        let index = ListIndex::of(Direction::Followers);
        let sk = format!("{AT}#ada");
        // Followers-list cursors (pk, sk, gsi1pk, gsi1sk) that are not of bob's list.
        let followers_keys = [
            // Another user's followers.
            ["USER#ada", "FOLLOWS#cat", "FOLLOWERS#cat", &sk],
            // The partition rewritten, the edge not.
            ["USER#ada", "FOLLOWS#cat", "FOLLOWERS#bob", &sk],
            // The index sort key of another follower.
            ["USER#ada", "FOLLOWS#bob", "FOLLOWERS#bob", "2026#eve"],
            // A key that is not a user's.
            ["OUTBOX#1", "FOLLOWS#bob", "FOLLOWERS#bob", &sk],
            // No time.
            ["USER#ada", "FOLLOWS#bob", "FOLLOWERS#bob", "#ada"],
        ];
        let mut cases: Vec<Vec<(&str, &str)>> = followers_keys
            .iter()
            .map(|values| {
                ["pk", "sk", "gsi1pk", "gsi1sk"]
                    .into_iter()
                    .zip(*values)
                    .collect()
            })
            .collect();
        // A following cursor on the followers list.
        cases.push(vec![
            ("pk", "USER#bob"),
            ("sk", "FOLLOWS#ada"),
            ("gsi2pk", "FOLLOWING#bob"),
            ("gsi2sk", &sk),
        ]);
        // An extra attribute.
        cases.push(vec![
            ("pk", "USER#ada"),
            ("sk", "FOLLOWS#bob"),
            ("gsi1pk", "FOLLOWERS#bob"),
            ("gsi1sk", &sk),
            ("x", "y"),
        ]);
        for case in cases {
            assert_eq!(
                index.start_key(&bob(), &cursor(&case)),
                Err(InvalidCursor),
                "{case:?}"
            );
        }
    }
}
