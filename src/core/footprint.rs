//! What the app's image needs only to idle, for memory advice. The real eXeLearning image (a Bun server)
//! holds 200–260 MiB of RSS per idle instance (contract §8); the stand-in holds a few MiB, and other
//! images are unknown, so advice about idle memory applies to the real image only.

/// The real app's image, whatever its tag or digest.
pub const REAL_APP_REPO: &str = "ghcr.io/exelearning/exelearning";

/// The idle RSS of one real app instance, in MiB (low, high).
pub const REAL_IDLE_MIB: (u64, u64) = (200, 260);

/// The idle footprint of `image` when it is known, in MiB (low, high).
pub fn idle_mib(image: &str) -> Option<(u64, u64)> {
    (repository(image) == REAL_APP_REPO).then_some(REAL_IDLE_MIB)
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
}
