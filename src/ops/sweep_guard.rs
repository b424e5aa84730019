//! One variable at a time: before each point after the first, what its deploy would record compared
//! with the previous point's run record. A variable that moved besides the swept ones (another knob,
//! an image digest under the same tag, exectl, the engine, the kernel) stops the sweep, named.

use std::collections::BTreeMap;

use anyhow::Result;

use super::sweep_plan::{point_spec, SweepOptions};
use crate::state::runs;
use crate::sut::Target;
use exectl_core::spec::Spec;
use exectl_core::sweep::results::{PointResult, SweepResults};

/// Why point `values` may not follow `prev`: a variable of the run records that moved besides the
/// swept ones (another knob, an image digest under the same tag, exectl, the engine, the kernel).
/// An image variable whose every change is a service appearing or going (`-` on one side): a
/// consequence of a knob that changes the services (`instances`), not an image that moved under its tag.
fn service_came_or_went(moved: &runs::Diff, variable: &str) -> bool {
    let Some(service) = variable.strip_prefix("image ") else {
        return false;
    };
    let prefix = format!("images.{service}.");
    let mut changes = moved.changes.iter().filter(|c| c.key.starts_with(&prefix));
    changes.clone().next().is_some() && changes.all(|c| c.a == "-" || c.b == "-")
}

/// What the swept variables may move is found by resolving the same input with only them changed.
pub fn other_variables(
    target: &Target,
    rt: &tokio::runtime::Runtime,
    o: &SweepOptions,
    prev: &PointResult,
    values: &[String],
    spec_now: &Spec,
) -> Result<Option<String>> {
    let runs_dir = crate::state::runs_dir(&crate::state::root());
    let prev_record = runs::load(&runs_dir, &prev.deploy_run_id)?;
    let would = rt.block_on(super::deploy::would_record(
        target,
        spec_now,
        &o.deploy.templates,
    ))?;
    let moved = runs::diff(&prev_record, &would);
    let allowed = runs::diff(
        &knobs_only(&point_spec(o, &prev.values)?),
        &knobs_only(spec_now),
    )
    .variables;
    let swept = o.vary.iter().map(|v| &v.var);
    let extra: Vec<&String> = moved
        .variables
        .iter()
        .filter(|v| !allowed.contains(v))
        .filter(|v| !swept.clone().any(|s| s.owns_digest(v)))
        .filter(|v| !service_came_or_went(&moved, v))
        .collect();
    if extra.is_empty() {
        return Ok(None);
    }
    let changes: Vec<String> = moved
        .changes
        .iter()
        .filter(|c| !c.key.starts_with(runs::FILES))
        .filter(|c| {
            extra.iter().any(|v| {
                let k = c.key.trim_start_matches("knobs.");
                k.starts_with(v.as_str())
                    || v.starts_with("image ") && c.key.starts_with(&format!("images.{}", &v[6..]))
                    || k.replace('_', " ").starts_with(v.as_str())
            })
        })
        .map(|c| {
            format!(
                "{} {} -> {}",
                c.key.trim_start_matches("knobs."),
                runs::shown(&c.a),
                runs::shown(&c.b)
            )
        })
        .collect();
    Ok(Some(format!(
        "point {} ({}) would change {} besides {}: {}; one variable at a time means only {} may differ from the previous point (put it back, or start a new sweep)",
        prev.index + 1,
        SweepResults::label(values),
        extra.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", "),
        o.vary.iter().map(|v| v.var.name()).collect::<Vec<_>>().join(" and "),
        if changes.is_empty() { "(see exectl runs diff)".to_string() } else { changes.join(", ") },
        o.vary.iter().map(|v| v.var.name()).collect::<Vec<_>>().join(" and "),
    )))
}

/// A run record of a spec's knobs alone: what its settings say, with no target, digest or file.
fn knobs_only(spec: &Spec) -> runs::Record {
    runs::Record {
        id: String::new(),
        created: String::new(),
        created_epoch: 0,
        stack: spec.stack.clone(),
        knobs: runs::knobs(spec),
        spec: serde_json::Value::Null,
        files: BTreeMap::new(),
        images: BTreeMap::new(),
        engine: runs::EngineRecord::default(),
        exectl: runs::ExectlRecord::current(),
        changed: 0,
        seconds: 0.0,
        fitted: Vec::new(),
    }
}
