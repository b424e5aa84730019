//! One user's session: token (login or minted), one dial, then the scenario's hold loop, which keeps
//! reading the socket all along (so tungstenite answers the server's pings) until the level's common hold
//! ends (`plateau`: every user's socket stays open from its connect to that one end), the server closes,
//! or the server falls silent past the liveness bound (`exectl_core::load::liveness`). A socket is held
//! only if it stayed open and alive through the whole common hold and answered a last ping at its end.
//! One attempt, no retries: a failed user is done, and the run goes on without it — unless
//! `--reconnect`, where a socket that dropped is dialed again as the real client does (`reconnect`).
//!
//! Here the run's shared context, a user's outcome and its login and dial; `hold` is the hold loop,
//! `socket` what one read or ping of the socket gives, `actions` what a user sends (frames, editing's
//! REST actions) on its timer, `reconnect` a dropped user's way back.

mod actions;
mod hold;
mod reconnect;
mod socket;

pub use reconnect::UserRecovery;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use exectl_core::load::liveness::{Bounds, SERVER_EVERY};

use exectl_core::frame;
use exectl_core::load::delivery::Received;
use rand::Rng;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use super::metrics::{Live, SharedHist, Tally};
use super::LoadOptions;
use crate::app;

/// What the run shares with every user.
pub struct Ctx {
    pub opts: LoadOptions,
    pub http: app::Client,
    /// The run's live counters: the caller's (`LoadOptions::live`, so a bench samples them) or its own.
    pub live: Arc<Live>,
    pub t0: Instant,
    epoch_us0: u64,
    /// Marks this run's frames, so anything else relayed into a room is not counted.
    pub nonce: u32,
    /// Each account's room id, as its frames carry it (`frame::room_id` of its project uuid).
    room_ids: Vec<u64>,
    pub delivery: SharedHist,
    /// Editing's REST actions in flight at most (as many as dials), so the client's open files and
    /// ports stay within what preflight checked even when the server slows down.
    pub http_slots: Arc<Semaphore>,
    pub metadata_ms: SharedHist,
    pub autosave_ms: SharedHist,
    /// Editing actions by "action status", e.g. "metadata 200".
    pub actions: Tally,
    /// The server's own ping cadence as any socket of the run saw it (ms; 0: no server ping yet), and
    /// whether a gap between two of its pings measured it (else the contract's `SERVER_EVERY`).
    server_every_ms: AtomicU32,
    server_measured: AtomicBool,
}

impl Ctx {
    pub fn new(opts: LoadOptions, http: app::Client) -> Ctx {
        let epoch_us0 = crate::clock::unix_us();
        Ctx {
            http,
            live: opts.live.clone().unwrap_or_default(),
            t0: Instant::now(),
            epoch_us0,
            nonce: rand::thread_rng().gen(),
            room_ids: opts
                .manifest
                .accounts
                .iter()
                .map(|a| frame::room_id(&a.project_uuid))
                .collect(),
            delivery: SharedHist::default(),
            http_slots: Arc::new(Semaphore::new(opts.dial_concurrency.max(1))),
            metadata_ms: SharedHist::default(),
            autosave_ms: SharedHist::default(),
            actions: Tally::default(),
            server_every_ms: AtomicU32::new(0),
            server_measured: AtomicBool::new(false),
            opts,
        }
    }

    /// The liveness bounds in force now: the run's, following the server's own pings once seen.
    pub fn bounds(&self) -> Bounds {
        self.opts.liveness.following(self.server_every_ms())
    }

    /// The server's ping cadence as the run knows it (None: it has not pinged).
    pub fn server_every_ms(&self) -> Option<u32> {
        Some(self.server_every_ms.load(Ordering::Relaxed)).filter(|ms| *ms > 0)
    }

