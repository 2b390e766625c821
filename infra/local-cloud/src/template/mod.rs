//! Reads a SAM template into the runner's [`Model`]: parameters, `Globals` and the intrinsics
//! resolved to the local stand-ins for the AWS account's names, URLs and ARNs.
//!
//! Only the properties the runner uses are resolved, so an intrinsic it cannot resolve inside
//! an alarm or an IAM policy does not stop it. Besides `!Ref`, `!GetAtt` and `!Sub`, the cheap
//! ones are resolved too: `!If` with `Conditions`, `!Join`, `!Select`, `!Split`, `!FindInMap`.
//!
//! # Layout
//!
//! - this file: [`load`] and [`LocalNames`], the order in which a template is read;
//! - `error`: what can be wrong (`Problem`) and where (`At`);
//! - `parameters`: `Parameters` with their overrides, the local stack's values
//!   ([`LOCAL_STACK`]), defaults and checks;
//! - `names`: physical names of tables, queues and buckets, and the local ARNs and URLs;
//! - `intrinsics`: the `Resolver` and the intrinsic functions; `conditions`: `Conditions`;
//! - `yaml`: `Node`, the typed accessor that resolves what the runner reads;
//! - `resources`: tables, queues and functions, with `Globals` merged in;
//! - `events`: a function's events (routes, queues, streams, schedules);
//! - `throttling`: an HttpApi's route throttling; `cognito`: a user pool's triggers;
//! - `edge`: the distribution's web ACL rules and origin headers, and secrets' dynamic
//!   references.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context as _;
use yaml_serde::{Mapping, Value};

mod cognito;
mod conditions;
mod edge;
mod error;
mod events;
mod intrinsics;
mod names;
mod parameters;
mod resources;
mod throttling;
mod yaml;

pub use parameters::LOCAL_STACK;

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;

use crate::model::{EventSpec, Model, SecretSpec};
use error::{At, Problem};
use events::{Apis, check_visibility};
use intrinsics::Resolver;
use names::Resource;
use parameters::parameters;
use resources::{merge, properties};
use yaml::{Node, describe};

/// How local resources are named: the runner's stand-ins for the AWS account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalNames {
    /// e.g. `local`; prefixes every generated table and queue name.
    pub stack_name: String,
    /// e.g. `us-east-1`.
    pub region: String,
    /// `123456789012` for moto.
    pub account_id: String,
    /// Base URL of the SQS emulator, e.g. `http://127.0.0.1:4566` (no trailing slash).
    pub sqs_endpoint: String,
}

/// Reads and resolves a SAM template.
///
/// Errors name the file and the place in it, e.g. `template.yaml: resource
/// PutProfileFunction, Environment.Variables.SOCIAL_TABLE: unknown resource Nope in !Ref`
/// (print them with `{:#}` to see the whole chain).
pub fn load(
    path: &Path,
    parameter_overrides: &BTreeMap<String, String>,
    names: &LocalNames,
) -> anyhow::Result<Model> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to read the template {}", path.display()))?;
    load_str(
        &path.display().to_string(),
        &text,
        parameter_overrides,
        names,
    )
}

