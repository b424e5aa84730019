//! `exectl render`: spec → bundle on disk. Nothing is written when the spec or a template is at fault.

use super::LOCAL_TARGET;
use crate::cli::spec::{load_spec, load_templates};
use crate::cli::RenderArgs;
use crate::state::secrets;
use crate::validate::{self, Outcome};
use anyhow::{bail, Result};
use exectl_core::render;
use serde_json::json;

pub fn run(args: &RenderArgs) -> Result<()> {
    let spec = load_spec(&args.spec)?;
    let templates = load_templates(&args.spec)?;
    check_out(&args.out)?;
    let dir = crate::state::stack_dir(&crate::state::checked_root()?, LOCAL_TARGET, &spec.stack);
    let secrets = secrets::load_or_generate(&dir, true)?;
    let bundle = render::render(&spec, &secrets, &templates)?;
    let faults: Vec<_> = validate::pure_checks(&bundle)
        .into_iter()
        .filter(|c| c.outcome == Outcome::Fail)
        .collect();
    if let Some(c) = faults.first() {
        bail!(
            "rendered {} is invalid ({}): {}; nothing written",
            c.file,
            c.what,
            c.detail
        );
    }
    crate::state::bundle::write(&bundle, &args.out)?;
    if args.json {
        let files: Vec<_> = bundle
            .files
            .iter()
            .map(|f| json!({"path": f.path, "sha256": f.sha256(), "mode": format!("{:o}", f.mode)}))
            .collect();
        let out = json!({
            "stack": spec.stack,
            "topology": spec.topology.name(),
            "out": args.out.display().to_string(),
            "files": files,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "rendered stack {} ({}) into {}",
            spec.stack,
            spec.describe(),
            args.out.display()
        );
        for f in &bundle.files {
            println!("  {:<22} sha256 {}", f.path, &f.sha256()[..16]);
        }
    }
    Ok(())
}

/// `--out` must be a folder or creatable as one: refused before anything is written.
fn check_out(out: &std::path::Path) -> Result<(), exectl_core::error::UsageError> {
    let bad = |problem: String| {
        exectl_core::error::UsageError::new(
            "--out",
            out.display(),
            problem,
            "give a folder (it is created if missing)",
        )
    };
    // The nearest part of the path that exists decides: a folder is fine, anything else is not.
    for p in out.ancestors().filter(|p| !p.as_os_str().is_empty()) {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => return Ok(()),
            Ok(_) if p == out => return Err(bad("it exists and is not a folder".into())),
            Ok(_) => return Err(bad(format!("{} is a file, not a folder", p.display()))),
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    || e.raw_os_error() == Some(libc::ENOTDIR) =>
            {
                continue
            }
            Err(e) => return Err(bad(format!("{}: {e}", p.display()))),
        }
    }
    Ok(())
}
