//! The spec settings, declared once. Each line of the `settings!` table below is one setting: its name
//! (the exectl.yaml key and the `SpecInput` field), its kind, its flag, the run record knob it lands in
//! and its help. The table drives clap (`cli::SettingFlags`), the exectl.yaml reader (`spec::input`),
//! flags-over-file merging (`SpecInput::overridden_by`) and names the knobs (`runs::knobs`); adding a
//! setting is one line here plus its check in `spec::resolve`.

use crate::error::UsageError;
use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Flag(&'static str),
    File { path: PathBuf, field: &'static str },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Flag(flag) => write!(f, "{flag}"),
            Origin::File { path, field } => write!(f, "{field} (in {})", path.display()),
        }
    }
}

/// One raw value and its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Raw {
    pub value: String,
    pub origin: Origin,
}

impl Raw {
    pub fn flag(flag: &'static str, value: impl Into<String>) -> Self {
        Raw {
            value: value.into(),
            origin: Origin::Flag(flag),
        }
    }

    pub fn error(&self, problem: impl Into<String>, fix: impl Into<String>) -> UsageError {
        UsageError::new(self.origin.to_string(), &self.value, problem, fix)
    }
}

/// How a setting is given on the command line. Every value stays text until `spec::resolve`, so that a
/// bad value reads the same from a flag and from exectl.yaml.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The command's positional argument.
    Positional,
    /// `--flag VALUE`.
    Word,
    /// `--flag VALUE`, where VALUE may start with `-`: `--cpus -1` reaches the check and is refused
    /// there naming the flag, rather than taken for another flag.
    Number,
    /// `--flag` alone, meaning `true`; exectl.yaml says `true` or `false`.
    Switch,
    /// exectl.yaml only: its flag belongs to another group of arguments (`target:` is `--target`).
    FileOnly,
}

/// One spec setting (a row of the table).
pub struct Setting {
    /// The exectl.yaml key, also the `SpecInput` field and clap's argument id.
    pub key: &'static str,
    pub kind: Kind,
    /// How an error names a value given on the command line: `--lb-port`, or `topology`.
    pub flag: &'static str,
    /// The run record knob that shows its effective value (`runs::knobs`).
    pub knob: &'static str,
    /// The flag's help line (README.md documents the exectl.yaml field).
    pub help: &'static str,
    /// What `--help` calls the value: the kind of value for numbers (N, CPUS, SIZE, PORT, DURATION, which
    /// tests/bad_values.rs walks), else the key in capitals.
    pub value_name: Option<&'static str>,
    /// The setting's value in a `SpecInput`.
    pub slot: fn(&mut SpecInput) -> &mut Option<Raw>,
}

impl Setting {
    /// The long flag without its dashes (`lb-port`); None for the positional and file-only ones.
    pub fn long(&self) -> Option<&'static str> {
        match self.kind {
            Kind::Positional | Kind::FileOnly => None,
            _ => self.flag.strip_prefix("--"),
        }
    }
}

/// Declares `SpecInput` (one `Option<Raw>` per row, plus the list-valued inputs) and `SETTINGS` (the
/// rows as data). A row: `key: Kind "flag" [as "VALUE"], knob "knob", "help";`.
macro_rules! settings {
    (@value) => { None };
    (@value $v:literal) => { Some($v) };
    ($($key:ident: $kind:ident $flag:literal $(as $value:literal)?, knob $knob:literal, $help:literal;)*) => {
        /// Everything a user can say about a stack; `None` means "not said here".
        #[derive(Debug, Clone, Default)]
        pub struct SpecInput {
            $(pub $key: Option<Raw>,)*
            /// `--set KEY=VALUE` pairs and `env:` entries, in order; later wins.
            pub env: Vec<Raw>,
            /// `--set-secret KEY=VALUE` pairs (flags only: a spec file is often committed).
            pub secret_env: Vec<Raw>,
            /// Image overrides, key → reference; later wins.
            pub images: Vec<(String, Raw)>,
        }

        /// Every single-value setting, in the order `--help` and error messages list them.
        pub const SETTINGS: &[Setting] = &[$(Setting {
            key: stringify!($key),
            kind: Kind::$kind,
            flag: $flag,
            knob: $knob,
            help: $help,
            value_name: settings!(@value $($value)?),
            slot: |input| &mut input.$key,
        },)*];
    };
}

