//! `--find-capacity --from A --to B`: the capacity of one point, searched. Each probe is a one-level
//! bench (N users at once for the hold, then the leak check). Grow geometrically (×2) from A until a
//! level fails or B passes, then bisect between the last pass and the first fail until the gap is
//! within the precision of the pass. A probe that could not count (invalid: another client on the
//! stack, the client's own browser) is neither: it is run again once, and a second invalid probe in a
//! row ends the search with the capacity unknown. Pure: it says which level next, the caller runs it.

use serde::{Deserialize, Serialize};

use crate::error::UsageError;

/// Each growth step doubles the users.
pub const GROWTH: u64 = 2;
/// The gap between the last pass and the first fail, as a share of the pass, at which to stop.
pub const DEFAULT_PRECISION: f64 = 0.10;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bounds {
    pub from: u64,
    pub to: u64,
    /// 0.10: stop when (first fail − last pass) ≤ 10 % of the last pass.
    pub precision: f64,
}

/// How many times an invalid probe is run again before the search gives up, its capacity unknown.
pub const INVALID_RETRIES: usize = 1;

/// The precisions a search may be asked for, as shares: 0.1 % .. 100 %.
pub const PRECISION: std::ops::RangeInclusive<f64> = 0.001..=1.0;

impl Bounds {
    pub fn new(from: u64, to: u64, precision: f64) -> Result<Bounds, UsageError> {
        if from == 0 || from >= to {
            return Err(UsageError::new(
                "--from",
                from,
                format!("the search needs 0 < --from < --to (--to is {to})"),
                "give e.g. --find-capacity --from 100 --to 20000",
            ));
        }
        if !PRECISION.contains(&precision) {
            return Err(UsageError::new(
                "--precision",
                format!("{}%", precision * 100.0),
                "outside 0.1 % .. 100 %",
                "give e.g. --precision 10%",
            ));
        }
        Ok(Bounds {
            from,
            to,
            precision,
        })
    }
}

/// One probe of the search: a level and whether it held its users.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub users: u64,
    /// Its users held at once (the capacity question): a level that held them and leaked counts, its
    /// leak said in `reasons`.
    pub passed: bool,
    /// It could not count (another client on the stack, the client's own browser): neither a pass nor
    /// a fail (`passed` is false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub invalid: bool,
    /// Its bench (a one-level bench of the point).
    pub run_id: String,
    /// Why it failed, as its level says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

/// What the probes found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    /// The highest level that passed below the first that failed (None: even --from failed).
    pub users: Option<u64>,
    /// Every probe passed up to --to: the capacity is at least it.
    pub at_least: bool,
    /// The first level that failed, above `users`.
    pub failed_at: Option<u64>,
    /// The search gave up on probes that could not count (`INVALID_RETRIES`): the capacity is unknown.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unknown: bool,
}

/// The highest pass below the lowest fail, and that fail; invalid probes say neither.
fn bracket(probes: &[Probe]) -> (Option<u64>, Option<u64>) {
    let counted = || probes.iter().filter(|p| !p.invalid);
    let hi = counted().filter(|p| !p.passed).map(|p| p.users).min();
    let lo = counted()
        .filter(|p| p.passed && hi.is_none_or(|h| p.users < h))
        .map(|p| p.users)
        .max();
    (lo, hi)
}

/// The last probes were invalid more than `INVALID_RETRIES` times in a row: the search stops there.
fn given_up(probes: &[Probe]) -> bool {
    probes.iter().rev().take_while(|p| p.invalid).count() > INVALID_RETRIES
}

/// The next level to probe (the same again after an invalid probe), None when the search is over.
pub fn next(b: &Bounds, probes: &[Probe]) -> Option<u64> {
    if given_up(probes) {
        return None;
    }
    match bracket(probes) {
        (None, None) => Some(b.from),
        (Some(lo), None) if lo >= b.to => None,
        (Some(lo), None) => Some((lo.saturating_mul(GROWTH)).min(b.to)),
        // Even the first level failed: the capacity is below --from.
        (None, Some(_)) => None,
        (Some(lo), Some(hi)) => {
            let close = (b.precision * lo as f64).ceil().max(1.0) as u64;
            (hi - lo > close).then(|| lo + (hi - lo) / 2)
        }
    }
}

/// What the probes found; nothing but `unknown` when the search gave up on invalid probes (the level
/// it stopped at was neither held nor failed, so no bracket holds the capacity).
pub fn found(b: &Bounds, probes: &[Probe]) -> Found {
    if given_up(probes) {
        return Found {
            users: None,
            at_least: false,
            failed_at: None,
            unknown: true,
        };
    }
    let (lo, hi) = bracket(probes);
    Found {
        users: lo,
        at_least: hi.is_none() && lo == Some(b.to),
        failed_at: hi,
        unknown: false,
    }
}

