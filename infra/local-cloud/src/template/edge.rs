//! What CloudFront does in front of the API, as the template sets it: the rate-based rules of
//! its web ACL (`AWS::WAFv2::WebACL`, scope `CLOUDFRONT`) and the headers it adds to every
//! request to a custom origin (`OriginCustomHeaders`), with the Secrets Manager dynamic
//! references in them and in the functions' variables resolved to the secrets' local values.
//!
//! Only what the runner can enforce exactly is accepted: rate-based rules keyed on the source
//! IP, scoped down by byte matches on the method and the URI path. Any other rule is an error
//! rather than a protection that silently does nothing locally.

use super::error::Problem;
use super::intrinsics::Resolver;
use super::yaml::Node;
use crate::model::{EdgeField, EdgeLimit, EdgeMatch, Positional, SecretSpec};
use std::time::Duration;

/// WAF's evaluation window when a rule names none.
const DEFAULT_WINDOW_SECONDS: u64 = 300;

impl Resolver<'_> {
    /// The rate-based rules of a web ACL, in the order of their `Priority`.
    pub(super) fn web_acl_limits(&self, props: &Node<'_>) -> anyhow::Result<Vec<EdgeLimit>> {
        let bodies = props.get("CustomResponseBodies")?;
        let mut rules = Vec::new();
        let Some(declared) = props.get("Rules")? else {
            return Ok(Vec::new());
        };
        for rule in declared.items()? {
            let name = rule.required_string("Name")?;
            let priority = rule.u64_at("Priority")?.unwrap_or_default();
            let statement = rule.required("Statement")?;
            let Some(rate) = statement.get("RateBasedStatement")? else {
                return Err(self.not_local(
                    &statement,
                    "only rate-based rules (RateBasedStatement) are played locally",
                ));
            };
            if let Some(key) = rate.string_at("AggregateKeyType")?
                && key != "IP"
            {
                return Err(self.not_local(
                    &rate,
                    "only AggregateKeyType IP is played locally (the runner knows the peer)",
                ));
            }
            let scope = match rate.get("ScopeDownStatement")? {
                Some(down) => self.scope_down(&down)?,
                None => Vec::new(),
            };
            let (status, body) = match rule.path(&["Action", "Block"])? {
                Some(block) => self.block_response(&block, bodies.as_ref())?,
                None => {
                    return Err(self.not_local(
                        &rule,
                        "only a Block action is played locally (Count would protect nothing)",
                    ));
                }
            };
            rules.push((
                priority,
                EdgeLimit {
                    name,
                    limit: rate.required("Limit")?.u64()?,
                    window: Duration::from_secs(
                        rate.u64_at("EvaluationWindowSec")?
                            .unwrap_or(DEFAULT_WINDOW_SECONDS),
                    ),
                    scope,
                    status,
                    body,
                },
            ));
        }
        rules.sort_by_key(|(priority, _)| *priority);
        Ok(rules.into_iter().map(|(_, rule)| rule).collect())
    }

    /// A `ByteMatchStatement`, or an `AndStatement` of them.
    fn scope_down(&self, statement: &Node<'_>) -> anyhow::Result<Vec<EdgeMatch>> {
        if let Some(and) = statement.get("AndStatement")? {
            let mut matches = Vec::new();
            for inner in and.required("Statements")?.items()? {
                matches.extend(self.scope_down(&inner)?);
            }
            return Ok(matches);
        }
        let Some(byte) = statement.get("ByteMatchStatement")? else {
            return Err(self.not_local(
                statement,
                "a scope-down statement is played locally only as ByteMatchStatements \
                 (and an AndStatement of them)",
            ));
        };
        let field = byte.required("FieldToMatch")?;
        let field = if field.get("Method")?.is_some() {
            EdgeField::Method
        } else if field.get("UriPath")?.is_some() {
            EdgeField::UriPath
        } else {
            return Err(self.not_local(&field, "only Method and UriPath are matched locally"));
        };
        let constraint = match byte.required_string("PositionalConstraint")?.as_str() {
            "EXACTLY" => Positional::Exactly,
            "STARTS_WITH" => Positional::StartsWith,
            "ENDS_WITH" => Positional::EndsWith,
            "CONTAINS" => Positional::Contains,
            _ => {
                return Err(self.not_local(
                    &byte,
                    "PositionalConstraint EXACTLY, STARTS_WITH, ENDS_WITH or CONTAINS",
                ));
            }
        };
        for transformation in byte.required("TextTransformations")?.items()? {
            if transformation.required_string("Type")? != "NONE" {
                return Err(self.not_local(
                    &transformation,
                    "only the NONE text transformation is played locally",
                ));
            }
        }
        Ok(vec![EdgeMatch {
            field,
            constraint,
            value: byte.required_string("SearchString")?,
        }])
    }

    /// The status and body a `Block` action answers: its `CustomResponse`, else WAF's 403.
    fn block_response(
        &self,
        block: &Node<'_>,
        bodies: Option<&Node<'_>>,
    ) -> anyhow::Result<(u16, Option<(String, String)>)> {
        let Some(custom) = block.get("CustomResponse")? else {
            return Ok((403, None));
        };
        let status = custom.required("ResponseCode")?.u32()?;
        let status = u16::try_from(status).map_err(|_| custom.type_error("an HTTP status"))?;
        let Some(key) = custom.string_at("CustomResponseBodyKey")? else {
            return Ok((status, None));
        };
        let body = bodies
            .map(|bodies| bodies.get(&key))
            .transpose()?
            .flatten()
            .ok_or_else(|| {
                self.fail(
                    &custom.at,
                    Problem::NotLocal(format!("no CustomResponseBodies entry {key:?}")),
                )
            })?;
        let content_type = match body.required_string("ContentType")?.as_str() {
            "APPLICATION_JSON" => "application/json",
            "TEXT_HTML" => "text/html",
            _ => "text/plain",
        };
        Ok((
            status,
            Some((body.required_string("Content")?, content_type.to_owned())),
        ))
    }

    /// The `OriginCustomHeaders` of a distribution's custom origins (its API; an S3 origin is
    /// the pages' bucket, which the runner serves itself).
    pub(super) fn origin_headers(&self, props: &Node<'_>) -> anyhow::Result<Vec<(String, String)>> {
        let mut headers = Vec::new();
        let Some(origins) = props.path(&["DistributionConfig", "Origins"])? else {
            return Ok(headers);
        };
        for origin in origins.items()? {
            if origin.get("CustomOriginConfig")?.is_none() {
                continue;
            }
            let Some(custom) = origin.get("OriginCustomHeaders")? else {
                continue;
            };
            for header in custom.items()? {
                headers.push((
                    header.required_string("HeaderName")?.to_ascii_lowercase(),
                    header.required_string("HeaderValue")?,
                ));
            }
        }
        Ok(headers)
    }

    fn not_local(&self, node: &Node<'_>, what: &str) -> anyhow::Error {
        self.fail(&node.at, Problem::NotLocal(what.to_owned()))
    }
}

