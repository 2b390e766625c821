//! Reaching the cache: `REDIS_URL` wins; the template's `REDIS_ENDPOINT` is TLS trusting
//! Amazon's roots only (against a TLS `redis-server` of this test's own, with a certificate
//! of a test authority); and the failover reconcile's view of the replication group from
//! moto's ElastiCache control plane. moto has no data plane: nothing listens at the group's
//! endpoint.

use app::cloud::{self, RedisEndpoint};
use app::config::Env;
use app::seckill::recovery::elasticache::ElastiCacheControl;
use app::seckill::recovery::failover::CacheControl;
use aws_sdk_elasticache::Client;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

async fn elasticache() -> Client {
    std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL points at moto (`make test`)");
    Client::new(&cloud::sdk_config().expect("the emulators' region and credentials"))
}

/// A replication group shaped like `template.yaml`'s `RedisCache`; returns its id.
async fn create_replication_group(client: &Client) -> String {
    let id = format!("rg-{}", uuid::Uuid::new_v4().simple());
    client
        .create_replication_group()
        .replication_group_id(&id)
        .replication_group_description("flash-sale cache")
        .engine("valkey")
        .cache_node_type("cache.m7g.large")
        .num_cache_clusters(2)
        .automatic_failover_enabled(true)
        .transit_encryption_enabled(true)
        .send()
        .await
        .expect("create the replication group");
    id
}

#[tokio::test]
async fn the_failover_reconcile_sees_the_group_and_its_primary() {
    let client = elasticache().await;
    let id = create_replication_group(&client).await;
    let control = ElastiCacheControl::new(
        &cloud::sdk_config().expect("the emulators' region and credentials"),
    );

    let group = control.group(&id).await.unwrap();

    assert_eq!(group.status, "available");
    let primary = group.primary.expect("a primary endpoint");
    assert!(primary.starts_with(&format!("master.{id}.")), "{primary}");
    assert!(primary.ends_with(":6379"), "{primary}");
}

#[tokio::test]
async fn an_unknown_group_fails_naming_it() {
    let control = ElastiCacheControl::new(
        &cloud::sdk_config().expect("the emulators' region and credentials"),
    );
    let id = format!("rg-{}", uuid::Uuid::new_v4().simple());

    let err = control.group(&id).await.unwrap_err();

    assert_eq!(
        err.to_string(),
        format!("failed to describe the replication group {id}")
    );
}

#[tokio::test]
async fn redis_url_wins_over_the_cache_endpoint() {
    let url = std::env::var("REDIS_URL").expect("REDIS_URL points at redis-server");
    // An endpoint that resolves nowhere: were it used, the connection would fail.
    let env = Env::from_pairs([
        ("REDIS_URL", url.as_str()),
        ("REDIS_ENDPOINT", "cache.local-cloud.invalid:6379"),
    ]);

    let mut redis = cloud::redis_from_env(&env)
        .await
        .expect("connects to REDIS_URL");

    let pong: String = redis::cmd("PING").query_async(&mut redis).await.unwrap();
    assert_eq!(pong, "PONG");
}

/// A test certificate authority and a server certificate it signed for `localhost` and
/// 127.0.0.1, made with the `openssl` command in a fresh directory.
struct TestAuthority {
    dir: PathBuf,
}

