//! tune.sh's report lines (`VERB KEY: CURRENT -> WANTED`, `keep KEY: VALUE`) read into a typed report,
//! daemon.json's file line detailed key by key, and the summary printed by `exectl host tune|restore`.

use super::daemon_json::{show, Merge};
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Check,
    Apply,
    Restore,
}

/// What happened (or, with --check, would happen) to one setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// --check: differs, would be set.
    Change,
    /// Set to the wanted value (its previous value recorded).
    Set,
    /// Already as wanted (a capacity minimum already exceeded counts), or on restore already as recorded.
    Keep,
    /// Not on this kernel (e.g. nf_conntrack_max without the conntrack module): left alone.
    Skip,
    /// Put back to the recorded value (a file that did not exist: removed).
    Restored,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting {
    pub key: String,
    pub current: String,
    pub wanted: String,
    pub action: Action,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub mode: Mode,
    /// The target, as `Target::describe` names it.
    pub target: String,
    /// Where the previous values are recorded on the host.
    pub state: String,
    pub settings: Vec<Setting>,
    /// How many settings change (or, with --check, would change; on restore, were put back).
    pub changes: usize,
    /// daemon.json changed (or would): dockerd must be restarted for it to take effect.
    pub docker_restart_needed: bool,
    /// Where the sysctls were read (and set): the live kernel's /proc/sys, or ROOT/proc/sys under --root.
    pub sysctls: String,
    pub notes: Vec<String>,
}

/// The live kernel's sysctls.
pub const LIVE_SYSCTLS: &str = "/proc/sys";

/// tune.sh's output: its setting lines, and any other line (kept as a note). `nothing to change` is
/// dropped: the report says it itself.
pub fn parse_lines(stdout: &str) -> (Vec<Setting>, Vec<String>) {
    let mut settings = Vec::new();
    let mut notes = Vec::new();
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match parse_line(line) {
            Some(s) => settings.push(s),
            None if line == "nothing to change" => {}
            None => notes.push(line.to_string()),
        }
    }
    (settings, notes)
}

fn parse_line(line: &str) -> Option<Setting> {
    let (verb, rest) = line.split_once(' ')?;
    let action = match verb {
        "change" => Action::Change,
        "set" => Action::Set,
        "keep" => Action::Keep,
        "skip" => Action::Skip,
        "restored" => Action::Restored,
        _ => return None,
    };
    let (key, values) = rest.split_once(": ")?;
    // `keep KEY: CURRENT >= WANTED`: a capacity setting already above the wanted minimum.
    let (current, wanted) = values
        .split_once(" -> ")
        .or_else(|| values.split_once(" >= "))
        .unwrap_or((values, values));
    Some(Setting {
        key: key.to_string(),
        current: current.to_string(),
        wanted: wanted.to_string(),
        action,
    })
}

/// Replace tune.sh's line about the daemon.json file (`path`) with one setting per exectl key, from the
/// merge: `PATH KEY`, the host's value and the wanted one.
pub fn detail_daemon_json(settings: Vec<Setting>, path: &str, merge: &Merge) -> Vec<Setting> {
    let mut out = Vec::with_capacity(settings.len() + merge.keys.len());
    for s in settings {
        if s.key != path || !matches!(s.action, Action::Change | Action::Set | Action::Keep) {
            out.push(s);
            continue;
        }
        for k in &merge.keys {
            out.push(Setting {
                key: format!("{path} {}", k.key),
                current: show(k.current.as_ref()),
                wanted: show(Some(&k.wanted)),
                action: if k.differs() { s.action } else { Action::Keep },
            });
        }
    }
    out
}

