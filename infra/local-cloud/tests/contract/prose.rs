//! A count of functions or routes written in prose (the README, docs/, infra/, the Makefile,
//! the code's comments) is the template's: a count that drifted from it is a wrong statement.
//! The load test's dated results keep the counts of the run they describe, and are left out.

use crate::support::{project_model, root};
use local_cloud::model::EventSpec;
use std::path::{Path, PathBuf};

/// The files whose prose is checked: documents, scripts and the code of the product and the
/// runner.
fn prose_files() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![
        root.join("README.md"),
        root.join("Makefile"),
        root.join("Cargo.toml"),
        root.join("template.yaml"),
    ];
    for folder in ["docs", "infra", "shared/src", "functions"] {
        collect(&root.join(folder), &mut files);
    }
    files
}

fn collect(folder: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if !["target", "node_modules", ".venv"].contains(&name.as_str()) {
                collect(&path, files);
            }
        } else if ["md", "rs", "sh", "yaml", "toml"]
            .iter()
            .any(|ext| name.ends_with(&format!(".{ext}")))
        {
            files.push(path);
        }
    }
}

/// Every "N functions", "N Lambda functions", "N routes" and "N HTTP routes" of `text`, with
/// its line number and the noun.
fn counts(text: &str) -> Vec<(usize, u64, &'static str)> {
    let mut found = Vec::new();
    for (number, line) in text.lines().enumerate() {
        // Words between white space: a path (`/2015-03-31/functions/...`) is one word, and a
        // count is digits alone (after an opening parenthesis), its noun the next word (before
        // closing punctuation), so that code (`30, "{functions} functions"`) is no count.
        let words: Vec<&str> = line.split_whitespace().collect();
        for (at, word) in words.iter().enumerate() {
            let digits = word.strip_prefix('(').unwrap_or(word);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let Ok(count) = digits.parse::<u64>() else {
                continue;
            };
            let word_at = |i: usize| {
                words
                    .get(i)
                    .map_or("", |w| w.trim_end_matches(['.', ',', ';', ':', ')']))
            };
            let noun = match word_at(at + 1) {
                "Lambda" | "HTTP" => word_at(at + 2),
                other => other,
            };
            match noun {
                "functions" => found.push((number + 1, count, "functions")),
                "routes" => found.push((number + 1, count, "routes")),
                _ => {}
            }
        }
    }
    found
}

#[test]
fn every_count_of_functions_or_routes_in_prose_is_the_templates() {
    let model = project_model(&[]);
    let functions = model.functions.len() as u64;
    let routes = (model.functions.iter())
        .flat_map(|function| &function.events)
        .filter(|event| matches!(event, EventSpec::Http(_)))
        .count() as u64;
    let root = root();
    let mut wrong = Vec::new();
    for file in prose_files() {
        // This file's own examples.
        if file.ends_with("tests/contract/prose.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (line, count, noun) in counts(&text) {
            let expected = if noun == "functions" {
                functions
            } else {
                routes
            };
            if count != expected {
                let shown = file.strip_prefix(&root).unwrap_or(&file).display();
                wrong.push(format!(
                    "{shown}:{line}: {count} {noun}, the template has {expected}"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "counts that drifted:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_counts_are_read_from_the_phrases_that_state_them() {
    let text = "builds the 36 functions\nof (29 HTTP routes, 3 Lambda functions; 4 units\n\
                POST /2015-03-31/functions/{name}/invocations\n\
                assert!(n > 30, \"{functions} functions\"); ($((n / 2)) functions at once)\n";
    assert_eq!(
        counts(text),
        [(1, 36, "functions"), (2, 29, "routes"), (2, 3, "functions")]
    );
}
