//! Identifiers, parsed once at the boundary so that the rest of the code can trust them.
//!
//! Ids end up inside DynamoDB keys such as `USER#<id>`, so the characters that the key design
//! uses as separators are refused here.

use std::fmt;

/// A user, as named by the identity provider's `sub` claim.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct UserId(String);

/// Why a string is not a valid id.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{what} must be 1 to {max} characters of letters, digits, '-', '_' or '.'")]
pub struct InvalidId {
    pub what: &'static str,
    pub max: usize,
}

const MAX_USER_ID: usize = 128;

impl UserId {
    pub fn parse(raw: &str) -> Result<Self, InvalidId> {
        let valid = !raw.is_empty()
            && raw.len() <= MAX_USER_ID
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if valid {
            Ok(Self(raw.to_owned()))
        } else {
            Err(InvalidId {
                what: "user id",
                max: MAX_USER_ID,
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cognito_subs_and_local_names_are_user_ids() {
        for raw in ["3f1c2d9e-8b7a-4c1e-9f00-123456789abc", "alice", "user_42.b"] {
            assert_eq!(UserId::parse(raw).unwrap().as_str(), raw);
        }
    }

    #[test]
    fn key_separators_empty_and_overlong_ids_are_refused() {
        for raw in ["", "a#b", "a b", "über", &"x".repeat(129)] {
            assert!(UserId::parse(raw).is_err(), "{raw:?} should be refused");
        }
    }
}
