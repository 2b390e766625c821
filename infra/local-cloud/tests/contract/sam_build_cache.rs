//! The cache of whole `sam build` results (`infra/sam-build-cache.sh`): a fresh clone of a
//! commit already built on this machine copies its bootstraps instead of linking every function
//! again, and any change to what a function is compiled from builds again.
//!
//! The script runs for real, on a scratch git repository laid out like this one (a copy of
//! the script under infra/, a few of the files its key reads and a few it does not), with a
//! cache folder of its own.

use crate::support::{assert_succeeded, root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new() -> Self {
        let dir =
            std::env::temp_dir().join(format!("sam-build-cache-{}", uuid::Uuid::new_v4().simple()));
        for folder in [
            "infra",
            "shared/src",
            "shared/tests",
            "functions/follow/src",
            "docs",
        ] {
            std::fs::create_dir_all(dir.join(folder)).unwrap();
        }
        std::fs::copy(
            root().join("infra/sam-build-cache.sh"),
            dir.join("infra/sam-build-cache.sh"),
        )
        .unwrap();
        let scratch = Self { dir };
        for (path, text) in [
            ("Cargo.toml", "[workspace]\n"),
            ("Cargo.lock", "version = 4\n"),
            ("template.yaml", "Resources: {}\n"),
            ("shared/src/lib.rs", "pub fn answer() -> u32 { 42 }\n"),
            ("shared/tests/it.rs", "#[test] fn t() {}\n"),
            ("functions/follow/src/main.rs", "fn main() {}\n"),
            ("docs/guide.md", "# Guide\n"),
            ("README.md", "# Readme\n"),
        ] {
            scratch.write(path, text);
        }
        let git = |args: &[&str]| {
            assert_succeeded(
                &Command::new("git")
                    .args(args)
                    .current_dir(&scratch.dir)
                    .output()
                    .unwrap(),
            )
        };
        git(&["init", "-q"]);
        git(&["add", "."]);
        git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-qm",
            "scratch",
        ]);
        scratch
    }

    fn write(&self, path: &str, text: &str) {
        std::fs::write(self.dir.join(path), text).unwrap();
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("bash")
            .arg(self.dir.join("infra/sam-build-cache.sh"))
            .args(args)
            .env("SAM_BUILD_CACHE_DIR", self.dir.join(".cache"))
            .env_remove("CARGO_TARGET_DIR")
            .current_dir(&self.dir)
            .output()
            .unwrap()
    }

    fn key(&self) -> String {
        let output = self.run(&["key", "x86_64", "--tools", "rustc 1.95.0"]);
        assert_succeeded(&output);
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    }

    fn file(&self, path: &str) -> String {
        std::fs::read_to_string(self.dir.join(path)).unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn the_key_follows_what_a_function_is_compiled_from_and_nothing_else() {
    let scratch = Scratch::new();
    let first = scratch.key();
    assert_eq!(first.len(), 32, "a hex key: {first}");
    assert_eq!(scratch.key(), first, "the same inputs, the same key");

    scratch.write("docs/guide.md", "# Guide, rewritten\n");
    scratch.write("README.md", "# Readme, rewritten\n");
    scratch.write("shared/tests/it.rs", "#[test] fn t2() {}\n");
    assert_eq!(
        scratch.key(),
        first,
        "documents and shared's tests are not compiled into a function"
    );

    scratch.write("shared/src/lib.rs", "pub fn answer() -> u32 { 43 }\n");
    let changed = scratch.key();
    assert_ne!(changed, first, "a change to shared/ builds again");

    scratch.write("functions/follow/src/new.rs", "pub fn added() {}\n");
    assert_ne!(
        scratch.key(),
        changed,
        "a new file, not yet committed, is read too"
    );

    let other_tools = scratch.run(&["key", "x86_64", "--tools", "rustc 1.96.0"]);
    assert_succeeded(&other_tools);
    let other_arch = scratch.run(&["key", "arm64", "--tools", "rustc 1.95.0"]);
    assert_succeeded(&other_arch);
    let now = scratch.key();
    assert_ne!(
        String::from_utf8_lossy(&other_tools.stdout).trim(),
        now,
        "another compiler"
    );
    assert_ne!(
        String::from_utf8_lossy(&other_arch.stdout).trim(),
        now,
        "another architecture"
    );
}

#[test]
fn a_stored_build_is_restored_whole_and_only_the_newest_three_are_kept() {
    let scratch = Scratch::new();
    assert!(
        !scratch.run(&["restore", "nothing-here"]).status.success(),
        "a miss says so"
    );

    let built = |marker: &str| {
        let build = scratch.dir.join(".aws-sam/build");
        let _ = std::fs::remove_dir_all(&build);
        std::fs::create_dir_all(build.join("FollowFunction")).unwrap();
        scratch.write(".aws-sam/build/template.yaml", &format!("# {marker}\n"));
        scratch.write(".aws-sam/build/FollowFunction/bootstrap", marker);
    };
    for n in 1..=4 {
        built(&format!("build {n}"));
        assert_succeeded(&scratch.run(&["store", &format!("key{n}")]));
        // mtime order decides which entries are newest.
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    built("what the working copy had");
    assert_succeeded(&scratch.run(&["restore", "key2"]));
    assert_eq!(
        scratch.file(".aws-sam/build/FollowFunction/bootstrap"),
        "build 2"
    );
    assert_eq!(scratch.file(".aws-sam/build/template.yaml"), "# build 2\n");
    assert!(
        !scratch.run(&["restore", "key1"]).status.success(),
        "the oldest went"
    );
    for kept in ["key2", "key3", "key4"] {
        assert!(
            scratch
                .dir
                .join(".cache")
                .join(kept)
                .join("build/template.yaml")
                .is_file(),
            "{kept}"
        );
    }
}

#[test]
fn verify_names_a_repository_file_a_bootstrap_is_compiled_from_that_the_key_misses() {
    let scratch = Scratch::new();
    std::fs::create_dir_all(scratch.dir.join("assets")).unwrap();
    scratch.write("assets/page.html", "<p>\n");
    let release = scratch.dir.join("target/x86_64-unknown-linux-gnu/release");
    std::fs::create_dir_all(&release).unwrap();
    let depinfo = |deps: &[&Path]| {
        let deps: Vec<String> = deps.iter().map(|d| d.display().to_string()).collect();
        std::fs::write(
            release.join("follow.d"),
            format!("{}: {}\n", release.join("follow").display(), deps.join(" ")),
        )
        .unwrap();
    };
    let registry = Path::new("/registry/src/tokio-1.0.0/src/lib.rs");
    depinfo(&[
        &scratch.dir.join("functions/follow/src/main.rs"),
        &scratch.dir.join("shared/src/lib.rs"),
        &scratch.dir.join("shared/src/../../template.yaml"),
        registry,
    ]);
    let covered = scratch.run(&["verify", "x86_64", "follow"]);
    assert_succeeded(&covered);

    // As include_str!("../../assets/page.html") in shared/src/lib.rs names it.
    depinfo(&[
        &scratch.dir.join("shared/src/lib.rs"),
        &scratch.dir.join("shared/src/../../assets/page.html"),
    ]);
    let missed = scratch.run(&["verify", "x86_64", "follow"]);
    assert!(
        !missed.status.success(),
        "an include_str! of a file outside the key fails the build"
    );
    let stderr = String::from_utf8_lossy(&missed.stderr);
    assert!(
        stderr.contains("assets/page.html"),
        "names the file: {stderr}"
    );
}
