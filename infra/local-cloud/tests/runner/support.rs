//! What the runner's tests share.

use std::path::PathBuf;

/// The directory holding the workspace's binaries of this build (`target/debug`), where the
/// fixture functions are: `cargo test --workspace` builds them with the tests.
pub fn binaries_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    // target/debug/deps/runner-<hash> -> target/debug
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("the test binary lives in target/<profile>/deps")
        .to_path_buf()
}

/// The fixture template.
pub fn fixture_template() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/template.yaml")
}

/// The project's own template.
pub fn project_template() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../template.yaml")
}

/// A name no other test uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

/// An emulator endpoint from the environment that `make test` gives the tests.
pub fn endpoint(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set. Run these tests with `make test`, or start the emulators with \
             `make emulators` and export the variables in .local/dev/emulators.env"
        )
    })
}

use local_cloud::cloud::{CloudOptions, LocalCloud, function_env_from_process};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The fixture template running for real under a stack name of its own, with its HTTP API
/// on a free port.
pub async fn start_fixture_cloud() -> LocalCloud {
    endpoint("AWS_ENDPOINT_URL");
    LocalCloud::start(CloudOptions {
        template: fixture_template(),
        parameter_overrides: Default::default(),
        stack_name: unique("fixture"),
        address: "127.0.0.1:0".parse().unwrap(),
        instances: 2,
        binaries_dir: binaries_dir(),
        jwt_secret: local_cloud::jwt::DEFAULT_LOCAL_SECRET.as_bytes().to_vec(),
        log_invocations: true,
        account_id: local_cloud::cloud::DEFAULT_ACCOUNT_ID.to_owned(),
        function_env: function_env_from_process(),
        disabled_sources: Vec::new(),
        faults: Default::default(),
        route_throttling: true,
        lambda_cpu: None,
        trust_forwarded_for: false,
    })
    .await
    .expect("the fixture cloud starts")
}

/// AWS clients for the emulators the cloud runs against.
pub async fn sdk() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .load()
        .await
}

/// The URL of a queue of the running cloud, by logical id.
pub fn queue_url(cloud: &LocalCloud, logical_id: &str) -> String {
    let queue = cloud
        .model
        .queue(logical_id)
        .unwrap_or_else(|| panic!("no queue {logical_id}"));
    format!(
        "{}/{}/{}",
        endpoint("AWS_ENDPOINT_URL").trim_end_matches('/'),
        local_cloud::cloud::DEFAULT_ACCOUNT_ID,
        queue.name
    )
}

/// Drains JSON messages from a queue until `done` holds for all gathered so far, or
/// `timeout` passes; answers what was gathered.
pub async fn gather(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    timeout: Duration,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let started = Instant::now();
    let mut seen = Vec::new();
    while !done(&seen) && started.elapsed() < timeout {
        let output = sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive from the queue");
        for message in output.messages.unwrap_or_default() {
            seen.push(
                serde_json::from_str(message.body().unwrap_or("null")).unwrap_or(Value::Null),
            );
            sqs.delete_message()
                .queue_url(queue_url)
                .receipt_handle(message.receipt_handle().unwrap_or_default())
                .send()
                .await
                .expect("delete from the queue");
        }
    }
    seen
}
