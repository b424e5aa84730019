//! The scaling law's figure: each instance count's measured capacity beside the fitted law, drawn on to
//! the next count (its prediction).

use crate::bench::report::charts::{figure, Chart, Series, XAxis, NOT_SAMPLED};
use crate::sweep::scaling::Scaling;

/// Measured against fitted, one tick per instance count from the first measured to the predicted one
/// (None: nothing fitted).
pub fn chart(s: &Scaling) -> Result<Option<String>, String> {
    let (Some(fit), Some(next)) = (&s.fit, &s.next) else {
        return Ok(None);
    };
    let first = fit.points.iter().map(|p| p.0 as u32).min().unwrap_or(1);
    let x = |n: f64| n - first as f64;
    let counts: Vec<u32> = (first..=next.instances).collect();
    let chart = Chart {
        id: "scaling".into(),
        title: "Capacity by instances: measured (median) and the Universal Scalability Law fitted to it, with the next count predicted".into(),
        y_label: "users".into(),
        x: XAxis::Ticks {
            labels: counts.iter().map(|n| format!("{n} instances")).collect(),
        },
        series: vec![
            Series::line(
                "measured",
                0,
                fit.points.iter().map(|&(n, c)| (x(n), c)).collect(),
            ),
            Series::limit(
                "USL fit",
                1,
                counts
                    .iter()
                    .map(|&n| (x(n as f64), fit.usl.capacity(n as f64)))
                    .collect(),
            ),
            Series::line(
                "predicted",
                1,
                vec![(x(next.instances as f64), next.capacity)],
            ),
        ],
        empty: NOT_SAMPLED,
    };
    figure(&chart).map(Some)
}
