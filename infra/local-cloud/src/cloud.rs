//! The whole local cloud: resolve the template, provision, start the functions, the HTTP API
//! and the event sources; and stop all of it.

use crate::cpu_quota::CpuQuota;
use crate::dashboard::Dashboard;
use crate::faults::{FaultPlan, Faults, proxy};
use crate::gateway::{self, Route};
use crate::lambda_api::LambdaApi;
use crate::model::{EventSpec, Model};
use crate::pages::Pages;
use crate::runtime::{Runtime, RuntimeOptions};
use crate::sources::{SourceContext, Sources, Subscriber};
use crate::template::{self, LocalNames};
use anyhow::Context;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The account moto answers for.
pub const DEFAULT_ACCOUNT_ID: &str = "123456789012";

/// What to run and how.
#[derive(Clone, Debug)]
pub struct CloudOptions {
    pub template: PathBuf,
    pub parameter_overrides: BTreeMap<String, String>,
    pub stack_name: String,
    /// Where the HTTP API listens; port 0 picks a free one.
    pub address: SocketAddr,
    /// Instances per function, capped by each function's reserved concurrency.
    pub instances: u32,
    pub binaries_dir: PathBuf,
    pub jwt_secret: Vec<u8>,
    pub log_invocations: bool,
    pub account_id: String,
    /// Endpoints, region, credentials and the Redis URL, given to every function.
    pub function_env: BTreeMap<String, String>,
    /// Functions whose event sources do not run, as if their event source mappings were
    /// disabled: their messages wait in the queue (e.g. to see a backlog build and drain).
    pub disabled_sources: Vec<String>,
    /// Faults to inject on purpose (see [`crate::faults`]); none by default.
    pub faults: FaultPlan,
    /// Whether the HTTP API enforces the template's route throttling (`DefaultRouteSettings`,
    /// `RouteSettings`) as API Gateway does: on, unless a load test lifts it.
    /// It lifts the web ACL's per-source limits too.
    pub route_throttling: bool,
    /// Whether the per-source limits take a request's source from the first address of its
    /// `X-Forwarded-For` (as CloudFront's viewer address) instead of the peer: for tests that
    /// play clients from several addresses on one machine. Off: a client cannot choose its
    /// own source.
    pub trust_forwarded_for: bool,
    /// Lambda's CPU share for each function instance (`up --lambda-cpu`): the CFS period of
    /// its cgroup ([`crate::cpu_quota`]). None: the functions share the machine freely.
    pub lambda_cpu: Option<std::time::Duration>,
}

/// Variables of the runner's own environment that the functions get too: where the
/// emulators are and how to sign for them.
const PASSED_THROUGH: &[&str] = &[
    "AWS_ENDPOINT_URL",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "REDIS_URL",
];

/// The pass-through variables present in this process's environment.
pub fn function_env_from_process() -> BTreeMap<String, String> {
    std::env::vars()
        .filter(|(name, _)| {
            PASSED_THROUGH.contains(&name.as_str()) || name.starts_with("AWS_ENDPOINT_URL_")
        })
        .collect()
}

/// A running local cloud.
pub struct LocalCloud {
    pub address: SocketAddr,
    pub model: Model,
    /// The live fault switches, and the write counts of the proxied functions.
    pub faults: Arc<Faults>,
    /// Kept alive while the cloud runs.
    _proxies: Vec<proxy::Proxy>,
    /// The dashboard's queue sampler, stopped with the cloud.
    _sample_queues: AbortOnDrop,
    runtime: Runtime,
    sources: Sources,
    gateway: JoinHandle<anyhow::Result<()>>,
    stop_gateway: oneshot::Sender<()>,
}

