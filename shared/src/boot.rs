//! The cold start every function's `main` shares: logging first, then the environment, then
//! the adapters the function names, each built from the one [`SdkConfig`]
//! (loaded on first use, so a function without AWS clients never pays for it).
//!
//! Whatever fails here ends the cold start with the error and its causes logged
//! ([`telemetry::fail_cold_start`]): Lambda reports an init error and starts again, and no
//! request is ever answered by a half-built function.
//!
//! This is the composition root: the one module that names the adapters of both products.

use aws_config::SdkConfig;
use tokio::sync::OnceCell;

use crate::cloud;
use crate::config::{ConfigError, Env};
use crate::seckill::admission::seal::{ORDER_SEAL_SECRET_ARN, Seal};
use crate::seckill::order::dynamo::DynamoOrderStore;
use crate::seckill::order::redis::RedisReservations;
use crate::seckill::payment::sandbox::SandboxProvider;
use crate::seckill::payment::secretsmanager;
use crate::seckill::payment::{CallbackSecrets, PaymentProvider, WebhookSecret};
use crate::seckill::reservation::dynamo::DynamoReservationBook;
use crate::seckill::sale::dynamo::DynamoSaleStore;
use crate::seckill::sale::redis::RedisSales;
use crate::seckill::sale::s3::S3SalePages;
use crate::seckill::sale::sqs::QueuedPageRequests;
use crate::social::DynamoSocialStore;
use crate::social::derived_store::DynamoDerivedStore;
use crate::{emf, telemetry};
use aws_sdk_dynamodb::Client as DynamoClient;

/// A function's cold start in progress.
pub struct Boot {
    env: Env,
    sdk_config: OnceCell<SdkConfig>,
    dynamodb: OnceCell<DynamoClient>,
    sqs: OnceCell<aws_sdk_sqs::Client>,
}

impl Boot {
    /// Starts logging and metrics and reads the environment.
    pub fn start() -> Self {
        telemetry::init();
        emf::init();
        Self {
            env: Env::process(),
            sdk_config: OnceCell::new(),
            dynamodb: OnceCell::new(),
            sqs: OnceCell::new(),
        }
    }

    pub fn env(&self) -> &Env {
        &self.env
    }

    /// `result`'s value, or the end of the cold start with its error logged.
    pub fn must<T, E: std::error::Error>(&self, result: Result<T, E>) -> T {
        result.unwrap_or_else(|err| telemetry::fail_cold_start(&err))
    }

    /// The one SDK configuration ([`cloud::sdk_config`]), loaded the first time it is asked for.
    pub async fn sdk_config(&self) -> &SdkConfig {
        self.sdk_config
            .get_or_init(|| async { self.must(cloud::sdk_config()) })
            .await
    }

    /// The DynamoDB client, built from [`Self::sdk_config`] the first time it is asked for.
    /// Each service's client is built only by the functions that use it: a client built here
    /// is linked into the function, and every one of them counts against its 8 MiB.
    pub async fn dynamodb(&self) -> &DynamoClient {
        let config = self.sdk_config().await;
        self.dynamodb
            .get_or_init(|| async { DynamoClient::new(config) })
            .await
    }

    /// The SQS client, built from [`Self::sdk_config`] the first time it is asked for.
    pub async fn sqs(&self) -> &aws_sdk_sqs::Client {
        let config = self.sdk_config().await;
        self.sqs
            .get_or_init(|| async { aws_sdk_sqs::Client::new(config) })
            .await
    }

    /// A DynamoDB adapter built by its `from_env`, on the shared client.
    async fn table<T>(&self, from_env: fn(&Env, DynamoClient) -> Result<T, ConfigError>) -> T {
        let client = self.dynamodb().await.clone();
        self.must(from_env(&self.env, client))
    }

    /// The follows, profiles and outbox (`SOCIAL_TABLE`).
    pub async fn social_store(&self) -> DynamoSocialStore {
        self.table(DynamoSocialStore::from_env).await
    }

