//! A headless Chromium for the browser tests, driven over WebDriver: Debian's `chromium` and
//! `chromium-driver`, which `infra/browser.sh` installs on first use (infra/run-with-emulators.sh
//! runs it). Without them a browser test fails saying so; it never skips.

use fantoccini::{Client, ClientBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// How long chromedriver may take to answer.
const DRIVER_START: Duration = Duration::from_secs(20);

/// A browser session and the chromedriver serving it. Call [`Browser::close`]: dropping it
/// kills chromedriver but may leave its Chromium behind.
pub struct Browser {
    pub client: Client,
    driver: Child,
    profile: PathBuf,
}

/// The program an environment variable names, or `name` on PATH.
fn program(variable: &str, name: &str) -> PathBuf {
    let found = match std::env::var_os(variable) {
        Some(path) => Some(PathBuf::from(path)).filter(|path| path.is_file()),
        None => std::env::var_os("PATH")
            .iter()
            .flat_map(std::env::split_paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file()),
    };
    found.unwrap_or_else(|| {
        panic!(
            "{name} is not installed: the browser tests need Debian's chromium and \
                 chromium-driver. Run infra/browser.sh (make test does, through \
                 infra/run-with-emulators.sh), or point {variable} at the program."
        )
    })
}

impl Browser {
    /// Starts chromedriver and a headless Chromium with a window of `width` x `height`, its
    /// profile under `state` (deleted on close).
    pub async fn start(state: &Path, width: u32, height: u32) -> Browser {
        let chromium = program("CHROMIUM", "chromium");
        let chromedriver = program("CHROMEDRIVER", "chromedriver");
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {}: {err}", chromedriver.display()));
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                started.elapsed() < DRIVER_START,
                "{} did not listen on port {port} within {DRIVER_START:?}",
                chromedriver.display()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = state.join(format!("chromium-{}", uuid::Uuid::new_v4().simple()));
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new",
                    // Root in a container has no user namespaces for Chromium's sandbox.
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--no-first-run",
                    "--hide-scrollbars",
                    format!("--window-size={width},{height}"),
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
        });
        let serde_json::Value::Object(capabilities) = capabilities else {
            unreachable!("an object")
        };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&url)
            .await
            .unwrap_or_else(|err| {
                panic!(
                    "chromedriver did not open a Chromium session ({}): {err}",
                    chromium.display()
                )
            });
        Browser {
            client,
            driver,
            profile,
        }
    }

    /// Ends the session (Chromium exits), stops chromedriver, deletes the profile.
    pub async fn close(mut self) {
        let _ = self.client.close().await;
        let _ = self.driver.start_kill();
        let _ = self.driver.wait().await;
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
