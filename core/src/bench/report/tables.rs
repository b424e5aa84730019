//! The report's tables: one row per level (its result, how many were open at once and for how long, the
//! ramp that got there, latencies, a planned fault and the users' return, the busiest container on the
//! bench's CPU scale, the leak check) and
//! the objectives level by level, and each service: where it ran, what it may use and its peaks.

use serde::Serialize;

use super::super::cpu::busiest;
use super::super::decimal::show;
use super::super::figures::Pcts;
use super::super::results::Results;
use super::super::slo::{objective, OBJECTIVES};
use super::super::timeline::Sample;
use crate::plateau::group;
use crate::units::readable_s;

#[derive(Serialize)]
pub struct Row {
    users: u64,
    /// "pass", "fail", "invalid", "interrupted", "held; leaked", "held; leak unchecked".
    result: &'static str,
    passed: bool,
    held: String,
    /// "400 / 400 for 20.0 s", "peak 1,722 / 10,000".
    at_once: String,
    /// The instances' own sum: its lowest during the common hold / its peak.
    instances: String,
    /// "5 s · 79 logins/s".
    ramp: String,
    refused: u64,
    stalled: u64,
    /// The generator's liveness pings a second during the hold, and the server's own cadence.
    pings: String,
    login: String,
    connect: String,
    delivery: String,
    health: String,
    /// `--browser-probe`'s session during the plateau (empty without it).
    browser: String,
    /// `--fault`: what it became and the users' returns (empty without it).
    fault: String,
    /// `--churn`: the leaves and the largest growth (empty without it).
    growth: String,
    cpu: String,
    leak_ok: bool,
    /// Short when it passed ("0 left after 30.4 s"); `leak_detail` is its tooltip.
    leak: String,
    leak_detail: String,
    why: String,
}

#[derive(Serialize)]
pub struct Cell {
    text: String,
    class: &'static str,
}

#[derive(Serialize)]
pub struct Objective {
    key: String,
    bound: String,
    /// How it is measured: the table's sentence, its `code` marks dropped.
    measured: String,
    cells: Vec<Cell>,
}

fn p95(p: &Option<Pcts>) -> String {
    p.map(|p| format!("{} ms", show(p.p95)))
        .unwrap_or_else(|| "—".into())
}

pub fn rows(r: &Results, samples: &[Sample]) -> Vec<Row> {
    r.levels
        .iter()
        .map(|l| {
            let f = &l.figures;
            let (at_once, ramp) = match &f.plateau {
                Some(p) => (
                    p.at_once(),
                    match (p.ramp_s, p.logins_per_s) {
                        (Some(t), Some(rate)) => format!("{} · {rate:.0} logins/s", readable_s(t)),
                        (Some(t), None) => readable_s(t),
                        (None, _) => "—".into(),
                    },
                ),
                None => ("—".into(), "—".into()),
            };
            // The open model: when each session was due, and what the cap delayed.
            let ramp = match (&f.arrivals, ramp.as_str()) {
                (Some(a), "—") => a.clone(),
                (Some(a), _) => format!("{ramp} · {a}"),
                (None, _) => ramp,
            };
            Row {
                users: l.users,
                result: l.outcome().word(),
                passed: l.passed,
                held: format!("{} / {}", f.held, f.users),
                at_once,
                instances: match (f.instances_min_in_hold, f.instances_peak) {
                    (Some(min), Some(peak)) => format!("{} / {}", group(min), group(peak)),
                    (None, Some(peak)) => group(peak),
                    _ => "—".into(),
                },
                ramp,
                refused: f.refused,
                stalled: f.stalled,
                pings: f.pings.map_or("—".into(), |p| p.cell()),
                login: p95(&f.login_ms),
                connect: p95(&f.connect_ms),
                delivery: p95(&f.delivery_ms),
                health: p95(&f.health_ms),
                browser: f.browser.as_ref().map(|b| b.text()).unwrap_or_default(),
                fault: f.fault.as_ref().map(|x| x.describe()).unwrap_or_default(),
                growth: f.growth.as_ref().map(|g| g.describe()).unwrap_or_default(),
                cpu: busiest(
                    l.span.during(samples).flat_map(|s| &s.containers),
                    &r.cpu_scale,
                ),
                leak_ok: l.leak.ok == Some(true),
                leak: match l.leak.ok {
                    Some(true) => format!("0 left after {:.1} s", l.leak.waited_ms as f64 / 1000.0),
                    _ => l.leak.detail.clone(),
                },
                leak_detail: l.leak.detail.clone(),
                why: if l.passed {
                    String::new()
                } else {
                    l.reasons.join("; ")
                },
            }
        })
        .collect()
}

