//! What the app's image needs and can use, where it is known: the memory it holds only to idle (the real
//! eXeLearning image, a Bun server, holds 200–260 MiB of RSS per idle instance, contract §8; the stand-in a
//! few MiB), and the CPUs it can keep busy (Bun runs the app's JavaScript, password checks included, on
//! one thread: an instance saturates at one CPU whatever its quota). Other images are unknown: no advice.

/// The real app's image, whatever its tag or digest.
pub const REAL_APP_REPO: &str = "ghcr.io/exelearning/exelearning";

/// The idle RSS of one real app instance, in MiB (low, high).
pub const REAL_IDLE_MIB: (u64, u64) = (200, 260);

/// The idle footprint of `image` when it is known, in MiB (low, high).
pub fn idle_mib(image: &str) -> Option<(u64, u64)> {
    (repository(image) == REAL_APP_REPO).then_some(REAL_IDLE_MIB)
}

/// The project's stand-in for the app (standin/), built as this image by images/build.sh.
pub const STANDIN_REPO: &str = "exectl-fixture/standin";

/// What the app instances' image is, as the engine describes it (read once from the image itself): its
/// reference, the command it runs and its labels. A tag built locally from the app's Dockerfile runs
/// the same command as the upstream image under another name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AppImage {
    /// As the spec names it (`ghcr.io/exelearning/exelearning:latest`, `exe:local`).
    pub reference: String,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub labels: std::collections::BTreeMap<String, String>,
}

impl AppImage {
    /// An image known by its name only (its configuration not read).
    pub fn named(reference: &str) -> AppImage {
        AppImage {
            reference: reference.into(),
            ..AppImage::default()
        }
    }

    /// The app's server runs on Bun: the upstream image by its name, its source label, or any image
    /// whose entrypoint or command runs `bun` (the upstream Dockerfile's `CMD ["bun","run",
    /// "dist/index.js"]`, kept by a local build of it).
    fn runs_bun(&self) -> bool {
        let source = self
            .labels
            .get("org.opencontainers.image.source")
            .is_some_and(|s| {
                s.trim_end_matches(['/', ' '])
                    .to_lowercase()
                    .ends_with("/exelearning/exelearning")
            });
        let bun = self
            .entrypoint
            .iter()
            .chain(&self.cmd)
            .flat_map(|w| w.split_whitespace())
            .any(|w| w.rsplit('/').next() == Some("bun"));
        repository(&self.reference) == REAL_APP_REPO || source || bun
    }
}

/// The CPUs one app instance can keep busy, and why, when its image runs on fewer threads than a quota
/// may give it; `fault` is the instance's STANDIN_FAULT (the stand-in's blocking-bcrypt fault runs it
/// on one worker, as Bun runs its JavaScript).
pub fn app_threads(image: &AppImage, fault: Option<&str>) -> Option<(f64, &'static str)> {
    if image.runs_bun() {
        return Some((
            1.0,
            "Bun runs the app's JavaScript, password checks included, on one thread",
        ));
    }
    let blocking = fault.is_some_and(|f| f.split(',').any(|x| x.trim() == "blocking-bcrypt"));
    (repository(&image.reference) == STANDIN_REPO && blocking).then_some((
        1.0,
        "the stand-in's blocking-bcrypt fault runs it on one worker thread, as Bun runs its JavaScript",
    ))
}

/// `repo[:tag][@digest]` → `repo` (a `:` after the last `/` is the tag; before it, a registry port).
fn repository(image: &str) -> &str {
    let name = image.split('@').next().unwrap_or(image);
    match name.rfind(':') {
        Some(i) if !name[i..].contains('/') => &name[..i],
        _ => name,
    }
}

/// "the real app image idles at 200–260 MiB per instance", for details and fixes.
pub fn describe((low, high): (u64, u64)) -> String {
    format!("the real app image idles at {low}–{high} MiB per instance")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_real_image_has_a_known_footprint_whatever_its_tag() {
        for real in [
            "ghcr.io/exelearning/exelearning",
            "ghcr.io/exelearning/exelearning:latest",
            "ghcr.io/exelearning/exelearning:exenew@sha256:c1ec78fc",
            "ghcr.io/exelearning/exelearning@sha256:c1ec78fc",
        ] {
            assert_eq!(idle_mib(real), Some((200, 260)), "{real}");
        }
        for other in [
            "exectl-fixture/standin:latest",
            "localhost:5000/exelearning",
            "ghcr.io/exelearning/exelearning-fork:1",
        ] {
            assert_eq!(idle_mib(other), None, "{other}");
        }
        assert_eq!(repository("localhost:5000/a/b:1"), "localhost:5000/a/b");
    }

    #[test]
    fn one_thread_for_bun_and_for_the_stand_in_with_its_blocking_fault() {
        let named = AppImage::named;
        let real = named("ghcr.io/exelearning/exelearning:exenew");
        assert_eq!(app_threads(&real, None).map(|t| t.0), Some(1.0));
        let standin = named("exectl-fixture/standin:latest");
        assert_eq!(app_threads(&standin, None), None, "its bcrypt runs beside");
        assert_eq!(
            app_threads(&standin, Some("leak-on-close, blocking-bcrypt")).map(|t| t.0),
            Some(1.0)
        );
        assert_eq!(
            app_threads(&named("nginx:1"), Some("blocking-bcrypt")),
            None
        );
    }

    /// Issue #36: a locally built tag of the app was scaled to its 2-CPU quota, the one-thread scale
    /// being the upstream name's only. The image itself says it runs Bun.
    #[test]
    fn a_local_build_of_the_app_is_recognised_by_what_it_runs() {
        let local = AppImage {
            reference: "exe:fixed".into(),
            entrypoint: vec![
                "/usr/bin/dumb-init".into(),
                "--".into(),
                "/app/docker-entrypoint.sh".into(),
            ],
            cmd: vec!["bun".into(), "run".into(), "dist/index.js".into()],
            labels: Default::default(),
        };
        assert_eq!(app_threads(&local, None).map(|t| t.0), Some(1.0));
        let shell = AppImage {
            cmd: vec![
                "/bin/sh".into(),
                "-c".into(),
                "exec /usr/local/bin/bun dist/index.js".into(),
            ],
            ..AppImage::named("registry.local:5000/exe:2")
        };
        assert_eq!(app_threads(&shell, None).map(|t| t.0), Some(1.0));
        let labelled = AppImage {
            labels: [(
                "org.opencontainers.image.source".to_string(),
                "https://github.com/exelearning/exelearning".to_string(),
            )]
            .into(),
            ..AppImage::named("mirror/exe:1")
        };
        assert_eq!(app_threads(&labelled, None).map(|t| t.0), Some(1.0));
        let other = AppImage {
            cmd: vec!["/exe-standin".into()],
            entrypoint: vec!["bundle".into()],
            ..AppImage::named("exe:other")
        };
        assert_eq!(app_threads(&other, None), None);
    }
}
