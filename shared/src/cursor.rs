//! Paging of every list (followers, following, notifications, orders): the page size and
//! the opaque cursor.
//!
//! A cursor is the base64url (no padding) of the page's `LastEvaluatedKey` as a JSON object of
//! string attributes. Clients must treat it as opaque; the store checks that a cursor fits the
//! list it is used on, so a forged or garbled one is a 400, never a 500 or another user's page.

use std::collections::BTreeMap;

/// How many items a page holds: 1 to 100, 20 when not asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLimit(u32);

/// Why a `limit` was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("limit must be an integer from 1 to {max}", max = PageLimit::MAX)]
pub struct InvalidLimit;

impl PageLimit {
    pub const DEFAULT: u32 = 20;
    pub const MAX: u32 = 100;

    /// The `limit` query parameter, if any.
    pub fn parse(raw: Option<&str>) -> Result<Self, InvalidLimit> {
        let Some(raw) = raw else {
            return Ok(Self(Self::DEFAULT));
        };
        match raw.trim().parse::<u32>() {
            Ok(limit) if (1..=Self::MAX).contains(&limit) => Ok(Self(limit)),
            _ => Err(InvalidLimit),
        }
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for PageLimit {
    fn default() -> Self {
        Self(Self::DEFAULT)
    }
}

/// Where the next page starts: the key attributes of the last item of the previous page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor(BTreeMap<String, String>);

/// Why a cursor was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("cursor is invalid; pass back the nextCursor of the previous page unchanged")]
pub struct InvalidCursor;

/// Far more than any key of ours takes; a bound so that a huge query string costs nothing.
const MAX_CURSOR_CHARS: usize = 2048;

impl Cursor {
    pub fn new(attributes: BTreeMap<String, String>) -> Self {
        Self(attributes)
    }

    /// A cursor as a client sent it back.
    pub fn parse(raw: &str) -> Result<Self, InvalidCursor> {
        if raw.is_empty() || raw.len() > MAX_CURSOR_CHARS {
            return Err(InvalidCursor);
        }
        let bytes = base64url::decode(raw).ok_or(InvalidCursor)?;
        let attributes: BTreeMap<String, String> =
            serde_json::from_slice(&bytes).map_err(|_| InvalidCursor)?;
        if attributes.is_empty() {
            return Err(InvalidCursor);
        }
        Ok(Self(attributes))
    }

    /// The text to hand to the client.
    pub fn encode(&self) -> String {
        // A map of strings always serializes.
        let json = serde_json::to_vec(&self.0).expect("a string map serializes");
        base64url::encode(&json)
    }

    pub fn attributes(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

/// Base64url without padding (RFC 4648 §5), the alphabet that is safe in a query string.
mod base64url {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    pub(super) fn encode(bytes: &[u8]) -> String {
        let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                chunk.get(1).copied().unwrap_or(0),
                chunk.get(2).copied().unwrap_or(0),
            ];
            let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
            for i in 0..=chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
        }
        out
    }

    pub(super) fn decode(text: &str) -> Option<Vec<u8>> {
        let sextet =
            |c: u8| -> Option<u32> { ALPHABET.iter().position(|&a| a == c).map(|i| i as u32) };
        let text = text.as_bytes();
        if text.len() % 4 == 1 {
            return None;
        }
        let mut out = Vec::with_capacity(text.len() * 3 / 4);
        for chunk in text.chunks(4) {
            let mut n = 0u32;
            for (i, &c) in chunk.iter().enumerate() {
                n |= sextet(c)? << (18 - 6 * i);
            }
            let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            let len = chunk.len() - 1;
            // Non-canonical trailing bits would let two texts mean one cursor: refuse them.
            if len < 3 && n & ((1 << (8 * (3 - len))) - 1) != 0 {
                return None;
            }
            out.extend_from_slice(&bytes[..len]);
        }
        Some(out)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn round_trips_every_length() {
            let data: Vec<u8> = (0..=255).collect();
            for len in 0..40 {
                let text = encode(&data[..len]);
                assert!(!text.contains('='), "{text}");
                assert_eq!(decode(&text).unwrap(), &data[..len], "{len}");
            }
            assert_eq!(encode(b"\xfb\xff"), "-_8");
        }

        #[test]
        fn known_vectors() {
            assert_eq!(encode(b"foobar"), "Zm9vYmFy");
            assert_eq!(encode(b"fooba"), "Zm9vYmE");
            assert_eq!(encode(b"f"), "Zg");
            assert_eq!(decode("Zm9vYg").unwrap(), b"foob");
        }

        #[test]
        fn garbage_is_refused() {
            for text in ["Z", "Zm9vY", "Zm+v", "Zm/v", "Zm9=", "Zh"] {
                assert!(decode(text).is_none(), "{text}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_limit_is_20_and_the_bounds_are_1_and_100() {
        assert_eq!(PageLimit::parse(None).unwrap().get(), 20);
        assert_eq!(PageLimit::parse(Some("1")).unwrap().get(), 1);
        assert_eq!(PageLimit::parse(Some("100")).unwrap().get(), 100);
        for raw in ["0", "101", "-1", "ten", "", "1.5", "99999999999"] {
            assert_eq!(PageLimit::parse(Some(raw)), Err(InvalidLimit), "{raw:?}");
        }
        assert_eq!(
            InvalidLimit.to_string(),
            "limit must be an integer from 1 to 100"
        );
    }

    #[test]
    fn a_cursor_round_trips_through_its_text() {
        let cursor = Cursor::new(BTreeMap::from([
            ("pk".to_owned(), "USER#a".to_owned()),
            ("sk".to_owned(), "FOLLOWS#b".to_owned()),
        ]));
        let text = cursor.encode();
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{text}"
        );
        assert_eq!(Cursor::parse(&text).unwrap(), cursor);
        assert_eq!(Cursor::parse(&text).unwrap().get("pk"), Some("USER#a"));
    }

    #[test]
    fn garbage_and_non_string_cursors_are_refused() {
        let encode = |json: &str| base64url::encode(json.as_bytes());
        for raw in [
            String::new(),
            "not base64!".to_owned(),
            encode("not json"),
            encode("[]"),
            encode("{}"),
            encode(r#"{"pk": 1}"#),
            encode(r#"{"pk": {"S": "USER#a"}}"#),
            "A".repeat(MAX_CURSOR_CHARS + 1),
        ] {
            assert_eq!(Cursor::parse(&raw), Err(InvalidCursor), "{raw:?}");
        }
    }
}
