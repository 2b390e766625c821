//! The cloud clients: one `SdkConfig` per process and the clients derived from it, and the
//! Redis connection with the endpoint it goes to.
//!
//! Loading the `SdkConfig` resolves region, credentials and endpoints, which is expensive, so
//! it happens once at cold start; deriving a client from it is cheap. Endpoints come from the
//! standard variables (`AWS_ENDPOINT_URL`, and per service `AWS_ENDPOINT_URL_DYNAMODB`,
//! `AWS_ENDPOINT_URL_SQS`, ...), so the same binary talks to AWS, LocalStack or the local
//! emulators without a line of product code knowing which.
//!
//! Redis is found the same way everywhere but the cloud: `REDIS_URL` (the local `redis-server`,
//! LocalStack's companion Redis, tests). In the cloud the template gives the functions the
//! ElastiCache replication group's primary endpoint, `REDIS_ENDPOINT` (`host:port`), so a cold
//! start connects at once: no `DescribeReplicationGroups`, which hundreds of cold starts at a
//! sale's opening would otherwise send to a throttled control plane together. The connection
//! is TLS and trusts Amazon's roots only, like the SDK's HTTPS client, and presents the cache's
//! AUTH token, which a cold start reads from Secrets Manager (`REDIS_AUTH_SECRET_ARN`). A
//! `REDIS_URL` that carries a password of its own (the local `redis-server`'s) is used as is;
//! one without takes the secret's too.

use crate::config::{ConfigError, Env};
use aws_config::retry::RetryConfig;
use aws_config::stalled_stream_protection::StalledStreamProtectionConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, Region, SdkConfig};
use aws_credential_types::Credentials;
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_types::service_config::{LoadServiceConfig, ServiceConfigKey};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::collections::BTreeMap;
use std::time::Duration;

/// Amazon Trust Services' roots (see `certs/README.md`): every AWS API endpoint's
/// certificate, and an ElastiCache node's with in-transit encryption, chains to one of them.
const AMAZON_ROOTS: [&str; 5] = [
    include_str!("../certs/amazon-root-ca-1.pem"),
    include_str!("../certs/amazon-root-ca-2.pem"),
    include_str!("../certs/amazon-root-ca-3.pem"),
    include_str!("../certs/amazon-root-ca-4.pem"),
    include_str!("../certs/starfield-services-root-certificate-authority-g2.pem"),
];

/// How long one attempt of an AWS call may take before the SDK gives it up and retries it
/// (within [`OPERATION_TIMEOUT`]): DynamoDB, SQS and Secrets Manager answer in milliseconds.
/// These two bounds replace the SDK's stalled-stream protection, which watches the throughput
/// of every response body and costs CPU on every call (issue 17's probe: 87 against 98 us
/// per `GetItem` without it). A stalled connection still fails, well within a function's
/// 10 s timeout, and the retry policy stays the SDK's standard one.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);

/// How long one AWS call may take with its retries.
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(5);

/// The timeouts of every AWS call ([`ATTEMPT_TIMEOUT`], [`OPERATION_TIMEOUT`]).
pub fn timeouts() -> TimeoutConfig {
    TimeoutConfig::builder()
        .operation_attempt_timeout(ATTEMPT_TIMEOUT)
        .operation_timeout(OPERATION_TIMEOUT)
        .build()
}

/// The shared SDK configuration, from the environment as Lambda gives it: the region
/// (`AWS_REGION`, or `AWS_DEFAULT_REGION`), the execution role's credentials
/// (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`) and, locally, the
/// endpoints (`AWS_ENDPOINT_URL`, and per service `AWS_ENDPOINT_URL_DYNAMODB`, ...). The local
/// runner, the emulators' scripts and LocalStack's profile set the same variables.
///
/// Built by hand rather than by `aws_config`'s loader: its provider chains (profile files,
/// SSO, web identity through STS, IMDS, ECS) look for what a Lambda function never has, built
/// an STS client with its endpoint rules at every cold start, and were linked into every
/// function. Retries are the SDK's standard ones; every call is bounded by [`timeouts`]
/// instead of stalled-stream protection.
///
/// Its HTTPS client trusts Amazon's roots only, unless an endpoint override is `https://`
/// (LocalStack, a proxy: any certificate), when it keeps the system's trust store. Reading
/// the system store costs every cold start a few milliseconds (a file per certificate on
/// some hosts) for endpoints whose chains always end at these five roots.
pub fn sdk_config() -> Result<SdkConfig, ConfigError> {
    let vars: BTreeMap<String, String> = std::env::vars()
        .filter(|(name, _)| name.starts_with("AWS_"))
        .collect();
    sdk_config_from(&vars)
}

