//! The admin group's MFA guard: a Cognito Pre Token Generation trigger that takes `admin` out
//! of the tokens of an operator whose second factor is not both configured and verified by
//! another operator, so that the admin routes answer 403 until it is.
//!
//! With `MfaScope=admins` the pool's MFA is `OPTIONAL`: a user with TOTP set up is always
//! challenged at sign-in, one without it is not. A factor configured is not enough, though:
//! whoever holds an un-enrolled admin's temporary password can sign in and enrol their own
//! authenticator. So `admin` reaches a token only when the member is also in
//! [`MFA_VERIFIED_GROUP`], which an operator adds them to (`AdminAddUserToGroup`, an IAM call no
//! user can make for themselves) after checking, with the person, that the factor just enrolled
//! is theirs; docs/deploying.md, "The user pool", has the procedure. The guard reads the groups
//! from the event (no call), then asks the directory ([`MfaDirectory`]) whether the verified
//! admin still has a factor; a user outside the admin group is answered without any call, and a
//! directory that cannot answer fails closed (no `admin` in the token, sign-in still succeeds).
//! Every refusal is counted (`AdminTokensRefused`, by reason): an `UNVERIFIED` one is an admin
//! who enrolled a factor no operator verified, which `AdminMfaUnverifiedAlarm` reports.
//!
//! The V2 event (`LambdaVersion: V2_0`) is used because only its group override reaches the
//! access token as well as the ID token; the API accepts both. A V1 event (a trigger set up
//! by hand without the version) is answered in V1's shape, which covers the ID token only,
//! and says so in the log.

use crate::auth::ADMIN_GROUP;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

/// The group an operator adds an admin to once they verified, with the person, that the
/// second factor the admin enrolled is theirs. Without it `admin` never reaches a token.
pub const MFA_VERIFIED_GROUP: &str = "admin-mfa-verified";

/// Whether a user of a pool has a second factor configured.
#[async_trait]
pub trait MfaDirectory: Send + Sync {
    async fn has_mfa(&self, pool_id: &str, username: &str) -> Result<bool, DirectoryError>;
}

/// Why the directory could not say whether a user has MFA.
#[derive(Debug, thiserror::Error)]
#[error("failed to read the MFA settings of a user")]
pub struct DirectoryError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// The event is not a Pre Token Generation event: Cognito then refuses the sign-in, which is
/// right for a trigger wired to the wrong source.
#[derive(Debug, thiserror::Error)]
#[error("not a Pre Token Generation event")]
pub struct EventError(#[source] serde_json::Error);

/// The fields of the event the guard reads; the rest is passed back untouched.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenEvent {
    #[serde(default)]
    version: String,
    user_pool_id: String,
    user_name: String,
    #[serde(default)]
    request: TokenRequest,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenRequest {
    #[serde(default)]
    group_configuration: Option<GroupConfiguration>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupConfiguration {
    #[serde(default)]
    groups_to_override: Option<Vec<String>>,
    #[serde(default)]
    iam_roles_to_override: Option<Vec<String>>,
    #[serde(default)]
    preferred_role: Option<String>,
}

/// What the guard decided for one token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not an admin: nothing to check, the token is issued as Cognito built it.
    NotAdmin,
    /// An admin whose factor an operator verified, and who still has it: the token keeps
    /// `admin`.
    AdminWithMfa,
    /// An admin whose enrolment no operator verified (not in [`MFA_VERIFIED_GROUP`]), whatever
    /// factor they set up: `admin` is removed.
    AdminUnverified,
    /// A verified admin without MFA (it was reset since): `admin` is removed.
    AdminWithoutMfa,
    /// The directory could not answer: `admin` is removed (fail closed).
    Unknown,
}

impl Verdict {
    fn keeps_admin(&self) -> bool {
        matches!(self, Verdict::NotAdmin | Verdict::AdminWithMfa)
    }

    /// Why `admin` was removed, as the `AdminTokensRefused` metric's `Reason` says it.
    pub fn refusal(&self) -> Option<&'static str> {
        match self {
            Verdict::NotAdmin | Verdict::AdminWithMfa => None,
            Verdict::AdminUnverified => Some("UNVERIFIED"),
            Verdict::AdminWithoutMfa => Some("NO_MFA"),
            Verdict::Unknown => Some("UNKNOWN"),
        }
    }
}

/// Decides for one user whose token would carry `groups`.
pub async fn verdict(
    directory: &dyn MfaDirectory,
    pool_id: &str,
    username: &str,
    groups: &[String],
) -> Verdict {
    let member = |name: &str| groups.iter().any(|group| group == name);
    if !member(ADMIN_GROUP) {
        return Verdict::NotAdmin;
    }
    if !member(MFA_VERIFIED_GROUP) {
        return Verdict::AdminUnverified;
    }
    match directory.has_mfa(pool_id, username).await {
        Ok(true) => Verdict::AdminWithMfa,
        Ok(false) => Verdict::AdminWithoutMfa,
        Err(err) => {
            tracing::error!(
                error = &err as &dyn std::error::Error,
                pool_id,
                username,
                "could not read the admin's MFA settings; admin left out of the token"
            );
            Verdict::Unknown
        }
    }
}

