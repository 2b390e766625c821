//! Every function of the template refuses to start without its configuration, naming the
//! missing variable, instead of serving requests it cannot answer.

/// The functions that read no configuration: `admin-mfa-guard` gets the user pool and the
/// user in each of Cognito's events (its pool cannot be given to it in the environment: the
/// pool names the function, so that would be a circular dependency).
const WITHOUT_CONFIGURATION: &[&str] = &["admin-mfa-guard"];

use local_cloud::template::{LocalNames, load};
use std::path::PathBuf;
use std::process::Command;

#[test]
fn every_function_stops_its_cold_start_naming_the_missing_variable() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let names = LocalNames {
        stack_name: "cold".to_owned(),
        region: "us-east-1".to_owned(),
        account_id: "123456789012".to_owned(),
        sqs_endpoint: "http://127.0.0.1:9".to_owned(),
    };
    let model = load(
        &manifest.join("../../template.yaml"),
        &Default::default(),
        &names,
    )
    .expect("the project template loads");
    let exe = std::env::current_exe().unwrap();
    let binaries = exe.parent().and_then(|d| d.parent()).unwrap();
    assert!(!model.functions.is_empty());
    for function in &model.functions {
        if WITHOUT_CONFIGURATION.contains(&function.handler.as_str()) {
            continue;
        }
        let output = Command::new(binaries.join(&function.binary))
            .env_clear()
            .env("AWS_REGION", "us-east-1")
            .env("_HANDLER", &function.handler)
            .output()
            .unwrap_or_else(|err| panic!("{} runs: {err}", function.binary));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{}: {stderr}",
            function.handler
        );
        assert!(
            stderr.contains("cold start failed: missing environment variable"),
            "{}: {stderr}",
            function.handler
        );
    }
    // A bundle runs only a function it holds, under the name Lambda hands it.
    let bundle = &model.functions[0].binary;
    for handler in [None, Some("no-such-function")] {
        let mut command = Command::new(binaries.join(bundle));
        command.env_clear().env("AWS_REGION", "us-east-1");
        if let Some(handler) = handler {
            command.env("_HANDLER", handler);
        }
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{bundle} {handler:?}: {stderr}"
        );
        assert!(
            stderr.contains("_HANDLER") && stderr.contains(&model.functions[0].handler),
            "{bundle} {handler:?}: {stderr}"
        );
    }
}
