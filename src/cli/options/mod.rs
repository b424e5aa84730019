//! Flags → options: each operation's options struct made from its command's flags, checked (exit 2
//! naming the flag) before any connection. The one place a command's flags are read as a whole.

use super::spec::load_templates;
use crate::ops::values::duration_flag;
pub mod bench;
pub mod campaign;
pub mod load;
pub mod prepare;
pub mod sweep;

use super::DeployArgs;
use crate::ops::deploy::DeployOptions;
use anyhow::Result;
use std::time::Duration;

/// A spec-driven command's spec (exectl.yaml read once, the flags over it) and its target (the flags,
/// EXECTL_TARGET, then the file's `target:`): every value checked, nothing connected.
pub fn spec_and_target(
    target: &crate::sut::target_flags::TargetFlags,
    spec: &super::spec::SpecArgs,
) -> Result<(exectl_core::spec::Spec, crate::sut::TargetSpec)> {
    crate::state::checked_root()?;
    let file = super::spec::read_spec_file(spec.config.as_deref())?;
    let to = crate::sut::target_flags::resolve(target, file.target.as_ref())?;
    Ok((super::spec::spec_from(file, spec)?, to))
}

/// `exectl deploy`'s flags: its spec, its target and its options.
pub fn deploy(
    args: &DeployArgs,
) -> Result<(
    exectl_core::spec::Spec,
    crate::sut::TargetSpec,
    DeployOptions,
)> {
    let opts = deploy_options(args)?;
    let (spec, target) = spec_and_target(&args.target.flags(), &args.spec)?;
    Ok((spec, target, opts))
}

/// `exectl deploy`'s flags besides the spec and the target.
fn deploy_options(args: &DeployArgs) -> Result<DeployOptions> {
    converging(
        &args.deploy,
        load_templates(&args.spec)?,
        place(&args.place)?,
        args.break_lock,
    )
}

/// A deploy's options from its flags (deploy's, or each sweep point's).
pub fn converging(
    d: &super::DeployFlags,
    templates: exectl_core::render::Templates,
    place: Vec<exectl_core::swarm::PlaceRule>,
    break_lock: bool,
) -> Result<DeployOptions> {
    Ok(DeployOptions {
        // More than zero, at most a day.
        wait_timeout: duration_flag(
            "--wait-timeout",
            &d.wait_timeout,
            Duration::from_millis(1),
            Duration::from_secs(86_400),
        )?,
        load_images: d.load_images,
        break_lock,
        templates,
        place,
    })
}

/// `--watch` refreshes no faster than this: each refresh probes every container and instance.
const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// Longest status --interval and --settle.
const MAX_STATUS_WAIT: Duration = Duration::from_secs(3600);

/// `exectl status`'s flags: the stack, the options, and `--watch`'s interval.
pub fn status(
    args: &super::StatusArgs,
) -> Result<(String, crate::ops::status::StatusOptions, Duration)> {
    let stack = exectl_core::spec::resolve_stack_name(args.stack.as_deref())?;
    let settle = duration_flag("--settle", &args.settle, Duration::ZERO, MAX_STATUS_WAIT)?;
    let interval = duration_flag("--interval", &args.interval, MIN_INTERVAL, MAX_STATUS_WAIT)?;
    let opts = crate::ops::status::StatusOptions {
        expect_idle: args.expect_idle,
        expect_healthy: args.expect_healthy,
        settle,
    };
    Ok((stack, opts, interval))
}

/// `exectl teardown`'s flags: the stack and the options.
pub fn teardown(
    args: &super::TeardownArgs,
) -> Result<(String, crate::ops::teardown::TeardownOptions)> {
    let stack = exectl_core::spec::resolve_stack_name(args.stack.as_deref())?;
    let opts = crate::ops::teardown::TeardownOptions {
        purge: args.purge,
        break_lock: args.break_lock,
    };
    Ok((stack, opts))
}