/// Answers a Pre Token Generation event: the event itself, with a response that removes
/// `admin` from the token's groups when [`verdict`] says so, and no override otherwise.
#[tracing::instrument(skip_all)]
pub async fn guard(directory: &dyn MfaDirectory, mut event: Value) -> Result<Value, EventError> {
    let parsed: TokenEvent = serde_json::from_value(event.clone()).map_err(EventError)?;
    let groups = parsed.request.group_configuration.unwrap_or_default();
    let current = groups.groups_to_override.clone().unwrap_or_default();
    let verdict = verdict(directory, &parsed.user_pool_id, &parsed.user_name, &current).await;
    if verdict.keeps_admin() {
        if verdict == Verdict::AdminWithMfa {
            tracing::info!(username = parsed.user_name, "admin with MFA: admin kept");
        }
        return Ok(event);
    }
    tracing::warn!(
        username = parsed.user_name,
        ?verdict,
        "admin without a verified second factor: admin removed from the token"
    );
    if let Some(reason) = verdict.refusal() {
        crate::emf::admin_token_refused(reason);
    }
    let override_details = json!({
        "groupsToOverride": current.iter().filter(|group| *group != ADMIN_GROUP).collect::<Vec<_>>(),
        "iamRolesToOverride": groups.iam_roles_to_override.unwrap_or_default(),
        "preferredRole": groups.preferred_role,
    });
    let response = if parsed.version == "1" {
        tracing::warn!(
            "a V1_0 Pre Token Generation event overrides the ID token's groups only; \
             configure the trigger with LambdaVersion V2_0"
        );
        json!({"claimsOverrideDetails": {"groupOverrideDetails": override_details}})
    } else {
        json!({"claimsAndScopeOverrideDetails": {"groupOverrideDetails": override_details}})
    };
    event["response"] = response;
    Ok(event)
}

/// [`MfaDirectory`] over Cognito's `AdminGetUser`: a user has MFA when its
/// `UserMFASettingList` is not empty (the factors Cognito challenges them with at sign-in).
pub struct CognitoMfaDirectory {
    client: aws_sdk_cognitoidentityprovider::Client,
}

impl CognitoMfaDirectory {
    pub fn new(client: aws_sdk_cognitoidentityprovider::Client) -> Self {
        Self { client }
    }

    /// The directory of the process's one [`aws_config::SdkConfig`] (see [`crate::cloud`]).
    pub fn from_config(config: &aws_config::SdkConfig) -> Self {
        Self::new(aws_sdk_cognitoidentityprovider::Client::new(config))
    }
}

