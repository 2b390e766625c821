//! Reservations (预约): a sale may sell only to buyers who reserved it before it started.
//!
//! An operator marks a sale "reservation required" with the moment reservations open
//! ([`crate::seckill::sale::NewSale`]); from then until the sale starts a signed-in buyer
//! reserves it, or cancels, and may ask whether they hold one. The admission script refuses an
//! order from a buyer without one (`NOT_RESERVED`) in the same atomic step as the window,
//! limit and stock checks (`reserve.lua`).
//!
//! **Where a reservation lives.** Its own item in the commerce table is the durable truth
//! ([`ReservationBook`], one partition per buyer and sale, so that a storm of reservations
//! writes no hot key); the sale's `reserved` set in Redis ([`ReservationList`]) is what the
//! admission script reads and what the detail page counts, exactly (`SCARD`). A reservation is
//! written to the table first, then to the set; a cancellation is removed in the same order.
//! When the second step fails the buyer is answered `503 RETRY` and the request, idempotent,
//! is repeated; a preheat (publishing, the failover's recovery) loads every item into the set
//! again ([`crate::seckill::sale::preheat`]), so the set never holds less than the table for
//! long. Not to be confused with the admission's reservation of an order's units, which the
//! order concern's `Reservations` port names.

pub mod dynamo;
#[cfg(test)]
pub(crate) mod fake;
pub mod redis;
pub mod routes;

use crate::ids::{SaleId, UserId};
use crate::seckill::sale::StoreError;
use async_trait::async_trait;

/// The reservation window of a published sale, as the cache holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// `None`: the sale requires no reservation.
    pub opens_at_ms: Option<i64>,
    pub starts_at_ms: i64,
    /// Ended early by an operator.
    pub ended: bool,
}

/// What a buyer holds of a sale's reservations, and how many there are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Standing {
    pub window: Window,
    pub reserved: bool,
    pub reservations: u64,
}

/// The durable reservations (DynamoDB).
#[async_trait]
pub trait ReservationBook: Send + Sync {
    /// Records that `user` reserved `sale` at `at` (RFC 3339); a second call keeps the first.
    async fn put(&self, sale: &SaleId, user: &UserId, at: &str) -> Result<(), StoreError>;

    /// Removes `user`'s reservation of `sale`, if there is one.
    async fn delete(&self, sale: &SaleId, user: &UserId) -> Result<(), StoreError>;

    /// Whether `user` holds a reservation of `sale`, read consistently.
    async fn holds(&self, sale: &SaleId, user: &UserId) -> Result<bool, StoreError>;
}

/// The reservations the admission reads (Redis), beside the sale they belong to.
#[async_trait]
pub trait ReservationList: Send + Sync {
    /// The sale's window and `user`'s standing, in one round trip; `None` for a sale the
    /// cache does not hold (unknown, unpublished).
    async fn standing(&self, sale: &SaleId, user: &UserId) -> Result<Option<Standing>, StoreError>;

    /// Adds (`true`) or removes (`false`) `user`; answers the count afterwards.
    async fn set(&self, sale: &SaleId, user: &UserId, reserved: bool) -> Result<u64, StoreError>;
}

/// Why a reservation was refused, or failed.
#[derive(Debug, thiserror::Error)]
pub enum ReservationError {
    #[error("no sale {0}")]
    UnknownSale(SaleId),
    #[error("this sale needs no reservation: anyone may order once it starts")]
    NotRequired,
    #[error("reservations for this sale open at {0}")]
    NotOpen(String),
    #[error("reservations for this sale closed when it started")]
    Closed,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Checks that `window` takes reservations (or cancellations) at `now_ms`.
fn open(sale: &SaleId, window: Option<Window>, now_ms: i64) -> Result<Window, ReservationError> {
    let window = window.ok_or_else(|| ReservationError::UnknownSale(sale.clone()))?;
    let opens_at_ms = window.opens_at_ms.ok_or(ReservationError::NotRequired)?;
    if window.ended || now_ms >= window.starts_at_ms {
        return Err(ReservationError::Closed);
    }
    if now_ms < opens_at_ms {
        let opens_at = crate::clock::from_epoch_ms(opens_at_ms)
            .map(crate::clock::format)
            .unwrap_or_default();
        return Err(ReservationError::NotOpen(opens_at));
    }
    Ok(window)
}

/// `user` reserves `sale` at `now_ms`: in the table, then in the cache. Idempotent, also once
/// the sale started for a buyer who reserved in time: a reservation the table holds and the
/// cache lost (its write failed, and the buyer retried too late) is put back in the cache.
pub async fn reserve(
    book: &dyn ReservationBook,
    list: &dyn ReservationList,
    sale: &SaleId,
    user: &UserId,
    now_ms: i64,
) -> Result<Standing, ReservationError> {
    let current = list.standing(sale, user).await?;
    let window = match open(sale, current.map(|standing| standing.window), now_ms) {
        Ok(window) => window,
        Err(ReservationError::Closed) => {
            let Some(current) = current else {
                return Err(ReservationError::Closed);
            };
            if current.reserved || !book.holds(sale, user).await? {
                return match current.reserved {
                    true => Ok(current),
                    false => Err(ReservationError::Closed),
                };
            }
            let reservations = list.set(sale, user, true).await?;
            return Ok(Standing {
                reserved: true,
                reservations,
                ..current
            });
        }
        Err(refused) => return Err(refused),
    };
    let at = crate::clock::from_epoch_ms(now_ms)
        .map(crate::clock::format)
        .unwrap_or_default();
    book.put(sale, user, &at).await?;
    let reservations = list.set(sale, user, true).await?;
    Ok(Standing {
        window,
        reserved: true,
        reservations,
    })
}

/// `user` cancels their reservation of `sale` before it starts. Idempotent.
pub async fn cancel(
    book: &dyn ReservationBook,
    list: &dyn ReservationList,
    sale: &SaleId,
    user: &UserId,
    now_ms: i64,
) -> Result<Standing, ReservationError> {
    let current = list.standing(sale, user).await?;
    let window = open(sale, current.map(|standing| standing.window), now_ms)?;
    book.delete(sale, user).await?;
    let reservations = list.set(sale, user, false).await?;
    Ok(Standing {
        window,
        reserved: false,
        reservations,
    })
}

/// Whether `user` holds a reservation of `sale`, and how many there are.
pub async fn standing(
    list: &dyn ReservationList,
    sale: &SaleId,
    user: &UserId,
) -> Result<Standing, ReservationError> {
    list.standing(sale, user)
        .await?
        .ok_or_else(|| ReservationError::UnknownSale(sale.clone()))
}

#[cfg(test)]
mod tests {
    use super::fake::MemoryBook;
    use super::*;

