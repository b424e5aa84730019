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

/// The CPUs one app instance can keep busy, and why, when its image runs on fewer threads than a quota
/// may give it; `fault` is the instance's STANDIN_FAULT (the stand-in's blocking-bcrypt fault runs it
/// on one worker, as Bun runs its JavaScript).
pub fn app_threads(image: &str, fault: Option<&str>) -> Option<(f64, &'static str)> {
    let repo = repository(image);
    if repo == REAL_APP_REPO {
        return Some((
            1.0,
            "Bun runs the app's JavaScript, password checks included, on one thread",
        ));
    }
    let blocking = fault.is_some_and(|f| f.split(',').any(|x| x.trim() == "blocking-bcrypt"));
    (repo == STANDIN_REPO && blocking).then_some((
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
        let real = "ghcr.io/exelearning/exelearning:exenew";
        assert_eq!(app_threads(real, None).map(|t| t.0), Some(1.0));
        let standin = "exectl-fixture/standin:latest";
        assert_eq!(app_threads(standin, None), None, "its bcrypt runs beside");
        assert_eq!(
            app_threads(standin, Some("leak-on-close, blocking-bcrypt")).map(|t| t.0),
            Some(1.0)
        );
        assert_eq!(app_threads("nginx:1", Some("blocking-bcrypt")), None);
    }
}
