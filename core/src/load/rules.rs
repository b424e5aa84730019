//! The rules across a load's settings, and a bench's fault: what no value's own range shows. Stated
//! once, here, and called wherever a load or a bench is made (`exectl load`'s flags, a bench's or a
//! sweep's, a campaign row's `bench:`, a program's `LoadSettings`), before anything runs.

use std::time::Duration;

use super::{Scenario, MAX_ARRIVAL_RATE, MIN_ARRIVAL_RATE};
use crate::bench::fault::Fault;
use crate::error::UsageError;
use crate::units::show;

/// What the rules read of a load (and its bench's fault).
#[derive(Debug, Clone, Copy)]
pub struct Workload<'a> {
    pub scenario: Scenario,
    pub hold: Duration,
    pub ramp: Option<Duration>,
    pub arrival_rate: Option<f64>,
    pub churn: Option<Duration>,
    pub tokens: bool,
    pub relogin: bool,
    /// A dropped user dials again: `--reconnect`, churn, or a bench's fault.
    pub reconnect: bool,
    pub fault: Option<&'a Fault>,
}

/// `rate` sessions a second, within MIN..=MAX_ARRIVAL_RATE (NaN is in no range); errors show it as
/// `given`.
pub fn checked_rate(rate: f64, given: &str) -> Result<f64, UsageError> {
    match (MIN_ARRIVAL_RATE..=MAX_ARRIVAL_RATE).contains(&rate) {
        true => Ok(rate),
        false => Err(UsageError::new(
            "--arrival-rate",
            given,
            format!(
                "sessions a second: a number from {MIN_ARRIVAL_RATE} (one every {} s) to {MAX_ARRIVAL_RATE}",
                1.0 / MIN_ARRIVAL_RATE
            ),
            "give e.g. --arrival-rate 50 (or 50/s)",
        )),
    }
}

/// A held socket needs a hold, and churn or a fault one to drop; the open model says when each
/// session starts (no ramp); relogin needs a way back and passwords; a login burst measures logins;
/// a fault happens inside the hold.
pub fn check(w: &Workload) -> Result<(), UsageError> {
    let holds = w.scenario.uses_socket();
    if let (Some(churn), false) = (w.churn, holds) {
        return Err(UsageError::new(
            "--churn",
            show(churn),
            format!("{} holds no socket to leave", w.scenario.name()),
            "use it with idle, collab or editing",
        ));
    }
    if holds && w.hold.is_zero() {
        return Err(UsageError::new(
            "--hold",
            "0s",
            "a socket must be held for some time",
            "give e.g. --hold 30s",
        ));
    }
    if let Some(rate) = w.arrival_rate {
        checked_rate(rate, &rate.to_string())?;
        if let Some(ramp) = w.ramp {
            return Err(UsageError::new(
                "--ramp",
                show(ramp),
                "--arrival-rate already says when each session starts (user i at i/R s)",
                "drop --ramp, or --arrival-rate for the closed model",
            ));
        }
    }
    if w.relogin && w.tokens {
        return Err(UsageError::new(
            "--relogin",
            "true",
            "the users log in again with their accounts' passwords; --tokens skips every login",
            "drop --tokens, or --relogin",
        ));
    }
    if w.relogin && !w.reconnect {
        return Err(UsageError::new(
            "--relogin",
            "true",
            "it says how a dropped user comes back, and without --reconnect (bench, sweep: a --fault) none does",
            "add --reconnect (bench, sweep: --fault WHAT@WHEN), or drop --relogin",
        ));
    }
    if w.tokens && w.scenario == Scenario::LoginBurst {
        return Err(UsageError::new(
            "--tokens",
            "true",
            "login-burst measures logins; minted tokens skip them",
            "drop --tokens",
        ));
    }
    if let Some(f) = w.fault {
        let refused = |why: String, fix: &str| UsageError::new("--fault", f.text(), why, fix);
        f.check_hold(w.hold)
            .map_err(|why| refused(why, "give a WHEN shorter than --hold, or a longer --hold"))?;
        if !holds {
            return Err(refused(
                format!("{} holds no socket to drop", w.scenario.name()),
                "use it with idle, collab or editing",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle() -> Workload<'static> {
        Workload {
            scenario: Scenario::Idle,
            hold: Duration::from_secs(30),
            ramp: None,
            arrival_rate: None,
            churn: None,
            tokens: false,
            relogin: false,
            reconnect: false,
            fault: None,
        }
    }

    /// Each rule refuses naming its own flag; a workload that breaks none passes.
    #[test]
    fn each_rule_names_its_flag() {
        check(&idle()).unwrap();
        let fault = Fault::parse("roll@40s").unwrap();
        let burst = Workload {
            scenario: Scenario::LoginBurst,
            ..idle()
        };
        for (w, flag) in [
            (
                Workload {
                    churn: Some(Duration::from_secs(5)),
                    ..burst
                },
                "--churn",
            ),
            (
                Workload {
                    hold: Duration::ZERO,
                    ..idle()
                },
                "--hold",
            ),
            (
                Workload {
                    arrival_rate: Some(0.0),
                    ..idle()
                },
                "--arrival-rate",
            ),
            (
                Workload {
                    arrival_rate: Some(5.0),
                    ramp: Some(Duration::from_secs(1)),
                    ..idle()
                },
                "--ramp",
            ),
            (
                Workload {
                    relogin: true,
                    reconnect: true,
                    tokens: true,
                    ..idle()
                },
                "--relogin",
            ),
            (
                Workload {
                    relogin: true,
                    ..idle()
                },
                "--relogin",
            ),
            (
                Workload {
                    tokens: true,
                    ..burst
                },
                "--tokens",
            ),
            (
                Workload {
                    fault: Some(&fault),
                    ..idle()
                },
                "--fault",
            ),
        ] {
            assert_eq!(check(&w).unwrap_err().field, flag, "{w:?}");
        }
        let inside = Fault::parse("roll@5s").unwrap();
        check(&Workload {
            fault: Some(&inside),
            reconnect: true,
            relogin: true,
            ..idle()
        })
        .unwrap();
        let e = check(&Workload {
            fault: Some(&inside),
            ..burst
        })
        .unwrap_err();
        assert!(e.problem.contains("no socket to drop"), "{e}");
    }
}