/// The objectives table: a row per objective of `slo::OBJECTIVES` some level was checked on, in its
/// order, with how it is measured (a key the table no longer has, from an older results.json, after
/// them); a cell per level.
pub fn objectives(r: &Results) -> Vec<Objective> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for c in r.levels.iter().flat_map(|l| &l.slos) {
        if !keys.iter().any(|(key, _)| *key == c.key) {
            keys.push((c.key.clone(), c.bound.clone()));
        }
    }
    let rank = |key: &str| {
        OBJECTIVES
            .iter()
            .position(|o| o.key == key)
            .unwrap_or(OBJECTIVES.len())
    };
    keys.sort_by_key(|(key, _)| rank(key));
    keys.into_iter()
        .map(|(key, bound)| Objective {
            cells: r
                .levels
                .iter()
                .map(|l| match l.slos.iter().find(|c| c.key == key) {
                    Some(c) => Cell {
                        text: c.measured_text(),
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
            measured: objective(&key).map_or(String::new(), |o| o.measured.replace('`', "")),
            key,
            bound,
        })
        .collect()
}

/// One service of the stack over the whole bench.
#[derive(Serialize)]
pub struct ServiceRow {
    service: String,
    /// The swarm node that ran it ("" on one engine).
    pub node: String,
    cpu_limit: String,
    mem_limit: String,
    nofile: String,
    /// Its highest CPU on the bench's scale, RSS and open files, over every sample.
    cpu_peak: String,
    rss_peak: String,
    open_peak: String,
}

/// Every sampled service, by name: its node, its limits as last read, its peaks.
pub fn services(r: &Results, samples: &[Sample]) -> Vec<ServiceRow> {
    let mut names: Vec<&str> = samples
        .iter()
        .flat_map(|s| s.containers.iter().map(|c| c.service.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let dash = || "—".to_string();
    names
        .into_iter()
        .map(|name| {
            let seen: Vec<_> = samples
                .iter()
                .flat_map(|s| s.containers.iter().filter(|c| c.service == name))
                .collect();
            let last = |f: fn(&super::super::timeline::ContainerSample) -> Option<String>| {
                seen.iter().rev().find_map(|c| f(c)).unwrap_or_else(dash)
            };
            let mib = |b: u64| format!("{} MiB", show(b as f64 / 1048576.0));
            let cpu_peak = seen
                .iter()
                .filter_map(|c| Some((r.cpu_scale.share(c)?, *c)))
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .and_then(|(_, c)| r.cpu_scale.show(c))
                .unwrap_or_else(dash);
            ServiceRow {
                service: name.to_string(),
                node: seen
                    .iter()
                    .rev()
                    .find_map(|c| c.node.clone())
                    .unwrap_or_default(),
                cpu_limit: last(|c| c.cpu_limit.map(super::super::cpu::cpus)),
                mem_limit: seen
                    .iter()
                    .rev()
                    .find_map(|c| c.mem_limit_bytes)
                    .map(mib)
                    .unwrap_or_else(dash),
                nofile: last(|c| c.nofile.map(|n| n.to_string())),
                cpu_peak,
                rss_peak: seen
                    .iter()
                    .filter_map(|c| c.rss_bytes)
                    .max()
                    .map(mib)
                    .unwrap_or_else(dash),
                open_peak: seen
                    .iter()
                    .filter_map(|c| c.open_files)
                    .max()
                    .map(|n| n.to_string())
                    .unwrap_or_else(dash),
            }
        })
        .collect()
}
