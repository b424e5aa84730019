//! A level's plateau in figures: how many users were open at once, for how long, and how fast they got
//! there — what `exectl load` prints, what bench's levels are judged on and report, and the live status
//! line while a ramp runs. Pure: the load engine measures (`load::plateau`), this describes.

use serde::{Deserialize, Serialize};

use crate::units::readable_s;

/// The common hold of one run (socket scenarios). Times are seconds from the run's start.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PlateauFigures {
    /// Users asked for at once.
    pub target: u64,
    /// The common hold asked for (`--hold`).
    pub hold_s: f64,
    /// When the common hold began (every dial over) and ended; None when it never began.
    pub start_s: Option<f64>,
    pub end_s: Option<f64>,
    /// Sockets open when it began, and the fewest open during it.
    pub open_at_start: u64,
    pub min_open: u64,
    /// The most sockets open at once during the run, and when.
    pub peak_open: u64,
    pub peak_at_s: f64,
    /// The ramp achieved: first to last successful connect (`--ramp` asked `ramp_asked_s`).
    pub ramp_s: Option<f64>,
    pub ramp_asked_s: f64,
    /// Successful logins per second from the first login to the last (None with minted tokens).
    pub logins_per_s: Option<f64>,
}

impl PlateauFigures {
    /// How long the common hold lasted (0 when it never began), to the millisecond: both ends are
    /// seconds from the run's start, so an 8 s hold would otherwise read 7.999999 and fail `≥ 8 s`.
    pub fn length_s(&self) -> f64 {
        match (self.start_s, self.end_s) {
            (Some(a), Some(b)) => ((b - a).max(0.0) * 1000.0).round() / 1000.0,
            _ => 0.0,
        }
    }

    /// The common hold's length as the `plateau` objective reads it: 0 when no socket was open through
    /// it (every dial failed, or every socket closed), since a hold of nobody is no plateau.
    pub fn open_length_s(&self) -> f64 {
        match self.min_open {
            0 => 0.0,
            _ => self.length_s(),
        }
    }

    /// Every user open at once from the hold's start to its end, and the hold as long as asked.
    pub fn full(&self) -> bool {
        self.target > 0 && self.min_open >= self.target && self.length_s() >= self.hold_s
    }

    /// "400 of 400 at once for 20.0 s; ramp 4.9 s (asked 5 s) at 81 logins/s" or, when the level never
    /// had them all, "peak 1,722 of 10,000 at once; the ramp took 6 min 2 s at 28 logins/s".
    pub fn describe(&self) -> String {
        let ramp = self.ramp_text();
        if self.full() {
            return format!(
                "{} of {} at once for {:.1} s; {ramp}",
                group(self.min_open),
                group(self.target),
                self.length_s()
            );
        }
        let mut s = format!(
            "peak {} of {} at once",
            group(self.peak_open),
            group(self.target)
        );
        match self.start_s {
            Some(_) if self.length_s() + 0.05 < self.hold_s => {
                s += &format!(
                    "; the common hold lasted {:.1} s of {:.0} s",
                    self.length_s(),
                    self.hold_s
                )
            }
            Some(_) => {
                s += &format!(
                    "; {} open when the hold began, {} at its lowest",
                    group(self.open_at_start),
                    group(self.min_open)
                )
            }
            None => s += "; the common hold never began",
        }
        format!("{s}; {ramp}")
    }

    /// The short form, for a table cell: "400 / 400 for 20.0 s", or "peak 1,722 / 10,000; 12.0 s".
    pub fn at_once(&self) -> String {
        if self.full() {
            format!(
                "{} / {} for {:.1} s",
                group(self.min_open),
                group(self.target),
                self.length_s()
            )
        } else {
            format!(
                "peak {} / {}; {} at once for {:.1} s",
                group(self.peak_open),
                group(self.target),
                group(self.min_open),
                self.length_s()
            )
        }
    }

    fn ramp_text(&self) -> String {
        let took = match self.ramp_s {
            Some(r) => format!("the ramp took {}", readable_s(r)),
            // Sockets were open, but no report of their connects came (the slices that had them died).
            None if self.peak_open > 0 => {
                "the ramp's span unknown (no report of its connects)".into()
            }
            None => "no socket connected".to_string(),
        };
        let asked = if self
            .ramp_s
            .is_some_and(|r| r > self.ramp_asked_s * 1.5 + 2.0)
        {
            format!(" (--ramp {})", flag_duration(self.ramp_asked_s))
        } else {
            String::new()
        };
        match self.logins_per_s {
            Some(l) => format!("{took}{asked} at {l:.0} logins/s"),
            None => format!("{took}{asked}"),
        }
    }
}

/// What a ramp in progress looks like, for the live progress lines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RampView {
    pub target: u64,
    pub open: u64,
    pub peak: u64,
    /// Users whose dial is over (connected or failed).
    pub dials_over: u64,
    pub elapsed_s: f64,
    pub ramp_asked_s: f64,
    /// Successful logins so far (None with minted tokens).
    pub logins_ok: Option<u64>,
    /// Seconds into the common hold, when it began, and its length.
    pub holding_s: Option<f64>,
    pub hold_s: f64,
}

