//! No module cycle inside `core/src/bench` or `core/src/doctor`: who names whom (`super::x`,
//! `super::super::x`, `crate::bench::x`) read from the sources, outside their test modules, must be a
//! graph whose arrows point one way. (Here, not in core/src: the core names no std::fs.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each module of `dir` (a file, or a folder with its files as one) → the sibling modules it names.
fn graph(dir: &str) -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
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
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(g, m, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|n| visit(g, n, &mut Vec::new(), &mut done))
}

#[test]
fn bench_and_doctor_have_no_module_cycle() {
    for dir in ["bench", "doctor"] {
        let g = graph(dir);
        assert!(g.len() > 3, "{dir}: {g:?}");
        if let Some(c) = cycle(&g) {
            panic!("core/src/{dir} has a module cycle: {}", c.join(" → "));
        }
    }
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
    .map(|(k, v)| (k.into(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(cycle(&g).unwrap(), ["a", "b", "c", "a"]);
    // The bench's arrows, as they are: verdict uses limiting, which uses incidents, which uses neither.
    let bench = graph("bench");
    assert!(bench["verdict"].contains("limiting") && bench["limiting"].contains("incidents"));
    assert!(!bench["incidents"].contains("limiting"), "{bench:?}");
}
