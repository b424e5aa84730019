//! report.html: one self-contained file (inline CSS and SVG, no scripts, no network) built from
//! results.json and the timeline alone, so `exectl report RUN_ID` rebuilds the same bytes.

pub mod charts;

use std::collections::BTreeSet;

use charts::{Chart, Series, XAxis};
use serde::Serialize;

use super::results::Results;
use super::slo::show;
use super::timeline::Sample;
use super::verdict::Pcts;

const TEMPLATE: &str = include_str!("report.html.tera");

#[derive(Serialize)]
struct Row {
    users: u64,
    passed: bool,
    held: String,
    refused: u64,
    stalled: u64,
    login: String,
    connect: String,
    delivery: String,
    health: String,
    leak_ok: bool,
    leak: String,
    why: String,
}

#[derive(Serialize)]
struct Cell {
    text: String,
    class: &'static str,
}

#[derive(Serialize)]
struct Objective {
    key: String,
    bound: String,
    cells: Vec<Cell>,
}

fn p95(p: &Option<Pcts>) -> String {
    p.map(|p| format!("{} ms", show(p.p95)))
        .unwrap_or_else(|| "—".into())
}

fn secs(t_ms: u64) -> f64 {
    t_ms as f64 / 1000.0
}

/// The HTML of the report.
pub fn render(r: &Results, samples: &[Sample]) -> Result<String, String> {
    let rows: Vec<Row> = r
        .levels
        .iter()
        .map(|l| Row {
            users: l.users,
            passed: l.passed,
            held: format!("{} / {}", l.figures.held, l.figures.users),
            refused: l.figures.refused,
            stalled: l.figures.stalled,
            login: p95(&l.figures.login_ms),
            connect: p95(&l.figures.connect_ms),
            delivery: p95(&l.figures.delivery_ms),
            health: p95(&l.figures.health_ms),
            leak_ok: l.leak.ok == Some(true),
            leak: l.leak.detail.clone(),
            why: if l.passed {
                String::new()
            } else {
                l.reasons.join("; ")
            },
        })
        .collect();
    let objectives: Vec<Objective> = r
        .levels
        .first()
        .map(|l| {
            l.slos
                .iter()
                .map(|c| (c.key.clone(), c.bound.clone()))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .map(|(key, bound)| Objective {
            cells: r
                .levels
                .iter()
                .map(|l| match l.slos.iter().find(|c| c.key == key) {
                    Some(c) => Cell {
                        text: match c.measured {
                            Some(m) if c.unit.is_empty() => show(m),
                            Some(m) => format!("{} {}", show(m), c.unit),
                            None => "not measured".into(),
                        },
                        class: match c.ok {
                            Some(true) => "ok",
                            Some(false) => "bad",
                            None => "",
                        },
                    },
                    None => Cell {
                        text: "—".into(),
                        class: "",
                    },
                })
                .collect(),
            key,
            bound,
        })
        .collect();

    let spans: Vec<(f64, f64, u64)> = r
        .levels
        .iter()
        .map(|l| (secs(l.span.start_ms), secs(l.span.end_ms), l.users))
        .collect();
    let time_charts = time_charts(samples, &spans)?;
    let level_charts = level_charts(r)?;
    let capacity = match (r.verdict.capacity, r.verdict.knee) {
        (Some(c), Some(_)) => format!("Capacity: {c} users"),
        (Some(c), None) => format!("Capacity: at least {c} users"),
        (None, _) => "Capacity: below the first level".to_string(),
    };
    let sampler = format!(
        "{} samples by {} host script{}, {} ms each on average{}",
        r.sampler.samples,
        r.sampler.host_scripts,
        if r.sampler.host_scripts == 1 { "" } else { "s" },
        show(r.sampler.mean_sample_ms),
        r.sampler
            .sut_cpu_pct
            .map(|c| format!(", {} % of one SUT core", show(c)))
            .unwrap_or_default()
    );

    let mut ctx = tera::Context::new();
    ctx.insert("r", r);
    ctx.insert("rows", &rows);
    ctx.insert("objectives", &objectives);
    ctx.insert("time_charts", &time_charts);
    ctx.insert("level_charts", &level_charts);
    ctx.insert("capacity", &capacity);
    ctx.insert("sampler", &sampler);
    ctx.insert(
        "levels_asked",
        &r.levels_asked
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", "),
    );
    ctx.insert(
        "started",
        &format!("started at unix time {}", r.started_unix_s),
    );
    let mut t = tera::Tera::default();
    t.add_raw_template("report.html", TEMPLATE)
        .map_err(|e| format!("report template: {e}"))?;
    t.render("report.html", &ctx)
        .map_err(|e| format!("report template: {e:?}"))
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

fn time_charts(samples: &[Sample], spans: &[(f64, f64, u64)]) -> Result<Vec<String>, String> {
    let x = || XAxis::Time {
        spans: spans.to_vec(),
    };
    let at = |s: &Sample| secs(s.t_ms);
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);

    let mut users = vec![
        Series::line(
            "target users",
            0,
            samples
                .iter()
                .map(|s| (at(s), s.generator.target_users as f64))
                .collect(),
        ),
        Series::line(
            "open sockets (generator)",
            1,
            samples
                .iter()
                .map(|s| (at(s), s.generator.open_sockets as f64))
                .collect(),
        ),
    ];
    let inst = instances(samples);
    for (i, name) in inst.iter().enumerate() {
        let pts = samples
            .iter()
            .filter_map(|s| {
                let c = s
                    .instances
                    .iter()
                    .find(|x| &x.service == name)?
                    .connections?;
                Some((at(s), c as f64))
            })
            .collect();
        users.push(Series::line(format!("{name} connections"), 2 + i, pts));
    }
    if inst.len() > 1 {
        let pts = samples
            .iter()
            .filter_map(|s| Some((at(s), s.instance_connections()? as f64)))
            .collect();
        users.push(Series::line("all instances", 2 + inst.len(), pts));
    }

    let (mut cpu, mut rss, mut files) = (vec![], vec![], vec![]);
    for (i, name) in services(samples).iter().enumerate() {
        let of = |s: &Sample| s.container(name).cloned();
        cpu.push(Series::line(
            name.clone(),
            i,
            samples
                .iter()
                .filter_map(|s| Some((at(s), of(s)?.cpu_pct?)))
                .collect(),
        ));
        let limit: Vec<(f64, f64)> = samples
            .iter()
            .filter_map(|s| Some((at(s), of(s)?.cpu_limit? * 100.0)))
            .collect();
        if !limit.is_empty() {
            cpu.push(Series::limit(format!("{name} limit"), i, limit));
        }
        rss.push(Series::line(
            name.clone(),
            i,
            samples
                .iter()
                .filter_map(|s| Some((at(s), mib(of(s)?.rss_bytes?))))
                .collect(),
        ));
        let limit: Vec<(f64, f64)> = samples
            .iter()
            .filter_map(|s| Some((at(s), mib(of(s)?.mem_limit_bytes?))))
            .collect();
        if !limit.is_empty() {
            rss.push(Series::limit(format!("{name} limit"), i, limit));
        }
        // A share of the limit, as CPU is: a few hundred files under a nofile of 200 000 would
        // otherwise draw as a flat line at zero.
        files.push(Series::line(
            name.clone(),
            i,
            samples
                .iter()
                .filter_map(|s| Some((at(s), of(s)?.open_files_share()? * 100.0)))
                .collect(),
        ));
    }
    let files_sampled: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s.containers.iter().any(|c| c.open_files.is_some()))
        .map(|s| (at(s), 100.0))
        .collect();
    if !files_sampled.is_empty() {
        let color = services(samples).len();
        files.push(Series::limit("the nofile limit", color, files_sampled));
    }
    let nginx = vec![Series::line(
        "active connections",
        0,
        samples
            .iter()
            .filter_map(|s| Some((at(s), s.nginx_active? as f64)))
            .collect(),
    )];
    let gen_cpu = vec![Series::line(
        "generator CPU",
        0,
        samples
            .iter()
            .filter_map(|s| Some((at(s), s.generator.cpu_pct?)))
            .collect(),
    )];
    let gen_rss = vec![Series::line(
        "generator RSS",
        1,
        samples
            .iter()
            .filter_map(|s| Some((at(s), mib(s.generator.rss_bytes?))))
            .collect(),
    )];
    let load = vec![Series::line(
        "SUT load average (1 min)",
        3,
        samples
            .iter()
            .filter_map(|s| Some((at(s), s.load_avg?)))
            .collect(),
    )];
    let charts = [
        (
            "users",
            "Target users, held sockets and per-instance connections",
            "users / connections",
            users,
        ),
        (
            "cpu",
            "CPU per container (dashed: its limit)",
            "% of one CPU",
            cpu,
        ),
        ("rss", "RSS per container (dashed: its limit)", "MiB", rss),
        (
            "files",
            "Open files per container: its process holding the most, against that process's nofile",
            "% of its nofile",
            files,
        ),
        ("nginx", "nginx active connections", "connections", nginx),
        ("load", "SUT load average", "load", load),
        ("generator-cpu", "Generator CPU", "% of its CPUs", gen_cpu),
        ("generator-rss", "Generator RSS", "MiB", gen_rss),
    ];
    charts
        .into_iter()
        .map(|(id, title, y, series)| {
            charts::figure(&Chart {
                id: id.into(),
                title: title.into(),
                y_label: y.into(),
                x: x(),
                series,
            })
        })
        .collect()
}

