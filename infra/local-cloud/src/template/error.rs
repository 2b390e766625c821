//! What can be wrong in a template and where: [`Problem`] says what, [`At`] says where, and
//! [`Resolver::fail`] joins them into an error that names the file and the place.

use std::fmt;

use super::intrinsics::Resolver;

/// What is wrong at one place of the template; the place is added as context.
#[derive(Debug, thiserror::Error)]
pub(super) enum Problem {
    #[error("unknown resource {name} in {intrinsic}")]
    UnknownResource {
        name: String,
        intrinsic: &'static str,
    },
    #[error("unknown pseudo parameter {0}")]
    UnknownPseudo(String),
    #[error(
        "resource {resource} ({kind}) has no attribute {attribute} that the local runner resolves"
    )]
    UnknownAttribute {
        resource: String,
        kind: String,
        attribute: String,
    },
    #[error("{0} is not supported by the local runner")]
    UnsupportedIntrinsic(String),
    #[error("malformed {intrinsic}: expected {expected}")]
    Malformed {
        intrinsic: String,
        expected: &'static str,
    },
    #[error("unknown condition {0}")]
    UnknownCondition(String),
    #[error("condition {0} depends on itself")]
    ConditionCycle(String),
    #[error("no entry {0} in Mappings")]
    UnknownMapping(String),
    #[error("index {index} is out of range for a list of {len} in !Select")]
    SelectOutOfRange { index: usize, len: usize },
    #[error(
        "Lambda refuses this event source: {queue}'s visibility timeout, {visibility} seconds, is \
         less than the function's timeout, {timeout} seconds"
    )]
    VisibilityBelowTimeout {
        queue: String,
        visibility: u64,
        timeout: u64,
    },
    #[error("unterminated ${{ in !Sub")]
    UnterminatedSub,
    #[error("the name of {0} depends on a name that depends on it")]
    NameCycle(String),
    #[error("expected {expected}, found {found}")]
    Type {
        expected: &'static str,
        found: String,
    },
    #[error("{0} is required")]
    Missing(&'static str),
    #[error("no value: give the parameter a Default or pass a parameter override")]
    NoParameterValue,
    #[error("the value {value:?} is not one of the AllowedValues {allowed:?}")]
    NotAllowed { value: String, allowed: Vec<String> },
    #[error("the value {0:?} is not a number")]
    NotANumber(String),
    #[error("the value {value} is outside MinValue..MaxValue ({min}..{max})")]
    OutOfRange { value: f64, min: f64, max: f64 },
    #[error("the template has no such parameter")]
    UnknownOverride,
    #[error("no {kind} of this template has the ARN {arn}")]
    UnknownArn { kind: &'static str, arn: String },
    #[error("route {route} is already served by {first}")]
    DuplicateRoute { route: String, first: String },
    #[error("not a valid JSON text")]
    Json(#[source] serde_json::Error),
    /// Valid in AWS, but not emulated by the runner; the text says what and why.
    #[error("{0}")]
    NotLocal(String),
}

/// Where in the template a value sits: `resource EchoFunction, Events.Items.Properties.Path`.
/// The `Properties.` of a resource is left out, as SAM's own messages do.
#[derive(Clone, Debug)]
pub(super) struct At {
    pub(super) owner: String,
    pub(super) path: String,
}

impl At {
    pub(super) fn new(owner: impl Into<String>) -> Self {
        At {
            owner: owner.into(),
            path: String::new(),
        }
    }

    pub(super) fn key(&self, key: &str) -> At {
        let path = if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        };
        At {
            owner: self.owner.clone(),
            path,
        }
    }

    pub(super) fn index(&self, index: usize) -> At {
        At {
            owner: self.owner.clone(),
            path: format!("{}[{index}]", self.path),
        }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.owner)
        } else {
            write!(f, "{}, {}", self.owner, self.path)
        }
    }
}

impl Resolver<'_> {
    pub(super) fn fail(&self, at: &At, problem: Problem) -> anyhow::Error {
        anyhow::Error::new(problem).context(format!("{}: {at}", self.file))
    }
}