/// [`sdk_config`] from these variables.
fn sdk_config_from(vars: &BTreeMap<String, String>) -> Result<SdkConfig, ConfigError> {
    let var = |name: &str| vars.get(name).filter(|value| !value.trim().is_empty());
    let required = |name: &str| {
        var(name).cloned().ok_or_else(|| ConfigError::Missing {
            name: format!("{name} (Lambda sets it from the execution role)"),
        })
    };
    let region = var("AWS_REGION")
        .or_else(|| var("AWS_DEFAULT_REGION"))
        .cloned()
        .ok_or_else(|| ConfigError::Missing {
            name: "AWS_REGION (or AWS_DEFAULT_REGION)".to_owned(),
        })?;
    let credentials = Credentials::new(
        required("AWS_ACCESS_KEY_ID")?,
        required("AWS_SECRET_ACCESS_KEY")?,
        var("AWS_SESSION_TOKEN").cloned(),
        None,
        "Environment",
    );
    let endpoints = EndpointOverrides(
        vars.iter()
            .filter(|(name, value)| name.starts_with(ENDPOINT_VARIABLE) && !value.trim().is_empty())
            .map(|(name, value)| (name.clone(), value.trim().to_owned()))
            .collect(),
    );
    let http_client = if endpoints.0.values().any(|url| url.starts_with("https:")) {
        system_https_client()
    } else {
        amazon_https_client()
    };
    let mut config = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region))
        .credentials_provider(SharedCredentialsProvider::new(credentials))
        .http_client(http_client)
        .retry_config(RetryConfig::standard())
        .timeout_config(timeouts())
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled());
    if let Some(url) = endpoints.0.get(ENDPOINT_VARIABLE) {
        config = config.endpoint_url(url);
    }
    Ok(config.service_config(endpoints).build())
}

/// The variable of every service's endpoint; `<it>_<SERVICE ID>` is one service's.
const ENDPOINT_VARIABLE: &str = "AWS_ENDPOINT_URL";

/// The endpoint variables of the environment, read by each client as it is built: a
/// service's own (`AWS_ENDPOINT_URL_DYNAMODB`) wins over the shared one, as with the SDK's
/// loader.
#[derive(Debug)]
struct EndpointOverrides(BTreeMap<String, String>);

impl LoadServiceConfig for EndpointOverrides {
    fn load_config(&self, key: ServiceConfigKey<'_>) -> Option<String> {
        // Only endpoints are read from here: the other per-service settings keep defaults.
        if key.env() != ENDPOINT_VARIABLE {
            return None;
        }
        let service = key.service_id().to_uppercase().replace(' ', "_");
        self.0
            .get(&format!("{ENDPOINT_VARIABLE}_{service}"))
            .cloned()
    }
}

/// The SDK's HTTPS client with the system's trust store, for `https://` endpoint overrides.
fn system_https_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{self, rustls_provider::CryptoMode};
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc))
        .build_https()
}

/// The SDK's HTTPS client (rustls with aws-lc, as `default-https-client`) with a trust store
/// of [`AMAZON_ROOTS`] alone.
fn amazon_https_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    use aws_smithy_http_client::tls::{self, TlsContext, TrustStore, rustls_provider::CryptoMode};
    let mut roots = TrustStore::empty().with_native_roots(false);
    for pem in AMAZON_ROOTS {
        roots.add_pem_certificate(pem.as_bytes());
    }
    let context = TlsContext::builder()
        .with_trust_store(roots)
        .build()
        .expect("a trust store of static certificates is valid");
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc))
        .tls_context(context)
        .build_https()
}

