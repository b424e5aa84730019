//! What a sample says of the generator, and the progress line printed with it while a level runs.

use super::LevelState;
use crate::load::metrics::{self, Live};
use exectl_core::bench::cpu::busiest;
use exectl_core::bench::timeline::ContainerSample;
use exectl_core::bench::GeneratorSample;

/// The generator at this sample: while a level runs, the users its ramp has reached, its open sockets
/// and failures; always its CPU (`cpu_pct`, of its own CPUs) and RSS.
pub(super) fn generator(level: Option<&LevelState>, cpu_pct: Option<f64>) -> GeneratorSample {
    let rss_bytes = Some(metrics::rss_bytes().1);
    let Some(l) = level else {
        return GeneratorSample {
            cpu_pct,
            rss_bytes,
            ..GeneratorSample::default()
        };
    };
    let ramp = l.ramp.as_secs_f64();
    let frac = if ramp <= 0.0 {
        1.0
    } else {
        (l.started.elapsed().as_secs_f64() / ramp).min(1.0)
    };
    GeneratorSample {
        target_users: (l.users as f64 * frac).round() as u64,
        open_sockets: Live::get(&l.live.open),
        failures: Live::get(&l.live.failed),
        cpu_pct,
        rss_bytes,
    }
}

/// "[   12s] level 1/3: 400 users, open 400/400 at once, holding 7/20 s, failures 0, busiest app-2 9 %
/// of 0.5 CPU", with what is down or paused (`incidents`) said on every line while it lasts. Users are
/// counted held only when their hold ends: "held N" is said once some are (before that the line says
/// how many are open and how far the hold is), never "held 0" through a hold that is going well.
pub(super) fn line(
    l: &LevelState,
    label: &str,
    elapsed_s: f64,
    containers: &[ContainerSample],
    generator: &GeneratorSample,
    incidents: Option<String>,
) -> String {
    let busiest = busiest(containers, &l.cpu);
    let logins = (!l.tokens).then(|| Live::get(&l.live.logins_ok));
    let at_once = l
        .live
        .plateau
        .view(generator.open_sockets, logins)
        .map(|v| exectl_core::plateau::ramp_status(&v))
        .unwrap_or_default();
    let held = match Live::get(&l.live.held) {
        0 => String::new(),
        n => format!(", held {n}"),
    };
    let incidents = incidents.map(|i| format!(" — {i}")).unwrap_or_default();
    format!(
        "[{elapsed_s:>5.0}s] {label}: {} users, {at_once}{held}, failures {}, busiest {busiest}{incidents}",
        l.users, generator.failures
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Issue #36: the line said "held 0" through the whole hold; held users are said once counted.
    #[test]
    fn held_is_said_once_users_are_counted_held() {
        let live = Arc::new(Live::default());
        let l = LevelState {
            progress: None,
            users: 40,
            live: live.clone(),
            started: tokio::time::Instant::now(),
            ramp: std::time::Duration::from_secs(2),
            tokens: true,
            cpu: Default::default(),
        };
        let g = GeneratorSample {
            open_sockets: 40,
            ..GeneratorSample::default()
        };
        let holding = line(&l, "level 1/1", 12.0, &[], &g, None);
        assert!(!holding.contains("held"), "{holding}");
        assert!(holding.contains("40 users") && holding.contains("failures 0"));
        for _ in 0..38 {
            Live::inc(&live.held);
        }
        let ending = line(&l, "level 1/1", 31.0, &[], &g, None);
        assert!(ending.contains(", held 38, failures 0"), "{ending}");
    }
}
