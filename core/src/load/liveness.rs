//! Whether a held socket's server is alive, not only its TCP connection open: a frozen (paused, wedged)
//! server keeps its sockets open, so "held" also needs frames. The client counts any frame (pong, ping,
//! binary, text) as a sign of life and pings after `ping_after` of server silence; a ping left
//! unanswered for `answer_within` makes the socket `stalled`. At the hold's end a last ping must be
//! answered within the same bound, so a hold shorter than the server's own ping interval detects a
//! freeze too.
//!
//! A server that pings its clients itself (the real app every 30 s) proves it is alive with every ping
//! a socket answers: the client's own pings would only be load (at 10,000 idle users, 2,000 pings a
//! second cost the real app 10.8 % of a core and nginx 9.3 %, against 6.4 % and 2.7 % without). So by
//! default (`Bounds::follow_server`) the client pings only when the server has been silent for its own
//! cadence and `PING_AFTER` more (35 s against the app's 30 s), once the run has seen the server ping:
//! the cadence is learned from the gaps between its pings (`Liveness::server_pinged`), the contract's
//! 30 s until a gap is measured. Pure: times are milliseconds since the socket connected (u32, so the
//! state per socket stays at 16 bytes).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Server silence after which the client pings (cheap: 2,000 pings/s at 10,000 idle sockets), and the
/// margin past a pinging server's own cadence.
pub const PING_AFTER: Duration = Duration::from_secs(5);
/// The pings a run sends at most, per second, by default: past 10,000 users the silence before a ping
/// grows instead (at 50,000 idle sockets a 5 s cadence is 10,000 pings a second, which a 2-core SUT
/// spends its time answering).
pub const PINGS_PER_S: u64 = 2_000;
/// How long a ping may go unanswered before the socket counts as stalled. The seed saw the event loop
/// blocked for seconds under login bursts; 10 s more than the app's worst healthy answer time.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// A server seen to ping, before the gap between two of its pings is measured: the app's heartbeat
/// (contract "Heartbeat": every 30 s in server mode).
pub const SERVER_EVERY: Duration = Duration::from_secs(30);
/// The longest server cadence followed (the app's desktop mode pings every 60 s): past it the client
/// pings anyway, so that a freeze still shows within a minute and a bit.
pub const SERVER_EVERY_MAX: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub ping_after_ms: u32,
    pub answer_within_ms: u32,
    /// Ping only past the server's own cadence once it is seen to ping (the default); false when
    /// `--ping-after` was given: its silence, whatever the server does.
    pub follow_server: bool,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            ping_after_ms: PING_AFTER.as_millis() as u32,
            answer_within_ms: ANSWER_WITHIN.as_millis() as u32,
            follow_server: true,
        }
    }
}

impl Bounds {
    /// The default for a run of `users` sockets: `PING_AFTER`, or longer so that the run as a whole
    /// pings at most `PINGS_PER_S` times a second (25 s at 50,000) while the server is silent.
    pub fn for_users(users: usize) -> Bounds {
        let spread_ms = (users as u64).saturating_mul(1000) / PINGS_PER_S;
        Bounds {
            ping_after_ms: spread_ms.clamp(PING_AFTER.as_millis() as u64, u32::MAX as u64) as u32,
            ..Bounds::default()
        }
    }

    /// `--ping-after`: ping after `d` of silence, whatever the server's own pings.
    pub fn fixed(d: Duration) -> Bounds {
        Bounds {
            ping_after_ms: d.as_millis().min(u32::MAX as u128) as u32,
            follow_server: false,
            ..Bounds::default()
        }
    }

    /// The bounds in force when the server pings every `server_every_ms` (None: not seen to ping):
    /// ping after its cadence (at most `SERVER_EVERY_MAX`) and `PING_AFTER` more, or after our own
    /// silence when that is longer or we do not follow the server.
    pub fn following(self, server_every_ms: Option<u32>) -> Bounds {
        match server_every_ms {
            Some(every) if self.follow_server => {
                let every = every.min(SERVER_EVERY_MAX.as_millis() as u32);
                Bounds {
                    ping_after_ms: self
                        .ping_after_ms
                        .max(every.saturating_add(PING_AFTER.as_millis() as u32)),
                    ..self
                }
            }
            _ => self,
        }
    }

