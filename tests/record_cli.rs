//! A stack's record (`exectl.lock.json`) read back by the commands that need no engine for it
//! (`doctor --stack`, `load --stack`): a record with an unknown topology or a missing field is bad input
//! naming the file, not a stack taken for single or a port taken for 0. Engine-free.

use crate::common;

use common::{failed, Exectl};

/// Render stack `stack` and place its record where a deploy would have left it.
fn recorded(x: &Exectl, stack: &str, edit: impl Fn(&mut serde_json::Value)) -> std::path::PathBuf {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().display().to_string();
    x.ok(&["render", "ha", "--stack", stack, "--out", &dir]);
    let text = std::fs::read_to_string(out.path().join("exectl.lock.json")).unwrap();
    let mut record: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(&mut record);
    let bundle = x.stack_dir(stack).join("bundle");
    std::fs::create_dir_all(&bundle).unwrap();
    let file = bundle.join("exectl.lock.json");
    std::fs::write(&file, record.to_string()).unwrap();
    file
}

fn refused(x: &Exectl, args: &[&str], file: &std::path::Path, what: &str) {
    let (code, err) = failed(&x.run(args));
    assert_eq!(code, Some(2), "{args:?}: {err}");
    assert!(err.contains("--stack"), "{args:?}: {err}");
    assert!(err.contains(&file.display().to_string()), "{args:?}: {err}");
    assert!(err.contains(what), "{args:?}: {err}");
}

#[test]
fn an_unknown_topology_is_refused_naming_the_file() {
    let x = Exectl::new();
    let stack = "hc-rec-topo";
    let file = recorded(&x, stack, |r| {
        r["topology"] = "triple".into();
        r["spec"]["topology"] = "triple".into();
    });
    let manifest = tempfile::tempdir().unwrap();
    let m = manifest.path().display().to_string();
    refused(&x, &["doctor", "--stack", stack], &file, "triple");
    refused(
        &x,
        &[
            "load",
            "idle",
            "--stack",
            stack,
            "--manifest",
            &m,
            "--users",
            "1",
        ],
        &file,
        "triple",
    );
}

#[test]
fn a_missing_port_is_refused_naming_the_file_and_the_field() {
    let x = Exectl::new();
    let stack = "hc-rec-port";
    let file = recorded(&x, stack, |r| {
        r["spec"].as_object_mut().unwrap().remove("lb_port");
    });
    let manifest = tempfile::tempdir().unwrap();
    let m = manifest.path().display().to_string();
    refused(
        &x,
        &[
            "load",
            "idle",
            "--stack",
            stack,
            "--manifest",
            &m,
            "--users",
            "1",
        ],
        &file,
        "missing field `lb_port`",
    );
    refused(&x, &["doctor", "--stack", stack], &file, "lb_port");
}
