//! The user pool's hardening, as `template.yaml` states it for each choice of its parameters:
//! no self sign-up in prod (a `Rules` entry refuses the deploy), SRP only in prod, MFA for the
//! admins (through the guard trigger) or for everyone, threat protection on the Plus plan.
//!
//! The template's `Rules`, `Conditions` and `!If`s are evaluated here for given parameters,
//! as CloudFormation does before it creates anything: a small evaluator of the intrinsics they
//! use (`!Equals`, `!Not`, `!And`, `!Or`, `!If`, `!Ref` of a parameter, `AWS::NoValue`); any
//! other intrinsic is kept as written.

use crate::support::{entries, yaml};
use std::collections::BTreeMap;
use yaml_serde::{Mapping, Value};

/// The template, evaluated for one set of parameters (defaults for the rest).
struct Stack {
    template: Value,
    parameters: BTreeMap<String, String>,
}

impl Stack {
    /// A stack of the template's defaults and these overrides; a dev stack unless they say
    /// otherwise, since `EnvironmentName` has no default.
    fn new(overrides: &[(&str, &str)]) -> Self {
        let template = yaml("template.yaml");
        let mut parameters: BTreeMap<String, String> = entries(&template, "Parameters")
            .into_iter()
            .filter_map(|(name, p)| Some((name.to_owned(), scalar(p.get("Default")?))))
            .collect();
        parameters.insert("EnvironmentName".to_owned(), "dev".to_owned());
        for (name, value) in overrides {
            assert!(
                template["Parameters"].get(*name).is_some(),
                "no parameter {name}"
            );
            parameters.insert((*name).to_owned(), (*value).to_owned());
        }
        Self {
            template,
            parameters,
        }
    }

    /// The assertion descriptions of the `Rules` that refuse these parameters.
    fn refusals(&self) -> Vec<String> {
        let mut refused = Vec::new();
        for (_, rule) in entries(&self.template, "Rules") {
            if let Some(condition) = rule.get("RuleCondition")
                && !self.truth(condition)
            {
                continue;
            }
            for assertion in rule["Assertions"].as_sequence().unwrap() {
                if !self.truth(&assertion["Assert"]) {
                    refused.push(scalar(&assertion["AssertDescription"]));
                }
            }
        }
        refused
    }

    fn condition(&self, name: &str) -> bool {
        let condition = self.template["Conditions"]
            .get(name)
            .unwrap_or_else(|| panic!("no condition {name}"));
        self.truth(condition)
    }

    /// Whether a resource exists (its `Condition` holds).
    fn exists(&self, id: &str) -> bool {
        let resource = &self.template["Resources"][id];
        assert!(!resource.is_null(), "no resource {id}");
        resource
            .get("Condition")
            .is_none_or(|c| self.condition(c.as_str().unwrap()))
    }

    /// A resource's properties, evaluated.
    fn properties(&self, id: &str) -> Value {
        assert!(
            self.exists(id),
            "{id} does not exist with {:?}",
            self.parameters
        );
        self.eval(&self.template["Resources"][id]["Properties"])
            .unwrap_or(Value::Null)
    }

    fn truth(&self, value: &Value) -> bool {
        match self.eval(value) {
            Some(Value::Bool(b)) => b,
            other => panic!("not a condition: {value:?} -> {other:?}"),
        }
    }

