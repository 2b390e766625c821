//! The flash-sale product's layout holds: one folder per concern, and the concerns in one
//! order, each using only those before it (`shared/src/seckill/mod.rs` lists them), so that
//! a change to a concern cannot reach back into what it builds on and the fakes, adapters and
//! routes of one concern are found beside its domain; and no hand-written file of code is
//! longer than a reader can take in as one concern.

use crate::support::root;
use std::collections::BTreeSet;
use std::path::Path;

fn seckill() -> std::path::PathBuf {
    root().join("shared/src/seckill")
}

/// The concerns in their order, as `mod.rs`'s numbered list names them (`1. [`sale`]: ...`).
fn concerns() -> Vec<String> {
    let doc = std::fs::read_to_string(seckill().join("mod.rs")).unwrap();
    doc.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("//! ")?;
            let (number, item) = rest.split_once(". [`")?;
            number.parse::<u32>().ok()?;
            Some(item.split_once("`]")?.0.to_owned())
        })
        .collect()
}

/// The seckill modules `source` names in code (comments left out: a doc may point anywhere).
fn named_concerns(source: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or_default();
        for (at, _) in code.match_indices("crate::seckill::") {
            let rest = &code[at + "crate::seckill::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            named.insert(name);
        }
    }
    named
}

fn rust_files(folder: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .collect();
    files.sort();
    files
}

#[test]
fn seckill_is_one_folder_per_concern_with_only_mod_and_keys_at_its_top() {
    let concerns = concerns();
    assert_eq!(
        concerns,
        [
            "sale",
            "reservation",
            "admission",
            "order",
            "payment",
            "office",
            "recovery"
        ]
    );
    let top: Vec<String> = rust_files(&seckill())
        .iter()
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(top, ["keys.rs", "mod.rs"]);
    for concern in &concerns {
        assert!(
            seckill().join(concern).join("mod.rs").is_file(),
            "{concern}"
        );
    }
    // The Lua scripts together, none left beside the Rust code.
    for entry in walk(&seckill()) {
        if entry.extension().is_some_and(|ext| ext == "lua") {
            assert_eq!(entry.parent().unwrap(), seckill().join("lua"), "{entry:?}");
        }
    }
}

#[test]
fn each_concern_of_seckill_uses_only_the_concerns_before_it() {
    let concerns = concerns();
    let mut checked = 0;
    for (position, concern) in concerns.iter().enumerate() {
        let later = &concerns[position + 1..];
        for file in rust_files(&seckill().join(concern)) {
            let source = std::fs::read_to_string(&file).unwrap();
            let reached: Vec<_> = named_concerns(&source)
                .into_iter()
                .filter(|name| later.contains(name))
                .collect();
            assert!(
                reached.is_empty(),
                "{} ({concern}) uses {reached:?}, which come after it",
                file.strip_prefix(root()).unwrap().display()
            );
            checked += 1;
        }
    }
    assert!(checked > 30, "{checked} files");
}

#[test]
fn the_layout_check_sees_a_concern_that_reaches_forward() {
    let source = "use crate::seckill::sale::Sale;\n// see crate::seckill::recovery\nfn f() { crate::seckill::payment::settle(); }";
    assert_eq!(
        named_concerns(source),
        BTreeSet::from(["sale".to_owned(), "payment".to_owned()])
    );
}

fn walk(folder: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}

/// Each function is deployed from a bundle (`functions/bundle-*`, one bootstrap per group of
/// functions, one release link each): its `Handler` names its own folder in `functions/`, and
/// the bundle its `Binary` names includes that folder's `main.rs` and runs it for that name,
/// and nothing the template does not deploy from it. A function left out of its bundle would
/// fail only when deployed; one in two bundles would be code shipped twice.
#[test]
fn each_function_runs_from_the_bundle_its_binary_names_under_its_handler() {
    let model = crate::support::project_model(&[]);
    let mut deployed: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    for function in &model.functions {
        assert!(
            function.binary.starts_with("bundle-"),
            "{}: Binary {} is not a bundle",
            function.logical_id,
            function.binary
        );
        let folder = root().join("functions").join(&function.handler);
        assert!(
            folder.join("src/main.rs").is_file() && !function.handler.starts_with("bundle-"),
            "{}: Handler {} is no function folder in functions/",
            function.logical_id,
            function.handler
        );
        deployed
            .entry(function.binary.clone())
            .or_default()
            .insert(function.handler.clone());
    }
    let mut bundles = BTreeSet::new();
    for entry in std::fs::read_dir(root().join("functions")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.starts_with("bundle-") {
            bundles.insert(name);
        }
    }
    assert_eq!(
        bundles,
        deployed.keys().cloned().collect::<BTreeSet<_>>(),
        "a bundle no function deploys, or a Binary with no bundle"
    );
    for (bundle, handlers) in &deployed {
        let main =
            std::fs::read_to_string(root().join("functions").join(bundle).join("src/main.rs"))
                .unwrap();
        let (included, dispatched) = bundle_parts(&main);
        assert_eq!(
            &included, handlers,
            "{bundle}: the folders its #[path]s include"
        );
        assert_eq!(
            &dispatched, handlers,
            "{bundle}: the names run_bundle dispatches"
        );
    }
}