settings! {
    topology: Positional "topology", knob "topology",
        "single (app + DB + Traefik) or ha (N apps + PostgreSQL + Redis + nginx)";
    stack: Word "--stack", knob "stack",
        "Stack name; several stacks can live on one host [default: exe]";
    instances: Number "--instances" as "N", knob "instances",
        "App instances (ha) [default: 2]";
    nginx: Word "--nginx", knob "nginx.variant",
        "nginx variant (ha): baseline-default, tuned-ip-hash, tuned-least-conn [default: tuned-least-conn]";
    lb_algorithm: Word "--lb-algorithm", knob "nginx.lb_algorithm",
        "Override the variant's balancing: least_conn or ip_hash";
    worker_connections: Number "--worker-connections" as "N", knob "nginx.worker_connections",
        "Override the variant's worker_connections";
    worker_rlimit_nofile: Number "--worker-rlimit-nofile" as "N", knob "nginx.worker_rlimit_nofile",
        "Override the variant's worker_rlimit_nofile (at least 2 x worker_connections)";
    worker_processes: Number "--worker-processes" as "N", knob "nginx.worker_processes",
        "nginx worker processes: auto (one per CPU nginx sees, the host's) or 1..=64 [default: auto]";
    db: Word "--db", knob "db",
        "Database: mariadb, postgres or sqlite [default: mariadb for single, postgres for ha]";
    cpus: Number "--cpus" as "CPUS", knob "cpus",
        "CPU limit per app instance [default: 2]";
    memory: Number "--memory" as "SIZE", knob "memory",
        "Memory limit per app instance [default: 2g]";
    nofile: Number "--nofile" as "N", knob "nofile",
        "nofile ulimit (soft = hard) of app, nginx and Traefik containers [default: 200000]";
    host: Word "--host", knob "host",
        "Host header Traefik routes to the stack [default: STACK.localhost]";
    lb_port: Number "--lb-port" as "PORT", knob "lb_port",
        "Port the nginx LB publishes (ha) [default: 8090]";
    http_port: Number "--http-port" as "PORT", knob "http_port",
        "Port Traefik publishes [default: 8080]";
    traefik: Switch "--traefik", knob "traefik",
        "ha: also route the Host rule through Traefik to the LB";
    app_env: Word "--app-env", knob "app_env",
        "APP_ENV of the app: dev or prod [default: prod]";
    app_debug: Word "--app-debug", knob "app_debug",
        "APP_DEBUG of the app: 0 or 1 [default: 0]";
    health_interval: Number "--health-interval" as "DURATION", knob "health_interval_s",
        "App healthcheck interval, e.g. 5s [default: 30s, as the real image]";
    target: FileOnly "--target", knob "target",
        "Where the stack runs: read by the target options (deploy records it), not part of the spec";
}

/// The setting of an exectl.yaml key.
pub fn setting(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}

impl SpecInput {
    /// Set one setting by its exectl.yaml key, as a program would (sweep, the library's users): the value
    /// is checked by `spec::resolve` like a flag's, and named by the setting's flag in its errors.
    pub fn set(
        &mut self,
        key: &str,
        value: impl Into<String>,
    ) -> Result<&mut SpecInput, UsageError> {
        let s = setting(key).ok_or_else(|| {
            let keys: Vec<&str> = SETTINGS.iter().map(|s| s.key).collect();
            UsageError::new(
                "setting",
                key,
                "no such setting",
                format!("use one of: {}", keys.join(", ")),
            )
        })?;
        *(s.slot)(self) = Some(Raw::flag(s.flag, value));
        Ok(self)
    }

    /// `self` overridden by `top` (flags over file).
    pub fn overridden_by(mut self, mut top: SpecInput) -> SpecInput {
        for s in SETTINGS {
            if let Some(v) = (s.slot)(&mut top).take() {
                *(s.slot)(&mut self) = Some(v);
            }
        }
        self.env.extend(top.env);
        self.secret_env.extend(top.secret_env);
        self.images.extend(top.images);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_sets_a_setting_by_its_key() {
        let mut i = SpecInput::default();
        i.set("instances", "3").unwrap().set("cpus", "0.5").unwrap();
        assert_eq!(i.instances, Some(Raw::flag("--instances", "3")));
        assert_eq!(i.cpus.as_ref().map(|r| r.value.as_str()), Some("0.5"));
        let e = i.set("instancez", "3").unwrap_err();
        assert_eq!(e.field, "setting");
        assert!(e.fix.contains("instances"), "{e}");
    }

    #[test]
    fn keys_flags_and_knobs_are_unique_and_flags_follow_keys() {
        for (i, a) in SETTINGS.iter().enumerate() {
            for b in &SETTINGS[i + 1..] {
                assert!(
                    a.key != b.key && a.flag != b.flag && a.knob != b.knob,
                    "{}",
                    a.key
                );
            }
            if a.kind != Kind::Positional {
                assert_eq!(a.flag, format!("--{}", a.key.replace('_', "-")));
            }
            assert!(!a.help.ends_with('.'), "clap shows help lines without it");
        }
    }

    #[test]
    fn readme_documents_every_setting() {
        let readme = include_str!("../../README.md");
        for s in SETTINGS {
            let (key, yaml) = (format!("`{}`", s.key), format!("`{}:", s.key));
            assert!(readme.contains(&key) || readme.contains(&yaml), "{}", s.key);
            if let Some(long) = s.long() {
                assert!(readme.contains(&format!("`--{long}")), "{}", s.flag);
            }
        }
    }

    #[test]
    fn each_slot_is_its_own_field() {
        let mut input = SpecInput::default();
        for s in SETTINGS {
            *(s.slot)(&mut input) = Some(Raw::flag(s.flag, s.key));
        }
        for s in SETTINGS {
            assert_eq!((s.slot)(&mut input).as_ref().unwrap().value, s.key);
        }
    }

    #[test]
    fn top_wins_setting_by_setting_and_lists_append() {
        let base = SpecInput {
            stack: Some(Raw::flag("--stack", "a")),
            cpus: Some(Raw::flag("--cpus", "1")),
            env: vec![Raw::flag("--set", "A=1")],
            ..Default::default()
        };
        let top = SpecInput {
            cpus: Some(Raw::flag("--cpus", "2")),
            env: vec![Raw::flag("--set", "A=2")],
            ..Default::default()
        };
        let m = base.overridden_by(top);
        assert_eq!(m.stack.unwrap().value, "a");
        assert_eq!(m.cpus.unwrap().value, "2");
        let env: Vec<&str> = m.env.iter().map(|r| r.value.as_str()).collect();
        assert_eq!(env, ["A=1", "A=2"]);
    }
}
