//! The bench settings as flags: one clap argument per setting of the table
//! (`exectl_core::bench::settings::BENCH_SETTINGS`, whose keys are their ids), every one for bench and
//! sweep (`BenchFlags`), one run's workload for load (`WorkloadFlags`); read back as the text given,
//! and made the typed `BenchInput` by the table's own reader (exit 2 naming the flag).

use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches};
use exectl_core::bench::settings::{self, BenchInput, Kind, Setting, BENCH_SETTINGS};
use exectl_core::error::UsageError;

/// The bench settings given as flags, key and text, in the table's order (a repeated `--slo` once
/// per value).
#[derive(Debug, Clone, Default)]
pub struct BenchFlags {
    pub given: Vec<(&'static str, String)>,
}

impl BenchFlags {
    /// The flags as typed settings, each value checked by its setting's type and range.
    pub fn input(&self) -> Result<BenchInput, UsageError> {
        let mut input = BenchInput::default();
        for (key, text) in &self.given {
            input.set(key, text).map_err(|i| {
                let flag = settings::setting(key).map_or_else(|| key.to_string(), Setting::flag);
                UsageError::new(flag, text, i.problem, i.fix)
            })?;
        }
        Ok(input)
    }
}

fn arg(s: &Setting) -> Arg {
    let mut arg = Arg::new(s.key)
        .long(s.key.replace('_', "-"))
        .help(s.help_line());
    if let Some(other) = s.conflicts_with {
        arg = arg.conflicts_with(other);
    }
    if s.kind == Kind::Switch {
        return arg.action(ArgAction::SetTrue);
    }
    let arg = arg
        .value_name(s.value_name)
        .value_parser(clap::value_parser!(String));
    match s.kind {
        Kind::Objectives => arg.action(ArgAction::Append),
        // `--hold -1s` reaches the check and is refused there naming the flag, rather than taken for
        // another flag.
        Kind::Duration { .. } | Kind::Count { .. } | Kind::Rate { .. } => {
            arg.action(ArgAction::Set).allow_hyphen_values(true)
        }
        _ => arg.action(ArgAction::Set),
    }
}

/// A group's settings as clap arguments (`adjust` adds a command's own constraints).
fn augment(
    cmd: clap::Command,
    group: fn(&Setting) -> bool,
    adjust: fn(Arg) -> Arg,
) -> clap::Command {
    BENCH_SETTINGS
        .iter()
        .filter(|s| group(s))
        .fold(cmd, |cmd, s| cmd.arg(adjust(arg(s))))
}

/// The group's settings given, key and text, in the table's order.
fn gather(m: &ArgMatches, group: fn(&Setting) -> bool) -> BenchFlags {
    let mut given = Vec::new();
    for s in BENCH_SETTINGS.iter().filter(|s| group(s)) {
        match s.kind {
            Kind::Switch if m.get_flag(s.key) => given.push((s.key, "true".to_string())),
            Kind::Switch => {}
            _ => given.extend(
                m.get_many::<String>(s.key)
                    .into_iter()
                    .flatten()
                    .map(|v| (s.key, v.clone())),
            ),
        }
    }
    BenchFlags { given }
}

/// `exectl load`'s share of the bench settings (`settings::LOAD_KEYS`, one run's workload; its
/// scenario is a positional argument), as flags.
#[derive(Debug, Clone, Default)]
pub struct WorkloadFlags(pub BenchFlags);

fn every(_: &Setting) -> bool {
    true
}

fn workload(s: &Setting) -> bool {
    settings::LOAD_KEYS.contains(&s.key)
}

fn as_declared(a: Arg) -> Arg {
    a
}

/// load's --pattern picks one of a stack's manifests.
fn load_constraints(a: Arg) -> Arg {
    match a.get_id().as_str() {
        "pattern" => a.requires("stack").conflicts_with("manifest"),
        _ => a,
    }
}

/// clap's traits for a group of settings: which of the table, how each is adjusted, how the group is
/// made from what was given.
macro_rules! settings_group {
    ($ty:ty, $group:expr, $adjust:expr, $make:expr) => {
        impl Args for $ty {
            fn augment_args(cmd: clap::Command) -> clap::Command {
                augment(cmd, $group, $adjust)
            }

            fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
                Self::augment_args(cmd)
            }
        }

        impl FromArgMatches for $ty {
            fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
                Ok($make(gather(m, $group)))
            }

            fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
                *self = Self::from_arg_matches(m)?;
                Ok(())
            }
        }
    };
}

settings_group!(BenchFlags, every, as_declared, |f| f);
settings_group!(WorkloadFlags, workload, load_constraints, WorkloadFlags);