    /// The longest silence a healthy socket can show: a ping sent after `ping_after`, answered just in time.
    pub fn stall_after_ms(&self) -> u32 {
        self.ping_after_ms.saturating_add(self.answer_within_ms)
    }
}

/// The generator's liveness pings in a run: what it sent (the hold's last check aside), how many a
/// second during the common hold, and the server's own cadence it followed.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pings {
    pub sent: u64,
    /// Per second during the common hold (None: no hold of a second was seen).
    pub per_s_in_hold: Option<f64>,
    /// The server's own ping cadence as the run learned it (None: the server sent no ping).
    pub server_every_s: Option<f64>,
    /// The silence after which the client pinged in the end (`Bounds::following`).
    pub ping_after_s: f64,
}

impl Pings {
    /// "40 sent, 0.0/s during the hold; the server pings every 30 s: pinged past 35 s of its silence",
    /// or "… the server sent no ping: pinged past 5 s of silence".
    pub fn describe(&self) -> String {
        let rate = self
            .per_s_in_hold
            .map_or(String::new(), |r| format!(", {r:.1}/s during the hold"));
        let after = crate::units::readable_s(self.ping_after_s);
        match self.server_every_s {
            Some(every) => format!(
                "{} sent{rate}; the server pings every {}: pinged past {after} of its silence",
                self.sent,
                crate::units::readable_s(every)
            ),
            None => format!(
                "{} sent{rate}; the server sent no ping: pinged past {after} of silence",
                self.sent
            ),
        }
    }

    /// The table's cell: "0.0/s (server every 30 s)", "2000.0/s (server silent)".
    pub fn cell(&self) -> String {
        let rate = self
            .per_s_in_hold
            .map_or("—".to_string(), |r| format!("{r:.1}/s"));
        match self.server_every_s {
            Some(every) => format!("{rate} (server every {})", crate::units::readable_s(every)),
            None => format!("{rate} (server silent)"),
        }
    }
}

/// What the socket's liveness timer asks for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing to do before this time (ms since connect).
    WaitUntil(u32),
    /// Send a ping now (then call `pinged`).
    Ping,
    /// The server has been silent past the bound.
    Stalled,
}

/// `u32::MAX` in a time field: none yet.
const NONE: u32 = u32::MAX;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveness {
    last_heard_ms: u32,
    /// Our ping outstanding since (NONE: none).
    ping_sent_ms: u32,
    longest_silence_ms: u32,
    /// The server's last ping on this socket (NONE: none yet).
    server_ping_ms: u32,
}

impl Default for Liveness {
    fn default() -> Self {
        Liveness {
            last_heard_ms: 0,
            ping_sent_ms: NONE,
            longest_silence_ms: 0,
            server_ping_ms: NONE,
        }
    }
}

impl Liveness {
    /// A frame of any kind arrived at `at_ms`.
    pub fn heard(&mut self, at_ms: u32) {
        let gap = at_ms.saturating_sub(self.last_heard_ms);
        self.longest_silence_ms = self.longest_silence_ms.max(gap);
        self.last_heard_ms = self.last_heard_ms.max(at_ms);
        self.ping_sent_ms = NONE;
    }

    /// The server pinged at `at_ms` (heard, and answered by the socket): the time since its last ping
    /// on this socket, its cadence, when there was one.
    pub fn server_pinged(&mut self, at_ms: u32) -> Option<u32> {
        self.heard(at_ms);
        let gap = (self.server_ping_ms != NONE).then(|| at_ms.saturating_sub(self.server_ping_ms));
        self.server_ping_ms = at_ms;
        gap.filter(|g| *g > 0)
    }

    /// A ping went out at `at_ms`.
    pub fn pinged(&mut self, at_ms: u32) {
        self.ping_sent_ms = at_ms;
    }