/// The AWS clients most functions use, all built from one [`SdkConfig`]. The clients of one
/// function alone (S3 for publish-sale, Secrets Manager for the payment functions) are built
/// where that function asks for them ([`crate::boot::Boot`]): a client here is linked into
/// every function, and the S3 client alone would take three of them past 8 MiB.
#[derive(Clone, Debug)]
pub struct Clients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
}

impl Clients {
    pub fn new(config: &SdkConfig) -> Self {
        Self {
            dynamodb: aws_sdk_dynamodb::Client::new(config),
            sqs: aws_sdk_sqs::Client::new(config),
        }
    }
}

/// The S3 client. Path-style addressing when an endpoint is overridden (the local emulator,
/// LocalStack), whose buckets have no DNS names; virtual-hosted, as AWS prefers, otherwise.
pub fn s3_client(config: &SdkConfig) -> aws_sdk_s3::Client {
    // Empty counts as unset, as in `sdk_config` (the template declares AWS_ENDPOINT_URL empty).
    let path_style = std::env::vars().any(|(name, value)| {
        (name == "AWS_ENDPOINT_URL" || name == "AWS_ENDPOINT_URL_S3") && !value.trim().is_empty()
    });
    let s3 = aws_sdk_s3::config::Builder::from(config)
        .force_path_style(path_style)
        .build();
    aws_sdk_s3::Client::from_conf(s3)
}

/// Why Redis could not be reached at cold start.
#[derive(Debug, thiserror::Error)]
#[error("failed to connect to Redis")]
pub struct RedisConnectError(#[source] redis::RedisError);

/// A Redis connection that reconnects by itself; cheap to clone, shared by all invocations.
/// A `rediss://` URL trusts the Mozilla roots (`webpki-roots`, built in: no trust store file
/// is read), which is what a TLS Redis given by `REDIS_URL` (LocalStack, a managed Redis
/// elsewhere) needs; the cache of the template goes through [`RedisEndpoint::connect`].
///
/// The URL may carry a password: it is never logged.
pub async fn redis(url: &str) -> Result<ConnectionManager, RedisConnectError> {
    let client = redis::Client::open(url).map_err(RedisConnectError)?;
    manage(client).await
}

/// A TLS connection to `host:port` whose server certificate must chain to one of
/// `roots_pem` (PEM certificates), and to nothing else.
pub async fn redis_tls(
    host: &str,
    port: u16,
    roots_pem: &[u8],
) -> Result<ConnectionManager, RedisConnectError> {
    let certificates = redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(roots_pem.to_vec()),
    };
    let client = redis::Client::build_with_tls(format!("rediss://{host}:{port}"), certificates)
        .map_err(RedisConnectError)?;
    manage(client).await
}

async fn manage(client: redis::Client) -> Result<ConnectionManager, RedisConnectError> {
    // Short timeouts: a Lambda invocation should fail fast rather than hang on a lost cache.
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(2)))
        .set_number_of_retries(2);
    ConnectionManager::new_with_config(client, config)
        .await
        .map_err(RedisConnectError)
}

/// Why the Redis endpoint could not be found or reached at cold start.
#[derive(Debug, thiserror::Error)]
pub enum RedisSetupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Connect(#[from] RedisConnectError),
    /// The message names the secret, never its value.
    #[error("failed to read the cache's AUTH token from the secret {arn}")]
    AuthToken {
        arn: String,
        #[source]
        source: anyhow::Error,
    },
}

/// The variable naming the Secrets Manager secret that holds the cache's AUTH token.
pub const REDIS_AUTH_SECRET_ARN: &str = "REDIS_AUTH_SECRET_ARN";

