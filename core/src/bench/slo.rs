//! A level's service-level objectives, as one table (`OBJECTIVES`): each row's key, unit, default, how
//! it is measured and which scenarios measure it. `--slo KEY=VALUE` is parsed from it, a level's checks
//! are made from it, and the report's objectives table and README's are rendered from it. An objective
//! whose figure the level did not measure is reported as not measured, never as met.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::decimal::show;
use super::figures::LevelFigures;
use crate::error::UsageError;
use crate::units;

/// The bounds of every level of one bench (results.json keeps them): the `--slo` values over the
/// table's defaults. Each field is one row of `OBJECTIVES`, which says what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slos {
    pub held_pct: f64,
    pub refused: u64,
    pub stalled: u64,
    pub login_p95_ms: f64,
    pub connect_p95_ms: f64,
    pub delivery_p95_ms: f64,
    pub frame_errors: u64,
    /// Absent from results.json written before it: the default.
    #[serde(default = "default_health_p95_ms")]
    pub health_p95_ms: f64,
    /// Absent from results.json written before it: the default.
    #[serde(default = "default_browser_ms")]
    pub browser_ms: f64,
    /// Absent from results.json written before it: the default.
    #[serde(default = "default_back_ms")]
    pub back_ms: f64,
    /// Absent from results.json written before it: the default.
    #[serde(default = "default_growth_pct")]
    pub growth_pct: f64,
}

fn default_growth_pct() -> f64 {
    Slos::default().growth_pct
}

fn default_back_ms() -> f64 {
    Slos::default().back_ms
}

fn default_browser_ms() -> f64 {
    Slos::default().browser_ms
}

/// The figure of a browser probe that did not finish: no time can meet a bound, and it reads as such.
pub const UNFINISHED: f64 = f64::MAX;

fn default_health_p95_ms() -> f64 {
    Slos::default().health_p95_ms
}

impl Default for Slos {
    /// Every row's default.
    fn default() -> Slos {
        let mut s = Slos {
            held_pct: 0.0,
            refused: 0,
            stalled: 0,
            login_p95_ms: 0.0,
            connect_p95_ms: 0.0,
            delivery_p95_ms: 0.0,
            frame_errors: 0,
            health_p95_ms: 0.0,
            browser_ms: 0.0,
            back_ms: 0.0,
            growth_pct: 0.0,
        };
        for (_, setting) in settable() {
            (setting.set)(&mut s, setting.default);
        }
        s
    }
}

/// How an objective's value is written (`--slo`) and shown (its checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Percent of the level's users: `held=99.5` or `held=99.5%`.
    Percent,
    /// A number of sockets or frames.
    Count,
    /// A duration, `2s` or `500ms`, shown in ms.
    Ms,
    /// A duration in seconds (the plateau's length).
    Seconds,
}

/// The most a count may be (an f64 holds every count up to it exactly).
const MAX_COUNT: u64 = 1 << 53;
/// Most a duration bound may be: an hour (longer is no objective).
const MAX_LATENCY: Duration = Duration::from_secs(3600);

impl Unit {
    /// After a figure: "99.9%", "3", "5000 ms", "8 s".
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Percent => "%",
            Unit::Count => "",
            Unit::Ms => " ms",
            Unit::Seconds => " s",
        }
    }

    /// Its name in the objectives' tables.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Percent => "% of users",
            Unit::Count => "count",
            Unit::Ms | Unit::Seconds => "duration",
        }
    }

    /// What `--slo` takes for it.
    fn takes(self) -> &'static str {
        match self {
            Unit::Percent => "a percentage",
            Unit::Count => "a count",
            Unit::Ms | Unit::Seconds => "a duration",
        }
    }

    /// A value as `--slo` writes it: 99.9, 0, 5s, 500ms.
    pub fn write(self, v: f64) -> String {
        match self {
            Unit::Percent | Unit::Count => show(v),
            Unit::Ms => units::show(Duration::from_secs_f64(v / 1000.0)),
            Unit::Seconds => units::show(Duration::from_secs_f64(v)),
        }
    }

    fn parse(self, v: &str) -> Result<f64, units::Invalid> {
        let latency = |v| units::duration_in(v, Duration::from_millis(1), MAX_LATENCY);
        match self {
            Unit::Percent => units::decimal_in(v.strip_suffix('%').unwrap_or(v).trim(), 0.0, 100.0),
            Unit::Count => units::count_in(v, 0, MAX_COUNT).map(|n| n as f64),
            Unit::Ms => latency(v).map(|d| d.as_secs_f64() * 1000.0),
            Unit::Seconds => latency(v).map(|d| d.as_secs_f64()),
        }
    }
}

/// Which way a figure must stay of its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    AtLeast,
    AtMost,
}

