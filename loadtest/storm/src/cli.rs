//! The storm's command line and the HTTP API it targets.

use anyhow::{Context, ensure};
use bytes::Bytes;
use clap::Parser;
use http_body_util::Full;
use serde_json::Value;
use std::net::SocketAddr;

#[derive(Parser, Clone, Debug)]
#[command(version, about)]
pub(crate) struct Args {
    /// The runner's HTTP API, e.g. http://127.0.0.1:3902
    #[arg(long)]
    pub url: String,
    #[arg(long, default_value_t = 1000)]
    pub stock: u32,
    #[arg(long, default_value_t = 50_000)]
    pub detail_requests: u64,
    #[arg(long, default_value_t = 100_000)]
    pub attempts: u64,
    #[arg(long, default_value_t = 10_000)]
    pub users: u64,
    /// Keep-alive connections (HTTP phases) and tasks in flight (raw phase).
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// Unmeasured requests per phase first, spread over the connections, to start the
    /// function instances (orders: against an unknown sale, so no stock is touched).
    #[arg(long, default_value_t = 256)]
    pub warmup: u64,
    /// Seconds to wait for every accepted order to read CONFIRMED.
    #[arg(long, default_value_t = 180)]
    pub settle_timeout: u64,
    /// Parallel `GET /orders/{id}` polls while settling.
    #[arg(long, default_value_t = 8)]
    pub settle_concurrency: usize,
    /// Redis for the raw phase (e.g. the emulator's REDIS_URL); no raw phase without it.
    #[arg(long)]
    pub redis_url: Option<String>,
    /// Multiplexed Redis connections the raw phase's tasks share.
    #[arg(long, default_value_t = 4)]
    pub redis_connections: usize,
    /// The reserve script's attempts per user per second in the raw phase (the template's
    /// OrderRateLimitPerSecond; a user's attempts count on every sale, so the HTTP phase's
    /// count of the same users carries over if the phases are less than a second apart).
    #[arg(long, default_value_t = 5)]
    pub rate_limit: u32,
    /// The runner's HS256 secret.
    #[arg(long, env = "LOCAL_JWT_SECRET", default_value = local_cloud::jwt::DEFAULT_LOCAL_SECRET)]
    pub jwt_secret: String,
    #[arg(long)]
    pub json: bool,
    /// Draw the order phase (answers per second by outcome, stock remaining) to this SVG.
    #[arg(long)]
    pub plot: Option<std::path::PathBuf>,
}

/// The runner's HTTP API: where to connect and how to address it.
pub(crate) struct Target {
    pub address: SocketAddr,
    host: String,
    port: u16,
    /// The URL's path prefix, without a trailing slash.
    base: String,
}

impl Target {
    pub async fn resolve(url: &str) -> anyhow::Result<Self> {
        let uri: http::Uri = url.parse().context("invalid --url")?;
        ensure!(
            uri.scheme_str() == Some("http"),
            "only http:// URLs are supported"
        );
        let host = uri.host().context("the URL has no host")?.to_owned();
        let port = uri.port_u16().unwrap_or(80);
        let address = tokio::net::lookup_host((host.as_str(), port))
            .await
            .with_context(|| format!("failed to resolve {host}"))?
            .next()
            .with_context(|| format!("{host} has no address"))?;
        Ok(Self {
            address,
            host,
            port,
            base: uri.path().trim_end_matches('/').to_owned(),
        })
    }

    pub fn request(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> http::Request<Full<Bytes>> {
        let mut builder = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("host", format!("{}:{}", self.host, self.port));
        if let Some(token) = token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        let body = match body {
            Some(body) => {
                builder = builder.header("content-type", "application/json");
                Bytes::from(body.to_string())
            }
            None => Bytes::new(),
        };
        builder
            .body(Full::new(body))
            .expect("a well-formed request")
    }
}
