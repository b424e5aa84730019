//! `status`: the stack observed (services, resources, limits in effect, per-instance sockets and rooms)
//! and assessed; with `expect_idle`, observed again for up to `settle` until the sockets and rooms of
//! earlier clients are gone (the leak check).

use super::Context;
use crate::status::{self, report::Report};
use anyhow::Result;
use std::time::Duration;

#[derive(Debug, Clone, Default)]
pub struct StatusOptions {
    /// Fail while any instance holds a socket or a room (waited for up to `settle`).
    pub expect_idle: bool,
    /// Fail while a service is unhealthy (Docker's healthcheck).
    pub expect_healthy: bool,
    pub settle: Duration,
}

/// One assessment of the stack (the last one, when waiting for it to be idle).
pub async fn status(cx: &Context<'_>, stack: &str, opts: &StatusOptions) -> Result<Report> {
    let target = cx.target;
    let deployed = status::read_deployed(target, stack)?;
    let deadline = tokio::time::Instant::now() + opts.settle;
    loop {
        let r = status::report::assess(
            status::observe_stack(target, stack, &deployed).await?,
            opts.expect_idle,
            opts.expect_healthy,
        );
        if r.verdict != "fail" || !opts.expect_idle || tokio::time::Instant::now() >= deadline {
            return Ok(r);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