    /// The server pinged a socket, `gap` ms after its last ping on it (None: its first). Its cadence is
    /// the shortest gap seen (a ping is late under load, never early); the contract's until one is.
    pub fn server_pinged(&self, gap: Option<u32>) {
        match gap {
            None => {
                let _ = self.server_every_ms.compare_exchange(
                    0,
                    SERVER_EVERY.as_millis() as u32,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
            }
            Some(g) if !self.server_measured.swap(true, Ordering::Relaxed) => {
                self.server_every_ms.store(g, Ordering::Relaxed)
            }
            Some(g) => drop(self.server_every_ms.fetch_min(g, Ordering::Relaxed)),
        }
    }

    /// Wall-clock microseconds, advanced by the monotonic clock (comparable across generators).
    pub fn now_us(&self) -> u64 {
        self.epoch_us0 + self.t0.elapsed().as_micros() as u64
    }

    pub fn started_unix_s(&self) -> u64 {
        self.epoch_us0 / 1_000_000
    }

    /// Collab's send window, once the common hold began: from its start to its end less time for the
    /// last frames to arrive (a stop moves the end, so this is read again before every send).
    fn send_window(&self) -> Option<(Instant, Instant)> {
        let w = self.live.plateau.window()?;
        let drain = (self.opts.hold / 4).clamp(Duration::from_millis(500), Duration::from_secs(2));
        Some((
            w.start,
            w.end.checked_sub(drain).unwrap_or(w.end).max(w.start),
        ))
    }
}

/// How a socket ended before the hold was over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The server sent a close frame with this code (1005 when it had none).
    Closed(u16),
    /// The connection ended without a close frame.
    Eof,
    /// A read or write error.
    Error,
    /// Open, but the server sent nothing for longer than the liveness bound (a frozen server).
    Stalled,
    /// The user left on purpose (`--churn`): the client closed its socket normally.
    Left,
}

impl Ended {
    /// Its failure kind, as the summary counts it: "closed_1001", "eof_without_close", ….
    pub fn kind(self) -> String {
        match self {
            Ended::Closed(code) => format!("closed_{code}"),
            Ended::Eof => "eof_without_close".into(),
            Ended::Error => "socket_error".into(),
            Ended::Stalled => "stalled".into(),
            Ended::Left => "left".into(),
        }
    }
}

/// Everything measured about one user.
#[derive(Debug, Clone, Default)]
pub struct UserOutcome {
    /// How long its login took, when it succeeded.
    pub login_us: Option<u64>,
    /// "200", "401", "timeout", …; None with --tokens.
    pub login_status: Option<String>,
    pub connect_us: Option<u64>,
    pub connected: bool,
    /// When the upgrade completed, from the run's start.
    pub connected_at_us: Option<u64>,
    /// When the login succeeded, from the run's start (None with --tokens or when it failed).
    pub login_done_us: Option<u64>,
    pub held: bool,
    pub ended: Option<Ended>,
    /// From connect to the early end, for sockets that did not last the hold (stalled ones excluded:
    /// their end is when the client gave up, not when the server acted).
    pub early_end_us: Option<u64>,
    /// The longest time the server sent nothing on this socket (ms), for sockets that connected.
    pub longest_silence_ms: Option<u32>,
    /// Why this user failed, if it did at the transport level.
    pub failure: Option<String>,
    pub frames_sent: u64,
    pub bytes_sent: u64,
    /// Every one of this run's frames that arrived, whatever its kind (echoes and strays included).
    pub frames_received: u64,
    pub bytes_received: u64,
    /// What arrived, by kind (delivered, duplicated, echoed, cross-room).
    pub received: Received,
    /// Editing: REST actions that failed (a collaborator's expected 403 on metadata excluded).
    pub http_failures: u64,
    /// Collab: whether the run's send window was open at all.
    pub send_window_open: bool,
    /// The open model: how long it waited past its scheduled start for the in-flight cap (None: it
    /// started on time, or the model is closed).
    pub cap_wait_us: Option<u64>,
    /// `--reconnect`: its drops and returns (None: its socket never dropped, or no reconnect).
    pub recovery: Option<Box<UserRecovery>>,
}

