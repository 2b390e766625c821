//! The sale: its definition as operators create it, its lifecycle, and the state a buyer sees.
//!
//! Pure domain: parsing a new sale, and computing UPCOMING / ONGOING / SOLD_OUT / ENDED from
//! the window and the live stock. The ports are [`SaleStore`] (the definitions, DynamoDB) and
//! [`SaleCache`] (the preheated copy that buyers read, Redis).

pub mod dynamo;
#[cfg(test)]
pub(crate) mod fake;
pub mod page;
pub mod redis;
pub mod routes;
pub mod s3;
pub mod sqs;

// The sale's id is defined with every other id; re-exported here, where the load generator
// (loadtest/storm) imports it from.
pub use crate::ids::SaleId;
use crate::ids::{UserId, is_key_safe};
use crate::seckill::sale::page::{PageError, PageRequests};
use crate::text::{self, TextError};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

/// The body of `POST /seckill/activities`, as the client sent it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NewSaleDto {
    pub product_id: String,
    pub title: String,
    pub price_cents: i64,
    pub stock: i64,
    pub per_user_limit: i64,
    pub starts_at: String,
    pub ends_at: String,
    /// Only buyers who reserved (预约) may order.
    #[serde(default)]
    pub reservation_required: bool,
    /// When reservations open, before `startsAt`; required with `reservationRequired`.
    #[serde(default)]
    pub reservation_opens_at: Option<String>,
}

/// A sale definition that passed every check; only [`NewSale::parse`] makes one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSale {
    pub product_id: String,
    pub title: String,
    pub price_cents: u64,
    pub stock: u32,
    pub per_user_limit: u32,
    pub starts_at: OffsetDateTime,
    pub ends_at: OffsetDateTime,
    /// `Some(opens_at)`: only buyers who reserved between `opens_at` and `starts_at` may order.
    pub reservation_opens_at: Option<OffsetDateTime>,
}

/// Why a new sale was refused; the message is for the operator.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InvalidSale {
    #[error(
        "productId must be 1 to {max} characters of letters, digits, '-', '_' or '.'",
        max = NewSale::MAX_PRODUCT_ID
    )]
    ProductId,
    /// The rules of [`crate::text`].
    #[error(transparent)]
    Title(#[from] TextError),
    #[error("priceCents must be between 1 and {max}", max = NewSale::MAX_PRICE_CENTS)]
    Price,
    #[error("stock must be between 1 and {max}", max = NewSale::MAX_STOCK)]
    Stock,
    #[error("perUserLimit must be between 1 and the stock, and at most {max}", max = NewSale::MAX_PER_USER)]
    PerUserLimit,
    #[error("{0} must be an RFC 3339 time such as 2026-12-01T10:00:00Z")]
    Time(&'static str),
    #[error("endsAt must be after startsAt")]
    EmptyWindow,
    #[error("endsAt must be in the future")]
    AlreadyEnded,
    #[error("startsAt must be at most a year ahead")]
    TooFarAhead,
    #[error("a sale lasts at most a year: endsAt must be at most 365 days after startsAt")]
    WindowTooLong,
    #[error("reservationOpensAt is required when reservationRequired is true, and only then")]
    ReservationWindowMissing,
    #[error(
        "reservationOpensAt must be before startsAt, at most {max} days before it, and startsAt in the future",
        max = NewSale::MAX_RESERVATION_DAYS
    )]
    ReservationWindow,
}

fn parse_time(raw: &str, field: &'static str) -> Result<OffsetDateTime, InvalidSale> {
    OffsetDateTime::parse(raw.trim(), &Rfc3339).map_err(|_| InvalidSale::Time(field))
}

impl NewSale {
    pub const MAX_PRODUCT_ID: usize = 64;
    /// In characters (Unicode scalar values) after NFC.
    pub const MAX_TITLE: usize = 200;
    pub const MAX_PRICE_CENTS: i64 = 1_000_000_000;
    pub const MAX_STOCK: i64 = 1_000_000;
    pub const MAX_PER_USER: i64 = 100;
    /// How long before its start a sale may open reservations.
    pub const MAX_RESERVATION_DAYS: i64 = 30;

