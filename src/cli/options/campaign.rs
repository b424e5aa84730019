//! `exectl campaign FILE`'s flags as the campaign's plan options (`ops::campaign_plan`, where the
//! campaign is planned and checked): the target when one is given, and the flags over every row.

use anyhow::Result;

use crate::cli::CampaignArgs;
use crate::ops::campaign::CampaignOptions;
use crate::ops::campaign_plan::{PlanOptions, Planned};
use crate::sut::TargetSpec;
use exectl_core::campaign::results::RunFlags;

/// The target, the campaign's options and its plan; nothing connected to or made.
pub fn campaign(a: &CampaignArgs) -> Result<(TargetSpec, CampaignOptions, Planned)> {
    crate::state::checked_root()?;
    // A resume runs on the campaign's own target unless given another.
    let target = match (&a.resume, &a.target.target) {
        (Some(_), None) => None,
        _ => Some(crate::ops::spec_source::target_spec(&a.target.flags())?),
    };
    crate::ops::campaign_plan::plan(&PlanOptions {
        file: a.file.clone(),
        resume: a.resume.clone(),
        target,
        flags: RunFlags {
            stack: a.stack.clone(),
            http_port: a.http_port.clone(),
            lb_port: a.lb_port.clone(),
            teardown: a.teardown,
        },
        run_id: a.run_id.clone(),
        out: a.out.clone(),
    })
}
