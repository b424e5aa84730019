//! `--reconnect`: a user whose socket dropped before the common hold ended dials again as the real
//! client does (`exectl_core::load::recovery::backoff`: 100 ms, doubling to 2.5 s between tries, the
//! same token), until it is open again or the hold ends; then holds the new socket (`hold`), and again
//! after each drop. Each drop's cause and each return's time go into the user's `UserRecovery`. With
//! `--relogin` a dropped user logs in again first (a failed login waits the backoff as a failed dial
//! does), and dials with the new token.

use std::net::IpAddr;

use exectl_core::load::recovery::backoff;
use tokio::time::{sleep_until, Instant};

use super::hold::hold;
use super::{us, Ctx, Ended, UserOutcome};

/// One user's drops and returns (boxed in its outcome: most users never drop).
#[derive(Debug, Clone, Default)]
pub struct UserRecovery {
    /// Times it left on purpose and came back (`--churn`).
    pub leaves: u32,
    /// Each dial that failed on the way back, by its kind ("connect_refused", "handshake_502", …).
    pub failed_dials: Vec<String>,
    /// `--relogin`: each successful login on the way back, from its request to its answer…
    pub logins_us: Vec<u64>,
    /// …and each failed one, by its kind ("502", "timeout", …).
    pub failed_logins: Vec<String>,
    /// How each of its sockets dropped, in order ("eof_without_close", "closed_1001", "stalled", …).
    pub dropped_by: Vec<String>,
    /// Each return: from its drop to the new socket's upgrade.
    pub back_us: Vec<u64>,
    /// From the run's start: the first drop and the last return.
    pub first_drop_us: Option<u64>,
    pub last_back_us: Option<u64>,
    /// Its last drop was never followed by an open socket before the hold ended.
    pub not_back: bool,
}

/// After `hold` returned: while the user's socket ended early and the hold goes on, dial again and
/// hold again. A user that is not back when the hold ends fails as `not_back`.
pub(super) async fn come_back(
    ctx: &Ctx,
    i: usize,
    token: &str,
    from: Option<IpAddr>,
    out: &mut UserOutcome,
) {
    let opts = &ctx.opts;
    let account = &opts.manifest.accounts[i];
    let mut token = std::borrow::Cow::Borrowed(token);
    while !out.held {
        let Some(ended) = out.ended else { return };
        if ctx.live.plateau.stopped() || hold_over(ctx) {
            // Left just before the end (its close handshake ran past it): it was there all along.
            if ended == Ended::Left && !ctx.live.plateau.stopped() {
                out.held = true;
                out.ended = None;
            }
            return;
        }
        let dropped = Instant::now();
        let rec = out.recovery.get_or_insert_with(Default::default);
        // A user that left (`--churn`) dials again at once; a dropped one after the backoff's wait.
        let left = ended == Ended::Left;
        if left {
            rec.leaves += 1;
        } else {
            rec.dropped_by.push(ended.kind());
            rec.first_drop_us
                .get_or_insert(us(dropped.duration_since(ctx.t0)));
        }
        let mut failed: u32 = 0;
        // `--relogin`: a dropped user logs in again once on each way back (a user that left did not
        // reload its page).
        let mut logged_in = !opts.relogin || left;
        let ws = loop {
            let pause = match (left, failed) {
                (true, 0) => None,
                (true, n) => Some(backoff(n - 1)),
                (false, n) => Some(backoff(n)),
            };
            let waited = match pause {
                Some(p) => wait(ctx, Instant::now() + p).await,
                None => true,
            };
            if !waited {
                rec.not_back = true;
                out.failure = Some("not_back".into());
                return;
            }
            if !logged_in {
                let asked = Instant::now();
                let login = ctx
                    .http
                    .login(&opts.endpoint, &account.email, &account.password);
                tokio::select! {
                    r = login => match r {
                        Ok(l) => {
                            rec.logins_us.push(us(asked.elapsed()));
                            token = l.token.into();
                            logged_in = true;
                        }
                        Err(e) => rec.failed_logins.push(e.kind()),
                    },
                    () = ctx.live.plateau.until_stopped() => {}
                }
                if !logged_in {
                    if ctx.live.plateau.stopped() || hold_over(ctx) {
                        rec.not_back = true;
                        out.failure = Some("not_back".into());
                        return;
                    }
                    failed += 1;
                    continue;
                }
            }
            let dial = ctx
                .http
                .dial_from(&opts.endpoint, from, &account.project_uuid, &token);
            let stopped = ctx.live.plateau.until_stopped();
            tokio::select! {
                r = dial => match r {
                    // Open after the hold's end: not back within it.
                    Ok(_) if hold_over(ctx) => {}
                    Ok(ws) => break ws,
                    Err(kind) => rec.failed_dials.push(kind),
                },
                () = stopped => {}
            }
            if ctx.live.plateau.stopped() || hold_over(ctx) {
                // The hold ended during the first dial of a user that left on purpose: it was there
                // until it chose to leave, its way back merely crossed the end.
                if left && failed == 0 && !ctx.live.plateau.stopped() {
                    out.held = true;
                    out.ended = None;
                } else {
                    rec.not_back = true;
                    out.failure = Some("not_back".into());
                }
                return;
            }
            failed += 1;
        };
        let connected_at = Instant::now();
        if !left {
            rec.back_us.push(us(connected_at - dropped));
            rec.last_back_us = Some(us(connected_at.duration_since(ctx.t0)));
        }
        out.ended = None;
        out.failure = None;
        out.early_end_us = None;
        ctx.live.opened();
        Box::pin(hold(ctx, i, ws, &token, connected_at, out)).await;
    }
}

/// The common hold began and is over.
fn hold_over(ctx: &Ctx) -> bool {
    ctx.live
        .plateau
        .window()
        .is_some_and(|w| Instant::now() >= w.end)
}

/// Sleep until `until`; false when the hold ended or the run stopped first.
async fn wait(ctx: &Ctx, until: Instant) -> bool {
    let mut window = ctx.live.plateau.subscribe();
    loop {
        let end = window.borrow_and_update().map(|w| w.end);
        if end.is_some_and(|e| Instant::now() >= e) || ctx.live.plateau.stopped() {
            return false;
        }
        if Instant::now() >= until {
            return true;
        }
        let wake = end.map_or(until, |e| e.min(until));
        tokio::select! {
            () = sleep_until(wake) => {}
            _ = window.changed() => {}
            () = ctx.live.plateau.until_stopped() => return false,
        }
    }
}
