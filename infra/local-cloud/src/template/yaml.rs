//! A typed accessor over the template's YAML: a [`Node`] is a value and where it is, and
//! reading a child resolves it when it is an intrinsic.

use std::borrow::Cow;

use yaml_serde::{Mapping, Value};

use super::error::{At, Problem};
use super::intrinsics::{Resolver, intrinsic};

/// What a value is, for error messages.
pub(super) fn describe(value: &Value) -> String {
    match value {
        Value::Null => "nothing".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {s:?}"),
        Value::Sequence(_) => "a list".into(),
        Value::Mapping(_) => "a mapping".into(),
        Value::Tagged(t) => format!("an unresolved {}", t.tag),
    }
}

/// A scalar as CloudFormation sees every scalar: a string.
pub(super) fn scalar_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A value of the template and where it is. Reading a child resolves it when it is an
/// intrinsic, so only what the runner reads is ever resolved.
pub(super) struct Node<'r> {
    pub(super) r: &'r Resolver<'r>,
    pub(super) value: Cow<'r, Value>,
    pub(super) at: At,
}

impl<'r> Node<'r> {
    pub(super) fn borrowed(r: &'r Resolver<'r>, value: &'r Value, at: At) -> Self {
        Node {
            r,
            value: Cow::Borrowed(value),
            at,
        }
    }

    pub(super) fn empty(r: &'r Resolver<'r>, at: At) -> Self {
        Node {
            r,
            value: Cow::Owned(Value::Mapping(Mapping::new())),
            at,
        }
    }

    /// A node for a raw value: resolved when it is an intrinsic (`None` for `AWS::NoValue`).
    pub(super) fn wrap(
        r: &'r Resolver<'r>,
        raw: Cow<'r, Value>,
        at: At,
    ) -> anyhow::Result<Option<Self>> {
        if intrinsic(&raw).is_some() {
            Ok(r.resolve(&raw, &at)?.map(|value| Node {
                r,
                value: Cow::Owned(value),
                at,
            }))
        } else {
            Ok(Some(Node { r, value: raw, at }))
        }
    }

