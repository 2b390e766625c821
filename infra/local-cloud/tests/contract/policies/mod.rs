//! Least privilege: every function's `Policies` in `template.yaml` grant exactly the actions,
//! on exactly the resources, that its code uses, and no wildcard.
//!
//! [`EXPECTED`] (in `expected.rs`) is the list to keep in step with the code: when a handler starts making a new
//! SDK call, add the action here and to the template in the same change. The test also checks
//! that each action listed is one the shared library really makes a call for, so the list
//! cannot drift into granting what no code does.
//!
//! A function with an SQS or DynamoDB stream event has a role of its own (`Role:`), since for
//! those SAM would attach `AWSLambdaSQSQueueExecutionRole` / `AWSLambdaDynamoDBExecutionRole`,
//! whose poller actions hold on every queue or stream; its statements are read from that role,
//! which also grants the logs of the function's own log group, and may hold only the managed
//! policies of [`role_managed_policies`].
//!
//! What SAM attaches by itself to the roles it makes is not in `Policies` and not checked here:
//! the basic execution role (logs), `AWSXrayWriteOnlyAccess` for `Tracing: Active`, and
//! `AWSLambdaVPCAccessExecutionRole` for functions with `VpcConfig` (network interfaces, whose
//! actions only work on `*`).

mod expected;

use crate::support::{entries, root, yaml};
use expected::{ALLOWED_WILDCARDS, CALLS, EXPECTED, LOGS, SQS_POLLER, STREAM_POLLER};
use std::collections::{BTreeMap, BTreeSet};
use yaml_serde::Value;

/// A resource expression as written in the template, in the spelling of [`EXPECTED`].
fn resource_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Tagged(tagged) => {
            let tag = tagged.tag.to_string();
            match (tag.trim_start_matches('!'), &tagged.value) {
                ("GetAtt", Value::String(text)) => text.clone(),
                ("GetAtt", Value::Sequence(parts)) => parts
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("."),
                ("Sub", Value::String(text)) => text.clone(),
                ("Ref", Value::String(name)) => format!("Ref {name}"),
                (other, inner) => panic!("unexpected intrinsic !{other} {inner:?} in a Resource"),
            }
        }
        other => panic!("unexpected Resource {other:?}"),
    }
}

/// A statement as the stack may have it: `!If [Condition, statement, !Ref AWS::NoValue]` is
/// the statement (granted where the condition holds); a bare `!Ref AWS::NoValue` nothing.
fn unless_no_value(statement: &Value) -> Option<&Value> {
    fn intrinsic(value: &Value) -> Option<(String, &Value)> {
        match value {
            Value::Tagged(tagged) => Some((
                tagged.tag.to_string().trim_start_matches('!').to_owned(),
                &tagged.value,
            )),
            _ => None,
        }
    }
    let no_value = |value: &Value| {
        intrinsic(value)
            .is_some_and(|(tag, inner)| tag == "Ref" && inner.as_str() == Some("AWS::NoValue"))
    };
    let Some((tag, inner)) = intrinsic(statement) else {
        return Some(statement);
    };
    if no_value(statement) {
        return None;
    }
    match (tag.as_str(), inner) {
        ("If", Value::Sequence(parts)) if parts.len() == 3 && no_value(&parts[2]) => {
            Some(&parts[1])
        }
        _ => panic!("unexpected statement {statement:?}"),
    }
}

fn strings(value: &Value) -> Vec<&Value> {
    match value {
        Value::Sequence(items) => items.iter().collect(),
        other => vec![other],
    }
}

type Grants = BTreeMap<String, BTreeSet<String>>;

