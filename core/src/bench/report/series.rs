//! The report's charts as data: the timeline's series on one clock (users and connections, CPU on the
//! bench's one scale, memory, open files, nginx, the SUT host, the generator) and the per-level ones
//! (latencies, failures by kind). `charts` draws them.

use std::collections::BTreeSet;

use super::super::results::Results;
use super::super::timeline::Sample;
use super::super::verdict::Pcts;
use super::charts::{self, Band, Chart, Series, XAxis};

fn secs(t_ms: u64) -> f64 {
    t_ms as f64 / 1000.0
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

pub fn time_charts(r: &Results, samples: &[Sample], spans: &[Band]) -> Result<Vec<String>, String> {
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
    let scale = &r.cpu_scale;
    for (i, name) in services(samples).iter().enumerate() {
        let of = |s: &Sample| s.container(name).cloned();
        // The bench's one scale: a share of what the container can use (its quota, the host's CPUs,
        // or its app's threads), so 100 % is saturated for every line alike.
        cpu.push(Series::line(
            name.clone(),
            i,
            samples
                .iter()
                .filter_map(|s| Some((at(s), scale.share(&of(s)?)? * 100.0)))
                .collect(),
        ));
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
    let color = services(samples).len();
    if !files_sampled.is_empty() {
        files.push(Series::limit("the nofile limit", color, files_sampled));
    }
    let cpu_sampled: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s.containers.iter().any(|c| scale.share(c).is_some()))
        .map(|s| (at(s), 100.0))
        .collect();
    if !cpu_sampled.is_empty() {
        cpu.push(Series::limit("usable CPU limit", color, cpu_sampled));
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
    // The host as a component: its CPUs busy (the containers', and the generator's when it shares the
    // host), beside its load average and its CPUs.
    let mut load = vec![
        Series::line(
            "SUT load average (1 min)",
            3,
            samples
                .iter()
                .filter_map(|s| Some((at(s), s.load_avg?)))
                .collect(),
        ),
        Series::line(
            if r.generator_local {
                "CPUs busy (containers and the generator)"
            } else {
                "CPUs busy (containers)"
            },
            4,
            samples
                .iter()
                .filter(|s| s.containers.iter().any(|c| c.cpu_pct.is_some()))
                .map(|s| {
                    let mut busy: f64 =
                        s.containers.iter().filter_map(|c| c.cpu_pct).sum::<f64>() / 100.0;
                    if r.generator_local {
                        busy += s.generator.cpu_pct.unwrap_or(0.0) / 100.0 * r.generator_cpus;
                    }
                    (at(s), busy)
                })
                .collect(),
        ),
    ];
    if let Some(h) = scale.host_cpus {
        let pts: Vec<(f64, f64)> = samples.iter().map(|s| (at(s), h)).collect();
        if !pts.is_empty() {
            load.push(Series::limit("the host's CPU limit", 4, pts));
        }
    }
    let charts = [
        (
            "users",
            "Target users, held sockets and per-instance connections",
            "users / connections",
            users,
        ),
        (
            "cpu",
            "CPU per container, as a share of what it can use (its quota, the host's CPUs or its app's threads)",
            "% of usable CPU",
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
        (
            "load",
            "SUT host: load average and CPUs busy (dashed: its CPUs)",
            "load / CPUs",
            load,
        ),
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

pub fn level_charts(r: &Results) -> Result<Vec<String>, String> {
    let users: Vec<u64> = r.levels.iter().map(|l| l.users).collect();
    let x = || XAxis::Levels {
        users: users.clone(),
    };
    let pct_series =
        |what: &str,
         color: usize,
         get: fn(&super::super::verdict::LevelFigures) -> Option<Pcts>| {
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
