//! The function refuses to start without its configuration, naming what is missing.

use std::process::Command;

#[test]
fn a_missing_table_name_stops_the_cold_start_and_names_the_variable() {
    let output = Command::new(env!("CARGO_BIN_EXE_put-profile"))
        .env_remove("SOCIAL_TABLE")
        .env("AWS_REGION", "us-east-1")
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cold start failed: missing environment variable SOCIAL_TABLE"),
        "{stderr}"
    );
}