    /// Checks a client's sale against the rules, `now` being the time of the request.
    pub fn parse(dto: NewSaleDto, now: OffsetDateTime) -> Result<Self, InvalidSale> {
        let product_id = dto.product_id.trim();
        if !is_key_safe(product_id, Self::MAX_PRODUCT_ID) {
            return Err(InvalidSale::ProductId);
        }
        let title = text::clean("title", &dto.title, Self::MAX_TITLE)?;
        if !(1..=Self::MAX_PRICE_CENTS).contains(&dto.price_cents) {
            return Err(InvalidSale::Price);
        }
        if !(1..=Self::MAX_STOCK).contains(&dto.stock) {
            return Err(InvalidSale::Stock);
        }
        if !(1..=Self::MAX_PER_USER.min(dto.stock)).contains(&dto.per_user_limit) {
            return Err(InvalidSale::PerUserLimit);
        }
        let starts_at = parse_time(&dto.starts_at, "startsAt")?;
        let ends_at = parse_time(&dto.ends_at, "endsAt")?;
        if ends_at <= starts_at {
            return Err(InvalidSale::EmptyWindow);
        }
        if ends_at <= now {
            return Err(InvalidSale::AlreadyEnded);
        }
        if starts_at > now + Duration::days(365) {
            return Err(InvalidSale::TooFarAhead);
        }
        // Bounds how far in the past a sale that is still open may start, too.
        if ends_at - starts_at > Duration::days(365) {
            return Err(InvalidSale::WindowTooLong);
        }
        let reservation_opens_at = match (dto.reservation_required, dto.reservation_opens_at) {
            (false, None) => None,
            (true, Some(raw)) => {
                let opens_at = parse_time(&raw, "reservationOpensAt")?;
                // A sale that started already could never have been reserved.
                if opens_at >= starts_at
                    || starts_at - opens_at > Duration::days(Self::MAX_RESERVATION_DAYS)
                    || starts_at <= now
                {
                    return Err(InvalidSale::ReservationWindow);
                }
                Some(opens_at)
            }
            _ => return Err(InvalidSale::ReservationWindowMissing),
        };
        // The ranges above make these conversions lossless.
        Ok(Self {
            product_id: product_id.to_owned(),
            title,
            price_cents: dto.price_cents as u64,
            stock: dto.stock as u32,
            per_user_limit: dto.per_user_limit as u32,
            starts_at,
            ends_at,
            reservation_opens_at,
        })
    }
}

/// Where a sale is in its lifecycle: created as a draft, then published (preheated, visible),
/// then ended (by an operator before its end, or retired by reconciliation after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Lifecycle {
    Draft,
    Published,
    Ended,
}

impl Lifecycle {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "DRAFT",
            Self::Published => "PUBLISHED",
            Self::Ended => "ENDED",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "DRAFT" => Some(Self::Draft),
            "PUBLISHED" => Some(Self::Published),
            "ENDED" => Some(Self::Ended),
            _ => None,
        }
    }
}

/// A sale as stored: the definition, its lifecycle and DynamoDB's remaining stock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sale {
    pub id: SaleId,
    pub product_id: String,
    pub title: String,
    pub price_cents: u64,
    pub initial_stock: u32,
    pub stock_remaining: u32,
    pub per_user_limit: u32,
    pub starts_at: OffsetDateTime,
    pub ends_at: OffsetDateTime,
    pub state: Lifecycle,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// When reservations open; `None`: anyone may order, no reservation needed.
    pub reservation_opens_at: Option<OffsetDateTime>,
}

impl Sale {
    /// A draft of `new`, all its stock remaining.
    pub fn draft(id: SaleId, new: NewSale, created_at: String) -> Self {
        Self {
            id,
            product_id: new.product_id,
            title: new.title,
            price_cents: new.price_cents,
            initial_stock: new.stock,
            stock_remaining: new.stock,
            per_user_limit: new.per_user_limit,
            starts_at: new.starts_at,
            ends_at: new.ends_at,
            state: Lifecycle::Draft,
            created_at,
            reservation_opens_at: new.reservation_opens_at,
        }
    }
}

/// What a buyer sees of a sale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SaleState {
    Upcoming,
    Ongoing,
    SoldOut,
    Ended,
}

impl SaleState {
    /// The state at `now_ms` of a sale open in `[starts_at_ms, ends_at_ms)` with
    /// `stock_remaining` units left to reserve. An ended sale is ENDED even if sold out.
    pub fn at(starts_at_ms: i64, ends_at_ms: i64, stock_remaining: i64, now_ms: i64) -> Self {
        if now_ms >= ends_at_ms {
            Self::Ended
        } else if now_ms < starts_at_ms {
            Self::Upcoming
        } else if stock_remaining <= 0 {
            Self::SoldOut
        } else {
            Self::Ongoing
        }
    }
}

