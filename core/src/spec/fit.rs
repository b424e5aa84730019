//! Defaults fitted to the target. A setting left to its default that the target cannot take — the
//! seed's nofile 200000 where the engine's hard limit is 20000, 2 CPUs on a 1-CPU host, 2g on a smaller
//! one — is lowered to what the target allows; nginx's worker_rlimit_nofile and worker_connections, when
//! left to the variant's, follow a lowered nofile as they follow a given one (`defaults_for`). A value
//! the user gave is never changed: preflight refuses it when the target cannot take it. Pure, and a
//! function of the spec and the target alone, so every deploy of one spec on one target (each point of
//! a sweep) fits it the same way.
//!
//! Not fitted: `--instances` (what a study varies, not a resource), the ports (one in use is a conflict
//! to see: a port picked silently would send load elsewhere), and a target whose open-files limit is
//! below the lowest `--nofile` (1024), which preflight refuses.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{Spec, MIN_MEMORY};
use crate::error::UsageError;

/// deploy's defaults for the settings a target may not take.
pub const DEFAULT_CPUS: f64 = 2.0;
pub const DEFAULT_MEMORY: u64 = 2 << 30;
pub const DEFAULT_NOFILE: u64 = 200_000;
/// The lowest `--nofile`: a target allowing fewer is not fitted to.
pub const MIN_NOFILE: u64 = 1024;

/// Where each setting a target may not take came from: None when it was left to its default (so it may
/// be fitted), else its origin as errors name it (`--worker-connections`, `worker_connections (in
/// exectl.yaml)`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Given {
    pub cpus: Option<String>,
    pub memory: Option<String>,
    pub nofile: Option<String>,
    pub worker_connections: Option<String>,
    pub worker_rlimit_nofile: Option<String>,
}

/// What the target offers, as preflight reads it; None where it is not known (nothing is fitted to it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offers {
    /// The engine's CPUs (`docker info` NCPU).
    pub ncpu: Option<i64>,
    /// The engine's memory (`docker info` MemTotal), bytes.
    pub mem_total: Option<i64>,
    /// The open files a container may have (the engine's hard limit).
    pub max_nofile: Option<u64>,
}

/// One default lowered to the target: the run record's knob, the default, the value used, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fitted {
    pub knob: String,
    pub default: String,
    pub value: String,
    pub why: String,
}

impl fmt::Display for Fitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} -> {}: {}",
            self.knob, self.default, self.value, self.why
        )
    }
}

/// deploy's CPU limit per instance when none is given, on a target of `ncpu` CPUs: 2, or every CPU of a
/// smaller one (the engine refuses a limit above its CPUs).
pub fn default_cpus(ncpu: Option<i64>) -> f64 {
    match ncpu {
        Some(n) if n >= 1 && (n as f64) < DEFAULT_CPUS => n as f64,
        _ => DEFAULT_CPUS,
    }
}

/// deploy's memory limit per instance when none is given, on a target of `mem_total` bytes: 2g, or all
/// of a smaller one, in whole MiB.
pub fn default_memory(mem_total: Option<i64>) -> u64 {
    match mem_total {
        Some(m) if m > 0 && (m as u64) < DEFAULT_MEMORY => ((m as u64) >> 20 << 20).max(MIN_MEMORY),
        _ => DEFAULT_MEMORY,
    }
}

