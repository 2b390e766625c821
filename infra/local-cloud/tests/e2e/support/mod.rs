//! The harness: a local cloud of the project template per test, an HTTP client of it (`api`,
//! which the `sam local` test shares), and a sale set up as an operator does it (`sale`).

mod api;
mod sale;

pub use api::{Api, eventually, sdk};
pub use sale::{SaleBuilder, sale};

use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use local_cloud::cloud::{CloudOptions, DEFAULT_ACCOUNT_ID, LocalCloud, function_env_from_process};
use serde_json::Value;
use std::path::PathBuf;

fn endpoint(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set. Run these tests with `make test`, or start the emulators with \
             `make emulators` and export the variables in .local/dev/emulators.env"
        )
    })
}

/// The options for the project template under `stack`: queues that redeliver after 2 s so
/// that retries and DLQ redrives happen within a test, and consumers that time out by then.
pub fn options(stack: &str) -> CloudOptions {
    endpoint("AWS_ENDPOINT_URL");
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let exe = std::env::current_exe().expect("the test binary has a path");
    CloudOptions {
        template: manifest.join("../../template.yaml"),
        // Lambda refuses a visibility below the consumer's timeout: both are shortened.
        parameter_overrides: [
            ("QueueVisibilityTimeoutSeconds".to_owned(), "2".to_owned()),
            ("ConsumerTimeoutSeconds".to_owned(), "2".to_owned()),
        ]
        .into(),
        stack_name: stack.to_owned(),
        address: "127.0.0.1:0".parse().unwrap(),
        instances: 2,
        // target/debug/deps/e2e-<hash> -> target/debug, where `make test` built the functions.
        binaries_dir: exe.parent().and_then(|d| d.parent()).unwrap().to_path_buf(),
        jwt_secret: local_cloud::jwt::DEFAULT_LOCAL_SECRET.as_bytes().to_vec(),
        log_invocations: true,
        account_id: DEFAULT_ACCOUNT_ID.to_owned(),
        function_env: function_env_from_process(),
        disabled_sources: Vec::new(),
        faults: Default::default(),
        route_throttling: true,
        lambda_cpu: None,
        trust_forwarded_for: false,
    }
}

/// The cloud's consumer timeout (its default 10 s) and a 20 s visibility timeout instead of the
/// tests' 2 s, for the load tests: a batch of a burst may take longer than 2 s on this machine.
pub fn cloud_consumer_timeouts(options: &mut CloudOptions) {
    options
        .parameter_overrides
        .insert("QueueVisibilityTimeoutSeconds".to_owned(), "20".to_owned());
    options
        .parameter_overrides
        .insert("ConsumerTimeoutSeconds".to_owned(), "10".to_owned());
}

/// A stack name no other test uses.
pub fn unique_stack() -> String {
    format!("e2e{}", &uuid::Uuid::new_v4().simple().to_string()[..12])
}

pub async fn start(options: CloudOptions) -> LocalCloud {
    LocalCloud::start(options)
        .await
        .expect("the local cloud starts")
}

/// Starts the project template on a stack of its own with these fault switches (as
/// `--fault` takes them) on and these template parameters overridden.
pub async fn start_with(faults: &[&str], parameters: &[(&str, &str)]) -> LocalCloud {
    let mut options = options(&unique_stack());
    for switch in faults {
        options
            .faults
            .add(switch)
            .unwrap_or_else(|err| panic!("fault switch {switch}: {err:#}"));
    }
    for (name, value) in parameters {
        options
            .parameter_overrides
            .insert((*name).to_owned(), (*value).to_owned());
    }
    start(options).await
}

/// The logical id of the function whose `Handler` is `handler` (its folder in `functions/`).
pub fn function_named(cloud: &LocalCloud, handler: &str) -> String {
    cloud
        .model
        .functions
        .iter()
        .find(|f| f.handler == handler)
        .unwrap_or_else(|| panic!("no function runs {handler}"))
        .name
        .clone()
}

/// The physical name of a table, and the URL of a queue, by logical id.
pub fn table(cloud: &LocalCloud, logical_id: &str) -> String {
    cloud.model.table(logical_id).unwrap().name.clone()
}

