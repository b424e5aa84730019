//! What a user does on its action timer: collab's and editing's Yjs-like frames, and editing's REST
//! actions (the metadata poll, the autosave), counted when they finish.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use exectl_core::frame::{self, Stamp};
use rand::Rng;
use tokio::time::Instant;

use super::{Ctx, UserOutcome};
use crate::app::HttpResult;
use crate::load::manifest::Role;
use crate::load::metrics::Live;

pub(super) type HttpFuture = Pin<Box<dyn Future<Output = (&'static str, HttpResult)> + Send>>;

/// Where a user's next action timer stands.
pub(super) enum Plan {
    /// Nothing more to do but hold.
    Idle,
    /// Collab: waiting for the common hold to begin (checked at `at`).
    Barrier { at: Instant },
    /// Send (or act) at `at`; collab only inside the send window.
    Act { at: Instant, collab: bool },
}

impl Plan {
    pub(super) fn at(&self) -> Option<Instant> {
        match self {
            Plan::Idle => None,
            Plan::Barrier { at } | Plan::Act { at, .. } => Some(*at),
        }
    }
}

/// A wait uniform in [interval/2, 2·interval] (editing's default 10 s gives the seed's 5–20 s).
pub(super) fn next_wait(interval: Duration) -> Duration {
    let lo = interval.as_secs_f64() / 2.0;
    let hi = (interval.as_secs_f64() * 2.0).max(lo + 1e-6);
    Duration::from_secs_f64(rand::thread_rng().gen_range(lo..hi))
}

/// One of this run's Yjs-like frames from user `i`.
pub(super) fn yjs_frame(ctx: &Ctx, i: usize, seq: u32) -> Vec<u8> {
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
pub(super) fn rest_action(ctx: &Ctx, uuid: &str, token: &str, metadata: bool) -> HttpFuture {
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

/// Count a finished REST action, and time it when it succeeded. A collaborator's 403 on the metadata
/// route is the app's rule (owner or admin only), not a failure.
pub(super) fn record_action(
    ctx: &Ctx,
    role: Role,
    what: &str,
    r: &HttpResult,
    out: &mut UserOutcome,
) {
    Live::inc(&ctx.live.http_requests);
    ctx.actions.add(format!("{what} {}", r.status));
    let expected_403 = what == "metadata" && r.status == "403" && role == Role::Collaborator;
    if !r.ok && !expected_403 {
        // Counted by its status above; a failed action is no latency.
        out.http_failures += 1;
        return;
    }
    match what {
        "metadata" => ctx.metadata_ms.record(r.took),
        _ => ctx.autosave_ms.record(r.took),
    }
}

/// Collab's first frame waits at least this long after every dial is over: the app authorises a socket
/// and joins it to its room only after the 101 (rejections come within about 100 ms, contract §2), and a
/// frame sent before a member is in the room could not reach it, yet would count as lost.
pub(super) const JOIN_SETTLE: Duration = Duration::from_millis(500);
