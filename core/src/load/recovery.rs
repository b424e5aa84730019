//! `--reconnect`: a user whose socket dropped (closed, reset, or stalled past the liveness bound) dials
//! again as the real client does, and what that cost is counted: how many sockets dropped, how many
//! came back and how long it took, the dials that failed on the way. The real client is y-websocket's
//! `WebsocketProvider`: after its n-th unsuccessful reconnect it waits min(100 ms × 2ⁿ, 2,500 ms)
//! (`maxBackoffTime`) and dials again, for as long as the page is open; here, until the level's common
//! hold ends.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The first reconnect's wait, doubled after each unsuccessful one…
pub const FIRST_WAIT: Duration = Duration::from_millis(100);
/// …up to this (y-websocket's `maxBackoffTime` default).
pub const MAX_WAIT: Duration = Duration::from_millis(2_500);

/// The wait before a reconnect that follows `failed` unsuccessful ones (0: the first after a drop).
pub fn backoff(failed: u32) -> Duration {
    FIRST_WAIT
        .saturating_mul(1u32.checked_shl(failed).unwrap_or(u32::MAX))
        .min(MAX_WAIT)
}

/// What the users' reconnects came to, over a run (or a slice of one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// Sockets that dropped before the hold ended (a user may drop more than once).
    pub drops: u64,
    /// Sockets their users closed on purpose and opened again (`--churn`): no drop.
    #[serde(default)]
    pub leaves: u64,
    /// Users whose socket dropped at least once.
    pub users_dropped: u64,
    /// Of those, the users open again and held to the hold's end.
    pub users_back: u64,
    /// Drops never followed by an open socket before the hold ended (their users failed: `not_back`).
    pub not_back: u64,
    /// Dials that failed on the way back (each followed by the backoff's next wait), by kind
    /// ("connect_refused", "handshake_502", …).
    pub failed_dials: BTreeMap<String, u64>,
    /// How the sockets dropped: "eof_without_close", "closed_1001", "stalled", …
    pub dropped_by: BTreeMap<String, u64>,
    /// From a drop to the socket open again (its upgrade answered), of the drops that came back: p50,
    /// p95 and the longest, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub back_p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub back_p95_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub back_max_ms: Option<f64>,
    /// Seconds from the run's start: the first drop and the last return (the outage as the users saw it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_drop_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_back_s: Option<f64>,
    /// `--relogin`: the logins on the way back (None: the users dialed again with their token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relogins: Option<Relogins>,
}

/// `--relogin`: a user whose socket dropped logs in again before it dials, as one who reloads the page
/// does: the login storm that follows a restart, and what it cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Relogins {
    /// Logins answered 200.
    pub ok: u64,
    /// Logins that failed (each followed by the backoff's next wait), by kind ("502", "timeout", …).
    #[serde(default)]
    pub failed: BTreeMap<String, u64>,
    /// Of the successful ones, from the request to its answer: p50, p95 and the longest, ms (the
    /// caller's, from the merged histogram).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_ms: Option<f64>,
}

impl Relogins {
    /// "480 logins on the way back (p50 35 ms, p95 2.1 s, the longest 3.0 s), 20 failed (502 20)".
    pub fn describe(&self) -> String {
        // Logins are often quick: milliseconds under a second.
        let s = |ms: f64| match ms < 1000.0 {
            true => format!("{ms:.0} ms"),
            false => format!("{:.1} s", ms / 1000.0),
        };
        let times = match (self.p50_ms, self.p95_ms, self.max_ms) {
            (Some(p50), Some(p95), Some(max)) => {
                format!(" (p50 {}, p95 {}, the longest {})", s(p50), s(p95), s(max))
            }
            _ => String::new(),
        };
        let failed = match self.failed.values().sum::<u64>() {
            0 => String::new(),
            n => format!(", {n} failed ({})", kinds(&self.failed)),
        };
        format!("{} logins on the way back{times}{failed}", self.ok)
    }
}

