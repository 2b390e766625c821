//! A user pool's Lambda triggers (`LambdaConfig`), which become events of the functions they
//! name.

use super::error::At;
use super::intrinsics::Resolver;
use super::yaml::Node;
use crate::model::CognitoTrigger;

impl Resolver<'_> {
    /// The Lambda triggers in a user pool's `LambdaConfig`: (function ARN, where, trigger).
    /// `PreTokenGenerationConfig` (with its `LambdaVersion`) wins over the older
    /// `PreTokenGeneration` key, which names the same function when both are set.
    pub(super) fn cognito_triggers(
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
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use crate::model::{CognitoTrigger, EventSpec};

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
        let pools = |trigger: &str, version: &str| {
            vec![EventSpec::Cognito(CognitoTrigger {
                user_pool: "Pool".into(),
                trigger: trigger.into(),
                version: version.into(),
            })]
        };
        assert_eq!(
            function(&model, "Guard").events,
            pools("PreTokenGeneration", "V2_0")
        );
        assert_eq!(
            function(&model, "Signup").events,
            pools("PreSignUp", "V1_0")
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
}