/// Where the configuration says Redis is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RedisEndpoint {
    /// `REDIS_URL`: a `redis://` or `rediss://` URL, used as is (local emulators, LocalStack,
    /// tests).
    Url(String),
    /// `REDIS_ENDPOINT`, `host:port`: the template's ElastiCache replication group, whose
    /// primary endpoint (`!GetAtt RedisCache.PrimaryEndPoint.Address` and `.Port`) is a DNS
    /// name that follows failovers. Always TLS, trusting [`AMAZON_ROOTS`] only.
    Cache { host: String, port: u16 },
}

impl RedisEndpoint {
    /// `REDIS_URL` when set (it wins), else `REDIS_ENDPOINT`, else an error naming both.
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        if env.optional("REDIS_URL").is_some() {
            return env.redis_url("REDIS_URL").map(Self::Url);
        }
        let Some(raw) = env.optional("REDIS_ENDPOINT") else {
            return Err(ConfigError::Missing {
                name: "REDIS_URL (or REDIS_ENDPOINT)".to_owned(),
            });
        };
        let invalid = || ConfigError::Invalid {
            name: "REDIS_ENDPOINT".to_owned(),
            reason: format!("{raw:?} is not host:port"),
        };
        let (host, port) = raw.trim().rsplit_once(':').ok_or_else(invalid)?;
        let port = port.parse().map_err(|_| invalid())?;
        if host.is_empty() || host.contains(['/', '@', ' ']) {
            return Err(invalid());
        }
        Ok(Self::Cache {
            host: host.to_owned(),
            port,
        })
    }

    /// Connects: no control-plane call, the endpoint is in the configuration.
    pub async fn connect(&self) -> Result<ConnectionManager, RedisConnectError> {
        self.connect_with(None).await
    }

    /// Connects presenting `auth_token` (the cache's AUTH token), if given.
    // skip_all: a REDIS_URL may carry a password, and the token is one.
    #[tracing::instrument(skip_all)]
    pub async fn connect_with(
        &self,
        auth_token: Option<&str>,
    ) -> Result<ConnectionManager, RedisConnectError> {
        let client = match self {
            Self::Url(url) => redis::Client::open(with_password(url.as_str(), auth_token)?),
            Self::Cache { host, port } => redis::Client::build_with_tls(
                with_password(format!("rediss://{host}:{port}"), auth_token)?,
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(AMAZON_ROOTS.concat().into_bytes()),
                },
            ),
        }
        .map_err(RedisConnectError)?;
        manage(client).await
    }

    /// Whether the connection takes the AUTH token of `REDIS_AUTH_SECRET_ARN`: the cache
    /// does, and a URL without a password of its own.
    fn takes_auth_token(&self) -> bool {
        match self {
            Self::Cache { .. } => true,
            Self::Url(url) => redis::IntoConnectionInfo::into_connection_info(url.as_str())
                .is_ok_and(|info| info.redis_settings().password().is_none()),
        }
    }
}

/// `url`'s connection settings, with `password` when one is given.
fn with_password(
    url: impl redis::IntoConnectionInfo,
    password: Option<&str>,
) -> Result<redis::ConnectionInfo, RedisConnectError> {
    let info = url.into_connection_info().map_err(RedisConnectError)?;
    Ok(match password {
        Some(password) => {
            let settings = info.redis_settings().clone().set_password(password);
            info.set_redis_settings(settings)
        }
        None => info,
    })
}

/// The cache's AUTH token: the string value of the secret `arn`.
async fn auth_token(arn: &str) -> Result<String, RedisSetupError> {
    let failed = |source: anyhow::Error| RedisSetupError::AuthToken {
        arn: arn.to_owned(),
        source,
    };
    let config = sdk_config().map_err(|err| failed(err.into()))?;
    let output = aws_sdk_secretsmanager::Client::new(&config)
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|err| failed(err.into()))?;
    output
        .secret_string()
        .filter(|token| !token.is_empty())
        .map(str::to_owned)
        .ok_or_else(|| failed(anyhow::anyhow!("the secret has no string value")))
}

