//! The static detail page of a published sale, `/shop/sales/{id}`: rendered from the sale when
//! it is published (and again when it is published again), stored where the pages are served
//! from. The page carries what never changes; its script (`shop/sale.js`) polls the live
//! stock and state from `GET /seckill/activities/{id}`.
//!
//! The HTML is `shop/templates/sale.html` (compiled in) with the shop's shared head and
//! layout included as in every page ([`crate::layout`], the partials of `shop/_layout/`
//! compiled in too: the function reads no file), expanded once, from those trusted files
//! only, before any value is filled. Its `{{name}}` placeholders are then all filled in one
//! pass, each by an escaped value: a title can never become markup, nor a placeholder, nor an
//! include.
//!
//! Only the page writer renders and stores a page, and only from the sale as the commerce
//! table holds it: publish-sale asks for it by id ([`PageRequests`], `SalePageRequested` on
//! the page queue), so a message on that queue can at most ask for the page of a published
//! sale to be written again, never say what the page is.

use crate::consumer::{Message, parse_each};
use crate::events::{Envelope, EventError, SALE_PAGE_REQUESTED, SalePageRequested, parse_v1};
use crate::ids::SaleId;
use crate::layout::{self, escape};
use crate::seckill::sale::{Lifecycle, Sale, SaleStore};
use async_trait::async_trait;
use std::sync::LazyLock;

/// The page's template, from the pages' sources: its includes still to expand.
const SOURCE: &str = include_str!("../../../../shop/templates/sale.html");

/// The partials the template may include: the pages' shared layout.
const PARTIALS: [(&str, &str); 2] = [
    ("head", include_str!("../../../../shop/_layout/head.html")),
    ("foot", include_str!("../../../../shop/_layout/foot.html")),
];

/// The page's template with its layout included (once per process, from the compiled-in
/// sources only; `the_template_expands_with_the_shared_layout` proves it does).
static TEMPLATE: LazyLock<String> = LazyLock::new(|| {
    let partials = PARTIALS
        .iter()
        .map(|(name, text)| ((*name).to_owned(), (*text).to_owned()))
        .collect();
    // The sources are compiled in: a unit test expands them, so this cannot fail in a build
    // that passed its tests.
    layout::expand("templates/sale.html", SOURCE, &partials)
        .expect("the sale page's template expands with the shared layout")
});

/// The page's template as the page writer fills it: the sale's template with the shop's
/// shared head and layout included, its `{{name}}` placeholders left for [`render`].
pub fn template() -> &'static str {
    &TEMPLATE
}

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
    fill(template(), &values)
}

