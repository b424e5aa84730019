//! The host script and the link it runs over, as the sampler sees them: each answer is bounded (a link
//! that stopped carrying anything must not stall sampling), and on a remote SUT, when the host script's
//! channel fails, is the link itself down? The engine (its tunnel) is asked too; if it does not answer either, the link is made
//! again once. Made again: said so, and sampling goes on. Not: the link is lost — recorded with when and
//! why, the `on_fatal` callback told, and nothing more is asked of the SUT. The app is never blamed for it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;

use super::node::Node;
use super::{Fatal, Said, Say};
use crate::shell::scripts::sample;
use crate::shell::{HostShell, ShellLoop};

/// How long the engine may take to answer a ping before it counts as down with the host script.
const PING: Duration = Duration::from_secs(5);
/// How long the one attempt to connect again may take.
const RECONNECT: Duration = Duration::from_secs(30);

/// Whether the link was lost, shared with the sampler's handle.
pub struct Link {
    lost: Arc<Mutex<Option<String>>>,
    on_fatal: Option<Fatal>,
    say: Say,
}

impl Link {
    pub fn new(lost: Arc<Mutex<Option<String>>>, on_fatal: Option<Fatal>, say: Say) -> Link {
        Link {
            lost,
            on_fatal,
            say,
        }
    }

    /// A line for people, handed to the bench.
    pub fn say(&self, line: Said) {
        (self.say)(line)
    }

    pub fn is_lost(&self) -> bool {
        self.lost.lock().is_ok_and(|l| l.is_some())
    }

    pub fn lost(&self) -> Option<String> {
        self.lost.lock().ok()?.clone()
    }

    fn lose(&self, what: String) {
        self.say(Said::Note(format!("exectl bench: {what}")));
        if let Ok(mut l) = self.lost.lock() {
            *l = Some(what.clone());
        }
        if let Some(f) = &self.on_fatal {
            f(&what);
        }
    }
}

/// "2026-12-01 21:45:03 UTC".
fn wall_clock() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    crate::engine::lock::format_epoch(now)
}

/// A host script's answer may take this long before the script counts as failed (a link that stopped
/// carrying anything must not stall the sampler).
const HOST_ANSWER: Duration = Duration::from_secs(10);

/// What a message about the link says: the bench's clock and the stack.
pub struct Context<'a> {
    pub t0: tokio::time::Instant,
    pub stack: &'a str,
}

impl Node {
    /// One answer of the host script, opening it first when it is not running. Blocking work, on the
    /// blocking pool; the script comes back with the answer, or is dropped when it failed or did not
    /// answer within `HOST_ANSWER` (its thread is left to end on its own).
    pub(super) async fn ask_host(
        shell: Arc<dyn HostShell>,
        host: Option<Box<dyn ShellLoop>>,
        request: String,
    ) -> (Option<Box<dyn ShellLoop>>, Result<String>) {
        let asked = tokio::task::spawn_blocking(move || {
            let mut host = match host {
                Some(h) => h,
                None => match shell.open_loop(&sample::sample_loop()) {
                    Ok(h) => h,
                    Err(e) => return (None, Err(e)),
                },
            };
            match host.ask(&request) {
                Ok(answer) => (Some(host), Ok(answer)),
                Err(e) => (None, Err(e)),
            }
        });
        match tokio::time::timeout(HOST_ANSWER, asked).await {
            Ok(asked) => asked.unwrap_or_else(|e| (None, Err(e.into()))),
            Err(_) => (
                None,
                Err(anyhow::anyhow!(
                    "the host script did not answer within {} s",
                    HOST_ANSWER.as_secs()
                )),
            ),
        }
    }

    /// The host script failed on a remote target (`host_err`): if the engine does not answer either,
    /// connect again once; the link is lost when that fails too.
    pub(super) async fn check_link(
        &mut self,
        host_err: &anyhow::Error,
        link: &Link,
        context: &Context<'_>,
    ) {
        let engine_err = match tokio::time::timeout(PING, self.target.docker.ping()).await {
            // The engine answers: only the script failed, and it is started again at the next tick.
            Ok(Ok(_)) => return,
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {} s", PING.as_secs()),
        };
        let when = format!(
            "{}, {:.0} s into the bench",
            wall_clock(),
            context.t0.elapsed().as_secs_f64()
        );
        let why = format!("the host script: {host_err:#}; the engine: {engine_err}");
        let on = format!("{} (stack {})", self.describe(), context.stack);
        let spec = self.target.spec.clone();
        let again = tokio::time::timeout(RECONNECT, crate::sut::Target::connect(&spec)).await;
        match again {
            Ok(Ok(target)) => {
                link.say(Said::Note(format!(
                    "exectl bench: {on}: the SSH link failed at {when} ({why}); connected again, sampling goes on"
                )));
                self.target = target;
                // The old link's forwards and subscription went with it.
                for f in &mut self.fleet.list {
                    f.endpoint = None;
                }
                self.subscribed = false;
            }
            Ok(Err(e)) => link.lose(format!(
                "{on}: the SSH link was lost at {when}: {why}; connecting again: {e:#}"
            )),
            Err(_) => link.lose(format!(
                "{on}: the SSH link was lost at {when}: {why}; connecting again: no answer within {} s",
                RECONNECT.as_secs()
            )),
        }
    }
}