    /// The notifications and follower counts (`SOCIAL_TABLE`).
    pub async fn derived_store(&self) -> DynamoDerivedStore {
        self.table(DynamoDerivedStore::from_env).await
    }

    /// The orders and their stock (`COMMERCE_TABLE`).
    pub async fn order_store(&self) -> DynamoOrderStore {
        self.table(DynamoOrderStore::from_env).await
    }

    /// The sales (`COMMERCE_TABLE`).
    pub async fn sale_store(&self) -> DynamoSaleStore {
        self.table(DynamoSaleStore::from_env).await
    }

    /// The reservations (预约) of sales (`COMMERCE_TABLE`).
    pub async fn reservation_book(&self) -> DynamoReservationBook {
        self.table(DynamoReservationBook::from_env).await
    }

    /// The page writer's queue (`SALE_PAGE_QUEUE_URL`), where publish-sale asks for pages.
    pub async fn sale_page_queue(&self) -> QueuedPageRequests {
        let client = self.sqs().await.clone();
        self.must(QueuedPageRequests::from_env(&self.env, client))
    }

    /// The bucket of the shop's pages (`SHOP_BUCKET`).
    pub async fn sale_pages(&self) -> S3SalePages {
        let client = cloud::s3_client(self.sdk_config().await);
        self.must(S3SalePages::from_env(&self.env, client))
    }

    /// The sale cache and admission scripts on a Redis connection of their own (a function
    /// that runs the scripts loads them with [`RedisSales::load_scripts`]).
    pub async fn redis_sales(&self) -> RedisSales {
        RedisSales::new(self.must(cloud::redis_from_env(&self.env).await))
    }

    /// [`Self::redis_sales`] with both scripts loaded: what admits orders.
    pub async fn redis_sales_with_scripts(&self) -> RedisSales {
        let sales = self.redis_sales().await;
        self.must(sales.load_scripts().await);
        sales
    }

    /// The reservations with every script loaded: what writes them.
    pub async fn reservations(&self) -> RedisReservations {
        self.must(RedisReservations::from_env(&self.env).await)
    }

    /// The payment provider named by `PAYMENT_PROVIDER` (`sandbox`), or `None` when unset: a
    /// stack without online payment.
    pub fn payment_provider(&self) -> Option<Box<dyn PaymentProvider>> {
        self.must(payment_provider(&self.env))
    }

    /// The secret that signs the payment provider's callbacks: the Secrets Manager secret
    /// `PAYMENT_SECRET_ARN` names (read once, at cold start).
    pub async fn payment_secret(&self) -> WebhookSecret {
        let arn = self.must(self.env.required("PAYMENT_SECRET_ARN"));
        let client = aws_sdk_secretsmanager::Client::new(self.sdk_config().await);
        self.must(secretsmanager::webhook_secret(&client, &arn).await)
    }

    /// The key that seals the order queue's messages: the Secrets Manager secret
    /// `ORDER_SEAL_SECRET_ARN` names (read once, at cold start).
    pub async fn order_seal(&self) -> Seal {
        let arn = self.must(self.env.required(ORDER_SEAL_SECRET_ARN));
        let client = aws_sdk_secretsmanager::Client::new(self.sdk_config().await);
        self.must(secretsmanager::order_seal(&client, &arn).await)
    }

    /// What `/payments/callback` takes a signature of: the provider's secret
    /// (`PAYMENT_SECRET_ARN`) and, on a stack with the sandbox, the sandbox's own
    /// (`SANDBOX_SECRET_ARN`, which the template sets only when `EnablePaymentSandbox` is
    /// true); both read at cold start.
    pub async fn callback_secrets(&self) -> CallbackSecrets {
        let provider = self.payment_secret().await;
        let sandbox = match self.env.optional("SANDBOX_SECRET_ARN") {
            Some(arn) if !arn.trim().is_empty() => {
                let client = aws_sdk_secretsmanager::Client::new(self.sdk_config().await);
                Some(self.must(secretsmanager::webhook_secret(&client, &arn).await))
            }
            _ => None,
        };
        CallbackSecrets { provider, sandbox }
    }

