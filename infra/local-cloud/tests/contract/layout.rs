//! The flash-sale product's layout holds: one folder per concern, and the concerns in one
//! order, each using only those before it (`shared/src/seckill/mod.rs` lists them), so that
//! a change to a concern cannot reach back into what it builds on and the fakes, adapters and
//! routes of one concern are found beside its domain.

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