#[async_trait]
impl MfaDirectory for CognitoMfaDirectory {
    #[tracing::instrument(level = "debug", skip(self))]
    async fn has_mfa(&self, pool_id: &str, username: &str) -> Result<bool, DirectoryError> {
        let user = self
            .client
            .admin_get_user()
            .user_pool_id(pool_id)
            .username(username)
            .send()
            .await
            .map_err(|err| DirectoryError(Box::new(err)))?;
        Ok(!user.user_mfa_setting_list().is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    /// An in-memory directory: users with or without MFA, or a directory that is down. It
    /// counts its calls, so tests can see that non-admins cost none.
    #[derive(Default)]
    struct FakeDirectory {
        users: BTreeMap<String, bool>,
        down: bool,
        calls: Mutex<Vec<(String, String)>>,
    }

    impl FakeDirectory {
        fn with(users: &[(&str, bool)]) -> Self {
            Self {
                users: users.iter().map(|(u, m)| ((*u).to_owned(), *m)).collect(),
                ..Self::default()
            }
        }
        fn calls(&self) -> usize {
            self.calls.lock().unwrap().len()
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("the directory is down")]
    struct Down;

    #[async_trait]
    impl MfaDirectory for FakeDirectory {
        async fn has_mfa(&self, pool_id: &str, username: &str) -> Result<bool, DirectoryError> {
            self.calls
                .lock()
                .unwrap()
                .push((pool_id.to_owned(), username.to_owned()));
            if self.down {
                return Err(DirectoryError(Box::new(Down)));
            }
            self.users
                .get(username)
                .copied()
                .ok_or_else(|| DirectoryError(Box::new(Down)))
        }
    }

    /// A V2 event as Cognito sends it at sign-in.
    fn event(version: &str, username: &str, groups: &[&str]) -> Value {
        json!({
            "version": version,
            "triggerSource": "TokenGeneration_Authentication",
            "region": "us-east-1",
            "userPoolId": "us-east-1_Example",
            "userName": username,
            "callerContext": {"awsSdkVersion": "aws-sdk-unknown-unknown", "clientId": "client"},
            "request": {
                "userAttributes": {"sub": username, "email": "ops@example.com"},
                "groupConfiguration": {
                    "groupsToOverride": groups,
                    "iamRolesToOverride": [],
                    "preferredRole": null
                },
                "scopes": ["aws.cognito.signin.user.admin"]
            },
            "response": {"claimsAndScopeOverrideDetails": null}
        })
    }

    fn groups_in_token(answer: &Value) -> Option<Vec<String>> {
        let details = &answer["response"]["claimsAndScopeOverrideDetails"];
        let groups = details
            .get("groupOverrideDetails")?
            .get("groupsToOverride")?;
        Some(serde_json::from_value(groups.clone()).unwrap())
    }

    #[tokio::test]
    async fn a_user_outside_the_admin_group_is_answered_without_asking_the_directory() {
        let directory = FakeDirectory {
            down: true,
            ..FakeDirectory::default()
        };
        let sent = event("2", "ann", &["buyers"]);
        let answer = guard(&directory, sent.clone()).await.unwrap();
        assert_eq!(answer, sent, "the event comes back unchanged: no override");
        assert_eq!(directory.calls(), 0);
    }

    /// An admin whose enrolment an operator verified.
    const VERIFIED: [&str; 2] = ["admin", MFA_VERIFIED_GROUP];

    #[tokio::test]
    async fn a_verified_admin_with_mfa_keeps_admin() {
        let directory = FakeDirectory::with(&[("ops", true)]);
        let sent = event("2", "ops", &VERIFIED);
        let answer = guard(&directory, sent.clone()).await.unwrap();
        assert_eq!(answer, sent);
        assert_eq!(
            directory.calls.lock().unwrap().as_slice(),
            [("us-east-1_Example".to_owned(), "ops".to_owned())]
        );
    }

    #[tokio::test]
    async fn an_admin_who_enrolled_a_factor_no_operator_verified_loses_admin() {
        // The attack: the temporary password's holder enrolled their own authenticator. The
        // factor is there; the operator's verification is not.
        let directory = FakeDirectory::with(&[("ops", true)]);
        let answer = guard(&directory, event("2", "ops", &["buyers", "admin"]))
            .await
            .unwrap();
        assert_eq!(groups_in_token(&answer), Some(vec!["buyers".to_owned()]));
        assert_eq!(
            directory.calls(),
            0,
            "decided from the event's groups alone"
        );
        assert_eq!(
            verdict(&directory, "p", "ops", &["admin".to_owned()]).await,
            Verdict::AdminUnverified
        );
        assert_eq!(Verdict::AdminUnverified.refusal(), Some("UNVERIFIED"));
    }

    #[tokio::test]
    async fn a_verified_admin_without_mfa_loses_admin_and_keeps_other_groups() {
        let directory = FakeDirectory::with(&[("ops", false)]);
        let answer = guard(
            &directory,
            event("2", "ops", &["buyers", "admin", MFA_VERIFIED_GROUP]),
        )
        .await
        .unwrap();
        assert_eq!(
            groups_in_token(&answer),
            Some(vec!["buyers".to_owned(), MFA_VERIFIED_GROUP.to_owned()])
        );
        let details = &answer["response"]["claimsAndScopeOverrideDetails"]["groupOverrideDetails"];
        assert_eq!(details["iamRolesToOverride"], json!([]));
        assert_eq!(
            answer["userName"], "ops",
            "the rest of the event is passed back"
        );
    }

    #[tokio::test]
    async fn a_directory_that_cannot_answer_fails_closed() {
        let directory = FakeDirectory {
            down: true,
            ..FakeDirectory::default()
        };
        let answer = guard(&directory, event("2", "ops", &VERIFIED))
            .await
            .unwrap();
        assert_eq!(
            groups_in_token(&answer),
            Some(vec![MFA_VERIFIED_GROUP.to_owned()])
        );
    }

    #[tokio::test]
    async fn a_v1_event_gets_the_v1_response_shape() {
        let directory = FakeDirectory::with(&[("ops", false)]);
        let answer = guard(&directory, event("1", "ops", &VERIFIED))
            .await
            .unwrap();
        assert_eq!(
            answer["response"]["claimsOverrideDetails"]["groupOverrideDetails"]["groupsToOverride"],
            json!([MFA_VERIFIED_GROUP])
        );
    }

    #[tokio::test]
    async fn a_missing_group_configuration_means_no_groups() {
        let directory = FakeDirectory::default();
        let mut sent = event("2", "ann", &[]);
        sent["request"]["groupConfiguration"] = Value::Null;
        let answer = guard(&directory, sent.clone()).await.unwrap();
        assert_eq!(answer, sent);
        assert_eq!(directory.calls(), 0);
    }

    #[tokio::test]
    async fn an_event_of_another_trigger_is_refused() {
        let directory = FakeDirectory::default();
        let err = guard(&directory, json!({"Records": []})).await.unwrap_err();
        assert_eq!(err.to_string(), "not a Pre Token Generation event");
    }
}