fn level_charts(r: &Results) -> Result<Vec<String>, String> {
    let users: Vec<u64> = r.levels.iter().map(|l| l.users).collect();
    let x = || XAxis::Levels {
        users: users.clone(),
    };
    let pct_series =
        |what: &str, color: usize, get: fn(&super::verdict::LevelFigures) -> Option<Pcts>| {
            let p = |f: fn(Pcts) -> f64| -> Vec<(f64, f64)> {
                r.levels
                    .iter()
                    .enumerate()
                    .filter_map(|(i, l)| Some((i as f64, f(get(&l.figures)?))))
                    .collect()
            };
            vec![
                Series::line(format!("{what} p50"), color, p(|p| p.p50)),
                Series::line(format!("{what} p95"), color + 1, p(|p| p.p95)),
                Series::line(format!("{what} p99"), color + 2, p(|p| p.p99)),
            ]
        };
    let mut latency = pct_series("login", 0, |f| f.login_ms);
    latency.extend(pct_series("connect", 3, |f| f.connect_ms));
    latency.extend(pct_series("delivery", 6, |f| f.delivery_ms));
    latency.extend(pct_series("/healthcheck", 9, |f| f.health_ms));
    let kinds: BTreeSet<&str> = r
        .levels
        .iter()
        .flat_map(|l| l.figures.failures.keys().map(String::as_str))
        .collect();
    let failures: Vec<Series> = kinds
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
        .collect();
    [
        (
            "latency",
            "Login, connect and delivery latency per level",
            "ms",
            latency,
        ),
        ("failures", "Failures by kind per level", "users", failures),
    ]
    .into_iter()
    .map(|(id, title, y, series)| {
        charts::figure(&Chart {
            id: id.into(),
            title: title.into(),
            y_label: y.into(),
            x: x(),
            series,
        })
    })
    .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::limiting::{limiting_component, Known};
    use super::super::slo::Slos;
    use super::super::timeline::{ContainerSample, GeneratorSample, InstanceSample, LevelSpan};
    use super::super::verdict::{LeakCheck, LevelFigures, LevelResult, Verdict};
    use super::super::SamplerCost;
    use super::*;

    /// Two levels on ha ×2: 200 passes, 500 fails on login p95 with the instances at their CPU quota.
    pub fn example() -> (Results, Vec<Sample>) {
        let mut samples = vec![];
        let spans = [
            LevelSpan {
                users: 200,
                start_ms: 0,
                hold_ms: 4_000,
                hold_end_ms: 9_000,
                end_ms: 10_000,
                settled_ms: 12_000,
            },
            LevelSpan {
                users: 500,
                start_ms: 12_000,
                hold_ms: 16_000,
                hold_end_ms: 23_000,
                end_ms: 24_000,
                settled_ms: 26_000,
            },
        ];
        for t in 0..26u64 {
            let level = spans
                .iter()
                .find(|s| t * 1000 >= s.start_ms && t * 1000 <= s.end_ms);
            let users = level.map_or(0, |l| l.users);
            let cpu = if users == 500 { 49.0 } else { 10.0 };
            samples.push(Sample {
                t_ms: t * 1000,
                level: level.map(|l| l.users),
                containers: ["app-1", "app-2", "nginx"]
                    .iter()
                    .map(|s| ContainerSample {
                        service: s.to_string(),
                        cpu_pct: Some(if *s == "nginx" { 5.0 } else { cpu }),
                        cpu_limit: Some(0.5),
                        rss_bytes: Some(40 << 20),
                        mem_limit_bytes: Some(512 << 20),
                        restarts: Some(0),
                        open_files: Some(20 + users / 2),
                        nofile: Some(1024),
                        ..ContainerSample::default()
                    })
                    .collect(),
                instances: ["app-1", "app-2"]
                    .iter()
                    .map(|s| InstanceSample {
                        service: s.to_string(),
                        connections: Some(users / 2),
                        rooms: Some(users / 2),
                    })
                    .collect(),
                nginx_active: Some(users),
                load_avg: Some(0.5),
                generator: GeneratorSample {
                    target_users: users,
                    open_sockets: users,
                    failures: 0,
                    cpu_pct: Some(20.0),
                    rss_bytes: Some(30 << 20),
                },
                sample_ms: Some(12.0),
                ..Sample::default()
            });
        }
        let slos = Slos::default();
        let levels: Vec<LevelResult> = spans
            .iter()
            .map(|span| {
                let figures = LevelFigures {
                    users: span.users,
                    held: span.users,
                    login_ms: Some(if span.users == 500 {
                        Pcts::new(900.0, 7_000.0, 9_000.0)
                    } else {
                        Pcts::new(40.0, 90.0, 120.0)
                    }),
                    connect_ms: Some(Pcts::new(1.0, 3.0, 5.0)),
                    failures: [(
                        "login_timeout".to_string(),
                        if span.users == 500 { 3 } else { 0 },
                    )]
                    .into(),
                    ..LevelFigures::default()
                };
                let leak = LeakCheck::judge(
                    vec![InstanceSample {
                        service: "app-1".into(),
                        connections: Some(0),
                        rooms: Some(0),
                    }],
                    1_000,
                );
                let checks = slos.check(&figures);
                LevelResult::judge(*span, figures, checks, leak, &samples, || {
                    limiting_component(span, &samples, &Known::default())
                })
            })
            .collect();
        let verdict = Verdict::of(&levels, &[200, 500, 1000]);
        let r = Results {
            run_id: "bench-test".into(),
            state: super::super::RunState::Complete,
            pid: None,
            exectl_version: "0.1.0".into(),
            stack: "exe".into(),
            target: "local".into(),
            scenario: "login-burst".into(),
            started_unix_s: 1_795_000_000,
            duration_s: 26.0,
            deploy_run_id: Some("deploy-1".into()),
            knobs: [
                ("instances".to_string(), "2".to_string()),
                ("cpus".into(), "0.5".into()),
            ]
            .into(),
            images: [("app-1".to_string(), "sha256:abc".to_string())].into(),
            levels_asked: vec![200, 500, 1000],
            hold_s: 6.0,
            ramp_s: 4.0,
            sample_s: 1.0,
            settle_s: 45.0,
            slos,
            continue_after_fail: false,
            levels,
            verdict,
            sampler: SamplerCost {
                samples: 26,
                mean_sample_ms: 12.0,
                sut_cpu_pct: Some(0.4),
                host_scripts: 1,
            },
            generator_cpus: 2.0,
        };
        (r, samples)
    }

    #[test]
    fn the_report_leads_with_the_verdict_and_draws_every_chart_from_its_data_alone() {
        let (r, samples) = example();
        assert_eq!(r.verdict.capacity, Some(200));
        let html = render(&r, &samples).unwrap();
        let verdict = html.find("id=\"verdict\"").unwrap();
        assert!(
            verdict < html.find("id=\"levels\"").unwrap(),
            "the verdict comes first"
        );
        assert!(html.contains("Capacity: 200 users"), "{html}");
        assert!(
            html.contains("Limiting component: <strong>app instances&#x27; CPU</strong>"),
            "{html}"
        );
        for id in [
            "users",
            "cpu",
            "rss",
            "files",
            "nginx",
            "load",
            "generator-cpu",
            "generator-rss",
            "latency",
            "failures",
        ] {
            let at = html
                .find(&format!("<figure class=\"chart\" id=\"{id}\""))
                .unwrap_or_else(|| panic!("{id}"));
            let fig = &html[at..at + html[at..].find("</figure>").unwrap()];
            assert!(fig.contains("<svg"), "{id} drew nothing");
        }
        assert!(html.contains("data-series=\"target users|open sockets (generator)|app-1 connections|app-2 connections|all instances\""));
        // Self-contained: no scripts, no links to fetch.
        assert!(
            !html.contains("<script")
                && !html.contains("src=\"http")
                && !html.contains("href=\"http")
        );
        assert_eq!(
            render(&r, &samples).unwrap(),
            html,
            "the same input gives the same bytes"
        );
    }
}
