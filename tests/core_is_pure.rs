//! The pure core (the `exectl-core` crate, `core/`) does no I/O: its dependency tree holds no async
//! runtime, engine, HTTP or SSH crate (the compiler then refuses any use of them), and no file of it names
//! std's I/O modules (which the compiler cannot refuse). Read as text, so a new import fails here.

use std::path::{Path, PathBuf};

/// What the core may not name: I/O crates (also kept out of its Cargo.toml) and std's I/O modules.
const FORBIDDEN: [&str; 10] = [
    "tokio",
    "bollard",
    "reqwest",
    "ssh2",
    "tokio_tungstenite",
    "hyper",
    "std::fs",
    "std::net",
    "std::process",
    "std::env",
];

/// Crates that do I/O: none may be in the core's normal dependency tree.
const NOT_IN_THE_TREE: [&str; 6] = ["tokio", "bollard", "reqwest", "ssh2", "hyper", "mio"];

#[test]
fn the_core_crate_depends_on_no_io_crate() {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "tree",
            "-p",
            "exectl-core",
            "-e",
            "normal",
            "--prefix",
            "none",
        ])
        .args(["--offline", "--locked", "--format", "{p}"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && tree.starts_with("exectl-core"),
        "cargo tree: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found: Vec<&str> = tree
        .lines()
        .filter(|l| NOT_IN_THE_TREE.contains(&l.split(' ').next().unwrap_or("")))
        .collect();
    assert!(
        found.is_empty(),
        "the core's dependencies do I/O: {found:?}"
    );
    // The check reads what it thinks it reads: the core's own serde is there.
    assert!(tree.lines().any(|l| l.starts_with("serde ")), "{tree}");
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `needle` as a path segment start: `tokio::` or `use tokio`, not `tokio_` inside another name.
fn names(line: &str, needle: &str) -> bool {
    line.match_indices(needle).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + needle.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn the_core_names_no_io_and_no_shell_module() {
    let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("core/src");
    let mut files = Vec::new();
    rust_files(&core, &mut files);
    assert!(!files.is_empty());
    let mut found = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for needle in FORBIDDEN {
                if names(code, needle) {
                    found.push(format!(
                        "{}:{}: {needle}: {}",
                        f.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the core must stay pure:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_finds_what_it_looks_for() {
    assert!(names("use tokio::time;", "tokio"));
    assert!(names("    let x = std::fs::read(p);", "std::fs"));
    assert!(!names("use tokio_like::x;", "tokio"));
    assert!(!names("let mytokio = 1;", "tokio"));
}
