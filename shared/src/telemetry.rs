//! Logging for every function.
//!
//! Lambda's advanced logging controls set `AWS_LAMBDA_LOG_FORMAT=JSON` and
//! `AWS_LAMBDA_LOG_LEVEL`; the runtime's default subscriber honours both (and `RUST_LOG`
//! locally), so JSON logs in the cloud and readable lines on a terminal come from one call.

/// Installs the global subscriber. Call once, first thing in `main`.
pub fn init() {
    lambda_runtime::tracing::init_default_subscriber();
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
