//! Logging for every function, in the shape of Powertools for AWS Lambda's logger.
//!
//! Lambda's advanced logging controls set `AWS_LAMBDA_LOG_FORMAT=JSON` and
//! `AWS_LAMBDA_LOG_LEVEL`; the subscriber honours both (and `RUST_LOG` locally), so JSON logs
//! in the cloud and readable lines on a terminal come from one call.
//!
//! # The JSON lines
//!
//! One object per line, with the top-level keys Powertools users search for:
//!
//! | key | what |
//! |---|---|
//! | `level` | `TRACE`, `DEBUG`, `INFO`, `WARN` or `ERROR`: what Lambda's log-level filter reads |
//! | `message` | the message |
//! | `timestamp` | RFC 3339, UTC: without a valid one Lambda takes the line for INFO, whatever its `level` |
//! | `service` | `POWERTOOLS_SERVICE_NAME`, else [`DEFAULT_SERVICE`] |
//! | `cold_start` | `true` until the process's first invocation has ended |
//! | `function_name`, `function_memory_size` | Lambda's `AWS_LAMBDA_FUNCTION_NAME` and `_MEMORY_SIZE` |
//! | `function_request_id`, `xray_trace_id` | the invocation's, from the runtime's span (absent outside one) |
//!
//! then the fields of the spans the line is in (the request's `caller`, `target`, `sale`,
//! `order`) and the line's own fields (`error`, `reason`, ...), each a key of its own.
//!
//! # Lambda's log-level filter
//!
//! Lambda drops every line below `ApplicationLogLevel` before CloudWatch Logs sees it, and
//! takes a line without a valid `level` (or without a valid RFC 3339 `timestamp`) for INFO.
//! The metric lines ([`crate::emf`]) are CloudWatch's to read too, so they carry
//! [`metric_line_level`]: INFO, or the filter's level when it is above INFO, which is the
//! only level that passes at every setting.
//!
//! In production (`APP_ENV=prod`) nothing more verbose than INFO is ever logged, whatever the
//! variables ask: at DEBUG and TRACE the AWS SDK logs whole requests and responses, tokens
//! and the users' data included. The template refuses such a `LogLevel` for prod too; this
//! holds if someone sets the variable by hand.

use lambda_runtime::tracing::subscriber::{
    self,
    filter::{EnvFilter, LevelFilter},
};
use serde_json::{Map, Value};
use std::io::IsTerminal as _;
use std::str::FromStr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{Context, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The `service` of every line and metric line when `POWERTOOLS_SERVICE_NAME` is unset.
pub const DEFAULT_SERVICE: &str = "follow-seckill";

/// Installs the global subscriber. Call once, first thing in `main`.
pub fn init() {
    let production = std::env::var("APP_ENV").is_ok_and(|env| env == "prod");
    let requested = std::env::var("AWS_LAMBDA_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .ok();
    let level = log_level(requested.as_deref(), production);
    let filter = EnvFilter::builder().with_default_directive(level.into());
    // Locally RUST_LOG may hold per-module directives; in production only the capped level.
    let filter = if production {
        filter.parse_lossy("")
    } else {
        filter.from_env_lossy()
    };
    let json = std::env::var("AWS_LAMBDA_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    if json {
        subscriber::registry()
            .with(JsonLines::new(std::io::stdout).with_filter(filter))
            .init();
    } else {
        // Colours only on a terminal: the local runner's log would keep the escape codes as
        // text, and writing them costs on every span and line.
        subscriber::fmt()
            .with_target(false)
            .without_time()
            .with_ansi(std::io::stdout().is_terminal())
            .with_env_filter(filter)
            .init();
    }
}

/// The level to log at: the requested one (INFO when absent or unreadable), never more
/// verbose than INFO in production.
fn log_level(requested: Option<&str>, production: bool) -> LevelFilter {
    let level = match requested {
        // Lambda's levels end with FATAL, which `tracing` does not have.
        Some(level) if level.eq_ignore_ascii_case("fatal") => LevelFilter::ERROR,
        Some(level) => LevelFilter::from_str(level).unwrap_or(LevelFilter::INFO),
        None => LevelFilter::INFO,
    };
    if production {
        level.min(LevelFilter::INFO)
    } else {
        level
    }
}

/// The `level` of the metric lines: the least severe level Lambda's filter
/// (`AWS_LAMBDA_LOG_LEVEL`) lets through, and never below INFO, so that CloudWatch gets the
/// metrics at every setting while a search for DEBUG lines never finds them.
pub fn metric_line_level() -> &'static str {
    static LEVEL: OnceLock<&'static str> = OnceLock::new();
    LEVEL.get_or_init(|| {
        metric_line_level_for(std::env::var("AWS_LAMBDA_LOG_LEVEL").ok().as_deref())
    })
}

/// [`metric_line_level`] for the filter at `filter` (`AWS_LAMBDA_LOG_LEVEL`).
pub fn metric_line_level_for(filter: Option<&str>) -> &'static str {
    match filter.map(str::to_ascii_uppercase).as_deref() {
        Some("WARN") => "WARN",
        Some("ERROR") => "ERROR",
        Some("FATAL") => "FATAL",
        _ => "INFO",
    }
}

