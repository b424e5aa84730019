//! A level is N users at once (the seed's "ramp, then hold" stages): users ramp in, and the common hold
//! begins when every user's dial is over — the instant the N-th socket opens when all connect, else the
//! moment the last dial failed — and ends `--hold` later for everyone at once. Users that connected
//! earlier keep their sockets (alive: pinged on silence) until that common end; `held` counts those alive
//! through the whole common hold. The window is also what collab's send window and the bench's level
//! span are made of. Shared by every user task, the runner and (through `Live`) the bench's sampler.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use exectl_core::plateau::{PlateauFigures, RampView};

/// The common hold, once it began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: Instant,
    /// start + hold, or earlier when the run was stopped.
    pub end: Instant,
    /// Sockets open when it began.
    pub open_at_start: u64,
}

#[derive(Debug, Clone, Copy)]
struct Armed {
    users: u64,
    ramp: Duration,
    hold: Duration,
    t0: Instant,
}

/// The level's plateau, as the users make it.
#[derive(Debug)]
pub struct Plateau {
    armed: OnceLock<Armed>,
    window: watch::Sender<Option<Window>>,
    dials_over: AtomicU64,
    peak: AtomicU64,
    /// ms since the run began when `peak` was first reached.
    peak_at_ms: AtomicU64,
    /// The fewest sockets open during the common hold (u64::MAX until it began).
    min_open: AtomicU64,
    stopped: AtomicBool,
    /// A slice of a run over several processes: its dials being over makes it `ready`, and the hold
    /// begins when the parent says so (`release`), at once in every slice.
    gated: AtomicBool,
    ready: AtomicBool,
    released: AtomicBool,
}

impl Default for Plateau {
    fn default() -> Self {
        Plateau {
            armed: OnceLock::new(),
            window: watch::Sender::new(None),
            dials_over: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            peak_at_ms: AtomicU64::new(0),
            min_open: AtomicU64::new(u64::MAX),
            stopped: AtomicBool::new(false),
            gated: AtomicBool::new(false),
            ready: AtomicBool::new(false),
            released: AtomicBool::new(false),
        }
    }
}

impl Plateau {
    /// The run's shape: `users` dials over `ramp`, a common hold of `hold`, its clock's origin.
    pub fn arm(&self, users: u64, ramp: Duration, hold: Duration, t0: Instant) {
        let _ = self.armed.set(Armed {
            users,
            ramp,
            hold,
            t0,
        });
    }

    fn users(&self) -> u64 {
        self.armed.get().map_or(u64::MAX, |a| a.users)
    }

    /// A socket opened; `open` is how many are open now (this one included).
    pub fn opened(&self, open: u64) {
        if self.peak.fetch_max(open, Ordering::AcqRel) < open {
            let ms = self
                .armed
                .get()
                .map_or(0, |a| a.t0.elapsed().as_millis() as u64);
            self.peak_at_ms.store(ms, Ordering::Release);
        }
        if open >= self.users() {
            self.begin(open);
        }
    }

    /// A socket that was open closed; `open` is how many remain.
    pub fn closed(&self, open: u64) {
        if let Some(w) = *self.window.borrow() {
            if Instant::now() < w.end {
                self.min_open.fetch_min(open, Ordering::AcqRel);
            }
        }
    }

    /// A user's dial is over (connected or failed); `open` is how many sockets are open now.
    pub fn dial_over(&self, open: u64) {
        if self.dials_over.fetch_add(1, Ordering::AcqRel) + 1 >= self.users() {
            self.begin(open);
        }
    }

    /// The hold begins after this plateau's own users only when `release` says so (a slice).
    pub fn gate(&self) {
        self.gated.store(true, Ordering::Release);
    }

    /// Every dial of this (gated) plateau is over: it waits for `release`.
    pub fn ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Users whose dial is over so far.
    pub fn dials_over(&self) -> u64 {
        self.dials_over.load(Ordering::Acquire)
    }

    /// Begin the hold now, with `open` sockets open (a gated plateau, once every slice is ready).
    pub fn release(&self, open: u64) {
        self.released.store(true, Ordering::Release);
        self.begin(open);
    }

    fn begin(&self, open: u64) {
        let Some(a) = self.armed.get() else { return };
        if self.gated.load(Ordering::Acquire) && !self.released.load(Ordering::Acquire) {
            self.ready.store(true, Ordering::Release);
            return;
        }
        self.window.send_if_modified(|w| {
            if w.is_some() {
                return false;
            }
            let start = Instant::now();
            let end = if self.stopped.load(Ordering::Acquire) {
                start
            } else {
                start + a.hold
            };
            *w = Some(Window {
                start,
                end,
                open_at_start: open,
            });
            self.min_open.fetch_min(open, Ordering::AcqRel);
            true
        });
    }

