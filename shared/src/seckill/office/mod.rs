//! The operators' back office and the home page's listing: every sale newest first, a draft
//! edited, a sale ended early, and the live sales as buyers find them.
//!
//! Every read here is keyed (the commerce table's sale indexes, [`crate::seckill::sale::dynamo`]): the
//! back office's list is the partition of every sale, the listing the sparse partition of the
//! live ones.
//!
//! **Ending a sale early.** DynamoDB first (the sale's definition is the source of truth: its
//! `endsAt` becomes the moment it was ended, its state ENDED), then Redis, in one atomic step
//! ([`SaleCloser::close`], `end.lua`): from then on the admission script answers `ENDED`. An
//! order admitted before that step keeps its reservation, is materialized by the order
//! consumer and can be paid as any other. Whatever later preheats the sale again (a failover,
//! a publish, which is refused for an ended sale anyway) reads the new `endsAt` and the ENDED
//! state, so it never reopens. Ending again is idempotent and closes Redis again, which is how
//! an operator repairs an end whose Redis step failed.

pub mod dynamo;
#[cfg(test)]
pub(crate) mod fake;
pub mod figures;
pub mod redis;
pub mod routes;

use crate::clock::epoch_ms;
use crate::cursor::{Cursor, InvalidCursor, PageLimit};
use crate::ids::SaleId;
use crate::seckill::sale::{
    InvalidSale, Lifecycle, NewSale, NewSaleDto, Sale, SaleState, StoreError,
};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// A page of sales, newest first.
#[derive(Debug)]
pub struct SalePage {
    pub items: Vec<Sale>,
    pub next: Option<Cursor>,
}

/// What ending a sale found in the table.
#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    /// Ended now by this call: its `endsAt` is now.
    Ended(Sale),
    /// Ended before (by an operator, or retired after its end).
    AlreadyEnded(Sale),
    /// Published, but its window closed on its own already.
    Over(Sale),
    /// Still a draft: nothing to end.
    Draft,
    Unknown,
}

