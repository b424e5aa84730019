//! What every handler shares.

use std::sync::Arc;

use tokio::sync::{watch, Semaphore};

use crate::auth::Tokens;
use crate::config::Config;
use crate::db::Db;
use crate::ws::room::Rooms;

#[derive(Clone)]
pub struct AppState {
    pub cfg: Arc<Config>,
    pub db: Db,
    pub tokens: Arc<Tokens>,
    /// What the sharing routes verify with (`Config::sharing_secret`).
    pub sharing_tokens: Arc<Tokens>,
    pub rooms: Arc<Rooms>,
    /// At most one bcrypt verification per core: a login burst queues here (asynchronously) instead of
    /// starting hundreds of CPU-bound threads that would starve the runtime's own threads of CPU.
    pub bcrypt_slots: Arc<Semaphore>,
    /// Flips to true on SIGTERM/SIGINT; sockets then close with 1001.
    pub shutdown: watch::Receiver<bool>,
    /// `STANDIN_FAULT=crash-once`, while this container has not crashed yet.
    pub crash_once: Option<Arc<crate::crash::CrashOnce>>,
    /// `STANDIN_FAULT=slow-relay`: the one lane every relayed frame waits for.
    pub relay_lane: Arc<tokio::sync::Mutex<()>>,
}