    fn outstanding(&self) -> Option<u32> {
        (self.ping_sent_ms != NONE).then_some(self.ping_sent_ms)
    }

    /// The rule, at `now_ms`: stalled once the silence exceeds the bound (a ping unanswered for
    /// `answer_within`, or — if a ping could not go out in time — ping_after + answer_within).
    pub fn step(&self, now_ms: u32, b: Bounds) -> Step {
        let silent = now_ms.saturating_sub(self.last_heard_ms);
        let unanswered = self.outstanding().map(|p| now_ms.saturating_sub(p));
        if silent > b.stall_after_ms() || unanswered.is_some_and(|u| u > b.answer_within_ms) {
            return Step::Stalled;
        }
        match self.outstanding() {
            None if silent >= b.ping_after_ms => Step::Ping,
            _ => Step::WaitUntil(self.next_check_ms(b)),
        }
    }

    /// When the rule next has something to do: the ping's time, or the first millisecond at which the
    /// outstanding ping (or the silence) is past its bound.
    pub fn next_check_ms(&self, b: Bounds) -> u32 {
        let past = |t: u32, bound: u32| t.saturating_add(bound).saturating_add(1);
        match self.outstanding() {
            Some(p) => {
                past(p, b.answer_within_ms).min(past(self.last_heard_ms, b.stall_after_ms()))
            }
            None => self.last_heard_ms.saturating_add(b.ping_after_ms),
        }
    }

