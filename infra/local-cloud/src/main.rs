//! `local-cloud`: run the SAM template locally, or mint a local token.

use anyhow::Context;
use clap::{Parser, Subcommand};
use local_cloud::cloud::{self, CloudOptions, LocalCloud};
use local_cloud::faults::FaultPlan;
use local_cloud::{check, jwt, replay};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Parser)]
#[command(version, about = "A local cloud for a SAM template, without Docker")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Provision the template's tables and queues in the emulators, run every function and
    /// serve the HTTP API until Ctrl-C.
    Up {
        #[command(flatten)]
        stack: StackArgs,
        /// Where the HTTP API listens. Off loopback only with LOCAL_JWT_SECRET set to a
        /// secret of one's own: the default is public.
        #[arg(long, env = "LOCAL_CLOUD_ADDRESS", default_value = "127.0.0.1:3000")]
        address: SocketAddr,
        /// Instances per function (capped by ReservedConcurrentExecutions).
        #[arg(long, env = "LOCAL_CLOUD_INSTANCES", default_value_t = 2)]
        instances: u32,
        /// Where the built function binaries are.
        #[arg(long, default_value = "target/debug")]
        binaries_dir: PathBuf,
        /// Do not print a line per invocation.
        #[arg(long)]
        quiet: bool,
        /// Do not run this function's event sources (repeatable): its queue only fills.
        #[arg(long = "disable-sources", value_name = "FUNCTION")]
        disabled_sources: Vec<String>,
        /// Inject a fault on purpose (repeatable): FUNCTION:dynamodb.writes:delay=500ms,
        /// FUNCTION:sqs.SendMessage:fail=1, FUNCTION:dynamodb:fail=0.2, FUNCTION:crash=0.2,
        /// FUNCTION:timeout=1s, FUNCTION:proxy (count its writes). See docs/local-development.md.
        #[arg(long = "fault", value_name = "SWITCH")]
        faults: Vec<String>,
        /// Deliver every SQS batch twice, the second time in another order.
        #[arg(long)]
        sqs_duplicate: bool,
        /// Enforce the template's route throttling (429 `{"message":"Too Many Requests"}`),
        /// as API Gateway does: `on`; `off` lifts it for a load test that needs more than
        /// the template allows.
        #[arg(
            long,
            env = "LOCAL_CLOUD_ROUTE_THROTTLING",
            value_name = "on|off",
            default_value = "on",
            action = clap::ArgAction::Set,
            value_parser = parse_switch
        )]
        route_throttling: bool,
        /// Give each function instance Lambda's CPU share for its MemorySize (1769 MB = one
        /// vCPU, 128 MB = 0.072), so that durations read like Lambda's: a cgroup per process
        /// (cgroup v1 cpu or v2 cpu.max; needs root). Off by default.
        #[arg(long)]
        lambda_cpu: bool,
        /// The CFS period of --lambda-cpu. Lambda does not publish its own: 20 ms is an
        /// assumption.
        #[arg(long, value_name = "MS", default_value_t = 20, requires = "lambda_cpu")]
        lambda_cpu_period_ms: u64,
    },
    /// Only create the template's tables and queues, e.g. in LocalStack for
    /// `sam local start-api`, and optionally write its `--env-vars` file.
    Provision {
        #[command(flatten)]
        stack: StackArgs,
        /// Write the `sam local start-api --env-vars` file here.
        #[arg(long)]
        sam_env_vars: Option<PathBuf>,
        /// The endpoint as function containers reach it.
        #[arg(long, default_value = "http://localstack:4566")]
        container_endpoint: String,
        /// The Redis URL as function containers reach it (the LocalStack profile's Redis, with
        /// its password, infra/localstack/compose.yaml).
        #[arg(long, default_value = "redis://:local-redis-password@redis:6379")]
        container_redis_url: String,
    },
    /// Move every message of a queue's dead-letter queue (its RedrivePolicy's) back to it.
    DlqReplay {
        #[command(flatten)]
        stack: StackArgs,
        /// The queue's logical id in the template, e.g. NotificationQueue.
        #[arg(long)]
        queue: String,
    },
    /// Add the index keys that commerce items written before an index existed lack (sales:
    /// the back office's and the live sales' keys; orders: the per-sale keys of the figures),
    /// a page at a time, printing each page's cursor; resumable with --start. Safe to repeat.
    BackfillIndexes {
        #[command(flatten)]
        stack: StackArgs,
        /// The commerce table's name; by default the stack's `CommerceTable` as the runner
        /// names it (for a deployed stack, pass its physical id).
        #[arg(long)]
        table_name: Option<String>,
        /// Where to resume: the cursor a previous run printed.
        #[arg(long)]
        start: Option<String>,
        /// Items read per page (the Scan's `Limit`).
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(i32).range(1..=1000))]
        page_size: i32,
    },
    /// Start every function from --binaries-dir and have each answer one invocation: a
    /// request through the local API for a function with a route, the smallest event of its
    /// source for the others. Exits non-zero unless every function answered.
    Check {
        #[command(flatten)]
        stack: StackArgs,
        /// Where the function binaries are, one file per `Binary` name.
        #[arg(long)]
        binaries_dir: PathBuf,
    },
    /// Forward bytes between TCP ports and Unix sockets until stopped, each LISTEN=TO (e.g.
    /// `unix:/run/aws.sock=tcp:127.0.0.1:4566` on the host and
    /// `tcp:0.0.0.0:4566=unix:/run/aws.sock` in a container): how `sam local`'s containers
    /// reach emulators that listen on the host's loopback only.
    Forward {
        #[arg(required = true, value_name = "LISTEN=TO")]
        forwards: Vec<local_cloud::forward::Forward>,
    },
    /// Write the shop's pages as they are uploaded to OUT: every file of --pages but the
    /// sources (`_layout/`, `templates/`), each page with its layout included (what
    /// infra/deploy-pages.sh syncs to the stack's bucket, and the runner serves).
    Pages {
        /// The pages' sources.
        #[arg(long, default_value = "shop")]
        pages: PathBuf,
        /// Where to write them (created if need be).
        #[arg(long)]
        out: PathBuf,
    },
    /// Print a token that the local HTTP API accepts.
    Token {
        #[arg(long)]
        sub: String,
        /// Comma-separated groups, e.g. admin.
        #[arg(long, default_value = "")]
        groups: String,
        #[arg(long, default_value_t = 3600)]
        ttl_seconds: u64,
    },
}

