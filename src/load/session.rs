//! One user's session: token (login or minted), one dial, then the scenario's hold loop, which keeps
//! reading the socket all along (so tungstenite answers the server's pings) until the level's common hold
//! ends (`plateau`: every user's socket stays open from its connect to that one end), the server closes,
//! or the server falls silent past the liveness bound (`liveness`). A socket is held only if it stayed
//! open and alive through the whole common hold and answered a last ping at its end. One attempt, no
//! retries: a failed user is done, and the run goes on without it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::{FutureExt, SinkExt, StreamExt};
use rand::Rng;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{sleep_until, Instant};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use super::delivery::{Arrival, Received};
use super::frame::{self, Stamp};
use super::liveness::{ms_between, Liveness, Step};
use super::manifest::Role;
use super::metrics::{Live, SharedHist, Tally};
use super::{LoadOptions, Scenario, CLOSE_GRACE};
use crate::app::{self, HttpResult, Ws};

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
}

impl Ctx {
    pub fn new(opts: LoadOptions, http: app::Client) -> Ctx {
        let epoch_us0 = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
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
            opts,
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
}

/// Everything measured about one user.
#[derive(Debug, Clone, Default)]
pub struct UserOutcome {
    pub login_us: Option<u64>,
    /// "200", "401", "timeout", …; None with --tokens.
    pub login_status: Option<String>,
    pub connect_us: Option<u64>,
    pub connected: bool,
    /// When the upgrade completed, from the run's start.
    pub connected_at_us: Option<u64>,
    /// When the login answered, from the run's start (None with --tokens).
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
/// soon as the dial is over.
pub async fn run_user(ctx: Arc<Ctx>, i: usize, permit: OwnedSemaphorePermit) -> UserOutcome {
    let mut out = UserOutcome {
        received: Received::new(i as u32, ctx.room_ids[i]),
        ..UserOutcome::default()
    };
    let opts = &ctx.opts;
    let account = &opts.manifest.accounts[i];
    Live::inc(&ctx.live.dialing);

    let token = match &opts.manifest.tokens {
        Some(tokens) => tokens[i].clone(),
        None => {
            let start = Instant::now();
            let login = Box::pin(
                ctx.http
                    .login(&opts.endpoint, &account.email, &account.password),
            );
            let r = tokio::select! {
                r = login => r,
                () = ctx.live.plateau.until_stopped() => return stopped(&ctx, out),
            };
            out.login_us = Some(us(start.elapsed()));
            out.login_done_us = Some(us(ctx.t0.elapsed()));
            match r {
                Ok(login) => {
                    out.login_status = Some("200".into());
                    Live::inc(&ctx.live.logins_ok);
                    login.token
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

    let start = Instant::now();
    let dial = Box::pin(ctx.http.dial(&opts.endpoint, &account.project_uuid, &token));
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
    Box::pin(hold(&ctx, i, ws, &token, connected_at, &mut out)).await;
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

type HttpFuture = Pin<Box<dyn Future<Output = (&'static str, HttpResult)> + Send>>;

/// Where a user's next action timer stands.
enum Plan {
    /// Nothing more to do but hold.
    Idle,
    /// Collab: waiting for the common hold to begin (checked at `at`).
    Barrier { at: Instant },
    /// Send (or act) at `at`; collab only inside the send window.
    Act { at: Instant, collab: bool },
}

impl Plan {
    fn at(&self) -> Option<Instant> {
        match self {
            Plan::Idle => None,
            Plan::Barrier { at } | Plan::Act { at, .. } => Some(*at),
        }
    }
}

/// A wait uniform in [interval/2, 2·interval] (editing's default 10 s gives the seed's 5–20 s).
fn next_wait(interval: Duration) -> Duration {
    let lo = interval.as_secs_f64() / 2.0;
    let hi = (interval.as_secs_f64() * 2.0).max(lo + 1e-6);
    Duration::from_secs_f64(rand::thread_rng().gen_range(lo..hi))
}

/// One of this run's Yjs-like frames from user `i`.
fn yjs_frame(ctx: &Ctx, i: usize, seq: u32) -> Vec<u8> {
    let stamp = Stamp {
        room: ctx.room_ids[i],
        sender: i as u32,
        seq,
        sent_us: ctx.now_us(),
    };
    frame::encode(&mut rand::thread_rng(), ctx.nonce, stamp)
}

/// Editing's REST action: the metadata poll, or the autosave of a 1–16 KiB binary document. It waits
/// for one of the run's HTTP slots first.
fn rest_action(ctx: &Ctx, uuid: &str, token: &str, metadata: bool) -> HttpFuture {
    let (http, ep) = (ctx.http.clone(), ctx.opts.endpoint.clone());
    let (uuid, token) = (uuid.to_string(), token.to_string());
    let slots = Arc::clone(&ctx.http_slots);
    if metadata {
        Box::pin(async move {
            let _slot = slots.acquire_owned().await;
            (
                "metadata",
                http.project_metadata(&ep, &uuid, &token).timed().await,
            )
        })
    } else {
        let body: Vec<u8> = {
            let mut rng = rand::thread_rng();
            let len = rng.gen_range(1024..16 * 1024);
            (0..len).map(|_| rng.gen()).collect()
        };
        Box::pin(async move {
            let _slot = slots.acquire_owned().await;
            (
                "autosave",
                http.save_document(&ep, &token, &uuid, body, false)
                    .timed()
                    .await,
            )
        })
    }
}

/// Count a finished REST action. A collaborator's 403 on the metadata route is the app's rule (owner or
/// admin only), not a failure.
fn record_action(ctx: &Ctx, role: Role, what: &str, r: &HttpResult, out: &mut UserOutcome) {
    Live::inc(&ctx.live.http_requests);
    match what {
        "metadata" => ctx.metadata_ms.record(r.took),
        _ => ctx.autosave_ms.record(r.took),
    }
    ctx.actions.add(format!("{what} {}", r.status));
    let expected_403 = what == "metadata" && r.status == "403" && role == Role::Collaborator;
    if !r.ok && !expected_403 {
        out.http_failures += 1;
    }
}

/// Collab's first frame waits at least this long after every dial is over: the app authorises a socket
/// and joins it to its room only after the 101 (rejections come within about 100 ms, contract §2), and a
/// frame sent before a member is in the room could not reach it, yet would count as lost.
const JOIN_SETTLE: Duration = Duration::from_millis(500);

/// The payload of the ping at the hold's end: only its own pong answers it.
const FINAL_PING: &[u8] = b"exectl-hold-end";
/// A ping's send: tiny, so only a server that stopped reading blocks it.
const PING_SEND_TIMEOUT: Duration = Duration::from_secs(1);

/// What one read from the socket gave.
enum Got {
    Frame,
    FinalPong,
    End(Ended),
}

/// Count one read: the run's binary frames by kind, and the delivery latency of those delivered.
fn got(
    ctx: &Ctx,
    out: &mut UserOutcome,
    msg: Option<Result<Message, tokio_tungstenite::tungstenite::Error>>,
) -> Got {
    match msg {
        Some(Ok(Message::Binary(b))) => {
            if let Some(stamp) = frame::decode(&b, ctx.nonce) {
                out.frames_received += 1;
                out.bytes_received += b.len() as u64;
                Live::inc(&ctx.live.frames_received);
                if out.received.note(&stamp) == Arrival::Delivered {
                    ctx.delivery
                        .record_us(ctx.now_us().saturating_sub(stamp.sent_us));
                }
            }
            Got::Frame
        }
        Some(Ok(Message::Pong(p))) if p.as_ref() == FINAL_PING => Got::FinalPong,
        Some(Ok(Message::Close(f))) => {
            Got::End(Ended::Closed(f.map(|f| u16::from(f.code)).unwrap_or(1005)))
        }
        // Pings are answered by tungstenite while we read; text frames are the app's notices.
        Some(Ok(_)) => Got::Frame,
        Some(Err(_)) => Got::End(Ended::Error),
        None => Got::End(Ended::Eof),
    }
}

/// Before calling a socket stalled, read what already arrived: a client slower than its timers (a
/// generator-bound run) must not blame the server for frames it has not read yet. Some(end) if the
/// socket ended meanwhile; `heard` tells whether anything came.
fn drain_ready(ctx: &Ctx, ws: &mut Ws, out: &mut UserOutcome, heard: &mut bool) -> Option<Ended> {
    while let Some(msg) = ws.next().now_or_never() {
        match got(ctx, out, msg) {
            Got::End(e) => return Some(e),
            _ => *heard = true,
        }
    }
    None
}

/// Send a ping, bounded. Err only when the socket failed; a send still blocked after the bound stays
/// queued in tungstenite and counts as sent (the server's silence is then what decides).
async fn ping(ws: &mut Ws, payload: &'static [u8]) -> Result<(), ()> {
    match tokio::time::timeout(PING_SEND_TIMEOUT, ws.send(Message::Ping(payload.into()))).await {
        Ok(Err(_)) => Err(()),
        _ => Ok(()),
    }
}

/// The hold is over: the server must answer one last ping within the liveness bound, so that a freeze
/// shorter than the stall bound, or a hold shorter than the server's own ping interval, still shows.
/// None when it answered (a close frame is an answer too: the server is alive).
async fn final_check(
    ctx: &Ctx,
    ws: &mut Ws,
    out: &mut UserOutcome,
    alive: &mut Liveness,
    connected_at: Instant,
) -> Option<Ended> {
    let bounds = ctx.opts.liveness;
    let ms = |t: Instant| ms_between(connected_at, t);
    if alive.step(ms(Instant::now()), bounds) == Step::Stalled {
        let mut heard = false;
        if let Some(e) = drain_ready(ctx, ws, out, &mut heard) {
            return Some(e);
        }
        if !heard {
            return Some(Ended::Stalled);
        }
        alive.heard(ms(Instant::now()));
    }
    if ping(ws, FINAL_PING).await.is_err() {
        return Some(Ended::Error);
    }
    let deadline = Instant::now() + Duration::from_millis(bounds.answer_within_ms as u64);
    loop {
        tokio::select! {
            msg = ws.next() => {
                let now = ms(Instant::now());
                match got(ctx, out, msg) {
                    Got::Frame => alive.heard(now),
                    Got::FinalPong | Got::End(Ended::Closed(_)) => {
                        alive.heard(now);
                        return None;
                    }
                    Got::End(e) => return Some(e),
                }
            }
            _ = sleep_until(deadline) => return Some(Ended::Stalled),
        }
    }
}

async fn hold(
    ctx: &Ctx,
    i: usize,
    mut ws: Ws,
    token: &str,
    connected_at: Instant,
    out: &mut UserOutcome,
) {
    let opts = &ctx.opts;
    let account = &opts.manifest.accounts[i];
    let bounds = opts.liveness;
    let ms = |t: Instant| ms_between(connected_at, t);
    let mut alive = Liveness::default();
    let mut seq: u32 = 0;
    let mut pending: Option<HttpFuture> = None;
    let mut window = ctx.live.plateau.subscribe();
    let mut plan = match opts.scenario {
        Scenario::Collab => Plan::Barrier { at: Instant::now() },
        Scenario::Editing => Plan::Act {
            at: Instant::now() + next_wait(opts.interval),
            collab: false,
        },
        _ => Plan::Idle,
    };

    let ended: Option<Ended> = loop {
        let timer = plan.at();
        let check_at = connected_at + Duration::from_millis(alive.next_check_ms(bounds) as u64);
        // One timer for the common hold's end and the liveness check (a timer per socket is most of an
        // idle socket's memory); the window is read again after every wake-up and every change of it.
        let end = window.borrow_and_update().map(|w| w.end);
        if end.is_some_and(|e| Instant::now() >= e) {
            break None;
        }
        let wake = end.map_or(check_at, |e| e.min(check_at));
        // Unbiased: a busy socket must not starve the hold timer or the action timer.
        tokio::select! {
            msg = ws.next() => match got(ctx, out, msg) {
                Got::End(e) => break Some(e),
                _ => alive.heard(ms(Instant::now())),
            },
            // The hold began, or a stop moved its end: the loop reads it again. (The sender lives as long
            // as the run, so this never errs while users hold.)
            _ = window.changed() => {}
            _ = sleep_until(wake) => match alive.step(ms(Instant::now()), bounds) {
                Step::WaitUntil(_) => {}
                Step::Ping => {
                    if ping(&mut ws, b"").await.is_err() {
                        break Some(Ended::Error);
                    }
                    alive.pinged(ms(Instant::now()));
                }
                Step::Stalled => {
                    let mut heard = false;
                    if let Some(e) = drain_ready(ctx, &mut ws, out, &mut heard) {
                        break Some(e);
                    }
                    if !heard {
                        break Some(Ended::Stalled);
                    }
                    alive.heard(ms(Instant::now()));
                }
            },
            (what, r) = async { pending.as_mut().expect("guarded").await }, if pending.is_some() => {
                pending = None;
                record_action(ctx, account.role, what, &r, out);
            }
            _ = sleep_until(timer.unwrap_or(connected_at)), if timer.is_some() => {
                let now = Instant::now();
                plan = match plan {
                    Plan::Barrier { .. } => match ctx.send_window() {
                        Some((_, until)) if now < until => {
                            out.send_window_open = true;
                            let first = (next_wait(opts.interval) / 4).max(JOIN_SETTLE);
                            Plan::Act { at: now + first, collab: true }
                        }
                        Some(_) => Plan::Idle,
                        None => Plan::Barrier { at: now + Duration::from_millis(50) },
                    },
                    Plan::Act { collab: true, .. }
                        if ctx.send_window().is_none_or(|(_, until)| now >= until) => Plan::Idle,
                    Plan::Act { collab, .. } => {
                        let roll = if opts.scenario == Scenario::Editing {
                            rand::thread_rng().gen_range(0..100)
                        } else {
                            0
                        };
                        if roll < 60 {
                            let f = yjs_frame(ctx, i, seq);
                            let len = f.len() as u64;
                            match tokio::time::timeout(Duration::from_secs(5), ws.send(Message::Binary(f.into()))).await {
                                Ok(Ok(())) => {
                                    seq += 1;
                                    out.frames_sent += 1;
                                    out.bytes_sent += len;
                                    Live::inc(&ctx.live.frames_sent);
                                }
                                _ => break Some(Ended::Error),
                            }
                        } else if pending.is_none() {
                            pending = Some(rest_action(ctx, &account.project_uuid, token, roll < 85));
                        }
                        Plan::Act { at: now + next_wait(opts.interval), collab }
                    }
                    Plan::Idle => Plan::Idle,
                };
            }
        }
    };

    let ended = match ended {
        None => Box::pin(final_check(ctx, &mut ws, out, &mut alive, connected_at)).await,
        e => e,
    };
    // Closed for the plateau now: a socket that dropped near the hold's end must lower its count
    // before the REST action in flight and the close handshake (up to CLOSE_GRACE) are waited for.
    ctx.live.closed();
    out.longest_silence_ms = Some(alive.longest_silence_ms(ms(Instant::now())));

    // A REST action still in flight at the end of the hold finishes (bounded by its own timeout).
    if let Some(p) = pending.take() {
        let (what, r) = p.await;
        record_action(ctx, account.role, what, &r, out);
    }

    match ended {
        None => {
            out.held = true;
            let bye = CloseFrame {
                code: CloseCode::Normal,
                reason: "".into(),
            };
            let _ = tokio::time::timeout(CLOSE_GRACE, ws.close(Some(bye))).await;
        }
        Some(Ended::Stalled) => {
            out.ended = Some(Ended::Stalled);
            out.failure = Some("stalled".into());
            Live::inc(&ctx.live.stalled);
            // The server reads nothing: no close handshake to wait for; dropping the socket closes it.
            return;
        }
        Some(e) => {
            out.ended = Some(e);
            out.early_end_us = Some(us(connected_at.elapsed()));
            out.failure = Some(match e {
                Ended::Closed(code) => format!("closed_{code}"),
                Ended::Eof => "eof_without_close".into(),
                Ended::Error | Ended::Stalled => "socket_error".into(),
            });
        }
    }
    // Read until the close handshake is over (the reply to ours, or tungstenite's reply to theirs).
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
}
