//! The order queue's seal: the order route signs each `OrderPlaced` body it sends with a key
//! that only it and the order consumer may read (`OrderSealSecret`), and the signature travels
//! in the message attribute [`SEAL_ATTRIBUTE`]. The consumer takes a message's word only under
//! a seal that verifies; without one, it materializes only what the reservation in Redis
//! holds (see [`crate::seckill::order::consumer`]).
//!
//! Why a seal beside the queue's policy and Redis: the policy stops every other principal of
//! the account, but not a role that is later granted too much; Redis holds each reservation
//! until it is materialized, but forgets every one of them when it loses its data, and an
//! order admitted just before that loss must still be confirmed if DynamoDB's stock allows it.
//! The seal lets the consumer tell that order from a forged one.

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::borrow::Cow;

/// The message attribute holding a body's seal.
pub const SEAL_ATTRIBUTE: &str = "seal";

/// The variable naming the secret that holds the seal's key.
pub const ORDER_SEAL_SECRET_ARN: &str = "ORDER_SEAL_SECRET_ARN";

/// The key that seals order messages (HMAC-SHA256 over the body, base64 without padding).
#[derive(Clone)]
pub struct Seal(Cow<'static, [u8]>);

static TESTS: Seal = Seal(Cow::Borrowed(b"the tests' order seal key"));

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seal(..)")
    }
}

impl Seal {
    /// A key of at least 16 bytes (a shorter one is a configuration error).
    pub fn new(key: impl Into<Vec<u8>>) -> Option<Self> {
        let key = key.into();
        (key.len() >= 16).then_some(Self(Cow::Owned(key)))
    }

    fn mac(&self, body: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes keys of any length");
        mac.update(body.as_bytes());
        mac
    }

    /// The seal of `body`.
    pub fn sign(&self, body: &str) -> String {
        base64::engine::general_purpose::STANDARD_NO_PAD
            .encode(self.mac(body).finalize().into_bytes())
    }

    /// Whether `seal` is `body`'s, compared in constant time.
    pub fn verifies(&self, body: &str, seal: &str) -> bool {
        base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(seal.trim())
            .is_ok_and(|tag| self.mac(body).verify_slice(&tag).is_ok())
    }

    /// The key the unit and emulator tests seal with.
    pub fn for_tests() -> &'static Self {
        &TESTS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_verifies_only_its_own_body_under_its_own_key() {
        let seal = Seal::for_tests();
        let body = r#"{"type":"OrderPlaced"}"#;
        let signed = seal.sign(body);
        assert!(seal.verifies(body, &signed));
        assert!(!seal.verifies(r#"{"type":"OrderPlaced" }"#, &signed));
        assert!(!seal.verifies(body, "not base64!"));
        assert!(!seal.verifies(body, ""));
        let other = Seal::new(b"another key of sixteen bytes".to_vec()).unwrap();
        assert!(!other.verifies(body, &signed));
        assert!(Seal::new(b"too short".to_vec()).is_none());
        assert_eq!(format!("{seal:?}"), "Seal(..)");
    }
}