    /// The longest server silence seen up to `now_ms`, the current one included.
    pub fn longest_silence_ms(&self, now_ms: u32) -> u32 {
        self.longest_silence_ms
            .max(now_ms.saturating_sub(self.last_heard_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Bounds = Bounds {
        ping_after_ms: 5_000,
        answer_within_ms: 10_000,
        follow_server: true,
    };

    #[test]
    fn the_state_of_a_socket_stays_at_16_bytes() {
        assert_eq!(std::mem::size_of::<Liveness>(), 16);
    }

    #[test]
    fn a_server_that_pings_is_pinged_only_past_its_own_cadence() {
        // Not seen to ping: our own silence.
        assert_eq!(B.following(None), B);
        // The app's 30 s: we ping past 35 s of silence, and stall past 45 s.
        let app = B.following(Some(30_000));
        assert_eq!((app.ping_after_ms, app.stall_after_ms()), (35_000, 45_000));
        // A longer silence of our own stays; a cadence past a minute is followed no further.
        let long = Bounds::for_users(100_000).following(Some(30_000));
        assert_eq!(long.ping_after_ms, 50_000);
        assert_eq!(B.following(Some(600_000)).ping_after_ms, 65_000);
        // --ping-after: its silence, whatever the server does.
        let fixed = Bounds::fixed(Duration::from_secs(5));
        assert_eq!(fixed.following(Some(30_000)).ping_after_ms, 5_000);

        // A socket on a server pinging every 30 s: its pings keep it alive, we never ping.
        let mut l = Liveness::default();
        let mut gaps = Vec::new();
        for k in 1..=10u32 {
            let t = k * 30_000;
            assert!(
                matches!(l.step(t - 1, app), Step::WaitUntil(_)),
                "no ping before the server's, {t}"
            );
            gaps.extend(l.server_pinged(t));
        }
        assert_eq!(
            gaps,
            vec![30_000; 9],
            "the first ping has no gap; then its cadence"
        );
        // The server freezes after its last ping at 300 s: pinged at 335 s, stalled past 345 s.
        assert!(matches!(l.step(334_999, app), Step::WaitUntil(335_000)));
        assert_eq!(l.step(335_000, app), Step::Ping);
        l.pinged(335_000);
        assert_eq!(l.step(345_000, app), Step::WaitUntil(345_001));
        assert_eq!(l.step(345_001, app), Step::Stalled);
    }

    #[test]
    fn pings_say_what_was_sent_and_why() {
        let p = Pings {
            sent: 40,
            per_s_in_hold: Some(0.0),
            server_every_s: Some(30.0),
            ping_after_s: 35.0,
        };
        assert_eq!(
            p.describe(),
            "40 sent, 0.0/s during the hold; the server pings every 30 s: pinged past 35 s of its silence"
        );
        assert_eq!(p.cell(), "0.0/s (server every 30 s)");
        let silent = Pings {
            sent: 20_000,
            per_s_in_hold: Some(2_000.0),
            server_every_s: None,
            ping_after_s: 5.0,
        };
        assert!(silent
            .describe()
            .ends_with("the server sent no ping: pinged past 5 s of silence"));
        assert_eq!(silent.cell(), "2000.0/s (server silent)");
    }

    #[test]
    fn the_default_cadence_keeps_a_run_under_its_ping_budget() {
        assert_eq!(Bounds::for_users(1), Bounds::default());
        assert_eq!(Bounds::for_users(10_000).ping_after_ms, 5_000);
        assert_eq!(Bounds::for_users(20_000).ping_after_ms, 10_000);
        let b = Bounds::for_users(50_000);
        assert_eq!((b.ping_after_ms, b.answer_within_ms), (25_000, 10_000));
        assert_eq!(b.stall_after_ms(), 35_000);
    }

    #[test]
    fn a_quiet_healthy_server_is_pinged_and_stays_alive() {
        let mut l = Liveness::default();
        assert_eq!(l.step(0, B), Step::WaitUntil(5_000));
        assert_eq!(l.step(4_999, B), Step::WaitUntil(5_000));
        assert_eq!(l.step(5_000, B), Step::Ping);
        l.pinged(5_000);
        assert_eq!(l.step(5_000, B), Step::WaitUntil(15_001));
        // The pong, 3 s late (an event loop blocked by a login burst): alive, the clock restarts.
        l.heard(8_000);
        assert_eq!(l.step(8_000, B), Step::WaitUntil(13_000));
        assert_eq!(l.longest_silence_ms(8_000), 8_000);
        // Hours of the same: never stalled.
        for k in 1..2_000u32 {
            let t = 8_000 + k * 5_050;
            assert_eq!(l.step(t, B), Step::Ping, "{t}");
            l.pinged(t);
            l.heard(t + 50);
        }
    }

    #[test]
    fn an_unanswered_ping_is_a_stall_just_past_the_bound() {
        let mut l = Liveness::default();
        l.heard(1_000);
        l.pinged(6_000);
        assert_eq!(l.step(16_000, B), Step::WaitUntil(16_001));
        assert_eq!(l.step(16_001, B), Step::Stalled);
        assert_eq!(l.longest_silence_ms(16_001), 15_001);
    }

    #[test]
    fn silence_alone_stalls_when_no_ping_went_out() {
        // E.g. the timer could not run: the rule does not depend on the ping having been sent.
        let mut l = Liveness::default();
        l.heard(2_000);
        assert_eq!(l.step(17_000, B), Step::Ping);
        assert_eq!(l.step(17_001, B), Step::Stalled);
        // A ping that went out late: the silence bound comes first.
        l.pinged(12_000);
        assert_eq!(l.step(12_000, B), Step::WaitUntil(17_001));
    }

    #[test]
    fn any_frame_counts_and_late_frames_do_not_rewind() {
        let mut l = Liveness::default();
        l.pinged(5_000);
        l.heard(9_000); // a binary frame, a server ping: alive
        assert_eq!(l.step(9_000, B), Step::WaitUntil(14_000));
        l.heard(7_000); // out of order: never moves the clock back
        assert_eq!(l.step(9_000, B), Step::WaitUntil(14_000));
        assert_eq!(l.longest_silence_ms(9_000), 9_000);
    }

    #[test]
    fn default_bounds_tolerate_seconds_of_stall() {
        let b = Bounds::default();
        assert_eq!(b.stall_after_ms(), 15_000);
        assert!(b.answer_within_ms >= 10_000);
    }
}