impl TestAuthority {
    fn new() -> Self {
        let dir = std::env::temp_dir().join(format!("redis-tls-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let run = |args: &[&str]| {
            let status = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .expect("openssl runs");
            assert!(status.success(), "openssl {args:?}");
        };
        run(&[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=follow-seckill test CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ]);
        run(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ]);
        std::fs::write(
            dir.join("server.ext"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        run(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ]);
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for TestAuthority {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A `redis-server` that speaks TLS only, on a free port; killed when dropped.
struct TlsRedis {
    port: u16,
    child: Child,
}

impl TlsRedis {
    fn start(authority: &TestAuthority) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .unwrap()
            .port();
        let arg = |path: PathBuf| path.to_str().unwrap().to_owned();
        let child = Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--tls-port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .args(["--tls-cert-file", &arg(authority.path("server.pem"))])
            .args(["--tls-key-file", &arg(authority.path("server.key"))])
            .args(["--tls-ca-cert-file", &arg(authority.path("ca.pem"))])
            .args([
                "--tls-auth-clients",
                "no",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts (it is installed with the emulators)");
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server listens"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { port, child }
    }
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pem(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[tokio::test]
async fn the_cache_endpoint_is_tls_and_trusts_amazons_roots_only() {
    let authority = TestAuthority::new();
    let server = TlsRedis::start(&authority);

    // The same TLS path with the test authority as its roots: the handshake and the
    // certificate check work, and commands go through.
    let mut trusted = cloud::redis_tls("localhost", server.port, &pem(&authority.path("ca.pem")))
        .await
        .expect("a certificate of a trusted root is accepted");
    let pong: String = redis::cmd("PING").query_async(&mut trusted).await.unwrap();
    assert_eq!(pong, "PONG");

    // The template's endpoint: a certificate that does not chain to Amazon's roots is refused.
    let env = Env::from_pairs([(
        "REDIS_ENDPOINT",
        format!("localhost:{}", server.port).as_str(),
    )]);
    let endpoint = RedisEndpoint::from_env(&env).unwrap();
    assert_eq!(
        endpoint,
        RedisEndpoint::Cache {
            host: "localhost".to_owned(),
            port: server.port
        }
    );
    let refused = endpoint.connect().await.map(|_| ()).unwrap_err();
    let chain = format!("{:?}", anyhow::Error::from(refused));
    assert!(
        chain.contains("UnknownIssuer") || chain.to_lowercase().contains("certificate"),
        "{chain}"
    );
}

/// The local redis-server requires the password that `REDIS_URL` carries, as the cache requires
/// its AUTH token: a client without it runs no command, one with another password is refused.
#[tokio::test]
async fn a_connection_without_the_password_runs_no_command() {
    let url = std::env::var("REDIS_URL").expect("REDIS_URL points at redis-server");
    let (_, address) = url
        .strip_prefix("redis://")
        .and_then(|rest| rest.split_once('@'))
        .expect("REDIS_URL carries the emulator's password");

    for (who, url) in [
        ("no password", format!("redis://{address}")),
        (
            "another password",
            format!("redis://:not-the-password@{address}"),
        ),
    ] {
        let client = redis::Client::open(url).unwrap();
        let ping = async {
            let mut connection = client.get_multiplexed_async_connection().await?;
            redis::cmd("PING")
                .query_async::<String>(&mut connection)
                .await
        };
        let refused = ping.await.expect_err(who);
        let text = refused.to_string();
        // The server's NOAUTH or WRONGPASS, as the client words it.
        assert!(
            ["NOAUTH", "WRONGPASS", "uthentication", "password"]
                .iter()
                .any(|word| text.contains(word)),
            "{who}: {text}"
        );
    }

    let mut redis = cloud::redis(&url).await.expect("the password is accepted");
    let pong: String = redis::cmd("PING").query_async(&mut redis).await.unwrap();
    assert_eq!(pong, "PONG");
}

/// The cloud's way, against the emulators: a URL without a password and the ARN of the secret
/// holding it (`REDIS_AUTH_SECRET_ARN`); the cold start reads the token from Secrets Manager
/// and presents it.
#[tokio::test]
async fn the_auth_token_is_read_from_its_secret_at_cold_start() {
    let url = std::env::var("REDIS_URL").expect("REDIS_URL points at redis-server");
    let (userinfo, address) = url
        .strip_prefix("redis://")
        .and_then(|rest| rest.split_once('@'))
        .expect("REDIS_URL carries the emulator's password");
    let password = userinfo.trim_start_matches(':');
    let config = cloud::sdk_config().expect("the emulators' region and credentials");
    let secret = aws_sdk_secretsmanager::Client::new(&config)
        .create_secret()
        .name(format!("redis-auth-{}", uuid::Uuid::new_v4().simple()))
        .secret_string(password)
        .send()
        .await
        .expect("create the secret");
    let arn = secret.arn().expect("the secret's ARN");
    let without_password = format!("redis://{address}");
    let env = Env::from_pairs([
        ("REDIS_URL", without_password.as_str()),
        (cloud::REDIS_AUTH_SECRET_ARN, arn),
    ]);

    let mut redis = cloud::redis_from_env(&env)
        .await
        .expect("connects with the secret's token");

    let pong: String = redis::cmd("PING").query_async(&mut redis).await.unwrap();
    assert_eq!(pong, "PONG");
}
