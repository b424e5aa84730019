//! The bench settings, declared once. Each line of the `bench_settings!` table below is one setting: its
//! key (a campaign file's `bench:` key, and the flag without `--`), its type and range, its default and
//! its help. The table makes `BenchInput` (what a user said, typed: durations as durations, switches as
//! booleans, the scenario and the fault as themselves) and drives everything that reads a bench
//! setting: clap's flags for bench and sweep (`cli::BenchFlags`), `exectl load`'s shared flags, the
//! campaign file's `bench:` reader (a YAML boolean for a switch), a row's merge over the file's, the
//! campaign's records (`texts`) and the key-by-key reference in docs/campaign-file.md. A value is
//! read, and refused naming its key or flag, by one function: [`BenchInput::set`].

use std::collections::BTreeMap;
use std::time::Duration;

use crate::bench::fault::{Fault, FORMS};
use crate::bench::slo::Slos;
use crate::error::UsageError;
use crate::load::Scenario;
use crate::units::{self, Invalid};

/// What a setting's value is, with its range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A duration within `min..=max` (`units::duration_in`).
    Duration { min: Duration, max: Duration },
    /// A whole number within `min..=max`.
    Count { min: u64, max: u64 },
    /// Sessions a second, `50` or `50/s`, within `min..=max`.
    Rate { min: f64, max: f64 },
    /// On or off: a flag alone, a YAML boolean in a file.
    Switch,
    /// One of the load's scenarios.
    Scenario,
    /// `KEY=VALUE` objectives (`Slos`), repeatable; a list in a file.
    Objectives,
    /// A fault in the common hold (`bench::fault`).
    Fault,
    /// Text read by the load's own checks (addresses, hosts, a pattern).
    Text,
}

impl Kind {
    /// What the reference calls the type.
    pub fn describe(&self) -> String {
        match self {
            Kind::Duration { min, max } => {
                format!("duration, {}..{}", units::show(*min), units::show(*max))
            }
            Kind::Count { min, max } => format!("whole number, {min}..{max}"),
            Kind::Rate { min, max } => format!("sessions a second, {min}..{max}"),
            Kind::Switch => "boolean".into(),
            Kind::Scenario => format!("one of {}", Scenario::names().join(", ")),
            Kind::Objectives => "list of KEY=VALUE".into(),
            Kind::Fault => "text, WHAT@WHEN".into(),
            Kind::Text => "text".into(),
        }
    }
}

/// Where a setting may be given besides bench's and sweep's flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Also a campaign file's `bench:` key (the file's, or a row's over it).
    Files,
    /// Flags only: where the users come from (campaigns run them from this host).
    FlagsOnly,
}

/// One bench setting (a row of the table).
#[derive(Debug, Clone, Copy)]
pub struct Setting {
    /// The campaign file's key; the flag is `--` and the key with `-` for `_`.
    pub key: &'static str,
    pub kind: Kind,
    pub scope: Scope,
    /// What `--help` calls the value.
    pub value_name: &'static str,
    /// The default as the reference and `--help` say it (None: off, or none).
    pub default: Option<&'static str>,
    /// A flag clap refuses beside this one (its key).
    pub conflicts_with: Option<&'static str>,
    /// The help line (no trailing period: clap shows it as is).
    pub help: &'static str,
}

impl Setting {
    /// The flag, `--ping-after`.
    pub fn flag(&self) -> String {
        format!("--{}", self.key.replace('_', "-"))
    }

    /// The help line with its default, as `--help` and the reference show it.
    pub fn help_line(&self) -> String {
        match self.default {
            Some(d) => format!("{} [default: {d}]", self.help),
            None => self.help.to_string(),
        }
    }
}

/// A value of a setting's type: read from text (a flag's, or a file's scalar) and written back as the
/// same text for records.
pub trait Value: Sized {
    fn read(kind: &Kind, text: &str) -> Result<Self, Invalid>;
    fn text(&self) -> String;
    /// `new` given after `self`: the last wins, but for a repeatable setting, which gathers.
    fn followed_by(self, new: Self) -> Self {
        new
    }
}

