//! The report's charts as data: one `ChartSpec` per chart in `CHARTS` — its id, title, y axis and the
//! function that makes its series — the timeline's on one clock (users and connections, CPU on the
//! bench's one scale, memory, open files, nginx, the SUT host, the generator) and the per-level ones
//! (latencies, failures by kind). `charts` draws them, in this order.

use std::collections::BTreeSet;

use super::super::figures::{LevelFigures, Pcts};
use super::super::results::Results;
use super::super::timeline::{ContainerSample, Sample};
use super::charts::{self, Band, Chart, Series, XAxis};

/// Where a chart's series come from, and so its x axis.
#[derive(Clone, Copy)]
enum From {
    /// The timeline: seconds since the bench began, each level shaded.
    Timeline(fn(&Results, &[Sample]) -> Vec<Series>),
    /// The levels' figures: one tick per level.
    Levels(fn(&Results) -> Vec<Series>),
}

/// One chart of the report.
#[derive(Clone, Copy)]
struct ChartSpec {
    /// The figure's id in the HTML.
    id: &'static str,
    title: &'static str,
    /// The y axis: what its figures are.
    y_label: &'static str,
    series: From,
}

/// Every chart, in the report's order.
const CHARTS: [ChartSpec; 10] = [
    ChartSpec {
        id: "users",
        title: "Target users, held sockets and per-instance connections",
        y_label: "users / connections",
        series: From::Timeline(users),
    },
    ChartSpec {
        id: "cpu",
        title: "CPU per container, as a share of what it can use (its quota, the host's CPUs or its app's threads)",
        y_label: "% of usable CPU",
        series: From::Timeline(cpu),
    },
    ChartSpec {
        id: "rss",
        title: "RSS per container (dashed: its limit)",
        y_label: "MiB",
        series: From::Timeline(rss),
    },
    ChartSpec {
        id: "files",
        title: "Open files per container: its process holding the most, against that process's nofile",
        y_label: "% of its nofile",
        series: From::Timeline(files),
    },
    ChartSpec {
        id: "nginx",
        title: "nginx active connections",
        y_label: "connections",
        series: From::Timeline(nginx),
    },
    ChartSpec {
        id: "load",
        title: "SUT host (on a swarm, each node): load average and CPUs busy (dashed: its CPUs)",
        y_label: "load / CPUs",
        series: From::Timeline(load),
    },
    ChartSpec {
        id: "generator-cpu",
        title: "Generator CPU",
        y_label: "% of its CPUs",
        series: From::Timeline(generator_cpu),
    },
    ChartSpec {
        id: "generator-rss",
        title: "Generator RSS",
        y_label: "MiB",
        series: From::Timeline(generator_rss),
    },
    ChartSpec {
        id: "latency",
        title: "Login, connect, delivery and /healthcheck latency per level",
        y_label: "ms",
        series: From::Levels(latency),
    },
    ChartSpec {
        id: "failures",
        title: "Failures by kind per level",
        y_label: "users",
        series: From::Levels(failures),
    },
];

/// The timeline's charts, drawn.
pub fn time_charts(r: &Results, samples: &[Sample], spans: &[Band]) -> Result<Vec<String>, String> {
    draw(r, |spec| match spec.series {
        From::Timeline(series) => Some((
            XAxis::Time {
                spans: spans.to_vec(),
            },
            series(r, samples),
        )),
        From::Levels(_) => None,
    })
}

/// The per-level charts, drawn.
pub fn level_charts(r: &Results) -> Result<Vec<String>, String> {
    draw(r, |spec| match spec.series {
        From::Levels(series) => Some((
            XAxis::Ticks {
                labels: r
                    .levels
                    .iter()
                    .map(|l| format!("{} users", l.users))
                    .collect(),
            },
            series(r),
        )),
        From::Timeline(_) => None,
    })
}

/// Each chart `of` gives an axis and series; an empty one says why by the bench's state.
fn draw(
    r: &Results,
    of: impl Fn(&ChartSpec) -> Option<(XAxis, Vec<Series>)>,
) -> Result<Vec<String>, String> {
    let empty = match r.state {
        super::super::results::RunState::Running => charts::NOT_YET,
        _ => charts::NOT_SAMPLED,
    };
    CHARTS
        .iter()
        .filter_map(|spec| {
            let (x, series) = of(spec)?;
            Some(charts::figure(&Chart {
                id: spec.id.into(),
                title: spec.title.into(),
                y_label: spec.y_label.into(),
                x,
                series,
                empty,
            }))
        })
        .collect()
}