    /// `None` is `AWS::NoValue`: the key it stands for is left out.
    fn eval(&self, value: &Value) -> Option<Value> {
        match value {
            Value::Mapping(map) => {
                let mut out = Mapping::new();
                for (key, item) in map {
                    if let Some(item) = self.eval(item) {
                        out.insert(key.clone(), item);
                    }
                }
                Some(Value::Mapping(out))
            }
            Value::Sequence(items) => Some(Value::Sequence(
                items.iter().filter_map(|item| self.eval(item)).collect(),
            )),
            Value::Tagged(tagged) => {
                let tag = tagged.tag.to_string();
                let args = || tagged.value.as_sequence().expect("a list of arguments");
                match tag.trim_start_matches('!') {
                    "Ref" => {
                        let name = tagged.value.as_str().unwrap();
                        if name == "AWS::NoValue" {
                            return None;
                        }
                        Some(match self.parameters.get(name) {
                            Some(value) => Value::String(value.clone()),
                            None => value.clone(),
                        })
                    }
                    "Equals" => {
                        let [a, b] = args().as_slice() else {
                            panic!("!Equals takes two values")
                        };
                        Some(Value::Bool(
                            self.eval(a).map(|v| scalar(&v)) == self.eval(b).map(|v| scalar(&v)),
                        ))
                    }
                    "Contains" => {
                        let [list, wanted] = args().as_slice() else {
                            panic!("!Contains takes a list and a value")
                        };
                        let list = strings(&self.eval(list).expect("a list"));
                        let wanted = scalar(&self.eval(wanted).expect("a value"));
                        Some(Value::Bool(list.contains(&wanted)))
                    }
                    "Not" => Some(Value::Bool(!self.truth(&args()[0]))),
                    "And" => Some(Value::Bool(args().iter().all(|c| self.truth(c)))),
                    "Or" => Some(Value::Bool(args().iter().any(|c| self.truth(c)))),
                    "Condition" => {
                        Some(Value::Bool(self.condition(tagged.value.as_str().unwrap())))
                    }
                    "If" => {
                        let [condition, then, otherwise] = args().as_slice() else {
                            panic!("!If takes three values")
                        };
                        if self.condition(condition.as_str().unwrap()) {
                            self.eval(then)
                        } else {
                            self.eval(otherwise)
                        }
                    }
                    _ => Some(value.clone()),
                }
            }
            other => Some(other.clone()),
        }
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => panic!("not a scalar: {other:?}"),
    }
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_sequence()
        .unwrap_or_else(|| panic!("not a list: {value:?}"))
        .iter()
        .map(scalar)
        .collect()
}

#[test]
fn the_defaults_are_the_hardened_choices() {
    let template = yaml("template.yaml");
    let default = |name: &str| scalar(&template["Parameters"][name]["Default"]);
    assert_eq!(default("SelfSignUp"), "disabled");
    assert_eq!(default("MfaScope"), "admins");
    assert_eq!(default("ThreatProtection"), "OFF");
}

#[test]
fn prod_cannot_be_deployed_with_a_log_level_above_info() {
    let refusal = "In prod LogLevel must be INFO, WARN or ERROR.";
    for level in ["TRACE", "DEBUG"] {
        let stack = Stack::new(&[("EnvironmentName", "prod"), ("LogLevel", level)]);
        assert_eq!(stack.refusals(), [refusal], "{level}");
        let dev = Stack::new(&[("EnvironmentName", "dev"), ("LogLevel", level)]);
        assert!(dev.refusals().is_empty(), "{level} in dev");
    }
    for level in ["INFO", "WARN", "ERROR"] {
        let stack = Stack::new(&[("EnvironmentName", "prod"), ("LogLevel", level)]);
        assert!(stack.refusals().is_empty(), "{level}");
    }
}

#[test]
fn prod_cannot_be_deployed_with_self_sign_up() {
    let refusal = "SelfSignUp must be disabled when EnvironmentName is prod.";
    let prod_open = Stack::new(&[("EnvironmentName", "prod"), ("SelfSignUp", "enabled")]);
    assert_eq!(prod_open.refusals(), [refusal]);
    assert!(
        Stack::new(&[("EnvironmentName", "prod")])
            .refusals()
            .is_empty()
    );
    let dev_open = Stack::new(&[("EnvironmentName", "dev"), ("SelfSignUp", "enabled")]);
    assert!(dev_open.refusals().is_empty());
    assert_eq!(
        dev_open.properties("UserPool")["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"],
        Value::Bool(false)
    );
    assert_eq!(
        Stack::new(&[]).properties("UserPool")["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"],
        Value::Bool(true),
        "by default only an operator creates users"
    );
}

#[test]
fn prod_cannot_be_deployed_with_the_payment_sandbox() {
    let refusal = "EnablePaymentSandbox must be false when EnvironmentName is prod.";
    let prod_sandbox = Stack::new(&[
        ("EnvironmentName", "prod"),
        ("EnablePaymentSandbox", "true"),
    ]);
    assert_eq!(prod_sandbox.refusals(), [refusal]);
    assert!(
        Stack::new(&[("EnvironmentName", "prod")])
            .refusals()
            .is_empty()
    );
    let dev_sandbox = Stack::new(&[("EnvironmentName", "dev"), ("EnablePaymentSandbox", "true")]);
    assert!(dev_sandbox.refusals().is_empty());
}

