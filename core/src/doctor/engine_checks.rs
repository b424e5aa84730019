//! The engine's own configuration, as doctor checks it: whether published ports go through docker-proxy
//! (the userland proxy) and what it can carry, and the containers' default nofile against what the
//! engine allows. Pure: facts in, checks out.

use super::check::{unread, Check, READ_FIX};
use super::facts::EngineConfig;

/// Descriptors docker-proxy holds per proxied connection: its two sockets and, for splice(2), a pipe
/// pair each way (measured: 18,225 at 3,021 connections, 19,997 just before it stopped at 3,331).
pub const PROXY_FILES_PER_CONNECTION: u64 = 6;
/// Descriptors an idle docker-proxy holds (its listener, epoll, stdio: measured 9).
pub const PROXY_IDLE_FILES: u64 = 9;

/// Connections one docker-proxy carries under `nofile` before an accept fails and it stops for good.
pub fn proxy_capacity(nofile: u64) -> u64 {
    nofile.saturating_sub(PROXY_IDLE_FILES) / PROXY_FILES_PER_CONNECTION
}

/// How to take docker-proxy out of a benchmark's way.
pub const PROXY_FIX: &str = "turn the userland proxy off: exectl host tune --role sut (\"userland-proxy\": false in daemon.json), then restart dockerd (on a fresh machine, scripts/dockerd.sh starts it that way) — or run the load generator on another host, whose connections go through iptables";

fn unread_config(name: &str) -> Check {
    unread(
        name,
        "the engine's flags and daemon.json (its dockerd's /proc/PID/cmdline)",
        None,
        READ_FIX,
    )
}

/// docker-proxy carries the connections made to a published port on the engine's host itself (the
/// generator on the SUT, `local`); a generator elsewhere reaches the port through iptables.
pub(super) fn userland_proxy(
    cfg: Option<&EngineConfig>,
    max_nofile: Option<u64>,
    n: Option<u64>,
    local: bool,
) -> Check {
    const NAME: &str = "userland-proxy";
    let Some(cfg) = cfg else {
        return unread_config(NAME);
    };
    if !cfg.userland_proxy {
        return Check::pass(
            NAME,
            format!(
                "the userland proxy is off ({}): published ports go through iptables, no docker-proxy",
                cfg.proxy_set_by
            ),
        );
    }
    let capacity = max_nofile.map(proxy_capacity);
    let carries = match (capacity, max_nofile) {
        (Some(c), Some(m)) => format!(
            "docker-proxy, which holds {PROXY_FILES_PER_CONNECTION} descriptors per connection under dockerd's nofile {m}: at most {c} connections at once, and at that limit it stops for good (the port stays dead until its container restarts)"
        ),
        _ => format!("docker-proxy, which holds {PROXY_FILES_PER_CONNECTION} descriptors per connection under dockerd's nofile and stops for good at that limit"),
    };
    let on = format!("the userland proxy is on ({})", cfg.proxy_set_by);
    if !local {
        return Check::pass(
            NAME,
            format!("{on}: a load generator on another host reaches published ports through iptables; only connections made on the SUT itself go through {carries}"),
        );
    }
    match (n, capacity) {
        (Some(n), Some(c)) if n > c => Check::fail(
            NAME,
            format!("{on}: connections to published ports on this host's loopback go through {carries} — fewer than the {n} connections"),
            PROXY_FIX,
        ),
        (Some(n), Some(_)) => Check::pass(
            NAME,
            format!("{on}: loopback connections go through {carries}; enough for {n}"),
        ),
        _ => Check::warn(
            NAME,
            format!("{on}: connections to published ports on this host's loopback go through {carries}"),
            PROXY_FIX,
        ),
    }
}

/// A default nofile above what a container may have makes every container that sets no ulimits fail
/// to start ("error setting rlimit type 7: operation not permitted").
pub(super) fn default_ulimits(cfg: Option<&EngineConfig>, max_nofile: Option<u64>) -> Check {
    const NAME: &str = "default-ulimits";
    let Some(cfg) = cfg else {
        return unread_config(NAME);
    };
    match (cfg.default_nofile, max_nofile) {
        (Some(d), Some(m)) if d > m => Check::fail(
            NAME,
            format!(
                "the engine's default-ulimits nofile {d} ({}) is above the {m} open files a container may have here (dockerd's hard limit and fs.nr_open): every container that sets no ulimits fails to start (\"error setting rlimit type 7\")",
                cfg.config_file
            ),
            format!("lower it to {m} (exectl host tune --role sut caps it so), or raise dockerd's hard limit (LimitNOFILE=) and fs.nr_open; then restart dockerd"),
        ),
        (Some(d), _) => Check::pass(NAME, format!("the engine's default-ulimits nofile is {d}")),
        (None, _) => Check::pass(
            NAME,
            "the engine sets no default nofile: exectl sets each container's ulimits itself",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::check::Level;
    use super::*;

    fn config(userland_proxy: bool, default_nofile: Option<u64>) -> EngineConfig {
        EngineConfig {
            userland_proxy,
            proxy_set_by: "the default".into(),
            default_nofile,
            config_file: "/etc/docker/daemon.json".into(),
        }
    }

    #[test]
    fn the_userland_proxy_against_the_connections_it_would_carry() {
        let on = config(true, None);
        // 6 descriptors a connection under 20000: 3331, as measured when it stopped.
        assert_eq!(proxy_capacity(20_000), 3331);
        let c = userland_proxy(Some(&on), Some(20_000), Some(10_000), true);
        assert_eq!(c.level, Level::Fail, "{c:?}");
        assert!(
            c.detail.contains("at most 3331 connections")
                && c.detail.contains("fewer than the 10000"),
            "{}",
            c.detail
        );
        assert!(c.fix.contains("\"userland-proxy\": false") && c.fix.contains("restart dockerd"));
        let level = |n, local| userland_proxy(Some(&on), Some(20_000), n, local).level;
        assert_eq!(level(Some(3_000), true), Level::Pass);
        assert_eq!(level(None, true), Level::Warn);
        // A generator on another host goes through iptables, whatever the count.
        assert_eq!(level(Some(10_000), false), Level::Pass);
        let off = userland_proxy(Some(&config(false, None)), Some(20_000), Some(10_000), true);
        assert_eq!(off.level, Level::Pass, "{off:?}");
        assert_eq!(userland_proxy(None, None, None, true).level, Level::Warn);
    }

    #[test]
    fn a_default_nofile_above_the_engines_limit_fails() {
        let high = config(false, Some(1 << 20));
        let c = default_ulimits(Some(&high), Some(20_000));
        assert_eq!(c.level, Level::Fail, "{c:?}");
        assert!(
            c.detail.contains("1048576") && c.detail.contains("20000 open files"),
            "{}",
            c.detail
        );
        assert!(c.fix.contains("lower it to 20000"), "{}", c.fix);
        assert_eq!(
            default_ulimits(Some(&high), Some(1 << 20)).level,
            Level::Pass
        );
        assert_eq!(
            default_ulimits(Some(&config(false, None)), Some(20_000)).level,
            Level::Pass
        );
    }
}