/// `POWERTOOLS_SERVICE_NAME`, else [`DEFAULT_SERVICE`].
pub fn service() -> &'static str {
    static SERVICE: OnceLock<String> = OnceLock::new();
    SERVICE.get_or_init(|| {
        named_or(
            std::env::var("POWERTOOLS_SERVICE_NAME").ok(),
            DEFAULT_SERVICE,
        )
    })
}

/// `value` when it names something, else `default`: an empty variable counts as unset.
pub(crate) fn named_or(value: Option<String>, default: &str) -> String {
    value
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

/// Invocations that have ended in this process.
static ENDED: AtomicU64 = AtomicU64::new(0);

/// Whether this process is still in its cold start: its first invocation (or the init before
/// it) has not ended yet.
pub fn cold_start() -> bool {
    ENDED.load(Ordering::Relaxed) == 0
}

/// Marks the end of an invocation ([`crate::emf::invocation`] calls it).
pub(crate) fn invocation_ended() {
    ENDED.fetch_add(1, Ordering::Relaxed);
}

/// Now, as the lines' `timestamp`: RFC 3339 in UTC, to the millisecond.
pub fn timestamp() -> String {
    let now = OffsetDateTime::now_utc();
    let now = now.replace_millisecond(now.millisecond()).unwrap_or(now);
    now.format(&Rfc3339).unwrap_or_default()
}

/// The runtime's span names the invocation's ids in its own way; the lines use Powertools'.
fn renamed(field: &str) -> &str {
    match field {
        "requestId" => "function_request_id",
        "xrayTraceId" => "xray_trace_id",
        "tenantId" => "tenant_id",
        other => other,
    }
}

/// The keys a line sets itself; a span's or an event's field of the same name is dropped.
const OWN_KEYS: [&str; 7] = [
    "level",
    "message",
    "timestamp",
    "service",
    "cold_start",
    "function_name",
    "function_memory_size",
];

/// A span's fields as recorded so far.
struct SpanFields(Map<String, Value>);

/// Records fields as JSON values.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Fields<'_> {
    fn put(&mut self, field: &Field, value: Value) {
        self.0.insert(renamed(field.name()).to_owned(), value);
    }
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::from(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, Value::from(value.to_string()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::from(format!("{value:?}")));
    }
}

/// The layer that writes each event as one JSON line of the shape above to `writer`.
pub struct JsonLines<W> {
    writer: W,
    function_name: Option<String>,
    function_memory_size: Option<u64>,
}

impl<W> JsonLines<W> {
    pub fn new(writer: W) -> Self {
        Self {
            writer,
            function_name: std::env::var("AWS_LAMBDA_FUNCTION_NAME").ok(),
            function_memory_size: std::env::var("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
                .ok()
                .and_then(|size| size.parse().ok()),
        }
    }
}

impl<S, W> Layer<S> for JsonLines<W>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + 'static,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: Context<'_, S>,
    ) {
        let mut fields = Map::new();
        attrs.record(&mut Fields(&mut fields));
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(SpanFields(fields));
        }
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        ctx: Context<'_, S>,
    ) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<SpanFields>()
        {
            values.record(&mut Fields(&mut fields.0));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut line = Map::new();
        line.insert("level".into(), event.metadata().level().as_str().into());
        line.insert("timestamp".into(), timestamp().into());
        line.insert("service".into(), service().into());
        line.insert("cold_start".into(), cold_start().into());
        if let Some(name) = &self.function_name {
            line.insert("function_name".into(), name.as_str().into());
        }
        if let Some(size) = self.function_memory_size {
            line.insert("function_memory_size".into(), size.into());
        }
        let mut fields = Map::new();
        // Outermost span first, so an inner span's field wins over an outer one's.
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                if let Some(own) = span.extensions().get::<SpanFields>() {
                    fields.extend(own.0.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
            }
        }
        event.record(&mut Fields(&mut fields));
        let message = fields.remove("message").unwrap_or_default();
        line.insert("message".into(), message);
        for (key, value) in fields {
            // Empty span fields (a request id not recorded yet) say nothing.
            if !OWN_KEYS.contains(&key.as_str()) {
                line.insert(key, value);
            }
        }
        let mut bytes = serde_json::to_vec(&line).unwrap_or_default();
        bytes.push(b'\n');
        // One write per line: lines of several threads never interleave.
        let _ = std::io::Write::write_all(&mut self.writer.make_writer(), &bytes);
    }
}