pub fn queue_url(cloud: &LocalCloud, logical_id: &str) -> String {
    cloud.model.queue(logical_id).unwrap().url.clone()
}

/// The API of a local cloud, as the e2e tests use it.
impl Api {
    pub fn new(cloud: &LocalCloud, user: Option<&str>) -> Self {
        Self::with_groups(cloud, user, &[])
    }

    /// The same API and connection pool, as `user`: a crowd of users without a connection
    /// each.
    pub fn as_user(&self, user: &str) -> Self {
        Self {
            base: self.base.clone(),
            token: Some(api::token_of(user, &[])),
            client: self.client.clone(),
        }
    }

    /// An operator: a user in the `admin` group.
    pub fn admin(cloud: &LocalCloud, user: &str) -> Self {
        Self::with_groups(cloud, Some(user), &["admin".to_owned()])
    }

    fn with_groups(cloud: &LocalCloud, user: Option<&str>, groups: &[String]) -> Self {
        Self::at(&format!("http://{}", cloud.address), user, groups)
    }

    /// The API at `base` with a bearer token of someone else's minting (e.g. the development
    /// sign-in's).
    pub fn with_token(base: &str, token: &str) -> Self {
        Self {
            base: base.to_owned(),
            token: Some(token.to_owned()),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// Every notification of the user, newest first, through every page.
    pub async fn all_notifications(&self) -> Vec<Value> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                Some(cursor) => format!("/notifications?limit=100&cursor={cursor}"),
                None => "/notifications?limit=100".to_owned(),
            };
            let (status, body) = self.call("GET", &path, None).await;
            assert_eq!(status, 200, "{body}");
            items.extend(body["items"].as_array().unwrap().iter().cloned());
            match body["nextCursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return items,
            }
        }
    }
}

/// An answer's status and error code (`None` when its body names none).
pub fn status_and_code(answer: &(u16, Value)) -> (u16, Option<&str>) {
    (answer.0, answer.1["error"]["code"].as_str())
}

/// A connection to the Redis at `url`.
pub async fn redis_connection(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// The item under (`pk`, `sk`) in the stack's commerce table, read consistently.
pub async fn commerce_item(
    cloud: &LocalCloud,
    pk: String,
    sk: &str,
) -> Option<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
    use aws_sdk_dynamodb::types::AttributeValue;
    aws_sdk_dynamodb::Client::new(&sdk().await)
        .get_item()
        .table_name(table(cloud, "CommerceTable"))
        .key("pk", AttributeValue::S(pk))
        .key("sk", AttributeValue::S(sk.to_owned()))
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
}

/// Messages visible, in flight or delayed on a queue.
pub async fn queue_depth(sqs: &aws_sdk_sqs::Client, url: &str) -> u32 {
    app::queue::Queue::new(sqs.clone(), url)
        .depth()
        .await
        .unwrap()
}

/// `$LOCAL_STATE/<name>` (relative to the repository root unless absolute; `.local/test` by
/// default), created: where a test leaves what a person may want to look at afterwards.
pub fn state_dir(name: &str) -> PathBuf {
    let state = std::env::var("LOCAL_STATE").unwrap_or_else(|_| ".local/test".to_owned());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let state = PathBuf::from(&state);
    let dir = if state.is_absolute() {
        state
    } else {
        root.join(state)
    }
    .join(name);
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|err| panic!("cannot create {}: {err}", dir.display()));
    dir.canonicalize().unwrap_or(dir)
}

/// Records one fault scenario's outcome for `loadtest/results/reliability.md`: a table row
/// in `$LOCAL_STATE/reliability/<scenario>.md`, written only once every invariant held
/// (after the assertions), and gathered by `infra/reliability-report.sh`.
pub fn report(scenario: &str, fault: &str, switch: &str, invariants: &[String]) {
    let dir = state_dir("reliability");
    let row = format!(
        "| {fault} | `{switch}` | {} | held |\n",
        invariants.join("; ").replace('|', "/")
    );
    std::fs::write(dir.join(format!("{scenario}.md")), row).expect("a reliability row");
}
