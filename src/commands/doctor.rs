//! `exectl doctor`: flags → options (`cli::options::doctor`: a stack's recorded limits read from local
//! state, no connection), the operation (`ops::doctor`), its report printed. Exit 0 when nothing fails
//! (warnings allowed), 1 on a failure, 2 on a bad flag.

use crate::cli::host::DoctorArgs;
use anyhow::Result;

pub async fn run(args: &DoctorArgs) -> Result<i32> {
    let spec = crate::ops::spec_source::target_spec(&args.target.flags())?;
    let opts = crate::cli::options::doctor(args, &spec)?;
    let report = crate::ops::doctor::doctor(&spec, &opts).await?;
    if args.json {
        println!("{}", report.json());
    } else {
        print!("{}", report.table());
    }
    Ok(report.exit_code())
}
