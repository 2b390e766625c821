//! What the runner runs, resolved from `template.yaml`: every intrinsic already replaced by
//! local names, URLs and ARNs. The template module produces it; everything else reads it.

use std::collections::BTreeMap;
use std::time::Duration;

/// The whole local deployment.
#[derive(Clone, Debug, Default)]
pub struct Model {
    pub stack_name: String,
    pub tables: Vec<TableSpec>,
    pub queues: Vec<QueueSpec>,
    pub buckets: Vec<BucketSpec>,
    pub functions: Vec<FunctionSpec>,
    pub secrets: Vec<SecretSpec>,
    /// The rate-based rules of the distribution's web ACL (`AWS::WAFv2::WebACL`, scope
    /// `CLOUDFRONT`), when the template has one: the per-source limits evaluated before any
    /// route's bucket.
    pub edge_limits: Vec<EdgeLimit>,
    /// The headers CloudFront adds to every request it sends to the API
    /// (`OriginCustomHeaders` of the distribution's custom origins), their values resolved.
    pub origin_headers: Vec<(String, String)>,
}

/// A Secrets Manager secret of the template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretSpec {
    pub logical_id: String,
    /// What its `Ref` resolves to locally, and its name in the emulator.
    pub name: String,
}

impl Model {
    /// The function, queue or table of this logical id, if the template declares one.
    pub fn function(&self, logical_id: &str) -> Option<&FunctionSpec> {
        self.functions.iter().find(|f| f.logical_id == logical_id)
    }

    pub fn queue(&self, logical_id: &str) -> Option<&QueueSpec> {
        self.queues.iter().find(|q| q.logical_id == logical_id)
    }

    pub fn table(&self, logical_id: &str) -> Option<&TableSpec> {
        self.tables.iter().find(|t| t.logical_id == logical_id)
    }

    pub fn bucket(&self, logical_id: &str) -> Option<&BucketSpec> {
        self.buckets.iter().find(|b| b.logical_id == logical_id)
    }

    /// Every function's HTTP API routes.
    pub fn http_routes(&self) -> impl Iterator<Item = &HttpRoute> {
        self.functions
            .iter()
            .flat_map(|f| &f.events)
            .filter_map(EventSpec::as_http)
    }
}

/// An `AWS::DynamoDB::Table`.
#[derive(Clone, Debug, PartialEq)]
pub struct TableSpec {
    pub logical_id: String,
    /// The physical table name.
    pub name: String,
    /// `(attribute name, attribute type "S" | "N" | "B")`.
    pub attributes: Vec<(String, String)>,
    /// `(attribute name, "HASH" | "RANGE")`.
    pub key_schema: Vec<(String, String)>,
    pub global_secondary_indexes: Vec<IndexSpec>,
    pub local_secondary_indexes: Vec<IndexSpec>,
    /// `StreamSpecification.StreamViewType`, when the table has a stream.
    pub stream_view_type: Option<String>,
    /// `TimeToLiveSpecification.AttributeName`, when enabled.
    pub ttl_attribute: Option<String>,
}

/// A secondary index.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexSpec {
    pub name: String,
    pub key_schema: Vec<(String, String)>,
    /// `ALL`, `KEYS_ONLY` or `INCLUDE`.
    pub projection_type: String,
    pub non_key_attributes: Vec<String>,
}

/// An `AWS::S3::Bucket`: only its name matters locally (its access settings are the
/// cloud's; the emulator's buckets are private to the runner and the functions anyway).
#[derive(Clone, Debug, PartialEq)]
pub struct BucketSpec {
    pub logical_id: String,
    /// `BucketName`, or `<stack>-<logical id>` in lower case (bucket names are).
    pub name: String,
}

/// An `AWS::SQS::Queue`.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueSpec {
    pub logical_id: String,
    pub name: String,
    /// Its URL as `!Ref` gives it to the functions: `{sqs_endpoint}/{account}/{name}`.
    /// Provisioning checks that the emulator hands out the same one.
    pub url: String,
    /// SQS attributes as `CreateQueue` takes them (`VisibilityTimeout`, `DelaySeconds`,
    /// `MessageRetentionPeriod`, `RedrivePolicy` as a JSON string with the DLQ's ARN,
    /// `FifoQueue`, ...), resolved.
    pub attributes: BTreeMap<String, String>,
}

