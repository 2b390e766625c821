//! The local stand-ins for the account's names: the physical names of tables and queues, and
//! the ARNs and URLs that `!Ref`, `!GetAtt` and `!Sub` give for the template's resources.

use yaml_serde::Value;

use super::error::{At, Problem};
use super::intrinsics::Resolver;
use super::resources::properties;

/// A resource as intrinsics see it. Table and queue names start unknown: they may themselves
/// use intrinsics, resolved in [`Resolver::physical_names`].
#[derive(Clone, Debug)]
pub(super) enum Resource {
    Table(Option<String>),
    Queue(Option<String>),
    Bucket(Option<String>),
    Function,
    Other(String),
}

impl Resource {
    pub(super) fn new(kind: &str) -> Self {
        match kind {
            "AWS::DynamoDB::Table" | "AWS::Serverless::SimpleTable" => Resource::Table(None),
            "AWS::SQS::Queue" => Resource::Queue(None),
            "AWS::S3::Bucket" => Resource::Bucket(None),
            "AWS::Serverless::Function" => Resource::Function,
            other => Resource::Other(other.to_owned()),
        }
    }

    pub(super) fn kind(&self) -> &str {
        match self {
            Resource::Table(_) => "AWS::DynamoDB::Table",
            Resource::Queue(_) => "AWS::SQS::Queue",
            Resource::Bucket(_) => "AWS::S3::Bucket",
            Resource::Function => "AWS::Serverless::Function",
            Resource::Other(kind) => kind,
        }
    }
}

impl Resolver<'_> {
    pub(super) fn table_arn(&self, name: &str) -> String {
        format!(
            "arn:aws:dynamodb:{}:{}:table/{name}",
            self.names.region, self.names.account_id
        )
    }

    /// A stand-in: the streams poller looks the real stream ARN up by table name.
    pub(super) fn stream_arn(&self, table: &str) -> String {
        format!("{}/stream/local", self.table_arn(table))
    }

    pub(super) fn queue_arn(&self, name: &str) -> String {
        format!(
            "arn:aws:sqs:{}:{}:{name}",
            self.names.region, self.names.account_id
        )
    }

    pub(super) fn queue_url(&self, name: &str) -> String {
        format!(
            "{}/{}/{name}",
            self.names.sqs_endpoint.trim_end_matches('/'),
            self.names.account_id
        )
    }

    /// The local ARN of a function of the template (what `!GetAtt <Function>.Arn` gives).
    pub(super) fn function_arn(&self, logical_id: &str) -> String {
        format!(
            "arn:aws:lambda:{}:{}:function:{logical_id}",
            self.names.region, self.names.account_id
        )
    }

    /// A table's or queue's name, or an error when it is not known yet.
    pub(super) fn name_of<'a>(
        &self,
        id: &str,
        name: &'a Option<String>,
        at: &At,
    ) -> anyhow::Result<&'a str> {
        name.as_deref()
            .ok_or_else(|| self.fail(at, Problem::NameCycle(id.to_owned())))
    }

    /// Fills in the names of tables and queues. A name may use another one's (say
    /// `!Sub ${WorkQueue.QueueName}-dlq`), so they are resolved in rounds until none is left.
    pub(super) fn physical_names(
        &mut self,
        resources: &[(&str, &Value, String)],
    ) -> anyhow::Result<()> {
        let mut pending: Vec<(&str, &Value)> = resources
            .iter()
            .filter(|(id, _, _)| {
                matches!(
                    self.resources[*id],
                    Resource::Table(_) | Resource::Queue(_) | Resource::Bucket(_)
                )
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
                if let Some(
                    Resource::Table(slot) | Resource::Queue(slot) | Resource::Bucket(slot),
                ) = self.resources.get_mut(id)
                {
                    *slot = Some(name);
                }
            }
            pending = waiting;
        }
        Ok(())
    }

    pub(super) fn physical_name(&self, id: &str, decl: &Value) -> anyhow::Result<String> {
        let at = At::new(format!("resource {id}"));
        let props = properties(self, decl, &at)?;
        let stack = &self.names.stack_name;
        match self.resources[id] {
            Resource::Table(_) => Ok(props
                .string_at("TableName")?
                .unwrap_or_else(|| format!("{stack}-{id}"))),
            Resource::Bucket(_) => Ok(props
                .string_at("BucketName")?
                .unwrap_or_else(|| format!("{stack}-{id}").to_lowercase())),
            _ => {
                if let Some(name) = props.string_at("QueueName")? {
                    return Ok(name);
                }
                let fifo = props.bool_at("FifoQueue")?.unwrap_or(false);
                Ok(format!("{stack}-{id}{}", if fifo { ".fifo" } else { "" }))
            }
        }
    }

    pub(super) fn named(&self, id: &str) -> String {
        match &self.resources[id] {
            Resource::Table(Some(name))
            | Resource::Queue(Some(name))
            | Resource::Bucket(Some(name)) => name.clone(),
            // `physical_names` named every table and queue or failed.
            _ => unreachable!("resource {id} has no physical name"),
        }
    }

    pub(super) fn bucket_arn(&self, name: &str) -> String {
        format!("arn:aws:s3:::{name}")
    }

    /// The queue whose ARN this is: `(logical id, name)`.
    pub(super) fn queue_by_arn(&self, arn: &str) -> Option<(&str, &str)> {
        self.resources
            .iter()
            .find_map(|(id, resource)| match resource {
                Resource::Queue(Some(name)) if self.queue_arn(name) == arn => {
                    Some((id.as_str(), name.as_str()))
                }
                _ => None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;

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
}
