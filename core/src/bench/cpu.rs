//! One CPU scale per bench: a container's CPU is a share of what it can really use — min(its quota,
//! else the SUT's CPUs; the threads its app can run) — and that one share is what the progress line,
//! the levels table, the chart and the verdict all show. (The real app checks passwords on Bun's one JS
//! thread: at 92 % of one CPU it is saturated, though that is 46 % of a 2-CPU quota.)

use serde::{Deserialize, Serialize};

use super::timeline::{ContainerSample, Sample};
use crate::status::is_app;

/// The app instances' usable CPUs when their image runs on fewer threads than a quota may give.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppThreads {
    pub cpus: f64,
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CpuScale {
    /// The SUT's CPUs.
    pub host_cpus: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_threads: Option<AppThreads>,
}

impl CpuScale {
    /// The CPUs `c` can keep busy (None when neither its quota nor the host's CPUs are known).
    pub fn usable(&self, c: &ContainerSample) -> Option<f64> {
        let quota = c.cpu_limit.or(self.host_cpus)?;
        let quota = self.host_cpus.map_or(quota, |h| quota.min(h));
        Some(match &self.app_threads {
            Some(t) if is_app(&c.service) => quota.min(t.cpus),
            _ => quota,
        })
    }

    /// `c`'s CPU as a share of what it can use (1.0: all of it). A figure above what the kernel lets
    /// the container use — its quota, else the host's CPUs — is the sampling window's artefact, not
    /// CPU it had: CFS grants the quota per 100 ms period, and a 1 s window between two reads of the
    /// cgroup's counter cuts periods at both ends, holding up to 11 periods' grants (measured here: a
    /// busy container under a 0.5-CPU quota read at 93–103 % second by second, each read timed at the
    /// read; the sampler times the host script's answer, whose delay widens that: 101–108 % seen).
    /// Such a figure is shown at the limit; the timeline keeps what was read.
    pub fn share(&self, c: &ContainerSample) -> Option<f64> {
        let enforced = match (c.cpu_limit, self.host_cpus) {
            (Some(q), Some(h)) => Some(q.min(h)),
            (q, h) => q.or(h),
        };
        let pct = match enforced {
            Some(limit) => c.cpu_pct?.min(limit * 100.0),
            None => c.cpu_pct?,
        };
        Some(pct / (self.usable(c)? * 100.0))
    }

    /// "92 % of 1 CPU": a container's CPU on this scale, for progress lines and tables.
    pub fn show(&self, c: &ContainerSample) -> Option<String> {
        Some(format!(
            "{:.0} % of {}",
            self.share(c)? * 100.0,
            cpus(self.usable(c)?)
        ))
    }

    /// What `c`'s scale is, in words: "1 CPU: Bun runs …", "its quota, 0.2 CPU", "the host's 2 CPUs".
    pub fn reason(&self, c: &ContainerSample) -> String {
        let Some(usable) = self.usable(c) else {
            return "no limit known".into();
        };
        match (&self.app_threads, c.cpu_limit) {
            (Some(t), quota)
                if is_app(&c.service) && usable == t.cpus && quota.is_none_or(|q| q > t.cpus) =>
            {
                format!("{}: {}", cpus(t.cpus), t.why)
            }
            (_, Some(_)) => format!("its quota, {}", cpus(usable)),
            (_, None) => format!("the host's {}", cpus(usable)),
        }
    }