/// A function's Redis, from its configuration: the cold-start path of every Redis user. With
/// `REDIS_AUTH_SECRET_ARN`, the AUTH token is read from Secrets Manager first.
pub async fn redis_from_env(env: &Env) -> Result<ConnectionManager, RedisSetupError> {
    let endpoint = RedisEndpoint::from_env(env)?;
    let token = match env.optional(REDIS_AUTH_SECRET_ARN) {
        Some(arn) if endpoint.takes_auth_token() => Some(auth_token(arn.trim()).await?),
        _ => None,
    };
    Ok(endpoint.connect_with(token.as_deref()).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_amazon_roots_are_five_whole_certificates() {
        use base64::Engine as _;
        for pem in AMAZON_ROOTS {
            let body: String = pem
                .lines()
                .skip_while(|line| *line != "-----BEGIN CERTIFICATE-----")
                .skip(1)
                .take_while(|line| *line != "-----END CERTIFICATE-----")
                .collect();
            let der = base64::engine::general_purpose::STANDARD
                .decode(body)
                .expect("base64 inside the PEM armour");
            // A DER certificate is one SEQUENCE with a long-form length.
            assert_eq!(der[0], 0x30);
            assert!(der.len() > 400, "{} bytes", der.len());
            assert_eq!(pem.matches("BEGIN CERTIFICATE").count(), 1);
        }
        // Building the client with them must not panic.
        let _client = amazon_https_client();
    }

    fn vars<const N: usize>(pairs: [(&str, &str); N]) -> BTreeMap<String, String> {
        pairs
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect()
    }

    const LAMBDA: [(&str, &str); 4] = [
        ("AWS_REGION", "eu-west-1"),
        ("AWS_ACCESS_KEY_ID", "ASIAEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", "secret"),
        ("AWS_SESSION_TOKEN", "token"),
    ];

    #[test]
    fn the_sdk_config_is_what_lambda_sets_in_the_environment() {
        let config = sdk_config_from(&vars(LAMBDA)).unwrap();
        assert_eq!(config.region().map(|r| r.as_ref()), Some("eu-west-1"));
        assert_eq!(config.endpoint_url(), None);
        assert!(config.credentials_provider().is_some());
        assert_eq!(config.retry_config(), Some(&RetryConfig::standard()));
        let timeouts = config.timeout_config().unwrap();
        assert_eq!(timeouts.operation_attempt_timeout(), Some(ATTEMPT_TIMEOUT));
        assert_eq!(timeouts.operation_timeout(), Some(OPERATION_TIMEOUT));
        assert!(!config.stalled_stream_protection().unwrap().is_enabled());
        let client = aws_sdk_dynamodb::Client::new(&config);
        assert_eq!(
            client.config().region().map(|r| r.as_ref()),
            Some("eu-west-1")
        );
    }

    #[test]
    fn a_missing_region_or_key_is_named() {
        let mut no_key = vars(LAMBDA);
        no_key.remove("AWS_ACCESS_KEY_ID");
        let err = sdk_config_from(&no_key).unwrap_err().to_string();
        assert!(err.contains("AWS_ACCESS_KEY_ID"), "{err}");
        let mut default_region = vars(LAMBDA);
        default_region.remove("AWS_REGION");
        default_region.insert("AWS_DEFAULT_REGION".to_owned(), "us-east-2".to_owned());
        let config = sdk_config_from(&default_region).unwrap();
        assert_eq!(config.region().map(|r| r.as_ref()), Some("us-east-2"));
        default_region.remove("AWS_DEFAULT_REGION");
        let err = sdk_config_from(&default_region).unwrap_err().to_string();
        assert!(err.contains("AWS_REGION"), "{err}");
    }

    #[test]
    fn a_service_endpoint_wins_over_the_shared_one() {
        let mut local = vars(LAMBDA);
        local.insert(
            ENDPOINT_VARIABLE.to_owned(),
            "http://127.0.0.1:4566".to_owned(),
        );
        local.insert(
            "AWS_ENDPOINT_URL_SECRETS_MANAGER".to_owned(),
            "http://127.0.0.1:5000".to_owned(),
        );
        let config = sdk_config_from(&local).unwrap();
        assert_eq!(config.endpoint_url(), Some("http://127.0.0.1:4566"));
        let service = config.service_config().unwrap();
        let endpoint = |service_id: &str| {
            let key = ServiceConfigKey::builder()
                .service_id(service_id)
                .env(ENDPOINT_VARIABLE)
                .profile("endpoint_url")
                .build()
                .unwrap();
            service.load_config(key)
        };
        // The clients ask with their service ids; only Secrets Manager has its own.
        assert_eq!(
            endpoint("Secrets Manager").as_deref(),
            Some("http://127.0.0.1:5000")
        );
        assert_eq!(endpoint("DynamoDB"), None);
    }

    #[test]
    fn redis_url_wins_over_the_cache_endpoint() {
        let env = Env::from_pairs([
            ("REDIS_URL", "redis://127.0.0.1:6379"),
            ("REDIS_ENDPOINT", "master.sales.cache.amazonaws.com:6379"),
        ]);
        assert_eq!(
            RedisEndpoint::from_env(&env),
            Ok(RedisEndpoint::Url("redis://127.0.0.1:6379".to_owned()))
        );
    }

    #[test]
    fn the_cache_endpoint_alone_is_host_and_port() {
        let env = Env::from_pairs([
            ("REDIS_URL", " "),
            (
                "REDIS_ENDPOINT",
                "master.sales.abc123.use1.cache.amazonaws.com:6379",
            ),
        ]);
        assert_eq!(
            RedisEndpoint::from_env(&env),
            Ok(RedisEndpoint::Cache {
                host: "master.sales.abc123.use1.cache.amazonaws.com".to_owned(),
                port: 6379
            })
        );
        for bad in [
            "no-port",
            ":6379",
            "host:",
            "host:port",
            "host:70000",
            "rediss://h:1",
        ] {
            let env = Env::from_pairs([("REDIS_ENDPOINT", bad)]);
            assert!(
                matches!(
                    RedisEndpoint::from_env(&env),
                    Err(ConfigError::Invalid { name, .. }) if name == "REDIS_ENDPOINT"
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_cache_and_a_url_without_a_password_take_the_auth_token() {
        let cache = RedisEndpoint::Cache {
            host: "master.sales.cache.amazonaws.com".to_owned(),
            port: 6379,
        };
        assert!(cache.takes_auth_token());
        assert!(RedisEndpoint::Url("redis://127.0.0.1:6379".to_owned()).takes_auth_token());
        // The local redis-server's own password, in its URL, wins.
        assert!(!RedisEndpoint::Url("redis://:local@127.0.0.1:6379".to_owned()).takes_auth_token());

        let info = with_password("rediss://cache:6379", Some("token-from-the-secret")).unwrap();
        assert_eq!(
            info.redis_settings().password(),
            Some("token-from-the-secret")
        );
        let info = with_password("redis://:own@127.0.0.1:6379", None).unwrap();
        assert_eq!(info.redis_settings().password(), Some("own"));
    }

    #[test]
    fn a_malformed_redis_url_is_not_skipped_for_the_cache_endpoint() {
        let env = Env::from_pairs([
            ("REDIS_URL", "127.0.0.1:6379"),
            ("REDIS_ENDPOINT", "cache:6379"),
        ]);
        assert!(matches!(
            RedisEndpoint::from_env(&env),
            Err(ConfigError::Invalid { name, .. }) if name == "REDIS_URL"
        ));
    }

    #[test]
    fn tls_urls_are_supported() {
        // Without the redis crate's TLS feature this fails: "the feature is not enabled".
        assert!(redis::Client::open("rediss://cache.example:6379").is_ok());
    }

    #[test]
    fn neither_variable_names_both() {
        let err = RedisEndpoint::from_env(&Env::from_pairs([])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "missing environment variable REDIS_URL (or REDIS_ENDPOINT)"
        );
    }
}
