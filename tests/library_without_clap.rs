//! The library without the command line: with the `cli` feature off (`--no-default-features`), clap is
//! nowhere in the library's dependency tree, and the library builds. As cargo's own library: the flags
//! (`cli`) and what each command prints (`commands`) are the binary's.

use std::process::Command;

/// `cargo tree` of the exectl package's normal dependencies, package names only.
fn tree(features: &[&str]) -> Vec<String> {
    let out = Command::new(env!("CARGO"))
        .args(["tree", "-p", "exectl", "-e", "normal", "--prefix", "none"])
        .args(["--offline", "--locked", "--format", "{p}"])
        .args(features)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let tree = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && tree.starts_with("exectl "),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    tree.lines()
        .filter_map(|l| l.split(' ').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn clap_is_in_the_binarys_tree_only() {
    let without = tree(&["--no-default-features"]);
    assert!(
        !without.iter().any(|p| p == "clap" || p == "clap_builder"),
        "clap in the library without the cli feature: {without:?}"
    );
    // The check reads what it thinks it reads: the library's own crates are there, and clap with the
    // feature on.
    assert!(without.iter().any(|p| p == "bollard"), "{without:?}");
    assert!(tree(&[]).iter().any(|p| p == "clap"));
}

#[test]
fn the_library_builds_without_the_cli_feature() {
    // In the suite's own target folder: every dependency is built already (the same profile and
    // features), so only the library is compiled again, to a file of its own (another feature set).
    let out = Command::new(env!("CARGO"))
        .args(["build", "--lib", "-p", "exectl", "--no-default-features"])
        .args(["--offline", "--locked", "--quiet"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo build --lib --no-default-features: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
