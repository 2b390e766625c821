//! `up --lambda-cpu`: each instance's process runs in a cgroup of its own whose CPU quota is
//! its function's share by `MemorySize`. No emulator needed; skipped (with the reason printed)
//! where the cgroup cpu controller is not writable.

use crate::gateway::hello_function;
use crate::support::{binaries_dir, unique};
use bytes::Bytes;
use local_cloud::cpu_quota::{CpuQuota, DEFAULT_PERIOD, Quota};
use local_cloud::dashboard::Dashboard;
use local_cloud::runtime::{Runtime, RuntimeOptions};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The groups under the parent, and the processes in each.
fn groups(parent: &std::path::Path) -> Vec<(PathBuf, Vec<u32>)> {
    std::fs::read_dir(parent)
        .expect("the parent group exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .map(|dir| {
            let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
            let pids = procs.lines().filter_map(|pid| pid.parse().ok()).collect();
            (dir, pids)
        })
        .collect()
}

#[tokio::test]
async fn each_instance_runs_with_the_cpu_share_of_its_memory_size() {
    let quota = match CpuQuota::new(&unique("runner-test"), DEFAULT_PERIOD, "--lambda-cpu") {
        Ok(quota) => Arc::new(quota),
        Err(error) => {
            println!("skipped: {error}");
            return;
        }
    };
    let parent = quota.dir().to_owned();
    let mut function = hello_function();
    function.memory_mb = 512;
    let runtime = Runtime::start(
        std::slice::from_ref(&function),
        RuntimeOptions {
            binaries_dir: binaries_dir(),
            instances: 2,
            base_env: BTreeMap::from([("AWS_REGION".to_owned(), "us-east-1".to_owned())]),
            log_invocations: false,
            env_overrides: BTreeMap::new(),
            faults: Default::default(),
            dashboard: Arc::new(Dashboard::default()),
            cpu_quota: Some(quota.clone()),
        },
    )
    .await
    .expect("the runtime starts");

    let groups = groups(&parent);
    assert_eq!(groups.len(), 2, "one group per instance: {groups:?}");
    for (dir, pids) in &groups {
        let [pid] = pids[..] else {
            panic!("one process in {}: {pids:?}", dir.display());
        };
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        assert!(exe.ends_with("hello-http"), "{}", exe.display());
        // The kernel's view of the process: in this group of the cpu hierarchy.
        let relative = dir.strip_prefix(quota.hierarchy().root()).unwrap();
        let cgroups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap();
        assert!(
            cgroups
                .lines()
                .any(|line| line.ends_with(&format!(":/{}", relative.display()))),
            "{} not in {cgroups}",
            relative.display()
        );
        // 20 ms × 512 / 1769
        assert_eq!(
            quota.hierarchy().read_quota(dir),
            Some(Quota {
                period_us: 20_000,
                quota_us: 5_789
            })
        );
    }

    let handle = runtime.function(&function.name).unwrap();
    let event = serde_json::json!({
        "version": "2.0",
        "routeKey": "GET /hello",
        "rawPath": "/hello",
        "rawQueryString": "",
        "headers": {},
        "requestContext": {
            "http": {"method": "GET", "path": "/hello", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "test"},
            "requestId": "r", "routeKey": "GET /hello", "stage": "$default", "time": "01/Dec/2026:00:00:00 +0000", "timeEpoch": 0,
            "accountId": "123456789012", "apiId": "api", "domainName": "localhost", "domainPrefix": "localhost"
        },
        "isBase64Encoded": false
    });
    handle
        .invoke("test", Bytes::from(event.to_string()))
        .await
        .expect("a throttled instance still answers");

    runtime.shutdown().await;
    assert!(
        groups_left(&parent).is_empty(),
        "every group is removed once its process has ended"
    );
    drop(quota);
    assert!(!parent.exists(), "the parent group is removed last");
}

fn groups_left(parent: &std::path::Path) -> Vec<PathBuf> {
    groups(parent).into_iter().map(|(dir, _)| dir).collect()
}
