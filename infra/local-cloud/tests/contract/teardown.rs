//! Deleting a stack: CloudFormation deletes only an empty bucket, so `sam delete` alone stops
//! at the first bucket with objects (the shop's always has some). Every bucket of the template
//! says what happens to it on deletion (`DeletionPolicy`), and `make destroy`
//! (`infra/destroy.sh`) empties each bucket the stack would delete before `sam delete`.
//!
//! The script runs here for real, against recording stand-ins for the AWS and SAM CLIs: the
//! AWS one lists the template's resources as the stack's, with made-up physical names.

use crate::support::{entries, root, yaml};
use std::path::Path;
use std::process::Command;

/// The physical name the stand-in gives a resource.
fn physical(logical: &str) -> String {
    format!("contract-{}-0abc", logical.to_lowercase())
}

/// A stand-in CLI that appends its arguments to `log` and prints `answer` for a command line
/// containing `when`.
fn stand_in(path: &Path, log: &Path, answers: &[(&str, &Path)]) {
    let mut script = format!(
        "#!/usr/bin/env bash\nprintf '%s\\n' \"$(basename \"$0\") $*\" >> '{}'\n",
        log.display()
    );
    for (when, answer) in answers {
        script.push_str(&format!(
            "if [[ \" $* \" == *' {when} '* ]]; then cat '{}'; exit 0; fi\n",
            answer.display()
        ));
    }
    std::fs::write(path, script).unwrap();
}

#[test]
fn every_bucket_is_retained_or_emptied_before_the_stack_is_deleted() {
    let template = yaml("template.yaml");
    let resources = entries(&template, "Resources");
    let buckets: Vec<(&str, &str)> = resources
        .iter()
        .filter(|(_, r)| r["Type"].as_str() == Some("AWS::S3::Bucket"))
        .map(|(id, r)| {
            let policy = r
                .get("DeletionPolicy")
                .and_then(|p| p.as_str())
                .unwrap_or_else(|| {
                    panic!("{id}: no DeletionPolicy; say whether the bucket outlives the stack")
                });
            (*id, policy)
        })
        .collect();
    assert!(!buckets.is_empty(), "the shop's bucket");

    let dir = std::env::temp_dir().join(format!("teardown-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("calls.log");
    let listing = dir.join("resources.txt");
    let text: String = resources
        .iter()
        .filter_map(|(id, r)| Some(format!("{id}\t{}\t{}\n", r["Type"].as_str()?, physical(id))))
        .collect();
    std::fs::write(&listing, text).unwrap();
    let no_versions = dir.join("versions.json");
    std::fs::write(&no_versions, r#"{"Objects": []}"#).unwrap();
    stand_in(
        &dir.join("aws"),
        &log,
        &[
            ("list-stack-resources", &listing),
            ("list-object-versions", &no_versions),
        ],
    );
    stand_in(&dir.join("sam"), &log, &[]);

    let output = Command::new("bash")
        .arg(root().join("infra/destroy.sh"))
        .arg("dev")
        .env("AWS_CLI", format!("bash {}", dir.join("aws").display()))
        .env("SAM_CLI", format!("bash {}", dir.join("sam").display()))
        .output()
        .expect("bash runs");
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    std::fs::remove_dir_all(&dir).unwrap();
    crate::support::assert_succeeded(&output);
    let calls: Vec<&str> = calls.lines().collect();
    let delete = calls
        .iter()
        .position(|c| c.starts_with("sam delete"))
        .unwrap_or_else(|| panic!("no sam delete: {calls:?}"));
    assert_eq!(delete, calls.len() - 1, "sam delete comes last: {calls:?}");
    for flag in [
        "--config-env dev",
        "--no-prompts",
        "--stack-name follow-seckill-dev",
    ] {
        assert!(calls[delete].contains(flag), "{flag}: {}", calls[delete]);
    }
    let emptied: Vec<&str> = calls
        .iter()
        .filter_map(|c| c.strip_prefix("aws --region us-east-1 s3 rm s3://"))
        .filter_map(|c| c.split_whitespace().next())
        .collect();
    for (id, policy) in &buckets {
        let name = physical(id);
        if policy.starts_with("Retain") {
            assert!(!emptied.contains(&name.as_str()), "{id} is retained");
        } else {
            assert!(
                emptied.contains(&name.as_str()),
                "{id} ({policy}) is not emptied before sam delete: {calls:?}"
            );
        }
    }
    assert_eq!(
        emptied.len(),
        buckets
            .iter()
            .filter(|(_, p)| !p.starts_with("Retain"))
            .count(),
        "only buckets are emptied: {emptied:?}"
    );
}
