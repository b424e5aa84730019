//! The growth charts (`--churn`): for each level that had churn, each app instance's connections and
//! rooms, and its RSS, over the common hold as sampled, each with its fitted trend dashed from the
//! hold's start to its end (`bench::growth`): a leak is a line that climbs with its fit, a healthy
//! instance a flat one.

use super::super::growth::points;
use super::super::results::Results;
use super::super::timeline::Sample;
use super::charts::{self, Band, Chart, Series, XAxis};

/// The charts of every level with churn, drawn (none without).
pub fn charts(r: &Results, samples: &[Sample], spans: &[Band]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for (i, l) in r.levels.iter().enumerate() {
        let Some(g) = &l.figures.growth else {
            continue;
        };
        let (from, to) = (
            l.span.hold_ms as f64 / 1000.0,
            l.span.hold_end_ms as f64 / 1000.0,
        );
        let kinds: [(&str, &str, &[&str], f64); 2] = [
            (
                "counts",
                "connections / rooms",
                &["connections", "rooms"],
                1.0,
            ),
            ("rss", "RSS (MiB)", &["rss"], 1.0 / (1u64 << 20) as f64),
        ];
        for (id, y_label, resources, scale) in kinds {
            let mut series = Vec::new();
            for (c, s) in g
                .series
                .iter()
                .filter(|s| resources.contains(&s.resource.as_str()))
                .enumerate()
            {
                let name = format!("{} {}", s.service, s.resource);
                let measured = points(&l.span, samples, &s.service, &s.resource)
                    .into_iter()
                    .map(|(x, y)| (x, y * scale))
                    .collect();
                series.push(Series::line(name.clone(), c, measured));
                let fit = [from, to].map(|x| (x, s.trend.at(x) * scale)).to_vec();
                series.push(Series::limit(format!("{name}: trend"), c, fit));
            }
            out.push(charts::figure(&Chart {
                id: format!("growth-{}-{id}", i + 1),
                title: format!(
                    "{} users, churn {} s: {} over the hold, with each trend (dashed)",
                    l.users,
                    super::super::decimal::show(g.churn_s),
                    y_label
                ),
                y_label: y_label.into(),
                x: XAxis::Time {
                    spans: spans.get(i).copied().into_iter().collect(),
                },
                series,
                empty: charts::NOT_SAMPLED,
            })?);
        }
    }
    Ok(out)
}
