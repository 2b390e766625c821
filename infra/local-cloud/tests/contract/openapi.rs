//! `openapi.yaml` against `template.yaml`: the same (method, path) set, the same authorizers,
//! the error codes the functions answer, and a document that a client generator or
//! schemathesis can trust.

use crate::support::{entries, project_model, yaml};
use app::error_code::ErrorCode;
use local_cloud::model::EventSpec;
use std::collections::{BTreeMap, BTreeSet};
use yaml_serde::Value;

const METHODS: [&str; 7] = ["get", "put", "post", "delete", "patch", "head", "options"];

/// (METHOD, path) -> whether a JWT is required, as the runner reads the template.
fn template_routes() -> BTreeMap<(String, String), bool> {
    let model = project_model(&[]);
    let mut routes = BTreeMap::new();
    for function in &model.functions {
        for event in &function.events {
            if let EventSpec::Http(route) = event {
                let key = (route.method.to_uppercase(), route.path.clone());
                let authorized = route.authorizer.is_some();
                assert!(
                    routes.insert(key.clone(), authorized).is_none(),
                    "{key:?} is served twice"
                );
            }
        }
    }
    routes
}

struct Operation<'a> {
    method: String,
    path: &'a str,
    spec: &'a Value,
    /// The path item's own parameters, which every operation of it inherits.
    shared_parameters: Option<&'a Value>,
}

fn operations(doc: &Value) -> Vec<Operation<'_>> {
    let mut found = Vec::new();
    for (path, item) in entries(doc, "paths") {
        let mapping = item.as_mapping().expect("a path item is a mapping");
        for (method, spec) in mapping {
            let method = method.as_str().unwrap();
            if METHODS.contains(&method) {
                found.push(Operation {
                    method: method.to_uppercase(),
                    path,
                    spec,
                    shared_parameters: item.get("parameters"),
                });
            } else {
                assert!(
                    matches!(method, "parameters" | "summary" | "description"),
                    "{path}: unexpected key {method}"
                );
            }
        }
    }
    found
}

/// Whether the operation needs a token: its own `security`, else the document's.
fn requires_token(doc: &Value, operation: &Value) -> bool {
    let security = operation.get("security").or_else(|| doc.get("security"));
    security
        .and_then(Value::as_sequence)
        .is_some_and(|requirements| {
            // `[]` or `[{}]` is public; anything else names a scheme.
            requirements
                .iter()
                .any(|r| r.as_mapping().is_some_and(|m| !m.is_empty()))
        })
}

/// Follows a local `$ref` (`#/components/...`).
fn resolve<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let pointer = reference
                .strip_prefix("#/")
                .unwrap_or_else(|| panic!("only local $refs are used: {reference}"));
            let target = pointer.split('/').fold(doc, |node, part| {
                node.get(part)
                    .unwrap_or_else(|| panic!("$ref {reference} does not resolve"))
            });
            resolve(doc, target)
        }
        None => value,
    }
}

#[test]
fn openapi_documents_exactly_the_template_routes_with_the_same_authorizers() {
    let doc = yaml("openapi.yaml");
    let template = template_routes();
    assert!(!template.is_empty(), "the template serves no route");
    let documented: BTreeMap<(String, String), bool> = operations(&doc)
        .iter()
        .map(|op| {
            (
                (op.method.clone(), op.path.to_owned()),
                requires_token(&doc, op.spec),
            )
        })
        .collect();

    let served: BTreeSet<_> = template.keys().collect();
    let described: BTreeSet<_> = documented.keys().collect();
    let undocumented: Vec<_> = served.difference(&described).collect();
    let phantom: Vec<_> = described.difference(&served).collect();
    assert!(
        undocumented.is_empty() && phantom.is_empty(),
        "served but not in openapi.yaml: {undocumented:?}; in openapi.yaml but not served: {phantom:?}"
    );
    for (route, authorized) in &template {
        assert_eq!(
            documented[route], *authorized,
            "{route:?}: the template says authorizer = {authorized}, openapi.yaml disagrees"
        );
    }
}