/// Ends a cold start that cannot complete: the message names what is wrong, and the process
/// exits non-zero so that Lambda reports an init error instead of serving requests.
pub fn fail_cold_start(err: &dyn std::error::Error) -> ! {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    tracing::error!(error = %message, "cold start failed");
    eprintln!("cold start failed: {message}");
    std::process::exit(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn production_logs_at_most_info() {
        assert_eq!(log_level(Some("TRACE"), true), LevelFilter::INFO);
        assert_eq!(log_level(Some("debug"), true), LevelFilter::INFO);
        assert_eq!(log_level(Some("WARN"), true), LevelFilter::WARN);
        assert_eq!(log_level(Some("ERROR"), true), LevelFilter::ERROR);
        assert_eq!(log_level(Some("FATAL"), true), LevelFilter::ERROR);
    }

    #[test]
    fn elsewhere_the_requested_level_holds_and_info_is_the_default() {
        assert_eq!(log_level(Some("TRACE"), false), LevelFilter::TRACE);
        assert_eq!(log_level(Some("debug"), false), LevelFilter::DEBUG);
        assert_eq!(log_level(None, false), LevelFilter::INFO);
        assert_eq!(log_level(Some("loud"), false), LevelFilter::INFO);
    }

    #[test]
    fn metric_lines_are_at_the_filters_level_and_never_below_info() {
        // Lambda passes a line at or above the filter's level: the filter's own level always
        // passes, and below INFO the lines stay INFO (a search for DEBUG never finds them).
        for (filter, level) in [
            (None, "INFO"),
            (Some("TRACE"), "INFO"),
            (Some("debug"), "INFO"),
            (Some("INFO"), "INFO"),
            (Some("WARN"), "WARN"),
            (Some("error"), "ERROR"),
            (Some("FATAL"), "FATAL"),
            (Some("nonsense"), "INFO"),
        ] {
            assert_eq!(metric_line_level_for(filter), level, "{filter:?}");
        }
    }

    #[test]
    fn an_empty_service_name_counts_as_unset() {
        assert_eq!(named_or(Some("orders".into()), DEFAULT_SERVICE), "orders");
        assert_eq!(
            named_or(Some("  ".into()), DEFAULT_SERVICE),
            DEFAULT_SERVICE
        );
        assert_eq!(named_or(None, DEFAULT_SERVICE), DEFAULT_SERVICE);
    }

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What `log` writes through [`JsonLines`] of a function named `PlaceOrderFunction`, as
    /// JSON objects, one per line.
    fn lines_of(log: impl FnOnce()) -> Vec<Map<String, Value>> {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let layer = JsonLines {
            writer: move || writer.clone(),
            function_name: Some("PlaceOrderFunction".into()),
            function_memory_size: Some(256),
        };
        let subscriber = subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, log);
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
            .collect()
    }

    // One test for the cold start's flag: it is the process's (nextest runs each test in a
    // process of its own).
    #[test]
    fn a_line_has_the_keys_powertools_users_search_for_at_its_top_level() {
        let lines = lines_of(|| {
            tracing::info!("before any invocation");
            // As lambda_runtime opens it around every invocation, then http::answer's.
            let invoke = tracing::info_span!(
                "Lambda runtime invoke",
                requestId = "8f5a-request",
                xrayTraceId = "Root=1-67891233-abcdef012345678912345678"
            );
            let _invoke = invoke.enter();
            let request = tracing::info_span!(
                "request",
                caller = tracing::field::Empty,
                sale = tracing::field::Empty
            );
            let _request = request.enter();
            request.record("caller", "ann");
            tracing::warn!(
                reason = "TransactionConflict",
                attempt = 3,
                "refused for now; retrying"
            );
            invocation_ended();
            tracing::error!(error = %std::io::Error::other("gone"), "order event not sent");
        });
        assert_eq!(lines.len(), 3, "{lines:#?}");

        let before = &lines[0];
        assert_eq!(before["level"], "INFO");
        assert_eq!(before["message"], "before any invocation");
        assert_eq!(before["cold_start"], true);
        assert!(!before.contains_key("function_request_id"), "{before:?}");

        let retry = &lines[1];
        assert_eq!(retry["level"], "WARN");
        assert_eq!(retry["message"], "refused for now; retrying");
        assert_eq!(retry["service"], DEFAULT_SERVICE);
        assert_eq!(retry["cold_start"], true);
        assert_eq!(retry["function_name"], "PlaceOrderFunction");
        assert_eq!(retry["function_memory_size"], 256);
        assert_eq!(retry["function_request_id"], "8f5a-request");
        assert_eq!(
            retry["xray_trace_id"],
            "Root=1-67891233-abcdef012345678912345678"
        );
        assert_eq!(retry["caller"], "ann");
        assert_eq!(retry["reason"], "TransactionConflict");
        assert_eq!(retry["attempt"], 3);
        // Nothing nested: no span list, no fields object, no field never recorded.
        for nested in ["spans", "span", "fields", "requestId", "sale"] {
            assert!(!retry.contains_key(nested), "{nested}: {retry:?}");
        }
        // RFC 3339, or Lambda takes the line for INFO whatever its level.
        let at = OffsetDateTime::parse(retry["timestamp"].as_str().unwrap(), &Rfc3339).unwrap();
        let age = OffsetDateTime::now_utc() - at;
        assert!(age.whole_seconds().abs() < 60, "{at}");

        let after = &lines[2];
        assert_eq!(after["level"], "ERROR");
        assert_eq!(after["error"], "gone");
        assert_eq!(
            after["cold_start"], false,
            "after the first invocation ended"
        );
    }
}
