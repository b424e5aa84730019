//! Growth while users come and go (`--churn`, #39 part 2): each app instance's RSS, open files,
//! connections and rooms over the level's common hold, fitted to a trend (`trend`: Theil–Sen with a
//! bootstrap interval), and each trend's growth over the hold as a percent of a reference — the
//! series' own median for RSS and open files, the level's users for connections and rooms (users that
//! leave and come back keep their count flat; a leak grows it with every leave). The `growth`
//! objective bounds the largest growth whose interval excludes zero. Pure: the samples in, the figures
//! and words out.

use serde::{Deserialize, Serialize};

use super::timeline::{LevelSpan, Sample};
use super::trend::{trend, Trend};

/// One instance's resource over the hold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeriesTrend {
    pub service: String,
    /// "rss", "open files", "connections", "rooms".
    pub resource: String,
    pub trend: Trend,
    /// What its growth is a percent of (its median, or the level's users).
    pub reference: f64,
    /// Its growth over the hold, percent of `reference` (the slope × the hold).
    pub pct_over_hold: f64,
    /// Its interval lies above zero, and it grew past its floor over the hold (`FLOORS`).
    pub significant: bool,
}

/// Growth over the hold under which a trend is noise, whatever its interval: an allocator's warm-up
/// (a stand-in's RSS is 2 MiB: 300 KiB is 15 % of it), a user between its leave and its return.
pub const FLOORS: [(&str, f64); 4] = [
    ("rss", (4u64 << 20) as f64),
    ("open files", 2.0),
    ("connections", 2.0),
    ("rooms", 2.0),
];

impl SeriesTrend {
    /// "app-1 connections +1,450 %/hold (+261,000/h, 95 % 250,000 to 270,000)".
    pub fn describe(&self) -> String {
        let per_h = |v: f64| match self.resource.as_str() {
            "rss" => format!("{:+.1} MiB/h", v / (1u64 << 20) as f64),
            _ => format!("{v:+.0}/h"),
        };
        format!(
            "{} {} {:+.1} % over the hold ({}, 95 % {} to {})",
            self.service,
            self.resource,
            self.pct_over_hold,
            per_h(self.trend.slope_per_h),
            per_h(self.trend.low_per_h),
            per_h(self.trend.high_per_h)
        )
    }
}

/// A level's churn and its instances' trends.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Growth {
    /// `--churn`: a socket's mean life, seconds.
    pub churn_s: f64,
    /// The users' leaves and returns (`leaves`), and any drops, over the level.
    pub recovery: crate::load::recovery::Recovery,
    pub series: Vec<SeriesTrend>,
}

/// The resources fitted, by their names in `SeriesTrend::resource`.
pub const RESOURCES: [&str; 4] = ["rss", "open files", "connections", "rooms"];

/// The samples read wholly inside the common hold (`LevelSpan::holding`): one begun just before its
/// end reads the first users already leaving.
fn in_hold<'a>(span: &LevelSpan, samples: &'a [Sample]) -> impl Iterator<Item = &'a Sample> {
    span.holding(samples)
}

/// One instance's `resource` (of `RESOURCES`) over the common hold: (seconds on the bench's clock,
/// value) for each sample that read it. What the trend is fitted on, and the report draws.
pub fn points(
    span: &LevelSpan,
    samples: &[Sample],
    service: &str,
    resource: &str,
) -> Vec<(f64, f64)> {
    let read = |s: &Sample| -> Option<f64> {
        let instance = || s.instances.iter().find(|i| i.service == service);
        Some(match resource {
            "rss" => s.container(service)?.rss_bytes? as f64,
            "open files" => s.container(service)?.open_files? as f64,
            "connections" => instance()?.connections? as f64,
            "rooms" => instance()?.rooms? as f64,
            _ => return None,
        })
    };
    in_hold(span, samples)
        .filter_map(|s| Some((s.t_ms as f64 / 1000.0, read(s)?)))
        .collect()
}

impl Growth {
    /// The trends of every app instance's resources over `span`'s common hold (a series with fewer
    /// than `trend::MIN_POINTS` samples is left out), reference users `users`.
    pub fn of(
        span: &LevelSpan,
        samples: &[Sample],
        users: u64,
        churn_s: f64,
        recovery: crate::load::recovery::Recovery,
    ) -> Growth {
        let hold_s = span.hold_end_ms.saturating_sub(span.hold_ms) as f64 / 1000.0;
        let mut services: Vec<&str> = in_hold(span, samples)
            .flat_map(|s| s.instances.iter().map(|i| i.service.as_str()))
            .collect();
        services.sort_unstable();
        services.dedup();
        let mut series = Vec::new();
        for service in services {
            for resource in RESOURCES {
                let points = points(span, samples, service, resource);
                // Seeded by the series' place: the same samples give the same interval.
                let seed = series.len() as u64;
                let Some(t) = trend(&points, seed) else {
                    continue;
                };
                let reference = match resource {
                    "connections" | "rooms" => users as f64,
                    _ => {
                        let ys: Vec<f64> = points.iter().map(|p| p.1).collect();
                        crate::median::median(&ys).unwrap_or(0.0)
                    }
                };
                let grown = t.slope_per_h / 3600.0 * hold_s;
                series.push(SeriesTrend {
                    service: service.to_string(),
                    resource: resource.to_string(),
                    trend: t,
                    reference,
                    pct_over_hold: if reference > 0.0 {
                        100.0 * grown / reference
                    } else {
                        0.0
                    },
                    significant: t.rises()
                        && grown
                            >= FLOORS
                                .iter()
                                .find(|(r, _)| *r == resource)
                                .map_or(0.0, |f| f.1),
                });
            }
        }
        Growth {
            churn_s,
            recovery,
            series,
        }
    }

