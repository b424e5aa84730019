//! doctor's flags, checked: each bad value is a `UsageError` naming the flag, the value and the fix.

use super::assess::{Defaulted, Limits, Options};
use crate::error::UsageError;
use crate::footprint;
use crate::record::StackRecord;
use crate::spec::{MAX_CPUS, MIN_CPUS};
use crate::units::{self, Invalid};

/// deploy's defaults for what the flags leave out (CPUs and memory fitted to the engine, as deploy
/// fits them: `Limits::fitted`).
pub const DEFAULT_INSTANCES: u64 = 1;
pub const DEFAULT_CPUS: f64 = crate::spec::fit::DEFAULT_CPUS;
pub const DEFAULT_MEMORY: u64 = crate::spec::fit::DEFAULT_MEMORY;

/// The flags as given (text), and a deployed stack's recorded limits when `--stack` was given.
#[derive(Debug, Clone, Default)]
pub struct Given<'a> {
    pub connections: Option<&'a str>,
    pub instances: Option<&'a str>,
    pub cpus: Option<&'a str>,
    pub memory: Option<&'a str>,
    /// The stack's record, read by the caller.
    pub record: Option<&'a StackRecord>,
}

pub fn options(g: &Given) -> Result<Options, UsageError> {
    let connections = g.connections.map(parse_connections).transpose()?;
    let instances = g.instances.map(parse_instances).transpose()?;
    let cpus = g.cpus.map(parse_cpus).transpose()?;
    let memory = g.memory.map(parse_memory).transpose()?;
    let any_flag = instances.is_some() || cpus.is_some() || memory.is_some();
    let limits = match g.record {
        Some(record) => {
            let stack = &record.stack;
            let l = limits_from_record(record)?;
            Some(Limits {
                instances: instances.unwrap_or(l.instances),
                cpus: cpus.unwrap_or(l.cpus),
                memory_bytes: memory.unwrap_or(l.memory_bytes),
                idle_mib: l.idle_mib,
                source: if any_flag {
                    format!("stack {stack}, with flags")
                } else {
                    l.source
                },
                defaulted: Defaulted::default(),
            })
        }
        None if any_flag => Some(Limits {
            instances: instances.unwrap_or(DEFAULT_INSTANCES),
            cpus: cpus.unwrap_or(DEFAULT_CPUS),
            memory_bytes: memory.unwrap_or(DEFAULT_MEMORY),
            // Flags alone: deploy's default image, the real app.
            idle_mib: footprint::idle_mib(&crate::spec::Images::default().app),
            source: "flags".into(),
            defaulted: Defaulted {
                cpus: cpus.is_none(),
                memory: memory.is_none(),
            },
        }),
        None => None,
    };
    Ok(Options {
        connections,
        limits,
    })
}

/// Most --connections: far beyond one host's ports and files, short of any overflow in the checks.
const MAX_CONNECTIONS: u64 = 1_000_000_000;

/// A flag read by `core::units`, with this flag's own fix.
fn flag<T>(flag: &str, v: &str, parsed: Result<T, Invalid>, fix: &str) -> Result<T, UsageError> {
    parsed.map_err(|i| UsageError::new(flag, v, i.problem, fix))
}

pub fn parse_connections(v: &str) -> Result<u64, UsageError> {
    flag(
        "--connections",
        v,
        units::count_in(v, 1, MAX_CONNECTIONS),
        "pass the connections the benchmark will hold, e.g. --connections 10000",
    )
}

fn parse_instances(v: &str) -> Result<u64, UsageError> {
    let n = units::count_in(v, 1, 64);
    flag("--instances", v, n, "pass e.g. --instances 4 (1 to 64)")
}

fn parse_cpus(v: &str) -> Result<f64, UsageError> {
    let c = units::decimal_in(v, MIN_CPUS, MAX_CPUS);
    flag(
        "--cpus",
        v,
        c,
        "pass e.g. --cpus 2 or --cpus 1.5 (0.01 to 1024)",
    )
}