impl Report {
    /// The report of one run of tune.sh: counts and the notes that follow from what changed
    /// (`daemon_json` and `limits_dir` are the host paths tune.sh was given).
    pub fn new(
        mode: Mode,
        target: String,
        state: String,
        settings: Vec<Setting>,
        mut notes: Vec<String>,
        daemon_json: &str,
        limits_dir: &str,
    ) -> Report {
        let changing =
            |s: &&Setting| matches!(s.action, Action::Change | Action::Set | Action::Restored);
        let changes = settings.iter().filter(changing).count();
        let touches = |prefix: &str| {
            settings
                .iter()
                .filter(changing)
                .any(|s| s.key.starts_with(prefix))
        };
        let docker_restart_needed = touches(daemon_json);
        if docker_restart_needed {
            notes.push(match mode {
                Mode::Check => format!(
                    "applying changes {daemon_json}: dockerd reads it only when it starts, so it must be \
                     restarted afterwards (exectl does not restart it)"
                ),
                Mode::Apply => format!(
                    "{daemon_json} changed: dockerd reads it only when it starts. Restart it for the new \
                     default-ulimits and userland-proxy to take effect (e.g. `systemctl restart docker`; \
                     containers stop unless live-restore is on). exectl did not restart it."
                ),
                Mode::Restore => format!(
                    "{daemon_json} restored: restart dockerd for it to take effect (e.g. `systemctl restart \
                     docker`). exectl did not restart it."
                ),
            });
        }
        if mode != Mode::Check && touches(limits_dir) {
            notes.push(format!(
                "open-file limits in {limits_dir} apply to new login sessions (log in again)"
            ));
        }
        Report {
            mode,
            target,
            state,
            settings,
            changes,
            docker_restart_needed,
            sysctls: LIVE_SYSCTLS.to_string(),
            notes,
        }
    }

    /// The sysctls were the files under `dir` (`--root`): said in a note, so that nobody takes a
    /// rooted run's values for the live kernel's.
    pub fn sysctls_in(mut self, dir: &str) -> Report {
        if dir != LIVE_SYSCTLS {
            self.notes.insert(
                0,
                format!(
                    "--root: the sysctls are the files under {dir}, not the live kernel's {LIVE_SYSCTLS}"
                ),
            );
        }
        self.sysctls = dir.to_string();
        self
    }

