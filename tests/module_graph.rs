//! The layers point one way: each top-level module of src/ uses only the layers below its own, in the
//! order ARCHITECTURE.md draws them (read from that file); no cycle between them, nor between the
//! modules of `src/ops`, `src/engine` and the core's `bench` and `doctor`, read from who names whom
//! (`crate::x`, `super::x`, outside test modules); and the state folder's layout is spelled in `state`
//! only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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

/// Each top-level module of src/ (a file, or a folder and everything in it) → its code, without the
/// test modules (what the module itself depends on).
fn modules() -> BTreeMap<String, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut code: BTreeMap<String, String> = BTreeMap::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        if ["lib", "main"].contains(&name.as_str()) {
            continue;
        }
        let mut files = Vec::new();
        if p.is_dir() {
            rust_files(&p, &mut files);
        } else if p.extension().is_some_and(|x| x == "rs") {
            files.push(p);
        }
        for f in files {
            let text = std::fs::read_to_string(f).unwrap();
            let body = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
            code.entry(name.clone()).or_default().push_str(&body);
        }
    }
    code
}

fn graph(code: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    code.iter()
        .map(|(module, text)| {
            let named = text
                .match_indices("crate::")
                .map(|(at, _)| {
                    text[at + 7..]
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect::<String>()
                })
                .filter(|w| w != module && code.contains_key(w))
                .collect();
            (module.clone(), named)
        })
        .collect()
}

/// Each module of `core/src/<dir>` (a file, or a folder with its files as one) → the sibling modules it names.
fn core_graph(dir: &str) -> BTreeMap<String, BTreeSet<String>> {
    folder_graph("core/src", dir)
}

/// Each module of `<src>/<dir>` (a file, or a folder with its files as one) → the sibling modules it
/// names (`super::x`, `crate::<dir>::x`, outside test modules).
fn folder_graph(src: &str, dir: &str) -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(src).join(dir);
    let mut sources: Vec<(String, String)> = Vec::new();
    for e in std::fs::read_dir(&root).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            for f in std::fs::read_dir(&p).unwrap() {
                let f = f.unwrap().path();
                if f.extension().is_some_and(|x| x == "rs") {
                    sources.push((name.clone(), std::fs::read_to_string(f).unwrap()));
                }
            }
        } else if p.extension().is_some_and(|x| x == "rs")
            && name != "mod"
            && !name.ends_with("_tests")
        {
            sources.push((name, std::fs::read_to_string(&p).unwrap()));
        }
    }
    let names: BTreeSet<String> = sources.iter().map(|(n, _)| n.clone()).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in sources {
        // The code before the test module: what the module itself depends on.
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let edges = g.entry(module.clone()).or_default();
        for prefix in ["super::super::", "super::", &format!("crate::{dir}::")] {
            for (at, _) in code.match_indices(prefix) {
                let rest = &code[at + prefix.len()..];
                let word: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if names.contains(&word) && word != module {
                    edges.insert(word);
                }
            }
        }
    }
    g
}

/// A cycle of `g`, when it has one.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        n: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut c = path[i..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if !done.insert(n.to_string()) {
            return None;
        }
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(g, m, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(g, n, &mut Vec::new(), &mut done))
}

#[test]
fn the_top_level_modules_depend_on_each_other_one_way() {
    let g = graph(&modules());
    assert!(g.len() > 10 && g["commands"].contains("ops"), "{g:?}");
    assert_eq!(
        cycle(&g),
        None,
        "a cycle between top-level modules; the graph: {g:#?}"
    );
    // Nothing below the command line sees clap.
    for (module, text) in modules() {
        if !["cli", "commands"].contains(&module.as_str()) {
            assert!(
                !text.contains("clap::") && !text.contains("crate::cli"),
                "{module} sees clap"
            );
        }
    }
}

/// ARCHITECTURE.md's layers, top first: the modules named at the start of each line of its layers
/// block (`cli/`, `error.rs`; `main.rs` and the core left out).
fn documented_layers() -> Vec<Vec<String>> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .unwrap();
    let after = doc.split("## Layers").nth(1).expect("a Layers section");
    let block = after.split("```").nth(1).expect("its diagram");
    block
        .lines()
        .map(|line| {
            line.trim_start_matches(|c: char| c.is_whitespace())
                .trim_start_matches("main.rs →")
                .split_whitespace()
                .take_while(|w| w.ends_with('/') || w.ends_with(".rs"))
                .map(|w| w.trim_end_matches('/').trim_end_matches(".rs").to_string())
                .collect::<Vec<_>>()
        })
        .filter(|names| !names.is_empty())
        .collect()
}

