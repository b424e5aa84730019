//! Line charts as inline SVG (plotters' SVG backend into a String: no files, no fonts, no network), with
//! each bench level shaded on the time axis. Each figure carries its series' names and point counts as
//! data attributes, so that a test (and a reader of the HTML) can tell every series was drawn.

use plotters::prelude::*;
use plotters::style::Palette99;

/// One line.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed: a limit, not a measurement.
    pub dashed: bool,
    /// The palette colour (a limit takes its series' colour).
    pub color: usize,
}

impl Series {
    pub fn line(name: impl Into<String>, color: usize, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points,
            dashed: false,
            color,
        }
    }

    pub fn limit(name: impl Into<String>, color: usize, points: Vec<(f64, f64)>) -> Series {
        Series {
            dashed: true,
            ..Series::line(name, color, points)
        }
    }
}

/// One level on the time axis (seconds since the bench began): its load shaded, its common hold (all
/// its users at once) shaded darker, and the moment its planned fault ran (`--fault`) marked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Band {
    pub start: f64,
    pub end: f64,
    pub users: u64,
    pub hold: Option<(f64, f64)>,
    pub fault_at: Option<f64>,
}

/// What the x axis is.
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    /// Seconds since the bench began, with each level's band.
    Time { spans: Vec<Band> },
    /// One tick per x = 0, 1, 2, … (a bench's levels, a sweep's instance counts), each labelled.
    Ticks { labels: Vec<String> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub id: String,
    pub title: String,
    pub y_label: String,
    pub x: XAxis,
    pub series: Vec<Series>,
    /// What the figure says when it has nothing to draw (`NOT_SAMPLED`, or `NOT_YET` while the bench runs).
    pub empty: &'static str,
}

/// An empty chart of a bench that is over: nothing of it was sampled.
pub const NOT_SAMPLED: &str = "not sampled in this run";
/// An empty chart of a bench still running: nothing of it sampled yet.
pub const NOT_YET: &str = "not sampled yet: the bench is running";

const SIZE: (u32, u32) = (900, 260);

fn color(i: usize) -> RGBColor {
    let c = Palette99::pick(i).to_rgba();
    RGBColor(c.0, c.1, c.2)
}

/// The chart's `<figure>`: its SVG, or a line saying why there is nothing to draw.
pub fn figure(chart: &Chart) -> Result<String, String> {
    let drawn: Vec<&Series> = chart
        .series
        .iter()
        .filter(|s| !s.points.is_empty())
        .collect();
    let names: Vec<&str> = drawn.iter().map(|s| s.name.as_str()).collect();
    let counts: Vec<String> = drawn.iter().map(|s| s.points.len().to_string()).collect();
    let body = if drawn.is_empty() {
        format!("<p class=\"empty\">{}</p>", escape(chart.empty))
    } else {
        svg(chart, &drawn)?
    };
    Ok(format!(
        "<figure class=\"chart\" id=\"{}\" data-series=\"{}\" data-points=\"{}\"><figcaption>{}</figcaption>{body}</figure>",
        escape(&chart.id),
        escape(&names.join("|")),
        counts.join("|"),
        escape(&chart.title)
    ))
}