impl UserOutcome {
    /// A user with no outcome of its own: "user_deadline" (still running at the run's hard deadline) or
    /// "interrupted" (never started: the run was stopped).
    pub fn failed(kind: &str) -> UserOutcome {
        UserOutcome {
            failure: Some(kind.into()),
            ..UserOutcome::default()
        }
    }
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

/// Login (or take the minted token), dial, hold. `permit` bounds the dials in flight and is released as
/// soon as the dial is over. `scheduled` (the open model): when the session was due to start; its first
/// step's latency (the login, or the dial with minted tokens) counts from then, so that a server that
/// stalls the starts is not measured only from when they could begin.
pub async fn run_user(
    ctx: Arc<Ctx>,
    i: usize,
    permit: OwnedSemaphorePermit,
    mut scheduled: Option<Instant>,
) -> UserOutcome {
    let mut out = UserOutcome {
        received: Received::new(i as u32, ctx.room_ids[i]),
        ..UserOutcome::default()
    };
    let opts = &ctx.opts;
    let account = &opts.manifest.accounts[i];
    Live::inc(&ctx.live.dialing);

    // A minted token is borrowed from the manifest: a copy per user would be 350 B of every socket.
    let token: std::borrow::Cow<str> = match &opts.manifest.tokens {
        Some(tokens) => tokens[i].as_str().into(),
        None => {
            let start = scheduled.take().unwrap_or_else(Instant::now);
            let login = Box::pin(
                ctx.http
                    .login(&opts.endpoint, &account.email, &account.password),
            );
            let r = tokio::select! {
                r = login => r,
                () = ctx.live.plateau.until_stopped() => return stopped(&ctx, out),
            };
            match r {
                Ok(login) => {
                    // A latency only when it succeeded: a refused connect or a 401 is a failure of its
                    // kind, never a fast login.
                    out.login_us = Some(us(start.elapsed()));
                    out.login_done_us = Some(us(ctx.t0.elapsed()));
                    out.login_status = Some("200".into());
                    Live::inc(&ctx.live.logins_ok);
                    login.token.into()
                }
                Err(e) => {
                    let kind = e.kind();
                    out.failure = Some(format!("login_{kind}"));
                    out.login_status = Some(kind);
                    Live::dec(&ctx.live.dialing);
                    ctx.live.dial_over();
                    return out;
                }
            }
        }
    };
    if !opts.scenario.uses_socket() {
        Live::dec(&ctx.live.dialing);
        ctx.live.dial_over();
        return out;
    }

    let start = scheduled.take().unwrap_or_else(Instant::now);
    let from = exectl_core::load::sources::of_user(&opts.sources, i);
    let dial = Box::pin(
        ctx.http
            .dial_from(&opts.endpoint, from, &account.project_uuid, &token),
    );
    let dialed = tokio::select! {
        r = dial => r,
        () = ctx.live.plateau.until_stopped() => return stopped(&ctx, out),
    };
    Live::dec(&ctx.live.dialing);
    drop(permit);
    let ws = match dialed {
        Ok(ws) => ws,
        Err(e) => {
            out.failure = Some(e);
            ctx.live.dial_over();
            return out;
        }
    };
    let connected_at = Instant::now();
    out.connect_us = Some(us(connected_at - start));
    out.connected = true;
    out.connected_at_us = Some(us(connected_at - ctx.t0));
    Live::inc(&ctx.live.connected);
    // Opened before the dial counts as over: the N-th socket itself begins the common hold.
    ctx.live.opened();
    ctx.live.dial_over();

    // The socket counts as closed inside `hold`, the moment its end is known.
    Box::pin(hold::hold(&ctx, i, ws, &token, connected_at, &mut out)).await;
    if opts.reconnect {
        Box::pin(reconnect::come_back(&ctx, i, &token, from, &mut out)).await;
    }
    if out.held {
        Live::inc(&ctx.live.held);
    }
    out
}

/// The run was stopped (SIGINT, a lost SUT link) while this user logged in or dialed: it ends there.
fn stopped(ctx: &Ctx, mut out: UserOutcome) -> UserOutcome {
    out.failure = Some("interrupted".into());
    Live::dec(&ctx.live.dialing);
    ctx.live.dial_over();
    out
}
