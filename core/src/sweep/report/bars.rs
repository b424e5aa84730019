//! A bar per value with its range (min–max over the runs) as a whisker: the capacity of each value.
//! Inline SVG through plotters, like the bench report's line charts; the figure carries its bars'
//! labels and medians as data attributes so a test (or a reader) can tell what was drawn.

use plotters::prelude::*;

use crate::bench::report::charts::escape;
use crate::sweep::stats::Spread;

const SIZE: (u32, u32) = (900, 300);

/// One bar: its label, and its spread (None: nothing measured, drawn as no bar).
pub struct Bar {
    pub label: String,
    pub spread: Option<Spread>,
    /// The value only bounds it from below (every level passed): drawn hatched-pale.
    pub at_least: bool,
}

pub fn figure(id: &str, title: &str, y_label: &str, bars: &[Bar]) -> Result<String, String> {
    let labels: Vec<&str> = bars.iter().map(|b| b.label.as_str()).collect();
    let medians: Vec<String> = bars
        .iter()
        .map(|b| {
            b.spread
                .map(|s| format!("{}", s.median))
                .unwrap_or_default()
        })
        .collect();
    let body = if bars.iter().all(|b| b.spread.is_none()) {
        "<p class=\"empty\">nothing measured yet</p>".to_string()
    } else {
        svg(id, y_label, bars)?
    };
    Ok(format!(
        "<figure class=\"chart\" id=\"{}\" data-bars=\"{}\" data-medians=\"{}\"><figcaption>{}</figcaption>{body}</figure>",
        escape(id),
        escape(&labels.join("|")),
        medians.join("|"),
        escape(title)
    ))
}

fn svg(id: &str, y_label: &str, bars: &[Bar]) -> Result<String, String> {
    let e = |x: &dyn std::fmt::Display| format!("chart {id}: {x}");
    let y_max = bars
        .iter()
        .filter_map(|b| b.spread.map(|s| s.max))
        .fold(0.0, f64::max);
    let y_max = if y_max <= 0.0 { 1.0 } else { y_max * 1.15 };
    let n = bars.len().max(1);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|x| e(&x))?;
        let mut c = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..y_max)
            .map_err(|x| e(&x))?;
        let label = |x: &f64| {
            let i = x.round();
            match (x - i).abs() < 1e-6 && i >= 0.0 {
                true => bars
                    .get(i as usize)
                    .map(|b| b.label.clone())
                    .unwrap_or_default(),
                false => String::new(),
            }
        };
        c.configure_mesh()
            .y_desc(y_label)
            .x_labels(n * 2 + 1)
            .x_label_formatter(&label)
            // Users are whole: 1,600, not 1600.0.
            .y_label_formatter(&|v| crate::sweep::summary::show_users(*v))
            .disable_x_mesh()
            .draw()
            .map_err(|x| e(&x))?;
        let blue = RGBColor(66, 133, 244);
        for (i, b) in bars.iter().enumerate() {
            let Some(s) = b.spread else { continue };
            let x = i as f64;
            let fill = if b.at_least {
                blue.mix(0.35)
            } else {
                blue.mix(0.9)
            };
            c.draw_series(std::iter::once(Rectangle::new(
                [(x - 0.3, 0.0), (x + 0.3, s.median)],
                fill.filled(),
            )))
            .map_err(|x| e(&x))?;
            if s.max > s.min {
                let dark = RGBColor(40, 40, 40).stroke_width(2);
                c.draw_series([
                    PathElement::new(vec![(x, s.min), (x, s.max)], dark),
                    PathElement::new(vec![(x - 0.08, s.min), (x + 0.08, s.min)], dark),
                    PathElement::new(vec![(x - 0.08, s.max), (x + 0.08, s.max)], dark),
                ])
                .map_err(|x| e(&x))?;
            }
            c.draw_series(std::iter::once(Text::new(
                format!(
                    "{}{}",
                    if b.at_least { "≥ " } else { "" },
                    crate::sweep::summary::show_users(s.median)
                ),
                (x - 0.1, s.max.max(s.median) + y_max * 0.02),
                ("sans-serif", 12).into_font(),
            )))
            .map_err(|x| e(&x))?;
        }
        root.present().map_err(|x| e(&x))?;
    }
    Ok(out)
}
