//! The webhook secret read on first use, against moto's Secrets Manager: a secret that cannot
//! be read is an error at that use, not a panic, and is not kept; once it exists, it is read
//! and then kept.

use crate::support::{clients, unique};
use app::cloud;
use app::seckill::payment::secretsmanager::{SecretError, SecretOnFirstUse};

#[tokio::test]
async fn a_secret_is_read_on_first_use_and_a_failed_read_is_tried_again() {
    clients().await; // says so when the emulator is not configured
    let config = cloud::sdk_config().expect("the emulators' region and credentials");
    let secrets = aws_sdk_secretsmanager::Client::new(&config);
    let name = unique("webhook");
    let lazy = SecretOnFirstUse::new(&config, &name);

    let missing = lazy.get().await.unwrap_err();
    assert!(matches!(missing, SecretError::Read { .. }), "{missing:?}");

    let value = "a-webhook-secret-of-32-bytes-xyz";
    secrets
        .create_secret()
        .name(&name)
        .secret_string(value)
        .send()
        .await
        .expect("create the test secret");
    let signed = lazy
        .get()
        .await
        .expect("the secret exists now")
        .sign(7, b"{}");
    let expected = app::seckill::payment::WebhookSecret::new(value.as_bytes().to_vec())
        .unwrap()
        .sign(7, b"{}");
    assert_eq!(signed, expected);

    // Kept: deleting the secret does not change what this process signs with.
    secrets
        .delete_secret()
        .secret_id(&name)
        .force_delete_without_recovery(true)
        .send()
        .await
        .expect("delete the test secret");
    assert_eq!(lazy.get().await.unwrap().sign(7, b"{}"), expected);
}
