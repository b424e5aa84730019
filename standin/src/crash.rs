//! `STANDIN_FAULT=crash-once`: the real image's admin race as Docker sees it (contract §8): an instance
//! that starts, then dies once with the bootstrap's message, and runs normally after Docker restarts it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, Fault};

/// What the real image prints when it loses the admin race, word for word.
pub const FATAL: &str =
    "[FATAL] Bootstrap failed: duplicate key value violates unique constraint \"users_email_key\"";

pub struct CrashOnce {
    marker: PathBuf,
    fired: AtomicBool,
}

impl CrashOnce {
    /// Armed when the fault is on and this container has not crashed yet (no marker file).
    pub fn arm(cfg: &Config) -> Option<Arc<CrashOnce>> {
        if !cfg.fault.has(Fault::CrashOnce) || cfg.crash_marker.exists() {
            return None;
        }
        Some(Arc::new(CrashOnce {
            marker: cfg.crash_marker.clone(),
            fired: AtomicBool::new(false),
        }))
    }

    /// Called as a `/healthcheck` answer leaves: the first time, exit 1 a moment later (the answer has
    /// reached its caller by then, so a readiness probe has seen this instance ready).
    pub fn answered(self: &Arc<Self>) {
        if self.fired.swap(true, Ordering::SeqCst) {
            return;
        }
        // Without the marker the restarted process would crash again: a loop, not a crash once.
        if let Err(e) = std::fs::write(&self.marker, b"crashed once\n") {
            tracing::error!(
                "crash-once: cannot write {} ({e}): not crashing",
                self.marker.display()
            );
            return;
        }
        tokio::spawn(async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            eprintln!("{FATAL}");
            std::process::exit(1);
        });
    }
}