impl Bound {
    pub fn sign(self) -> &'static str {
        match self {
            Bound::AtLeast => "≥",
            Bound::AtMost => "≤",
        }
    }

    fn holds(self, measured: f64, bound: f64) -> bool {
        match self {
            Bound::AtLeast => measured >= bound,
            Bound::AtMost => measured <= bound,
        }
    }
}

/// An objective `--slo` sets: its default, an example value, and its field of `Slos`.
#[derive(Clone, Copy)]
pub struct Setting {
    /// In the row's unit (ms for durations).
    pub default: f64,
    /// For the error of a bad value: "login_p95 takes a duration, e.g. login_p95=2s".
    pub example: &'static str,
    pub get: fn(&Slos) -> f64,
    pub set: fn(&mut Slos, f64),
}

/// One row of the objectives table.
#[derive(Clone, Copy)]
pub struct Objective {
    /// `--slo KEY=VALUE`'s key, the check's name.
    pub key: &'static str,
    pub unit: Unit,
    pub bound: Bound,
    /// None: not set with `--slo` (the plateau's bound is `--hold`).
    pub setting: Option<Setting>,
    /// How the level's figure is measured, one sentence.
    pub measured: &'static str,
    /// The scenarios that measure it (in the others it is not measured).
    pub scenarios: &'static [&'static str],
    /// The level's figure (None: not measured).
    pub figure: fn(&LevelFigures) -> Option<f64>,
}

const ALL: &[&str] = &crate::load::scenario::NAMES;
const SOCKETS: &[&str] = &["idle", "collab", "editing"];
const ROOMS: &[&str] = &["collab", "editing"];

fn p95(p: &Option<super::figures::Pcts>) -> Option<f64> {
    p.as_ref().map(|p| p.p95)
}

