//! What a bench takes from the stack's record: its knobs (for results.json and `runs diff`), nginx's
//! worker_connections, and what the app instances run (for the CPU scale). Pure: the record in, the
//! bench's reading of it out.

use std::collections::BTreeMap;
use std::time::Duration;

use super::cpu::{AppThreads, CpuScale};
use crate::footprint::{app_threads, AppImage};
use crate::record::StackRecord;

#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub knobs: BTreeMap<String, String>,
    pub worker_connections: Option<u64>,
    pub app_image: String,
    pub fault: Option<String>,
    /// The stand-in's own room cleanup (`STANDIN_ROOM_CLEANUP_MS`), when the stack sets it.
    pub room_cleanup: Option<Duration>,
}

impl Recorded {
    pub fn of(record: &StackRecord) -> Recorded {
        let spec = &record.spec;
        Recorded {
            knobs: spec.knobs.clone(),
            worker_connections: spec.nginx.as_ref().and_then(|n| n.worker_connections),
            app_image: spec.images.app.clone(),
            fault: spec.env.get("STANDIN_FAULT").cloned(),
            room_cleanup: spec
                .env
                .get("STANDIN_ROOM_CLEANUP_MS")
                .and_then(|ms| ms.parse().ok())
                .map(Duration::from_millis),
        }
    }

    /// nginx's connections: worker_connections × the worker processes it really runs (counted in its
    /// cgroup: `auto` is one per CPU nginx sees, the host's).
    pub fn nginx_capacity(&self, workers: Option<u32>) -> Option<u64> {
        Some(self.worker_connections? * workers? as u64)
    }

    /// The bench's one CPU scale: the SUT's CPUs, and the threads the app's image can run (`image`:
    /// as the engine describes it, or `None` when it could not be read: then by its name only).
    pub fn cpu_scale(&self, image: Option<AppImage>, host_cpus: Option<f64>) -> CpuScale {
        let image = image.unwrap_or_else(|| AppImage::named(&self.app_image));
        CpuScale {
            host_cpus,
            app_threads: app_threads(&image, self.fault.as_deref()).map(|(cpus, why)| AppThreads {
                cpus,
                why: why.into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::footprint::{REAL_APP_REPO, STANDIN_REPO};
    use crate::record::example;
    use crate::spec::Topology;

    fn ha(app: &str, env: &[(&str, &str)]) -> Recorded {
        let mut r = example("rec", Topology::Ha);
        r.spec.images.app = app.into();
        r.spec.env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Recorded::of(&r)
    }

    #[test]
    fn an_image_not_read_is_known_by_its_name() {
        let real = ha(&format!("{REAL_APP_REPO}:v3"), &[]);
        let scale = real.cpu_scale(None, Some(2.0));
        assert_eq!(scale.host_cpus, Some(2.0));
        assert_eq!(scale.app_threads.map(|t| t.cpus), Some(1.0));
        // The stand-in runs on every thread a quota gives it, but with its blocking-bcrypt fault.
        let standin = ha(&format!("{STANDIN_REPO}:latest"), &[]);
        assert_eq!(standin.cpu_scale(None, Some(2.0)).app_threads, None);
        let blocking = ha(
            &format!("{STANDIN_REPO}:latest"),
            &[("STANDIN_FAULT", "leak, blocking-bcrypt")],
        );
        assert!(blocking.cpu_scale(None, None).app_threads.is_some());
    }

    #[test]
    fn a_read_image_is_judged_by_what_it_runs() {
        let local = ha("exe:local", &[]);
        let bun = AppImage {
            cmd: vec!["bun".into(), "run".into(), "dist/index.js".into()],
            ..AppImage::named("exe:local")
        };
        assert_eq!(local.cpu_scale(None, None).app_threads, None);
        assert!(local.cpu_scale(Some(bun), None).app_threads.is_some());
    }

    #[test]
    fn nginx_capacity_and_the_stand_ins_cleanup() {
        let r = ha("exe:local", &[("STANDIN_ROOM_CLEANUP_MS", "1500")]);
        assert_eq!(r.nginx_capacity(Some(2)), Some(8192));
        assert_eq!(r.nginx_capacity(None), None);
        assert_eq!(r.room_cleanup, Some(Duration::from_millis(1500)));
        let single = Recorded::of(&example("rec", Topology::Single));
        assert_eq!(single.nginx_capacity(Some(2)), None);
        assert_eq!(single.room_cleanup, None);
    }
}
