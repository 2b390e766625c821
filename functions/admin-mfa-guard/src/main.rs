//! Cognito Pre Token Generation trigger (V2): takes `admin` out of the tokens of an operator
//! without MFA; every other token passes unchanged.

use app::admin_mfa::{self, CognitoMfaDirectory};
use app::boot::Boot;
use lambda_runtime::{LambdaEvent, service_fn};

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_runtime::Error> {
    let boot = Boot::start();
    let directory = CognitoMfaDirectory::from_config(boot.sdk_config().await);
    let directory = &directory;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<serde_json::Value>| {
        app::emf::invocation(app::emf::Ids::from(&event.context), async move {
            Ok::<_, lambda_runtime::Error>(admin_mfa::guard(directory, event.payload).await?)
        })
    }))
    .await
}