fn shown(v: Option<u64>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

impl Spec {
    /// This spec on a target that offers `offers`: the defaults it cannot take lowered to what it
    /// allows, and each one that was. Idempotent. Err: a value the user gave to nginx that the lowered
    /// nofile cannot hold, named with its fix (the same refusal as for a `--nofile` given that low).
    pub fn fit(&self, offers: &Offers) -> Result<(Spec, Vec<Fitted>), UsageError> {
        let mut s = self.clone();
        let mut fitted = Vec::new();
        let mut note = |knob: &str, default: String, value: String, why: String| {
            fitted.push(Fitted {
                knob: knob.into(),
                default,
                value,
                why,
            })
        };
        if self.given.cpus.is_none() {
            let cpus = default_cpus(offers.ncpu);
            if cpus < DEFAULT_CPUS {
                note(
                    "cpus",
                    s.cpus.clone(),
                    format!("{cpus}"),
                    format!("the target has {cpus} CPU and the engine refuses a larger limit"),
                );
                s.cpus = format!("{cpus}");
            }
        }
        if self.given.memory.is_none() {
            let bytes = default_memory(offers.mem_total);
            if bytes < s.memory_bytes {
                let memory = crate::units::show_size(bytes);
                note(
                    "memory",
                    s.memory.clone(),
                    memory.clone(),
                    format!("the target has {} MiB of memory", bytes >> 20),
                );
                (s.memory, s.memory_bytes) = (memory, bytes);
            }
        }
        let max = offers
            .max_nofile
            .filter(|m| self.given.nofile.is_none() && *m < s.nofile && *m >= MIN_NOFILE);
        if let Some(max) = max {
            note(
                "nofile",
                s.nofile.to_string(),
                max.to_string(),
                format!(
                    "the engine allows at most {max} open files per container (its hard limit)"
                ),
            );
            s.nofile = max;
            if let Some(n) = s.nginx.as_mut() {
                let (_, wc, rl) = n.variant.defaults_for(max);
                if self.given.worker_rlimit_nofile.is_none() && n.worker_rlimit_nofile != rl {
                    note(
                        "nginx.worker_rlimit_nofile",
                        shown(n.worker_rlimit_nofile),
                        shown(rl),
                        "at most the containers' nofile (nginx cannot raise its own past it)"
                            .into(),
                    );
                    n.worker_rlimit_nofile = rl;
                }
                if self.given.worker_connections.is_none() && n.worker_connections != wc {
                    note(
                        "nginx.worker_connections",
                        n.worker_connections.to_string(),
                        wc.to_string(),
                        format!(
                            "half of worker_rlimit_nofile (a proxied socket holds two descriptors): \
                             the LB now proxies at most {} sockets per worker process",
                            wc / 2
                        ),
                    );
                    n.worker_connections = wc;
                }
                if let Some(rl) = n.worker_rlimit_nofile {
                    check_nginx(&self.given, rl, n.worker_connections, max)?;
                }
            }
        }
        Ok((s, fitted))
    }
}

/// The user's nginx values under the nofile lowered to `max`: worker_rlimit_nofile within it, and
/// worker_connections within half of worker_rlimit_nofile.
fn check_nginx(given: &Given, rl: u64, wc: u64, max: u64) -> Result<(), UsageError> {
    let beyond = format!(
        "the target allows a container at most {max} open files (the engine's hard limit), and the \
         default nofile was lowered to that"
    );
    if let (Some(origin), true) = (&given.worker_rlimit_nofile, rl > max) {
        return Err(UsageError::new(
            origin,
            rl,
            format!("nginx's worker_rlimit_nofile cannot exceed the containers' nofile: {beyond}"),
            format!(
                "pass --worker-rlimit-nofile {max} or less (and --worker-connections to match), or raise the engine's LimitNOFILE"
            ),
        ));
    }
    if rl < 2 * wc {
        let origin = given
            .worker_connections
            .as_deref()
            .unwrap_or("--worker-connections");
        return Err(UsageError::new(
            origin,
            wc,
            format!(
                "nginx needs worker_rlimit_nofile {} for it (two descriptors per proxied socket): {beyond}",
                2 * wc
            ),
            format!(
                "pass --worker-connections {} or less, or raise the engine's LimitNOFILE",
                max / 2
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{resolve, Raw, SpecInput};

    fn ha(flags: &[(&'static str, &str)]) -> Spec {
        let mut i = SpecInput {
            topology: Some(Raw::flag("topology", "ha")),
            ..Default::default()
        };
        for (f, v) in flags {
            let s = crate::spec_settings::SETTINGS
                .iter()
                .find(|s| s.flag == *f)
                .unwrap();
            *(s.slot)(&mut i) = Some(Raw::flag(s.flag, *v));
        }
        resolve(i).unwrap()
    }

    /// These machines: 2 CPUs, 24 GiB, an engine whose hard limit is 20000 open files.
    const HERE: Offers = Offers {
        ncpu: Some(2),
        mem_total: Some(24 << 30),
        max_nofile: Some(20_000),
    };

    fn knobs(f: &[Fitted]) -> Vec<(&str, &str, &str)> {
        f.iter()
            .map(|f| (f.knob.as_str(), f.default.as_str(), f.value.as_str()))
            .collect()
    }

    #[test]
    fn the_cards_defaults_fit_an_engine_whose_hard_limit_is_20000() {
        let spec = ha(&[("--instances", "4"), ("--nginx", "tuned-least-conn")]);
        let (s, fitted) = spec.fit(&HERE).unwrap();
        assert_eq!(
            knobs(&fitted),
            [
                ("nofile", "200000", "20000"),
                ("nginx.worker_rlimit_nofile", "200000", "20000"),
                ("nginx.worker_connections", "32768", "10000"),
            ]
        );
        assert!(
            fitted[2].why.contains("at most 5000 sockets per worker"),
            "{}",
            fitted[2]
        );
        let n = s.nginx.as_ref().unwrap();
        assert_eq!(
            (s.nofile, n.worker_rlimit_nofile, n.worker_connections),
            (20_000, Some(20_000), 10_000)
        );
        assert_eq!((s.cpus.as_str(), s.memory.as_str()), ("2", "2g"));
        // The same values given as flags: the same spec, and fitting again changes nothing.
        let given = ha(&[
            ("--instances", "4"),
            ("--nofile", "20000"),
            ("--worker-rlimit-nofile", "20000"),
            ("--worker-connections", "10000"),
        ]);
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::to_value(&given).unwrap()
        );
        let (again, none) = s.fit(&HERE).unwrap();
        assert_eq!((again, none), (s, vec![]));
        // Nothing known, or room for it all: nothing fitted.
        assert!(spec.fit(&Offers::default()).unwrap().1.is_empty());
        let big = Offers {
            max_nofile: Some(1 << 20),
            ..HERE
        };
        assert!(spec.fit(&big).unwrap().1.is_empty());
    }

    #[test]
    fn a_value_given_is_never_fitted() {
        // Refused by preflight as given, not lowered.
        let s = ha(&[("--nofile", "200000"), ("--cpus", "2"), ("--memory", "2g")]);
        let small = Offers {
            ncpu: Some(1),
            mem_total: Some(1 << 30),
            max_nofile: Some(20_000),
        };
        let (same, fitted) = s.fit(&small).unwrap();
        assert!(fitted.is_empty(), "{fitted:?}");
        assert_eq!(same, s);
        // Without them, each is fitted: CPUs, memory in whole MiB.
        let (s, fitted) = ha(&[])
            .fit(&Offers {
                mem_total: Some((1 << 30) + 12345),
                ..small
            })
            .unwrap();
        assert_eq!(
            knobs(&fitted)[..2],
            [("cpus", "2", "1"), ("memory", "2g", "1g")]
        );
        assert_eq!((s.cpus.as_str(), s.memory_bytes), ("1", 1 << 30));
    }

    #[test]
    fn nginx_values_given_must_fit_the_lowered_nofile() {
        // worker_connections given, worker_rlimit_nofile the variant's: lowered, and checked.
        let (s, _) = ha(&[("--worker-connections", "8000")]).fit(&HERE).unwrap();
        let n = s.nginx.unwrap();
        assert_eq!(
            (n.worker_connections, n.worker_rlimit_nofile),
            (8000, Some(20_000))
        );
        let e = ha(&[("--worker-connections", "16000")])
            .fit(&HERE)
            .unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.value.as_str()),
            ("--worker-connections", "16000")
        );
        assert!(
            e.problem.contains("worker_rlimit_nofile 32000") && e.problem.contains("at most 20000"),
            "{e}"
        );
        assert!(e.fix.contains("--worker-connections 10000 or less"), "{e}");
        let e = ha(&[
            ("--worker-rlimit-nofile", "40000"),
            ("--worker-connections", "10000"),
        ])
        .fit(&HERE)
        .unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.value.as_str()),
            ("--worker-rlimit-nofile", "40000")
        );
        assert!(
            e.fix.contains("--worker-rlimit-nofile 20000 or less"),
            "{e}"
        );
        // The baseline keeps nginx's own limit: only nofile moves.
        let (s, fitted) = ha(&[("--nginx", "baseline-default")]).fit(&HERE).unwrap();
        assert_eq!(knobs(&fitted), [("nofile", "200000", "20000")]);
        assert_eq!(s.nginx.unwrap().worker_connections, 1024);
        // single: nofile alone.
        let single = resolve(SpecInput {
            topology: Some(Raw::flag("topology", "single")),
            ..Default::default()
        })
        .unwrap();
        let (s, fitted) = single.fit(&HERE).unwrap();
        assert_eq!((s.nofile, fitted.len()), (20_000, 1));
        // Below the lowest --nofile: not fitted (preflight refuses it, naming the limit).
        let tiny = Offers {
            max_nofile: Some(512),
            ..HERE
        };
        assert!(single.fit(&tiny).unwrap().1.is_empty());
    }
}