/// The local names of the template's resources: stack prefix, region, account and the SQS
/// endpoint that queue URLs start with.
pub fn local_names(options: &CloudOptions) -> anyhow::Result<LocalNames> {
    let env = &options.function_env;
    let region = env
        .get("AWS_REGION")
        .or_else(|| env.get("AWS_DEFAULT_REGION"))
        .cloned()
        .unwrap_or_else(|| "us-east-1".to_owned());
    let sqs_endpoint = env
        .get("AWS_ENDPOINT_URL_SQS")
        .or_else(|| env.get("AWS_ENDPOINT_URL"))
        .context(
            "AWS_ENDPOINT_URL is not set: start the emulators first (`make dev` does), \
             or point it at LocalStack",
        )?
        .trim_end_matches('/')
        .to_owned();
    Ok(LocalNames {
        stack_name: options.stack_name.clone(),
        region,
        account_id: options.account_id.clone(),
        sqs_endpoint,
    })
}

/// Reads the template into the model under its local names, without provisioning; returns
/// the region too.
pub fn load_model(options: &CloudOptions) -> anyhow::Result<(Model, String)> {
    let names = local_names(options)?;
    // The template's errors already name the file and the place in it.
    let model = template::load(&options.template, &options.parameter_overrides, &names)?;
    Ok((model, names.region))
}

/// Reads the template and creates its tables and queues: what `up` does first, and all that
/// `provision` does (for `sam local start-api` against LocalStack).
pub async fn provision(options: &CloudOptions) -> anyhow::Result<(Model, SourceContext)> {
    let (model, region) = load_model(options)?;
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new(region.clone()))
        .load()
        .await;
    let context = SourceContext {
        sqs: aws_sdk_sqs::Client::new(&sdk),
        dynamodb: aws_sdk_dynamodb::Client::new(&sdk),
        streams: aws_sdk_dynamodbstreams::Client::new(&sdk),
        region,
        account_id: options.account_id.clone(),
        faults: Arc::new(Faults::default()),
        dashboard: Arc::new(Dashboard::default()),
    };
    crate::provision::provision(&model, &context.dynamodb, &context.sqs)
        .await
        .context("failed to provision the template's tables and queues")?;
    let secrets = aws_sdk_secretsmanager::Client::new(&sdk);
    crate::secrets::provision(&model.secrets, &secrets)
        .await
        .context("failed to provision the template's secrets")?;
    crate::provision::provision_buckets(&pages_client(&sdk), &context.region, &model.buckets)
        .await?;
    Ok((model, context))
}