/// `text` with each `{{resolve:secretsmanager:<name>[:SecretString]}}` replaced by the local
/// value of the template's secret of that name, as CloudFormation replaces it with the
/// secret's value when it deploys.
pub(super) fn resolve_secrets(text: &str, secrets: &[SecretSpec]) -> anyhow::Result<String> {
    const OPEN: &str = "{{resolve:secretsmanager:";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start]);
        let after = &rest[start + OPEN.len()..];
        let end = after
            .find("}}")
            .ok_or_else(|| anyhow::anyhow!("an unterminated dynamic reference in {text:?}"))?;
        let reference = &after[..end];
        let (name, field) = reference.split_once(':').unwrap_or((reference, ""));
        if !matches!(field.trim_end_matches(':'), "" | "SecretString") {
            anyhow::bail!(
                "the dynamic reference {reference:?} names a JSON key, version or stage, which \
                 the local runner does not resolve"
            );
        }
        let secret = secrets
            .iter()
            .find(|secret| secret.name == name)
            .ok_or_else(|| {
                anyhow::anyhow!("the dynamic reference names {name:?}, no secret of the template")
            })?;
        out.push_str(&crate::secrets::local_value(&secret.logical_id));
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_reference_becomes_its_local_value() {
        let secrets = [SecretSpec {
            logical_id: "Verify".into(),
            name: "Verify".into(),
        }];
        assert_eq!(
            resolve_secrets("{{resolve:secretsmanager:Verify:SecretString}}", &secrets).unwrap(),
            "local-Verify-value"
        );
        assert_eq!(
            resolve_secrets("a {{resolve:secretsmanager:Verify}} b", &secrets).unwrap(),
            "a local-Verify-value b"
        );
        assert_eq!(resolve_secrets("plain", &secrets).unwrap(), "plain");
        assert!(resolve_secrets("{{resolve:secretsmanager:Other}}", &secrets).is_err());
        assert!(
            resolve_secrets(
                "{{resolve:secretsmanager:Verify:SecretString:key}}",
                &secrets
            )
            .is_err()
        );
    }
}
