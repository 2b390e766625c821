//! Reads a SAM template into the runner's [`Model`]: parameters, `Globals` and the intrinsics
//! resolved to the local stand-ins for the AWS account's names, URLs and ARNs.
//!
//! Only the properties the runner uses are resolved, so an intrinsic it cannot resolve inside
//! an alarm or an IAM policy does not stop it. Besides `!Ref`, `!GetAtt` and `!Sub`, the cheap
//! ones are resolved too: `!If` with `Conditions`, `!Join`, `!Select`, `!Split`, `!FindInMap`.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use serde_yaml::{Mapping, Value};

mod throttling;

use crate::model::{
    CognitoTrigger, EventSpec, FunctionSpec, HttpRoute, IndexSpec, JwtAuthorizer, Model, QueueSpec,
    ScheduleSource, SqsSource, StreamSource, TableSpec, TopicSource,
};

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
        serde_yaml::from_str(text).with_context(|| format!("{file}: not a valid YAML document"))?;
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

/// Lambda refuses an SQS event source whose queue hides a received message for less than the
/// function's timeout (`CreateEventSourceMapping`: "Queue visibility timeout: 2 seconds is less
/// than Function timeout: 10 seconds"), since a batch still running would be handed out again.
fn check_visibility(
    resolver: &Resolver<'_>,
    function: &FunctionSpec,
    model: &Model,
) -> anyhow::Result<()> {
    for event in &function.events {
        let EventSpec::Sqs(source) = event else {
            continue;
        };
        let Some(queue) = model
            .queues
            .iter()
            .find(|queue| queue.logical_id == source.queue_logical_id)
        else {
            continue;
        };
        // SQS's default when the template sets none.
        let visibility: u64 = queue
            .attributes
            .get("VisibilityTimeout")
            .and_then(|value| value.parse().ok())
            .unwrap_or(30);
        let timeout = function.timeout.as_secs();
        if visibility < timeout {
            let at = At::new(format!("resource {}", function.logical_id))
                .key("Events")
                .key(&source.event_name);
            return Err(resolver.fail(
                &at,
                Problem::VisibilityBelowTimeout {
                    queue: queue.logical_id.clone(),
                    visibility,
                    timeout,
                },
            ));
        }
    }
    Ok(())
}

/// What is wrong at one place of the template; the place is added as context.
#[derive(Debug, thiserror::Error)]
enum Problem {
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
struct At {
    owner: String,
    path: String,
}

impl At {
    fn new(owner: impl Into<String>) -> Self {
        At {
            owner: owner.into(),
            path: String::new(),
        }
    }

    fn key(&self, key: &str) -> At {
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

    fn index(&self, index: usize) -> At {
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

/// A parameter's value: a `CommaDelimitedList` or `List<...>` is a list.
#[derive(Clone, Debug)]
enum Param {
    Scalar(String),
    List(Vec<String>),
}

/// A resource as intrinsics see it. Table and queue names start unknown: they may themselves
/// use intrinsics, resolved in [`Resolver::physical_names`].
#[derive(Clone, Debug)]
enum Resource {
    Table(Option<String>),
    Queue(Option<String>),
    Function,
    Other(String),
}

impl Resource {
    fn new(kind: &str) -> Self {
        match kind {
            "AWS::DynamoDB::Table" | "AWS::Serverless::SimpleTable" => Resource::Table(None),
            "AWS::SQS::Queue" => Resource::Queue(None),
            "AWS::Serverless::Function" => Resource::Function,
            other => Resource::Other(other.to_owned()),
        }
    }

    fn kind(&self) -> &str {
        match self {
            Resource::Table(_) => "AWS::DynamoDB::Table",
            Resource::Queue(_) => "AWS::SQS::Queue",
            Resource::Function => "AWS::Serverless::Function",
            Resource::Other(kind) => kind,
        }
    }
}

/// The HttpApis, with `Globals.HttpApi` merged in: routes find their authorizers here.
struct Apis {
    explicit: BTreeMap<String, Mapping>,
    /// SAM's implicit `ServerlessHttpApi`, configured by `Globals.HttpApi` alone.
    implicit: Value,
}

/// Resolves intrinsics against the parameters, the resources and the local names.
struct Resolver<'t> {
    file: &'t str,
    names: &'t LocalNames,
    parameters: BTreeMap<String, Param>,
    resources: BTreeMap<String, Resource>,
    conditions: &'t Mapping,
    mappings: &'t Mapping,
    evaluated: RefCell<BTreeMap<String, bool>>,
    evaluating: RefCell<BTreeSet<String>>,
    /// The route keys of the events on each HttpApi (by where its settings are, e.g.
    /// `resource HttpApi`), which its `RouteSettings` may name.
    api_routes: RefCell<BTreeMap<String, BTreeSet<String>>>,
}

/// The intrinsic function a value is, if it is one: `(long name, argument)`. Short forms are
/// YAML tags (`!GetAtt A.B`), long forms one-key mappings (`{"Fn::GetAtt": [A, B]}`).
fn intrinsic(value: &Value) -> Option<(String, &Value)> {
    match value {
        Value::Tagged(tagged) => {
            let tag = tagged.tag.to_string();
            let bare = tag.trim_start_matches('!');
            let name = match bare {
                "Ref" | "Condition" => bare.to_owned(),
                _ => format!("Fn::{bare}"),
            };
            Some((name, &tagged.value))
        }
        Value::Mapping(map) if map.len() == 1 => {
            let (key, arg) = map.iter().next()?;
            let key = key.as_str()?;
            (key == "Ref" || key.starts_with("Fn::")).then(|| (key.to_owned(), arg))
        }
        _ => None,
    }
}

/// The short form of an intrinsic's name, as errors show it: `!GetAtt`.
fn short(name: &str) -> String {
    format!("!{}", name.strip_prefix("Fn::").unwrap_or(name))
}

/// What a value is, for error messages.
fn describe(value: &Value) -> String {
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
fn scalar_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `Globals` under a resource's own properties: the resource wins key by key, except that
/// `Environment.Variables` are merged variable by variable.
fn merge(globals: &Mapping, own: &Mapping) -> Mapping {
    let mut merged = globals.clone();
    for (key, value) in own {
        let combined = match (key.as_str(), merged.get(key), value) {
            (Some("Environment"), Some(Value::Mapping(global)), Value::Mapping(local)) => {
                let mut environment = global.clone();
                for (k, v) in local {
                    if k.as_str() == Some("Variables")
                        && let (Some(Value::Mapping(gv)), Value::Mapping(lv)) =
                            (global.get("Variables"), v)
                    {
                        let mut variables = gv.clone();
                        for (name, value) in lv {
                            variables.insert(name.clone(), value.clone());
                        }
                        environment.insert(k.clone(), Value::Mapping(variables));
                        continue;
                    }
                    environment.insert(k.clone(), v.clone());
                }
                Value::Mapping(environment)
            }
            _ => value.clone(),
        };
        merged.insert(key.clone(), combined);
    }
    merged
}

/// A resource's `Properties` as a node (an empty mapping when it has none).
fn properties<'r>(r: &'r Resolver<'r>, decl: &'r Value, at: &At) -> anyhow::Result<Node<'r>> {
    let resource = Node::borrowed(r, decl, at.clone());
    // The path of a property leaves `Properties.` out: see `At`.
    let props = resource.into_child("Properties")?;
    Ok(props
        .map(|p| Node {
            at: at.clone(),
            ..p
        })
        .unwrap_or_else(|| Node::empty(r, at.clone())))
}

/// The template's parameters, from the overrides or their defaults, checked.
fn parameters(
    file: &str,
    declared: &Mapping,
    overrides: &BTreeMap<String, String>,
) -> anyhow::Result<BTreeMap<String, Param>> {
    let fail =
        |at: &str, problem: Problem| anyhow::Error::new(problem).context(format!("{file}: {at}"));
    for name in overrides.keys() {
        if !declared.contains_key(name.as_str()) {
            return Err(fail(
                &format!("parameter override {name}"),
                Problem::UnknownOverride,
            ));
        }
    }
    let mut parameters = BTreeMap::new();
    for (name, decl) in declared {
        let name = scalar_string(name).unwrap_or_default();
        let at = format!("parameter {name}");
        let field = |key: &str| decl.get(key).and_then(scalar_string);
        let kind = field("Type").unwrap_or_else(|| "String".to_owned());
        let default = match decl.get("Default") {
            Some(Value::Sequence(items)) => Some(
                items
                    .iter()
                    .filter_map(scalar_string)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            Some(other) => scalar_string(other),
            None => None,
        };
        let raw = overrides
            .get(&name)
            .cloned()
            .or(default)
            .ok_or_else(|| fail(&at, Problem::NoParameterValue))?;
        if kind.starts_with("AWS::SSM::Parameter") {
            return Err(fail(
                &at,
                Problem::NotLocal(format!(
                    "parameters of type {kind} are read from SSM, which the local runner does not emulate"
                )),
            ));
        }
        let is_list = kind == "CommaDelimitedList" || kind.starts_with("List<");
        let values: Vec<String> = if is_list {
            raw.split(',').map(|v| v.trim().to_owned()).collect()
        } else {
            vec![raw.clone()]
        };
        if let Some(Value::Sequence(allowed)) = decl.get("AllowedValues") {
            let allowed: Vec<String> = allowed.iter().filter_map(scalar_string).collect();
            if let Some(bad) = values.iter().find(|v| !allowed.contains(v)) {
                return Err(fail(
                    &at,
                    Problem::NotAllowed {
                        value: bad.clone(),
                        allowed,
                    },
                ));
            }
        }
        if kind == "Number" || kind == "List<Number>" {
            let bound = |key: &str| field(key).and_then(|v| v.parse::<f64>().ok());
            let (min, max) = (bound("MinValue"), bound("MaxValue"));
            for value in &values {
                let number: f64 = value
                    .parse()
                    .map_err(|_| fail(&at, Problem::NotANumber(value.clone())))?;
                if min.is_some_and(|min| number < min) || max.is_some_and(|max| number > max) {
                    return Err(fail(
                        &at,
                        Problem::OutOfRange {
                            value: number,
                            min: min.unwrap_or(f64::NEG_INFINITY),
                            max: max.unwrap_or(f64::INFINITY),
                        },
                    ));
                }
            }
        }
        let param = if is_list {
            Param::List(values)
        } else {
            Param::Scalar(raw)
        };
        parameters.insert(name, param);
    }
    Ok(parameters)
}

impl<'t> Resolver<'t> {
    fn fail(&self, at: &At, problem: Problem) -> anyhow::Error {
        anyhow::Error::new(problem).context(format!("{}: {at}", self.file))
    }

    fn table_arn(&self, name: &str) -> String {
        format!(
            "arn:aws:dynamodb:{}:{}:table/{name}",
            self.names.region, self.names.account_id
        )
    }

    /// A stand-in: the streams poller looks the real stream ARN up by table name.
    fn stream_arn(&self, table: &str) -> String {
        format!("{}/stream/local", self.table_arn(table))
    }

    fn queue_arn(&self, name: &str) -> String {
        format!(
            "arn:aws:sqs:{}:{}:{name}",
            self.names.region, self.names.account_id
        )
    }

    fn queue_url(&self, name: &str) -> String {
        format!(
            "{}/{}/{name}",
            self.names.sqs_endpoint.trim_end_matches('/'),
            self.names.account_id
        )
    }

    /// A table's or queue's name, or an error when it is not known yet.
    fn name_of<'a>(&self, id: &str, name: &'a Option<String>, at: &At) -> anyhow::Result<&'a str> {
        name.as_deref()
            .ok_or_else(|| self.fail(at, Problem::NameCycle(id.to_owned())))
    }

