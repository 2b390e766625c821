//! Helpers for the template's unit tests: the local names, loading a template from a string,
//! and finding what it declares.

use std::collections::BTreeMap;
use std::path::Path;

use super::{LocalNames, load, load_str};
use crate::model::{FunctionSpec, JwtAuthorizer, Model, QueueSpec};

pub(super) const ACCOUNT: &str = "123456789012";
pub(super) const SQS: &str = "http://127.0.0.1:4566";

pub(super) fn names() -> LocalNames {
    LocalNames {
        stack_name: "local".into(),
        region: "us-east-1".into(),
        account_id: ACCOUNT.into(),
        sqs_endpoint: SQS.into(),
    }
}

pub(super) fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub(super) fn fixture() -> Model {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/template.yaml");
    load(&path, &BTreeMap::new(), &names()).expect("the fixture template loads")
}

pub(super) fn load_yaml(yaml: &str) -> anyhow::Result<Model> {
    load_str("template.yaml", yaml, &BTreeMap::new(), &names())
}

/// The whole error chain, as `main` prints it.
pub(super) fn error_of(yaml: &str) -> String {
    format!(
        "{:#}",
        load_yaml(yaml).expect_err("the template is rejected")
    )
}

pub(super) fn function<'m>(model: &'m Model, id: &str) -> &'m FunctionSpec {
    model
        .function(id)
        .unwrap_or_else(|| panic!("function {id}"))
}

pub(super) fn queue<'m>(model: &'m Model, id: &str) -> &'m QueueSpec {
    model.queue(id).unwrap_or_else(|| panic!("queue {id}"))
}

pub(super) fn url(name: &str) -> String {
    format!("{SQS}/{ACCOUNT}/{name}")
}

pub(super) fn queue_arn(name: &str) -> String {
    format!("arn:aws:sqs:us-east-1:{ACCOUNT}:{name}")
}

pub(super) fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    overrides(pairs)
}

pub(super) fn jwt(name: &str) -> Option<JwtAuthorizer> {
    Some(JwtAuthorizer {
        name: name.into(),
        identity_source: "$request.header.Authorization".into(),
    })
}

/// A function with one event, in a template with a table and a queue to point at.
pub(super) fn with_event(event: &str) -> String {
    format!(
        r#"
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      AttributeDefinitions: [{{AttributeName: pk, AttributeType: S}}]
      KeySchema: [{{AttributeName: pk, KeyType: HASH}}]
      StreamSpecification: {{StreamViewType: NEW_IMAGE}}
  Queue:
    Type: AWS::SQS::Queue
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn
      Events:
        Ev:
{event}
"#
    )
}