    /// `--check`: 1 when something would change, else 0. Applying and restoring: 0.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.mode == Mode::Check && self.changes > 0)
    }

    /// One line per setting that changed, would change or was skipped, then a summary and the notes.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for s in &self.settings {
            let line = match s.action {
                Action::Keep => continue,
                Action::Change => format!("would change {}: {} -> {}", s.key, s.current, s.wanted),
                Action::Set => format!("changed {}: {} -> {}", s.key, s.current, s.wanted),
                Action::Restored => format!("restored {}: {} -> {}", s.key, s.current, s.wanted),
                Action::Skip if self.sysctls == LIVE_SYSCTLS => format!(
                    "skipped {}: not on this kernel (wanted {})",
                    s.key, s.wanted
                ),
                Action::Skip => format!(
                    "skipped {}: not in {} (wanted {})",
                    s.key, self.sysctls, s.wanted
                ),
            };
            out.push_str(&line);
            out.push('\n');
        }
        let kept = self
            .settings
            .iter()
            .filter(|s| s.action == Action::Keep)
            .count();
        let on = &self.target;
        let summary = match (self.mode, self.changes) {
            (Mode::Restore, 0) if self.settings.is_empty() => {
                format!("nothing to restore on {on}: no previous values recorded in {}", self.state)
            }
            (Mode::Restore, 0) => format!("nothing to restore on {on}: the recorded values are in place"),
            (Mode::Restore, n) => format!(
                "restored {n} setting(s) on {on} to the values recorded in {}, and forgot them",
                self.state
            ),
            (_, 0) => format!("nothing to change on {on} ({kept} setting(s) already as wanted)"),
            (Mode::Check, n) => format!(
                "{n} setting(s) would change on {on} ({kept} already as wanted); run without --check to apply"
            ),
            (Mode::Apply, n) => format!(
                "changed {n} setting(s) on {on} ({kept} already as wanted); previous values recorded in {}: \
                 `exectl host restore` puts them back",
                self.state
            ),
        };
        out.push_str(&summary);
        out.push('\n');
        for n in &self.notes {
            if n.starts_with("nothing recorded in ") {
                continue; // said by the summary
            }
            out.push_str("note: ");
            out.push_str(n);
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::daemon_json::merge;

    const CHECK: &str = "change net.core.somaxconn: 4096 -> 65535
keep net.ipv4.tcp_tw_reuse: 1
keep fs.file-max: 2470938 >= 2097152
change net.ipv4.ip_local_port_range: 32768 60999 -> 1024 65535
skip net.netfilter.nf_conntrack_max: absent -> 1048576
change /r/etc/security/limits.d/99-exectl.conf: absent -> exectl's copy
change /r/etc/docker/daemon.json: other content -> exectl's copy
";

    fn setting(key: &str, current: &str, wanted: &str, action: Action) -> Setting {
        Setting {
            key: key.into(),
            current: current.into(),
            wanted: wanted.into(),
            action,
        }
    }

    fn report(mode: Mode, stdout: &str, host_daemon: Option<&str>) -> Report {
        let (settings, notes) = parse_lines(stdout);
        let m = merge(host_daemon, crate::host::WANTED_DAEMON_JSON).unwrap();
        let settings = detail_daemon_json(settings, "/r/etc/docker/daemon.json", &m);
        Report::new(
            mode,
            "the local engine".into(),
            "/r/var/lib/exectl/host".into(),
            settings,
            notes,
            "/r/etc/docker/daemon.json",
            "/r/etc/security/limits.d",
        )
    }

    #[test]
    fn reads_every_kind_of_line() {
        let (s, notes) = parse_lines(CHECK);
        assert!(notes.is_empty());
        assert_eq!(
            s[0],
            setting("net.core.somaxconn", "4096", "65535", Action::Change)
        );
        assert_eq!(
            s[1],
            setting("net.ipv4.tcp_tw_reuse", "1", "1", Action::Keep)
        );
        assert_eq!(
            s[2],
            setting("fs.file-max", "2470938", "2097152", Action::Keep),
            "a minimum already exceeded"
        );
        let s = &s[1..];
        assert_eq!(
            s[2],
            setting(
                "net.ipv4.ip_local_port_range",
                "32768 60999",
                "1024 65535",
                Action::Change
            )
        );
        assert_eq!(s[3].action, Action::Skip);
        assert_eq!(s[4].current, "absent");
        let (s, notes) = parse_lines(
            "restored /r/etc/docker/daemon.json: present -> absent\nnothing recorded in /x: nothing to restore\nnothing to change\n",
        );
        assert_eq!(s[0].action, Action::Restored);
        assert_eq!(s[0].wanted, "absent");
        assert_eq!(notes, vec!["nothing recorded in /x: nothing to restore"]);
    }

    #[test]
    fn daemon_json_is_detailed_per_key() {
        let r = report(
            Mode::Check,
            CHECK,
            Some(r#"{"userland-proxy": false, "debug": true}"#),
        );
        let d: Vec<&Setting> = r
            .settings
            .iter()
            .filter(|s| s.key.starts_with("/r/etc/docker/daemon.json"))
            .collect();
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].key, "/r/etc/docker/daemon.json default-ulimits");
        assert_eq!(d[0].action, Action::Change);
        assert_eq!(d[0].current, "absent");
        assert_eq!(
            d[1],
            &setting(
                "/r/etc/docker/daemon.json userland-proxy",
                "false",
                "false",
                Action::Keep
            )
        );
        assert_eq!(r.changes, 4);
        assert!(r.docker_restart_needed);
        assert_eq!(r.exit_code(), 1);
    }

    #[test]
    fn check_lists_what_would_change_and_why_dockerd_must_restart() {
        let text = report(Mode::Check, CHECK, None).render();
        assert!(
            text.contains("would change net.core.somaxconn: 4096 -> 65535\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "would change /r/etc/docker/daemon.json userland-proxy: absent -> false\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "skipped net.netfilter.nf_conntrack_max: not on this kernel (wanted 1048576)"
            ),
            "{text}"
        );
        assert!(
            !text.contains("tcp_tw_reuse"),
            "kept settings are not listed: {text}"
        );
        assert!(
            !text.contains("file-max"),
            "a minimum already exceeded is kept: {text}"
        );
        assert!(
            text.contains("5 setting(s) would change on the local engine (2 already as wanted)"),
            "{text}"
        );
        assert!(
            text.contains("note: applying changes /r/etc/docker/daemon.json"),
            "{text}"
        );
    }

    #[test]
    fn nothing_to_change_exits_0() {
        let r = report(
            Mode::Check,
            "keep net.core.somaxconn: 65535\nkeep /r/etc/docker/daemon.json: exectl's copy\nnothing to change\n",
            Some(crate::host::WANTED_DAEMON_JSON),
        );
        assert_eq!(r.changes, 0);
        assert_eq!(r.exit_code(), 0);
        assert!(!r.docker_restart_needed);
        assert_eq!(
            r.render(),
            "nothing to change on the local engine (3 setting(s) already as wanted)\n"
        );
    }

    #[test]
    fn apply_says_what_changed_and_asks_for_a_dockerd_restart() {
        let r = report(
            Mode::Apply,
            "set net.core.somaxconn: 4096 -> 65535\nset /r/etc/docker/daemon.json: absent -> exectl's copy\nset /r/etc/security/limits.d/99-exectl.conf: absent -> exectl's copy\n",
            None,
        );
        assert_eq!(r.exit_code(), 0);
        let text = r.render();
        assert!(
            text.starts_with("changed net.core.somaxconn: 4096 -> 65535\n"),
            "{text}"
        );
        assert!(text.contains("changed 4 setting(s)"), "{text}");
        assert!(text.contains("`exectl host restore`"), "{text}");
        assert!(
            text.contains("Restart it for the new default-ulimits"),
            "{text}"
        );
        assert!(text.contains("new login sessions"), "{text}");
    }

    #[test]
    fn restore_summaries() {
        let r = report(
            Mode::Restore,
            "restored net.core.somaxconn: 65535 -> 4096\nrestored /r/etc/docker/daemon.json: present -> recorded content\n",
            None,
        );
        assert_eq!(r.changes, 2);
        assert!(r.docker_restart_needed);
        let text = r.render();
        assert!(
            text.contains("restored net.core.somaxconn: 65535 -> 4096\n"),
            "{text}"
        );
        assert!(text.contains("restored 2 setting(s)"), "{text}");
        let none = report(
            Mode::Restore,
            "nothing recorded in /r/var/lib/exectl/host: nothing to restore\n",
            None,
        );
        assert_eq!(
            none.render(),
            "nothing to restore on the local engine: no previous values recorded in /r/var/lib/exectl/host\n"
        );
    }

    #[test]
    fn json_names_each_setting() {
        let r = report(Mode::Check, CHECK, None);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["mode"], "check");
        assert_eq!(v["settings"][0]["key"], "net.core.somaxconn");
        assert_eq!(v["settings"][0]["action"], "change");
        assert_eq!(v["settings"][0]["current"], "4096");
        assert_eq!(v["settings"][0]["wanted"], "65535");
        assert_eq!(v["docker_restart_needed"], true);
    }

    #[test]
    fn a_rooted_run_says_its_sysctls_are_files_under_the_root() {
        let live = report(Mode::Check, CHECK, None);
        assert_eq!(live.sysctls, "/proc/sys");
        assert!(!live.render().contains("--root"));
        let r = report(Mode::Check, CHECK, None).sysctls_in("/r/proc/sys");
        let text = r.render();
        assert!(
            text.contains("note: --root: the sysctls are the files under /r/proc/sys, not the live kernel's /proc/sys\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "skipped net.netfilter.nf_conntrack_max: not in /r/proc/sys (wanted 1048576)"
            ),
            "{text}"
        );
        assert_eq!(serde_json::to_value(&r).unwrap()["sysctls"], "/r/proc/sys");
    }
}
