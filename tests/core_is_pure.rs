//! The pure core does no I/O: no file under src/core/ names an effectful crate or std module, or one of
//! exectl's shell modules. Read as text, so a new import fails here before anyone has to notice it.

use std::path::{Path, PathBuf};

/// What the core may not name: I/O crates, std's I/O modules, and exectl's own shell.
const FORBIDDEN: [&str; 23] = [
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
    "crate::engine",
    "crate::sut",
    "crate::commands",
    "crate::status",
    "crate::doctor",
    "crate::host",
    "crate::load",
    "crate::prepare",
    "crate::validate",
    "crate::shell",
    "crate::app",
    "crate::secrets",
    "crate::runs",
];

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
    let core = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/core");
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
    assert!(names("use crate::engine::desired;", "crate::engine"));
    assert!(!names("use tokio_like::x;", "tokio"));
    assert!(!names("let mytokio = 1;", "tokio"));
}
