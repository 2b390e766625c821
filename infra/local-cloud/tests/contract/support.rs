//! The documents under test, read from the repository root.

use std::path::PathBuf;
use yaml_serde::Value;

/// The repository root (this crate is `infra/local-cloud`).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `template.yaml` as the runner reads it, with these parameter overrides.
pub fn project_model(overrides: &[(&str, &str)]) -> local_cloud::model::Model {
    let names = local_cloud::template::LocalNames {
        stack_name: "contract".to_owned(),
        region: "us-east-1".to_owned(),
        account_id: "123456789012".to_owned(),
        sqs_endpoint: "http://127.0.0.1:1".to_owned(),
    };
    let overrides = overrides
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    local_cloud::template::load(&root().join("template.yaml"), &overrides, &names)
        .expect("template.yaml loads")
}

/// A YAML document of the repository, tags (`!GetAtt`, `!Sub`, ...) kept as they are.
pub fn yaml(relative: &str) -> Value {
    let path = root().join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
    yaml_serde::from_str(&text).unwrap_or_else(|err| panic!("{relative} is not YAML: {err}"))
}

/// `value[key]` as a mapping's entries, empty when absent.
pub fn entries<'a>(value: &'a Value, key: &str) -> Vec<(&'a str, &'a Value)> {
    value
        .get(key)
        .and_then(Value::as_mapping)
        .map(|mapping| {
            mapping
                .iter()
                .filter_map(|(k, v)| Some((k.as_str()?, v)))
                .collect()
        })
        .unwrap_or_default()
}

/// Fails the test with a command's output unless it exited with success.
pub fn assert_succeeded(output: &std::process::Output) {
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