/// `template` with each `{{name}}` of `values` replaced by its escaped value, in one pass: what
/// a value puts in the output is never read again, so a title holding `{{price}}` stays that
/// text. A `{{` that opens no known name is copied as it is.
fn fill(template: &str, values: &[(&str, String)]) -> String {
    let mut out = String::with_capacity(template.len() + 512);
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let known = after.find("}}").and_then(|close| {
            let name = &after[..close];
            values
                .iter()
                .find(|(known, _)| *known == name)
                .map(|(_, value)| (value, close))
        });
        match known {
            Some((value, close)) => {
                out.push_str(&escape(value));
                rest = &after[close + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `12345` cents as `123.45`.
fn price(cents: u64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

/// Why a page could not be asked for or stored; the cause is for the log, never for the
/// client.
#[derive(Debug, thiserror::Error)]
#[error("the sale page store failed")]
pub struct PageError(#[from] pub anyhow::Error);

/// Where the detail pages are stored and served from (S3 behind the CDN): the page writer's.
#[async_trait]
pub trait SalePages: Send + Sync {
    /// Writes (or overwrites) the page of sale `id`.
    async fn put(&self, id: &SaleId, html: String) -> Result<(), PageError>;
}

/// How publish-sale asks for a sale's page to be written (the page queue): by id only.
#[async_trait]
pub trait PageRequests: Send + Sync {
    /// Asks the page writer to render and store the page of sale `id`.
    async fn request(&self, id: &SaleId) -> Result<(), PageError>;
}

/// A `SalePageRequested` v1 message: the sale whose page to write. Anything else, the retired
/// `SalePageRendered` with its HTML included, is refused.
pub fn parse_requested(body: &str) -> Result<SaleId, EventError> {
    let envelope: Envelope<SalePageRequested> = parse_v1(body, SALE_PAGE_REQUESTED)?;
    SaleId::parse(&envelope.payload.sale_id).map_err(|_| EventError::Unknown {
        kind: format!("{SALE_PAGE_REQUESTED} with a sale id that is not one"),
        version: envelope.version,
    })
}

/// The page writer: for each `SalePageRequested` of an SQS batch, reads the sale from the
/// commerce table (a consistent read: publish-sale asks after its write) and stores the page
/// rendered from it; answers the messages to retry. publish-sale does not store the page
/// itself, as the S3 client would take it past 8 MiB.
///
/// A sale that is unknown or still a draft gets no page: its message is failed, so it
/// reaches the dead-letter queue (publish-sale asks only after publishing, so such a message
/// was not sent by it). Storing a page again is harmless (every render of a sale is the same
/// page), so a redelivery needs no marker.
#[tracing::instrument(skip_all, fields(messages = messages.len()))]
pub async fn write_batch(
    sales: &dyn SaleStore,
    pages: &dyn SalePages,
    messages: Vec<Message>,
) -> Vec<String> {
    let parsed = parse_each(messages, parse_requested);
    let mut failed = parsed.refused;
    let writes = crate::consumer::join_all(
        parsed
            .events
            .iter()
            .map(|(_, id)| write_page(sales, pages, id)),
    )
    .await;
    for ((message, id), written) in parsed.events.into_iter().zip(writes) {
        if let Err(err) = written {
            tracing::error!(sale = %id, error = ?err, "failed to write a sale page");
            failed.push(message);
        }
    }
    failed
}

/// Renders the page of the published sale `id` from the table and stores it.
async fn write_page(
    sales: &dyn SaleStore,
    pages: &dyn SalePages,
    id: &SaleId,
) -> anyhow::Result<()> {
    let sale = sales
        .get(id)
        .await
        .map_err(|err| anyhow::Error::new(err).context("failed to read the sale"))?;
    match sale {
        Some(sale) if sale.state == Lifecycle::Published => {
            pages.put(id, render(&sale)).await?;
            Ok(())
        }
        Some(_) => anyhow::bail!("the sale is not published: it gets no page"),
        None => anyhow::bail!("no such sale: it gets no page"),
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
            reservation_opens_at: None,
        }
    }

    #[test]
    fn the_page_shows_the_sale_and_carries_what_its_script_needs() {
        let sale = sale("Phone");
        let html = render(&sale);
        assert!(html.contains("<title>Phone · shop</title>"), "{html}");
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

    /// The template includes the shop's shared head and layout as every page does: one
    /// `<head>` with the stylesheet, `shop.js` and its own script, the header, and nothing of
    /// an include left.
    #[test]
    fn the_template_expands_with_the_shared_layout() {
        let template = template();
        assert!(template.starts_with("<!doctype html>\n"), "{template}");
        assert!(template.trim_end().ends_with("</html>"), "{template}");
        assert!(!template.contains("<!-- include"), "{template}");
        assert!(
            template.contains("<title>{{title}} · shop</title>"),
            "{template}"
        );
        let html = render(&sale("Phone"));
        for (part, count) in [
            ("<head>", 1),
            ("</head>", 1),
            ("<body>", 1),
            ("<header>", 1),
            ("<title>", 1),
            ("<!--", 0),
        ] {
            assert_eq!(html.matches(part).count(), count, "{part}: {html}");
        }
        let head = &html[..html.find("</head>").unwrap()];
        for line in [
            r#"<link rel="stylesheet" href="/shop/shop.css">"#,
            r#"<script src="/shop/shop.js" defer></script>"#,
            r#"<script src="/shop/sale.js" defer></script>"#,
        ] {
            assert!(head.contains(line), "{line}: {head}");
        }
        assert!(
            html.contains(
                r#"<header><a href="/shop/">Shop</a> <span id="who" class="who"></span></header>"#
            ),
            "{html}"
        );
    }

    /// The layout is expanded from the sources before any value is filled: a title that
    /// looks like an include or a placeholder is text, escaped, never expanded.
    #[test]
    fn a_title_holding_an_include_or_a_placeholder_is_rendered_literally() {
        let title = r#"<!-- include head title="x" scripts="evil.js" --> {{price}}"#;
        let html = render(&sale(title));
        let escaped =
            "&lt;!-- include head title=&quot;x&quot; scripts=&quot;evil.js&quot; --&gt; {{price}}";
        assert!(html.contains(&format!("<h1>{escaped}</h1>")), "{html}");
        assert!(
            html.contains(&format!("<title>{escaped} · shop</title>")),
            "{html}"
        );
        assert!(!html.contains("evil.js\""), "{html}");
        assert_eq!(html.matches("<head>").count(), 1, "{html}");
        assert_eq!(html.matches(">199.05<").count(), 1, "{html}");
    }

    #[test]
    fn the_key_is_the_path_under_the_site() {
        let id = SaleId::generate();
        assert_eq!(page_key(&id), format!("shop/sales/{id}"));
        assert_eq!(price(5), "0.05");
        assert_eq!(price(100), "1.00");
    }

    #[test]
    fn a_value_holding_a_placeholder_is_never_expanded() {
        let html = render(&sale("{{price}} off {{id}}{{nope}}"));
        assert!(
            html.contains("<h1>{{price}} off {{id}}{{nope}}</h1>"),
            "{html}"
        );
        assert!(
            html.contains("<title>{{price}} off {{id}}{{nope}} · shop</title>"),
            "{html}"
        );
        assert_eq!(
            fill(
                "{{a}}{{b}} {{c}} {{",
                &[("a", "{{b}}".to_owned()), ("b", "<".to_owned())]
            ),
            "{{b}}&lt; {{c}} {{"
        );
    }

    fn requested(id: &str) -> String {
        serde_json::json!({"type": SALE_PAGE_REQUESTED, "version": 1, "id": "e1",
            "occurredAt": "2026-11-30T18:00:00Z", "payload": {"saleId": id}})
        .to_string()
    }

    #[tokio::test]
    async fn the_writer_renders_each_requested_page_from_the_table_and_retries_what_failed() {
        use crate::seckill::sale::fake::MemoryPages;
        use crate::seckill::sale::fake::MemorySales;
        use std::sync::atomic::Ordering;
        let sales = MemorySales::default();
        let published = sale("Phone");
        let mut draft = sale("Draft");
        draft.state = Lifecycle::Draft;
        for sale in [&published, &draft] {
            sales.create(sale).await.unwrap();
        }
        let pages = MemoryPages::default();
        let batch = crate::testing::batch(&[
            requested(published.id.as_str()),
            "garbage".to_owned(),
            requested(draft.id.as_str()),
            requested(SaleId::generate().as_str()),
            requested("not-a-sale"),
        ]);
        assert_eq!(
            write_batch(&sales, &pages, batch).await,
            ["m1", "m4", "m2", "m3"]
        );
        let stored = pages.pages.lock().unwrap().clone();
        assert_eq!(stored.len(), 1, "only the published sale gets a page");
        assert_eq!(stored[&published.id], render(&published));

        pages.fail.store(true, Ordering::SeqCst);
        let batch = crate::testing::batch(&[requested(published.id.as_str())]);
        assert_eq!(write_batch(&sales, &pages, batch).await, ["m0"]);
    }

    /// The retired message that carried the page: refused, so nothing it holds is published,
    /// not even for a sale that is published.
    #[tokio::test]
    async fn a_message_carrying_html_is_refused_and_stores_nothing() {
        use crate::events::SALE_PAGE_RENDERED;
        use crate::seckill::sale::fake::MemoryPages;
        use crate::seckill::sale::fake::MemorySales;
        let sales = MemorySales::default();
        let published = sale("Phone");
        sales.create(&published).await.unwrap();
        let pages = MemoryPages::default();
        let old = serde_json::json!({"type": SALE_PAGE_RENDERED, "version": 1, "id": "e1",
            "occurredAt": "2026-11-30T18:00:00Z",
            "payload": {"saleId": published.id, "html": "<script>alert(1)</script>"}})
        .to_string();
        let mixed = serde_json::json!({"type": SALE_PAGE_REQUESTED, "version": 1, "id": "e2",
            "occurredAt": "2026-11-30T18:00:00Z",
            "payload": {"saleId": published.id, "html": "<script>alert(1)</script>"}})
        .to_string();
        let batch = crate::testing::batch(&[old.clone(), mixed]);
        assert_eq!(write_batch(&sales, &pages, batch).await, ["m0", "m1"]);
        assert!(pages.pages.lock().unwrap().is_empty());
        assert!(matches!(
            parse_requested(&old),
            Err(EventError::Unknown { version: 1, .. })
        ));
    }
}
