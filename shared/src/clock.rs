//! Wall-clock time in the one format the API and the tables use: RFC 3339 UTC with exactly
//! six fractional digits.
//!
//! Fixed width matters: times are parts of sort keys (follow edges in the indexes,
//! notifications), and only strings of one length sort as text in time order
//! (`.1Z` would sort after `.19Z`).

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;

/// A time in the tables' format.
pub fn format(at: OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::UTC)
        .format(format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
        ))
        .expect("a UTC time always formats")
}

/// Now, in the tables' format.
pub fn now_rfc3339() -> String {
    format(OffsetDateTime::now_utc())
}

/// Now, in milliseconds since the Unix epoch (the reservations' `reservedAtMs`).
pub fn now_epoch_ms() -> i64 {
    epoch_ms(OffsetDateTime::now_utc())
}

/// Milliseconds since the Unix epoch: the unit of the sales' Redis copy, of the admission
/// script and of the reservations.
pub fn epoch_ms(at: OffsetDateTime) -> i64 {
    (at.unix_timestamp_nanos() / 1_000_000) as i64
}

/// The time `ms` milliseconds after the Unix epoch, if it is one `time` can hold.
pub fn from_epoch_ms(ms: i64) -> Option<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).ok()
}

/// Any RFC 3339 time (e.g. an event's `occurredAt`) in the tables' format.
pub fn normalize(rfc3339: &str) -> Option<String> {
    OffsetDateTime::parse(rfc3339, &Rfc3339).ok().map(format)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn epoch_milliseconds_go_both_ways() {
        let at = datetime!(2026-12-01 16:00:00.123 UTC);
        assert_eq!(epoch_ms(at), 1_796_140_800_123);
        assert_eq!(from_epoch_ms(1_796_140_800_123), Some(at));
        assert_eq!(from_epoch_ms(i64::MAX), None);
    }

    #[test]
    fn times_are_utc_with_six_digits_and_sort_as_text() {
        assert_eq!(
            format(datetime!(2026-11-30 19:00:00.5 +01:00)),
            "2026-11-30T18:00:00.500000Z"
        );
        assert!(
            format(datetime!(2026-11-30 18:00:00.1 UTC))
                < format(datetime!(2026-11-30 18:00:00.19 UTC))
        );
        assert_eq!(
            normalize("2026-11-30T19:00:00+01:00").as_deref(),
            Some("2026-11-30T18:00:00.000000Z")
        );
        assert_eq!(normalize("yesterday"), None);
    }
}