    /// The largest growth over the hold whose interval excludes zero (0: none grew).
    pub fn worst(&self) -> Option<&SeriesTrend> {
        self.series
            .iter()
            .filter(|s| s.significant && s.pct_over_hold > 0.0)
            .max_by(|a, b| a.pct_over_hold.total_cmp(&b.pct_over_hold))
    }

    /// "churn 2 s: 812 leaves and returns; the most growth: app-1 connections +1,450 % over the hold …",
    /// or "…; nothing grew past noise …".
    pub fn describe(&self) -> String {
        let most = match self.worst() {
            Some(s) => format!("the most growth: {}", s.describe()),
            None => "nothing grew past noise (no trend above zero and its floor)".into(),
        };
        let not_back = match self.recovery.not_back {
            0 => String::new(),
            n => format!(" ({n} not back by the hold's end)"),
        };
        format!(
            "churn {} s: {} leaves and returns{not_back}; {most}",
            super::decimal::show(self.churn_s),
            self.recovery.leaves
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::timeline::{ContainerSample, InstanceSample};
    use super::*;

    const SPAN: LevelSpan = LevelSpan {
        users: 40,
        start_ms: 0,
        hold_ms: 10_000,
        hold_end_ms: 70_000,
        end_ms: 71_000,
        settled_ms: 75_000,
    };

    /// One sample at `t_s`: app-1 holding `conns` connections and rooms, 100 MB plus `mb`.
    fn at(t_s: u64, conns: u64, mb: u64) -> Sample {
        Sample {
            t_ms: t_s * 1000,
            containers: vec![ContainerSample {
                service: "app-1".into(),
                rss_bytes: Some((100 + mb) << 20),
                open_files: Some(50 + conns),
                ..ContainerSample::default()
            }],
            instances: vec![InstanceSample {
                service: "app-1".into(),
                connections: Some(conns),
                rooms: Some(conns.min(40)),
            }],
            ..Sample::default()
        }
    }

    fn leaves(n: u64) -> crate::load::recovery::Recovery {
        crate::load::recovery::Recovery {
            leaves: n,
            ..Default::default()
        }
    }

    #[test]
    fn a_leak_under_churn_grows_past_the_bound_and_a_steady_instance_does_not() {
        // Steady: 40 held, 39 now and then (a user between its leave and its return), RSS flat but
        // for a warm-up of 1 MiB (under its floor).
        let steady: Vec<Sample> = (0..80)
            .map(|t| at(t, 40 - (t % 7 == 3) as u64, (t > 40) as u64))
            .collect();
        let g = Growth::of(&SPAN, &steady, 40, 2.0, leaves(1200));
        assert_eq!(g.series.len(), 4, "{g:?}");
        assert!(g.worst().is_none(), "{:#?}", g.series);
        assert!(g
            .describe()
            .ends_with("nothing grew past noise (no trend above zero and its floor)"));

        // Leaking: every leave leaves a ghost connection (20 a second over the minute's hold).
        let leaking: Vec<Sample> = (0..80)
            .map(|t| at(t, 40 + 20 * t.saturating_sub(10), t / 10))
            .collect();
        let g = Growth::of(&SPAN, &leaking, 40, 2.0, leaves(1200));
        let w = g.worst().unwrap();
        assert_eq!(
            (w.service.as_str(), w.resource.as_str()),
            ("app-1", "connections")
        );
        // 20 a second over 60 s: 1,200 more than 40 users, 3,000 %.
        assert!((w.pct_over_hold - 3000.0).abs() < 1.0, "{w:?}");
        assert!((w.trend.slope_per_h - 72_000.0).abs() < 1.0, "{w:?}");
        let d = g.describe();
        assert!(
            d.contains("app-1 connections +3000.0 % over the hold (+72000/h"),
            "{d}"
        );
        // Samples outside the hold are not fitted.
        let outside: Vec<Sample> = (71..90).map(|t| at(t, 40 * t, 0)).collect();
        assert!(Growth::of(&SPAN, &outside, 40, 2.0, leaves(0))
            .series
            .is_empty());
        // Nor one begun at the hold's end and read past it (the first users leaving).
        let mut late = at(70, 4_000, 0);
        late.sample_ms = Some(500.0);
        assert!(points(&SPAN, &[late], "app-1", "connections").is_empty());
        assert_eq!(
            points(&SPAN, &[at(70, 40, 0)], "app-1", "connections").len(),
            1
        );
    }
}
