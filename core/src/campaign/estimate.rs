//! `exectl campaign --plan`: how long each row should take, from what it asks — the deploys it needs,
//! the accounts it seeds, each level's ramp, hold and leak check, a search's probes — and constants
//! measured on this project's 2-core machine with the stand-in (BENCHMARKS.md "Campaign"). An
//! estimate, said as one: the real figure is in results.json beside it.

use serde::Serialize;

/// What a row's deploy has to do, given the rows before it on the same stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Deploy {
    /// The stack's first row: everything is created.
    First,
    /// Its spec differs from the previous row's on that stack: what differs is recreated.
    Changed,
    /// The same spec: nothing to change.
    Same,
}

/// A row as the estimate reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shape {
    pub deploy: Deploy,
    /// ha: more services to create and wait for.
    pub ha: bool,
    /// The app's healthcheck interval, seconds (a deploy waits for its first healthy answer).
    pub health_interval_s: f64,
    /// Its sweep's points (values × repeats; 1 for fixed levels with no variable).
    pub points: u32,
    /// The variable changes the stack (a deploy per point), not the workload.
    pub deploy_per_point: bool,
    /// Each point's levels, or a search's probes as estimated (`probes`).
    pub levels: u32,
    pub ramp_s: f64,
    pub hold_s: f64,
    pub settle_s: f64,
    /// How long the app keeps an empty room (30 s, the stand-in's `STANDIN_ROOM_CLEANUP_MS`): the leak
    /// check waits for the rooms to go.
    pub room_cleanup_s: f64,
    /// Accounts seeded (the first time: its manifest made; 0: already there).
    pub accounts: u64,
}

// Measured on this 2-core machine with the fixture images (campaigns/quick.yaml, 2026-12-06: single
// created in 4.7 s with its seeding, ha in 6.5 s; a level of ramp 3 s + hold 15 s spanned 19.0 s from
// its first dial to its leak check's end, the stand-in dropping empty rooms after 0.5 s).
/// A new stack (single, ha): its network, volumes and containers created, each waited for (besides
/// the app's first healthcheck).
const FIRST_DEPLOY_S: [f64; 2] = [3.0, 5.0];
/// A stack converged to another spec: what differs recreated.
const CHANGED_DEPLOY_S: [f64; 2] = [2.0, 3.0];
/// A deploy that changes nothing still observes, plans and checks every service.
const SAME_DEPLOY_S: f64 = 1.0;
/// A seeding's fixed part (schema, verify) and its part per account (10,000 in 2.3 s at a low
/// bcrypt cost: BENCHMARKS.md "Prepare").
const SEED_S: f64 = 1.0;
const SEED_PER_ACCOUNT_S: f64 = 0.0003;
/// A bench's own work besides its levels: the stack checked idle, the sampler, the report.
const BENCH_S: f64 = 0.5;
/// A level's own work besides its ramp, hold and leak check.
const LEVEL_S: f64 = 0.5;
/// The leak check ends this long after the app's room cleanup (its last sample).
const LEAK_CHECK_S: f64 = 0.5;

/// A capacity search's probes, as run from `from` to `to` at `precision`: doubling until it fails
/// (at worst up to `to`), then halving the gap until it is within the precision.
pub fn probes(from: u64, to: u64, precision: f64) -> u32 {
    let growth = ((to as f64 / from.max(1) as f64).log2().ceil().max(0.0)) as u32 + 1;
    let bisect = (1.0 / precision.max(0.001)).log2().ceil().max(0.0) as u32;
    growth + bisect
}

/// Seconds the row should take.
pub fn seconds(s: &Shape) -> f64 {
    let i = usize::from(s.ha);
    let deploy = match s.deploy {
        Deploy::First => FIRST_DEPLOY_S[i] + s.health_interval_s,
        Deploy::Changed => CHANGED_DEPLOY_S[i] + s.health_interval_s,
        Deploy::Same => SAME_DEPLOY_S,
    };
    let redeploys = match s.deploy_per_point {
        true => f64::from(s.points.saturating_sub(1)) * (CHANGED_DEPLOY_S[i] + s.health_interval_s),
        false => f64::from(s.points.saturating_sub(1)) * SAME_DEPLOY_S,
    };
    let seed = match s.accounts {
        0 => 1.0,
        n => SEED_S + n as f64 * SEED_PER_ACCOUNT_S,
    };
    let leak_check = s.settle_s.min(s.room_cleanup_s + LEAK_CHECK_S);
    let level = s.ramp_s + s.hold_s + LEVEL_S + leak_check;
    let benches = f64::from(s.points) * (BENCH_S + f64::from(s.levels) * level);
    deploy + redeploys + seed + benches
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Shape {
        Shape {
            deploy: Deploy::First,
            ha: false,
            health_interval_s: 1.0,
            points: 1,
            deploy_per_point: false,
            levels: 2,
            ramp_s: 5.0,
            hold_s: 20.0,
            settle_s: 45.0,
            room_cleanup_s: 30.0,
            accounts: 100,
        }
    }

    #[test]
    fn a_row_takes_its_deploy_its_seeding_and_its_levels() {
        let s = shape();
        // 3 + 1 deploy, 1 + 0.03 seed, 0.5 + 2 × (5 + 20 + 0.5 + 30.5) bench.
        assert!(
            (seconds(&s) - (4.0 + 1.03 + 112.5)).abs() < 1e-9,
            "{}",
            seconds(&s)
        );
        // The leak check waits for the rooms (at most --settle).
        let quick = Shape {
            room_cleanup_s: 0.5,
            ..shape()
        };
        assert!((seconds(&s) - seconds(&quick) - 2.0 * 29.5).abs() < 1e-9);
        let same = Shape {
            deploy: Deploy::Same,
            accounts: 0,
            ..shape()
        };
        assert!((seconds(&s) - seconds(&same) - (4.0 + 1.03 - 1.0 - 1.0)).abs() < 1e-9);
        // A variable of the stack redeploys at each point; one of the workload does not.
        let swept = Shape {
            points: 3,
            deploy_per_point: true,
            ..shape()
        };
        let workload = Shape {
            deploy_per_point: false,
            ..swept.clone()
        };
        assert!((seconds(&swept) - seconds(&workload) - 2.0 * (3.0 - 1.0)).abs() < 1e-9);
    }

    #[test]
    fn a_search_probes_up_to_its_top_then_bisects() {
        // 100, 200, 400, 800, 1000 (5), then 10 % in 4 halvings.
        assert_eq!(probes(100, 1000, 0.10), 5 + 4);
        assert_eq!(probes(100, 100, 0.5), 1 + 1);
    }
}