/// `exectl doctor`'s thresholds from its flags, or from the deployed `--stack`'s record.
pub fn doctor(
    args: &super::host::DoctorArgs,
    target: &crate::sut::TargetSpec,
) -> Result<crate::ops::doctor::DoctorOptions> {
    crate::ops::doctor::DoctorOptions::given(
        &exectl_core::doctor::options::Given {
            connections: args.connections.as_deref(),
            instances: args.instances.as_deref(),
            cpus: args.cpus.as_deref(),
            memory: args.memory.as_deref(),
            record: None,
        },
        args.stack.as_deref(),
        target,
    )
}

/// `exectl host tune`'s flags, checked before the host is touched.
pub fn host_tune(a: &super::host::TuneArgs) -> Result<crate::ops::host::TuneOptions> {
    Ok(crate::ops::host::TuneOptions {
        role: crate::host::Role::parse(&a.role)?,
        sysctl_text: a.sysctl_file.as_deref().map(read_sysctl_file).transpose()?,
        root: crate::host::check_root(a.root.as_deref())?,
        check: a.check,
    })
}

/// `--sysctl-file`, read here and checked: a bad one is refused before anything is sent.
fn read_sysctl_file(path: &std::path::Path) -> Result<String, exectl_core::error::UsageError> {
    let fix = "give a readable sysctl.d file of KEY = VALUE lines (e.g. ansible-free/sysctl/99-exectl-sut.conf), \
               or leave --sysctl-file out to use the role's";
    let text = crate::shell::user_file::read_named(
        path,
        "--sysctl-file",
        crate::shell::user_file::WRITTEN,
        fix,
    )?;
    crate::host::sysctl::parse(&text).map_err(|e| {
        exectl_core::error::UsageError::new(
            "--sysctl-file",
            path.display(),
            format!("not a sysctl.d file: {e}"),
            fix,
        )
    })?;
    Ok(text)
}