/// Every objective, in the order of `--slo`'s keys, the checks and the tables. The defaults say "this
/// many users were served".
pub const OBJECTIVES: [Objective; 12] = [
    Objective {
        key: "held",
        unit: Unit::Percent,
        bound: Bound::AtLeast,
        setting: Some(Setting {
            default: 99.9,
            example: "99.5",
            get: |s| s.held_pct,
            set: |s, v| s.held_pct = v,
        }),
        measured: "Users that met the scenario's own criterion, percent of the level: the socket held through the whole common hold (collab: and its frames received); login-burst: logged in, and said so.",
        scenarios: ALL,
        figure: |f| (f.users > 0).then(|| 100.0 * f.held as f64 / f.users as f64),
    },
    Objective {
        key: "refused",
        unit: Unit::Count,
        bound: Bound::AtMost,
        setting: Some(Setting {
            default: 0.0,
            example: "0",
            get: |s| s.refused as f64,
            set: |s, v| s.refused = v as u64,
        }),
        measured: "Sockets the app closed as refused: 4001 (unauthorised) or 4003 (access denied).",
        scenarios: SOCKETS,
        figure: |f| Some(f.refused as f64),
    },
    Objective {
        key: "stalled",
        unit: Unit::Count,
        bound: Bound::AtMost,
        setting: Some(Setting {
            default: 0.0,
            example: "0",
            get: |s| s.stalled as f64,
            set: |s, v| s.stalled = v as u64,
        }),
        measured: "Sockets left open by a silent server: no frame for 15 s (for a server seen to ping, its own cadence and 15 s more: 45 s for the app's 30 s), or the hold's last ping unanswered for 10 s (a frozen or paused instance keeps its sockets open).",
        scenarios: SOCKETS,
        figure: |f| Some(f.stalled as f64),
    },
    Objective {
        key: "login_p95",
        unit: Unit::Ms,
        bound: Bound::AtMost,
        setting: Some(Setting {
            default: 5_000.0,
            example: "2s",
            get: |s| s.login_p95_ms,
            set: |s, v| s.login_p95_ms = v,
        }),
        measured: "The logins' latency, p95 (none with `--tokens`: no login).",
        scenarios: ALL,
        figure: |f| p95(&f.login_ms),
    },
    Objective {
        key: "connect_p95",
        unit: Unit::Ms,
        bound: Bound::AtMost,
        setting: Some(Setting {
            default: 2_000.0,
            example: "500ms",
            get: |s| s.connect_p95_ms,
            set: |s, v| s.connect_p95_ms = v,
        }),
        measured: "The WebSocket connect (upgrade) latency, p95.",
        scenarios: SOCKETS,
        figure: |f| p95(&f.connect_ms),
    },
    Objective {
        key: "delivery_p95",
        unit: Unit::Ms,
        bound: Bound::AtMost,
        setting: Some(Setting {
            default: 1_000.0,
            example: "1s",
            get: |s| s.delivery_p95_ms,
            set: |s, v| s.delivery_p95_ms = v,
        }),
        measured: "A frame's delivery latency, sent by one member of a room to received by another, p95.",
        scenarios: ROOMS,
        figure: |f| p95(&f.delivery_ms),
    },
    Objective {
        key: "frame_errors",
        unit: Unit::Count,
        bound: Bound::AtMost,
        setting: Some(Setting {
            default: 0.0,
            example: "0",
            get: |s| s.frame_errors as f64,
            set: |s, v| s.frame_errors = v as u64,
        }),
        measured: "Frames lost, duplicated, echoed to their sender or delivered to another room: a failure names each kind.",
        scenarios: ROOMS,
        figure: |f| f.frame_errors.map(|n| n as f64),
    },
    Objective {
        key: "health_p95",
        unit: Unit::Ms,
        bound: Bound::AtMost,
        // The seed's probe answered in 58 ms p95 with a native bcrypt and 2.8 s with bcryptjs blocking
        // the event loop: a second is well clear of the first and well short of the second.
        setting: Some(Setting {
            default: 1_000.0,
            example: "1s",
            get: |s| s.health_p95_ms,
            set: |s, v| s.health_p95_ms = v,
        }),
        measured: "A `/healthcheck` probe every 200 ms during the burst, one at a time (one still unanswered when the burst ends counts with its wait so far), p95: a login that blocks the server's event loop (the seed's bcryptjs) stalls every other request with it.",
        scenarios: &["login-burst"],
        figure: |f| p95(&f.health_ms),
    },
    Objective {
        key: "browser",
        unit: Unit::Ms,
        bound: Bound::AtMost,
        setting: Some(Setting {
            default: 10_000.0,
            example: "5s",
            get: |s| s.browser_ms,
            set: |s, v| s.browser_ms = v,
        }),
        measured: "With `--browser-probe`: one real user in headless Chromium during the level's plateau, login → project open → first Yjs sync; a browser that cannot finish fails it, one that cannot start (the client's failure) measures nothing and makes the level invalid.",
        scenarios: ALL,
        figure: |f| {
            let b = f.browser.as_ref()?;
            match b.client_failure() {
                Some(_) => None,
                None => Some(b.total_ms.unwrap_or(UNFINISHED)),
            }
        },
    },
    Objective {
        key: "plateau",
        unit: Unit::Seconds,
        bound: Bound::AtLeast,
        setting: None,
        measured: "The common hold's length: every user of the level open at once, from the last dial's end (a stop cuts it short; 0 when no socket was open through it). Its bound is `--hold`, not a `--slo` key. Not measured in a level with `--fault` or `--churn`: its sockets close by design (`back` and `growth` judge those levels).",
        scenarios: SOCKETS,
        figure: |f| match (&f.fault, &f.growth) {
            (None, None) => f.plateau.as_ref().map(|p| p.open_length_s()),
            _ => None,
        },
    },
    Objective {
        key: "back",
        unit: Unit::Ms,
        bound: Bound::AtMost,
        setting: Some(Setting {
            default: 30_000.0,
            example: "10s",
            get: |s| s.back_ms,
            set: |s, v| s.back_ms = v,
        }),
        measured: "With `--fault`: the longest a dropped socket took to be open again, from its drop to its new upgrade, the users reconnecting as the real client does (y-websocket's backoff, 100 ms doubling to 2.5 s). A socket not back by the hold's end counts as never back (the hold's length), and its user as not held.",
        scenarios: SOCKETS,
        figure: |f| {
            let r = &f.fault.as_ref()?.recovery;
            match (r.not_back, r.back_max_ms) {
                (0, None) => Some(0.0),
                (0, Some(max)) => Some(max),
                _ => Some(UNFINISHED),
            }
        },
    },
    Objective {
        key: "growth",
        unit: Unit::Percent,
        bound: Bound::AtMost,
        setting: Some(Setting {
            default: 10.0,
            example: "5",
            get: |s| s.growth_pct,
            set: |s, v| s.growth_pct = v,
        }),
        measured: "With `--churn`: the most any app instance's RSS, open files, connections or rooms grew over the common hold, by its trend (Theil–Sen, over every sample of the hold), in percent of its median (RSS, open files) or of the level's users (connections, rooms); only a trend whose 95 % bootstrap interval excludes zero and that grew at least 4 MiB (RSS) or 2 (files, connections, rooms) over the hold counts (none: 0).",
        scenarios: SOCKETS,
        figure: |f| {
            let g = f.growth.as_ref()?;
            Some(g.worst().map_or(0.0, |w| w.pct_over_hold))
        },
    },
];

/// The rows `--slo` sets, with their setting.
pub fn settable() -> impl Iterator<Item = (&'static Objective, &'static Setting)> {
    OBJECTIVES
        .iter()
        .filter_map(|o| Some((o, o.setting.as_ref()?)))
}

/// The row of `key`.
pub fn objective(key: &str) -> Option<&'static Objective> {
    OBJECTIVES.iter().find(|o| o.key == key)
}