impl Value for Duration {
    fn read(kind: &Kind, text: &str) -> Result<Self, Invalid> {
        match kind {
            Kind::Duration { min, max } => units::duration_in(text, *min, *max),
            _ => units::duration(text),
        }
    }
    fn text(&self) -> String {
        units::show(*self)
    }
}

impl Value for u64 {
    fn read(kind: &Kind, text: &str) -> Result<Self, Invalid> {
        let (min, max) = match kind {
            Kind::Count { min, max } => (*min, *max),
            _ => (0, u64::MAX),
        };
        units::count_in(text, min, max)
    }
    fn text(&self) -> String {
        self.to_string()
    }
}

impl Value for f64 {
    fn read(kind: &Kind, text: &str) -> Result<Self, Invalid> {
        let (min, max) = match kind {
            Kind::Rate { min, max } => (*min, *max),
            _ => (f64::MIN, f64::MAX),
        };
        let n = text.trim();
        let n = n.strip_suffix("/s").unwrap_or(n);
        match n.parse::<f64>() {
            Ok(r) if (min..=max).contains(&r) => Ok(r),
            _ => Err(Invalid::new(
                format!(
                    "sessions a second: a number from {min} (one every {} s) to {max}",
                    1.0 / min
                ),
                "give e.g. 50 (or 50/s)",
            )),
        }
    }
    fn text(&self) -> String {
        self.to_string()
    }
}

impl Value for bool {
    fn read(_: &Kind, text: &str) -> Result<Self, Invalid> {
        match text.trim() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(Invalid::new(
                "a switch takes true or false",
                "write true or false",
            )),
        }
    }
    fn text(&self) -> String {
        self.to_string()
    }
}

