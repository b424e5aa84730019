//! What a target can give against what a spec asks: its CPUs, its memory (the app's idle footprint
//! included) and its open-files limit, as deploy's preflight and a sweep's first check read them. Each
//! problem names the flag that fixes it. Pure: the target's figures are read by the shell.

use crate::error::UsageError;
use crate::spec::Spec;

/// The spec against what the target offers (its CPUs, memory, open-files limit: None where not
/// known); every problem found.
pub fn check_capacity(
    spec: &Spec,
    ncpu: Option<i64>,
    mem_total: Option<i64>,
    max_nofile: Option<u64>,
) -> Vec<UsageError> {
    let mut out = Vec::new();
    let cpus: f64 = spec.cpus.parse().unwrap_or(0.0);
    if let Some(n) = ncpu {
        if cpus > n as f64 {
            out.push(UsageError::new(
                "--cpus",
                &spec.cpus,
                format!("the target has {n} CPUs and the engine refuses a larger limit"),
                format!("pass --cpus {n} or less"),
            ));
        }
    }
    if let Some(m) = mem_total {
        if spec.memory_bytes > m as u64 {
            out.push(UsageError::new(
                "--memory",
                &spec.memory,
                format!("the target has {} MiB of memory", m >> 20),
                format!("pass --memory {}m or less", m >> 20),
            ));
        }
    }
    out.extend(idle_memory(spec, mem_total));
    if let Some(max) = max_nofile {
        if spec.nofile > max {
            out.push(UsageError::new(
                "--nofile",
                spec.nofile,
                format!(
                    "the target allows at most {max} open files per container (the engine's hard limit)"
                ),
                format!(
                    "pass --nofile {max} or less (with --worker-rlimit-nofile and --worker-connections to match), or raise the engine's LimitNOFILE"
                ),
            ));
        }
    }
    out
}

/// The real app image needs 200–260 MiB per instance before any load: a limit below that kills it at
/// idle, and instances whose idle memory alone exceeds the target never come up together.
fn idle_memory(spec: &Spec, mem_total: Option<i64>) -> Vec<UsageError> {
    let Some(idle) = crate::footprint::idle_mib(&spec.images.app) else {
        return Vec::new();
    };
    let (_, high) = idle;
    let about = crate::footprint::describe(idle);
    if spec.memory_bytes < high << 20 {
        // Below the footprint, the instances' sum is beside the point.
        return vec![UsageError::new(
            "--memory",
            &spec.memory,
            format!("{about}: this limit would have it killed before any load"),
            format!(
                "pass --memory {}m or more (the default is 2g)",
                (high * 2).next_multiple_of(128)
            ),
        )];
    }
    if let Some(m) = mem_total {
        let need = u64::from(spec.instances) * (high << 20);
        if need > m as u64 {
            let fit = (m as u64 / (high << 20)).max(1);
            return vec![UsageError::new(
                "--instances",
                spec.instances,
                format!(
                    "{about}: {} instances need about {} MiB idle, more than the target's {} MiB",
                    spec.instances,
                    need >> 20,
                    m >> 20
                ),
                format!("pass --instances {fit} or fewer, or use a larger SUT"),
            )];
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(flags: &[(&'static str, &str)]) -> Spec {
        crate::spec::resolve(crate::spec::ha_input(flags)).unwrap()
    }

    /// The one problem of a check, by field and value.
    fn one(mut v: Vec<UsageError>) -> UsageError {
        assert_eq!(v.len(), 1, "{v:?}");
        v.remove(0)
    }

    #[test]
    fn the_real_images_idle_memory_is_refused_below_its_footprint() {
        let gib = Some(4_i64 << 30);
        assert_eq!(
            check_capacity(&spec(&[("--instances", "4")]), None, gib, None),
            vec![]
        );
        let e = one(check_capacity(
            &spec(&[("--memory", "128m")]),
            None,
            gib,
            None,
        ));
        assert_eq!((e.field.as_str(), e.value.as_str()), ("--memory", "128m"));
        assert!(
            e.problem.contains("200–260 MiB") && e.fix.contains("--memory 640m"),
            "{e}"
        );
        // 16 instances idle at about 4160 MiB: more than 4 GiB, whatever each one's limit.
        let e = one(check_capacity(
            &spec(&[("--instances", "16"), ("--memory", "256m")]),
            None,
            gib,
            None,
        ));
        assert_eq!(e.field, "--memory", "256m is below the high end: {e}");
        let e = one(check_capacity(
            &spec(&[("--instances", "16"), ("--memory", "300m")]),
            None,
            gib,
            None,
        ));
        assert_eq!((e.field.as_str(), e.value.as_str()), ("--instances", "16"));
        assert!(e.fix.contains("--instances 15 or fewer"), "{e}");
    }

    #[test]
    fn every_capacity_problem_is_named() {
        let mut s = spec(&[("--cpus", "64"), ("--memory", "64g"), ("--instances", "40")]);
        s.nofile = 30000;
        let fields: Vec<String> = check_capacity(&s, Some(2), Some(8 << 30), Some(20000))
            .into_iter()
            .map(|e| e.field)
            .collect();
        assert_eq!(fields, ["--cpus", "--memory", "--instances", "--nofile"]);
    }

    #[test]
    fn other_images_get_no_idle_advice() {
        let mut s = spec(&[("--memory", "64m"), ("--instances", "16")]);
        s.images.app = "exectl-fixture/standin:latest".into();
        assert_eq!(check_capacity(&s, None, Some(1 << 30), None), vec![]);
    }
}