    const OPENS: i64 = 1_000;
    const STARTS: i64 = 2_000;

    fn user(name: &str) -> UserId {
        UserId::parse(name).unwrap()
    }

    fn book_with_sale(opens_at_ms: Option<i64>) -> (MemoryBook, SaleId) {
        let book = MemoryBook::default();
        let sale = SaleId::generate();
        book.windows.lock().unwrap().insert(
            sale.clone(),
            Window {
                opens_at_ms,
                starts_at_ms: STARTS,
                ended: false,
            },
        );
        (book, sale)
    }

    #[tokio::test]
    async fn a_buyer_reserves_once_within_the_window_and_may_cancel_before_the_start() {
        let (book, sale) = book_with_sale(Some(OPENS));
        let ann = user("ann");
        let first = reserve(&book, &book, &sale, &ann, 1_500).await.unwrap();
        assert!(first.reserved);
        assert_eq!(first.reservations, 1);
        // Again: the same one reservation, the table keeps its first time.
        let again = reserve(&book, &book, &sale, &ann, 1_600).await.unwrap();
        assert_eq!(again.reservations, 1);
        assert_eq!(book.items.lock().unwrap().len(), 1);
        reserve(&book, &book, &sale, &user("bob"), 1_700)
            .await
            .unwrap();
        assert_eq!(standing(&book, &sale, &ann).await.unwrap().reservations, 2);

        let cancelled = cancel(&book, &book, &sale, &ann, 1_800).await.unwrap();
        assert!(!cancelled.reserved);
        assert_eq!(cancelled.reservations, 1);
        assert!(!standing(&book, &sale, &ann).await.unwrap().reserved);
        assert_eq!(book.items.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn outside_the_window_nothing_is_written() {
        let (book, sale) = book_with_sale(Some(OPENS));
        let ann = user("ann");
        assert!(matches!(
            reserve(&book, &book, &sale, &ann, OPENS - 1).await,
            Err(ReservationError::NotOpen(_))
        ));
        assert!(matches!(
            reserve(&book, &book, &sale, &ann, STARTS).await,
            Err(ReservationError::Closed)
        ));
        reserve(&book, &book, &sale, &ann, OPENS).await.unwrap();
        // Once the sale started, reserving again is answered as it stands.
        assert!(
            reserve(&book, &book, &sale, &ann, STARTS)
                .await
                .unwrap()
                .reserved
        );
        // Once the sale started, a reservation is kept: cancelling it is refused too.
        assert!(matches!(
            cancel(&book, &book, &sale, &ann, STARTS).await,
            Err(ReservationError::Closed)
        ));
        assert_eq!(book.items.lock().unwrap().len(), 1);

        let (free, open_sale) = book_with_sale(None);
        assert!(matches!(
            reserve(&free, &free, &open_sale, &ann, 1_500).await,
            Err(ReservationError::NotRequired)
        ));
        assert!(matches!(
            reserve(&free, &free, &SaleId::generate(), &ann, 1_500).await,
            Err(ReservationError::UnknownSale(_))
        ));
        assert!(free.items.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn when_the_cache_fails_after_the_table_a_retry_completes_the_reservation() {
        let (book, sale) = book_with_sale(Some(OPENS));
        let ann = user("ann");
        book.fail_set
            .store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(matches!(
            reserve(&book, &book, &sale, &ann, 1_500).await,
            Err(ReservationError::Store(_))
        ));
        book.fail_set
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let retried = reserve(&book, &book, &sale, &ann, 1_600).await.unwrap();
        assert!(retried.reserved);
        assert_eq!(retried.reservations, 1);

        // The same failure, and the retry only after the start: the table's reservation is
        // put back in the cache, the admission will let her order.
        let bob = user("bob");
        book.fail_set
            .store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(reserve(&book, &book, &sale, &bob, 1_700).await.is_err());
        book.fail_set
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let late = reserve(&book, &book, &sale, &bob, STARTS + 1)
            .await
            .unwrap();
        assert!(late.reserved);
        assert_eq!(late.reservations, 2);
        assert!(matches!(
            reserve(&book, &book, &sale, &user("cy"), STARTS + 1).await,
            Err(ReservationError::Closed)
        ));
    }
}
