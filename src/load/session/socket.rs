//! One read of a user's socket, sorted (the run's frames counted, the last ping's pong, the end), the
//! pings that keep the liveness rule fed, and the last check at the hold's end.

use std::time::Duration;

use exectl_core::frame;
use exectl_core::load::delivery::Arrival;
use exectl_core::load::liveness::{Liveness, Step};
use futures_util::{FutureExt, SinkExt, StreamExt};
use tokio::time::{sleep_until, Instant};
use tokio_tungstenite::tungstenite::Message;

use super::{Ctx, Ended, UserOutcome};
use crate::app::Ws;
use crate::load::metrics::Live;

/// Milliseconds from `since` to `now`, saturating at u32::MAX (49 days): the liveness rule's clock.
pub(super) fn ms_between(since: Instant, now: Instant) -> u32 {
    now.saturating_duration_since(since)
        .as_millis()
        .min(u32::MAX as u128) as u32
}

/// The payload of the ping at the hold's end: only its own pong answers it.
const FINAL_PING: &[u8] = b"exectl-hold-end";
/// A ping's send: tiny, so only a server that stopped reading blocks it.
const PING_SEND_TIMEOUT: Duration = Duration::from_secs(1);

/// What one read from the socket gave.
pub(super) enum Got {
    Frame,
    /// The server's own ping (tungstenite answers it while we read).
    ServerPing,
    FinalPong,
    End(Ended),
}

/// Count one read: the run's binary frames by kind, and the delivery latency of those delivered.
pub(super) fn got(
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
        Some(Ok(Message::Ping(_))) => Got::ServerPing,
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
pub(super) fn drain_ready(
    ctx: &Ctx,
    ws: &mut Ws,
    out: &mut UserOutcome,
    heard: &mut bool,
) -> Option<Ended> {
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
pub(super) async fn ping(ws: &mut Ws, payload: &'static [u8]) -> Result<(), ()> {
    match tokio::time::timeout(PING_SEND_TIMEOUT, ws.send(Message::Ping(payload.into()))).await {
        Ok(Err(_)) => Err(()),
        _ => Ok(()),
    }
}

/// The hold is over: the server must answer one last ping within the liveness bound, so that a freeze
/// shorter than the stall bound, or a hold shorter than the server's own ping interval, still shows.
/// None when it answered (a close frame is an answer too: the server is alive).
pub(super) async fn final_check(
    ctx: &Ctx,
    ws: &mut Ws,
    out: &mut UserOutcome,
    alive: &mut Liveness,
    connected_at: Instant,
) -> Option<Ended> {
    let bounds = ctx.bounds();
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
                    Got::Frame | Got::ServerPing => alive.heard(now),
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