/// `samconfig.toml`'s `parameter_overrides` of each environment, as NAME=VALUE pairs.
fn samconfig_parameters() -> BTreeMap<String, BTreeMap<String, String>> {
    let text = std::fs::read_to_string(crate::support::root().join("samconfig.toml")).unwrap();
    let mut section = String::new();
    let mut environments = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = header.to_owned();
        } else if let Some(value) = line.strip_prefix("parameter_overrides = ") {
            let environment = section.split('.').next().unwrap().to_owned();
            let pairs = value
                .trim_matches('"')
                .split_whitespace()
                .map(|pair| {
                    let (name, value) = pair.split_once('=').unwrap();
                    (name.to_owned(), value.to_owned())
                })
                .collect();
            environments.insert(environment, pairs);
        }
    }
    environments
}

#[test]
fn a_stack_must_say_what_it_is_and_the_payment_sandbox_is_off_unless_asked_for() {
    let template = yaml("template.yaml");
    let parameters = &template["Parameters"];
    assert!(
        parameters["EnvironmentName"].get("Default").is_none(),
        "EnvironmentName has no default: a new stack is never dev by omission"
    );
    assert_eq!(
        scalar(&parameters["EnablePaymentSandbox"]["Default"]),
        "false"
    );
    assert_eq!(
        template["Conditions"]["HasPaymentSandbox"],
        yaml_serde::from_str::<Value>(r#"!Equals [!Ref EnablePaymentSandbox, "true"]"#).unwrap()
    );
    // Every environment of samconfig.toml says what it is; dev (and the default, which
    // deploys dev) asks for the sandbox, prod does not.
    let environments = samconfig_parameters();
    let value = |env: &str, name: &str| environments[env].get(name).cloned();
    for env in ["default", "dev"] {
        assert_eq!(
            value(env, "EnvironmentName").as_deref(),
            Some("dev"),
            "{env}"
        );
        assert_eq!(
            value(env, "EnablePaymentSandbox").as_deref(),
            Some("true"),
            "{env}"
        );
    }
    assert_eq!(value("prod", "EnvironmentName").as_deref(), Some("prod"));
    assert_eq!(value("prod", "EnablePaymentSandbox"), None);
    for (env, parameters) in &environments {
        let pairs: Vec<(&str, &str)> = parameters
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert!(Stack::new(&pairs).refusals().is_empty(), "{env}");
    }
}

#[test]
fn prod_signs_in_with_srp_or_the_admin_api_never_a_client_sent_password() {
    let flows = |env: &str| {
        strings(
            &Stack::new(&[("EnvironmentName", env)]).properties("UserPoolClient")["ExplicitAuthFlows"],
        )
    };
    let prod = flows("prod");
    assert!(
        !prod.contains(&"ALLOW_USER_PASSWORD_AUTH".to_owned()),
        "{prod:?}"
    );
    for flow in [
        "ALLOW_USER_SRP_AUTH",
        "ALLOW_ADMIN_USER_PASSWORD_AUTH",
        "ALLOW_REFRESH_TOKEN_AUTH",
    ] {
        assert!(
            prod.contains(&flow.to_owned()),
            "prod lacks {flow}: {prod:?}"
        );
        assert!(flows("dev").contains(&flow.to_owned()));
    }
    assert!(flows("dev").contains(&"ALLOW_USER_PASSWORD_AUTH".to_owned()));
}

/// What the admin MFA guard adds to the stack.
const GUARD_RESOURCES: [&str; 3] = [
    "AdminMfaGuardFunction",
    "AdminMfaGuardPermission",
    "AdminMfaGuardLogGroup",
];

/// The stack with `MfaScope` = `scope` and its user pool, which takes TOTP as its one second
/// factor, with `configuration` as its `MfaConfiguration`.
fn totp_pool(scope: &str, configuration: &str) -> (Stack, Value) {
    let stack = Stack::new(&[("MfaScope", scope)]);
    let pool = stack.properties("UserPool");
    assert_eq!(pool["MfaConfiguration"], configuration);
    assert_eq!(strings(&pool["EnabledMfas"]), ["SOFTWARE_TOKEN_MFA"]);
    (stack, pool)
}

#[test]
fn admins_need_totp_through_the_guard_trigger_on_the_essentials_plan() {
    let (stack, pool) = totp_pool("admins", "OPTIONAL");
    // V2_0: the only version whose group override reaches the access token too.
    let trigger = &pool["LambdaConfig"]["PreTokenGenerationConfig"];
    assert_eq!(trigger["LambdaVersion"], "V2_0");
    assert_eq!(
        yaml_serde::to_string(&trigger["LambdaArn"]).unwrap().trim(),
        "!GetAtt AdminMfaGuardFunction.Arn"
    );
    assert_eq!(pool["UserPoolTier"], "ESSENTIALS");
    for id in GUARD_RESOURCES {
        assert!(stack.exists(id), "{id}");
    }
    let permission = stack.properties("AdminMfaGuardPermission");
    assert_eq!(permission["Principal"], "cognito-idp.amazonaws.com");
    assert_eq!(
        yaml_serde::to_string(&permission["SourceArn"])
            .unwrap()
            .trim(),
        "!GetAtt UserPool.Arn",
        "only this stack's pool may invoke the guard"
    );
}

#[test]
fn everyone_needs_totp_without_a_trigger() {
    let (stack, pool) = totp_pool("everyone", "ON");
    assert!(pool.get("LambdaConfig").is_none(), "{pool:?}");
    assert_eq!(
        pool["UserPoolTier"], "LITE",
        "no trigger: the cheapest plan"
    );
    assert_eq!(
        stack.properties("ShopSignInDomain")["ManagedLoginVersion"],
        1,
        "Lite's sign-in pages are the classic hosted UI"
    );
    for id in GUARD_RESOURCES {
        assert!(!stack.exists(id), "{id}");
    }
}

#[test]
fn threat_protection_puts_the_pool_on_the_plus_plan() {
    for mode in ["AUDIT", "ENFORCED"] {
        for scope in ["admins", "everyone"] {
            let pool = Stack::new(&[("ThreatProtection", mode), ("MfaScope", scope)])
                .properties("UserPool");
            assert_eq!(pool["UserPoolTier"], "PLUS");
            assert_eq!(pool["UserPoolAddOns"]["AdvancedSecurityMode"], mode);
        }
    }
    let off = Stack::new(&[("ThreatProtection", "OFF")]).properties("UserPool");
    assert!(off.get("UserPoolAddOns").is_none(), "{off:?}");
}

/// Managed login (version 2) and its branding exist on the Essentials and Plus plans only; on
/// Lite the classic hosted UI (version 1) is the one sign-in page Cognito serves. A stack
/// whose plan and domain disagree fails to deploy, so every combination of the parameters
/// that choose the plan must agree.
#[test]
fn the_sign_in_pages_are_a_version_the_feature_plan_offers() {
    let mut plans = std::collections::BTreeSet::new();
    for scope in ["admins", "everyone"] {
        for protection in ["OFF", "AUDIT", "ENFORCED"] {
            for env in ["dev", "prod"] {
                let stack = Stack::new(&[
                    ("MfaScope", scope),
                    ("ThreatProtection", protection),
                    ("EnvironmentName", env),
                ]);
                let combination = format!("MfaScope={scope} ThreatProtection={protection} {env}");
                let plan = scalar(&stack.properties("UserPool")["UserPoolTier"]);
                let version = scalar(&stack.properties("ShopSignInDomain")["ManagedLoginVersion"]);
                let branded = stack.exists("ShopManagedLoginBranding");
                match plan.as_str() {
                    "LITE" => {
                        assert_eq!(version, "1", "{combination}: Lite has no managed login");
                        assert!(!branded, "{combination}: Lite has no branding");
                    }
                    "ESSENTIALS" | "PLUS" => {
                        assert_eq!(version, "2", "{combination}: managed login on {plan}");
                        assert!(branded, "{combination}: managed login's branding");
                    }
                    other => panic!("{combination}: unknown plan {other}"),
                }
                plans.insert(plan);
            }
        }
    }
    assert_eq!(plans.len(), 3, "every plan is reachable: {plans:?}");
}

/// The user pool's emails (codes, temporary passwords, resets): Cognito's own sender by
/// default, which sends at most 50 a day for the account, or SES from the identity a
/// production stack names, in the stack's region.
#[test]
fn the_pool_mails_through_ses_when_given_an_identity_and_cognito_otherwise() {
    let default = Stack::new(&[]).properties("UserPool");
    assert_eq!(
        default["EmailConfiguration"]["EmailSendingAccount"], "COGNITO_DEFAULT",
        "{default:?}"
    );
    assert!(default["EmailConfiguration"].get("SourceArn").is_none());

    let ses = Stack::new(&[("EmailSenderIdentity", "shop.example.com")]).properties("UserPool");
    let email = &ses["EmailConfiguration"];
    assert_eq!(email["EmailSendingAccount"], "DEVELOPER");
    let source = yaml_serde::to_string(&email["SourceArn"]).unwrap();
    assert!(
        source.contains(":ses:${AWS::Region}:${AWS::AccountId}:identity/${EmailSenderIdentity}"),
        "{source}"
    );
    assert!(email.get("From").is_none(), "the identity's own address");

    let from = Stack::new(&[
        ("EmailSenderIdentity", "shop.example.com"),
        ("EmailFrom", "Shop <no-reply@shop.example.com>"),
    ])
    .properties("UserPool");
    assert_eq!(
        from["EmailConfiguration"]["From"],
        "Shop <no-reply@shop.example.com>"
    );
}

/// `yaml`'s text, e.g. `!Ref AlarmTopic`.
fn written(value: &Value) -> String {
    yaml_serde::to_string(value).unwrap().trim().to_owned()
}

#[test]
fn admin_needs_an_operator_verified_enrolment_and_every_mfa_change_reaches_the_operators() {
    use app::admin_mfa::{MFA_VERIFIED_GROUP, Verdict};
    use app::emf;
    for scope in ["admins", "everyone"] {
        let stack = Stack::new(&[("MfaScope", scope)]);
        // The group the guard requires beside admin: only an IAM call adds a user to it.
        let group = stack.properties("AdminMfaVerifiedGroup");
        assert_eq!(group["GroupName"], MFA_VERIFIED_GROUP);
        assert_eq!(written(&group["UserPoolId"]), "!Ref UserPool");

        // Second factors set up, verified, preferred or reset, and the admin groups changed,
        // in any pool: to the operators' topic, which lets exactly this rule publish.
        let rule = stack.properties("AdminMfaChangeRule");
        let pattern = &rule["EventPattern"];
        assert_eq!(strings(&pattern["source"]), ["aws.cognito-idp"]);
        assert_eq!(
            strings(&pattern["detail-type"]),
            ["AWS API Call via CloudTrail"]
        );
        let calls = strings(&pattern["detail"]["eventName"]);
        for call in [
            "AssociateSoftwareToken",
            "VerifySoftwareToken",
            "SetUserMFAPreference",
            "AdminSetUserMFAPreference",
            "AdminAddUserToGroup",
            "AdminRemoveUserFromGroup",
        ] {
            assert!(calls.iter().any(|c| c == call), "{call} not watched");
        }
        assert_eq!(rule["State"], "ENABLED");
        let targets = rule["Targets"].as_sequence().unwrap();
        assert_eq!(targets.len(), 1);
        assert_eq!(written(&targets[0]["Arn"]), "!Ref AlarmTopic");
        let policy = stack.properties("AlarmTopicPolicy");
        assert_eq!(written(&policy["Topics"][0]), "!Ref AlarmTopic");
        let statements = policy["PolicyDocument"]["Statement"].as_sequence().unwrap();
        let events = statements
            .iter()
            .find(|s| s["Principal"]["Service"] == "events.amazonaws.com")
            .expect("EventBridge may publish");
        assert_eq!(events["Action"], "sns:Publish");
        assert_eq!(
            written(&events["Condition"]["ArnEquals"]["aws:SourceArn"]),
            "!GetAtt AdminMfaChangeRule.Arn",
            "only the rule, not any rule of the account"
        );
        assert!(
            statements
                .iter()
                .any(|s| s["Principal"]["Service"] == "cloudwatch.amazonaws.com"),
            "the alarms can still publish once the topic has a policy"
        );
    }

    // Where the guard runs, a refusal for an unverified factor raises an alarm at once.
    let stack = Stack::new(&[("MfaScope", "admins")]);
    let alarm = stack.properties("AdminMfaUnverifiedAlarm");
    assert_eq!(alarm["Namespace"], emf::NAMESPACE);
    assert_eq!(alarm["MetricName"], emf::name::ADMIN_TOKENS_REFUSED);
    let dimensions: BTreeMap<String, String> = alarm["Dimensions"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|d| (scalar(&d["Name"]), written(&d["Value"])))
        .collect();
    assert_eq!(
        dimensions,
        BTreeMap::from([
            (
                emf::FUNCTION_NAME.to_owned(),
                "!Ref AdminMfaGuardFunction".to_owned()
            ),
            (
                emf::REASON.to_owned(),
                Verdict::AdminUnverified.refusal().unwrap().to_owned()
            ),
        ])
    );
    assert_eq!(alarm["Statistic"], "Sum");
    assert_eq!(alarm["ComparisonOperator"], "GreaterThanThreshold");
    assert_eq!(scalar(&alarm["Threshold"]), "0");
    assert_eq!(written(&alarm["AlarmActions"][0]), "!Ref AlarmTopic");
    assert!(!Stack::new(&[("MfaScope", "everyone")]).exists("AdminMfaUnverifiedAlarm"));
}