/// The S3 client of the emulator: path-style, since its buckets have no DNS names.
fn pages_client(sdk: &aws_config::SdkConfig) -> aws_sdk_s3::Client {
    let config = aws_sdk_s3::config::Builder::from(sdk)
        .force_path_style(true)
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

/// The pages of the model, uploaded from the `shop/` directory beside the template (when the
/// template has the pages bucket).
async fn upload_pages(model: &Model, options: &CloudOptions) -> anyhow::Result<Option<Pages>> {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .load()
        .await;
    let Some(pages) = Pages::of(model, &pages_client(&sdk)) else {
        return Ok(None);
    };
    let dir = options
        .template
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join("shop");
    if dir.is_dir() {
        let count = pages.upload(&dir).await?;
        tracing::info!(count, bucket = pages.bucket(), "uploaded the shop's pages");
    }
    Ok(Some(pages))
}

/// The `--env-vars` file of `sam local start-api` and `sam local invoke` for this model: each
/// function's resolved environment under its logical id, with the endpoint as the function
/// containers reach it (`container_endpoint`, also replacing `host_endpoint` in queue URLs) in
/// `AWS_ENDPOINT_URL`, and the Redis URL they reach in `REDIS_URL` where the function declares
/// it. `ORIGIN_VERIFY` is empty: `sam local` has no distribution in front to add the header
/// the functions would otherwise require. SAM only overrides variables that the template
/// declares for the function, so the file sets nothing else (a contract test reads both).
pub fn sam_env_vars(
    model: &Model,
    host_endpoint: &str,
    container_endpoint: &str,
    container_redis_url: &str,
) -> serde_json::Value {
    let host = host_endpoint.trim_end_matches('/');
    let container = container_endpoint.trim_end_matches('/');
    let mut file = serde_json::Map::new();
    for function in &model.functions {
        let environment: serde_json::Map<String, serde_json::Value> = function
            .environment
            .iter()
            .map(|(name, value)| {
                let value = match name.as_str() {
                    "AWS_ENDPOINT_URL" => container.to_owned(),
                    "REDIS_URL" => container_redis_url.to_owned(),
                    app::http::ORIGIN_VERIFY_ENV => String::new(),
                    _ if host.is_empty() => value.clone(),
                    _ => value.replace(host, container),
                };
                (name.clone(), value.into())
            })
            .collect();
        file.insert(function.logical_id.clone(), environment.into());
    }
    file.into()
}

impl LocalCloud {
    pub async fn start(options: CloudOptions) -> anyhow::Result<Self> {
        refuse_public_secret_off_loopback(options.address, &options.jwt_secret)?;
        // First: a machine that cannot enforce the share fails before anything is created.
        let cpu_quota = match options.lambda_cpu {
            Some(period) => Some(Arc::new(CpuQuota::new(
                &format!("local-cloud.{}", options.stack_name),
                period,
                "--lambda-cpu",
            )?)),
            None => None,
        };
        let (mut model, mut context) = provision(&options).await?;
        let faults = Arc::new(Faults::new(&options.faults));
        context.faults = faults.clone();
        let (proxies, env_overrides) = start_proxies(&mut model, &options, &faults).await?;

        let runtime = Runtime::start(
            &model.functions,
            RuntimeOptions {
                binaries_dir: options.binaries_dir.clone(),
                instances: options.instances,
                base_env: options.function_env.clone(),
                log_invocations: options.log_invocations,
                env_overrides,
                faults: faults.clone(),
                dashboard: context.dashboard.clone(),
                cpu_quota,
            },
        )
        .await
        .context("failed to start the functions")?;

        let mut routes = Vec::new();
        let mut subscribers = Vec::new();
        let mut invocable = Vec::new();
        for spec in &model.functions {
            let handle = runtime
                .function(&spec.name)
                .with_context(|| format!("function {} did not start", spec.name))?;
            invocable.push((spec, handle.clone()));
            for event in &spec.events {
                if let EventSpec::Http(route) = event {
                    let mut spec = route.clone();
                    if !options.route_throttling {
                        spec.throttle = None;
                    }
                    routes.push(Route {
                        spec,
                        function: handle.clone(),
                    });
                }
            }
            let instances = spec
                .reserved_concurrency
                .map_or(options.instances, |reserved| {
                    reserved.min(options.instances)
                })
                .max(1);
            if options.disabled_sources.contains(&spec.name) {
                continue;
            }
            subscribers.push(Subscriber {
                spec: spec.clone(),
                handle,
                instances,
            });
        }

        let lambda = LambdaApi::new(invocable, &context.region, &context.account_id);
        let pages = upload_pages(&model, &options).await?;
        let listener = tokio::net::TcpListener::bind(options.address)
            .await
            .with_context(|| format!("failed to listen on {}", options.address))?;
        let address = listener.local_addr()?;
        let (stop_gateway, stopped) = oneshot::channel();
        let edge = gateway::Edge::new(
            if options.route_throttling {
                model.edge_limits.clone()
            } else {
                Vec::new()
            },
            model.origin_headers.clone(),
            options.trust_forwarded_for,
        );
        let gateway = tokio::spawn(gateway::serve(
            listener,
            routes,
            edge,
            options.jwt_secret.clone(),
            context.dashboard.clone(),
            pages,
            Some(lambda),
            async move {
                let _ = stopped.await;
            },
        ));
        let sources = Sources::start(&subscribers, &context);
        let sample_queues = context.dashboard.sample_queues(&model, context.sqs.clone());
        Ok(Self {
            address,
            model,
            faults,
            _proxies: proxies,
            _sample_queues: AbortOnDrop(sample_queues),
            runtime,
            sources,
            gateway,
            stop_gateway,
        })
    }

    /// How many invocations `function` (its logical id) has answered so far, whatever invoked
    /// it; `None` for a function the cloud does not run.
    pub fn invocations(&self, function: &str) -> Option<u64> {
        self.runtime
            .function(function)
            .map(|handle| handle.invocations())
    }

    /// Invokes `function` (its logical id) once with `payload`, as `aws lambda invoke` would,
    /// beside its event sources: e.g. a scheduled function run at a moment a test chooses.
    pub async fn invoke(
        &self,
        function: &str,
        payload: bytes::Bytes,
    ) -> anyhow::Result<bytes::Bytes> {
        let handle = self
            .runtime
            .function(function)
            .with_context(|| format!("no function {function}"))?;
        handle
            .invoke("invoke", payload)
            .await
            .map_err(|err| anyhow::anyhow!("{function} failed: {err:?}"))
    }

    /// Stops the HTTP API, the event sources and every function process.
    pub async fn stop(self) {
        let _ = self.stop_gateway.send(());
        let _ = self.gateway.await;
        self.sources.stop().await;
        self.runtime.shutdown().await;
    }
}

/// Starts a fault proxy for every function of the plan that needs one, and answers the
/// environment that points each such function at its proxy. Applies the plan's timeouts.
async fn start_proxies(
    model: &mut Model,
    options: &CloudOptions,
    faults: &Arc<Faults>,
) -> anyhow::Result<(
    Vec<proxy::Proxy>,
    BTreeMap<String, BTreeMap<String, String>>,
)> {
    for name in options.faults.functions.keys() {
        if !model.functions.iter().any(|f| &f.name == name) {
            anyhow::bail!("fault switch for {name}: the template has no such function");
        }
    }
    let mut proxies = Vec::new();
    let mut overrides = BTreeMap::new();
    for function in &mut model.functions {
        let Some(plan) = options.faults.function(&function.name) else {
            continue;
        };
        if let Some(timeout) = plan.timeout {
            function.timeout = timeout;
        }
        let mut env = BTreeMap::new();
        if let Some(attempts) = plan.sdk_attempts {
            env.insert("AWS_MAX_ATTEMPTS".to_owned(), attempts.to_string());
        }
        if plan.needs_proxy() {
            let upstream = options
                .function_env
                .get("AWS_ENDPOINT_URL")
                .context("AWS faults need AWS_ENDPOINT_URL (the emulators)")?;
            let started = proxy::start(&function.name, upstream, faults.clone()).await?;
            let url = format!("http://{}", started.address);
            for name in [
                "AWS_ENDPOINT_URL",
                "AWS_ENDPOINT_URL_DYNAMODB",
                "AWS_ENDPOINT_URL_SQS",
            ] {
                env.insert(name.to_owned(), url.clone());
            }
            proxies.push(started);
        }
        overrides.insert(function.name.clone(), env);
    }
    Ok((proxies, overrides))
}

/// Aborts a background task when the cloud is dropped or stopped.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A runner that other machines can reach must not sign with the public development secret:
/// whoever read it in this repository could mint an admin token for the runner's HTTP API.
fn refuse_public_secret_off_loopback(address: SocketAddr, secret: &[u8]) -> anyhow::Result<()> {
    if address.ip().is_loopback() || secret != crate::jwt::DEFAULT_LOCAL_SECRET.as_bytes() {
        return Ok(());
    }
    anyhow::bail!(
        "refusing to listen on {address} with the public development token secret: anyone who \
         reaches that address could sign in as an admin. Set LOCAL_JWT_SECRET to a secret of \
         your own (e.g. `export LOCAL_JWT_SECRET=$(openssl rand -hex 32)`), or listen on \
         loopback only (--address / LOCAL_CLOUD_ADDRESS 127.0.0.1:PORT)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_may_use_the_public_secret() {
        let public = crate::jwt::DEFAULT_LOCAL_SECRET.as_bytes();
        for address in ["127.0.0.1:3000", "[::1]:3000", "127.0.0.2:0"] {
            assert!(
                refuse_public_secret_off_loopback(address.parse().unwrap(), public).is_ok(),
                "{address}"
            );
        }
        for address in ["0.0.0.0:3000", "[::]:3000", "192.0.2.7:3000"] {
            let refused = refuse_public_secret_off_loopback(address.parse().unwrap(), public)
                .expect_err(address)
                .to_string();
            assert!(
                refused.contains(address) && refused.contains("LOCAL_JWT_SECRET"),
                "{refused}"
            );
            assert!(refuse_public_secret_off_loopback(address.parse().unwrap(), b"ours").is_ok());
        }
    }
}