fn parse_memory(v: &str) -> Result<u64, UsageError> {
    let b = units::size_at_least(v, crate::spec::MIN_MEMORY, "6m");
    flag("--memory", v, b, "pass e.g. --memory 512m or --memory 2g")
}

/// The app instances' limits a deployed stack's record holds (`spec.instances`, `spec.cpus`,
/// `spec.memory_bytes`).
pub fn limits_from_record(record: &StackRecord) -> Result<Limits, UsageError> {
    let stack = &record.stack;
    let cpus = record.spec.cpus.parse::<f64>().map_err(|_| {
        UsageError::new(
            "--stack",
            stack,
            format!("its record gives cpus {:?}, not a number", record.spec.cpus),
            "deploy it again with this exectl, or give --instances, --cpus and --memory instead",
        )
    })?;
    Ok(Limits {
        instances: u64::from(record.spec.instances),
        cpus,
        memory_bytes: record.spec.memory_bytes,
        idle_mib: footprint::idle_mib(&record.spec.images.app),
        source: format!("stack {stack}"),
        defaulted: Defaulted::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::record;

    /// An ha stack of 2 instances, 1.5 cpus and 512m each.
    fn record() -> StackRecord {
        let mut r = record::example("exe", crate::spec::Topology::Ha);
        r.spec.instances = 2;
        r.spec.cpus = "1.5".into();
        r.spec.memory_bytes = 536870912;
        r
    }

    #[test]
    fn connections_are_checked() {
        assert_eq!(parse_connections("10000"), Ok(10000));
        assert_eq!(parse_connections("1_000_000"), Ok(1_000_000));
        for bad in ["0", "-5", "many", "", "1.5"] {
            let e = parse_connections(bad).unwrap_err();
            assert_eq!(e.field, "--connections");
            assert_eq!(e.value, bad);
            assert!(e.fix.contains("--connections 10000"));
        }
    }

    #[test]
    fn no_flags_no_limits() {
        let o = options(&Given::default()).unwrap();
        assert_eq!(o, Options::default());
    }

    #[test]
    fn flags_alone_fill_in_deploys_defaults() {
        let o = options(&Given {
            instances: Some("4"),
            ..Default::default()
        })
        .unwrap();
        let l = o.limits.unwrap();
        assert_eq!((l.instances, l.cpus, l.memory_bytes), (4, 2.0, 2 << 30));
        assert_eq!(l.source, "flags");
    }

    #[test]
    fn a_stacks_record_gives_its_limits_and_flags_override_them() {
        let o = options(&Given {
            record: Some(&record()),
            connections: Some("100"),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(o.connections, Some(100));
        let l = o.limits.unwrap();
        assert_eq!((l.instances, l.cpus, l.memory_bytes), (2, 1.5, 512 << 20));
        assert_eq!(l.source, "stack exe");
        let l = options(&Given {
            record: Some(&record()),
            memory: Some("1g"),
            ..Default::default()
        })
        .unwrap()
        .limits
        .unwrap();
        assert_eq!((l.instances, l.memory_bytes), (2, 1 << 30));
        assert_eq!(l.source, "stack exe, with flags");
    }

    #[test]
    fn bad_values_name_their_flag() {
        let field = |g: Given| options(&g).unwrap_err().field;
        let g = Given::default;
        assert_eq!(
            field(Given {
                instances: Some("0"),
                ..g()
            }),
            "--instances"
        );
        assert_eq!(
            field(Given {
                cpus: Some("-1"),
                ..g()
            }),
            "--cpus"
        );
        assert_eq!(
            field(Given {
                cpus: Some("NaN"),
                ..g()
            }),
            "--cpus"
        );
        assert_eq!(
            field(Given {
                memory: Some("1m"),
                ..g()
            }),
            "--memory"
        );
        assert_eq!(
            field(Given {
                memory: Some("lots"),
                ..g()
            }),
            "--memory"
        );
        let mut broken = record();
        broken.spec.cpus = "many".into();
        assert_eq!(
            field(Given {
                record: Some(&broken),
                ..g()
            }),
            "--stack"
        );
        assert_eq!(parse_memory("1.5g"), Ok(3 << 29));
    }
}