    /// Stop the run now (SIGINT, a lost SUT link): no more users start, and the hold ends at once.
    pub fn stop(&self, open: u64) {
        self.stopped.store(true, Ordering::Release);
        let now = Instant::now();
        let changed = self.window.send_if_modified(|w| match w {
            Some(w) if w.end > now => {
                w.end = now;
                true
            }
            _ => false,
        });
        if !changed {
            self.release(open);
        }
    }

    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Resolves once the run is stopped (at once if it already was): a login or a dial in flight is
    /// dropped then, not finished into a socket opened after the stop.
    pub async fn until_stopped(&self) {
        // Subscribed before the check: a stop between the two still changes the window.
        let mut rx = self.window.subscribe();
        while !self.stopped() {
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    pub fn window(&self) -> Option<Window> {
        *self.window.borrow()
    }

    pub fn subscribe(&self) -> watch::Receiver<Option<Window>> {
        self.window.subscribe()
    }

    /// The most sockets open at once so far, and when (ms since the run began).
    pub fn peak(&self) -> (u64, u64) {
        (
            self.peak.load(Ordering::Acquire),
            self.peak_at_ms.load(Ordering::Acquire),
        )
    }

    /// The live view for progress lines (None until armed); `logins_ok` None with minted tokens.
    pub fn view(&self, open: u64, logins_ok: Option<u64>) -> Option<RampView> {
        let a = self.armed.get()?;
        let now = Instant::now();
        Some(RampView {
            target: a.users,
            open,
            peak: self.peak().0,
            dials_over: self.dials_over.load(Ordering::Acquire),
            elapsed_s: (now - a.t0).as_secs_f64(),
            ramp_asked_s: a.ramp.as_secs_f64(),
            logins_ok,
            holding_s: self
                .window()
                .map(|w| (now.min(w.end).saturating_duration_since(w.start)).as_secs_f64()),
            hold_s: a.hold.as_secs_f64(),
        })
    }

    /// The run's figures at its end, seconds from `t0`; `ramp_s` and `logins_per_s` come from the
    /// users' outcomes.
    pub fn figures(&self, ramp_s: Option<f64>, logins_per_s: Option<f64>) -> PlateauFigures {
        let a = self.armed.get();
        let t0 = a.map(|a| a.t0);
        let secs = |t: Instant| t0.map_or(0.0, |t0| t.saturating_duration_since(t0).as_secs_f64());
        let w = self.window();
        let (peak, peak_at_ms) = self.peak();
        PlateauFigures {
            target: a.map_or(0, |a| a.users),
            hold_s: a.map_or(0.0, |a| a.hold.as_secs_f64()),
            start_s: w.map(|w| secs(w.start)),
            end_s: w.map(|w| secs(w.end)),
            open_at_start: w.map_or(0, |w| w.open_at_start),
            min_open: self.min_open().unwrap_or(0),
            peak_open: peak,
            peak_at_s: peak_at_ms as f64 / 1000.0,
            ramp_s,
            ramp_asked_s: a.map_or(0.0, |a| a.ramp.as_secs_f64()),
            logins_per_s,
        }
    }

    /// The fewest sockets open during the common hold so far (None before it began).
    pub fn min_open(&self) -> Option<u64> {
        let m = self.min_open.load(Ordering::Acquire);
        (m != u64::MAX && self.window().is_some()).then_some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn armed(users: u64) -> Plateau {
        let p = Plateau::default();
        p.arm(
            users,
            Duration::from_secs(1),
            Duration::from_secs(10),
            Instant::now(),
        );
        p
    }

    #[tokio::test]
    async fn until_stopped_waits_for_a_stop_and_not_for_the_hold() {
        let p = std::sync::Arc::new(armed(2));
        let waiting = tokio::spawn({
            let p = p.clone();
            async move { p.until_stopped().await }
        });
        p.opened(1);
        p.opened(2);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "the hold began: no stop yet");
        p.stop(2);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("a stop ends the wait")
            .unwrap();
        // Already stopped: at once.
        tokio::time::timeout(Duration::from_secs(5), p.until_stopped())
            .await
            .expect("at once");
    }

    #[test]
    fn the_hold_begins_when_the_last_socket_opens() {
        let p = armed(3);
        p.opened(1);
        p.dial_over(1);
        p.opened(2);
        p.dial_over(2);
        assert!(p.window().is_none(), "two of three open: still ramping");
        p.opened(3);
        let w = p.window().expect("the third socket begins the hold");
        assert_eq!(w.open_at_start, 3);
        assert_eq!(w.end - w.start, Duration::from_secs(10));
        // The third user's own dial_over changes nothing.
        p.dial_over(3);
        assert_eq!(p.window(), Some(w));
        assert_eq!(p.peak().0, 3);
        p.closed(2);
        assert_eq!(p.min_open(), Some(2));
    }

    #[test]
    fn a_failed_dial_begins_the_hold_with_what_is_open_and_closes_before_it_do_not_count() {
        let p = armed(3);
        p.opened(1);
        p.dial_over(1);
        p.opened(2);
        p.dial_over(2);
        p.closed(1); // before the hold: not its minimum
        p.dial_over(1); // the third user's login failed
        let w = p.window().expect("every dial is over");
        assert_eq!(w.open_at_start, 1);
        assert_eq!(p.peak().0, 2);
        assert_eq!(p.min_open(), Some(1));
    }

    #[test]
    fn a_gated_plateau_waits_for_its_release() {
        let p = armed(2);
        p.gate();
        p.opened(1);
        p.dial_over(1);
        p.opened(2);
        p.dial_over(2);
        assert!(p.ready() && p.window().is_none(), "ready, not holding");
        assert_eq!(p.dials_over(), 2);
        p.release(2);
        let w = p.window().expect("released");
        assert_eq!(w.open_at_start, 2);
        // A stop of a gated plateau that never began still makes its empty window.
        let q = armed(2);
        q.gate();
        q.stop(0);
        assert!(q.window().is_some());
    }

    #[test]
    fn a_stop_ends_the_hold_now_or_makes_an_empty_one() {
        let p = armed(3);
        p.opened(1);
        p.stop(1);
        let w = p.window().expect("stopped before the hold: an empty one");
        assert_eq!(w.start, w.end);
        assert!(p.stopped());

        let q = armed(1);
        q.opened(1);
        let before = q.window().unwrap();
        q.stop(1);
        let after = q.window().unwrap();
        assert_eq!(after.start, before.start);
        assert!(after.end < before.end);
    }
}
