//! What `sam local` needs of the template and of the env-vars file that `infra/sam-local.sh`
//! generates (`local-cloud provision --sam-env-vars`): SAM only overrides variables that the
//! template declares for the function, and the functions verify bearer tokens themselves only
//! where SAM runs them (`AWS_SAM_LOCAL`), which the template must never set.

use crate::support::{entries, project_model, root, yaml};
use std::collections::{BTreeMap, BTreeSet};
use yaml_serde::Value;

/// Each function's declared variables as SAM reads them: the `Globals` ones and its own.
fn declared_variables() -> BTreeMap<String, BTreeSet<String>> {
    let template = yaml("template.yaml");
    let variables = |node: &Value| -> BTreeSet<String> {
        node.get("Environment")
            .map(|environment| {
                entries(environment, "Variables")
                    .into_iter()
                    .map(|(name, _)| name.to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let global = template
        .get("Globals")
        .and_then(|globals| globals.get("Function"))
        .map(variables)
        .unwrap_or_default();
    entries(&template, "Resources")
        .into_iter()
        .filter(|(_, resource)| {
            resource.get("Type").and_then(Value::as_str) == Some("AWS::Serverless::Function")
        })
        .map(|(id, resource)| {
            let mut declared = global.clone();
            if let Some(properties) = resource.get("Properties") {
                declared.extend(variables(properties));
            }
            (id.to_owned(), declared)
        })
        .collect()
}

/// The env-vars file as `infra/sam-local.sh` makes it, for the project's template.
fn env_vars_file() -> serde_json::Map<String, serde_json::Value> {
    let model = project_model(&[]);
    match local_cloud::cloud::sam_env_vars(
        &model,
        "http://127.0.0.1:1",
        "http://emulators:4566",
        "redis://emulators:6379",
    ) {
        serde_json::Value::Object(file) => file,
        other => panic!("the env-vars file is a JSON object, got {other}"),
    }
}

#[test]
fn the_env_vars_file_sets_only_what_each_function_declares() {
    let declared = declared_variables();
    let file = env_vars_file();
    assert_eq!(
        file.keys().collect::<BTreeSet<_>>(),
        declared.keys().collect::<BTreeSet<_>>(),
        "one entry per function of the template, under its logical id"
    );
    for (function, variables) in &file {
        let variables = variables
            .as_object()
            .expect("a function's entry is an object");
        let undeclared: Vec<&String> = variables
            .keys()
            .filter(|name| !declared[function].contains(*name))
            .collect();
        assert!(
            undeclared.is_empty(),
            "{function}: the env-vars file sets {undeclared:?}, which the template does not \
             declare for it, so `sam local` would drop them"
        );
    }
}

#[test]
fn under_sam_local_every_function_reaches_the_emulators() {
    let declared = declared_variables();
    for (function, variables) in env_vars_file() {
        let variables = variables.as_object().unwrap();
        assert_eq!(
            variables.get("AWS_ENDPOINT_URL"),
            Some(&serde_json::json!("http://emulators:4566")),
            "{function} would call AWS itself"
        );
        if declared[&function].contains("REDIS_ENDPOINT") {
            assert_eq!(
                variables.get("REDIS_URL"),
                Some(&serde_json::json!("redis://emulators:6379")),
                "{function} uses Redis but would not reach the local one"
            );
        }
        for (name, value) in variables {
            let value = value.as_str().unwrap_or_default();
            assert!(
                !value.contains("127.0.0.1"),
                "{function}: {name}={value} names the host's loopback, which a container \
                 cannot reach"
            );
        }
    }
}

#[test]
fn in_aws_the_local_endpoints_are_declared_empty() {
    // Declared for `sam local`, but in the cloud they must stay unset (the code reads an empty
    // value as unset): a value here would send every function away from AWS.
    let model = project_model(&[]);
    for function in &model.functions {
        for name in ["AWS_ENDPOINT_URL", "REDIS_URL"] {
            if let Some(value) = function.environment.get(name) {
                assert_eq!(
                    value, "",
                    "{}: {name} must be empty in the template",
                    function.logical_id
                );
            }
        }
    }
}

#[test]
fn no_function_is_told_it_runs_under_sam_or_given_a_signing_secret() {
    // AWS_SAM_LOCAL makes a function verify bearer tokens itself with the public development
    // secret: set in AWS, anyone could mint an admin's token.
    let template = std::fs::read_to_string(root().join("template.yaml")).unwrap();
    for forbidden in [
        "AWS_SAM_LOCAL",
        "LOCAL_JWT_SECRET",
        "local-cloud-dev-secret",
    ] {
        assert!(
            !template.contains(forbidden),
            "template.yaml mentions {forbidden}"
        );
    }
    for (function, variables) in declared_variables() {
        for name in variables {
            assert!(
                !name.contains("SAM_LOCAL") && !name.contains("JWT") && !name.contains("SIGNING"),
                "{function} declares {name}"
            );
        }
    }
}
