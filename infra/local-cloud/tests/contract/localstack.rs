//! The LocalStack profile (`infra/localstack/`), checked statically since no LocalStack image
//! can be pulled here: the compose file starts every service the runner provisions, pinned and
//! health-checked, and the env file points where compose publishes.

use crate::support::{project_model, root, yaml};
use std::collections::BTreeSet;
use yaml_serde::Value;

fn compose() -> Value {
    yaml("infra/localstack/compose.yaml")
}

fn service<'a>(compose: &'a Value, name: &str) -> &'a Value {
    compose
        .get("services")
        .and_then(|services| services.get(name))
        .unwrap_or_else(|| panic!("compose.yaml has no service {name}"))
}

/// `KEY=value` of the profile's env file.
fn env_file(key: &str) -> String {
    let text = std::fs::read_to_string(root().join("infra/localstack/localstack.env")).unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("localstack.env sets no {key}"))
        .to_owned()
}

/// The host port a service publishes for `container_port`, on 127.0.0.1 only.
fn published(service: &Value, container_port: u16) -> u16 {
    let ports = service["ports"]
        .as_sequence()
        .expect("the service publishes ports");
    ports
        .iter()
        .filter_map(Value::as_str)
        .find_map(|mapping| {
            let (rest, container) = mapping.rsplit_once(':')?;
            (container.parse::<u16>().ok()? == container_port).then_some(rest)
        })
        .map(|rest| {
            let (host, port) = rest.rsplit_once(':').expect("HOST:PORT:CONTAINER_PORT");
            assert_eq!(
                host, "127.0.0.1",
                "a port published beyond loopback: {rest}"
            );
            port.parse().unwrap()
        })
        .unwrap_or_else(|| panic!("port {container_port} is not published"))
}

#[test]
fn localstack_runs_every_service_the_runner_provisions() {
    let model = project_model(&[]);
    let mut needed = BTreeSet::new();
    if !model.tables.is_empty() {
        needed.insert("dynamodb");
    }
    if model.tables.iter().any(|t| t.stream_view_type.is_some()) {
        needed.insert("dynamodbstreams");
    }
    if !model.queues.is_empty() {
        needed.insert("sqs");
    }
    if !model.buckets.is_empty() {
        needed.insert("s3");
    }
    if !model.secrets.is_empty() {
        needed.insert("secretsmanager");
    }
    let compose = compose();
    let services: BTreeSet<&str> = service(&compose, "localstack")["environment"]["SERVICES"]
        .as_str()
        .expect("SERVICES is set")
        .split(',')
        .map(str::trim)
        .collect();
    let missing: Vec<_> = needed.difference(&services).collect();
    assert!(
        missing.is_empty(),
        "SERVICES lacks {missing:?}: `make dev` would stop at provisioning"
    );
}

#[test]
fn the_images_are_pinned_and_every_service_has_a_healthcheck() {
    let compose = compose();
    for name in ["localstack", "redis"] {
        let service = service(&compose, name);
        let image = service["image"].as_str().unwrap();
        let tag = image
            .rsplit_once(':')
            .map(|(_, tag)| tag)
            .unwrap_or("latest");
        assert!(
            tag != "latest" && tag.chars().any(|c| c.is_ascii_digit()),
            "{name}'s image {image} is not pinned to a version"
        );
        assert!(
            service
                .get("healthcheck")
                .and_then(|h| h.get("test"))
                .is_some(),
            "{name} has no healthcheck, so `docker compose up --wait` cannot wait for it"
        );
    }
}

#[test]
fn the_env_file_points_where_compose_publishes_and_redis_avoids_6379() {
    let compose = compose();
    let localstack = published(service(&compose, "localstack"), 4566);
    let redis = published(service(&compose, "redis"), 6379);
    assert_ne!(
        redis, 6379,
        "Debian's redis-server (installed by make dev) may listen on 6379"
    );
    assert_eq!(
        env_file("AWS_ENDPOINT_URL"),
        format!("http://127.0.0.1:{localstack}")
    );
    // Redis requires a password, as ElastiCache its AUTH token, and the URL carries it.
    let command: Vec<&str> = service(&compose, "redis")["command"]
        .as_sequence()
        .expect("redis's command")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let password = command
        .iter()
        .position(|arg| *arg == "--requirepass")
        .and_then(|at| command.get(at + 1))
        .expect("redis-server --requirepass");
    assert_eq!(
        env_file("REDIS_URL"),
        format!("redis://:{password}@127.0.0.1:{redis}")
    );
    assert_eq!(env_file("LOCAL_CLOUD_ACCOUNT_ID"), "000000000000");
}