/// The edges of `g` that do not point to a lower layer (or that name a module no layer holds).
fn against_the_layers(
    g: &BTreeMap<String, BTreeSet<String>>,
    layers: &[Vec<String>],
) -> Vec<String> {
    let layer = |m: &str| layers.iter().position(|l| l.iter().any(|n| n == m));
    let mut wrong = Vec::new();
    for (from, tos) in g {
        let Some(a) = layer(from) else {
            wrong.push(format!("{from} is in no layer of ARCHITECTURE.md"));
            continue;
        };
        for to in tos {
            match layer(to) {
                Some(b) if b > a => {}
                Some(_) => wrong.push(format!("{from} uses {to}, which is not below it")),
                None => wrong.push(format!("{to} is in no layer of ARCHITECTURE.md")),
            }
        }
    }
    wrong
}

#[test]
fn each_module_uses_only_the_layers_below_it_as_architecture_md_draws_them() {
    let layers = documented_layers();
    assert!(
        layers.len() > 5 && layers[0].contains(&"commands".to_string()),
        "{layers:?}"
    );
    let g = graph(&modules());
    let wrong = against_the_layers(&g, &layers);
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's layers do not hold: {wrong:#?}\nlayers: {layers:?}"
    );
}

#[test]
fn the_layer_check_finds_an_upward_use_and_an_unplaced_module() {
    let layers: Vec<Vec<String>> = vec![vec!["a".into()], vec!["b".into(), "c".into()]];
    let g = |edges: &[(&str, &[&str])]| -> BTreeMap<String, BTreeSet<String>> {
        edges
            .iter()
            .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
            .collect()
    };
    assert!(against_the_layers(&g(&[("a", &["b"]), ("b", &[]), ("c", &[])]), &layers).is_empty());
    assert_eq!(
        against_the_layers(&g(&[("b", &["a"])]), &layers),
        ["b uses a, which is not below it"]
    );
    // Within one layer is not below.
    assert_eq!(
        against_the_layers(&g(&[("b", &["c"])]), &layers),
        ["b uses c, which is not below it"]
    );
    assert_eq!(
        against_the_layers(&g(&[("d", &[])]), &layers),
        ["d is in no layer of ARCHITECTURE.md"]
    );
}

/// The command line is read in `main.rs` and `cli/` only: nothing below re-parses argv or builds clap
/// types (a program sets options' fields).
#[test]
fn the_command_line_is_read_in_cli_only() {
    let mut found = Vec::new();
    for (module, text) in modules() {
        if module == "cli" {
            continue;
        }
        for word in ["parse_from(", "std::env::args", "env::args()"] {
            if text.contains(word) {
                found.push(format!("{module}: {word}"));
            }
        }
        if module != "commands" && (text.contains("clap::") || text.contains("crate::cli")) {
            found.push(format!("{module}: clap or cli"));
        }
    }
    assert!(
        found.is_empty(),
        "the command line read outside cli/: {found:?}"
    );
    assert!(
        modules()["cli"].contains("clap::"),
        "the check reads cli's code"
    );
}

#[test]
fn the_check_finds_a_cycle() {
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(cycle(&g).unwrap(), ["a", "b", "c", "a"]);
}

/// The names of the state folder's parts, quoted: `join`ed in `state` only.
const LAYOUT: [&str; 6] = [
    "\"runs\"",
    "\"benches\"",
    "\"bundle\"",
    "\"secrets.env\"",
    "\"exectl.lock\"",
    "\"manifests\"",
];

#[test]
fn state_paths_are_built_in_state_only() {
    let mut found = Vec::new();
    for (module, text) in modules() {
        for name in LAYOUT {
            if module != "state" && text.contains(&format!(".join({name})")) {
                found.push(format!("{module}: .join({name})"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "state paths built outside src/state: {found:?}"
    );
    assert!(modules()["state"].contains(".join(\"runs\")"));
}

/// The operations and the engine are layered file by file too: no two files (or more) of `src/ops`
/// or `src/engine` name each other round (a deploy's two backends share `deploy_stage`, not each other).
#[test]
fn ops_and_engine_have_no_module_cycle() {
    for dir in ["ops", "engine"] {
        let g = folder_graph("src", dir);
        assert!(g.len() > 5, "{dir}: {g:?}");
        if let Some(c) = cycle(&g) {
            panic!("src/{dir} has a module cycle: {}", c.join(" → "));
        }
    }
    // The check reads what it thinks it reads: the backends' arrows, as they are.
    let ops = folder_graph("src", "ops");
    assert!(ops["deploy"].contains("deploy_swarm") && ops["deploy_swarm"].contains("deploy_stage"));
    assert!(!ops["deploy_swarm"].contains("deploy"), "{ops:?}");
}

#[test]
fn bench_and_doctor_have_no_module_cycle() {
    for dir in ["bench", "doctor"] {
        let g = core_graph(dir);
        assert!(g.len() > 3, "{dir}: {g:?}");
        if let Some(c) = cycle(&g) {
            panic!("core/src/{dir} has a module cycle: {}", c.join(" → "));
        }
    }
    // The bench's arrows, as they are: verdict uses limiting, which uses incidents, which uses neither.
    let bench = core_graph("bench");
    assert!(bench["verdict"].contains("limiting") && bench["limiting"].contains("incidents"));
    assert!(!bench["incidents"].contains("limiting"), "{bench:?}");
}
