//! The pure middle of the flow, one function for deploy, plan and the tests: spec + secrets + templates
//! → the bundle (rendered, re-parsed and checked) → the desired state of a target whose copy of the
//! bundle lives at `host_bundle_dir`. No daemon, no network; the caller loads secrets and templates.

use crate::checks::{self, Outcome};
use crate::desired::{self, Desired};
use crate::render::{self, Bundle, Templates};
use crate::secrets::Secrets;
use crate::spec::Spec;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::Path;

pub struct Rendered {
    pub bundle: Bundle,
    pub desired: Desired,
}

/// The services a stack of `spec` runs, as its rendered compose file names them: known before anything
/// connects, for what a flag may name (a fault's service). Its secrets are stand-ins: only names are read.
pub fn service_names(spec: &Spec, templates: &Templates) -> Result<Vec<String>> {
    let bundle = render::render(spec, &Secrets::generate(), templates)?;
    let file = crate::compose::parse(bundle.get(render::COMPOSE).expect("always rendered").text())
        .map_err(|e| anyhow::anyhow!("compose.yaml: {}", e.message))?;
    Ok(file.services.into_keys().collect())
}

pub fn desired_state(
    spec: &Spec,
    secrets: &Secrets,
    templates: &Templates,
    host_bundle_dir: &Path,
) -> Result<Rendered> {
    let bundle = render::render(spec, secrets, templates)?;
    if let Some(c) = checks::pure_checks(&bundle)
        .into_iter()
        .find(|c| c.outcome == Outcome::Fail)
    {
        bail!("rendered {} is invalid ({}): {}", c.file, c.what, c.detail);
    }
    let file = crate::compose::parse(bundle.get(render::COMPOSE).expect("always rendered").text())
        .map_err(|e| anyhow::anyhow!("compose.yaml: {}", e.message))?;
    let env = desired::parse_env(bundle.get(render::ENV).expect("always rendered").text());
    let files: BTreeMap<String, Vec<u8>> = bundle
        .files
        .iter()
        .map(|f| (f.path.to_string(), f.bytes.clone()))
        .collect();
    let mut desired = desired::desired(&file, &env, host_bundle_dir, &files)?;
    for s in &mut desired.services {
        s.probe = crate::readiness::probe_for(&s.service, &spec.host);
    }
    Ok(Rendered { bundle, desired })
}