#[test]
fn every_operation_declares_its_parameters_errors_and_a_closed_body() {
    let doc = yaml("openapi.yaml");
    assert!(
        doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")),
        "an OpenAPI 3 document"
    );
    let mut ids = BTreeSet::new();
    for op in operations(&doc) {
        let name = format!("{} {}", op.method, op.path);
        let id = op.spec["operationId"].as_str();
        assert!(
            id.is_some_and(|id| ids.insert(id.to_owned())),
            "{name}: a unique operationId"
        );

        // Path parameters: exactly the `{names}` of the path, each required.
        let in_path: BTreeSet<String> = op
            .path
            .split('/')
            .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
            .map(str::to_owned)
            .collect();
        let parameters: Vec<&Value> = op
            .shared_parameters
            .into_iter()
            .chain(op.spec.get("parameters"))
            .flat_map(|list| list.as_sequence().into_iter().flatten())
            .map(|p| resolve(&doc, p))
            .collect();
        let declared: BTreeSet<String> = parameters
            .iter()
            .filter(|p| p["in"] == "path")
            .map(|p| {
                assert_eq!(p["required"], true, "{name}: path parameters are required");
                p["name"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(declared, in_path, "{name}: path parameters");

        let responses = op.spec["responses"]
            .as_mapping()
            .unwrap_or_else(|| panic!("{name}: responses"));
        let has = |status: &str| responses.contains_key(status);
        assert!(
            responses
                .keys()
                .any(|k| k.as_str().is_some_and(|k| k.starts_with('2'))),
            "{name}: a success response"
        );
        for (status, response) in responses {
            let response = resolve(&doc, response);
            // JSON, but for a page for people (the payment sandbox's).
            let media = if response["content"]["text/html"].is_mapping() {
                "text/html"
            } else {
                "application/json"
            };
            assert!(
                response["content"][media]["schema"].is_mapping(),
                "{name} {status:?}: a JSON (or HTML page) body with a schema"
            );
        }
        if requires_token(&doc, op.spec) {
            assert!(
                has("401"),
                "{name}: a route behind the authorizer answers 401"
            );
        } else if parameters.iter().any(|p| p["name"] == "Payment-Signature") {
            // Public, but authenticated by the provider's signature instead of a token.
            assert!(has("401"), "{name}: a bad signature is a documented 401");
        } else {
            assert!(
                !has("401") && !has("403"),
                "{name}: a public route refuses no one"
            );
        }
        let takes_input = !parameters.is_empty() || op.spec.get("requestBody").is_some();
        if takes_input {
            assert!(has("400"), "{name}: malformed input is a documented 400");
        }

        if let Some(body) = op.spec.get("requestBody") {
            // Required but for the order route, whose body is optional (no body: one unit).
            let optional = name == "POST /seckill/activities/{id}/orders";
            assert_eq!(
                body["required"], !optional,
                "{name}: whether the body is required"
            );
            let schema = resolve(&doc, &body["content"]["application/json"]["schema"]);
            assert!(has("413"), "{name}: a body over 10 MB is a documented 413");
            let variants: Vec<&Value> = match schema.get("oneOf").and_then(Value::as_sequence) {
                Some(list) => list.iter().map(|s| resolve(&doc, s)).collect(),
                None => vec![schema],
            };
            for variant in variants {
                // Every handler refuses unknown fields (`deny_unknown_fields`); say so.
                assert_eq!(variant["type"], "object", "{name}: an object body");
                assert_eq!(
                    variant["additionalProperties"], false,
                    "{name}: unknown fields are refused, so additionalProperties: false"
                );
            }
        }
    }
}

#[test]
fn the_error_body_is_the_contract_one() {
    let doc = yaml("openapi.yaml");
    let error = &doc["components"]["schemas"]["Error"];
    assert_eq!(error["required"], Value::from(vec!["error"]));
    assert_eq!(
        error["properties"]["error"]["required"],
        Value::from(vec!["code", "message"])
    );
    assert_eq!(error["additionalProperties"], false);
}

/// A client switches on the code, and schemathesis rejects an answer whose code the schema
/// does not list: the schema's `enum` is exactly the codes a function can answer.
#[test]
fn the_error_schema_enumerates_exactly_the_codes_the_functions_answer() {
    let doc = yaml("openapi.yaml");
    let code = &doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"];
    let listed: BTreeSet<&str> = code["enum"]
        .as_sequence()
        .unwrap_or_else(|| panic!("the Error schema's code has no enum: {code:?}"))
        .iter()
        .map(|value| value.as_str().expect("an error code is a string"))
        .collect();
    let answered: BTreeSet<&str> = ErrorCode::ALL.iter().map(|code| code.as_str()).collect();
    let unlisted: Vec<_> = answered.difference(&listed).collect();
    let phantom: Vec<_> = listed.difference(&answered).collect();
    assert!(
        unlisted.is_empty() && phantom.is_empty(),
        "answered by the functions (app::error_code::ErrorCode) but not in openapi.yaml's Error \
         schema: {unlisted:?}; in openapi.yaml but answered by no function: {phantom:?}"
    );
}

/// Whether `schema` is, or offers through `anyOf`/`oneOf`, API Gateway's `{"message"}` body.
fn accepts_gateway_message(doc: &Value, schema: &Value) -> bool {
    let schema = resolve(doc, schema);
    if schema == &doc["components"]["schemas"]["GatewayMessage"] {
        return true;
    }
    ["anyOf", "oneOf"].iter().any(|key| {
        schema
            .get(*key)
            .and_then(Value::as_sequence)
            .is_some_and(|list| list.iter().any(|s| accepts_gateway_message(doc, s)))
    })
}

#[test]
fn every_throttled_route_documents_the_gateways_429() {
    let doc = yaml("openapi.yaml");
    let model = project_model(&[]);
    let mut throttled = 0;
    for function in &model.functions {
        for event in &function.events {
            let EventSpec::Http(route) = event else {
                continue;
            };
            if route.throttle.is_none() {
                continue;
            }
            throttled += 1;
            let name = format!("{} {}", route.method, route.path);
            let operation =
                &doc["paths"][route.path.as_str()][route.method.to_lowercase().as_str()];
            let response = resolve(&doc, &operation["responses"]["429"]);
            let schema = &response["content"]["application/json"]["schema"];
            assert!(
                accepts_gateway_message(&doc, schema),
                "{name} is throttled by the template: openapi.yaml must document API Gateway's \
                 429 {{\"message\": \"Too Many Requests\"}}"
            );
        }
    }
    assert!(throttled > 0, "the template throttles no route");
}