/// An `AWS::Serverless::Function`, with Globals merged in.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionSpec {
    pub logical_id: String,
    /// The name the runner gives it (`AWS_LAMBDA_FUNCTION_NAME`); the logical id.
    pub name: String,
    /// The Cargo binary to run (`Metadata.BuildProperties.Binary`): a bundle of functions.
    pub binary: String,
    /// `Handler`, which Lambda hands the process as `_HANDLER`: the function of the bundle that
    /// runs (`bootstrap` when the template names none).
    pub handler: String,
    pub timeout: Duration,
    pub memory_mb: u32,
    /// `Environment.Variables`, resolved.
    pub environment: BTreeMap<String, String>,
    /// `ReservedConcurrentExecutions`: at most this many instances.
    pub reserved_concurrency: Option<u32>,
    /// Lambda's log-level filter: `LoggingConfig.ApplicationLogLevel` (INFO when unset) when
    /// `LoggingConfig.LogFormat` is `JSON`; `None` for the text format, which Lambda never
    /// filters.
    pub log_filter: Option<LogLevel>,
    pub events: Vec<EventSpec>,
}

/// Lambda's application log levels, least severe first (`ApplicationLogLevel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
    Fatal,
}

impl LogLevel {
    pub const ALL: [LogLevel; 6] = [
        Self::Trace,
        Self::Debug,
        Self::Info,
        Self::Warn,
        Self::Error,
        Self::Fatal,
    ];

    /// As Lambda spells it (`AWS_LAMBDA_LOG_LEVEL`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Trace => "TRACE",
            Self::Debug => "DEBUG",
            Self::Info => "INFO",
            Self::Warn => "WARN",
            Self::Error => "ERROR",
            Self::Fatal => "FATAL",
        }
    }

    /// A level's name in any case; `None` for anything else.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|level| level.as_str().eq_ignore_ascii_case(name))
    }
}

/// One entry of a function's `Events`.
#[derive(Clone, Debug, PartialEq)]
pub enum EventSpec {
    Http(HttpRoute),
    Sqs(SqsSource),
    Stream(StreamSource),
    Schedule(ScheduleSource),
    Topic(TopicSource),
    Cognito(CognitoTrigger),
}

impl EventSpec {
    /// The route, if this is an `HttpApi` event.
    pub fn as_http(&self) -> Option<&HttpRoute> {
        match self {
            Self::Http(route) => Some(route),
            _ => None,
        }
    }
}

/// An `HttpApi` event.
#[derive(Clone, Debug, PartialEq)]
pub struct HttpRoute {
    pub event_name: String,
    /// Upper case, or `ANY`.
    pub method: String,
    /// As written, e.g. `/users/{userId}/follow` or `/{proxy+}`.
    pub path: String,
    /// `None` when the route has `Auth.Authorizer: NONE` or the API has no authorizer.
    pub authorizer: Option<JwtAuthorizer>,
    /// The stage's throttling of this route: its own `RouteSettings` entry, else the API's
    /// `DefaultRouteSettings`. `None` when neither sets a limit: in AWS only the account's
    /// regional quota, which the template does not describe, then applies.
    pub throttle: Option<RouteThrottle>,
}

impl HttpRoute {
    /// The route key, as API Gateway names a route: `METHOD /path`, or `$default`.
    pub fn key(&self) -> String {
        if self.path == "$default" {
            self.path.clone()
        } else {
            format!("{} {}", self.method, self.path)
        }
    }
}

/// An HTTP API route's throttling, a token bucket as API Gateway keeps it per route for all
/// clients together: `burst` tokens at most, refilled at `rate_per_second`; a request takes
/// one or is answered 429.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RouteThrottle {
    /// `ThrottlingRateLimit` (a double: 0.5 is one request every two seconds).
    pub rate_per_second: f64,
    /// `ThrottlingBurstLimit`.
    pub burst: u32,
}

impl RouteThrottle {
    pub fn new(rate_per_second: f64, burst: u32) -> Self {
        Self {
            rate_per_second,
            burst,
        }
    }
}

/// A rate-based rule of the web ACL: at most `limit` requests from one source IP within
/// `window`, counting only those `scope` matches; past it, every matching request from that
/// source is answered `status` with `body` until its count falls back.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeLimit {
    /// The rule's `Name`.
    pub name: String,
    pub limit: u64,
    /// `EvaluationWindowSec`.
    pub window: Duration,
    /// The `ScopeDownStatement`'s matches, all of which must hold; empty: every request.
    pub scope: Vec<EdgeMatch>,
    /// The `Block` action's `CustomResponse` code, 403 when it sets none (WAF's default).
    pub status: u16,
    /// Its `CustomResponseBodyKey`'s content and content type; `None` for WAF's default.
    pub body: Option<(String, String)>,
}

