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

/// "[   12s] level 1/3: 400 users, open 400/400 at once, holding 7/20 s, held 0 failures 0, busiest
/// app-2 9 % of 0.5 CPU", with what is down or paused (`incidents`) said on every line while it lasts.
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
    let incidents = incidents.map(|i| format!(" — {i}")).unwrap_or_default();
    format!(
        "[{elapsed_s:>5.0}s] {label}: {} users, {at_once}, held {} failures {}, busiest {busiest}{incidents}",
        l.users,
        Live::get(&l.live.held),
        generator.failures
    )
}