    /// Fills in the names of tables and queues. A name may use another one's (say
    /// `!Sub ${WorkQueue.QueueName}-dlq`), so they are resolved in rounds until none is left.
    fn physical_names(&mut self, resources: &[(&str, &Value, String)]) -> anyhow::Result<()> {
        let mut pending: Vec<(&str, &Value)> = resources
            .iter()
            .filter(|(id, _, _)| {
                matches!(self.resources[*id], Resource::Table(_) | Resource::Queue(_))
            })
            .map(|(id, decl, _)| (*id, *decl))
            .collect();
        while !pending.is_empty() {
            let mut named = Vec::new();
            let mut waiting = Vec::new();
            let mut first_cycle = None;
            for (id, decl) in pending {
                match self.physical_name(id, decl) {
                    Ok(name) => named.push((id, name)),
                    Err(err)
                        if matches!(err.downcast_ref::<Problem>(), Some(Problem::NameCycle(_))) =>
                    {
                        first_cycle.get_or_insert(err);
                        waiting.push((id, decl));
                    }
                    Err(err) => return Err(err),
                }
            }
            if named.is_empty()
                && let Some(err) = first_cycle
            {
                return Err(err);
            }
            for (id, name) in named {
                if let Some(Resource::Table(slot) | Resource::Queue(slot)) =
                    self.resources.get_mut(id)
                {
                    *slot = Some(name);
                }
            }
            pending = waiting;
        }
        Ok(())
    }

    fn physical_name(&self, id: &str, decl: &Value) -> anyhow::Result<String> {
        let at = At::new(format!("resource {id}"));
        let props = properties(self, decl, &at)?;
        let stack = &self.names.stack_name;
        match self.resources[id] {
            Resource::Table(_) => Ok(props
                .string_at("TableName")?
                .unwrap_or_else(|| format!("{stack}-{id}"))),
            _ => {
                if let Some(name) = props.string_at("QueueName")? {
                    return Ok(name);
                }
                let fifo = props.bool_at("FifoQueue")?.unwrap_or(false);
                Ok(format!("{stack}-{id}{}", if fifo { ".fifo" } else { "" }))
            }
        }
    }

    /// Resolves every intrinsic in `value`; `None` is `AWS::NoValue`, which removes the key.
    fn resolve(&self, value: &Value, at: &At) -> anyhow::Result<Option<Value>> {
        if let Some((name, arg)) = intrinsic(value) {
            return self.call(&name, arg, at);
        }
        Ok(Some(match value {
            Value::Mapping(map) => {
                let mut resolved = Mapping::new();
                for (key, value) in map {
                    let child = at.key(&scalar_string(key).unwrap_or_default());
                    if let Some(value) = self.resolve(value, &child)? {
                        resolved.insert(key.clone(), value);
                    }
                }
                Value::Mapping(resolved)
            }
            Value::Sequence(items) => {
                let mut resolved = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    resolved.extend(self.resolve(item, &at.index(i))?);
                }
                Value::Sequence(resolved)
            }
            other => other.clone(),
        }))
    }

    /// Resolves to a scalar, as a string.
    fn resolve_string(&self, value: &Value, what: &'static str, at: &At) -> anyhow::Result<String> {
        match self.resolve(value, at)? {
            Some(resolved) => scalar_string(&resolved).ok_or_else(|| {
                self.fail(
                    at,
                    Problem::Type {
                        expected: what,
                        found: describe(&resolved),
                    },
                )
            }),
            None => Err(self.fail(
                at,
                Problem::Type {
                    expected: what,
                    found: "AWS::NoValue".into(),
                },
            )),
        }
    }

    fn malformed(&self, name: &str, expected: &'static str, at: &At) -> anyhow::Error {
        self.fail(
            at,
            Problem::Malformed {
                intrinsic: short(name),
                expected,
            },
        )
    }

