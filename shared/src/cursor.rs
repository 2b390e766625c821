//! Paging of every list (followers, following, notifications, orders): the page size and
//! the opaque cursor.
//!
//! A cursor is the base64url (no padding) of the page's `LastEvaluatedKey` as a JSON object of
//! string attributes. Clients must treat it as opaque; every store checks that a cursor fits
//! the list it is used on with [`Cursor::check`], so a forged, garbled or foreign one is the
//! same 400 ([`InvalidCursor`]), never a 500 or another user's page.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
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
        // Canonical only: no padding, no stray trailing bits, so one cursor has one text.
        let bytes = URL_SAFE_NO_PAD.decode(raw).map_err(|_| InvalidCursor)?;
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
        URL_SAFE_NO_PAD.encode(json)
    }

    /// This cursor, if it was made for the list it came back to: exactly the attributes
    /// `names` (the table's and the index's keys of the page's last item) and `fits` holds
    /// of them (the list's partition, the shape of its sort key). Anything else was not made
    /// by us for this list: the one check of every store, so every refusal is the same error.
    pub fn check(
        &self,
        names: &[&str],
        fits: impl FnOnce(&Self) -> bool,
    ) -> Result<&Self, InvalidCursor> {
        let exact =
            self.0.len() == names.len() && names.iter().all(|name| self.0.contains_key(*name));
        if exact && fits(self) {
            Ok(self)
        } else {
            Err(InvalidCursor)
        }
    }

    pub fn attributes(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
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
        let encode = |json: &str| URL_SAFE_NO_PAD.encode(json);
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

    /// Cursors handed out before the `base64` crate replaced a hand-written codec: the same
    /// texts still decode, and the same pages still encode to them.
    #[test]
    fn cursors_of_the_hand_written_codec_still_decode_and_encode_alike() {
        let pairs = |pairs: &[(&str, &str)]| {
            Cursor::new(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        for (text, cursor) in [
            (
                "eyJnc2kxcGsiOiJGT0xMT1dFUlMjYm9iIiwiZ3NpMXNrIjoiMjAyNi0xMS0zMFQxODowMDowMC4wMDAwMDBaI2FkYSIsInBrIjoiVVNFUiNhZGEiLCJzayI6IkZPTExPV1MjYm9iIn0",
                pairs(&[
                    ("gsi1pk", "FOLLOWERS#bob"),
                    ("gsi1sk", "2026-11-30T18:00:00.000000Z#ada"),
                    ("pk", "USER#ada"),
                    ("sk", "FOLLOWS#bob"),
                ]),
            ),
            (
                "eyJwayI6Ik5PVElGSUNBVElPTlMjYm9iIiwic2siOiIyMDI2LTExLTMwVDE4OjAwOjAwLjAwMDAwMFojbjEifQ",
                pairs(&[
                    ("pk", "NOTIFICATIONS#bob"),
                    ("sk", "2026-11-30T18:00:00.000000Z#n1"),
                ]),
            ),
            ("eyJwayI6ImFiYyJ9", pairs(&[("pk", "abc")])),
        ] {
            assert_eq!(Cursor::parse(text).unwrap(), cursor, "{text}");
            assert_eq!(cursor.encode(), text);
        }
    }

    #[test]
    fn the_codec_is_unpadded_canonical_base64url() {
        let data: Vec<u8> = (0..=255).collect();
        for len in 0..40 {
            let text = URL_SAFE_NO_PAD.encode(&data[..len]);
            assert!(!text.contains('='), "{text}");
            assert_eq!(
                URL_SAFE_NO_PAD.decode(&text).unwrap(),
                &data[..len],
                "{len}"
            );
        }
        assert_eq!(URL_SAFE_NO_PAD.encode(b"\xfb\xff"), "-_8");
        assert_eq!(URL_SAFE_NO_PAD.encode(b"foobar"), "Zm9vYmFy");
        assert_eq!(URL_SAFE_NO_PAD.encode(b"fooba"), "Zm9vYmE");
        // Standard-alphabet characters, padding, a dangling character, non-zero trailing bits.
        for text in ["Z", "Zm9vY", "Zm+v", "Zm/v", "Zm9=", "Zh"] {
            assert!(URL_SAFE_NO_PAD.decode(text).is_err(), "{text}");
        }
    }

    #[test]
    fn a_cursor_fits_a_list_only_with_exactly_its_attributes_and_values() {
        let cursor = Cursor::new(BTreeMap::from([
            ("pk".to_owned(), "USER#a".to_owned()),
            ("sk".to_owned(), "X".to_owned()),
        ]));
        assert!(
            cursor
                .check(&["pk", "sk"], |c| c.get("pk") == Some("USER#a"))
                .is_ok()
        );
        assert_eq!(
            cursor.check(&["pk", "sk"], |c| c.get("pk") == Some("USER#b")),
            Err(InvalidCursor)
        );
        assert_eq!(cursor.check(&["pk"], |_| true), Err(InvalidCursor));
        assert_eq!(
            cursor.check(&["pk", "sk", "gsi1pk"], |_| true),
            Err(InvalidCursor)
        );
        assert_eq!(
            cursor.check(&["pk", "gsi1pk"], |_| true),
            Err(InvalidCursor)
        );
    }
}