/// [`load`] for a template already in memory; `file` only names it in errors.
pub(crate) fn load_str(
    file: &str,
    text: &str,
    parameter_overrides: &BTreeMap<String, String>,
    names: &LocalNames,
) -> anyhow::Result<Model> {
    let mut doc: Value =
        yaml_serde::from_str(text).with_context(|| format!("{file}: not a valid YAML document"))?;
    doc.apply_merge()
        .with_context(|| format!("{file}: invalid YAML merge key"))?;
    let empty = Mapping::new();
    let section = |name: &str| -> anyhow::Result<&Mapping> {
        match doc.get(name) {
            None | Some(Value::Null) => Ok(&empty),
            Some(Value::Mapping(m)) => Ok(m),
            Some(other) => Err(anyhow::Error::new(Problem::Type {
                expected: "a mapping",
                found: describe(other),
            })
            .context(format!("{file}: {name}"))),
        }
    };

    let mut resolver = Resolver {
        file,
        names,
        parameters: parameters(file, section("Parameters")?, parameter_overrides)?,
        resources: BTreeMap::new(),
        conditions: section("Conditions")?,
        mappings: section("Mappings")?,
        evaluated: RefCell::default(),
        evaluating: RefCell::default(),
        api_routes: RefCell::default(),
    };
    let declared = section("Resources")?;
    if declared.is_empty() {
        return Err(anyhow::Error::new(Problem::Missing("Resources")).context(file.to_owned()));
    }

    // Resources whose `Condition` is false do not exist, so they are left out before
    // anything can refer to them.
    let mut resources: Vec<(&str, &Value, String)> = Vec::new();
    for (id, decl) in declared {
        let id = id
            .as_str()
            .with_context(|| format!("{file}: a resource id is not a string"))?;
        let (kind, exists) = {
            let node = Node::borrowed(&resolver, decl, At::new(format!("resource {id}")));
            let kind = node.required_string("Type")?;
            let exists = match node.get("Condition")? {
                Some(condition) => resolver.condition(&condition.string()?, &condition.at)?,
                None => true,
            };
            (kind, exists)
        };
        if !exists {
            continue;
        }
        resolver
            .resources
            .insert(id.to_owned(), Resource::new(&kind));
        resources.push((id, decl, kind));
    }
    resolver.physical_names(&resources)?;

    let globals = section("Globals")?;
    let global_of = |kind: &str| match globals.get(kind) {
        Some(Value::Mapping(m)) => m.clone(),
        _ => Mapping::new(),
    };
    let function_globals = global_of("Function");
    let api_globals = global_of("HttpApi");

    let mut model = Model {
        stack_name: names.stack_name.clone(),
        ..Model::default()
    };
    let mut http_apis = BTreeMap::new();
    for (id, decl, kind) in &resources {
        let at = At::new(format!("resource {id}"));
        let props = properties(&resolver, decl, &at)?;
        match kind.as_str() {
            "AWS::DynamoDB::Table" => model.tables.push(resolver.table(id, &props)?),
            "AWS::Serverless::SimpleTable" => model.tables.push(resolver.simple_table(id, &props)?),
            "AWS::SQS::Queue" => model.queues.push(resolver.queue(id, &props)?),
            "AWS::SecretsManager::Secret" => model.secrets.push(SecretSpec {
                logical_id: id.to_string(),
                name: id.to_string(),
            }),
            "AWS::S3::Bucket" => model.buckets.push(crate::model::BucketSpec {
                logical_id: id.to_string(),
                name: resolver.named(id),
            }),
            "AWS::WAFv2::WebACL" if props.string_at("Scope")?.as_deref() == Some("CLOUDFRONT") => {
                model.edge_limits.extend(resolver.web_acl_limits(&props)?);
            }
            "AWS::CloudFront::Distribution" => {
                model
                    .origin_headers
                    .extend(resolver.origin_headers(&props)?);
            }
            "AWS::Serverless::HttpApi" => {
                let own = props.value.as_mapping().cloned().unwrap_or_default();
                http_apis.insert(id.to_string(), merge(&api_globals, &own));
            }
            _ => {}
        }
    }
    let apis = Apis {
        explicit: http_apis,
        implicit: Value::Mapping(api_globals),
    };
    let mut routes = BTreeMap::new();
    for (id, decl, kind) in &resources {
        if kind == "AWS::Serverless::Function" {
            let function = resolver.function(id, decl, &function_globals, &model, &apis)?;
            check_visibility(&resolver, &function, &model)?;
            for event in &function.events {
                if let EventSpec::Http(route) = event {
                    let key = (route.method.clone(), route.path.clone());
                    let here = format!("{}.{}", function.logical_id, route.event_name);
                    if let Some(first) = routes.insert(key, here) {
                        let at = At::new(format!("resource {id}"))
                            .key("Events")
                            .key(&route.event_name);
                        return Err(resolver.fail(
                            &at,
                            Problem::DuplicateRoute {
                                route: format!("{} {}", route.method, route.path),
                                first,
                            },
                        ));
                    }
                }
            }
            model.functions.push(function);
        }
    }
    resolver.check_route_settings(&apis)?;
    for function in &mut model.functions {
        for (name, value) in &mut function.environment {
            *value = edge::resolve_secrets(value, &model.secrets).with_context(|| {
                format!(
                    "{file}: resource {}, Environment.Variables.{name}",
                    function.logical_id
                )
            })?;
        }
    }
    for (name, value) in &mut model.origin_headers {
        *value = edge::resolve_secrets(value, &model.secrets)
            .with_context(|| format!("{file}: the origin header {name}"))?;
    }
    // A user pool's triggers become events of the functions they name.
    for (id, decl, kind) in &resources {
        if kind == "AWS::Cognito::UserPool" {
            let props = properties(&resolver, decl, &At::new(format!("resource {id}")))?;
            for (arn, at, trigger) in resolver.cognito_triggers(id, &props)? {
                let function = model
                    .functions
                    .iter_mut()
                    .find(|function| resolver.function_arn(&function.logical_id) == arn)
                    .ok_or_else(|| {
                        resolver.fail(
                            &at,
                            Problem::UnknownArn {
                                kind: "function",
                                arn: arn.clone(),
                            },
                        )
                    })?;
                function.events.push(EventSpec::Cognito(trigger));
            }
        }
    }
    Ok(model)
}
