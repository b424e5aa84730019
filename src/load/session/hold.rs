//! A user's hold: one loop that reads the socket all along, keeps the liveness rule, acts on the
//! scenario's timer and watches the common hold's window, then the last check and the close.

use std::time::Duration;

use exectl_core::load::liveness::{Liveness, Step};
use futures_util::{SinkExt, StreamExt};
use rand::Rng;
use tokio::time::{sleep_until, Instant};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

use super::actions::{
    next_wait, record_action, rest_action, yjs_frame, HttpFuture, Plan, JOIN_SETTLE,
};
use super::socket::{drain_ready, final_check, got, ms_between, ping, Got};
use super::{us, Ctx, Ended, UserOutcome};
use crate::app::Ws;
use crate::load::metrics::Live;
use crate::load::{Scenario, CLOSE_GRACE};

/// Hold the socket until the common hold ends, the server closes or the server stalls; `out` gets
/// how it ended.
pub(super) async fn hold(
    ctx: &Ctx,
    i: usize,
    mut ws: Ws,
    token: &str,
    connected_at: Instant,
    out: &mut UserOutcome,
) {
    let opts = &ctx.opts;
    let account = &opts.manifest.accounts[i];
    let ms = |t: Instant| ms_between(connected_at, t);
    let mut alive = Liveness::default();
    // A reconnected user's frames go on from its last seq: receivers tell them by (sender, seq).
    let mut seq = out.frames_sent as u32;
    let mut pending: Option<HttpFuture> = None;
    let mut window = ctx.live.plateau.subscribe();
    // `--churn`: when this user leaves, drawn again if that falls before the common hold began.
    let life = |mean: Duration| {
        let u: f64 = rand::thread_rng().gen_range(f64::EPSILON..=1.0);
        mean.mul_f64(-u.ln())
    };
    let mut leave_at = opts.churn.map(|mean| connected_at + life(mean));
    let mut plan = match opts.scenario {
        Scenario::Collab => Plan::Barrier { at: Instant::now() },
        Scenario::Editing => Plan::Act {
            at: Instant::now() + next_wait(opts.interval),
            collab: false,
        },
        _ => Plan::Idle,
    };

    let ended: Option<Ended> = loop {
        // Read again each time: once the run has seen the server ping, its cadence is followed.
        let bounds = ctx.bounds();
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
                Got::ServerPing => ctx.server_pinged(alive.server_pinged(ms(Instant::now()))),
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
                    Live::inc(&ctx.live.pings_sent);
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
            _ = sleep_until(leave_at.unwrap_or(connected_at)), if leave_at.is_some() => {
                match (end, opts.churn) {
                    (Some(_), _) => break Some(Ended::Left),
                    (None, Some(mean)) => leave_at = Some(Instant::now() + life(mean)),
                    (None, None) => leave_at = None,
                }
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
        Some(Ended::Left) => {
            out.ended = Some(Ended::Left);
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
            out.failure = Some(e.kind());
        }
    }
    // Read until the close handshake is over (the reply to ours, or tungstenite's reply to theirs).
    let _ = tokio::time::timeout(CLOSE_GRACE, async {
        while let Some(Ok(_)) = ws.next().await {}
    })
    .await;
}