/// Every function's `Policies`, as resource -> actions; panics on what it cannot vouch for
/// (a managed policy, a SAM policy template, a Deny, a NotAction).
fn granted() -> BTreeMap<String, Grants> {
    let template = yaml("template.yaml");
    let mut functions = BTreeMap::new();
    for (name, resource) in entries(&template, "Resources") {
        if resource["Type"] != "AWS::Serverless::Function" {
            continue;
        }
        let mut grants = Grants::new();
        let properties = &resource["Properties"];
        let policies: Vec<&Value> = match properties.get("Role") {
            Some(role) => {
                assert!(
                    properties.get("Policies").is_none(),
                    "{name}: Policies beside a Role are ignored by SAM"
                );
                own_role(&template, name, role)["Properties"]
                    .get("Policies")
                    .map(strings)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|policy| &policy["PolicyDocument"])
                    .collect()
            }
            None => properties.get("Policies").map(strings).unwrap_or_default(),
        };
        for policy in policies {
            let statements = policy.get("Statement").unwrap_or_else(|| {
                panic!(
                    "{name}: {policy:?} is a managed policy or a SAM policy template; write the \
                     statement it needs instead, so that its actions can be checked"
                )
            });
            for statement in strings(statements) {
                let Some(statement) = unless_no_value(statement) else {
                    continue;
                };
                assert_eq!(statement["Effect"], "Allow", "{name}: {statement:?}");
                for key in ["NotAction", "NotResource", "Condition"] {
                    assert!(
                        statement.get(key).is_none(),
                        "{name}: {key} in {statement:?}"
                    );
                }
                let actions: Vec<String> = strings(&statement["Action"])
                    .into_iter()
                    .map(|a| a.as_str().expect("an action is a string").to_owned())
                    .collect();
                for resource in strings(&statement["Resource"]) {
                    let resource = resource_text(resource);
                    grants
                        .entry(resource)
                        .or_default()
                        .extend(actions.iter().cloned());
                }
            }
        }
        functions.insert(name.to_owned(), grants);
    }
    functions
}

/// The `AWS::IAM::Role` that `role` (`!GetAtt <Role>.Arn`) names.
fn own_role<'a>(template: &'a Value, function: &str, role: &Value) -> &'a Value {
    let text = resource_text(role);
    let id = text.strip_suffix(".Arn").unwrap_or_else(|| {
        panic!("{function}: Role is {text}, not !GetAtt <a role of the template>.Arn")
    });
    let found = &template["Resources"][id];
    assert_eq!(found["Type"], "AWS::IAM::Role", "{function}: {id}");
    found
}

/// The managed policies a function's own role may hold: X-Ray (`Tracing: Active`) and, in a
/// VPC, the network interfaces; as their ARNs are written in the template.
fn role_managed_policies(in_vpc: bool) -> BTreeSet<String> {
    let mut allowed =
        BTreeSet::from(["arn:${AWS::Partition}:iam::aws:policy/AWSXrayWriteOnlyAccess".to_owned()]);
    if in_vpc {
        allowed.insert(
            "arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole"
                .to_owned(),
        );
    }
    allowed
}

#[test]
fn every_queue_or_stream_function_has_a_role_of_its_own() {
    let template = yaml("template.yaml");
    let mut roles = BTreeMap::new();
    for (name, resource) in entries(&template, "Resources") {
        if resource["Type"] != "AWS::Serverless::Function" {
            continue;
        }
        let properties = &resource["Properties"];
        let polls = entries(properties, "Events")
            .iter()
            .any(|(_, event)| matches!(event["Type"].as_str(), Some("SQS" | "DynamoDB")));
        let Some(role) = properties.get("Role") else {
            assert!(
                !polls,
                "{name} has an SQS or stream event and SAM's role: its poller policy holds on \"*\""
            );
            continue;
        };
        let role_id = resource_text(role);
        if let Some(other) = roles.insert(role_id.clone(), name) {
            panic!("{name} and {other} share {role_id}");
        }
        let role = &own_role(&template, name, role)["Properties"];
        let trust = &role["AssumeRolePolicyDocument"]["Statement"];
        assert_eq!(
            strings(trust).len(),
            1,
            "{name}: one trust statement, Lambda's"
        );
        assert_eq!(
            strings(trust)[0]["Principal"]["Service"],
            "lambda.amazonaws.com",
            "{name}"
        );
        let managed: BTreeSet<String> = role
            .get("ManagedPolicyArns")
            .map(strings)
            .unwrap_or_default()
            .into_iter()
            .map(resource_text)
            .collect();
        let in_vpc = properties.get("VpcConfig").is_some();
        assert_eq!(managed, role_managed_policies(in_vpc), "{name}");
        let log_group = &properties["LoggingConfig"]["LogGroup"];
        assert_eq!(
            resource_text(log_group),
            format!("Ref {}", name.replace("Function", "LogGroup")),
            "{name}: its logs go to the log group its role may write"
        );
    }
    assert_eq!(
        roles.len(),
        6,
        "the six queue and stream functions: {roles:?}"
    );
}

fn is_wildcard_action(action: &str) -> bool {
    action.contains('*') || action.contains('?')
}