/// The back office's view of the sales' definitions (DynamoDB).
#[async_trait]
pub trait SaleOffice: Send + Sync {
    /// Every sale newest first, drafts included, only those in `state` if given.
    async fn page(
        &self,
        state: Option<Lifecycle>,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<SalePage, OfficeError>;

    /// The live sales (published, not yet retired), eventually consistent.
    async fn live(&self) -> Result<Vec<Sale>, StoreError>;

    /// Replaces the definition of `sale`, a draft, if it still is one; `false` when it is not.
    async fn replace_draft(&self, sale: &Sale) -> Result<bool, StoreError>;

    /// PUBLISHED and not yet over → ENDED, its `endsAt` now.
    async fn end(&self, id: &SaleId, now: OffsetDateTime) -> Result<Ending, StoreError>;

    async fn get(&self, id: &SaleId) -> Result<Option<Sale>, StoreError>;

    /// How many buyers reserved (预约) sale `id`, as the durable reservations say.
    async fn reservations(&self, id: &SaleId) -> Result<u64, StoreError>;
}

/// Where admissions are stopped (Redis).
#[async_trait]
pub trait SaleCloser: Send + Sync {
    /// Stops every admission of sale `id` at once and brings its end forward to `ends_at_ms`
    /// (never later); nothing happens to a sale the cache does not hold.
    async fn close(&self, id: &SaleId, ends_at_ms: i64) -> Result<(), StoreError>;
}

/// Why a back-office action was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum OfficeError {
    #[error(transparent)]
    Cursor(#[from] InvalidCursor),
    #[error("no sale {0}")]
    NotFound(SaleId),
    #[error("sale {0} is {1}; only a draft can be edited")]
    NotDraft(SaleId, &'static str),
    #[error("sale {0} is a draft; publish it, or just leave it, rather than end it")]
    NotPublished(SaleId),
    #[error("sale {0} already ended at {1}")]
    AlreadyOver(SaleId, String),
    #[error(transparent)]
    Invalid(#[from] InvalidSale),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The body of `PATCH /seckill/activities/{id}`: the fields to change, each optional.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SaleEditDto {
    pub product_id: Option<String>,
    pub title: Option<String>,
    pub price_cents: Option<i64>,
    pub stock: Option<i64>,
    pub per_user_limit: Option<i64>,
    pub starts_at: Option<String>,
    pub ends_at: Option<String>,
    pub reservation_required: Option<bool>,
    /// `null` clears it (with `reservationRequired: false`).
    #[serde(default, deserialize_with = "present")]
    pub reservation_opens_at: Option<Option<String>>,
}

/// A field that is present, `null` included, as `Some`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

impl SaleEditDto {
    fn is_empty(&self) -> bool {
        self.product_id.is_none()
            && self.title.is_none()
            && self.price_cents.is_none()
            && self.stock.is_none()
            && self.per_user_limit.is_none()
            && self.starts_at.is_none()
            && self.ends_at.is_none()
            && self.reservation_required.is_none()
            && self.reservation_opens_at.is_none()
    }
}

/// `draft` with `edit` applied, checked by the rules of a new sale as of `now`.
pub fn edited(draft: &Sale, edit: SaleEditDto, now: OffsetDateTime) -> Result<Sale, InvalidSale> {
    let dto = NewSaleDto {
        product_id: edit.product_id.unwrap_or_else(|| draft.product_id.clone()),
        title: edit.title.unwrap_or_else(|| draft.title.clone()),
        price_cents: edit
            .price_cents
            .unwrap_or(i64::try_from(draft.price_cents).unwrap_or(i64::MAX)),
        stock: edit.stock.unwrap_or(i64::from(draft.initial_stock)),
        per_user_limit: edit
            .per_user_limit
            .unwrap_or(i64::from(draft.per_user_limit)),
        starts_at: edit
            .starts_at
            .unwrap_or_else(|| crate::clock::format(draft.starts_at)),
        ends_at: edit
            .ends_at
            .unwrap_or_else(|| crate::clock::format(draft.ends_at)),
        reservation_required: edit
            .reservation_required
            .unwrap_or(draft.reservation_opens_at.is_some()),
        reservation_opens_at: match (edit.reservation_opens_at, edit.reservation_required) {
            (Some(opens_at), _) => opens_at,
            (None, Some(false)) => None,
            (None, _) => draft.reservation_opens_at.map(crate::clock::format),
        },
    };
    let new = NewSale::parse(dto, now)?;
    Ok(Sale::draft(draft.id.clone(), new, draft.created_at.clone()))
}

/// Edits a draft; a published or ended sale is refused (its stock is in Redis, its page
/// written, buyers may hold it).
pub async fn edit_draft(
    store: &dyn SaleOffice,
    id: &SaleId,
    edit: SaleEditDto,
    now: OffsetDateTime,
) -> Result<Sale, OfficeError> {
    let current = store
        .get(id)
        .await?
        .ok_or_else(|| OfficeError::NotFound(id.clone()))?;
    if current.state != Lifecycle::Draft {
        return Err(OfficeError::NotDraft(id.clone(), current.state.as_str()));
    }
    if edit.is_empty() {
        return Ok(current);
    }
    let sale = edited(&current, edit, now)?;
    if !store.replace_draft(&sale).await? {
        // Published (or deleted) between the read and the write.
        let state = store.get(id).await?.map(|sale| sale.state);
        return Err(match state {
            Some(state) => OfficeError::NotDraft(id.clone(), state.as_str()),
            None => OfficeError::NotFound(id.clone()),
        });
    }
    Ok(sale)
}

/// Ends a published sale now ([module](self)); answers it as ended. Idempotent.
pub async fn end_sale(
    store: &dyn SaleOffice,
    cache: &dyn SaleCloser,
    id: &SaleId,
    now: OffsetDateTime,
) -> Result<Sale, OfficeError> {
    let sale = match store.end(id, now).await? {
        Ending::Ended(sale) | Ending::AlreadyEnded(sale) => sale,
        Ending::Over(sale) => {
            return Err(OfficeError::AlreadyOver(
                id.clone(),
                crate::clock::format(sale.ends_at),
            ));
        }
        Ending::Draft => return Err(OfficeError::NotPublished(id.clone())),
        Ending::Unknown => return Err(OfficeError::NotFound(id.clone())),
    };
    cache.close(&sale.id, epoch_ms(sale.ends_at)).await?;
    tracing::info!(sale_id = %sale.id, ends_at = %crate::clock::format(sale.ends_at), "sale ended early");
    Ok(sale)
}

/// One live sale as the home page lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Listed {
    pub id: SaleId,
    pub title: String,
    pub price_cents: u64,
    pub starts_at: String,
    pub ends_at: String,
    pub stock: u32,
    /// DynamoDB's units left (confirmed orders taken): the detail page has the live figure.
    pub stock_remaining: u32,
    pub state: SaleState,
}

/// The home page's listing of `live` sales at `now_ms`: soonest start first; an ended sale
/// (early or not) is ENDED, the others by their window and DynamoDB's stock.
pub fn listing(mut live: Vec<Sale>, now_ms: i64) -> Vec<Listed> {
    live.sort_by(|a, b| (a.starts_at, &a.created_at).cmp(&(b.starts_at, &b.created_at)));
    live.into_iter()
        .filter(|sale| sale.state != Lifecycle::Draft)
        .map(|sale| {
            let state = if sale.state == Lifecycle::Ended {
                SaleState::Ended
            } else {
                SaleState::at(
                    epoch_ms(sale.starts_at),
                    epoch_ms(sale.ends_at),
                    i64::from(sale.stock_remaining),
                    now_ms,
                )
            };
            Listed {
                id: sale.id,
                title: sale.title,
                price_cents: sale.price_cents,
                starts_at: crate::clock::format(sale.starts_at),
                ends_at: crate::clock::format(sale.ends_at),
                stock: sale.initial_stock,
                stock_remaining: sale.stock_remaining,
                state,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::fake::MemoryOffice;
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-12-01 10:30 UTC);

    fn sale(state: Lifecycle, created_at: &str) -> Sale {
        let new = NewSale {
            product_id: "sku".into(),
            title: "Lamp".into(),
            price_cents: 990,
            stock: 10,
            per_user_limit: 2,
            starts_at: datetime!(2026-12-01 10:00 UTC),
            ends_at: datetime!(2026-12-01 11:00 UTC),
            reservation_opens_at: None,
        };
        let mut sale = Sale::draft(SaleId::generate(), new, created_at.into());
        sale.state = state;
        sale
    }

    fn office_with(sales: &[&Sale]) -> MemoryOffice {
        let office = MemoryOffice::default();
        for sale in sales {
            let mut map = office.sales.sales.lock().unwrap();
            map.insert(sale.id.clone(), (*sale).clone());
        }
        office
    }

    #[tokio::test]
    async fn a_draft_is_edited_by_the_rules_of_a_new_sale_and_nothing_else_is() {
        let draft = sale(Lifecycle::Draft, "a");
        let live = sale(Lifecycle::Published, "b");
        let office = office_with(&[&draft, &live]);
        let edit = SaleEditDto {
            title: Some(" Desk lamp ".into()),
            stock: Some(20),
            ..SaleEditDto::default()
        };
        let edited = edit_draft(&office, &draft.id, edit, NOW).await.unwrap();
        assert_eq!(edited.title, "Desk lamp");
        assert_eq!((edited.initial_stock, edited.stock_remaining), (20, 20));
        assert_eq!(edited.price_cents, 990, "unchanged fields are kept");
        assert_eq!(office.get(&draft.id).await.unwrap(), Some(edited));

        let bad = SaleEditDto {
            per_user_limit: Some(50),
            ..SaleEditDto::default()
        };
        assert!(matches!(
            edit_draft(&office, &draft.id, bad, NOW).await,
            Err(OfficeError::Invalid(InvalidSale::PerUserLimit))
        ));
        let title = SaleEditDto {
            title: Some("x".into()),
            ..SaleEditDto::default()
        };
        assert!(matches!(
            edit_draft(&office, &live.id, title.clone(), NOW).await,
            Err(OfficeError::NotDraft(_, "PUBLISHED"))
        ));
        assert!(matches!(
            edit_draft(&office, &SaleId::generate(), title, NOW).await,
            Err(OfficeError::NotFound(_))
        ));
    }

    #[tokio::test]
    async fn ending_closes_redis_at_the_new_end_and_again_changes_nothing_else() {
        let live = sale(Lifecycle::Published, "a");
        let draft = sale(Lifecycle::Draft, "b");
        let office = office_with(&[&live, &draft]);

        let ended = end_sale(&office, &office, &live.id, NOW).await.unwrap();
        assert_eq!(ended.state, Lifecycle::Ended);
        assert_eq!(ended.ends_at, NOW);
        let again = end_sale(&office, &office, &live.id, NOW + time::Duration::minutes(1))
            .await
            .unwrap();
        assert_eq!(again.ends_at, NOW, "the first end stands");
        assert_eq!(
            office.closed.lock().unwrap().as_slice(),
            [
                (live.id.clone(), epoch_ms(NOW)),
                (live.id.clone(), epoch_ms(NOW))
            ]
        );

        assert!(matches!(
            end_sale(&office, &office, &draft.id, NOW).await,
            Err(OfficeError::NotPublished(_))
        ));
        let over = sale(Lifecycle::Published, "c");
        let office = office_with(&[&over]);
        let late = datetime!(2026-12-01 12:00 UTC);
        assert!(matches!(
            end_sale(&office, &office, &over.id, late).await,
            Err(OfficeError::AlreadyOver(..))
        ));
        assert!(office.closed.lock().unwrap().is_empty());
    }

    #[test]
    fn the_listing_marks_each_sale_by_its_window_its_stock_and_an_early_end() {
        let mut upcoming = sale(Lifecycle::Published, "a");
        upcoming.starts_at = datetime!(2026-12-01 12:00 UTC);
        upcoming.ends_at = datetime!(2026-12-01 13:00 UTC);
        let ongoing = sale(Lifecycle::Published, "b");
        let mut sold_out = sale(Lifecycle::Published, "c");
        sold_out.stock_remaining = 0;
        let mut ended = sale(Lifecycle::Ended, "d");
        ended.ends_at = datetime!(2026-12-01 10:20 UTC);
        let listed = listing(
            vec![upcoming.clone(), ended, sold_out, ongoing],
            epoch_ms(NOW),
        );
        let states: Vec<_> = listed.iter().map(|l| l.state).collect();
        assert_eq!(
            states,
            [
                SaleState::Ongoing,
                SaleState::SoldOut,
                SaleState::Ended,
                SaleState::Upcoming
            ]
        );
        assert_eq!(listed[3].id, upcoming.id);
        assert_eq!(listed[3].starts_at, "2026-12-01T12:00:00.000000Z");
    }
}