    fn call(&self, name: &str, arg: &Value, at: &At) -> anyhow::Result<Option<Value>> {
        match name {
            "Ref" => {
                let Value::String(target) = arg else {
                    return Err(self.malformed(name, "a logical id or parameter name", at));
                };
                self.reference(target, "!Ref", at)
            }
            "Fn::GetAtt" => {
                let (resource, attribute) = match arg {
                    Value::String(s) => s
                        .split_once('.')
                        .map(|(r, a)| (r.to_owned(), a.to_owned()))
                        .ok_or_else(|| self.malformed(name, "Resource.Attribute", at))?,
                    Value::Sequence(items) if items.len() == 2 => (
                        scalar_string(&items[0])
                            .ok_or_else(|| self.malformed(name, "[Resource, Attribute]", at))?,
                        self.resolve_string(&items[1], "an attribute name", at)?,
                    ),
                    _ => return Err(self.malformed(name, "Resource.Attribute", at)),
                };
                self.attribute(&resource, &attribute, "!GetAtt", at)
                    .map(|v| Some(Value::String(v)))
            }
            "Fn::Sub" => {
                let (text, variables) = match arg {
                    Value::String(text) => (text, None),
                    Value::Sequence(items) => match items.as_slice() {
                        [Value::String(text), Value::Mapping(variables)] => (text, Some(variables)),
                        _ => {
                            return Err(self.malformed(
                                name,
                                "a string or [string, variables]",
                                at,
                            ));
                        }
                    },
                    _ => return Err(self.malformed(name, "a string or [string, variables]", at)),
                };
                self.substitute(text, variables, at)
                    .map(|v| Some(Value::String(v)))
            }
            "Fn::If" => {
                let Some([condition, then, otherwise]) = arg.as_sequence().map(Vec::as_slice)
                else {
                    return Err(self.malformed(
                        name,
                        "[condition, value if true, value if false]",
                        at,
                    ));
                };
                let condition = scalar_string(condition)
                    .ok_or_else(|| self.malformed(name, "a condition name first", at))?;
                // Only the branch taken is resolved, as CloudFormation does.
                if self.condition(&condition, at)? {
                    self.resolve(then, at)
                } else {
                    self.resolve(otherwise, at)
                }
            }
            "Fn::Join" => {
                let Some([delimiter, list]) = arg.as_sequence().map(Vec::as_slice) else {
                    return Err(self.malformed(name, "[delimiter, list]", at));
                };
                let delimiter = self.resolve_string(delimiter, "a delimiter", at)?;
                let parts = self.resolve_list(list, name, at)?;
                let parts = parts
                    .iter()
                    .map(|part| {
                        scalar_string(part).ok_or_else(|| {
                            self.fail(
                                at,
                                Problem::Type {
                                    expected: "a list of strings",
                                    found: describe(part),
                                },
                            )
                        })
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                Ok(Some(Value::String(parts.join(&delimiter))))
            }
            "Fn::Select" => {
                let Some([index, list]) = arg.as_sequence().map(Vec::as_slice) else {
                    return Err(self.malformed(name, "[index, list]", at));
                };
                let index = self.resolve_string(index, "an index", at)?;
                let index: usize = index
                    .parse()
                    .map_err(|_| self.malformed(name, "a whole number as the index", at))?;
                let list = self.resolve_list(list, name, at)?;
                let len = list.len();
                list.into_iter()
                    .nth(index)
                    .map(Some)
                    .ok_or_else(|| self.fail(at, Problem::SelectOutOfRange { index, len }))
            }
            "Fn::Split" => {
                let Some([delimiter, text]) = arg.as_sequence().map(Vec::as_slice) else {
                    return Err(self.malformed(name, "[delimiter, string]", at));
                };
                let delimiter = self.resolve_string(delimiter, "a delimiter", at)?;
                let text = self.resolve_string(text, "a string", at)?;
                Ok(Some(Value::Sequence(
                    text.split(delimiter.as_str())
                        .map(|s| Value::String(s.to_owned()))
                        .collect(),
                )))
            }
            "Fn::FindInMap" => {
                let Some([map, top, second]) = arg.as_sequence().map(Vec::as_slice) else {
                    return Err(self.malformed(name, "[map, top-level key, second-level key]", at));
                };
                let keys = [
                    self.resolve_string(map, "a map name", at)?,
                    self.resolve_string(top, "a key", at)?,
                    self.resolve_string(second, "a key", at)?,
                ];
                let found = self
                    .mappings
                    .get(keys[0].as_str())
                    .and_then(|m| m.get(keys[1].as_str()))
                    .and_then(|m| m.get(keys[2].as_str()))
                    .ok_or_else(|| self.fail(at, Problem::UnknownMapping(keys.join("."))))?;
                Ok(Some(found.clone()))
            }
            other => Err(self.fail(at, Problem::UnsupportedIntrinsic(short(other)))),
        }
    }

    fn resolve_list(&self, list: &Value, name: &str, at: &At) -> anyhow::Result<Vec<Value>> {
        match self.resolve(list, at)? {
            Some(Value::Sequence(items)) => Ok(items),
            _ => Err(self.malformed(name, "a list", at)),
        }
    }

    /// `Ref`: pseudo parameters, parameters, then resources.
    fn reference(
        &self,
        target: &str,
        intrinsic: &'static str,
        at: &At,
    ) -> anyhow::Result<Option<Value>> {
        let names = self.names;
        let text = |s: String| Ok(Some(Value::String(s)));
        if let Some(pseudo) = target.strip_prefix("AWS::") {
            return match pseudo {
                "NoValue" => Ok(None),
                "StackName" => text(names.stack_name.clone()),
                "Region" => text(names.region.clone()),
                "AccountId" => text(names.account_id.clone()),
                "Partition" => text("aws".into()),
                "URLSuffix" => text("amazonaws.com".into()),
                "StackId" => text(format!(
                    "arn:aws:cloudformation:{}:{}:stack/{}/local",
                    names.region, names.account_id, names.stack_name
                )),
                "NotificationARNs" => Ok(Some(Value::Sequence(Vec::new()))),
                _ => Err(self.fail(at, Problem::UnknownPseudo(target.to_owned()))),
            };
        }
        if let Some(param) = self.parameters.get(target) {
            return Ok(Some(match param {
                Param::Scalar(s) => Value::String(s.clone()),
                Param::List(items) => {
                    Value::Sequence(items.iter().cloned().map(Value::String).collect())
                }
            }));
        }
        match self.resources.get(target) {
            Some(Resource::Table(name)) => text(self.name_of(target, name, at)?.to_owned()),
            Some(Resource::Queue(name)) => text(self.queue_url(self.name_of(target, name, at)?)),
            Some(Resource::Function | Resource::Other(_)) => text(target.to_owned()),
            None => Err(self.fail(
                at,
                Problem::UnknownResource {
                    name: target.to_owned(),
                    intrinsic,
                },
            )),
        }
    }

    /// `GetAtt`.
    fn attribute(
        &self,
        resource: &str,
        attribute: &str,
        intrinsic: &'static str,
        at: &At,
    ) -> anyhow::Result<String> {
        let Some(found) = self.resources.get(resource) else {
            return Err(self.fail(
                at,
                Problem::UnknownResource {
                    name: resource.to_owned(),
                    intrinsic,
                },
            ));
        };
        let value = match (found, attribute) {
            (Resource::Table(name), "Arn") => {
                Some(self.table_arn(self.name_of(resource, name, at)?))
            }
            (Resource::Table(name), "StreamArn") => {
                Some(self.stream_arn(self.name_of(resource, name, at)?))
            }
            (Resource::Queue(name), "Arn") => {
                Some(self.queue_arn(self.name_of(resource, name, at)?))
            }
            (Resource::Queue(name), "QueueName") => {
                Some(self.name_of(resource, name, at)?.to_owned())
            }
            (Resource::Queue(name), "QueueUrl") => {
                Some(self.queue_url(self.name_of(resource, name, at)?))
            }
            // Locally the functions get REDIS_URL, which wins over the endpoint: a name that
            // resolves nowhere says so if it is ever used.
            (Resource::Other(kind), "PrimaryEndPoint.Address" | "ReaderEndPoint.Address")
                if kind == "AWS::ElastiCache::ReplicationGroup" =>
            {
                Some(format!("{resource}.local-cloud.invalid"))
            }
            (Resource::Other(kind), "PrimaryEndPoint.Port" | "ReaderEndPoint.Port")
                if kind == "AWS::ElastiCache::ReplicationGroup" =>
            {
                Some("6379".to_owned())
            }
            (Resource::Function, "Arn") => Some(self.function_arn(resource)),
            _ => None,
        };
        value.ok_or_else(|| {
            self.fail(
                at,
                Problem::UnknownAttribute {
                    resource: resource.to_owned(),
                    kind: found.kind().to_owned(),
                    attribute: attribute.to_owned(),
                },
            )
        })
    }

    /// `Sub`: `${Name}`, `${Resource.Attribute}`, `${!Literal}` and the variables map.
    fn substitute(
        &self,
        text: &str,
        variables: Option<&Mapping>,
        at: &At,
    ) -> anyhow::Result<String> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            if let Some(literal) = after.strip_prefix('!') {
                out.push_str("${");
                rest = literal;
                continue;
            }
            let end = after
                .find('}')
                .ok_or_else(|| self.fail(at, Problem::UnterminatedSub))?;
            let name = after[..end].trim();
            let value = match variables.and_then(|v| v.get(name)) {
                Some(value) => self.resolve_string(value, "a string for !Sub", at)?,
                None => self.sub_variable(name, at)?,
            };
            out.push_str(&value);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn sub_variable(&self, name: &str, at: &At) -> anyhow::Result<String> {
        if !name.starts_with("AWS::")
            && let Some((resource, attribute)) = name.split_once('.')
        {
            return self.attribute(resource, attribute, "!Sub", at);
        }
        match self.reference(name, "!Sub", at)? {
            Some(value) => scalar_string(&value).ok_or_else(|| {
                self.fail(
                    at,
                    Problem::Type {
                        expected: "a string for !Sub",
                        found: describe(&value),
                    },
                )
            }),
            None => Err(self.fail(
                at,
                Problem::Type {
                    expected: "a string for !Sub",
                    found: "AWS::NoValue".into(),
                },
            )),
        }
    }

    /// A named condition's value, evaluated once.
    fn condition(&self, name: &str, at: &At) -> anyhow::Result<bool> {
        if let Some(&value) = self.evaluated.borrow().get(name) {
            return Ok(value);
        }
        let expression = self
            .conditions
            .get(name)
            .ok_or_else(|| self.fail(at, Problem::UnknownCondition(name.to_owned())))?;
        if !self.evaluating.borrow_mut().insert(name.to_owned()) {
            return Err(self.fail(at, Problem::ConditionCycle(name.to_owned())));
        }
        let value = self.evaluate(expression, &At::new(format!("condition {name}")));
        self.evaluating.borrow_mut().remove(name);
        let value = value?;
        self.evaluated.borrow_mut().insert(name.to_owned(), value);
        Ok(value)
    }

    fn evaluate(&self, expression: &Value, at: &At) -> anyhow::Result<bool> {
        if let Some(Value::String(name)) = expression
            .as_mapping()
            .filter(|m| m.len() == 1)
            .and_then(|m| m.get("Condition"))
        {
            return self.condition(name, at);
        }
        let Some((name, arg)) = intrinsic(expression) else {
            return Err(self.fail(
                at,
                Problem::Type {
                    expected: "a condition function",
                    found: describe(expression),
                },
            ));
        };
        let operands = || {
            arg.as_sequence()
                .ok_or_else(|| self.malformed(&name, "a list", at))
        };
        match name.as_str() {
            "Condition" => {
                let target = scalar_string(arg)
                    .ok_or_else(|| self.malformed(&name, "a condition name", at))?;
                self.condition(&target, at)
            }
            "Fn::Equals" => match operands()?.as_slice() {
                [a, b] => {
                    let (a, b) = (self.resolve(a, at)?, self.resolve(b, at)?);
                    let text = |v: &Option<Value>| v.as_ref().and_then(scalar_string);
                    Ok(match (text(&a), text(&b)) {
                        (Some(a), Some(b)) => a == b,
                        _ => a == b,
                    })
                }
                _ => Err(self.malformed(&name, "two values", at)),
            },
            "Fn::Not" => match operands()?.as_slice() {
                [inner] => Ok(!self.evaluate(inner, at)?),
                _ => Err(self.malformed(&name, "one condition", at)),
            },
            "Fn::And" => {
                for inner in operands()? {
                    if !self.evaluate(inner, at)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            "Fn::Or" => {
                for inner in operands()? {
                    if self.evaluate(inner, at)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            other => Err(self.fail(at, Problem::UnsupportedIntrinsic(short(other)))),
        }
    }

    // ------------------------------------------------------------------ resources

    fn table(&self, id: &str, props: &Node<'_>) -> anyhow::Result<TableSpec> {
        let pairs = |key: &'static str, first: &'static str, second: &'static str| {
            props
                .required(key)?
                .items()?
                .iter()
                .map(|item| Ok((item.required_string(first)?, item.required_string(second)?)))
                .collect::<anyhow::Result<Vec<_>>>()
        };
        let attributes = pairs("AttributeDefinitions", "AttributeName", "AttributeType")?;
        let key_schema = pairs("KeySchema", "AttributeName", "KeyType")?;
        let indexes = |key: &str| -> anyhow::Result<Vec<IndexSpec>> {
            let Some(list) = props.get(key)? else {
                return Ok(Vec::new());
            };
            list.items()?.iter().map(index).collect()
        };
        let ttl = match props.get("TimeToLiveSpecification")? {
            Some(ttl) if ttl.bool_at("Enabled")?.unwrap_or(false) => {
                Some(ttl.required_string("AttributeName")?)
            }
            _ => None,
        };
        Ok(TableSpec {
            logical_id: id.to_owned(),
            name: self.named(id),
            attributes,
            key_schema,
            global_secondary_indexes: indexes("GlobalSecondaryIndexes")?,
            local_secondary_indexes: indexes("LocalSecondaryIndexes")?,
            stream_view_type: match props.get("StreamSpecification")? {
                Some(stream) => stream.string_at("StreamViewType")?,
                None => None,
            },
            ttl_attribute: ttl,
        })
    }

    /// `AWS::Serverless::SimpleTable`: a hash key only, `id` of type String by default.
    fn simple_table(&self, id: &str, props: &Node<'_>) -> anyhow::Result<TableSpec> {
        let (key, kind) = match props.get("PrimaryKey")? {
            Some(key) => (
                key.string_at("Name")?.unwrap_or_else(|| "id".into()),
                key.string_at("Type")?.unwrap_or_else(|| "String".into()),
            ),
            None => ("id".into(), "String".into()),
        };
        let kind = match kind.as_str() {
            "String" => "S",
            "Number" => "N",
            "Binary" => "B",
            other => {
                return Err(self.fail(
                    &props.at.key("PrimaryKey").key("Type"),
                    Problem::Type {
                        expected: "String, Number or Binary",
                        found: format!("{other:?}"),
                    },
                ));
            }
        };
        Ok(TableSpec {
            logical_id: id.to_owned(),
            name: self.named(id),
            attributes: vec![(key.clone(), kind.to_owned())],
            key_schema: vec![(key, "HASH".to_owned())],
            global_secondary_indexes: Vec::new(),
            local_secondary_indexes: Vec::new(),
            stream_view_type: None,
            ttl_attribute: None,
        })
    }

    fn named(&self, id: &str) -> String {
        match &self.resources[id] {
            Resource::Table(Some(name)) | Resource::Queue(Some(name)) => name.clone(),
            // `physical_names` named every table and queue or failed.
            _ => unreachable!("resource {id} has no physical name"),
        }
    }

    fn queue(&self, id: &str, props: &Node<'_>) -> anyhow::Result<QueueSpec> {
        const PLAIN: [&str; 7] = [
            "VisibilityTimeout",
            "DelaySeconds",
            "MessageRetentionPeriod",
            "MaximumMessageSize",
            "ReceiveMessageWaitTimeSeconds",
            "DeduplicationScope",
            "FifoThroughputLimit",
        ];
        let mut attributes = BTreeMap::new();
        for key in PLAIN {
            if let Some(value) = props.string_at(key)? {
                attributes.insert(key.to_owned(), value);
            }
        }
        // SQS wants these absent rather than "false" on a standard queue.
        for key in ["FifoQueue", "ContentBasedDeduplication"] {
            if props.bool_at(key)? == Some(true) {
                attributes.insert(key.to_owned(), "true".to_owned());
            }
        }
        for key in ["RedrivePolicy", "RedriveAllowPolicy"] {
            if let Some(policy) = props.get(key)? {
                attributes.insert(key.to_owned(), policy.json_text()?);
            }
        }
        let name = self.named(id);
        Ok(QueueSpec {
            logical_id: id.to_owned(),
            url: self.queue_url(&name),
            name,
            attributes,
        })
    }

    /// The queue whose ARN this is: `(logical id, name)`.
    fn queue_by_arn(&self, arn: &str) -> Option<(&str, &str)> {
        self.resources
            .iter()
            .find_map(|(id, resource)| match resource {
                Resource::Queue(Some(name)) if self.queue_arn(name) == arn => {
                    Some((id.as_str(), name.as_str()))
                }
                _ => None,
            })
    }

    fn function(
        &self,
        id: &str,
        decl: &Value,
        globals: &Mapping,
        model: &Model,
        apis: &Apis,
    ) -> anyhow::Result<FunctionSpec> {
        let at = At::new(format!("resource {id}"));
        let own = properties(self, decl, &at)?;
        let own = own.value.as_mapping().cloned().unwrap_or_default();
        let props = Node {
            r: self,
            value: Cow::Owned(Value::Mapping(merge(globals, &own))),
            at: at.clone(),
        };

        let resource = Node::borrowed(self, decl, at.clone());
        let binary = match resource.path(&["Metadata", "BuildProperties", "Binary"])? {
            Some(binary) => binary.string()?,
            None => {
                let uri = props.get("CodeUri")?.ok_or_else(|| {
                    self.fail(
                        &at,
                        Problem::NotLocal(
                            "neither Metadata.BuildProperties.Binary nor a CodeUri folder names \
                             the binary to run"
                                .into(),
                        ),
                    )
                })?;
                let folder = uri.string()?;
                Path::new(folder.trim_end_matches('/'))
                    .file_name()
                    .and_then(|name| name.to_str())
                    .filter(|name| !name.is_empty() && *name != "." && *name != "..")
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        self.fail(
                            &uri.at,
                            Problem::Type {
                                expected: "a folder whose name is the binary",
                                found: format!("{folder:?}"),
                            },
                        )
                    })?
            }
        };

        let mut environment = BTreeMap::new();
        if let Some(variables) = props.path(&["Environment", "Variables"])? {
            for (name, value) in variables.entries()? {
                environment.insert(name, value.string()?);
            }
        }

        let mut events = Vec::new();
        if let Some(declared) = props.get("Events")? {
            for (name, event) in declared.entries()? {
                events.push(self.event(&name, &event, model, apis)?);
            }
        }

        Ok(FunctionSpec {
            logical_id: id.to_owned(),
            name: id.to_owned(),
            binary,
            timeout: Duration::from_secs(props.u64_at("Timeout")?.unwrap_or(3)),
            memory_mb: props.u32_at("MemorySize")?.unwrap_or(128),
            environment,
            reserved_concurrency: props.u32_at("ReservedConcurrentExecutions")?,
            events,
        })
    }

    /// The local ARN of a function of the template (what `!GetAtt <Function>.Arn` gives).
    fn function_arn(&self, logical_id: &str) -> String {
        format!(
            "arn:aws:lambda:{}:{}:function:{logical_id}",
            self.names.region, self.names.account_id
        )
    }

    /// The Lambda triggers in a user pool's `LambdaConfig`: (function ARN, where, trigger).
    /// `PreTokenGenerationConfig` (with its `LambdaVersion`) wins over the older
    /// `PreTokenGeneration` key, which names the same function when both are set.
    fn cognito_triggers(
        &self,
        pool: &str,
        props: &Node<'_>,
    ) -> anyhow::Result<Vec<(String, At, CognitoTrigger)>> {
        let Some(config) = props.get("LambdaConfig")? else {
            return Ok(Vec::new());
        };
        let entries = config.entries()?;
        let versioned = entries
            .iter()
            .any(|(key, _)| key == "PreTokenGenerationConfig");
        let mut triggers = Vec::new();
        for (key, value) in &entries {
            let (trigger, arn, version) = match key.as_str() {
                // A KMS key for the custom senders, not a function.
                "KMSKeyID" => continue,
                "PreTokenGeneration" if versioned => continue,
                "PreTokenGenerationConfig" => (
                    "PreTokenGeneration".to_owned(),
                    value.required_string("LambdaArn")?,
                    value.string_at("LambdaVersion")?,
                ),
                "CustomEmailSender" | "CustomSMSSender" => (
                    key.clone(),
                    value.required_string("LambdaArn")?,
                    value.string_at("LambdaVersion")?,
                ),
                _ => (key.clone(), value.string()?, None),
            };
            triggers.push((
                arn,
                value.at.clone(),
                CognitoTrigger {
                    user_pool: pool.to_owned(),
                    trigger,
                    version: version.unwrap_or_else(|| "V1_0".to_owned()),
                },
            ));
        }
        Ok(triggers)
    }

    fn event(
        &self,
        name: &str,
        event: &Node<'_>,
        model: &Model,
        apis: &Apis,
    ) -> anyhow::Result<EventSpec> {
        let kind = event.required_string("Type")?;
        let props = event
            .get("Properties")?
            .unwrap_or_else(|| Node::empty(self, event.at.key("Properties")));
        let event_name = name.to_owned();
        Ok(match kind.as_str() {
            "HttpApi" => EventSpec::Http(self.http_route(event_name, &props, apis)?),
            "SQS" => EventSpec::Sqs(self.sqs_source(event_name, &props)?),
            "DynamoDB" => EventSpec::Stream(self.stream_source(event_name, &props, model)?),
            "Schedule" => {
                let state = props.string_at("State")?;
                EventSpec::Schedule(ScheduleSource {
                    event_name,
                    expression: props.required_string("Schedule")?,
                    input: props.json_text_at("Input")?,
                    enabled: props.bool_at("Enabled")?.unwrap_or(true)
                        && state.as_deref() != Some("DISABLED"),
                })
            }
            "SNS" => EventSpec::Topic(TopicSource {
                event_name,
                topic: props.required_string("Topic")?,
            }),
            "ScheduleV2" => EventSpec::Schedule(ScheduleSource {
                event_name,
                expression: props.required_string("ScheduleExpression")?,
                input: props.json_text_at("Input")?,
                enabled: props.string_at("State")?.as_deref() != Some("DISABLED"),
            }),
            "Api" => {
                return Err(self.fail(
                    &event.at,
                    Problem::NotLocal(
                        "event type Api (a REST API) is not supported: only HttpApi events are"
                            .into(),
                    ),
                ));
            }
            other => {
                return Err(self.fail(
                    &event.at,
                    Problem::NotLocal(format!(
                        "event type {other} is not supported locally (the runner drives \
                         HttpApi, SQS, DynamoDB, Schedule and ScheduleV2 events, and accepts \
                         SNS events)"
                    )),
                ));
            }
        })
    }

    fn http_route(
        &self,
        event_name: String,
        props: &Node<'_>,
        apis: &Apis,
    ) -> anyhow::Result<HttpRoute> {
        let (method, path) = match (props.string_at("Method")?, props.string_at("Path")?) {
            (Some(method), Some(path)) => {
                let method = method.to_ascii_uppercase();
                let method = if method == "X-AMAZON-APIGATEWAY-ANY-METHOD" {
                    "ANY".to_owned()
                } else {
                    method
                };
                (method, path)
            }
            // SAM's default route: whatever no other route matches.
            (None, None) => ("ANY".to_owned(), "$default".to_owned()),
            (None, Some(_)) => return Err(self.fail(&props.at, Problem::Missing("Method"))),
            (Some(_), None) => return Err(self.fail(&props.at, Problem::Missing("Path"))),
        };

        let api = match props.get("ApiId")? {
            Some(api_id) => {
                let id = api_id.string()?;
                let found = apis.explicit.get(&id).ok_or_else(|| {
                    self.fail(
                        &api_id.at,
                        Problem::NotLocal(format!(
                            "{id} is not an AWS::Serverless::HttpApi of this template"
                        )),
                    )
                })?;
                Node {
                    r: self,
                    value: Cow::Owned(Value::Mapping(found.clone())),
                    at: At::new(format!("resource {id}")),
                }
            }
            None => Node::borrowed(self, &apis.implicit, At::new("Globals.HttpApi")),
        };

        let chosen = match props.path(&["Auth", "Authorizer"])? {
            Some(name) => Some((name.string()?, name.at.clone())),
            None => match api.path(&["Auth", "DefaultAuthorizer"])? {
                Some(name) => Some((name.string()?, name.at.clone())),
                None => None,
            },
        };
        let authorizer = match chosen {
            None => None,
            Some((name, _)) if name == "NONE" => None,
            Some((name, at)) => Some(self.authorizer(&api, &name, &at)?),
        };
        let route_key = throttling::route_key(&method, &path);
        let throttle = throttling::route_throttle(&api, props, &route_key)?;
        self.api_routes
            .borrow_mut()
            .entry(throttling::api_name(&api))
            .or_default()
            .insert(route_key);
        Ok(HttpRoute {
            event_name,
            method,
            path,
            authorizer,
            throttle,
        })
    }

    /// Each API's `RouteSettings` name only routes it has; SAM's implicit API is checked when
    /// a route uses it, since only then does it exist.
    fn check_route_settings(&self, apis: &Apis) -> anyhow::Result<()> {
        let routes = self.api_routes.borrow();
        let none = BTreeSet::new();
        for (id, settings) in &apis.explicit {
            let api = Node {
                r: self,
                value: Cow::Owned(Value::Mapping(settings.clone())),
                at: At::new(format!("resource {id}")),
            };
            let on_api = routes.get(&throttling::api_name(&api)).unwrap_or(&none);
            throttling::check_route_keys(self, &api, on_api)?;
        }
        let implicit = Node::borrowed(self, &apis.implicit, At::new("Globals.HttpApi"));
        if let Some(on_api) = routes.get(&throttling::api_name(&implicit)) {
            throttling::check_route_keys(self, &implicit, on_api)?;
        }
        Ok(())
    }

    fn authorizer(&self, api: &Node<'_>, name: &str, at: &At) -> anyhow::Result<JwtAuthorizer> {
        if name == "AWS_IAM" {
            return Err(self.fail(
                at,
                Problem::NotLocal("IAM authorization is not emulated locally".into()),
            ));
        }
        let Some(config) = api.path(&["Auth", "Authorizers", name])? else {
            return Err(self.fail(
                at,
                Problem::NotLocal(format!(
                    "authorizer {name} is not defined in Auth.Authorizers of the {}",
                    api.at.owner
                )),
            ));
        };
        if config.get("FunctionArn")?.is_some() {
            return Err(self.fail(
                &config.at,
                Problem::NotLocal(format!(
                    "{name} is a Lambda authorizer; only JWT authorizers are emulated locally"
                )),
            ));
        }
        Ok(JwtAuthorizer {
            name: name.to_owned(),
            identity_source: config
                .string_at("IdentitySource")?
                .unwrap_or_else(|| "$request.header.Authorization".to_owned()),
        })
    }

    fn sqs_source(&self, event_name: String, props: &Node<'_>) -> anyhow::Result<SqsSource> {
        let queue = props.required("Queue")?;
        let arn = queue.string()?;
        let (logical_id, name) = self.queue_by_arn(&arn).ok_or_else(|| {
            self.fail(
                &queue.at,
                Problem::UnknownArn {
                    kind: "queue",
                    arn: arn.clone(),
                },
            )
        })?;
        if props.get("FilterCriteria")?.is_some() {
            return Err(self.fail(
                &props.at.key("FilterCriteria"),
                Problem::NotLocal("FilterCriteria on SQS events is not emulated locally".into()),
            ));
        }
        let maximum_concurrency = match props.get("ScalingConfig")? {
            Some(scaling) => scaling.u32_at("MaximumConcurrency")?,
            None => None,
        };
        Ok(SqsSource {
            event_name,
            queue_logical_id: logical_id.to_owned(),
            queue_url: self.queue_url(name),
            queue_arn: arn,
            batch_size: props.u32_at("BatchSize")?.unwrap_or(10),
            batching_window: Duration::from_secs(
                props.u64_at("MaximumBatchingWindowInSeconds")?.unwrap_or(0),
            ),
            report_batch_item_failures: props.reports_batch_item_failures()?,
            maximum_concurrency,
            enabled: props.bool_at("Enabled")?.unwrap_or(true),
        })
    }

    fn stream_source(
        &self,
        event_name: String,
        props: &Node<'_>,
        model: &Model,
    ) -> anyhow::Result<StreamSource> {
        let stream = props.required("Stream")?;
        let arn = stream.string()?;
        let table = model
            .tables
            .iter()
            .find(|t| self.stream_arn(&t.name) == arn)
            .ok_or_else(|| {
                self.fail(
                    &stream.at,
                    Problem::UnknownArn {
                        kind: "table stream",
                        arn: arn.clone(),
                    },
                )
            })?;
        if table.stream_view_type.is_none() {
            return Err(self.fail(
                &stream.at,
                Problem::NotLocal(format!(
                    "table {} has no StreamSpecification",
                    table.logical_id
                )),
            ));
        }
        let starting_position = props.required_string("StartingPosition")?;
        match starting_position.as_str() {
            "TRIM_HORIZON" | "LATEST" => {}
            other => {
                return Err(self.fail(
                    &props.at.key("StartingPosition"),
                    Problem::NotLocal(format!(
                        "StartingPosition {other} is not supported locally (TRIM_HORIZON and \
                         LATEST are)"
                    )),
                ));
            }
        }
        let mut filters = Vec::new();
        if let Some(list) = props.path(&["FilterCriteria", "Filters"])? {
            for filter in list.items()? {
                let pattern = filter.required("Pattern")?;
                let text = pattern.json_text()?;
                let parsed = serde_json::from_str(&text)
                    .map_err(|err| self.fail(&pattern.at, Problem::Json(err)))?;
                filters.push(parsed);
            }
        }
        let on_failure_queue_url = match props.path(&["DestinationConfig", "OnFailure"])? {
            Some(on_failure) => match on_failure.get("Destination")? {
                Some(destination) => {
                    let arn = destination.string()?;
                    if arn.starts_with("arn:aws:sns:") {
                        return Err(self.fail(
                            &destination.at,
                            Problem::NotLocal(
                                "an SNS on-failure destination is not supported locally; use an \
                                 SQS queue"
                                    .into(),
                            ),
                        ));
                    }
                    let (_, name) = self.queue_by_arn(&arn).ok_or_else(|| {
                        self.fail(
                            &destination.at,
                            Problem::UnknownArn {
                                kind: "queue",
                                arn: arn.clone(),
                            },
                        )
                    })?;
                    Some(self.queue_url(name))
                }
                None => None,
            },
            None => None,
        };
        Ok(StreamSource {
            event_name,
            table_logical_id: table.logical_id.clone(),
            table_name: table.name.clone(),
            starting_position,
            batch_size: props.u32_at("BatchSize")?.unwrap_or(100),
            batching_window: Duration::from_secs(
                props.u64_at("MaximumBatchingWindowInSeconds")?.unwrap_or(0),
            ),
            filters,
            maximum_retry_attempts: props.i64_at("MaximumRetryAttempts")?,
            bisect_batch_on_function_error: props
                .bool_at("BisectBatchOnFunctionError")?
                .unwrap_or(false),
            on_failure_queue_url,
            function_response_report_batch_item_failures: props.reports_batch_item_failures()?,
            enabled: props.bool_at("Enabled")?.unwrap_or(true),
        })
    }
}

/// A value of the template and where it is. Reading a child resolves it when it is an
/// intrinsic, so only what the runner reads is ever resolved.
struct Node<'r> {
    r: &'r Resolver<'r>,
    value: Cow<'r, Value>,
    at: At,
}

impl<'r> Node<'r> {
    fn borrowed(r: &'r Resolver<'r>, value: &'r Value, at: At) -> Self {
        Node {
            r,
            value: Cow::Borrowed(value),
            at,
        }
    }

    fn empty(r: &'r Resolver<'r>, at: At) -> Self {
        Node {
            r,
            value: Cow::Owned(Value::Mapping(Mapping::new())),
            at,
        }
    }

    /// A node for a raw value: resolved when it is an intrinsic (`None` for `AWS::NoValue`).
    fn wrap(r: &'r Resolver<'r>, raw: Cow<'r, Value>, at: At) -> anyhow::Result<Option<Self>> {
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

    fn reborrow(&self) -> Node<'_> {
        Node {
            r: self.r,
            value: Cow::Borrowed(&*self.value),
            at: self.at.clone(),
        }
    }

    fn into_child(self, key: &str) -> anyhow::Result<Option<Node<'r>>> {
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

    fn get(&self, key: &str) -> anyhow::Result<Option<Node<'_>>> {
        self.reborrow().into_child(key)
    }

    fn path(&self, keys: &[&str]) -> anyhow::Result<Option<Node<'_>>> {
        let mut node = self.reborrow();
        for key in keys {
            match node.into_child(key)? {
                Some(child) => node = child,
                None => return Ok(None),
            }
        }
        Ok(Some(node))
    }

