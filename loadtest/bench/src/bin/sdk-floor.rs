//! `sdk-floor`: what one DynamoDB call costs a function's process in CPU, through the SDK
//! as the functions configure it ([`app::cloud::sdk_config`]) and through the floor under
//! it, a hyper client sending the same `GetItem` signed by the SDK's own SigV4 signer, against
//! the same endpoint (the benchmark's `aws-stub`, which answers at once); and what one Redis
//! command costs through the functions' connection ([`app::cloud::redis`], a `GET`).
//!
//! `sdk-floor --client sdk|floor|redis --calls N --warmup W --gap-us G` makes `W` unmeasured calls,
//! then `N` measured ones one after another on a `current_thread` runtime (as the functions
//! run), sleeping `G` µs between calls: a function's process sits idle between invocations,
//! and a call after an idle gap costs more than one in a tight loop (cold caches, a parked
//! thread woken). CPU is every thread's time on CPU from `/proc/self/task/*/schedstat`
//! (nanoseconds), over the measured calls. It prints one JSON line: the client, the calls, the
//! CPU and wall time per call in µs, and the failed calls (any answer but 200).
//!
//! Region, credentials and endpoint come from the environment, as in a function.

use anyhow::Context;
use aws_credential_types::Credentials;
use aws_sdk_dynamodb::types::AttributeValue;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::time::{Duration, Instant, SystemTime};

const TABLE: &str = "bench-table";
/// A profile the stub answers with an item (infra/aws-stub's table of canned answers).
const PK: &str = "USER#bench-user";
const SK: &str = "PROFILE";

#[derive(clap::Parser, Debug)]
struct Args {
    /// `sdk` (the functions' SDK configuration), `floor` (hyper + SigV4) or `redis` (a `GET`
    /// on the functions' Redis connection, `REDIS_URL`).
    #[arg(long)]
    client: String,
    #[arg(long, default_value_t = 5_000)]
    calls: u32,
    #[arg(long, default_value_t = 500)]
    warmup: u32,
    /// Idle time between two calls, µs (0: back to back).
    #[arg(long, default_value_t = 1_000)]
    gap_us: u64,
}

#[derive(serde::Serialize)]
struct Measured {
    client: String,
    calls: u32,
    gap_us: u64,
    cpu_us_per_call: f64,
    wall_us_per_call: f64,
    failed: u32,
}

/// Nanoseconds on CPU of every thread of this process so far.
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// One call: whether it answered 200.
trait Caller {
    async fn call(&self) -> bool;
}

struct Sdk(aws_sdk_dynamodb::Client);

impl Caller for Sdk {
    async fn call(&self) -> bool {
        self.0
            .get_item()
            .table_name(TABLE)
            .key("pk", AttributeValue::S(PK.to_owned()))
            .key("sk", AttributeValue::S(SK.to_owned()))
            .send()
            .await
            .is_ok_and(|output| output.item.is_some())
    }
}

/// hyper and the SDK's signer, and nothing else: no retries, no timeouts, no interceptors.
struct Floor {
    client: Client<HttpConnector, Full<Bytes>>,
    endpoint: String,
    region: String,
    identity: Identity,
}

impl Floor {
    fn from_env() -> anyhow::Result<Self> {
        let var = |name: &str| std::env::var(name).with_context(|| format!("{name} is not set"));
        let credentials = Credentials::new(
            var("AWS_ACCESS_KEY_ID")?,
            var("AWS_SECRET_ACCESS_KEY")?,
            std::env::var("AWS_SESSION_TOKEN").ok(),
            None,
            "environment",
        );
        let endpoint = var("AWS_ENDPOINT_URL")?;
        anyhow::ensure!(
            endpoint.starts_with("http://"),
            "the floor speaks plain HTTP to a local endpoint, not {endpoint}"
        );
        Ok(Self {
            client: Client::builder(TokioExecutor::new()).build_http(),
            endpoint: format!("{}/", endpoint.trim_end_matches('/')),
            region: var("AWS_REGION")?,
            identity: credentials.into(),
        })
    }

    async fn try_call(&self) -> anyhow::Result<bool> {
        let body = serde_json::to_vec(&serde_json::json!({
            "TableName": TABLE,
            "Key": {"pk": {"S": PK}, "sk": {"S": SK}},
        }))?;
        let host = self
            .endpoint
            .trim_start_matches("http://")
            .trim_end_matches('/');
        let headers = [
            ("host", host),
            ("content-type", "application/x-amz-json-1.0"),
            ("x-amz-target", "DynamoDB_20120810.GetItem"),
        ];
        let params = v4::SigningParams::builder()
            .identity(&self.identity)
            .region(&self.region)
            .name("dynamodb")
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()?
            .into();
        let signable = SignableRequest::new(
            "POST",
            &self.endpoint,
            headers.iter().copied(),
            SignableBody::Bytes(&body),
        )?;
        let (instructions, _signature) = sign(signable, &params)?.into_parts();
        let mut request = http::Request::post(&self.endpoint);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let mut request = request.body(Full::new(Bytes::from(body)))?;
        instructions.apply_to_request_http1x(&mut request);
        let response = self.client.request(request).await?;
        let ok = response.status() == 200;
        let answer = response.into_body().collect().await?.to_bytes();
        // Read the item as the SDK would: parse the answer.
        let answer: serde_json::Value = serde_json::from_slice(&answer)?;
        Ok(ok && answer.get("Item").is_some())
    }
}

impl Caller for Floor {
    async fn call(&self) -> bool {
        self.try_call().await.unwrap_or(false)
    }
}

struct Redis(redis::aio::ConnectionManager);

impl Caller for Redis {
    async fn call(&self) -> bool {
        let mut connection = self.0.clone();
        redis::cmd("GET")
            .arg("bench:sdk-floor")
            .query_async::<Option<String>>(&mut connection)
            .await
            .is_ok()
    }
}

async fn measure(caller: &impl Caller, args: &Args) -> Measured {
    let gap = Duration::from_micros(args.gap_us);
    let mut failed = 0;
    for _ in 0..args.warmup {
        caller.call().await;
    }
    let cpu_before = cpu_ns();
    let mut busy = Duration::ZERO;
    for _ in 0..args.calls {
        if !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
        let call_started = Instant::now();
        if !caller.call().await {
            failed += 1;
        }
        busy += call_started.elapsed();
    }
    let cpu = cpu_ns().saturating_sub(cpu_before);
    let calls = f64::from(args.calls.max(1));
    Measured {
        client: args.client.clone(),
        calls: args.calls,
        gap_us: args.gap_us,
        cpu_us_per_call: cpu as f64 / 1e3 / calls,
        wall_us_per_call: busy.as_secs_f64() * 1e6 / calls,
        failed,
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args = <Args as clap::Parser>::parse();
    let measured = match args.client.as_str() {
        "sdk" => {
            let config = app::cloud::sdk_config()?;
            measure(&Sdk(aws_sdk_dynamodb::Client::new(&config)), &args).await
        }
        "floor" => measure(&Floor::from_env()?, &args).await,
        "redis" => {
            let url = std::env::var("REDIS_URL").context("REDIS_URL is not set")?;
            measure(&Redis(app::cloud::redis(&url).await?), &args).await
        }
        other => anyhow::bail!("--client is sdk, floor or redis, not {other:?}"),
    };
    println!("{}", serde_json::to_string(&measured)?);
    Ok(())
}