fn at(s: &Sample) -> f64 {
    s.t_ms as f64 / 1000.0
}

fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

fn services(samples: &[Sample]) -> Vec<String> {
    let set: BTreeSet<&str> = samples
        .iter()
        .flat_map(|s| s.containers.iter().map(|c| c.service.as_str()))
        .collect();
    set.into_iter().map(String::from).collect()
}

fn instances(samples: &[Sample]) -> Vec<String> {
    let set: BTreeSet<&str> = samples
        .iter()
        .flat_map(|s| s.instances.iter().map(|c| c.service.as_str()))
        .collect();
    set.into_iter().map(String::from).collect()
}

/// One point per sample that has `y`.
fn line(samples: &[Sample], y: impl Fn(&Sample) -> Option<f64>) -> Vec<(f64, f64)> {
    samples
        .iter()
        .filter_map(|s| Some((at(s), y(s)?)))
        .collect()
}

/// One line per container, each of its samples that has `y`, in the services' colours.
fn per_container(samples: &[Sample], y: impl Fn(&ContainerSample) -> Option<f64>) -> Vec<Series> {
    services(samples)
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let pts = line(samples, |s| y(s.container(name)?));
            Series::line(name.clone(), i, pts)
        })
        .collect()
}

/// A limit at 100 % (of the usable CPU, of nofile) wherever some container had `sampled`, in the colour
/// after the services'.
fn full_limit(
    name: &str,
    samples: &[Sample],
    sampled: impl Fn(&ContainerSample) -> bool,
) -> Option<Series> {
    let pts = line(samples, |s| {
        s.containers.iter().any(&sampled).then_some(100.0)
    });
    (!pts.is_empty()).then(|| Series::limit(name, services(samples).len(), pts))
}

fn users(_: &Results, samples: &[Sample]) -> Vec<Series> {
    let mut out = vec![
        Series::line(
            "target users",
            0,
            line(samples, |s| Some(s.generator.target_users as f64)),
        ),
        Series::line(
            "open sockets (generator)",
            1,
            line(samples, |s| Some(s.generator.open_sockets as f64)),
        ),
    ];
    let inst = instances(samples);
    for (i, name) in inst.iter().enumerate() {
        let pts = line(samples, |s| {
            let c = s.instances.iter().find(|x| &x.service == name)?;
            Some(c.connections? as f64)
        });
        out.push(Series::line(format!("{name} connections"), 2 + i, pts));
    }
    if inst.len() > 1 {
        let pts = line(samples, |s| Some(s.instance_connections()? as f64));
        out.push(Series::line("all instances", 2 + inst.len(), pts));
    }
    out
}

/// The bench's one scale: a share of what the container can use (its quota, the host's CPUs, or its
/// app's threads), so 100 % is saturated for every line alike.
fn cpu(r: &Results, samples: &[Sample]) -> Vec<Series> {
    let scale = &r.cpu_scale;
    let mut out = per_container(samples, |c| Some(scale.share(c)? * 100.0));
    out.extend(full_limit("usable CPU limit", samples, |c| {
        scale.share(c).is_some()
    }));
    out
}

/// Each container's RSS, and after it its limit, dashed in its colour.
fn rss(_: &Results, samples: &[Sample]) -> Vec<Series> {
    let mut out = Vec::new();
    for (i, name) in services(samples).iter().enumerate() {
        out.push(Series::line(
            name.clone(),
            i,
            line(samples, |s| Some(mib(s.container(name)?.rss_bytes?))),
        ));
        let limit = line(samples, |s| Some(mib(s.container(name)?.mem_limit_bytes?)));
        if !limit.is_empty() {
            out.push(Series::limit(format!("{name} limit"), i, limit));
        }
    }
    out
}

/// A share of the limit, as CPU is: a few hundred files under a nofile of 200 000 would otherwise draw
/// as a flat line at zero.
fn files(_: &Results, samples: &[Sample]) -> Vec<Series> {
    let mut out = per_container(samples, |c| Some(c.open_files_share()? * 100.0));
    out.extend(full_limit("the nofile limit", samples, |c| {
        c.open_files.is_some()
    }));
    out
}

fn nginx(_: &Results, samples: &[Sample]) -> Vec<Series> {
    vec![Series::line(
        "active connections",
        0,
        line(samples, |s| Some(s.nginx_active? as f64)),
    )]
}