fn is_wildcard_resource(resource: &str) -> bool {
    // `${AWS::Partition}`-style placeholders are fine; a `*` anywhere is not.
    resource.contains('*')
}

#[test]
fn no_function_is_granted_a_wildcard_action_or_resource() {
    let mut offences = Vec::new();
    for (function, grants) in granted() {
        for (resource, actions) in grants {
            for action in actions {
                let wild = is_wildcard_action(&action) || is_wildcard_resource(&resource);
                if wild && !ALLOWED_WILDCARDS.contains(&(action.as_str(), resource.as_str())) {
                    offences.push(format!("{function}: {action} on {resource}"));
                }
            }
        }
    }
    assert!(
        offences.is_empty(),
        "wildcards that no code needs:\n{}",
        offences.join("\n")
    );
}

#[test]
fn every_function_is_granted_exactly_what_its_code_uses() {
    let granted = granted();
    let expected: BTreeMap<String, Grants> = EXPECTED
        .iter()
        .map(|(function, grants)| {
            let grants = grants
                .iter()
                .map(|(resource, actions)| {
                    (
                        (*resource).to_owned(),
                        actions.iter().map(|a| (*a).to_owned()).collect(),
                    )
                })
                .collect();
            ((*function).to_owned(), grants)
        })
        .collect();
    let names = |map: &BTreeMap<String, Grants>| map.keys().cloned().collect::<BTreeSet<_>>();
    assert_eq!(
        names(&granted),
        names(&expected),
        "every function of the template has its expectation, and no other"
    );
    let mut differences = Vec::new();
    for (function, want) in &expected {
        let have = &granted[function];
        let resources: BTreeSet<&String> = have.keys().chain(want.keys()).collect();
        for resource in resources {
            let empty = BTreeSet::new();
            let has = have.get(resource).unwrap_or(&empty);
            let wants = want.get(resource).unwrap_or(&empty);
            for extra in has.difference(wants) {
                differences.push(format!("{function}: {extra} on {resource} is not used"));
            }
            for missing in wants.difference(has) {
                differences.push(format!("{function}: {missing} on {resource} is missing"));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
fn every_expected_action_is_a_call_the_code_makes_or_a_pollers() {
    let mut source = String::new();
    let mut pending = vec![root().join("shared/src")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                source.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let calls: BTreeMap<&str, &[&str]> = CALLS.iter().copied().collect();
    for (function, grants) in EXPECTED {
        for (resource, actions) in *grants {
            for action in *actions {
                if SQS_POLLER.contains(action)
                    || STREAM_POLLER.contains(action)
                    || LOGS.contains(action)
                {
                    continue;
                }
                let fragments = calls
                    .get(action)
                    .unwrap_or_else(|| panic!("{function}: no SDK call is known for {action}"));
                assert!(
                    fragments.iter().any(|f| source.contains(f)),
                    "{function}: {action} on {resource}, but no code calls {fragments:?}"
                );
            }
        }
    }
}

#[test]
fn pollers_actions_go_with_their_event_sources_only() {
    let template = yaml("template.yaml");
    for (function, grants) in granted() {
        let events = &template["Resources"][function.as_str()]["Properties"]["Events"];
        let sources: BTreeSet<String> = events
            .as_mapping()
            .into_iter()
            .flatten()
            .filter_map(|(_, event)| {
                let properties = &event["Properties"];
                match event["Type"].as_str()? {
                    "SQS" => Some(resource_text(&properties["Queue"])),
                    "DynamoDB" => Some(resource_text(&properties["Stream"])),
                    _ => None,
                }
            })
            .collect();
        for (resource, actions) in &grants {
            let polls = actions
                .iter()
                .any(|a| SQS_POLLER.contains(&a.as_str()) || STREAM_POLLER.contains(&a.as_str()));
            assert_eq!(
                polls,
                sources.contains(resource),
                "{function}: poller actions on {resource} go with an event source on it"
            );
        }
    }
}

#[test]
fn the_checks_catch_what_they_are_for() {
    assert!(is_wildcard_action("dynamodb:*"));
    assert!(is_wildcard_action("*"));
    assert!(is_wildcard_action("sqs:Send*"));
    assert!(!is_wildcard_action("sqs:SendMessage"));
    assert!(is_wildcard_resource("*"));
    assert!(is_wildcard_resource(
        "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/*"
    ));
    assert!(!is_wildcard_resource("${SocialTable.Arn}/index/gsi1"));
    let tagged: Value = yaml_serde::from_str("!GetAtt [OrderQueue, Arn]").unwrap();
    assert_eq!(resource_text(&tagged), "OrderQueue.Arn");
    let tagged: Value = yaml_serde::from_str("!Sub \"${CommerceTable.Arn}/index/gsi1\"").unwrap();
    assert_eq!(resource_text(&tagged), "${CommerceTable.Arn}/index/gsi1");
}

/// Every queue a role sends to takes messages from the roles the template grants
/// `SendMessage` on it, and from no other principal of the account, whatever their own IAM
/// policies allow (the redrive role, a parameter, aside): a message on the order queue is an
/// order (issue 40, item 3), on the page queue a page published on the shop's origin (issue
/// 29, item 8). SAM names the role it makes for a function without `Role` `<LogicalId>Role`.
#[test]
fn each_queue_takes_messages_from_its_producers_roles_only() {
    let template = yaml("template.yaml");
    let resources = entries(&template, "Resources");
    // queue -> the roles granted SendMessage on it.
    let mut senders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (function, grants) in granted() {
        let properties = &template["Resources"][function.as_str()]["Properties"];
        let role = match properties.get("Role") {
            Some(role) => resource_text(role),
            None => format!("{function}Role.Arn"),
        };
        for (resource, actions) in grants {
            if actions.contains("sqs:SendMessage") {
                let queue = resource
                    .strip_suffix(".Arn")
                    .expect("a queue's Arn")
                    .to_owned();
                senders.entry(queue).or_default().insert(role.clone());
            }
        }
    }
    for queue in [
        "OrderQueue",
        "SalePageQueue",
        "NotificationQueue",
        "RelayFailureQueue",
    ] {
        assert!(senders.contains_key(queue), "{queue}: {senders:?}");
    }
    assert_eq!(
        senders["OrderQueue"],
        BTreeSet::from(["PlaceOrderFunctionRole.Arn".to_owned()])
    );
    for (queue, roles) in &senders {
        let policies: Vec<&Value> = resources
            .iter()
            .filter(|(_, resource)| resource["Type"] == "AWS::SQS::QueuePolicy")
            .filter(|(_, resource)| {
                strings(&resource["Properties"]["Queues"])
                    .into_iter()
                    .any(|q| resource_text(q) == format!("Ref {queue}"))
            })
            .map(|(_, resource)| &resource["Properties"]["PolicyDocument"])
            .collect();
        assert_eq!(policies.len(), 1, "one QueuePolicy on {queue}");
        let arn = format!("{queue}.Arn");
        let (mut allowed, mut denied) = (BTreeSet::new(), false);
        for statement in strings(&policies[0]["Statement"]) {
            assert_eq!(resource_text(&statement["Resource"]), arn, "{statement:?}");
            let actions: Vec<_> = strings(&statement["Action"])
                .into_iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(actions, ["sqs:SendMessage"], "{queue}: {statement:?}");
            match statement["Effect"].as_str() {
                Some("Allow") => {
                    for principal in strings(&statement["Principal"]["AWS"]) {
                        allowed.insert(resource_text(principal));
                    }
                }
                Some("Deny") => {
                    assert_eq!(statement["Principal"], "*", "{statement:?}");
                    assert_eq!(
                        statement["Condition"].as_mapping().map(|m| m.len()),
                        Some(1),
                        "{statement:?}"
                    );
                    let spared: BTreeSet<String> =
                        strings(&statement["Condition"]["ArnNotEquals"]["aws:PrincipalArn"])
                            .into_iter()
                            .map(|principal| match principal {
                                // `!If [HasQueueRedriveRole, <the role>, !Ref AWS::NoValue]`
                                Value::Tagged(tagged) if tagged.tag == "If" => {
                                    resource_text(&tagged.value[1])
                                }
                                other => resource_text(other),
                            })
                            .collect();
                    let mut expected = roles.clone();
                    expected.insert("Ref QueueRedriveRoleArn".to_owned());
                    assert_eq!(
                        spared, expected,
                        "{queue}: the Deny spares its producers and the redrive role only"
                    );
                    denied = true;
                }
                other => panic!("unexpected statement ({other:?}): {statement:?}"),
            }
        }
        assert_eq!(
            &allowed, roles,
            "{queue}: an Allow for its producers' roles"
        );
        assert!(denied, "{queue}: a Deny for everyone else");
    }
}
