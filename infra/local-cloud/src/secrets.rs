//! Creates the template's Secrets Manager secrets in the emulator, each with its documented
//! local value ([`local_value`]): in the cloud `GenerateSecretString` makes one nobody knows,
//! locally the sandbox and the tests must be able to sign with it. A secret that exists is
//! left as it is, so `make dev` can be re-run at will.

use anyhow::Context as _;
use aws_sdk_secretsmanager::operation::create_secret::CreateSecretError;

use crate::model::SecretSpec;

/// The value a secret of the template has locally: `local-<LogicalId>-value` (for the
/// payment callbacks, `local-PaymentWebhookSecret-value`).
pub fn local_value(logical_id: &str) -> String {
    format!("local-{logical_id}-value")
}

/// Creates each secret under the name its `Ref` resolves to locally, unless it exists.
pub async fn provision(
    secrets: &[SecretSpec],
    client: &aws_sdk_secretsmanager::Client,
) -> anyhow::Result<()> {
    for secret in secrets {
        let created = client
            .create_secret()
            .name(&secret.name)
            .secret_string(local_value(&secret.logical_id))
            .send()
            .await;
        match created {
            Ok(_) => {}
            Err(err)
                if matches!(
                    err.as_service_error(),
                    Some(CreateSecretError::ResourceExistsException(_))
                ) => {}
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("failed to create the secret {}", secret.logical_id));
            }
        }
    }
    Ok(())
}