/// The host as a component: its CPUs busy (the containers', and the generator's when it shares the
/// host; and by the host's own count, the kernel's work included), beside its load average and its CPUs.
fn load(r: &Results, samples: &[Sample]) -> Vec<Series> {
    let busy = |s: &Sample| {
        if !s.containers.iter().any(|c| c.cpu_pct.is_some()) {
            return None;
        }
        let mut busy: f64 = s.containers.iter().filter_map(|c| c.cpu_pct).sum::<f64>() / 100.0;
        if r.generator_local {
            busy += s.generator.cpu_pct.unwrap_or(0.0) / 100.0 * r.generator_cpus;
        }
        Some(busy)
    };
    let mut out = vec![
        Series::line("SUT load average (1 min)", 3, line(samples, |s| s.load_avg)),
        Series::line(
            if r.generator_local {
                "CPUs busy (containers and the generator)"
            } else {
                "CPUs busy (containers)"
            },
            4,
            line(samples, busy),
        ),
    ];
    if let Some(h) = r.cpu_scale.host_cpus {
        let counted = line(samples, |s| Some(s.host_cpu?.busy_pct / 100.0 * h));
        if !counted.is_empty() {
            out.push(Series::line("CPUs busy (the host's own count)", 5, counted));
        }
        // A swarm: each node's own count (one node's CPUs each).
        let nodes: BTreeSet<&str> = samples
            .iter()
            .flat_map(|s| s.nodes.iter().map(|n| n.node.as_str()))
            .collect();
        for (i, node) in nodes.into_iter().enumerate() {
            let counted = line(samples, |s| {
                let n = s.nodes.iter().find(|n| n.node == node)?;
                Some(n.host_cpu?.busy_pct / 100.0 * h)
            });
            out.push(Series::line(
                format!("node {node}: CPUs busy (its own count)"),
                5 + i,
                counted,
            ));
        }
        let pts = line(samples, |_| Some(h));
        if !pts.is_empty() {
            out.push(Series::limit("the host's CPU limit", 4, pts));
        }
    }
    out
}

fn generator_cpu(_: &Results, samples: &[Sample]) -> Vec<Series> {
    vec![Series::line(
        "generator CPU",
        0,
        line(samples, |s| s.generator.cpu_pct),
    )]
}

fn generator_rss(_: &Results, samples: &[Sample]) -> Vec<Series> {
    vec![Series::line(
        "generator RSS",
        1,
        line(samples, |s| Some(mib(s.generator.rss_bytes?))),
    )]
}

/// p50, p95 and p99 of each latency, level by level: login, connect, delivery, /healthcheck.
fn latency(r: &Results) -> Vec<Series> {
    type Of = fn(&LevelFigures) -> Option<Pcts>;
    let latencies: [(&str, Of); 4] = [
        ("login", |f| f.login_ms),
        ("connect", |f| f.connect_ms),
        ("delivery", |f| f.delivery_ms),
        ("/healthcheck", |f| f.health_ms),
    ];
    let mut out = Vec::new();
    for (i, (what, get)) in latencies.into_iter().enumerate() {
        let p = |f: fn(Pcts) -> f64| -> Vec<(f64, f64)> {
            r.levels
                .iter()
                .enumerate()
                .filter_map(|(x, l)| Some((x as f64, f(get(&l.figures)?))))
                .collect()
        };
        let color = 3 * i;
        out.push(Series::line(format!("{what} p50"), color, p(|p| p.p50)));
        out.push(Series::line(format!("{what} p95"), color + 1, p(|p| p.p95)));
        out.push(Series::line(format!("{what} p99"), color + 2, p(|p| p.p99)));
    }
    out
}

/// Each kind of failure, users level by level (0 where a level had none of it).
fn failures(r: &Results) -> Vec<Series> {
    let kinds: BTreeSet<&str> = r
        .levels
        .iter()
        .flat_map(|l| l.figures.failures.keys().map(String::as_str))
        .collect();
    kinds
        .iter()
        .enumerate()
        .map(|(c, k)| {
            let pts = r
                .levels
                .iter()
                .enumerate()
                .map(|(i, l)| (i as f64, *l.figures.failures.get(*k).unwrap_or(&0) as f64))
                .collect();
            Series::line(k.to_string(), c, pts)
        })
        .collect()
}
