//! The admin MFA guard's Cognito adapter against moto's cognito-idp: `AdminGetUser`'s
//! `UserMFASettingList` before and after a user sets up TOTP, the way an operator does it.

use crate::support::{self, unique};
use app::admin_mfa::{CognitoMfaDirectory, MfaDirectory};
use app::cloud;
use aws_sdk_cognitoidentityprovider::Client;
use aws_sdk_cognitoidentityprovider::types::{
    AuthFlowType, ExplicitAuthFlowsType, SoftwareTokenMfaSettingsType,
};

/// A fresh pool with an admin-only client, and a confirmed user with a permanent password.
async fn pool_with_user(cognito: &Client) -> (String, String, String) {
    let pool = cognito
        .create_user_pool()
        .pool_name(unique("test-pool"))
        .send()
        .await
        .expect("create a user pool")
        .user_pool
        .and_then(|pool| pool.id)
        .expect("the pool's id");
    let client = cognito
        .create_user_pool_client()
        .user_pool_id(&pool)
        .client_name("admin-scripts")
        .explicit_auth_flows(ExplicitAuthFlowsType::AllowAdminUserPasswordAuth)
        .explicit_auth_flows(ExplicitAuthFlowsType::AllowRefreshTokenAuth)
        .send()
        .await
        .expect("create a client")
        .user_pool_client
        .and_then(|client| client.client_id)
        .expect("the client's id");
    let username = unique("ops");
    cognito
        .admin_create_user()
        .user_pool_id(&pool)
        .username(&username)
        .send()
        .await
        .expect("create the user");
    cognito
        .admin_set_user_password()
        .user_pool_id(&pool)
        .username(&username)
        .password("Correct-Horse-9")
        .permanent(true)
        .send()
        .await
        .expect("set a permanent password");
    (pool, client, username)
}

#[tokio::test]
async fn a_user_has_mfa_once_they_set_up_totp() {
    support::clients().await; // checks that the emulator's endpoint is set
    let config = cloud::sdk_config().expect("the emulators' region and credentials");
    let cognito = Client::new(&config);
    let directory = CognitoMfaDirectory::from_config(&config);
    let (pool, client, username) = pool_with_user(&cognito).await;

    assert!(!directory.has_mfa(&pool, &username).await.unwrap());

    // TOTP set up as a user does it: sign in, associate an authenticator, verify a code,
    // make it the preferred factor.
    let signed_in = cognito
        .admin_initiate_auth()
        .user_pool_id(&pool)
        .client_id(&client)
        .auth_flow(AuthFlowType::AdminUserPasswordAuth)
        .auth_parameters("USERNAME", &username)
        .auth_parameters("PASSWORD", "Correct-Horse-9")
        .send()
        .await
        .expect("sign in with the password");
    let access_token = signed_in
        .authentication_result
        .and_then(|result| result.access_token)
        .expect("tokens, no challenge: MFA is not set up yet");
    cognito
        .associate_software_token()
        .access_token(&access_token)
        .send()
        .await
        .expect("associate an authenticator");
    cognito
        .verify_software_token()
        .access_token(&access_token)
        .user_code("123456")
        .send()
        .await
        .expect("verify the authenticator's code");
    cognito
        .admin_set_user_mfa_preference()
        .user_pool_id(&pool)
        .username(&username)
        .software_token_mfa_settings(
            SoftwareTokenMfaSettingsType::builder()
                .enabled(true)
                .preferred_mfa(true)
                .build(),
        )
        .send()
        .await
        .expect("enable TOTP for the user");

    assert!(directory.has_mfa(&pool, &username).await.unwrap());
}

#[tokio::test]
async fn an_unknown_user_is_an_error_not_a_user_without_mfa() {
    support::clients().await;
    let config = cloud::sdk_config().expect("the emulators' region and credentials");
    let (pool, _, _) = pool_with_user(&Client::new(&config)).await;
    let directory = CognitoMfaDirectory::from_config(&config);
    let err = directory
        .has_mfa(&pool, "nobody@example.com")
        .await
        .expect_err("AdminGetUser of an unknown user fails");
    assert_eq!(err.to_string(), "failed to read the MFA settings of a user");
}