    /// The sandbox's own signing secret (`SANDBOX_SECRET_ARN`), read from Secrets Manager on
    /// its first use ([`secretsmanager::SecretOnFirstUse`]): a missing variable still ends the cold
    /// start; the call does not happen in it.
    pub async fn sandbox_secret_on_first_use(&self) -> secretsmanager::SecretOnFirstUse {
        let arn = self.must(self.env.required("SANDBOX_SECRET_ARN"));
        secretsmanager::SecretOnFirstUse::new(self.sdk_config().await, arn)
    }

    /// The reservations for reading only (no script loaded).
    pub async fn reservation_reader(&self) -> RedisReservations {
        self.must(RedisReservations::reader_from_env(&self.env).await)
    }
}

/// A function's `main`, as a bundle calls it.
pub type Main = fn() -> Result<(), lambda_runtime::Error>;

/// The `main` of a bundle (`functions/bundle-*`): the bootstraps Lambda runs are one binary
/// per group of functions, each function deployed on its own (its role, memory and
/// concurrency in template.yaml) and naming its part in `Handler`, which Lambda hands the
/// process as `_HANDLER`. One binary a group is one link of the release profile's whole-program
/// optimization instead of one a function. An unknown name ends the cold start with the names
/// this bundle knows.
pub fn run_bundle(functions: &[(&str, Main)]) -> Result<(), lambda_runtime::Error> {
    let handler = std::env::var("_HANDLER").ok();
    select(handler.as_deref(), functions)?()
}

fn select(handler: Option<&str>, functions: &[(&str, Main)]) -> Result<Main, String> {
    let known = || {
        functions
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(handler) = handler else {
        return Err(format!(
            "_HANDLER is not set: the function's Handler names one of {}",
            known()
        ));
    };
    functions
        .iter()
        .find(|(name, _)| *name == handler)
        .map(|(_, main)| *main)
        .ok_or_else(|| {
            format!(
                "this bootstrap has no function {handler:?} (_HANDLER); it runs {}",
                known()
            )
        })
}

/// `PAYMENT_PROVIDER`: `sandbox`, or unset for none.
fn payment_provider(env: &Env) -> Result<Option<Box<dyn PaymentProvider>>, ConfigError> {
    match env.optional("PAYMENT_PROVIDER").as_deref() {
        None | Some("") => Ok(None),
        Some("sandbox") => Ok(Some(Box::new(SandboxProvider))),
        Some(other) => Err(ConfigError::Invalid {
            name: "PAYMENT_PROVIDER".to_owned(),
            reason: format!("{other:?} is not a provider this build knows (sandbox)"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_runs_the_function_its_handler_names_and_refuses_any_other() {
        fn first() -> Result<(), lambda_runtime::Error> {
            Err("first".into())
        }
        fn second() -> Result<(), lambda_runtime::Error> {
            Err("second".into())
        }
        let functions: &[(&str, Main)] = &[("first", first), ("second", second)];
        let ran = |handler| select(handler, functions).map(|main| main().unwrap_err().to_string());
        assert_eq!(ran(Some("second")).unwrap(), "second");
        assert_eq!(ran(Some("first")).unwrap(), "first");
        let unknown = ran(Some("third")).unwrap_err();
        assert!(
            unknown.contains("\"third\"") && unknown.contains("first, second"),
            "{unknown}"
        );
        assert!(ran(None).unwrap_err().contains("_HANDLER is not set"));
    }

    #[test]
    fn the_payment_provider_is_the_sandbox_none_or_a_configuration_error() {
        let provider =
            |value: &'static str| payment_provider(&Env::from_pairs([("PAYMENT_PROVIDER", value)]));
        assert!(provider("sandbox").unwrap().is_some());
        assert!(provider("").unwrap().is_none());
        assert!(payment_provider(&Env::from_pairs([])).unwrap().is_none());
        assert!(provider("stripe").is_err());
    }
}
