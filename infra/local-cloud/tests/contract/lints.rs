//! The workspace's lints reach every crate: a crate that does not opt in (a function added by
//! copying an old `Cargo.toml`) would take `unsafe`, `unwrap` and `#[allow]` unnoticed.

use crate::support::root;

#[test]
fn every_crate_of_the_workspace_takes_the_workspace_lints() {
    let workspace = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(workspace.contains("[workspace.lints.rust]\nunsafe_code = \"forbid\""));
    for lint in ["unwrap_used = \"warn\"", "allow_attributes = \"warn\""] {
        assert!(workspace.contains(lint), "{lint}");
    }
    let mut manifests = Vec::new();
    for folder in ["functions", "infra", "infra/local-cloud", "loadtest"] {
        for entry in std::fs::read_dir(root().join(folder)).unwrap() {
            let manifest = entry.unwrap().path().join("Cargo.toml");
            if manifest.is_file() {
                manifests.push(manifest);
            }
        }
    }
    manifests.push(root().join("shared/Cargo.toml"));
    assert!(manifests.len() > 40, "{} crates", manifests.len());
    for manifest in manifests {
        let text = std::fs::read_to_string(&manifest).unwrap();
        let own_table = manifest.ends_with("infra/local-cloud/Cargo.toml");
        if own_table {
            // The runner's own table: the same lints, `unsafe_code` denied (not forbidden) so
            // that its CPU-quota module can `#[expect]` it.
            assert!(text.contains("[lints.rust]\nunsafe_code = \"deny\""));
            assert!(
                text.contains(
                    "[lints.clippy]\nunwrap_used = \"warn\"\nallow_attributes = \"warn\""
                )
            );
        } else {
            assert!(
                text.contains("[lints]\nworkspace = true"),
                "{} does not take the workspace lints",
                manifest.display()
            );
        }
    }
}