/// Which template, under which local stack name, in which account.
#[derive(clap::Args)]
struct StackArgs {
    #[arg(long, default_value = "template.yaml")]
    template: PathBuf,
    #[arg(long, default_value = "local")]
    stack_name: String,
    /// Template parameters, as NAME=VALUE.
    #[arg(long = "parameter", value_parser = parse_pair)]
    parameters: Vec<(String, String)>,
    /// The account id the emulator answers for (moto: 123456789012, LocalStack: 000000000000).
    #[arg(long, env = "LOCAL_CLOUD_ACCOUNT_ID", default_value = cloud::DEFAULT_ACCOUNT_ID)]
    account_id: String,
}

impl StackArgs {
    fn options(
        self,
        address: SocketAddr,
        instances: u32,
        binaries_dir: PathBuf,
        quiet: bool,
    ) -> CloudOptions {
        CloudOptions {
            template: self.template,
            parameter_overrides: self.parameters.into_iter().collect::<BTreeMap<_, _>>(),
            stack_name: self.stack_name,
            address,
            instances: instances.max(1),
            binaries_dir,
            jwt_secret: jwt::secret_from_env(),
            log_invocations: !quiet,
            account_id: self.account_id,
            function_env: cloud::function_env_from_process(),
            disabled_sources: Vec::new(),
            faults: FaultPlan::default(),
            route_throttling: true,
            lambda_cpu: None,
            trust_forwarded_for: false,
        }
    }
}

fn parse_pair(raw: &str) -> Result<(String, String), String> {
    raw.split_once('=')
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .ok_or_else(|| format!("expected NAME=VALUE, got {raw:?}"))
}