impl Objective {
    /// Its bound for a level: its `--slo` value, or for the plateau the hold it asked for (None: the level
    /// has no plateau, and no such check).
    fn bound_of(&self, slos: &Slos, f: &LevelFigures) -> Option<f64> {
        // The browser is asked for (`--browser-probe`), like the plateau needs a hold and `back` a
        // fault (`--fault`): no check without it.
        if (self.key == "browser" && f.browser.is_none())
            || (self.key == "back" && f.fault.is_none())
            || (self.key == "growth" && f.growth.is_none())
        {
            return None;
        }
        match &self.setting {
            Some(s) => Some((s.get)(slos)),
            None => f.plateau.as_ref().map(|p| p.hold_s),
        }
    }

    /// Its default as a bound: "≥ 99.9", "≤ 5s", "≥ `--hold`".
    pub fn default_bound(&self) -> String {
        match &self.setting {
            Some(s) => format!("{} {}", self.bound.sign(), self.unit.write(s.default)),
            None => format!("{} `--hold`", self.bound.sign()),
        }
    }
}

/// README's objectives table: one row per objective.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| objective | unit | default | how it is measured | scenarios |\n|---|---|---|---|---|\n",
    );
    for o in &OBJECTIVES {
        let scenarios = if o.scenarios == ALL {
            "all".to_string()
        } else {
            o.scenarios.join(", ")
        };
        out += &format!(
            "| `{}` | {} | {} | {} | {scenarios} |\n",
            o.key,
            o.unit.name(),
            o.default_bound(),
            o.measured
        );
    }
    out
}

impl Slos {
    /// The defaults with each `KEY=VALUE` applied in order.
    pub fn with_overrides(given: &[String]) -> Result<Slos, UsageError> {
        let mut s = Slos::default();
        for kv in given {
            s.set(kv)?;
        }
        Ok(s)
    }

    fn set(&mut self, kv: &str) -> Result<(), UsageError> {
        let keys = || {
            settable()
                .map(|(o, _)| o.key)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some((key, value)) = kv.split_once('=') else {
            return Err(UsageError::new(
                "--slo",
                kv,
                "not KEY=VALUE",
                format!(
                    "give one of {} with a value, e.g. --slo login_p95=2s",
                    keys()
                ),
            ));
        };
        let (key, value) = (key.trim(), value.trim());
        let Some((o, setting)) = settable().find(|(o, _)| o.key == key) else {
            return Err(UsageError::new(
                "--slo",
                kv,
                format!("unknown objective {key:?}"),
                format!("use one of {}", keys()),
            ));
        };
        let v = o.unit.parse(value).map_err(|i| {
            let takes = format!(
                "{key} takes {}, e.g. {key}={}",
                o.unit.takes(),
                setting.example
            );
            UsageError::new("--slo", kv, i.problem, takes)
        })?;
        (setting.set)(self, v);
        Ok(())
    }

    /// Every objective against the level's figures, in the table's order (the plateau only for a level
    /// with a common hold).
    pub fn check(&self, f: &LevelFigures) -> Vec<SloCheck> {
        OBJECTIVES
            .iter()
            .filter_map(|o| Some(SloCheck::new(o, o.bound_of(self, f)?, (o.figure)(f))))
            .collect()
    }
}

/// One objective of one level: its bound, what was measured, and whether it held (None: not measured).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloCheck {
    pub key: String,
    /// "≥ 99.9%", "≤ 5000 ms".
    pub bound: String,
    pub measured: Option<f64>,
    pub unit: String,
    pub ok: Option<bool>,
}

impl SloCheck {
    fn new(o: &Objective, bound: f64, measured: Option<f64>) -> SloCheck {
        let suffix = o.unit.suffix();
        SloCheck {
            key: o.key.into(),
            bound: format!("{} {}{suffix}", o.bound.sign(), show(bound)),
            measured,
            unit: suffix.trim().into(),
            ok: measured.map(|m| o.bound.holds(m, bound)),
        }
    }

    pub fn failed(&self) -> bool {
        self.ok == Some(false)
    }

    /// What was measured, with its unit: "6120 ms", "3", "not measured".
    pub fn measured_text(&self) -> String {
        match self.measured {
            Some(m) if m >= UNFINISHED => "did not finish".into(),
            Some(m) if self.unit.is_empty() => show(m),
            Some(m) => format!("{} {}", show(m), self.unit),
            None => "not measured".into(),
        }
    }

    /// "login_p95 6120 ms (≤ 5000 ms)", for a level's reasons.
    pub fn describe(&self) -> String {
        format!("{} {} ({})", self.key, self.measured_text(), self.bound)
    }
}

#[cfg(test)]
#[path = "slo_tests.rs"]
mod tests;
