//! `exectl bench`: the seed's method end to end. For each level in order: run the scenario at that many
//! users (the load engine, in process) while the sampler reads the SUT on the same clock; then the leak
//! check; then the level's verdict (`core::bench`). Stops after the first failing level unless asked to
//! go on. The caller writes the results after every level, so a bench cut short keeps what it measured.

pub mod figures;
pub mod sampler;

use std::time::Duration;

use anyhow::Result;

use crate::core::bench::limiting::{self, Known};
use crate::core::bench::{LevelResult, LevelSpan, Sample, Slos};
use crate::load::metrics::Live;
use crate::load::{runner, LoadOptions};
use sampler::{LevelState, Sampler};

/// What one level needs besides its user count.
pub struct Plan {
    /// The load of each level, in order (users set per level).
    pub levels: Vec<LoadOptions>,
    pub slos: Slos,
    pub settle: Duration,
    pub continue_after_fail: bool,
    /// nginx: worker_connections × worker processes, when the stack has an LB.
    pub nginx_capacity: Option<u64>,
    /// Print a progress line every sample while a level runs.
    pub progress: bool,
}

/// A level as it finished, for the caller's progress and its files.
pub struct Done<'a> {
    pub index: usize,
    pub of: usize,
    pub result: &'a LevelResult,
    pub samples: &'a [Sample],
}

/// Run every level (the caller saves after each: `after_level`). Returns the levels run.
pub fn run(
    plan: Plan,
    sampler: &Sampler,
    mut after_level: impl FnMut(Done) -> Result<()>,
) -> Result<Vec<LevelResult>> {
    let mut out: Vec<LevelResult> = Vec::new();
    let of = plan.levels.len();
    for (index, mut opts) in plan.levels.into_iter().enumerate() {
        let users = opts.users as u64;
        let live = std::sync::Arc::new(Live::default());
        opts.live = Some(live.clone());
        let (ramp, hold) = (opts.ramp, opts.hold);
        let start_ms = sampler.now_ms();
        let start_unix = unix_now();
        sampler.level(Some(LevelState {
            progress: plan.progress.then(|| format!("level {}/{of}", index + 1)),
            users,
            live,
            started: tokio::time::Instant::now(),
            ramp,
        }));
        let summary = runner::run(opts)?;
        let end_ms = sampler.now_ms();
        sampler.level(None);
        let leak = sampler.leak_check(plan.settle);
        let settled_ms = sampler.now_ms();
        let samples = sampler.snapshot();
        let ramp_over = (start_ms + ramp.as_millis() as u64).min(end_ms);
        let span = LevelSpan {
            users,
            start_ms,
            hold_ms: holding_from(&samples, users, ramp_over, end_ms),
            hold_end_ms: (start_ms + hold.as_millis() as u64).min(end_ms),
            end_ms,
            settled_ms,
        };
        let known = Known {
            nginx_capacity: plan.nginx_capacity,
            nginx_not_enough: sampler.nginx_not_enough(start_unix),
            host_cpus: sampler.facts.host_cpus,
        };
        let figures = figures::of(&summary);
        let checks = plan.slos.check(&figures);
        let result = LevelResult::judge(span, figures, checks, leak, &samples, || {
            limiting::limiting_component(&span, &samples, &known)
        });
        let passed = result.passed;
        out.push(result);
        after_level(Done {
            index,
            of,
            result: out.last().expect("just pushed"),
            samples: &samples,
        })?;
        if !passed && !plan.continue_after_fail {
            break;
        }
    }
    Ok(out)
}

/// When every user holds: the first sample after the one at whose end the generator had every user's
/// socket open (the ramp's end only says every user was dialled; logins and upgrades take a while, and
/// the app joins its room a moment after the 101). The ramp's end when no sample saw them all open.
fn holding_from(samples: &[Sample], users: u64, ramp_over: u64, end_ms: u64) -> u64 {
    let mut level = samples
        .iter()
        .filter(|s| s.t_ms >= ramp_over && s.t_ms <= end_ms);
    level
        .by_ref()
        .find(|s| s.generator.open_sockets >= users)
        .and_then(|_| level.next())
        .map_or(ramp_over, |s| s.t_ms)
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::bench::GeneratorSample;

    fn at(t_ms: u64, open: u64) -> Sample {
        Sample {
            t_ms,
            generator: GeneratorSample {
                open_sockets: open,
                ..GeneratorSample::default()
            },
            ..Sample::default()
        }
    }

    #[test]
    fn the_hold_begins_after_every_socket_is_open_not_at_the_ramps_end() {
        let s = [at(1000, 90), at(2001, 99), at(3001, 100), at(4001, 100)];
        assert_eq!(holding_from(&s, 100, 2000, 9000), 4001);
        // Open before the ramp's end is not taken from a sample before it.
        let early = [at(1000, 100), at(2001, 100), at(3001, 100)];
        assert_eq!(holding_from(&early, 100, 2000, 9000), 3001);
        // Never all open (a failing level): the ramp's end.
        assert_eq!(holding_from(&s, 200, 2000, 9000), 2000);
        assert_eq!(holding_from(&s[..3], 100, 2000, 9000), 2000);
    }
}
