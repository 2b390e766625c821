//! S3 adapter of [`SalePages`]: one `PutObject` per page, under the key that is its path on
//! the site (`shop/sales/{id}`), in the bucket named by `SHOP_BUCKET`.

use crate::config::{ConfigError, Env};
use crate::ids::SaleId;
use crate::seckill::sale::page::{PageError, SalePages, page_key};
use async_trait::async_trait;
use aws_sdk_s3::primitives::ByteStream;

/// How long the CDN and browsers may reuse a page: it changes only when the sale is
/// published again, and the live stock comes from the API, not from the page.
pub const PAGE_CACHE_CONTROL: &str = "public, max-age=60";

/// The bucket of the shop's pages.
#[derive(Clone, Debug)]
pub struct S3SalePages {
    client: aws_sdk_s3::Client,
    bucket: String,
}

impl S3SalePages {
    pub fn new(client: aws_sdk_s3::Client, bucket: String) -> Self {
        Self { client, bucket }
    }

    /// The bucket named by `SHOP_BUCKET`.
    pub fn from_env(env: &Env, client: aws_sdk_s3::Client) -> Result<Self, ConfigError> {
        Ok(Self::new(client, env.required("SHOP_BUCKET")?))
    }
}

#[async_trait]
impl SalePages for S3SalePages {
    #[tracing::instrument(level = "debug", skip(self, html), fields(bucket = %self.bucket))]
    async fn put(&self, id: &SaleId, html: String) -> Result<(), PageError> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(page_key(id))
            .content_type("text/html; charset=utf-8")
            .cache_control(PAGE_CACHE_CONTROL)
            .body(ByteStream::from(html.into_bytes()))
            .send()
            .await
            .map_err(|err| {
                PageError(anyhow::Error::new(err).context("PutObject of a sale page"))
            })?;
        Ok(())
    }
}