    fn required(&self, key: &'static str) -> anyhow::Result<Node<'_>> {
        self.get(key)?
            .ok_or_else(|| self.r.fail(&self.at, Problem::Missing(key)))
    }

    fn type_error(&self, expected: &'static str) -> anyhow::Error {
        self.r.fail(
            &self.at,
            Problem::Type {
                expected,
                found: describe(&self.value),
            },
        )
    }

    /// This value, fully resolved.
    fn resolved(&self) -> anyhow::Result<Value> {
        Ok(self
            .r
            .resolve(&self.value, &self.at)?
            .unwrap_or(Value::Null))
    }

    fn string(&self) -> anyhow::Result<String> {
        scalar_string(&self.value).ok_or_else(|| self.type_error("a string"))
    }

    fn bool(&self) -> anyhow::Result<bool> {
        match &*self.value {
            Value::Bool(b) => Ok(*b),
            Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
            Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
            _ => Err(self.type_error("true or false")),
        }
    }

    fn i64(&self) -> anyhow::Result<i64> {
        match &*self.value {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
        .ok_or_else(|| self.type_error("a whole number"))
    }

    fn u64(&self) -> anyhow::Result<u64> {
        u64::try_from(self.i64()?).map_err(|_| self.type_error("a whole number >= 0"))
    }

    fn u32(&self) -> anyhow::Result<u32> {
        u32::try_from(self.i64()?).map_err(|_| self.type_error("a whole number >= 0"))
    }

    /// A JSON text: a string as written, or a mapping or list written as JSON (CloudFormation
    /// takes both for policies, patterns and inputs).
    fn json_text(&self) -> anyhow::Result<String> {
        match self.resolved()? {
            Value::String(text) => Ok(text),
            value @ (Value::Mapping(_) | Value::Sequence(_)) => serde_json::to_value(&value)
                .and_then(|json| serde_json::to_string(&json))
                .map_err(|err| self.r.fail(&self.at, Problem::Json(err))),
            _ => Err(self.type_error("a JSON text, mapping or list")),
        }
    }

    fn items(&self) -> anyhow::Result<Vec<Node<'_>>> {
        let Value::Sequence(items) = &*self.value else {
            return Err(self.type_error("a list"));
        };
        let mut nodes = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            nodes.extend(Node::wrap(self.r, Cow::Borrowed(item), self.at.index(i))?);
        }
        Ok(nodes)
    }

