//! `exectl bench`'s flags as `BenchSettings` (read by the bench settings' table, then checked as
//! `BenchSettings::from_input` checks any bench), then as the bench of its levels on its stack
//! (`BenchSettings::options`), all before any connection (exit 2).

use crate::cli::{BenchArgs, BenchFlags};
use crate::ops::bench::BenchOptions;
use crate::ops::bench_settings::BenchSettings;
use crate::state::bench_dir::BenchDir;
use crate::sut::target_flags::TargetFlags;
use crate::sut::TargetSpec;
use exectl_core::bench::parse_levels;
use exectl_core::error::UsageError;

/// `flags` checked on their own, before the stack they will bench exists (`BenchSettings::given`).
pub fn settings(
    flags: &BenchFlags,
    target: &TargetFlags,
    json: bool,
) -> Result<BenchSettings, UsageError> {
    BenchSettings::given(&flags.input()?, target, !json)
}

/// Every flag and the bench's folder, checked; nothing is connected to or made.
pub fn bench(a: &BenchArgs) -> Result<(TargetSpec, BenchOptions), UsageError> {
    let levels = parse_levels(&a.levels)?;
    let settings = settings(&a.flags, &a.target.flags(), a.json)?;
    let stack = exectl_core::spec::resolve_stack_name(a.stack.as_deref())?;
    let run_id = crate::ops::values::run_id(a.run_id.as_deref(), "B-IDLE-HA2-001", |now| {
        format!("B-{}-{now}", settings.load.scenario)
    })?;
    let benches = crate::state::benches_dir(&crate::state::root());
    let (field, value, path) = crate::ops::values::run_folder(a.out.as_deref(), &run_id, &benches);
    let out = BenchDir::check(&path, field, &value)?;
    let target = crate::ops::spec_source::target_spec(&a.target.flags())?;
    let mut opts = settings.options(&target, &stack, &levels, &run_id, out)?;
    opts.levels_text = a.levels.clone();
    Ok((target, opts))
}