impl Value for Scenario {
    fn read(_: &Kind, text: &str) -> Result<Self, Invalid> {
        Scenario::parse(text.trim()).ok_or_else(|| {
            Invalid::new(
                "unknown scenario",
                format!("use {}", Scenario::names().join(", ")),
            )
        })
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

impl Value for Fault {
    fn read(_: &Kind, text: &str) -> Result<Self, Invalid> {
        Fault::parse(text).map_err(|why| Invalid::new(why, format!("write {FORMS}")))
    }
    fn text(&self) -> String {
        Fault::text(self)
    }
}

impl Value for String {
    fn read(_: &Kind, text: &str) -> Result<Self, Invalid> {
        Ok(text.to_string())
    }
    fn text(&self) -> String {
        self.clone()
    }
}

/// Objectives: each `KEY=VALUE` checked as `--slo` checks it; written joined by `;`.
impl Value for Vec<String> {
    fn read(_: &Kind, text: &str) -> Result<Self, Invalid> {
        let items: Vec<String> = text
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        Slos::with_overrides(&items).map_err(|e| Invalid::new(e.problem, e.fix))?;
        Ok(items)
    }
    fn text(&self) -> String {
        self.join(";")
    }
    fn followed_by(mut self, new: Self) -> Self {
        self.extend(new);
        self
    }
}

/// Declares `BenchInput` (one `Option` per row: None is "not said here") and `BENCH_SETTINGS` (the
/// rows as data). A row: `key: Type = Kind, Scope, "VALUE" [default "D"] [conflicts "key"], "help";`.
macro_rules! bench_settings {
    (@opt) => { None };
    (@opt $v:literal) => { Some($v) };
    ($($key:ident: $ty:ty = $kind:expr, $scope:ident, $value:literal
        $(default $default:literal)? $(conflicts $conflict:literal)?, $help:literal;)*) => {
        /// What a user said about a bench, typed and checked value by value; cross-field rules are
        /// the bench's (`BenchSettings`), defaults the table's.
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct BenchInput {
            $(pub $key: Option<$ty>,)*
            /// The text each value was given as, for messages only.
            pub given: Given,
        }

        /// Every bench setting, in the order `--help` and the reference list them.
        pub const BENCH_SETTINGS: &[Setting] = &[$(Setting {
            key: stringify!($key),
            kind: $kind,
            scope: Scope::$scope,
            value_name: $value,
            default: bench_settings!(@opt $($default)?),
            conflicts_with: bench_settings!(@opt $($conflict)?),
            help: $help,
        },)*];

        impl BenchInput {
            /// Set one setting from text (a flag's value, a file's scalar); a list setting appends.
            /// Err says what is wrong and the fix: the caller names the key or flag.
            pub fn set(&mut self, key: &str, text: &str) -> Result<(), Invalid> {
                let s = setting(key).ok_or_else(|| {
                    Invalid::new("no such bench setting", format!("use {}", keys(Scope::FlagsOnly)))
                })?;
                match key {
                    $(stringify!($key) => {
                        let v: $ty = Value::read(&s.kind, text)?;
                        self.$key = Some(match self.$key.take() {
                            Some(old) => Value::followed_by(old, v),
                            None => v,
                        });
                    })*
                    _ => unreachable!("every key of the table has its field"),
                }
                self.given.0.insert(s.key, text.to_string());
                Ok(())
            }

            /// `self` with each setting `top` says over it (a row's over its file's): a list is
            /// replaced whole, as a flag's would be.
            pub fn over(mut self, top: &BenchInput) -> BenchInput {
                $(if let Some(v) = &top.$key {
                    self.$key = Some(v.clone());
                })*
                self.given.0.extend(top.given.0.iter().map(|(k, v)| (*k, v.clone())));
                self
            }

            /// Each setting said, as its text (key → text): what records and digests hold.
            pub fn texts(&self) -> BTreeMap<String, String> {
                let mut out = BTreeMap::new();
                $(if let Some(v) = &self.$key {
                    out.insert(stringify!($key).to_string(), Value::text(v));
                })*
                out
            }
        }
    };
}

/// The text each setting was given as (key → text), for messages: an error names the value as the
/// user wrote it (`--hold 0`, not `0s`). No part of the value: two inputs of the same values are equal
/// however they were written.
#[derive(Debug, Clone, Default)]
pub struct Given(pub BTreeMap<&'static str, String>);

impl PartialEq for Given {
    fn eq(&self, _: &Given) -> bool {
        true
    }
}

/// 30 days: far beyond any run, short of what an Instant can add.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);
/// Most users, and connection attempts in flight (the manifest bounds the users further).
pub const MAX_USERS: u64 = 10_000_000;
/// The settings `exectl load` takes as flags: one run's workload (its scenario is its positional
/// argument); the rest are a bench's (sampling, objectives, faults, levels' settling).
pub const LOAD_KEYS: &[&str] = &[
    "hold",
    "ramp",
    "churn",
    "dial_concurrency",
    "arrival_rate",
    "interval",
    "ping_after",
    "tokens",
    "relogin",
    "pattern",
    "source_addrs",
    "processes",
    "generators",
];

bench_settings! {
    scenario: Scenario = Kind::Scenario, Files, "SCENARIO" default "idle",
        "idle, login-burst, collab or editing";
    hold: Duration = Kind::Duration { min: Duration::ZERO, max: MAX_DURATION }, Files, "DURATION"
        default "30s",
        "The common hold (a bench: each level's): how long every user's socket stays open at once, from when the last dial is over to one end for all";
    ramp: Duration = Kind::Duration { min: Duration::ZERO, max: MAX_DURATION }, Files, "DURATION"
        default "0 for login-burst, else 10s",
        "Start the users (a bench: each level's) evenly over this long";
    churn: Duration = Kind::Duration { min: Duration::from_millis(100), max: MAX_DURATION }, Files, "DURATION",
        "Churn during the common hold: each user leaves (closes its socket) after a time drawn with this mean (exponential: a steady rate of leaves, users/MEAN a second) and comes back at once with a new socket, dialing again as --reconnect does if that fails; the summary counts the leaves (`recovery`), and a bench fits each instance's RSS, open files, connections and rooms over the hold to a trend (the `growth` objective)";
    sample: Duration = Kind::Duration { min: Duration::from_millis(200), max: Duration::from_secs(60) }, Files, "DURATION" default "1s",
        "SUT sampling period, 200ms..60s";
    settle: Duration = Kind::Duration { min: Duration::ZERO, max: Duration::from_secs(24 * 3600) }, Files, "DURATION"
        default "45s",
        "After each level, how long every instance may take to reach 0 connections and 0 rooms";
    slo: Vec<String> = Kind::Objectives, Files, "KEY=VALUE",
        "An objective, KEY=VALUE (repeat): held=99.9, refused=0, stalled=0, login_p95=5s, connect_p95=2s, delivery_p95=1s, frame_errors=0, health_p95=1s, browser=10s, back=30s, growth=10 (the defaults)";
    continue_after_fail: bool = Kind::Switch, Files, "BOOL",
        "Run every level even after one fails";
    dial_concurrency: u64 = Kind::Count { min: 1, max: MAX_USERS }, Files, "N"
        default "every user for login-burst, else 64",
        "Connection attempts in flight at most (a bench: per level)";
    arrival_rate: f64 = Kind::Rate { min: crate::load::MIN_ARRIVAL_RATE, max: crate::load::MAX_ARRIVAL_RATE },
        Files, "RATE" conflicts "ramp",
        "The open model: sessions start on schedule, RATE a second (user i at i/RATE s), whatever the server does (a stalled server is not given fewer starts); latencies count from each scheduled start; --dial-concurrency caps those in flight (a start that finds it full waits, and is reported)";
    interval: Duration = Kind::Duration { min: Duration::from_millis(10), max: MAX_DURATION }, Files, "DURATION"
        default "1s, editing 10s",
        "collab/editing: time between a user's actions, each wait uniform in [D/2, 2D], so its mean is 1.25·D";
    ping_after: Duration = Kind::Duration { min: Duration::from_secs(1), max: Duration::from_secs(3600) }, Files, "DURATION"
        default "5s, past 10,000 users longer so that a run sends at most 2,000 pings a second; and once the server is seen to ping, its own cadence + 5s",
        "Ping a held socket whose server has been silent this long (a frozen server keeps its sockets open), whatever the server's own pings; unanswered 10 s more, it is stalled";
    tokens: bool = Kind::Switch, Files, "BOOL",
        "Use the minted tokens of tokens.json instead of logging in";
    relogin: bool = Kind::Switch, Files, "BOOL",
        "With a --fault (load: --reconnect): a user whose socket dropped logs in again before it dials (one who reloads the page; a redeploy that changed API_JWT_SECRET makes every user do it); the summary (a bench: each level) counts those logins, their failures and their latency";
    pattern: String = Kind::Text, FlagsOnly, "PATTERN",
        "With --stack: the manifest prepare wrote for this --email-pattern instead of the newest";
    source_addrs: String = Kind::Text, FlagsOnly, "ADDRS",
        "Local addresses to dial from, round-robin: a range (127.0.0.1-127.0.0.16), a CIDR block or a list; each has a port range of its own towards the front door";
    processes: u64 = Kind::Count { min: 1, max: crate::load::slices::MAX_PROCESSES as u64 }, FlagsOnly, "N"
        default "as many as the open-file hard limit requires",
        "Generator processes to split the users over, each with its own open files and socket table";
    generators: String = Kind::Text, FlagsOnly, "HOSTS",
        "Other hosts to run slices of the users on, each over SSH with the target flags' key and known_hosts: ssh://USER@HOST[:PORT],…, and `local` for this host's own (--processes) slices";
    browser_probe: bool = Kind::Switch, Files, "BOOL",
        "During each level's plateau, one more user in headless Chromium: login → project open → first sync, timed (the `browser` objective). Uses the manifest's account after the level's users";
    fault: Fault = Kind::Fault, Files, "WHAT@WHEN",
        "A fault in each level's common hold: restart:SERVICE@WHEN (docker restart of one service, e.g. restart:app-1@10s, restart:nginx@5s), roll@WHEN (every app instance in turn), or a rolling redeploy, redeploy:KEY=VALUE@WHEN or redeploy:image=REF@WHEN (every app instance replaced in turn by a container with that variable or image, nginx reloaded after each); the users reconnect as the real client does, and the `back` objective judges their return";
}

/// The setting of a key.
pub fn setting(key: &str) -> Option<&'static Setting> {
    BENCH_SETTINGS.iter().find(|s| s.key == key)
}

/// The keys a scope may give (`Files`: a campaign's), for errors.
pub fn keys(scope: Scope) -> String {
    BENCH_SETTINGS
        .iter()
        .filter(|s| scope == Scope::FlagsOnly || s.scope == Scope::Files)
        .map(|s| s.key)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Recorded (a campaign's row inputs, its file as planned) as its texts.
impl serde::Serialize for BenchInput {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.texts().serialize(s)
    }
}

impl BenchInput {
    /// The scenario said, else the default.
    pub fn scenario(&self) -> Scenario {
        self.scenario.unwrap_or(Scenario::Idle)
    }

    /// A switch said on.
    pub fn on(value: Option<bool>) -> bool {
        value.unwrap_or(false)
    }

    /// `e` naming the value of its flag as it was given, when it names a setting that was.
    pub fn as_given(&self, mut e: UsageError) -> UsageError {
        let key = e.field.trim_start_matches("--").replace('-', "_");
        if let Some(text) = self.given.0.get(key.as_str()) {
            e.value = text.clone();
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_reads_its_type_and_refuses_out_of_range() {
        let mut i = BenchInput::default();
        i.set("hold", "20s").unwrap();
        i.set("tokens", "true").unwrap();
        i.set("scenario", "login-burst").unwrap();
        i.set("arrival_rate", "50/s").unwrap();
        i.set("fault", "restart:app-1@5s").unwrap();
        assert_eq!(i.hold, Some(Duration::from_secs(20)));
        assert_eq!(i.tokens, Some(true));
        assert_eq!(i.scenario, Some(Scenario::LoginBurst));
        assert_eq!(i.arrival_rate, Some(50.0));
        assert_eq!(
            i.fault.as_ref().map(Fault::text).as_deref(),
            Some("restart:app-1@5s")
        );
        assert!(i
            .set("sample", "100ms")
            .unwrap_err()
            .problem
            .contains("range"));
        assert!(i.set("tokens", "yes").is_err());
        assert!(i.set("scenario", "idel").is_err());
        assert!(i.set("arrival_rate", "fast").is_err());
        assert!(i.set("processes", "65").is_err());
        assert!(i.set("holdd", "1s").unwrap_err().fix.contains("hold"));
    }

    #[test]
    fn objectives_are_checked_and_gathered() {
        let mut i = BenchInput::default();
        i.set("slo", "login_p95=30s").unwrap();
        i.set("slo", "connect_p95=10s;held=99").unwrap();
        assert_eq!(i.texts()["slo"], "login_p95=30s;connect_p95=10s;held=99");
        assert!(i.set("slo", "login_p96=1s").is_err());
    }

    #[test]
    fn a_row_overrides_its_file_setting_by_setting_and_texts_read_back() {
        let mut file = BenchInput::default();
        file.set("hold", "20s").unwrap();
        file.set("ramp", "5s").unwrap();
        file.set("slo", "held=99").unwrap();
        let mut row = BenchInput::default();
        row.set("hold", "1m30s").unwrap();
        row.set("slo", "refused=1").unwrap();
        let merged = file.over(&row);
        let texts = merged.texts();
        assert_eq!(texts["hold"], "1m30s");
        assert_eq!(texts["ramp"], "5s");
        assert_eq!(
            texts["slo"], "refused=1",
            "a row's list replaces the file's"
        );
        let mut back = BenchInput::default();
        for (k, v) in &texts {
            back.set(k, v).unwrap();
        }
        assert_eq!(back, merged);
    }

    #[test]
    fn keys_are_unique_and_help_lines_end_without_a_period() {
        for (i, a) in BENCH_SETTINGS.iter().enumerate() {
            assert!(
                BENCH_SETTINGS[i + 1..].iter().all(|b| b.key != a.key),
                "{}",
                a.key
            );
            assert!(!a.help.ends_with('.'), "{}", a.key);
            if let Some(c) = a.conflicts_with {
                assert!(
                    setting(c).is_some(),
                    "{} conflicts with no setting {c}",
                    a.key
                );
            }
        }
    }

    /// Each key `exectl load` takes is a setting of the table (a typo would drop its flag).
    #[test]
    fn every_load_key_is_a_setting() {
        for k in LOAD_KEYS {
            assert!(setting(k).is_some(), "{k}");
        }
    }
}
