//! A load run's summary as text for people: `exectl load`'s report on the terminal.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::metrics::Percentiles;
use super::summary::{SliceUse, Summary};
use super::Scenario;
use exectl_core::load::delivery::Deliveries;

impl Summary {
    /// The terminal form.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let p = |x: &Percentiles| {
            if x.count == 0 {
                "-".to_string()
            } else {
                format!(
                    "p50 {:.1} / p95 {:.1} / p99 {:.1} / max {:.1} ms (n={})",
                    x.p50, x.p95, x.p99, x.max, x.count
                )
            }
        };
        let kv = |m: &BTreeMap<String, u64>| {
            if m.is_empty() {
                "none".to_string()
            } else {
                m.iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let verdict = match (self.passed(), self.interrupted) {
            (_, true) => "INTERRUPTED",
            (true, _) => "PASS",
            _ => "FAIL",
        };
        let _ = writeln!(
            s,
            "exectl load {} — run {} — {verdict}",
            self.scenario, self.run_id
        );
        let _ = writeln!(
            s,
            "  users {}  succeeded {}  failed {}  ({:.1} s from the first dial)",
            self.users, self.succeeded, self.failed, self.duration_s
        );
        if self.scenario != Scenario::LoginBurst.name() {
            let _ = writeln!(
                s,
                "  connected (101) {}  held (open and alive) through the common {:.1} s hold {}  stalled {}",
                self.connected, self.settings.hold_s, self.held_full_duration, self.stalled
            );
            if let Some(p) = &self.plateau {
                let _ = writeln!(s, "  plateau       {}", p.describe());
            }
            let _ = writeln!(s, "  close codes   {}", kv(&self.close_codes));
        }
        let _ = writeln!(s, "  failures      {}", kv(&self.failures));
        if let Some(a) = &self.arrivals {
            let _ = writeln!(s, "  arrivals      {}", a.describe());
        }
        if let Some(r) = &self.recovery {
            let _ = writeln!(s, "  reconnects    {}", r.describe());
        }
        let _ = writeln!(s, "  login         {}", p(&self.login_ms));
        if self.scenario != Scenario::LoginBurst.name() {
            let _ = writeln!(s, "  connect       {}", p(&self.connect_ms));
        }
        if self.early_end_ms.count > 0 {
            let _ = writeln!(s, "  early end     {}", p(&self.early_end_ms));
        }
        if self.scenario != Scenario::LoginBurst.name() {
            let _ = writeln!(s, "  pings         {}", self.pings.describe());
        }
        if self.server_silence_ms.count > 0 {
            // The bound in force at the end: past the server's own cadence once it was seen to ping.
            let answer_s = self.settings.stall_after_s - self.settings.ping_after_s;
            let stall_s = match self.pings.ping_after_s {
                a if a > 0.0 => a + answer_s,
                _ => self.settings.stall_after_s,
            };
            let _ = writeln!(
                s,
                "  server silent {}  (longest per socket; stalled past {stall_s:.0} s)",
                p(&self.server_silence_ms),
            );
        }
        if let Some(b) = &self.login_burst {
            let _ = writeln!(
                s,
                "  logins        ok {}  failed {}  ({})",
                b.logins_ok,
                b.logins_failed,
                kv(&b.login_status)
            );
            let _ = writeln!(
                s,
                "  probe         {} samples, {} errors, {}",
                b.probe_samples,
                b.probe_errors,
                p(&b.probe_ms)
            );
        }
        if let Some(f) = &self.fanout {
            let _ = writeln!(
                s,
                "  frames        sent {} ({} B)  received {} ({} B)",
                f.frames_sent, f.bytes_sent, f.fanout_messages, f.fanout_bytes,
            );
            let _ = writeln!(s, "  deliveries    {}", render_deliveries(&f.deliveries));
            let _ = writeln!(s, "  delivery      {}", p(&f.delivery_ms));
        }
        if let Some(e) = &self.editing {
            let _ = writeln!(s, "  actions       {}", kv(&e.actions));
            let _ = writeln!(s, "  metadata      {}", p(&e.metadata_ms));
            let _ = writeln!(s, "  autosave      {}", p(&e.autosave_ms));
        }
        if self.scenario != Scenario::LoginBurst.name() {
            let _ = writeln!(s, "  connect rate  {:.1}/s", self.connect_rate_per_s);
        }
        let _ = writeln!(
            s,
            "  client        peak RSS {:.1} MiB, CPU {:.2} s",
            self.client_peak_rss_bytes as f64 / (1 << 20) as f64,
            self.client_cpu_seconds
        );
        if self.generator.slices.len() > 1 {
            for u in &self.generator.slices {
                let _ = writeln!(s, "  {}", slice_line(u));
            }
        }
        if let Some(b) = &self.generator.bound {
            let _ = writeln!(s, "  GENERATOR-BOUND: {b}");
        }
        s
    }
}

/// `slice 1  pid 4242 on gen-1  users 16,667  held 16,667  CPU 3.1 s (41 % of 1.00 during the hold)
/// RSS 120.3 MiB  skew 2.1 ms`, or the slice's error.
fn slice_line(u: &SliceUse) -> String {
    let on = u.generator.as_deref().unwrap_or(&u.host);
    let mut s = format!(
        "slice {:<2} pid {} on {on}  users {}  held {}",
        u.slice, u.pid, u.users, u.held
    );
    if let Some(e) = &u.error {
        let seen = u.last_seen.map_or(String::new(), |l| {
            format!(
                " {:.1} s after the first dial (last heard: {} connected, {} open)",
                l.at_s, l.connected, l.open
            )
        });
        return s + &format!("  FAILED{seen}: {e}");
    }
    s += &format!("  CPU {:.2} s", u.cpu_s);
    if let Some(share) = u.hold_cpu_share {
        s += &format!(
            " ({:.0} % of {:.2} during the hold",
            share * 100.0,
            u.cpu_capacity
        );
        if let Some(t) = u.hold_throttled {
            s += &format!(", throttled {:.0} %", t * 100.0);
        }
        s += ")";
    }
    s += &format!(
        "  RSS {:.1} MiB",
        u.peak_rss_bytes as f64 / (1 << 20) as f64
    );
    if let Some(k) = u.start_skew_ms {
        s += &format!("  skew {k:.1} ms");
    }
    if let Some(c) = u.clock_offset_ms {
        s += &format!(" (its clock {c:+.1} ms)");
    }
    s
}

/// `delivered 40 of 40 expected  lost 0  duplicated 0  echoed 0  cross-room 0`.
pub(super) fn render_deliveries(d: &Deliveries) -> String {
    let mut s = match d.expected {
        Some(e) => format!(
            "delivered {} of {e} expected",
            d.delivered - d.delivered_to_partial_members
        ),
        None => format!("delivered {}", d.delivered),
    };
    if d.expected.is_some() && d.delivered_to_partial_members > 0 {
        s += &format!(
            " (+{} to members not there for the whole window)",
            d.delivered_to_partial_members
        );
    }
    if let Some(l) = d.lost {
        s += &format!("  lost {l}");
    }
    s += &format!(
        "  duplicated {}  echoed {}  cross-room {}",
        d.duplicated, d.echoed, d.cross_room
    );
    s
}
