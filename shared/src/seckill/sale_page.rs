//! The static detail page of a published sale, `/shop/sales/{id}`: rendered from the sale when
//! it is published (and again when it is published again), stored where the pages are served
//! from. The page carries what never changes; its script (`shop/sale.js`) polls the live
//! stock and state from `GET /seckill/activities/{id}`.
//!
//! The HTML is `shop/templates/sale.html` with `{{name}}` placeholders, each replaced by an
//! escaped value, so a title can never become markup.

use super::sale::Sale;
use crate::consumer::{Message, parse_each};
use crate::events::{Envelope, EventError, SALE_PAGE_RENDERED, SalePageRendered, parse_v1};
use crate::ids::SaleId;
use async_trait::async_trait;

/// The page's template, from the pages' sources.
const TEMPLATE: &str = include_str!("../../../shop/templates/sale.html");

/// The object key (and path, without its leading `/`) of a sale's page: the same under the
/// bucket as under the site, so the CDN maps `/shop/*` to the bucket without rewriting.
pub fn page_key(id: &SaleId) -> String {
    format!("shop/sales/{id}")
}

/// The detail page of `sale`.
pub fn render(sale: &Sale) -> String {
    let values = [
        ("id", sale.id.to_string()),
        ("title", sale.title.clone()),
        ("price", price(sale.price_cents)),
        ("stock", sale.initial_stock.to_string()),
        ("perUserLimit", sale.per_user_limit.to_string()),
        ("startsAt", crate::clock::format(sale.starts_at)),
        ("endsAt", crate::clock::format(sale.ends_at)),
    ];
    let mut html = TEMPLATE.to_owned();
    for (name, value) in values {
        html = html.replace(&format!("{{{{{name}}}}}"), &escape(&value));
    }
    html
}

/// `12345` cents as `123.45`.
fn price(cents: u64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

/// Text made safe for HTML element content and quoted attribute values (the sale page's and
/// the payment sandbox's).
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Why a page could not be stored; the cause is for the log, never for the client.
#[derive(Debug, thiserror::Error)]
#[error("the sale page store failed")]
pub struct PageError(#[from] pub anyhow::Error);

/// Where the detail pages are stored and served from (S3 behind the CDN).
#[async_trait]
pub trait SalePages: Send + Sync {
    /// Writes (or overwrites) the page of sale `id`.
    async fn put(&self, id: &SaleId, html: String) -> Result<(), PageError>;
}

/// A `SalePageRendered` v1 message: the sale and its page.
pub fn parse_rendered(body: &str) -> Result<(SaleId, String), EventError> {
    let envelope: Envelope<SalePageRendered> = parse_v1(body, SALE_PAGE_RENDERED)?;
    let id = SaleId::parse(&envelope.payload.sale_id).map_err(|_| EventError::Unknown {
        kind: format!("{SALE_PAGE_RENDERED} with a sale id that is not one"),
        version: envelope.version,
    })?;
    Ok((id, envelope.payload.html))
}

/// The page writer: stores each page of an SQS batch of `SalePageRendered` (publish-sale
/// queues them, so that it need not link the S3 client, which alone would take it past
/// 8 MiB); answers the messages to retry. Storing a page again is harmless (every render of
/// a sale is the same page), so a redelivery needs no marker.
#[tracing::instrument(skip_all, fields(messages = messages.len()))]
pub async fn write_batch(pages: &dyn SalePages, messages: Vec<Message>) -> Vec<String> {
    let parsed = parse_each(messages, parse_rendered);
    let mut failed = parsed.refused;
    let writes = crate::consumer::join_all(
        parsed
            .events
            .iter()
            .map(|(_, (id, html))| pages.put(id, html.clone())),
    )
    .await;
    for ((message, (id, _)), written) in parsed.events.into_iter().zip(writes) {
        if let Err(err) = written {
            tracing::error!(sale = %id, error = ?anyhow::Error::from(err), "failed to store a sale page");
            failed.push(message);
        }
    }
    failed
}

#[cfg(test)]
pub(crate) mod fake {
    //! An in-memory page store, which can be told to fail.

    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Default)]
    pub struct MemoryPages {
        pub pages: Mutex<HashMap<SaleId, String>>,
        pub fail: AtomicBool,
    }

    #[async_trait]
    impl SalePages for MemoryPages {
        async fn put(&self, id: &SaleId, html: String) -> Result<(), PageError> {
            if self.fail.load(Ordering::SeqCst) {
                return Err(PageError(anyhow::anyhow!("bucket unreachable")));
            }
            self.pages.lock().unwrap().insert(id.clone(), html);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seckill::sale::Lifecycle;
    use time::macros::datetime;

    fn sale(title: &str) -> Sale {
        Sale {
            id: SaleId::generate(),
            product_id: "sku-1".to_owned(),
            title: title.to_owned(),
            price_cents: 19_905,
            initial_stock: 40,
            stock_remaining: 40,
            per_user_limit: 2,
            starts_at: datetime!(2026-12-01 20:00 UTC),
            ends_at: datetime!(2026-12-01 21:30 UTC),
            state: Lifecycle::Published,
            created_at: "2026-12-01T19:00:00Z".to_owned(),
        }
    }

    #[test]
    fn the_page_shows_the_sale_and_carries_what_its_script_needs() {
        let sale = sale("Phone");
        let html = render(&sale);
        assert!(html.contains("<title>Phone · flash sale</title>"), "{html}");
        assert!(html.contains("<h1>Phone</h1>"), "{html}");
        assert!(html.contains(">199.05<"), "{html}");
        assert!(
            html.contains(&format!("data-sale-id=\"{}\"", sale.id)),
            "{html}"
        );
        assert!(
            html.contains("data-starts-at=\"2026-12-01T20:00:00.000000Z\""),
            "{html}"
        );
        assert!(html.contains("data-per-user-limit=\"2\""), "{html}");
        assert!(html.contains("2 per buyer"), "{html}");
        assert!(
            html.contains("id=\"buy\" type=\"button\" disabled"),
            "{html}"
        );
        assert!(!html.contains("{{"), "a placeholder is left: {html}");
    }

    #[test]
    fn a_title_never_becomes_markup() {
        let html = render(&sale("<script>alert(\"x\")</script> & 'co'"));
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(
            html.contains(
                "<h1>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;co&#39;</h1>"
            ),
            "{html}"
        );
    }

    #[test]
    fn the_key_is_the_path_under_the_site() {
        let id = SaleId::generate();
        assert_eq!(page_key(&id), format!("shop/sales/{id}"));
        assert_eq!(price(5), "0.05");
        assert_eq!(price(100), "1.00");
    }

    #[tokio::test]
    async fn the_writer_stores_each_queued_page_and_retries_what_failed() {
        use super::fake::MemoryPages;
        use std::sync::atomic::Ordering;
        let id = SaleId::generate();
        let body = serde_json::json!({"type": SALE_PAGE_RENDERED, "version": 1, "id": "e1",
            "occurredAt": "2026-11-30T18:00:00Z", "payload": {"saleId": id, "html": "<h1>P</h1>"}})
        .to_string();
        let pages = MemoryPages::default();
        let batch = crate::testing::batch(&[body.clone(), "garbage".to_owned()]);
        assert_eq!(write_batch(&pages, batch).await, ["m1"]);
        assert_eq!(pages.pages.lock().unwrap()[&id], "<h1>P</h1>");
        pages.fail.store(true, Ordering::SeqCst);
        assert_eq!(
            write_batch(&pages, crate::testing::batch(&[body])).await,
            ["m0"]
        );
    }
}