impl Found {
    /// `1,200`, `at least 20,000`, `below 100`, `unknown`, or `not measured`.
    pub fn text(&self, b: &Bounds) -> String {
        if self.unknown {
            return "unknown".into();
        }
        match (self.users, self.at_least, self.failed_at) {
            (Some(u), true, _) => format!("at least {}", crate::plateau::group(u)),
            (Some(u), false, _) => crate::plateau::group(u),
            (None, _, Some(_)) => format!("below {}", crate::plateau::group(b.from)),
            (None, _, None) => "not measured".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run the search against a system that holds exactly `cap` users.
    fn search(b: &Bounds, cap: u64) -> (Vec<u64>, Found) {
        let mut probes = Vec::new();
        while let Some(u) = next(b, &probes) {
            assert!(probes.len() < 40, "the search ends");
            probes.push(Probe {
                users: u,
                passed: u <= cap,
                invalid: false,
                run_id: format!("p{u}"),
                reasons: vec![],
            });
        }
        (probes.iter().map(|p| p.users).collect(), found(b, &probes))
    }

    #[test]
    fn grows_then_bisects_to_the_precision() {
        let b = Bounds::new(100, 20_000, 0.10).unwrap();
        let (levels, f) = search(&b, 1234);
        assert_eq!(&levels[..5], [100, 200, 400, 800, 1600]);
        let (cap, fail) = (f.users.unwrap(), f.failed_at.unwrap());
        assert!(cap <= 1234 && fail > 1234, "{levels:?}");
        assert!((fail - cap) as f64 <= 0.10 * cap as f64 + 1.0, "{levels:?}");
        assert!(!f.at_least);
        assert_eq!(f.text(&b), crate::plateau::group(cap));
    }

    #[test]
    fn every_pass_up_to_to_is_at_least_to_and_a_first_fail_is_below_from() {
        let b = Bounds::new(100, 1000, 0.10).unwrap();
        let (levels, f) = search(&b, 5000);
        assert_eq!(levels, [100, 200, 400, 800, 1000]);
        assert!(f.at_least && f.users == Some(1000));
        assert_eq!(f.text(&b), "at least 1,000");
        let (levels, f) = search(&b, 50);
        assert_eq!(levels, [100]);
        assert_eq!((f.users, f.text(&b).as_str()), (None, "below 100"));
    }

    /// An invalid probe is neither a pass nor a fail: the same level is probed again, and a second
    /// invalid probe in a row ends the search with the capacity unknown, never taken for a fail (an
    /// invalid probe counted as one bisected below it: the capacity came from another client).
    #[test]
    fn an_invalid_probe_is_run_again_then_the_capacity_is_unknown() {
        let b = Bounds::new(100, 1000, 0.10).unwrap();
        let probe = |users, passed, invalid| Probe {
            users,
            passed,
            invalid,
            run_id: format!("p{users}"),
            reasons: vec![],
        };
        let mut probes = vec![probe(100, true, false), probe(200, false, true)];
        assert_eq!(next(&b, &probes), Some(200), "the invalid level again");
        // Held on the second try: the search goes on from it.
        probes.push(probe(200, true, false));
        assert_eq!(next(&b, &probes), Some(400));
        let f = found(&b, &probes);
        assert_eq!((f.users, f.failed_at, f.unknown), (Some(200), None, false));
        // Invalid twice in a row: over, and unknown, whatever passed below.
        probes.push(probe(400, false, true));
        probes.push(probe(400, false, true));
        assert_eq!(next(&b, &probes), None);
        let f = found(&b, &probes);
        assert!(
            f.unknown && f.users.is_none() && f.failed_at.is_none(),
            "{f:?}"
        );
        assert_eq!(f.text(&b), "unknown");
        // A first probe invalid twice: not "below 100".
        let twice = [probe(100, false, true), probe(100, false, true)];
        assert_eq!(next(&b, &twice), None);
        assert_eq!(found(&b, &twice).text(&b), "unknown");
    }

    #[test]
    fn bad_bounds_are_refused() {
        assert_eq!(Bounds::new(0, 10, 0.1).unwrap_err().field, "--from");
        assert_eq!(Bounds::new(10, 10, 0.1).unwrap_err().field, "--from");
        assert_eq!(Bounds::new(10, 100, 0.0).unwrap_err().field, "--precision");
    }
}
