//! Wall-clock time in the one format the API and the tables use: RFC 3339, UTC.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Now, as RFC 3339 in UTC with sub-second digits, so that it also sorts as text.
pub fn now_rfc3339() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .expect("the current UTC time always formats as RFC 3339")
}