    pub(super) fn reborrow(&self) -> Node<'_> {
        Node {
            r: self.r,
            value: Cow::Borrowed(&*self.value),
            at: self.at.clone(),
        }
    }

    pub(super) fn into_child(self, key: &str) -> anyhow::Result<Option<Node<'r>>> {
        let at = self.at.key(key);
        let raw = match self.value {
            Cow::Borrowed(value) => match value.get(key) {
                Some(child) => Cow::Borrowed(child),
                None => return Ok(None),
            },
            Cow::Owned(Value::Mapping(mut map)) => match map.remove(key) {
                Some(child) => Cow::Owned(child),
                None => return Ok(None),
            },
            Cow::Owned(_) => return Ok(None),
        };
        Node::wrap(self.r, raw, at)
    }

    pub(super) fn get(&self, key: &str) -> anyhow::Result<Option<Node<'_>>> {
        self.reborrow().into_child(key)
    }

    pub(super) fn path(&self, keys: &[&str]) -> anyhow::Result<Option<Node<'_>>> {
        let mut node = self.reborrow();
        for key in keys {
            match node.into_child(key)? {
                Some(child) => node = child,
                None => return Ok(None),
            }
        }
        Ok(Some(node))
    }

    pub(super) fn required(&self, key: &'static str) -> anyhow::Result<Node<'_>> {
        self.get(key)?
            .ok_or_else(|| self.r.fail(&self.at, Problem::Missing(key)))
    }

    pub(super) fn type_error(&self, expected: &'static str) -> anyhow::Error {
        self.r.fail(
            &self.at,
            Problem::Type {
                expected,
                found: describe(&self.value),
            },
        )
    }

    /// This value, fully resolved.
    pub(super) fn resolved(&self) -> anyhow::Result<Value> {
        Ok(self
            .r
            .resolve(&self.value, &self.at)?
            .unwrap_or(Value::Null))
    }

    pub(super) fn string(&self) -> anyhow::Result<String> {
        scalar_string(&self.value).ok_or_else(|| self.type_error("a string"))
    }

    pub(super) fn bool(&self) -> anyhow::Result<bool> {
        match &*self.value {
            Value::Bool(b) => Ok(*b),
            Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
            Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
            _ => Err(self.type_error("true or false")),
        }
    }

    pub(super) fn i64(&self) -> anyhow::Result<i64> {
        match &*self.value {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .ok_or_else(|| self.type_error("a whole number"))
    }

    pub(super) fn u64(&self) -> anyhow::Result<u64> {
        u64::try_from(self.i64()?).map_err(|_| self.type_error("a whole number >= 0"))
    }

    pub(super) fn u32(&self) -> anyhow::Result<u32> {
        u32::try_from(self.i64()?).map_err(|_| self.type_error("a whole number >= 0"))
    }

    /// A JSON text: a string as written, or a mapping or list written as JSON (CloudFormation
    /// takes both for policies, patterns and inputs).
    pub(super) fn json_text(&self) -> anyhow::Result<String> {
        match self.resolved()? {
            Value::String(text) => Ok(text),
            value @ (Value::Mapping(_) | Value::Sequence(_)) => serde_json::to_value(&value)
                .and_then(|json| serde_json::to_string(&json))
                .map_err(|err| self.r.fail(&self.at, Problem::Json(err))),
            _ => Err(self.type_error("a JSON text, mapping or list")),
        }
    }

    pub(super) fn items(&self) -> anyhow::Result<Vec<Node<'_>>> {
        let Value::Sequence(items) = &*self.value else {
            return Err(self.type_error("a list"));
        };
        let mut nodes = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            nodes.extend(Node::wrap(self.r, Cow::Borrowed(item), self.at.index(i))?);
        }
        Ok(nodes)
    }

    pub(super) fn entries(&self) -> anyhow::Result<Vec<(String, Node<'_>)>> {
        let Value::Mapping(map) = &*self.value else {
            return Err(self.type_error("a mapping"));
        };
        let mut entries = Vec::with_capacity(map.len());
        for (key, value) in map {
            let key = scalar_string(key).unwrap_or_default();
            if let Some(node) = Node::wrap(self.r, Cow::Borrowed(value), self.at.key(&key))? {
                entries.push((key, node));
            }
        }
        Ok(entries)
    }

    pub(super) fn string_at(&self, key: &str) -> anyhow::Result<Option<String>> {
        self.get(key)?.map(|n| n.string()).transpose()
    }

    pub(super) fn required_string(&self, key: &'static str) -> anyhow::Result<String> {
        self.required(key)?.string()
    }

    pub(super) fn bool_at(&self, key: &str) -> anyhow::Result<Option<bool>> {
        self.get(key)?.map(|n| n.bool()).transpose()
    }

    pub(super) fn i64_at(&self, key: &str) -> anyhow::Result<Option<i64>> {
        self.get(key)?.map(|n| n.i64()).transpose()
    }

    pub(super) fn u64_at(&self, key: &str) -> anyhow::Result<Option<u64>> {
        self.get(key)?.map(|n| n.u64()).transpose()
    }

    pub(super) fn u32_at(&self, key: &str) -> anyhow::Result<Option<u32>> {
        self.get(key)?.map(|n| n.u32()).transpose()
    }

    pub(super) fn json_text_at(&self, key: &str) -> anyhow::Result<Option<String>> {
        self.get(key)?.map(|n| n.json_text()).transpose()
    }

    pub(super) fn reports_batch_item_failures(&self) -> anyhow::Result<bool> {
        let Some(types) = self.get("FunctionResponseTypes")? else {
            return Ok(false);
        };
        for item in types.items()? {
            if item.string()? == "ReportBatchItemFailures" {
                return Ok(true);
            }
        }
        Ok(false)
    }
}
