//! Whether a held socket's server is alive, not only its TCP connection open: a frozen (paused, wedged)
//! server keeps its sockets open, so "held" also needs frames. The client pings after `ping_after` of
//! server silence and counts any frame (pong, ping, binary, text) as a sign of life; a ping left
//! unanswered for `answer_within` makes the socket `stalled`. At the hold's end a last ping must be
//! answered within the same bound, so a hold shorter than the server's own ping interval detects a
//! freeze too. Pure: times are milliseconds since the socket connected (u32, so the state per socket
//! stays at 16 bytes).

use std::time::Duration;

/// Server silence after which the client pings (cheap: 2,000 pings/s at 10,000 idle sockets).
pub const PING_AFTER: Duration = Duration::from_secs(5);
/// The pings a run sends at most, per second, by default: past 10,000 users the silence before a ping
/// grows instead (at 50,000 idle sockets a 5 s cadence is 10,000 pings a second, which a 2-core SUT
/// spends its time answering).
pub const PINGS_PER_S: u64 = 2_000;
/// How long a ping may go unanswered before the socket counts as stalled. The seed saw the event loop
/// blocked for seconds under login bursts; 10 s more than the app's worst healthy answer time.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub ping_after_ms: u32,
    pub answer_within_ms: u32,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            ping_after_ms: PING_AFTER.as_millis() as u32,
            answer_within_ms: ANSWER_WITHIN.as_millis() as u32,
        }
    }
}

impl Bounds {
    /// The default for a run of `users` sockets: `PING_AFTER`, or longer so that the run as a whole
    /// pings at most `PINGS_PER_S` times a second (25 s at 50,000).
    pub fn for_users(users: usize) -> Bounds {
        let spread_ms = (users as u64).saturating_mul(1000) / PINGS_PER_S;
        Bounds {
            ping_after_ms: spread_ms.clamp(PING_AFTER.as_millis() as u64, u32::MAX as u64) as u32,
            ..Bounds::default()
        }
    }

    /// The longest silence a healthy socket can show: a ping sent after `ping_after`, answered just in time.
    pub fn stall_after_ms(&self) -> u32 {
        self.ping_after_ms.saturating_add(self.answer_within_ms)
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

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Liveness {
    last_heard_ms: u32,
    ping_sent_ms: Option<u32>,
    longest_silence_ms: u32,
}

impl Liveness {
    /// A frame of any kind arrived at `at_ms`.
    pub fn heard(&mut self, at_ms: u32) {
        let gap = at_ms.saturating_sub(self.last_heard_ms);
        self.longest_silence_ms = self.longest_silence_ms.max(gap);
        self.last_heard_ms = self.last_heard_ms.max(at_ms);
        self.ping_sent_ms = None;
    }

    /// A ping went out at `at_ms`.
    pub fn pinged(&mut self, at_ms: u32) {
        self.ping_sent_ms = Some(at_ms);
    }

    /// The rule, at `now_ms`: stalled once the silence exceeds the bound (a ping unanswered for
    /// `answer_within`, or — if a ping could not go out in time — ping_after + answer_within).
    pub fn step(&self, now_ms: u32, b: Bounds) -> Step {
        let silent = now_ms.saturating_sub(self.last_heard_ms);
        let unanswered = self.ping_sent_ms.map(|p| now_ms.saturating_sub(p));
        if silent > b.stall_after_ms() || unanswered.is_some_and(|u| u > b.answer_within_ms) {
            return Step::Stalled;
        }
        match self.ping_sent_ms {
            None if silent >= b.ping_after_ms => Step::Ping,
            _ => Step::WaitUntil(self.next_check_ms(b)),
        }
    }

    /// When the rule next has something to do: the ping's time, or the first millisecond at which the
    /// outstanding ping (or the silence) is past its bound.
    pub fn next_check_ms(&self, b: Bounds) -> u32 {
        let past = |t: u32, bound: u32| t.saturating_add(bound).saturating_add(1);
        match self.ping_sent_ms {
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
    };

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