/// The function folders a bundle's `main.rs` includes (`#[path = "../../NAME/src/main.rs"]`)
/// and the names it dispatches (`("NAME", module::main)`).
fn bundle_parts(main: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let included = main
        .lines()
        .filter_map(|line| line.trim().strip_prefix("#[path = \"../../"))
        .filter_map(|rest| rest.strip_suffix("/src/main.rs\"]"))
        .map(str::to_owned)
        .collect();
    let dispatched = main
        .split("(\"")
        .skip(1)
        .filter_map(|rest| {
            let (name, rest) = rest.split_once("\", ")?;
            let (module, _) = rest.split_once(')')?;
            (module == format!("{}::main", name.replace('-', "_"))).then(|| name.to_owned())
        })
        .collect();
    (included, dispatched)
}

#[test]
fn the_bundle_check_sees_a_function_dispatched_under_another_name() {
    let main = "#[path = \"../../follow/src/main.rs\"]\nmod follow;\nfn main() { run_bundle(&[\n    (\"unfollow\", follow::main),\n]) }";
    let (included, dispatched) = bundle_parts(main);
    assert_eq!(included, BTreeSet::from(["follow".to_owned()]));
    assert!(dispatched.is_empty(), "{dispatched:?}");
}

/// A function is its `main.rs` and nothing else: the logic is in `shared`, where its tests are.
/// `make test` leaves the functions out of the test run (`--exclude`, see the Makefile), since a
/// test harness per function is a debug link of the whole SDK each, 33 of them for no test; a
/// test written in a function would then never run.
#[test]
fn a_function_is_only_its_main_and_holds_no_test() {
    let mut functions = 0;
    for entry in std::fs::read_dir(root().join("functions")).unwrap() {
        let function = entry.unwrap().path();
        let files: Vec<_> = walk(&function)
            .into_iter()
            .map(|path| path.strip_prefix(&function).unwrap().to_path_buf())
            .filter(|path| !path.starts_with("target"))
            .collect();
        assert_eq!(
            files
                .iter()
                .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
                .count(),
            1,
            "{}: {files:?}",
            function.display()
        );
        let main = std::fs::read_to_string(function.join("src/main.rs")).unwrap();
        for test in ["#[test]", "#[tokio::test]", "cfg(test)"] {
            assert!(
                !main.contains(test),
                "{}/src/main.rs holds {test}: move it into shared",
                function.display()
            );
        }
        functions += 1;
    }
    assert!(functions > 30, "{functions} functions");
}

/// The most lines a hand-written file of code holds: past it, a file holds more than one
/// concern, and a reader looking for one has to read the others. A long file is split by
/// concern into a folder module, its tests beside what they test.
const MAX_LINES: usize = 800;

/// The extensions of code. The specifications (`template.yaml`, `openapi.yaml`) are as long
/// as what they specify, and the documents as what they explain: neither is code.
const CODE: [&str; 8] = ["rs", "sh", "py", "js", "ts", "html", "css", "toml"];

/// Generated files of code, which no one edits by hand and which may be longer: each with
/// what writes it. There are none: the sample events a test writes are JSON in `events/`.
const GENERATED: &[&str] = &[];

/// The files of `paths` (relative to the root) that are code and longer than [`MAX_LINES`],
/// the generated ones left out, with their lengths.
fn too_long(paths: &[(&str, usize)]) -> Vec<String> {
    paths
        .iter()
        .filter(|(path, _)| {
            Path::new(path)
                .extension()
                .is_some_and(|ext| CODE.iter().any(|code| ext == *code))
        })
        .filter(|(path, _)| !GENERATED.contains(path))
        .filter(|(_, lines)| *lines > MAX_LINES)
        .map(|(path, lines)| format!("{path}: {lines} lines"))
        .collect()
}

#[test]
fn no_hand_written_file_of_code_is_longer_than_the_limit() {
    let listed = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("git lists the tracked files");
    assert!(listed.status.success(), "git ls-files: {listed:?}");
    let names: Vec<String> = listed
        .stdout
        .split(|byte| *byte == 0)
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect();
    // A tracked file deleted in the work tree has no length to check.
    let lengths: Vec<(&str, usize)> = names
        .iter()
        .filter_map(|name| {
            let text = std::fs::read_to_string(root().join(name)).ok()?;
            Some((name.as_str(), text.lines().count()))
        })
        .collect();
    assert!(
        lengths.iter().any(|(name, _)| *name == "shared/src/lib.rs"),
        "the listing holds the code"
    );
    let long = too_long(&lengths);
    assert!(
        long.is_empty(),
        "split each by concern into a folder module: {long:#?}"
    );
    for generated in GENERATED {
        assert!(
            names.iter().any(|name| name == generated),
            "{generated} is no longer tracked: take it off GENERATED"
        );
    }
}

#[test]
fn the_line_limit_check_sees_long_code_only() {
    assert_eq!(
        too_long(&[
            ("shared/src/long.rs", MAX_LINES + 1),
            ("shared/src/full.rs", MAX_LINES),
            ("template.yaml", 5 * MAX_LINES),
            ("docs/guide.md", 2 * MAX_LINES),
            ("shop/page.js", 2 * MAX_LINES),
        ]),
        [
            format!("shared/src/long.rs: {} lines", MAX_LINES + 1),
            format!("shop/page.js: {} lines", 2 * MAX_LINES),
        ]
    );
}