fn parse_switch(raw: &str) -> Result<bool, String> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "1" => Ok(true),
        "off" | "false" | "0" => Ok(false),
        _ => Err(format!("expected on or off, got {raw:?}")),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("LOCAL_CLOUD_LOG")
                .unwrap_or_else(|_| "warn,local_cloud=info".into()),
        )
        .with_target(false)
        .init();
    match Cli::parse().command {
        Command::Token {
            sub,
            groups,
            ttl_seconds,
        } => {
            let groups: Vec<String> = groups
                .split(',')
                .map(str::trim)
                .filter(|g| !g.is_empty())
                .map(str::to_owned)
                .collect();
            let token = jwt::local_token(
                &jwt::secret_from_env(),
                &sub,
                &groups,
                Duration::from_secs(ttl_seconds),
            )?;
            println!("{token}");
            Ok(())
        }
        Command::Provision {
            stack,
            sam_env_vars,
            container_endpoint,
            container_redis_url,
        } => {
            let options = stack.options("127.0.0.1:0".parse()?, 1, PathBuf::new(), true);
            let (model, _) = cloud::provision(&options).await?;
            println!(
                "provisioned {} tables and {} queues",
                model.tables.len(),
                model.queues.len()
            );
            if let Some(path) = sam_env_vars {
                let host = options
                    .function_env
                    .get("AWS_ENDPOINT_URL")
                    .cloned()
                    .unwrap_or_default();
                let file =
                    cloud::sam_env_vars(&model, &host, &container_endpoint, &container_redis_url);
                std::fs::write(&path, serde_json::to_string_pretty(&file)?)?;
                println!("wrote {}", path.display());
            }
            Ok(())
        }
        Command::Pages { pages, out } => {
            let count = local_cloud::layout::write_site(&pages, &out)?;
            println!(
                "{count} files of {} written to {}",
                pages.display(),
                out.display()
            );
            Ok(())
        }
        Command::Forward { forwards } => {
            let bound = local_cloud::forward::bind(&forwards).await?;
            for forward in &forwards {
                println!("forwarding {} to {}", forward.listen, forward.to);
            }
            tokio::select! {
                () = bound.run() => {}
                result = shutdown_signal() => result?,
            }
            Ok(())
        }
        Command::BackfillIndexes {
            stack,
            table_name,
            start,
            page_size,
        } => {
            let options = stack.options("127.0.0.1:0".parse()?, 1, PathBuf::new(), true);
            let (model, region) = cloud::load_model(&options)?;
            let table_name = match table_name {
                Some(name) => name,
                None => model
                    .table("CommerceTable")
                    .context("the template has no CommerceTable")?
                    .name
                    .clone(),
            };
            let mut start = start
                .map(|raw| {
                    app::cursor::Cursor::parse(&raw).map_err(|_| {
                        anyhow::anyhow!("--start is not a cursor this command printed")
                    })
                })
                .transpose()?;
            let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
                .region(aws_config::Region::new(region))
                .load()
                .await;
            let table = app::dynamo::Table::new(aws_sdk_dynamodb::Client::new(&sdk), &table_name);
            println!("backfilling the index keys of {table_name}, {page_size} items a page");
            let (mut pages, mut scanned, mut sales_listed, mut sales_live, mut orders) =
                (0u64, 0u64, 0u64, 0u64, 0u64);
            loop {
                let page = app::seckill::recovery::backfill::backfill_page(
                    &table,
                    start.as_ref(),
                    page_size,
                )
                .await
                .with_context(|| match &start {
                    Some(cursor) => format!("resume with --start {}", cursor.encode()),
                    None => "run it again".to_owned(),
                })?;
                pages += 1;
                scanned += page.scanned;
                sales_listed += page.sales_listed;
                sales_live += page.sales_made_live;
                orders += page.orders_indexed;
                match &page.next {
                    Some(next) => println!(
                        "  page {pages}: {scanned} items read, {} lacked a key; next: --start {}",
                        page.lacking,
                        next.encode()
                    ),
                    None => println!(
                        "  page {pages}: {scanned} items read, {} lacked a key",
                        page.lacking
                    ),
                }
                match page.next {
                    Some(next) => start = Some(next),
                    None => break,
                }
            }
            println!(
                "done: {scanned} items read in {pages} pages; keys added to {sales_listed} sales \
                 (all sales), {sales_live} sales (live sales), {orders} orders (per sale)"
            );
            Ok(())
        }
        Command::DlqReplay { stack, queue } => {
            let options = stack.options("127.0.0.1:0".parse()?, 1, PathBuf::new(), true);
            let (model, region) = cloud::load_model(&options)?;
            let (queue, dlq) = replay::queue_and_dlq(&model, &queue)?;
            let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
                .region(aws_config::Region::new(region))
                .load()
                .await;
            let sqs = aws_sdk_sqs::Client::new(&sdk);
            println!("replaying {} into {}", dlq.name, queue.name);
            let moved = replay::move_messages(&sqs, &dlq.url, &queue.url, |moved| {
                println!("  moved {moved} messages so far");
            })
            .await?;
            println!("moved {moved} messages from {} to {}", dlq.name, queue.name);
            Ok(())
        }
        Command::Check {
            stack,
            binaries_dir,
        } => {
            let mut options = stack.options("127.0.0.1:0".parse()?, 1, binaries_dir, false);
            // Nothing but the check invokes them: no event source runs.
            let (model, _) = cloud::load_model(&options)?;
            options.disabled_sources = model.functions.into_iter().map(|f| f.name).collect();
            let token = jwt::local_token(
                &options.jwt_secret,
                "sam-check",
                &["admin".to_owned()],
                Duration::from_secs(600),
            )?;
            let cloud = LocalCloud::start(options).await?;
            println!(
                "{} functions started on http://{}",
                cloud.model.functions.len(),
                cloud.address
            );
            let outcomes = check::every_function(&cloud, &token).await;
            cloud.stop().await;
            let mut failed = 0;
            for outcome in &outcomes {
                let (mark, summary) = match &outcome.result {
                    Ok(summary) => ("ok  ", summary.clone()),
                    Err(why) => {
                        failed += 1;
                        ("FAIL", why.clone())
                    }
                };
                println!(
                    "{mark} {} ({} {}): {} -> {summary} in {} ms",
                    outcome.logical_id,
                    outcome.binary,
                    outcome.handler,
                    outcome.sent,
                    outcome.elapsed.as_millis()
                );
            }
            anyhow::ensure!(
                failed == 0,
                "{failed} of {} functions did not answer",
                outcomes.len()
            );
            println!("every one of the {} functions answered", outcomes.len());
            Ok(())
        }
        Command::Up {
            stack,
            address,
            instances,
            binaries_dir,
            quiet,
            disabled_sources,
            faults,
            sqs_duplicate,
            route_throttling,
            lambda_cpu,
            lambda_cpu_period_ms,
        } => {
            let mut options = stack.options(address, instances, binaries_dir, quiet);
            options.disabled_sources = disabled_sources;
            options.route_throttling = route_throttling;
            if lambda_cpu {
                options.lambda_cpu = Some(Duration::from_millis(lambda_cpu_period_ms));
                println!(
                    "Lambda's CPU share per MemorySize: {lambda_cpu_period_ms} ms CFS period, \
                     1769 MB = one vCPU"
                );
            }
            if !route_throttling {
                println!(
                    "route throttling lifted: the template's route limits and per-source \
                     limits are not enforced"
                );
            }
            for switch in &faults {
                options.faults.add(switch)?;
            }
            options.faults.sqs_duplicate = sqs_duplicate;
            if !faults.is_empty() || sqs_duplicate {
                println!("fault switches on: {faults:?} sqs-duplicate={sqs_duplicate}");
            }
            let cloud = LocalCloud::start(options).await?;
            let functions = cloud.model.functions.len();
            println!("{functions} functions running; Ctrl-C stops everything");
            println!("local cloud ready on http://{}", cloud.address);
            println!(
                "live dashboard on http://{}/_local/dashboard",
                cloud.address
            );
            if cloud
                .model
                .bucket(local_cloud::pages::PAGES_BUCKET)
                .is_some()
            {
                println!("shop pages on http://{}/shop/", cloud.address);
            }
            shutdown_signal().await?;
            println!("stopping");
            cloud.stop().await;
            Ok(())
        }
    }
}