    fn entries(&self) -> anyhow::Result<Vec<(String, Node<'_>)>> {
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

    fn string_at(&self, key: &str) -> anyhow::Result<Option<String>> {
        self.get(key)?.map(|n| n.string()).transpose()
    }

    fn required_string(&self, key: &'static str) -> anyhow::Result<String> {
        self.required(key)?.string()
    }

    fn bool_at(&self, key: &str) -> anyhow::Result<Option<bool>> {
        self.get(key)?.map(|n| n.bool()).transpose()
    }

    fn i64_at(&self, key: &str) -> anyhow::Result<Option<i64>> {
        self.get(key)?.map(|n| n.i64()).transpose()
    }

    fn u64_at(&self, key: &str) -> anyhow::Result<Option<u64>> {
        self.get(key)?.map(|n| n.u64()).transpose()
    }

    fn u32_at(&self, key: &str) -> anyhow::Result<Option<u32>> {
        self.get(key)?.map(|n| n.u32()).transpose()
    }

    fn json_text_at(&self, key: &str) -> anyhow::Result<Option<String>> {
        self.get(key)?.map(|n| n.json_text()).transpose()
    }

    fn reports_batch_item_failures(&self) -> anyhow::Result<bool> {
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

/// A secondary index of a table.
fn index(node: &Node<'_>) -> anyhow::Result<IndexSpec> {
    let key_schema = node
        .required("KeySchema")?
        .items()?
        .iter()
        .map(|key| {
            Ok((
                key.required_string("AttributeName")?,
                key.required_string("KeyType")?,
            ))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let projection = node.get("Projection")?;
    let (projection_type, non_key_attributes) = match &projection {
        Some(projection) => (
            projection
                .string_at("ProjectionType")?
                .unwrap_or_else(|| "ALL".to_owned()),
            match projection.get("NonKeyAttributes")? {
                Some(list) => list
                    .items()?
                    .iter()
                    .map(Node::string)
                    .collect::<anyhow::Result<Vec<_>>>()?,
                None => Vec::new(),
            },
        ),
        None => ("ALL".to_owned(), Vec::new()),
    };
    Ok(IndexSpec {
        name: node.required_string("IndexName")?,
        key_schema,
        projection_type,
        non_key_attributes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ACCOUNT: &str = "123456789012";
    const SQS: &str = "http://127.0.0.1:4566";

    fn names() -> LocalNames {
        LocalNames {
            stack_name: "local".into(),
            region: "us-east-1".into(),
            account_id: ACCOUNT.into(),
            sqs_endpoint: SQS.into(),
        }
    }

    fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn fixture() -> Model {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/template.yaml");
        load(&path, &BTreeMap::new(), &names()).expect("the fixture template loads")
    }

    fn project(pairs: &[(&str, &str)]) -> anyhow::Result<Model> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../template.yaml");
        load(&path, &overrides(pairs), &names())
    }

    fn load_yaml(yaml: &str) -> anyhow::Result<Model> {
        load_str("template.yaml", yaml, &BTreeMap::new(), &names())
    }

    /// The whole error chain, as `main` prints it.
    fn error_of(yaml: &str) -> String {
        format!(
            "{:#}",
            load_yaml(yaml).expect_err("the template is rejected")
        )
    }

    fn function<'m>(model: &'m Model, id: &str) -> &'m FunctionSpec {
        model
            .functions
            .iter()
            .find(|f| f.logical_id == id)
            .unwrap_or_else(|| panic!("function {id}"))
    }

    fn queue<'m>(model: &'m Model, id: &str) -> &'m QueueSpec {
        model
            .queues
            .iter()
            .find(|q| q.logical_id == id)
            .unwrap_or_else(|| panic!("queue {id}"))
    }

    fn table<'m>(model: &'m Model, id: &str) -> &'m TableSpec {
        model
            .tables
            .iter()
            .find(|t| t.logical_id == id)
            .unwrap_or_else(|| panic!("table {id}"))
    }

