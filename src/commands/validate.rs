//! `exectl validate`: render into a temporary folder and check every file with real tools.

use super::LOCAL_TARGET;
use crate::cli::spec::{load_spec, load_templates};
use crate::cli::ValidateArgs;
use crate::state::secrets;
use crate::validate::{self, Outcome};
use anyhow::Result;
use exectl_core::render;
use serde_json::json;

/// Returns whether every check passed.
pub fn run(args: &ValidateArgs) -> Result<bool> {
    let spec = load_spec(&args.spec)?;
    let templates = load_templates(&args.spec)?;
    let dir = crate::state::stack_dir(&crate::state::checked_root()?, LOCAL_TARGET, &spec.stack);
    // Validation must not create state: reuse stored secrets, else use throw-away ones.
    let secrets = secrets::load_or_generate(&dir, false)?;
    let bundle = render::render(&spec, &secrets, &templates)?;
    let tmp = tempfile::tempdir()?;
    crate::state::bundle::write(&bundle, tmp.path())?;

    let mut checks = validate::pure_checks(&bundle);
    checks.extend(validate::nginx_check(&bundle, &spec.app_services()));
    checks.push(validate::compose_cli_check(tmp.path()));
    let ok = checks.iter().all(|c| c.outcome != Outcome::Fail);

    if args.json {
        let out = json!({
            "stack": spec.stack,
            "topology": spec.topology.name(),
            "ok": ok,
            "checks": checks,
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("validating stack {} ({})", spec.stack, spec.describe());
        for c in &checks {
            let tag = match c.outcome {
                Outcome::Pass => "PASS",
                Outcome::Fail => "FAIL",
                Outcome::Skip => "SKIP",
            };
            println!("  {tag} {} [{}]: {}", c.file, c.what, c.detail);
        }
        println!("{}", if ok { "valid" } else { "INVALID" });
    }
    Ok(ok)
}
