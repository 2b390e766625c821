//! User profiles: a display name, counters and a status.

use crate::ids::UserId;
use crate::text::{self, TextError};
use async_trait::async_trait;
use serde::Serialize;
use std::collections::HashMap;

/// A profile's status; only an active user can be followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum UserStatus {
    Active,
    Deactivated,
}

impl UserStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "ACTIVE",
            Self::Deactivated => "DEACTIVATED",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "ACTIVE" => Some(Self::Active),
            "DEACTIVATED" => Some(Self::Deactivated),
            _ => None,
        }
    }
}

/// A user's public profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    pub user_id: UserId,
    pub display_name: String,
    pub following_count: u64,
    pub follower_count: u64,
    pub status: UserStatus,
    /// RFC 3339, UTC.
    pub created_at: String,
}

/// A display name: NFC, trimmed, 1 to 50 characters, and nothing invisible or deceptive
/// (the rules of [`crate::text`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DisplayName(String);

/// Why a display name was refused: the rule, and the code point that broke it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(transparent)]
pub struct InvalidDisplayName(#[from] pub TextError);

impl DisplayName {
    /// In characters (Unicode scalar values) after NFC.
    pub const MAX_CHARS: usize = 50;

    pub fn parse(raw: &str) -> Result<Self, InvalidDisplayName> {
        Ok(Self(text::clean("displayName", raw, Self::MAX_CHARS)?))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why the profile store failed; the cause is for the log, never for the client.
#[derive(Debug, thiserror::Error)]
#[error("profile store failed")]
pub struct StoreError(#[from] pub anyhow::Error);

/// Where profiles live.
#[async_trait]
pub trait ProfileStore: Send + Sync {
    /// Creates the caller's profile, or renames it if it exists; counters and status of an
    /// existing profile are kept. `now` is RFC 3339.
    async fn upsert_profile(
        &self,
        user: &UserId,
        name: &DisplayName,
        now: &str,
    ) -> Result<Profile, StoreError>;

    /// A user's profile, if the user has one.
    async fn get_profile(&self, user: &UserId) -> Result<Option<Profile>, StoreError>;

    /// The display names of those of `users` who have a profile.
    async fn display_names(&self, users: &[UserId]) -> Result<HashMap<UserId, String>, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_display_name_is_trimmed() {
        assert_eq!(DisplayName::parse("  Ada  ").unwrap().as_str(), "Ada");
    }

    #[test]
    fn a_display_name_counts_characters_not_bytes() {
        assert!(DisplayName::parse(&"é".repeat(50)).is_ok());
        assert!(DisplayName::parse(&"é".repeat(51)).is_err());
    }

    #[test]
    fn a_display_name_is_stored_in_nfc() {
        assert_eq!(DisplayName::parse("Jose\u{301}").unwrap().as_str(), "José");
    }

    #[test]
    fn blank_control_and_invisible_names_are_refused_with_the_reason() {
        for (raw, message) in [
            ("", "displayName must be 1 to 50 characters"),
            ("   ", "displayName must be 1 to 50 characters"),
            (
                "a\nb",
                "displayName must not contain U+000A: a control character",
            ),
            ("tab\there", "displayName must not contain U+0009"),
            ("ad\u{202E}nim", "displayName must not contain U+202E"),
            ("\u{200B}", "displayName must not contain U+200B"),
            ("\u{3164}", "displayName must not contain U+3164: a filler"),
        ] {
            let err = DisplayName::parse(raw).unwrap_err();
            assert!(err.to_string().starts_with(message), "{raw:?}: {err}");
        }
    }
}