/// Ctrl-C, or the SIGTERM that a supervisor sends.
async fn shutdown_signal() -> anyhow::Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result?,
        _ = terminate.recv() => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route_throttling(args: &[&str]) -> Result<bool, clap::Error> {
        let cli = Cli::try_parse_from(["local-cloud", "up"].iter().chain(args))?;
        match cli.command {
            Command::Up {
                route_throttling, ..
            } => Ok(route_throttling),
            _ => unreachable!("an up command"),
        }
    }

    fn lambda_cpu(args: &[&str]) -> Result<(bool, u64), clap::Error> {
        let cli = Cli::try_parse_from(["local-cloud", "up"].iter().chain(args))?;
        match cli.command {
            Command::Up {
                lambda_cpu,
                lambda_cpu_period_ms,
                ..
            } => Ok((lambda_cpu, lambda_cpu_period_ms)),
            _ => unreachable!("an up command"),
        }
    }

    #[test]
    fn lambda_cpu_is_off_unless_asked_for() {
        assert_eq!(lambda_cpu(&[]).unwrap(), (false, 20));
        assert_eq!(lambda_cpu(&["--lambda-cpu"]).unwrap(), (true, 20));
        assert_eq!(
            lambda_cpu(&["--lambda-cpu", "--lambda-cpu-period-ms", "100"]).unwrap(),
            (true, 100)
        );
        // A period alone would be silently ignored: refused instead.
        assert!(lambda_cpu(&["--lambda-cpu-period-ms", "100"]).is_err());
    }

    #[test]
    fn route_throttling_is_on_unless_lifted() {
        // Whatever the environment of the test run says, an explicit value wins.
        assert!(route_throttling(&["--route-throttling", "on"]).unwrap());
        assert!(!route_throttling(&["--route-throttling", "off"]).unwrap());
        assert!(!route_throttling(&["--route-throttling=OFF", "--quiet"]).unwrap());
        assert!(route_throttling(&["--route-throttling", "maybe"]).is_err());
        if std::env::var_os("LOCAL_CLOUD_ROUTE_THROTTLING").is_none() {
            assert!(route_throttling(&[]).unwrap());
        }
    }
}