    /// Each service's scale once, in words: "app-1, app-2: 1 CPU (quota 2; Bun runs …); nginx: 2 CPUs
    /// (the host's)".
    pub fn describe(&self, samples: &[Sample]) -> String {
        let mut by: Vec<(String, Vec<String>)> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for c in samples.iter().flat_map(|s| &s.containers) {
            if !seen.insert(c.service.clone()) {
                continue;
            }
            let Some(u) = self.usable(c) else { continue };
            let quota = match c.cpu_limit {
                Some(q) => format!("quota {}", number(q)),
                None => "no quota: the host's".to_string(),
            };
            let why = match &self.app_threads {
                Some(t) if is_app(&c.service) && t.cpus < c.cpu_limit.unwrap_or(f64::MAX) => {
                    format!("; {}", t.why)
                }
                _ => String::new(),
            };
            let text = format!("{} ({quota}{why})", cpus(u));
            match by.iter_mut().find(|(t, _)| *t == text) {
                Some((_, names)) => names.push(c.service.clone()),
                None => by.push((text, vec![c.service.clone()])),
            }
        }
        by.iter()
            .map(|(text, names)| format!("{}: {text}", names.join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// 1 → "1 CPU", 0.5 → "0.5 CPU", 2 → "2 CPUs".
pub fn cpus(n: f64) -> String {
    format!("{} CPU{}", number(n), if n > 1.0 { "s" } else { "" })
}

fn number(n: f64) -> String {
    super::decimal::show(n)
}

/// "app-1 92 % of 1 CPU": the container with the highest CPU share among `cs` on the bench's one scale,
/// for progress lines ("?" when none was read).
pub fn busiest<'a>(cs: impl IntoIterator<Item = &'a ContainerSample>, scale: &CpuScale) -> String {
    cs.into_iter()
        .filter_map(|c| Some((scale.share(c)?, c)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .and_then(|(_, c)| Some(format!("{} {}", c.service, scale.show(c)?)))
        .unwrap_or_else(|| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(service: &str, pct: f64, limit: Option<f64>) -> ContainerSample {
        ContainerSample {
            service: service.into(),
            cpu_pct: Some(pct),
            cpu_limit: limit,
            rss_bytes: None,
            mem_limit_bytes: None,
            ..ContainerSample::default()
        }
    }

    #[test]
    fn the_scale_is_the_quota_the_host_or_the_apps_threads_whichever_is_least() {
        let real = CpuScale {
            host_cpus: Some(2.0),
            app_threads: Some(AppThreads {
                cpus: 1.0,
                why: "Bun runs the app's JavaScript on one thread".into(),
            }),
        };
        // The case: app-1 at 92 % of one CPU under a 2-CPU quota is saturated.
        let app = c("app-1", 92.0, Some(2.0));
        assert_eq!(real.usable(&app), Some(1.0));
        assert_eq!(real.show(&app).unwrap(), "92 % of 1 CPU");
        let nginx = c("nginx", 30.0, None);
        assert_eq!(real.usable(&nginx), Some(2.0), "no quota: the host's CPUs");
        assert_eq!(real.show(&nginx).unwrap(), "15 % of 2 CPUs");
        let small = c("app-2", 45.0, Some(0.5));
        assert_eq!(real.usable(&small), Some(0.5), "a quota below one thread");
        assert_eq!(
            real.reason(&app),
            "1 CPU: Bun runs the app's JavaScript on one thread"
        );
        assert_eq!(real.reason(&small), "its quota, 0.5 CPU");
        assert_eq!(real.reason(&nginx), "the host's 2 CPUs");
        let plain = CpuScale {
            host_cpus: Some(2.0),
            app_threads: None,
        };
        assert_eq!(plain.usable(&app), Some(2.0));
        assert_eq!(
            plain.usable(&c("app-1", 1.0, Some(8.0))),
            Some(2.0),
            "capped by the host"
        );
        assert_eq!(CpuScale::default().usable(&nginx), None);
        // Issue #36: 101–108 % of a 0.5 quota is the window cutting CFS periods, shown at the quota;
        // above one thread of a 2-CPU quota is real CPU (Bun's other threads), kept.
        let over = c("app-2", 54.0, Some(0.5));
        assert_eq!(real.show(&over).unwrap(), "100 % of 0.5 CPU");
        assert_eq!(real.share(&over), Some(1.0));
        assert_eq!(
            real.show(&c("app-1", 108.0, Some(2.0))).unwrap(),
            "108 % of 1 CPU"
        );
        assert_eq!(
            real.show(&c("nginx", 230.0, None)).unwrap(),
            "100 % of 2 CPUs"
        );
        let samples = vec![Sample {
            containers: vec![app, c("app-2", 1.0, Some(2.0)), nginx, small.clone()],
            ..Sample::default()
        }];
        assert_eq!(
            real.describe(&samples),
            "app-1, app-2: 1 CPU (quota 2; Bun runs the app's JavaScript on one thread); nginx: 2 CPUs (no quota: the host's)"
        );
    }
}