/// `--place` values (deploy, plan), each checked.
pub fn place(values: &[String]) -> Result<Vec<exectl_core::swarm::PlaceRule>> {
    Ok(values
        .iter()
        .map(|p| p.parse())
        .collect::<Result<_, exectl_core::error::UsageError>>()?)
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command};
    use clap::Parser;

    fn parsed(args: &[&str]) -> Command {
        Cli::parse_from(["exectl"].iter().chain(args)).command
    }

    /// `--arrival-rate` reaches every level of a bench and a sweep (their load settings, which a
    /// sweep's plan keeps), as `50` or `50/s`; left out, the model is closed.
    #[test]
    fn the_arrival_rate_reaches_bench_and_sweep_levels() {
        for (args, want) in [
            (
                vec!["bench", "--levels", "10", "--arrival-rate", "50"],
                Some(50.0),
            ),
            (
                vec!["bench", "--levels", "10", "--arrival-rate", "2.5/s"],
                Some(2.5),
            ),
            (vec!["bench", "--levels", "10"], None),
        ] {
            let Command::Bench(b) = parsed(&args) else {
                unreachable!()
            };
            let s = super::bench::settings(&b.flags, &b.target.flags(), true).unwrap();
            assert_eq!(s.load.flow.arrival_rate, want, "{args:?}");
            if let Some(r) = want {
                assert_eq!(
                    s.load.ramp(100),
                    std::time::Duration::from_secs_f64(100.0 / r)
                );
            }
        }
        let Command::Sweep(a) = parsed(&[
            "sweep",
            "single",
            "--vary",
            "cpus=1,2",
            "--levels",
            "10",
            "--arrival-rate",
            "20",
        ]) else {
            unreachable!()
        };
        let (_, o) = super::sweep::sweep(&a).unwrap();
        assert_eq!(o.bench.load.flow.arrival_rate, Some(20.0));
    }

    /// `--fault` reaches a bench's and a sweep's settings (the sweep's plan keeps it as its text), and
    /// turns the levels' reconnects on; left out, neither.
    #[test]
    fn a_fault_reaches_bench_and_sweep_and_makes_the_users_reconnect() {
        let Command::Bench(b) = parsed(&["bench", "--levels", "10", "--fault", "restart:app-1@5s"])
        else {
            unreachable!()
        };
        let s = super::bench::settings(&b.flags, &b.target.flags(), true).unwrap();
        assert_eq!(
            s.fault.as_ref().map(|f| f.text()).as_deref(),
            Some("restart:app-1@5s")
        );
        assert!(s.load.flow.reconnect);
        let saved = serde_json::to_value(&s).unwrap();
        assert_eq!(saved["fault"], "restart:app-1@5s");
        let back: crate::ops::bench_settings::BenchSettings =
            serde_json::from_value(saved).unwrap();
        assert_eq!(back.fault, s.fault);
        let Command::Bench(b) = parsed(&["bench", "--levels", "10"]) else {
            unreachable!()
        };
        let s = super::bench::settings(&b.flags, &b.target.flags(), true).unwrap();
        assert!(s.fault.is_none() && !s.load.flow.reconnect);
        let Command::Sweep(a) = parsed(&[
            "sweep", "single", "--vary", "cpus=1,2", "--levels", "10", "--fault", "roll@2s",
        ]) else {
            unreachable!()
        };
        let (_, o) = super::sweep::sweep(&a).unwrap();
        assert_eq!(o.bench.fault.map(|f| f.text()).as_deref(), Some("roll@2s"));
        assert!(o.bench.load.flow.reconnect);
    }

    /// `--relogin` reaches a level's load with a fault (or load's own `--reconnect`); without a way
    /// back, or with minted tokens (no password to log in with), it is refused naming itself.
    #[test]
    fn relogin_needs_a_way_back_and_passwords() {
        let bench = |extra: &[&str]| {
            let mut args = vec!["bench", "--levels", "10"];
            args.extend(extra);
            let Command::Bench(b) = parsed(&args) else {
                unreachable!()
            };
            super::bench::settings(&b.flags, &b.target.flags(), true)
        };
        let s = bench(&["--fault", "redeploy:LOG_LEVEL=debug@2s", "--relogin"]).unwrap();
        assert!(s.load.flow.relogin && s.load.flow.reconnect);
        for extra in [
            &["--relogin"][..],
            &["--fault", "roll@2s", "--relogin", "--tokens"],
        ] {
            let e = format!("{:#}", bench(extra).unwrap_err());
            assert!(e.contains("--relogin"), "{extra:?}: {e}");
        }
        let e = format!("{:#}", bench(&["--relogin"]).unwrap_err());
        assert!(e.contains("--fault"), "{e}");
    }

    /// The defaults are the options' own (`Default`, `seeding`, `DeployOptions::new`): a flag left out
    /// gives what a program gets when it leaves the field alone.
    #[test]
    fn a_flag_left_out_is_the_options_default() {
        let Command::Bench(b) = parsed(&["bench", "--levels", "10"]) else {
            unreachable!()
        };
        let s = super::bench::settings(&b.flags, &b.target.flags(), true).unwrap();
        let d = crate::ops::bench_settings::BenchSettings::default();
        assert_eq!((s.sample, s.settle), (d.sample, d.settle));
        assert_eq!(s.slos, d.slos);
        assert_eq!(s.load.scenario, d.load.scenario);
        assert_eq!(
            (s.load.hold, s.load.ramp(1), s.load.interval),
            (d.load.hold, d.load.ramp(1), d.load.interval)
        );
        assert_eq!((s.load.dial_concurrency, s.load.processes), (None, None));

        let Command::Deploy(a) = parsed(&["deploy", "single"]) else {
            unreachable!()
        };
        let o = super::deploy_options(&a).unwrap();
        assert_eq!(
            o.wait_timeout,
            crate::ops::deploy::DeployOptions::DEFAULT_WAIT
        );

        let Command::Prepare(p) = parsed(&["prepare", "--accounts", "3"]) else {
            unreachable!()
        };
        let o = super::prepare::options(&p).unwrap();
        let d = crate::prepare::Options::seeding(3, None).unwrap();
        assert_eq!(
            (o.via, o.bcrypt_cost, o.batch),
            (d.via, d.bcrypt_cost, d.batch)
        );
        assert_eq!(
            (o.token_ttl, o.schema_timeout),
            (d.token_ttl, d.schema_timeout)
        );
        assert_eq!(
            (&o.password, o.password_from),
            (&d.password, d.password_from)
        );
        assert_eq!(o.plan, d.plan);
    }
}