/// A published sale as the preheated cache holds it: what the detail page shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaleDetail {
    pub id: SaleId,
    pub product_id: String,
    pub title: String,
    pub price_cents: u64,
    pub per_user_limit: u32,
    pub starts_at_ms: i64,
    pub ends_at_ms: i64,
    /// The initial stock.
    pub stock: u32,
    /// Units left to reserve, live.
    pub stock_remaining: i64,
    /// When reservations open, if the sale requires one.
    pub reservation_opens_at_ms: Option<i64>,
    /// The buyers who reserved, live.
    pub reservations: u64,
}

impl SaleDetail {
    pub fn state(&self, now_ms: i64) -> SaleState {
        SaleState::at(
            self.starts_at_ms,
            self.ends_at_ms,
            self.stock_remaining,
            now_ms,
        )
    }
}

/// Why a store failed; the cause is for the log, never for the client.
#[derive(Debug, thiserror::Error)]
#[error("sale store failed")]
pub struct StoreError(#[from] pub anyhow::Error);

/// Where sale definitions live (DynamoDB). Never read on a buyer's path.
#[async_trait]
pub trait SaleStore: Send + Sync {
    /// Writes a new draft.
    async fn create(&self, sale: &Sale) -> Result<(), StoreError>;

    /// Moves a draft to PUBLISHED (and onto the live index); a published or ended sale stays
    /// as it is and is answered as it is. `None` if unknown.
    async fn publish(&self, id: &SaleId, now: &str) -> Result<Option<Sale>, StoreError>;

    async fn get(&self, id: &SaleId) -> Result<Option<Sale>, StoreError>;

    /// Every buyer who reserved (预约) sale `id`, as the durable reservation items say: what a
    /// preheat loads into the cache.
    async fn reserved(&self, id: &SaleId) -> Result<Vec<UserId>, StoreError>;
}

/// The preheated copy of published sales that buyers read (Redis).
#[async_trait]
pub trait SaleCache: Send + Sync {
    /// Writes the sale's details, and its stock from `stock_remaining` unless the stock is
    /// already there: a re-publish never resets live stock; adds `reserved` to the buyers
    /// the admission lets order when the sale requires a reservation.
    async fn preheat(&self, sale: &Sale, reserved: &[UserId]) -> Result<(), StoreError>;

    /// The details with the live stock, in one round trip; `None` if never preheated.
    async fn detail(&self, id: &SaleId) -> Result<Option<SaleDetail>, StoreError>;
}

/// Preheats `sale` with the buyers who reserved it (none read unless it requires a
/// reservation): what publishing and the failover's recovery do.
pub async fn preheat(
    store: &dyn SaleStore,
    cache: &dyn SaleCache,
    sale: &Sale,
) -> Result<(), StoreError> {
    let reserved = match sale.reservation_opens_at {
        Some(_) => store.reserved(&sale.id).await?,
        None => Vec::new(),
    };
    cache.preheat(sale, &reserved).await
}

/// Why a sale could not be published.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("no sale {0}")]
    NotFound(SaleId),
    /// Ended sales are never preheated again: that would reopen them.
    #[error("sale {0} has ended; it cannot be published again")]
    Ended(SaleId),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Published and preheated, but its detail page was not asked for.
    #[error(transparent)]
    Page(#[from] PageError),
}

/// Publishes a sale, preheats the cache, then asks for its detail page (the page writer
/// renders it from the table); publishing again preheats again and rewrites the page, which is how an operator repairs a cache that lost
/// the details or a page that was not written (the live stock is never reset).
#[tracing::instrument(level = "debug", skip(store, cache, pages))]
pub async fn publish(
    store: &dyn SaleStore,
    cache: &dyn SaleCache,
    pages: &dyn PageRequests,
    id: &SaleId,
    now: &str,
) -> Result<Sale, PublishError> {
    let sale = store
        .publish(id, now)
        .await?
        .ok_or_else(|| PublishError::NotFound(id.clone()))?;
    if sale.state == Lifecycle::Ended {
        return Err(PublishError::Ended(sale.id));
    }
    preheat(store, cache, &sale).await?;
    pages.request(&sale.id).await?;
    Ok(sale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seckill::sale::fake::MemoryPageRequests;
    use crate::text::Rule;
    use std::sync::atomic::Ordering;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-11-30 18:00 UTC);

    fn dto() -> NewSaleDto {
        NewSaleDto {
            product_id: "sku-1".to_owned(),
            title: "  Phone  ".to_owned(),
            price_cents: 19_900,
            stock: 100,
            per_user_limit: 2,
            starts_at: "2026-12-01T10:00:00+01:00".to_owned(),
            ends_at: "2026-12-01T11:00:00+01:00".to_owned(),
            reservation_required: false,
            reservation_opens_at: None,
        }
    }

    #[test]
    fn a_valid_sale_is_parsed_and_trimmed() {
        let sale = NewSale::parse(dto(), NOW).unwrap();
        assert_eq!(sale.title, "Phone");
        assert_eq!(sale.stock, 100);
        assert_eq!(sale.starts_at, datetime!(2026-12-01 09:00 UTC));
    }

    fn title_length() -> InvalidSale {
        InvalidSale::Title(TextError::Length {
            field: "title",
            max: NewSale::MAX_TITLE,
        })
    }

    fn title_refused(ch: char, rule: Rule) -> InvalidSale {
        InvalidSale::Title(TextError::Refused {
            field: "title",
            ch,
            rule,
        })
    }

    #[test]
    fn a_title_is_stored_in_nfc_and_may_be_in_any_script() {
        for (raw, stored) in [
            ("Cafe\u{301} crème", "Café crème"),
            ("限时抢购 手机", "限时抢购 手机"),
            ("📱 Phone ✨", "📱 Phone ✨"),
        ] {
            let mut d = dto();
            d.title = raw.into();
            assert_eq!(NewSale::parse(d, NOW).unwrap().title, stored);
        }
    }

    #[test]
    fn every_rule_is_checked_with_its_own_message() {
        type Change = Box<dyn Fn(&mut NewSaleDto)>;
        // A sale open from `starts` to `ends`.
        let window = |starts: &'static str, ends: &'static str| -> Change {
            Box::new(move |d| {
                d.starts_at = starts.into();
                d.ends_at = ends.into();
            })
        };
        let cases: Vec<(Change, InvalidSale)> = vec![
            (
                Box::new(|d| d.product_id = " ".into()),
                InvalidSale::ProductId,
            ),
            (
                Box::new(|d| d.product_id = "a#b".into()),
                InvalidSale::ProductId,
            ),
            (
                Box::new(|d| d.product_id = "x".repeat(65)),
                InvalidSale::ProductId,
            ),
            (Box::new(|d| d.title = "".into()), title_length()),
            (
                Box::new(|d| d.title = "a\nb".into()),
                title_refused('\n', Rule::Control),
            ),
            (Box::new(|d| d.title = "é".repeat(201)), title_length()),
            (
                Box::new(|d| d.title = "Phone\u{202E}1 x".into()),
                title_refused('\u{202E}', Rule::Format),
            ),
            (
                Box::new(|d| d.title = "\u{2800}\u{2800}".into()),
                title_refused('\u{2800}', Rule::Filler),
            ),
            (Box::new(|d| d.price_cents = 0), InvalidSale::Price),
            (
                Box::new(|d| d.price_cents = 1_000_000_001),
                InvalidSale::Price,
            ),
            (Box::new(|d| d.stock = 0), InvalidSale::Stock),
            (Box::new(|d| d.stock = 1_000_001), InvalidSale::Stock),
            (
                Box::new(|d| d.per_user_limit = 0),
                InvalidSale::PerUserLimit,
            ),
            (
                Box::new(|d| d.per_user_limit = 101),
                InvalidSale::PerUserLimit,
            ),
            (
                Box::new(|d| {
                    d.stock = 3;
                    d.per_user_limit = 4;
                }),
                InvalidSale::PerUserLimit,
            ),
            (
                Box::new(|d| d.starts_at = "tomorrow".into()),
                InvalidSale::Time("startsAt"),
            ),
            (
                Box::new(|d| d.ends_at = "2026-12-01".into()),
                InvalidSale::Time("endsAt"),
            ),
            (
                Box::new(|d| d.ends_at = d.starts_at.clone()),
                InvalidSale::EmptyWindow,
            ),
            (
                window("2026-11-30T16:00:00Z", "2026-11-30T18:00:00Z"),
                InvalidSale::AlreadyEnded,
            ),
            (
                window("2027-12-01T10:00:00Z", "2027-12-01T11:00:00Z"),
                InvalidSale::TooFarAhead,
            ),
            (
                Box::new(|d| d.ends_at = "9999-12-31T23:59:59Z".into()),
                InvalidSale::WindowTooLong,
            ),
            (
                Box::new(|d| d.starts_at = "0001-01-01T00:00:00Z".into()),
                InvalidSale::WindowTooLong,
            ),
            (
                window("1970-01-01T00:00:00Z", "1970-01-02T00:00:00Z"),
                InvalidSale::AlreadyEnded,
            ),
            (
                Box::new(|d| d.ends_at = "+10000-01-01T00:00:00Z".into()),
                InvalidSale::Time("endsAt"),
            ),
        ];
        for (change, expected) in cases {
            let mut d = dto();
            change(&mut d);
            assert_eq!(NewSale::parse(d, NOW), Err(expected));
        }
    }

    #[test]
    fn a_sale_that_already_started_may_be_created() {
        let mut d = dto();
        d.starts_at = "2026-11-30T17:00:00Z".into();
        assert!(NewSale::parse(d, NOW).is_ok());
    }

    #[test]
    fn a_reservation_window_opens_before_a_start_still_ahead() {
        let reserving = |opens_at: Option<&str>| {
            let mut d = dto();
            d.reservation_required = true;
            d.reservation_opens_at = opens_at.map(str::to_owned);
            NewSale::parse(d, NOW)
        };
        let sale = reserving(Some("2026-11-30T20:00:00Z")).unwrap();
        assert_eq!(
            sale.reservation_opens_at,
            Some(datetime!(2026-11-30 20:00 UTC))
        );
        for opens_at in [
            // At or after the start; a month and more before it.
            "2026-12-01T09:00:00Z",
            "2026-12-01T09:30:00Z",
            "2026-10-01T09:00:00Z",
        ] {
            assert_eq!(
                reserving(Some(opens_at)),
                Err(InvalidSale::ReservationWindow)
            );
        }
        assert_eq!(reserving(None), Err(InvalidSale::ReservationWindowMissing));
        assert_eq!(
            reserving(Some("soon")),
            Err(InvalidSale::Time("reservationOpensAt"))
        );
        let mut d = dto();
        d.reservation_opens_at = Some("2026-11-30T20:00:00Z".into());
        assert_eq!(
            NewSale::parse(d, NOW),
            Err(InvalidSale::ReservationWindowMissing)
        );
        // A sale that started already could not have been reserved by anyone.
        let mut d = dto();
        d.reservation_required = true;
        d.reservation_opens_at = Some("2026-11-30T10:00:00Z".into());
        d.starts_at = "2026-11-30T17:00:00Z".into();
        assert_eq!(NewSale::parse(d, NOW), Err(InvalidSale::ReservationWindow));
    }

    #[test]
    fn the_state_follows_the_window_then_the_stock() {
        let (start, end) = (1_000, 2_000);
        assert_eq!(SaleState::at(start, end, 5, 999), SaleState::Upcoming);
        assert_eq!(SaleState::at(start, end, 5, 1_000), SaleState::Ongoing);
        assert_eq!(SaleState::at(start, end, 0, 1_500), SaleState::SoldOut);
        assert_eq!(SaleState::at(start, end, 0, 2_000), SaleState::Ended);
        assert_eq!(SaleState::at(start, end, 5, 2_000), SaleState::Ended);
    }

    #[tokio::test]
    async fn publishing_preheats_and_a_second_publish_keeps_the_live_stock() {
        let sales = fake::MemorySales::default();
        let sale = Sale::draft(
            SaleId::generate(),
            NewSale::parse(dto(), NOW).unwrap(),
            "t".into(),
        );
        sales.create(&sale).await.unwrap();
        let pages = MemoryPageRequests::default();
        let published = publish(&sales, &sales, &pages, &sale.id, "t")
            .await
            .unwrap();
        assert_eq!(published.state, Lifecycle::Published);
        assert_eq!(
            pages.requested.lock().unwrap().as_slice(),
            std::slice::from_ref(&sale.id)
        );
        sales
            .cached
            .lock()
            .unwrap()
            .get_mut(&sale.id)
            .unwrap()
            .stock_remaining = 7;
        publish(&sales, &sales, &pages, &sale.id, "t")
            .await
            .unwrap();
        let detail = sales.detail(&sale.id).await.unwrap().unwrap();
        assert_eq!(detail.stock_remaining, 7);
        assert!(matches!(
            publish(&sales, &sales, &pages, &SaleId::generate(), "t").await,
            Err(PublishError::NotFound(_))
        ));
    }

    #[tokio::test]
    async fn a_page_that_cannot_be_written_fails_the_publish_and_publishing_again_writes_it() {
        let sales = fake::MemorySales::default();
        let sale = Sale::draft(
            SaleId::generate(),
            NewSale::parse(dto(), NOW).unwrap(),
            "t".into(),
        );
        sales.create(&sale).await.unwrap();
        let pages = MemoryPageRequests::default();
        pages.fail.store(true, Ordering::SeqCst);
        assert!(matches!(
            publish(&sales, &sales, &pages, &sale.id, "t").await,
            Err(PublishError::Page(_))
        ));
        pages.fail.store(false, Ordering::SeqCst);
        publish(&sales, &sales, &pages, &sale.id, "t")
            .await
            .unwrap();
        assert_eq!(
            pages.requested.lock().unwrap().as_slice(),
            std::slice::from_ref(&sale.id)
        );
    }
}