/// One `ByteMatchStatement` of a scope-down statement.
#[derive(Clone, Debug, PartialEq)]
pub struct EdgeMatch {
    pub field: EdgeField,
    pub constraint: Positional,
    /// `SearchString`, compared as it is (no text transformation).
    pub value: String,
}

/// The part of a request a match reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeField {
    Method,
    UriPath,
}

/// `PositionalConstraint`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Positional {
    Exactly,
    StartsWith,
    EndsWith,
    Contains,
}

impl EdgeMatch {
    /// Whether a request with this method and path matches.
    pub fn matches(&self, method: &str, path: &str) -> bool {
        let field = match self.field {
            EdgeField::Method => method,
            EdgeField::UriPath => path,
        };
        let value = self.value.as_str();
        match self.constraint {
            Positional::Exactly => field == value,
            Positional::StartsWith => field.starts_with(value),
            Positional::EndsWith => field.ends_with(value),
            Positional::Contains => field.contains(value),
        }
    }
}

impl EdgeLimit {
    /// Whether the rule counts a request with this method and path.
    pub fn applies(&self, method: &str, path: &str) -> bool {
        self.scope.iter().all(|m| m.matches(method, path))
    }
}

/// The HttpApi's JWT authorizer as configured in the template. Locally, tokens are verified
/// with the runner's HS256 secret instead of the issuer's keys.
#[derive(Clone, Debug, PartialEq)]
pub struct JwtAuthorizer {
    pub name: String,
    /// e.g. `$request.header.Authorization`.
    pub identity_source: String,
}

/// An `SQS` event.
#[derive(Clone, Debug, PartialEq)]
pub struct SqsSource {
    pub event_name: String,
    pub queue_logical_id: String,
    pub queue_arn: String,
    pub queue_url: String,
    pub batch_size: u32,
    pub batching_window: Duration,
    pub report_batch_item_failures: bool,
    /// `ScalingConfig.MaximumConcurrency`.
    pub maximum_concurrency: Option<u32>,
    pub enabled: bool,
}

/// A `DynamoDB` (streams) event.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamSource {
    pub event_name: String,
    pub table_logical_id: String,
    pub table_name: String,
    /// `TRIM_HORIZON` or `LATEST`.
    pub starting_position: String,
    pub batch_size: u32,
    pub batching_window: Duration,
    /// `FilterCriteria.Filters[].Pattern`, each parsed from its JSON string.
    pub filters: Vec<serde_json::Value>,
    /// `-1` (or absent) is infinite, as in Lambda.
    pub maximum_retry_attempts: Option<i64>,
    /// `MaximumRecordAgeInSeconds`: a record older than this is not delivered (again) but
    /// reported to the on-failure destination. `-1` (or absent) is infinite, as in Lambda.
    pub maximum_record_age_seconds: Option<i64>,
    pub bisect_batch_on_function_error: bool,
    /// `DestinationConfig.OnFailure.Destination` when it is an SQS queue: its URL.
    pub on_failure_queue_url: Option<String>,
    pub function_response_report_batch_item_failures: bool,
    pub enabled: bool,
}

/// An `SNS` event. Locally nothing publishes to the topic (the emulators' services do not
/// send their events, e.g. ElastiCache's), so the runner subscribes nothing: the function
/// runs and is invoked directly, as a test does with `LocalCloud::invoke`.
#[derive(Clone, Debug, PartialEq)]
pub struct TopicSource {
    pub event_name: String,
    /// The topic, as the template's `Topic` evaluates (a logical id locally).
    pub topic: String,
}

/// A Lambda trigger of a Cognito user pool: the pool's `LambdaConfig` names the function.
/// Locally there is no user pool, so nothing signs anyone in: the function runs and is invoked
/// directly (a test, `local-cloud check`), like an SNS subscriber.
#[derive(Clone, Debug, PartialEq)]
pub struct CognitoTrigger {
    /// The user pool's logical id.
    pub user_pool: String,
    /// The trigger, as `LambdaConfig` names it: `PreTokenGeneration` (from
    /// `PreTokenGenerationConfig` too), `PreSignUp`, `CustomMessage`, ...
    pub trigger: String,
    /// The event version Cognito sends: `LambdaVersion` (`V1_0`, `V2_0`, `V3_0`), `V1_0` when
    /// the trigger has none.
    pub version: String,
}

/// A `Schedule` or `ScheduleV2` event.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleSource {
    pub event_name: String,
    /// `rate(5 minutes)` or `cron(0 12 * * ? *)`.
    pub expression: String,
    /// `Input`, a JSON text passed instead of the scheduled event.
    pub input: Option<String>,
    pub enabled: bool,
}