/// "handshake_502 3, connect_refused 1".
fn kinds(m: &BTreeMap<String, u64>) -> String {
    m.iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Recovery {
    /// A slice's counts and instants added to the run's (its p50 and p95 are the caller's: they come
    /// from the merged histogram).
    pub fn add(&mut self, o: &Recovery) {
        self.drops += o.drops;
        self.leaves += o.leaves;
        self.users_dropped += o.users_dropped;
        self.users_back += o.users_back;
        self.not_back += o.not_back;
        for (into, from) in [
            (&mut self.dropped_by, &o.dropped_by),
            (&mut self.failed_dials, &o.failed_dials),
        ] {
            for (k, n) in from {
                *into.entry(k.clone()).or_default() += n;
            }
        }
        let either = |a: Option<f64>, b: Option<f64>, f: fn(f64, f64) -> f64| match (a, b) {
            (Some(a), Some(b)) => Some(f(a, b)),
            (a, b) => a.or(b),
        };
        if let Some(r) = &o.relogins {
            let into = self.relogins.get_or_insert_with(Relogins::default);
            into.ok += r.ok;
            for (k, n) in &r.failed {
                *into.failed.entry(k.clone()).or_default() += n;
            }
        }
        self.back_max_ms = either(self.back_max_ms, o.back_max_ms, f64::max);
        self.first_drop_s = either(self.first_drop_s, o.first_drop_s, f64::min);
        self.last_back_s = either(self.last_back_s, o.last_back_s, f64::max);
    }

    /// From the first drop to the last return, seconds (None: nothing dropped, or nothing came back).
    pub fn outage_s(&self) -> Option<f64> {
        Some((self.last_back_s? - self.first_drop_s?).max(0.0))
    }

    /// "20 sockets dropped (eof_without_close 20), all back within 3.1 s (p50 0.4 s, p95 2.9 s), the
    /// last 3.4 s after the first drop; 6 dials failed on the way" — or "none dropped".
    pub fn describe(&self) -> String {
        let left = match self.leaves {
            0 => String::new(),
            n => format!("{n} sockets closed by their users and opened again (--churn); "),
        };
        if self.drops == 0 {
            return format!("{left}no socket dropped");
        }
        let by = kinds(&self.dropped_by);
        let s = |ms: f64| format!("{:.1} s", ms / 1000.0);
        let back = match (self.back_max_ms, self.back_p50_ms, self.back_p95_ms) {
            (Some(max), Some(p50), Some(p95)) => format!(
                "{} within {} (p50 {}, p95 {})",
                if self.not_back == 0 {
                    "all back".to_string()
                } else {
                    format!("{} back", self.drops - self.not_back)
                },
                s(max),
                s(p50),
                s(p95)
            ),
            _ => "none back".into(),
        };
        let outage = self
            .outage_s()
            .map(|o| format!(", the last {o:.1} s after the first drop"))
            .unwrap_or_default();
        let not_back = match self.not_back {
            0 => String::new(),
            n => format!("; {n} not back by the hold's end"),
        };
        let failed = match self.failed_dials.values().sum::<u64>() {
            0 => String::new(),
            n => format!(
                "; {n} dials failed on the way ({})",
                kinds(&self.failed_dials)
            ),
        };
        let relogins = self
            .relogins
            .as_ref()
            .map(|r| format!("; {}", r.describe()))
            .unwrap_or_default();
        format!(
            "{left}{} sockets dropped ({by}) from {} users, {back}{outage}{not_back}{failed}{relogins}",
            self.drops, self.users_dropped
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_from_100_ms_to_its_ceiling() {
        let ms: Vec<u128> = (0..7).map(|n| backoff(n).as_millis()).collect();
        assert_eq!(ms, [100, 200, 400, 800, 1600, 2500, 2500]);
        assert_eq!(backoff(40), MAX_WAIT);
    }

    #[test]
    fn slices_add_their_counts_and_widen_the_outage() {
        let a = Recovery {
            drops: 3,
            users_dropped: 2,
            users_back: 2,
            failed_dials: [("handshake_502".to_string(), 1)].into(),
            dropped_by: [("eof_without_close".to_string(), 3)].into(),
            back_max_ms: Some(900.0),
            first_drop_s: Some(5.0),
            last_back_s: Some(6.0),
            ..Recovery::default()
        };
        let mut b = Recovery {
            drops: 1,
            users_dropped: 1,
            not_back: 1,
            dropped_by: [("stalled".to_string(), 1)].into(),
            first_drop_s: Some(4.5),
            ..Recovery::default()
        };
        b.add(&a);
        assert_eq!((b.drops, b.users_dropped, b.users_back), (4, 3, 2));
        assert_eq!((b.not_back, b.failed_dials["handshake_502"]), (1, 1));
        assert_eq!(b.dropped_by.len(), 2);
        assert_eq!(b.back_max_ms, Some(900.0));
        assert_eq!(b.outage_s(), Some(1.5));
        (b.back_p50_ms, b.back_p95_ms) = (Some(300.0), Some(800.0));
        let d = b.describe();
        assert!(d.starts_with("4 sockets dropped (eof_without_close 3, stalled 1) from 3 users, 3 back within 0.9 s"), "{d}");
        assert!(d.contains("1 not back by the hold's end"), "{d}");
        assert!(
            d.ends_with("1 dials failed on the way (handshake_502 1)"),
            "{d}"
        );
        assert_eq!(Recovery::default().describe(), "no socket dropped");
        let mut r = b.clone();
        r.add(&Recovery {
            relogins: Some(Relogins {
                ok: 3,
                failed: [("502".to_string(), 2)].into(),
                ..Relogins::default()
            }),
            ..Recovery::default()
        });
        r.relogins.as_mut().unwrap().p50_ms = Some(300.0);
        (
            r.relogins.as_mut().unwrap().p95_ms,
            r.relogins.as_mut().unwrap().max_ms,
        ) = (Some(1_900.0), Some(2_000.0));
        let d = r.describe();
        assert!(
            d.ends_with("; 3 logins on the way back (p50 300 ms, p95 1.9 s, the longest 2.0 s), 2 failed (502 2)"),
            "{d}"
        );
        let churn = Recovery {
            leaves: 12,
            ..Recovery::default()
        };
        assert_eq!(
            churn.describe(),
            "12 sockets closed by their users and opened again (--churn); no socket dropped"
        );
    }
}