    fn url(name: &str) -> String {
        format!("{SQS}/{ACCOUNT}/{name}")
    }

    fn queue_arn(name: &str) -> String {
        format!("arn:aws:sqs:us-east-1:{ACCOUNT}:{name}")
    }

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        overrides(pairs)
    }

    fn jwt(name: &str) -> Option<JwtAuthorizer> {
        Some(JwtAuthorizer {
            name: name.into(),
            identity_source: "$request.header.Authorization".into(),
        })
    }

    /// A function with one event, in a template with a table and a queue to point at.
    fn with_event(event: &str) -> String {
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

    #[test]
    fn fixture_tables_and_queues_resolve() {
        let model = fixture();
        assert_eq!(model.stack_name, "local");
        assert_eq!(
            model.tables,
            vec![TableSpec {
                logical_id: "ItemsTable".into(),
                name: "local-ItemsTable".into(),
                attributes: vec![
                    ("pk".into(), "S".into()),
                    ("sk".into(), "S".into()),
                    ("gsi1pk".into(), "S".into()),
                ],
                key_schema: vec![("pk".into(), "HASH".into()), ("sk".into(), "RANGE".into())],
                global_secondary_indexes: vec![IndexSpec {
                    name: "gsi1".into(),
                    key_schema: vec![("gsi1pk".into(), "HASH".into())],
                    projection_type: "KEYS_ONLY".into(),
                    non_key_attributes: vec![],
                }],
                local_secondary_indexes: vec![],
                stream_view_type: Some("NEW_AND_OLD_IMAGES".into()),
                ttl_attribute: Some("expiresAt".into()),
            }]
        );
        let redrive = json!({
            "deadLetterTargetArn": queue_arn("local-WorkDeadLetterQueue"),
            "maxReceiveCount": 2,
        });
        assert_eq!(
            model.queues,
            vec![
                QueueSpec {
                    logical_id: "OutputQueue".into(),
                    name: "local-output".into(),
                    url: url("local-output"),
                    attributes: BTreeMap::new(),
                },
                QueueSpec {
                    logical_id: "WorkDeadLetterQueue".into(),
                    name: "local-WorkDeadLetterQueue".into(),
                    url: url("local-WorkDeadLetterQueue"),
                    attributes: env(&[("MessageRetentionPeriod", "1209600")]),
                },
                QueueSpec {
                    logical_id: "WorkQueue".into(),
                    name: "local-WorkQueue".into(),
                    url: url("local-WorkQueue"),
                    attributes: env(&[
                        ("VisibilityTimeout", "2"),
                        ("RedrivePolicy", &redrive.to_string()),
                    ]),
                },
                QueueSpec {
                    logical_id: "StreamFailureQueue".into(),
                    name: "local-StreamFailureQueue".into(),
                    url: url("local-StreamFailureQueue"),
                    attributes: BTreeMap::new(),
                },
            ]
        );
        // The JSON text is exactly what SQS documents, key order included.
        assert_eq!(
            queue(&model, "WorkQueue").attributes["RedrivePolicy"],
            r#"{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:local-WorkDeadLetterQueue","maxReceiveCount":2}"#
        );
    }

    #[test]
    fn fixture_echo_function_resolves_environment_and_routes() {
        let model = fixture();
        let echo = function(&model, "EchoFunction");
        let expected = FunctionSpec {
            logical_id: "EchoFunction".into(),
            name: "EchoFunction".into(),
            binary: "fixture-http".into(),
            timeout: Duration::from_secs(1),
            memory_mb: 128,
            environment: env(&[
                ("GREETING", "hello"),
                ("OUTPUT_QUEUE_URL", &url("local-output")),
                ("TABLE_NAME", "local-ItemsTable"),
                (
                    "TABLE_ARN",
                    "arn:aws:dynamodb:us-east-1:123456789012:table/local-ItemsTable",
                ),
                ("WORK_QUEUE_ARN", &queue_arn("local-WorkQueue")),
                ("WORK_QUEUE_NAME", "local-WorkQueue"),
                ("STACK", "local in us-east-1 of 123456789012"),
            ]),
            reserved_concurrency: None,
            events: vec![
                EventSpec::Http(HttpRoute {
                    event_name: "Items".into(),
                    method: "GET".into(),
                    path: "/items/{itemId}".into(),
                    authorizer: jwt("LocalJwt"),
                    throttle: None,
                }),
                EventSpec::Http(HttpRoute {
                    event_name: "Mixed".into(),
                    method: "POST".into(),
                    path: "/items/{itemId}/parts/{partId}".into(),
                    authorizer: jwt("LocalJwt"),
                    throttle: None,
                }),
                EventSpec::Http(HttpRoute {
                    event_name: "Public".into(),
                    method: "ANY".into(),
                    path: "/public/{proxy+}".into(),
                    authorizer: None,
                    throttle: None,
                }),
            ],
        };
        assert_eq!(echo, &expected);

        // Globals alone configure a function that sets nothing itself.
        let hello = function(&model, "HelloFunction");
        assert_eq!(hello.timeout, Duration::from_secs(3));
        assert_eq!(
            hello.environment,
            env(&[
                ("GREETING", "hello"),
                ("OUTPUT_QUEUE_URL", &url("local-output"))
            ])
        );
    }

    #[test]
    fn fixture_event_sources_resolve() {
        let model = fixture();
        assert_eq!(
            function(&model, "WorkerFunction").events,
            vec![EventSpec::Sqs(SqsSource {
                event_name: "Work".into(),
                queue_logical_id: "WorkQueue".into(),
                queue_arn: queue_arn("local-WorkQueue"),
                queue_url: url("local-WorkQueue"),
                batch_size: 5,
                batching_window: Duration::from_secs(1),
                report_batch_item_failures: true,
                maximum_concurrency: Some(2),
                enabled: true,
            })]
        );
        assert_eq!(
            function(&model, "StreamFunction").events,
            vec![EventSpec::Stream(StreamSource {
                event_name: "Changes".into(),
                table_logical_id: "ItemsTable".into(),
                table_name: "local-ItemsTable".into(),
                starting_position: "TRIM_HORIZON".into(),
                batch_size: 10,
                batching_window: Duration::ZERO,
                filters: vec![json!({"dynamodb": {"NewImage": {"kind": {"S": ["keep"]}}}})],
                maximum_retry_attempts: Some(1),
                bisect_batch_on_function_error: true,
                on_failure_queue_url: Some(url("local-StreamFailureQueue")),
                function_response_report_batch_item_failures: false,
                enabled: true,
            })]
        );
        assert_eq!(
            function(&model, "TickFunction").events,
            vec![EventSpec::Schedule(ScheduleSource {
                event_name: "EverySecond".into(),
                expression: "rate(1 second)".into(),
                input: Some(r#"{"tick": true}"#.into()),
                enabled: true,
            })]
        );
    }

    #[test]
    fn project_template_loads() {
        let model = project(&[]).expect("template.yaml loads");

        let put = function(&model, "PutProfileFunction");
        assert_eq!(put.binary, "put-profile");
        assert_eq!(put.timeout, Duration::from_secs(10));
        assert_eq!(put.memory_mb, 128);
        assert_eq!(put.environment["APP_ENV"], "dev");
        assert_eq!(put.environment["SOCIAL_TABLE"], "local-SocialTable");
        assert!(put.events.contains(&EventSpec::Http(HttpRoute {
            event_name: "PutProfile".into(),
            method: "PUT".into(),
            path: "/users/me".into(),
            authorizer: jwt("CognitoJwt"),
            // The stage default (throttling's own tests cover the rest).
            throttle: Some(crate::model::RouteThrottle {
                rate_per_second: 4_000.0,
                burst: 2_000,
            }),
        })));
        for function in &model.functions {
            assert!(
                !function.binary.is_empty(),
                "{} has a binary",
                function.logical_id
            );
            assert_eq!(function.environment["SOCIAL_TABLE"], "local-SocialTable");
        }

        for (main, dlq, name) in [
            (
                "NotificationQueue",
                "NotificationDeadLetterQueue",
                "notification",
            ),
            (
                "FollowerCountQueue",
                "FollowerCountDeadLetterQueue",
                "follower-count",
            ),
            ("OrderQueue", "OrderDeadLetterQueue", "order"),
            (
                "OrderTimeoutQueue",
                "OrderTimeoutDeadLetterQueue",
                "order-timeout",
            ),
        ] {
            let main_queue = queue(&model, main);
            assert_eq!(main_queue.name, format!("local-{name}"));
            assert_eq!(main_queue.url, url(&format!("local-{name}")));
            assert_eq!(main_queue.attributes["VisibilityTimeout"], "60");
            let redrive: serde_json::Value =
                serde_json::from_str(&main_queue.attributes["RedrivePolicy"]).unwrap();
            assert_eq!(
                redrive,
                json!({"deadLetterTargetArn": queue_arn(&format!("local-{dlq}")), "maxReceiveCount": 5})
            );
            let dlq_queue = queue(&model, dlq);
            assert_eq!(dlq_queue.name, format!("local-{dlq}"));
            assert_eq!(dlq_queue.attributes["MessageRetentionPeriod"], "1209600");
            let allow: serde_json::Value =
                serde_json::from_str(&dlq_queue.attributes["RedriveAllowPolicy"]).unwrap();
            assert_eq!(
                allow,
                json!({
                    "redrivePermission": "byQueue",
                    "sourceQueueArns": [queue_arn(&format!("local-{name}"))],
                })
            );
            assert!(!dlq_queue.attributes.contains_key("SqsManagedSseEnabled"));
        }
        assert_eq!(
            queue(&model, "OrderTimeoutQueue").attributes["DelaySeconds"],
            "900"
        );

        let social = table(&model, "SocialTable");
        assert_eq!(social.name, "local-SocialTable");
        let gsis: Vec<_> = social
            .global_secondary_indexes
            .iter()
            .map(|i| {
                (
                    i.name.as_str(),
                    i.projection_type.as_str(),
                    i.key_schema.len(),
                )
            })
            .collect();
        assert_eq!(gsis, [("gsi1", "ALL", 2), ("gsi2", "ALL", 2)]);
        assert_eq!(
            social.stream_view_type.as_deref(),
            Some("NEW_AND_OLD_IMAGES")
        );
        assert_eq!(social.ttl_attribute.as_deref(), Some("expiresAt"));
        let commerce = table(&model, "CommerceTable");
        assert_eq!(commerce.global_secondary_indexes.len(), 1);
        assert_eq!(commerce.stream_view_type, None);
        assert_eq!(commerce.ttl_attribute.as_deref(), Some("expiresAt"));
    }

    #[test]
    fn parameter_overrides_apply_and_bad_values_are_rejected() {
        let model = project(&[("EnvironmentName", "prod"), ("PaymentWindowSeconds", "60")])
            .expect("valid overrides");
        assert_eq!(
            function(&model, "PutProfileFunction").environment["APP_ENV"],
            "prod"
        );
        assert_eq!(
            queue(&model, "OrderTimeoutQueue").attributes["DelaySeconds"],
            "60"
        );

        let err = format!(
            "{:#}",
            project(&[("EnvironmentName", "staging")]).unwrap_err()
        );
        assert!(err.contains("parameter EnvironmentName"), "{err}");
        assert!(
            err.contains("\"staging\" is not one of the AllowedValues"),
            "{err}"
        );

        let err = format!(
            "{:#}",
            project(&[("PaymentWindowSeconds", "901")]).unwrap_err()
        );
        assert!(
            err.contains("parameter PaymentWindowSeconds: the value 901 is outside"),
            "{err}"
        );
        let err = format!(
            "{:#}",
            project(&[("PaymentWindowSeconds", "soon")]).unwrap_err()
        );
        assert!(err.contains("\"soon\" is not a number"), "{err}");

        let err = format!("{:#}", project(&[("Nope", "1")]).unwrap_err());
        assert!(
            err.ends_with("parameter override Nope: the template has no such parameter"),
            "{err}"
        );

        let err = error_of(
            "Parameters:\n  Needed:\n    Type: String\nResources:\n  Q:\n    Type: AWS::SQS::Queue\n",
        );
        assert_eq!(
            err,
            "template.yaml: parameter Needed: no value: give the parameter a Default or pass a \
             parameter override"
        );
    }

    #[test]
    fn unknown_ref_names_the_place() {
        let err = error_of(
            r#"
Globals:
  Function:
    Environment:
      Variables:
        SOCIAL_TABLE: !Ref Nope
Resources:
  PutProfileFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/put-profile
"#,
        );
        assert_eq!(
            err,
            "template.yaml: resource PutProfileFunction, Environment.Variables.SOCIAL_TABLE: \
             unknown resource Nope in !Ref"
        );
    }

    #[test]
    fn unsupported_events_name_the_function_and_event() {
        let err = error_of(&with_event(
            "          Type: S3\n          Properties: {Bucket: !Ref Bucket}",
        ));
        assert!(
            err.starts_with(
                "template.yaml: resource Fn, Events.Ev: event type S3 is not supported"
            ),
            "{err}"
        );
        let err = error_of(&with_event(
            "          Type: Api\n          Properties: {Path: /x, Method: get}",
        ));
        assert!(
            err.contains("resource Fn, Events.Ev: event type Api (a REST API)"),
            "{err}"
        );
        assert!(err.contains("only HttpApi events are"), "{err}");
    }

    #[test]
    fn long_forms_sub_variables_and_literals_resolve() {
        let model = load_yaml(
            r#"
Parameters:
  Env: {Type: String, Default: dev}
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: {"Fn::Sub": "${AWS::StackName}-${Env}-jobs"}
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn/
      MemorySize: 256
      Environment:
        Variables:
          URL: {"Ref": "Queue"}
          ARN: {"Fn::GetAtt": ["Queue", "Arn"]}
          NAME: !GetAtt [Queue, QueueName]
          SELF: !GetAtt Fn.Arn
          MAPPED: {"Fn::Sub": ["${Who} at ${Queue.QueueName}", {Who: {"Ref": "Env"}}]}
          LITERAL: !Sub "${!NotAVariable} in ${AWS::Partition}.${AWS::URLSuffix}"
          GONE: !Ref AWS::NoValue
          NUMBER: 42
"#,
        )
        .unwrap();
        let f = function(&model, "Fn");
        assert_eq!(f.binary, "fn", "the last component of CodeUri");
        assert_eq!(f.memory_mb, 256);
        assert_eq!(
            f.environment,
            env(&[
                ("URL", &url("local-dev-jobs")),
                ("ARN", &queue_arn("local-dev-jobs")),
                ("NAME", "local-dev-jobs"),
                ("SELF", "arn:aws:lambda:us-east-1:123456789012:function:Fn"),
                ("MAPPED", "dev at local-dev-jobs"),
                ("LITERAL", "${NotAVariable} in aws.amazonaws.com"),
                ("NUMBER", "42"),
            ])
        );
    }

    #[test]
    fn conditions_if_join_select_and_resource_conditions_resolve() {
        let yaml = r#"
Parameters:
  Stage: {Type: String, Default: dev, AllowedValues: [dev, prod]}
  Zones: {Type: CommaDelimitedList, Default: "a, b, c"}
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
  IsDev: !Not [{Condition: IsProd}]
  Both: !And [!Condition IsDev, !Or [!Equals [x, x], !Condition IsProd]]
Resources:
  ProdOnlyQueue:
    Type: AWS::SQS::Queue
    Condition: IsProd
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn
      Timeout: !If [IsProd, 30, 5]
      Environment:
        Variables:
          MODE: !If [IsProd, !Ref ProdOnlyQueue, local]
          BOTH: !If [Both, "yes", "no"]
          JOINED: !Join ["-", [!Ref Stage, !Select [1, !Ref Zones], !Select [0, !Split [",", "p,q"]]]]
          MAYBE: !If [IsProd, on, !Ref AWS::NoValue]
"#;
        let dev = load_yaml(yaml).unwrap();
        assert!(dev.queues.is_empty(), "the queue's condition is false");
        let f = function(&dev, "Fn");
        assert_eq!(f.timeout, Duration::from_secs(5));
        assert_eq!(
            f.environment,
            env(&[("MODE", "local"), ("BOTH", "yes"), ("JOINED", "dev-b-p")])
        );

        let prod = load_str(
            "template.yaml",
            yaml,
            &overrides(&[("Stage", "prod")]),
            &names(),
        )
        .unwrap();
        assert_eq!(prod.queues.len(), 1);
        let f = function(&prod, "Fn");
        assert_eq!(f.timeout, Duration::from_secs(30));
        assert_eq!(f.environment["MODE"], url("local-ProdOnlyQueue"));
        assert_eq!(f.environment["BOTH"], "no");
        assert_eq!(f.environment["MAYBE"], "on");
    }

    #[test]
    fn intrinsics_outside_what_the_runner_reads_are_not_resolved() {
        let yaml = r#"
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn
      Policies:
        - Statement:
            - Effect: Allow
              Action: sqs:SendMessage
              Resource: !ImportValue shared-queue-arn
  Alarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      AlarmActions: [!GetAtt Nope.Arn]
"#;
        assert_eq!(load_yaml(yaml).unwrap().functions.len(), 1);

        let err = error_of(&yaml.replace(
            "Policies:",
            "Environment: {Variables: {X: !ImportValue y}}\n      Policies:",
        ));
        assert_eq!(
            err,
            "template.yaml: resource Fn, Environment.Variables.X: !ImportValue is not supported \
             by the local runner"
        );
    }

    #[test]
    fn unknown_attributes_and_sns_destinations_are_errors() {
        let err = error_of(&with_event(
            "          Type: SQS\n          Properties: {Queue: !GetAtt Queue.Nope}",
        ));
        assert_eq!(
            err,
            "template.yaml: resource Fn, Events.Ev.Properties.Queue: resource Queue \
             (AWS::SQS::Queue) has no attribute Nope that the local runner resolves"
        );

        let err = error_of(&with_event(
            "          Type: DynamoDB\n          Properties:\n            Stream: !GetAtt Table.StreamArn\n            StartingPosition: LATEST\n            DestinationConfig: {OnFailure: {Destination: arn:aws:sns:us-east-1:123456789012:topic}}",
        ));
        assert!(
            err.starts_with(
                "template.yaml: resource Fn, Events.Ev.Properties.DestinationConfig.OnFailure.Destination: an SNS"
            ),
            "{err}"
        );
        assert!(err.contains("not supported locally"), "{err}");

        let err = error_of(&with_event(
            "          Type: DynamoDB\n          Properties:\n            Stream: !GetAtt Table.StreamArn\n            StartingPosition: LATEST\n            FilterCriteria: {Filters: [{Pattern: '{not json'}]}",
        ));
        assert!(
            err.starts_with(
                "template.yaml: resource Fn, Events.Ev.Properties.FilterCriteria.Filters[0].Pattern: not a valid JSON text: "
            ),
            "{err}"
        );
    }

    #[test]
    fn defaults_and_the_implicit_api_apply() {
        let model = load_yaml(
            r#"
Globals:
  Function:
    Timeout: 7
    Environment: {Variables: {SHARED: global, OWN: global}}
  HttpApi:
    Auth:
      DefaultAuthorizer: Jwt
      Authorizers:
        Jwt: {IdentitySource: $request.header.X-Token, JwtConfiguration: {issuer: x}}
Resources:
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      TableName: !Sub "${AWS::StackName}-things"
      AttributeDefinitions: [{AttributeName: pk, AttributeType: S}]
      KeySchema: [{AttributeName: pk, KeyType: HASH}]
      StreamSpecification: {StreamViewType: KEYS_ONLY}
  Fn:
    Type: AWS::Serverless::Function
    Metadata: {BuildProperties: {Binary: the-bin}}
    Properties:
      CodeUri: functions/fn
      ReservedConcurrentExecutions: 4
      Environment: {Variables: {OWN: mine}}
      Events:
        Route: {Type: HttpApi, Properties: {Path: /things, Method: post}}
        Changes: {Type: DynamoDB, Properties: {Stream: !GetAtt Table.StreamArn, StartingPosition: LATEST, Enabled: false}}
        Nightly: {Type: ScheduleV2, Properties: {ScheduleExpression: "cron(0 3 * * ? *)", State: DISABLED}}
"#,
        )
        .unwrap();
        let f = function(&model, "Fn");
        assert_eq!(f.binary, "the-bin");
        assert_eq!(f.timeout, Duration::from_secs(7));
        assert_eq!(f.memory_mb, 128);
        assert_eq!(f.reserved_concurrency, Some(4));
        assert_eq!(f.environment, env(&[("SHARED", "global"), ("OWN", "mine")]));
        assert_eq!(
            f.events[0],
            EventSpec::Http(HttpRoute {
                event_name: "Route".into(),
                method: "POST".into(),
                path: "/things".into(),
                authorizer: Some(JwtAuthorizer {
                    name: "Jwt".into(),
                    identity_source: "$request.header.X-Token".into(),
                }),
                throttle: None,
            })
        );
        let EventSpec::Stream(stream) = &f.events[1] else {
            panic!("a stream source: {:?}", f.events[1]);
        };
        assert_eq!(stream.table_name, "local-things");
        assert_eq!(stream.batch_size, 100);
        assert_eq!(stream.maximum_retry_attempts, None);
        assert!(!stream.enabled);
        assert_eq!(
            f.events[2],
            EventSpec::Schedule(ScheduleSource {
                event_name: "Nightly".into(),
                expression: "cron(0 3 * * ? *)".into(),
                input: None,
                enabled: false,
            })
        );
    }

    #[test]
    fn names_may_use_other_names_but_not_in_a_cycle() {
        let model = load_yaml(
            r#"
Resources:
  Dlq:
    Type: AWS::SQS::Queue
    Properties:
      QueueName: !Sub "${Work.QueueName}-dlq"
  Work:
    Type: AWS::SQS::Queue
    Properties:
      FifoQueue: true
"#,
        )
        .unwrap();
        assert_eq!(queue(&model, "Work").name, "local-Work.fifo");
        assert_eq!(
            queue(&model, "Work").attributes,
            env(&[("FifoQueue", "true")])
        );
        assert_eq!(queue(&model, "Dlq").name, "local-Work.fifo-dlq");

        let err = error_of(
            r#"
Resources:
  A:
    Type: AWS::SQS::Queue
    Properties: {QueueName: !GetAtt B.QueueName}
  B:
    Type: AWS::SQS::Queue
    Properties: {QueueName: !GetAtt A.QueueName}
"#,
        );
        assert_eq!(
            err,
            "template.yaml: resource A, QueueName: the name of B depends on a name that depends \
             on it"
        );
    }

    #[test]
    fn a_route_served_twice_is_an_error() {
        let err = error_of(
            r#"
Resources:
  One:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/one
      Events: {Get: {Type: HttpApi, Properties: {Path: /x, Method: get}}}
  Two:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/two
      Events: {Also: {Type: HttpApi, Properties: {Path: /x, Method: GET}}}
"#,
        );
        assert_eq!(
            err,
            "template.yaml: resource Two, Events.Also: route GET /x is already served by One.Get"
        );
    }

    #[test]
    fn route_authorizers_must_exist() {
        let err = error_of(
            r#"
Resources:
  Api:
    Type: AWS::Serverless::HttpApi
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/fn
      Events:
        Route: {Type: HttpApi, Properties: {ApiId: !Ref Api, Path: /x, Method: GET, Auth: {Authorizer: Missing}}}
"#,
        );
        assert_eq!(
            err,
            "template.yaml: resource Fn, Events.Route.Properties.Auth.Authorizer: authorizer \
             Missing is not defined in Auth.Authorizers of the resource Api"
        );
    }

    #[test]
    fn a_user_pools_triggers_are_events_of_their_functions() {
        let model = load_yaml(
            r#"
Parameters:
  Scope: {Type: String, Default: admins}
Conditions:
  Guarded: !Equals [!Ref Scope, admins]
Resources:
  Pool:
    Type: AWS::Cognito::UserPool
    Properties:
      LambdaConfig:
        PreTokenGeneration: !GetAtt Guard.Arn
        PreTokenGenerationConfig:
          LambdaArn: !GetAtt Guard.Arn
          LambdaVersion: V2_0
        PreSignUp: !If [Guarded, !GetAtt Signup.Arn, !Ref AWS::NoValue]
        KMSKeyID: arn:aws:kms:us-east-1:123456789012:key/k
  Guard:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: functions/guard}
  Signup:
    Type: AWS::Serverless::Function
    Properties: {CodeUri: functions/signup}
"#,
        )
        .unwrap();
        assert_eq!(
            function(&model, "Guard").events,
            [EventSpec::Cognito(CognitoTrigger {
                user_pool: "Pool".into(),
                trigger: "PreTokenGeneration".into(),
                version: "V2_0".into(),
            })]
        );
        assert_eq!(
            function(&model, "Signup").events,
            [EventSpec::Cognito(CognitoTrigger {
                user_pool: "Pool".into(),
                trigger: "PreSignUp".into(),
                version: "V1_0".into(),
            })]
        );
    }

    #[test]
    fn a_trigger_must_name_a_function_of_the_template() {
        assert_eq!(
            error_of(
                r#"
Resources:
  Pool:
    Type: AWS::Cognito::UserPool
    Properties:
      LambdaConfig:
        PreSignUp: arn:aws:lambda:us-east-1:123456789012:function:Elsewhere
"#
            ),
            "template.yaml: resource Pool, LambdaConfig.PreSignUp: no function of this template \
             has the ARN arn:aws:lambda:us-east-1:123456789012:function:Elsewhere"
        );
    }

    #[test]
    fn the_admin_mfa_guard_is_the_pools_v2_trigger_unless_everyone_has_mfa() {
        let guarded = project(&[]).unwrap();
        assert_eq!(
            function(&guarded, "AdminMfaGuardFunction").events,
            [EventSpec::Cognito(CognitoTrigger {
                user_pool: "UserPool".into(),
                trigger: "PreTokenGeneration".into(),
                version: "V2_0".into(),
            })]
        );
        let everyone = project(&[("MfaScope", "everyone")]).unwrap();
        assert!(
            everyone
                .functions
                .iter()
                .all(|f| f.logical_id != "AdminMfaGuardFunction"),
            "with MFA for everyone the pool has no trigger and the guard does not exist"
        );
    }
}
