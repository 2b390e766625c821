//! Domain events on the queues: versioned JSON envelopes
//! `{"type", "version", "id", "occurredAt", "payload"}`.
//!
//! A consumer parses an envelope into a known event or refuses it with a reason; a refused
//! message can never succeed, so it belongs in the dead-letter queue, not in a retry loop.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The envelope of every event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope<P> {
    #[serde(rename = "type")]
    pub kind: String,
    pub version: u32,
    /// Unique per event; consumers use it to apply an event once.
    pub id: String,
    /// RFC 3339 UTC.
    pub occurred_at: String,
    pub payload: P,
}

/// Who followed or unfollowed whom.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FollowPayload {
    pub follower_id: String,
    pub followee_id: String,
}

pub const USER_FOLLOWED: &str = "UserFollowed";
pub const USER_UNFOLLOWED: &str = "UserUnfollowed";

/// The social events, as consumers see them.
#[derive(Clone, Debug, PartialEq)]
pub enum SocialEvent {
    UserFollowed(Envelope<FollowPayload>),
    UserUnfollowed(Envelope<FollowPayload>),
}

/// Why a message is not an event this version understands.
#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("the message is not a JSON event envelope")]
    NotAnEnvelope(#[source] serde_json::Error),
    #[error("unknown event {kind} version {version}")]
    Unknown { kind: String, version: u32 },
    #[error("bad payload of {kind}")]
    BadPayload {
        kind: String,
        #[source]
        source: serde_json::Error,
    },
}

impl SocialEvent {
    pub fn parse(body: &str) -> Result<Self, EventError> {
        let envelope: Envelope<Value> =
            serde_json::from_str(body).map_err(EventError::NotAnEnvelope)?;
        let typed = |envelope: Envelope<Value>| -> Result<Envelope<FollowPayload>, EventError> {
            let payload = serde_json::from_value(envelope.payload).map_err(|source| {
                EventError::BadPayload {
                    kind: envelope.kind.clone(),
                    source,
                }
            })?;
            Ok(Envelope {
                kind: envelope.kind,
                version: envelope.version,
                id: envelope.id,
                occurred_at: envelope.occurred_at,
                payload,
            })
        };
        match (envelope.kind.as_str(), envelope.version) {
            (USER_FOLLOWED, 1) => Ok(Self::UserFollowed(typed(envelope)?)),
            (USER_UNFOLLOWED, 1) => Ok(Self::UserUnfollowed(typed(envelope)?)),
            _ => Err(EventError::Unknown {
                kind: envelope.kind,
                version: envelope.version,
            }),
        }
    }

    pub fn id(&self) -> &str {
        match self {
            Self::UserFollowed(e) | Self::UserUnfollowed(e) => &e.id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_follow_event_round_trips() {
        let envelope = Envelope {
            kind: USER_FOLLOWED.to_owned(),
            version: 1,
            id: "e1".to_owned(),
            occurred_at: "2026-11-30T18:00:00Z".to_owned(),
            payload: FollowPayload {
                follower_id: "a".to_owned(),
                followee_id: "b".to_owned(),
            },
        };
        let body = serde_json::to_string(&envelope).unwrap();
        assert!(body.contains(r#""type":"UserFollowed""#), "{body}");
        assert!(body.contains(r#""occurredAt""#), "{body}");
        assert_eq!(
            SocialEvent::parse(&body).unwrap(),
            SocialEvent::UserFollowed(envelope)
        );
    }

    #[test]
    fn unknown_versions_and_garbage_are_refused() {
        let v2 = r#"{"type":"UserFollowed","version":2,"id":"e","occurredAt":"t","payload":{}}"#;
        assert!(matches!(
            SocialEvent::parse(v2),
            Err(EventError::Unknown { version: 2, .. })
        ));
        assert!(matches!(
            SocialEvent::parse("poison"),
            Err(EventError::NotAnEnvelope(_))
        ));
        let bad =
            r#"{"type":"UserFollowed","version":1,"id":"e","occurredAt":"t","payload":{"x":1}}"#;
        assert!(matches!(
            SocialEvent::parse(bad),
            Err(EventError::BadPayload { .. })
        ));
    }
}
