//! Secrets Manager adapter of the flash sale's keys: the [`WebhookSecret`] that signs the
//! payment provider's notices, read at cold start ([`webhook_secret`]) or on its first use
//! ([`SecretOnFirstUse`]), and the [`Seal`] of the order queue's messages ([`order_seal`]).

use crate::seckill::admission::seal::Seal;
use crate::seckill::payment::WebhookSecret;
use aws_types::SdkConfig;

/// Why the payment callbacks' secret could not be read (at cold start, or on first use).
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("failed to read the secret {arn}")]
    Read {
        arn: String,
        #[source]
        source: anyhow::Error,
    },
    #[error("the secret {arn} has no string value of at least 16 bytes")]
    Unusable { arn: String },
}

/// The secret that signs the payment provider's callbacks, from Secrets Manager.
pub async fn webhook_secret(
    client: &aws_sdk_secretsmanager::Client,
    arn: &str,
) -> Result<WebhookSecret, SecretError> {
    key(client, arn, WebhookSecret::new).await
}

/// The key that seals the order queue's messages, from Secrets Manager.
pub async fn order_seal(
    client: &aws_sdk_secretsmanager::Client,
    arn: &str,
) -> Result<Seal, SecretError> {
    key(client, arn, Seal::new).await
}

/// The string value of the secret `arn`, as `make` takes it (`None`: too short).
async fn key<K>(
    client: &aws_sdk_secretsmanager::Client,
    arn: &str,
    make: impl FnOnce(Vec<u8>) -> Option<K>,
) -> Result<K, SecretError> {
    let output = client
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|err| SecretError::Read {
            arn: arn.to_owned(),
            source: err.into(),
        })?;
    output
        .secret_string()
        .and_then(|value| make(value.as_bytes().to_vec()))
        .ok_or_else(|| SecretError::Unusable {
            arn: arn.to_owned(),
        })
}

/// The webhook secret read on its first use instead of at cold start, for a function whose
/// first requests may not need it (the sandbox's checkout page does not; its Pay button's
/// notice does). A read that fails is not kept: the next use tries again.
pub struct SecretOnFirstUse {
    config: SdkConfig,
    arn: String,
    secret: tokio::sync::OnceCell<WebhookSecret>,
}

impl SecretOnFirstUse {
    pub fn new(config: &SdkConfig, arn: impl Into<String>) -> Self {
        Self {
            config: config.clone(),
            arn: arn.into(),
            secret: tokio::sync::OnceCell::new(),
        }
    }

    /// The secret, read now if it has not been yet.
    pub async fn get(&self) -> Result<&WebhookSecret, SecretError> {
        self.secret
            .get_or_try_init(|| async {
                let client = aws_sdk_secretsmanager::Client::new(&self.config);
                webhook_secret(&client, &self.arn).await
            })
            .await
    }
}