fn svg(chart: &Chart, drawn: &[&Series]) -> Result<String, String> {
    let e = |e: &dyn std::fmt::Display| format!("chart {}: {e}", chart.id);
    let (x_max, levels) = match &chart.x {
        XAxis::Time { spans } => {
            let last = drawn
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.0))
                .fold(1.0, f64::max);
            let end = spans.iter().map(|s| s.end).fold(last, f64::max);
            (end, None)
        }
        XAxis::Ticks { labels } => ((labels.len().max(1) - 1) as f64 + 0.5, Some(labels.clone())),
    };
    let x_min = if levels.is_some() { -0.5 } else { 0.0 };
    let y_max = drawn
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let y_max = if y_max <= 0.0 { 1.0 } else { y_max * 1.1 };

    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut c = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(32)
            .y_label_area_size(64)
            .build_cartesian_2d(x_min..x_max, 0.0..y_max)
            .map_err(|x| e(&x))?;
        let level_label = |x: &f64| match &levels {
            Some(labels) => {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 {
                    labels.get(i as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            }
            None => format!("{x:.0}"),
        };
        let mut mesh = c.configure_mesh();
        mesh.y_desc(chart.y_label.as_str())
            .x_label_formatter(&level_label);
        match &levels {
            Some(labels) => {
                mesh.x_labels(labels.len().max(1) * 2 + 1);
            }
            None => {
                mesh.x_desc("seconds since the bench began");
            }
        }
        mesh.draw().map_err(|x| e(&x))?;

        if let XAxis::Time { spans } = &chart.x {
            for (i, band) in spans.iter().enumerate() {
                let shade = if i % 2 == 0 {
                    RGBColor(225, 235, 250)
                } else {
                    RGBColor(235, 242, 252)
                };
                c.draw_series(std::iter::once(Rectangle::new(
                    [(band.start, 0.0), (band.end, y_max)],
                    shade.filled(),
                )))
                .map_err(|x| e(&x))?;
                if let Some((a, b)) = band.hold {
                    c.draw_series(std::iter::once(Rectangle::new(
                        [(a, 0.0), (b, y_max)],
                        RGBColor(205, 222, 245).filled(),
                    )))
                    .map_err(|x| e(&x))?;
                }
                if let Some(t) = band.fault_at {
                    let red = RGBColor(200, 40, 40);
                    c.draw_series(std::iter::once(PathElement::new(
                        vec![(t, 0.0), (t, y_max)],
                        red.stroke_width(2),
                    )))
                    .map_err(|x| e(&x))?;
                    c.draw_series(std::iter::once(Text::new(
                        "fault",
                        (t, y_max * 0.9),
                        ("sans-serif", 11).into_font().color(&red),
                    )))
                    .map_err(|x| e(&x))?;
                }
                let label = match band.hold {
                    Some(_) => format!("{} · hold", band.users),
                    None => band.users.to_string(),
                };
                c.draw_series(std::iter::once(Text::new(
                    label,
                    (band.start, y_max * 0.98),
                    ("sans-serif", 11).into_font().color(&RGBColor(90, 90, 90)),
                )))
                .map_err(|x| e(&x))?;
            }
        }
        for s in drawn {
            let col = color(s.color);
            let style = col.stroke_width(2);
            if s.dashed {
                c.draw_series(DashedLineSeries::new(
                    s.points.iter().copied(),
                    6,
                    4,
                    col.stroke_width(1),
                ))
                .map_err(|x| e(&x))?
                .label(s.name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], col.stroke_width(1))
                });
            } else {
                c.draw_series(LineSeries::new(s.points.iter().copied(), style))
                    .map_err(|x| e(&x))?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], col.stroke_width(2))
                    });
                if levels.is_some() || s.points.len() == 1 {
                    c.draw_series(s.points.iter().map(|p| Circle::new(*p, 3, col.filled())))
                        .map_err(|x| e(&x))?;
                }
            }
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(200, 200, 200))
            .draw()
            .map_err(|x| e(&x))?;
        root.present().map_err(|x| e(&x))?;
    }
    Ok(out)
}

/// Text for an HTML attribute or element.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_is_drawn_and_counted_and_an_empty_chart_says_so() {
        let chart = Chart {
            id: "cpu".into(),
            title: "CPU % per container".into(),
            y_label: "% of one CPU".into(),
            x: XAxis::Time {
                spans: vec![
                    Band {
                        start: 0.0,
                        end: 10.0,
                        users: 200,
                        hold: Some((3.0, 9.0)),
                        fault_at: Some(5.0),
                    },
                    Band {
                        start: 12.0,
                        end: 20.0,
                        users: 500,
                        hold: None,
                        fault_at: None,
                    },
                ],
            },
            series: vec![
                Series::line(
                    "app-1",
                    0,
                    (0..20).map(|t| (t as f64, 10.0 + t as f64)).collect(),
                ),
                Series::limit("app-1 limit", 0, vec![(0.0, 50.0), (20.0, 50.0)]),
            ],
            empty: NOT_SAMPLED,
        };
        let f = figure(&chart).unwrap();
        assert!(
            f.contains("data-series=\"app-1|app-1 limit\" data-points=\"20|2\""),
            "{f}"
        );
        assert!(
            f.contains("<svg") && f.matches("<polyline").count() >= 1,
            "{f}"
        );
        assert!(
            f.contains(">200 · hold<") || f.contains(">\n200 · hold\n<"),
            "the level is labelled, with its common hold"
        );
        assert!(
            f.contains(">500<") || f.contains(">\n500\n<"),
            "a level without a hold (cut short) is labelled alone"
        );
        assert!(
            f.contains(">fault<") || f.contains(">\nfault\n<"),
            "the moment of the planned fault is marked"
        );
        let empty = Chart {
            series: vec![],
            ..chart
        };
        assert!(figure(&empty).unwrap().contains("not sampled in this run"));
        let running = Chart {
            empty: NOT_YET,
            ..empty
        };
        let f = figure(&running).unwrap();
        assert!(
            f.contains("not sampled yet: the bench is running") && !f.contains("in this run"),
            "{f}"
        );
    }

    #[test]
    fn a_chart_per_level_labels_each_level() {
        let chart = Chart {
            id: "login".into(),
            title: "login".into(),
            y_label: "ms".into(),
            x: XAxis::Ticks {
                labels: vec!["200 users".into(), "500 users".into(), "1000 users".into()],
            },
            series: vec![Series::line(
                "p95",
                1,
                vec![(0.0, 12.0), (1.0, 30.0), (2.0, 900.0)],
            )],
            empty: NOT_SAMPLED,
        };
        let f = figure(&chart).unwrap();
        assert!(f.contains("1000 users"), "{f}");
        assert_eq!(f.matches("<circle").count(), 3, "a point per level");
    }
}