/// "open 1,722/10,000 at once" plus, once the ramp runs much past `--ramp`, what it is taking
/// ("ramp 2 min 10 s so far (--ramp 60 s) at 28 logins/s: about 4 min more"), or the hold's progress.
pub fn ramp_status(v: &RampView) -> String {
    let mut s = format!("open {}/{} at once", group(v.open), group(v.target));
    if v.peak > v.open {
        s += &format!(" (peak {})", group(v.peak));
    }
    if let Some(h) = v.holding_s {
        return s + &format!(", holding {:.0}/{:.0} s", h.min(v.hold_s), v.hold_s);
    }
    if v.elapsed_s > v.ramp_asked_s * 1.5 + 5.0 && v.dials_over < v.target {
        s += &format!(
            ", ramp {} so far (--ramp {})",
            readable_s(v.elapsed_s),
            flag_duration(v.ramp_asked_s)
        );
        let rate = v.logins_ok.map(|l| l as f64 / v.elapsed_s.max(1e-3));
        if let Some(r) = rate.filter(|r| *r > 0.0) {
            let left = v.target.saturating_sub(v.dials_over) as f64 / r;
            s += &format!(" at {r:.0} logins/s: about {} more", readable_s(left));
            s += " (prepare --mint-tokens and --tokens skip the logins)";
        }
    }
    s
}

/// A flag's duration as its grammar writes it (`1m`, `500ms`).
fn flag_duration(s: f64) -> String {
    crate::units::show(std::time::Duration::from_secs_f64(s.max(0.0)))
}

/// 10000 → "10,000".
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plateau() -> PlateauFigures {
        PlateauFigures {
            target: 400,
            hold_s: 20.0,
            start_s: Some(5.1),
            end_s: Some(25.1),
            open_at_start: 400,
            min_open: 400,
            peak_open: 400,
            peak_at_s: 5.1,
            ramp_s: Some(4.9),
            ramp_asked_s: 5.0,
            logins_per_s: Some(81.4),
        }
    }

    #[test]
    fn a_hold_as_long_as_asked_is_full_whatever_its_ends_in_seconds() {
        // 1.7 + 8.0 - 1.7 is 7.999999999999999 in f64: the CI's tuned nginx level failed `≥ 8 s` so.
        let p = PlateauFigures {
            hold_s: 8.0,
            start_s: Some(1.7),
            end_s: Some(1.7 + 8.0),
            ..plateau()
        };
        assert_eq!(p.length_s(), 8.0);
        assert!(p.full());
        let short = PlateauFigures {
            end_s: Some(1.7 + 7.998),
            ..p
        };
        assert!(!short.full(), "2 ms short is short");
    }

    #[test]
    fn a_full_plateau_says_so_and_a_short_one_says_its_peak() {
        let p = plateau();
        assert!(p.full());
        assert_eq!(p.at_once(), "400 / 400 for 20.0 s");
        assert_eq!(
            p.describe(),
            "400 of 400 at once for 20.0 s; the ramp took 4.9 s at 81 logins/s"
        );
        // The case: logins too slow for the sockets to overlap.
        let slow = PlateauFigures {
            target: 10_000,
            hold_s: 60.0,
            start_s: Some(362.0),
            end_s: Some(422.0),
            open_at_start: 1_663,
            min_open: 1_600,
            peak_open: 1_722,
            ramp_s: Some(361.6),
            ramp_asked_s: 60.0,
            logins_per_s: Some(27.7),
            ..plateau()
        };
        assert!(!slow.full());
        assert_eq!(
            slow.describe(),
            "peak 1,722 of 10,000 at once; 1,663 open when the hold began, 1,600 at its lowest; \
             the ramp took 6 min 2 s (--ramp 1m) at 28 logins/s"
        );
        let cut = PlateauFigures {
            end_s: Some(15.1),
            ..plateau()
        };
        assert!(!cut.full(), "a 10 s plateau of a 20 s hold");
        assert!(
            cut.describe()
                .contains("the common hold lasted 10.0 s of 20 s"),
            "{}",
            cut.describe()
        );
        let none = PlateauFigures {
            start_s: None,
            end_s: None,
            min_open: 0,
            peak_open: 0,
            ramp_s: None,
            logins_per_s: None,
            ..plateau()
        };
        assert_eq!(
            none.describe(),
            "peak 0 of 400 at once; the common hold never began; no socket connected"
        );
        // Open sockets seen, but no slice that had them reported its connects.
        let unreported = PlateauFigures {
            peak_open: 20,
            ..none.clone()
        };
        assert!(
            unreported
                .describe()
                .ends_with("; the ramp's span unknown (no report of its connects)"),
            "{}",
            unreported.describe()
        );
    }

    #[test]
    fn the_live_status_says_when_the_ramp_overruns() {
        let v = RampView {
            target: 10_000,
            open: 1_722,
            peak: 1_722,
            dials_over: 1_722,
            elapsed_s: 62.0,
            ramp_asked_s: 60.0,
            logins_ok: Some(1_722),
            holding_s: None,
            hold_s: 60.0,
        };
        assert_eq!(ramp_status(&v), "open 1,722/10,000 at once");
        let late = RampView {
            elapsed_s: 130.0,
            ..v
        };
        assert_eq!(
            ramp_status(&late),
            "open 1,722/10,000 at once, ramp 2 min 10 s so far (--ramp 1m) at 13 logins/s: \
             about 10 min 25 s more (prepare --mint-tokens and --tokens skip the logins)"
        );
        let holding = RampView {
            open: 9_990,
            peak: 10_000,
            dials_over: 10_000,
            holding_s: Some(12.4),
            ..v
        };
        assert_eq!(
            ramp_status(&holding),
            "open 9,990/10,000 at once (peak 10,000), holding 12/60 s"
        );
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
    }
}
