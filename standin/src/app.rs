//! Boot, in the app's order: wait for the database, create the schema, bootstrap users, connect Redis,
//! then listen for HTTP and WebSocket on one port.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

use crate::auth::Tokens;
use crate::config::{Config, Fault};
use crate::db::Db;
use crate::relay::Relay;
use crate::state::AppState;
use crate::ws::room::Rooms;

/// The app's entrypoint waits up to 60 s for the database.
const DB_WAIT: Duration = Duration::from_secs(60);

/// Bun raises its open-files soft limit; do the same, so thousands of sockets fit.
fn raise_nofile_limit() {
    // SAFETY: getrlimit/setrlimit with a valid pointer to a local struct.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

async fn hash(password: &str) -> Result<String> {
    let password = password.to_string();
    // Cost 10, `$2b$`, as the app's Bun.password.hash.
    Ok(tokio::task::spawn_blocking(move || bcrypt::hash(password, 10)).await??)
}

/// The real image's admin bootstrap (`STANDIN_FAULT=admin-race`): find, then a plain insert with no
/// conflict handling, so two instances booting together onto an empty database both find nothing and
/// the second insert fails; that instance exits 1 (Docker restarts it, and it then finds the admin).
async fn race_admin(cfg: &Config, db: &Db, email: &str, password: &str) -> Result<()> {
    let roles = ["ROLE_USER", "ROLE_ADMIN"];
    if db.user_by_email(email).await?.is_some() {
        return db
            .ensure_user(email, &hash(password).await?, &roles, true)
            .await;
    }
    let hash = hash(password).await?;
    tokio::time::sleep(cfg.admin_race_window).await;
    let roles: Vec<String> = roles.iter().map(|r| r.to_string()).collect();
    crate::routes::store::insert_user(db, email, &hash, &roles)
        .await
        .map(|_| ())
        .map_err(|e| {
            let why = match &e {
                sqlx::Error::Database(d) => d.message().to_string(),
                other => other.to_string(),
            };
            anyhow::anyhow!("[FATAL] Bootstrap failed: {why}")
        })
}

async fn bootstrap_users(cfg: &Config, db: &Db) -> Result<()> {
    if let (Some((email, password)), true) = (&cfg.admin, cfg.fault.has(Fault::AdminRace)) {
        race_admin(cfg, db, email, password).await?;
        tracing::info!("[Bootstrap] admin user {email} ensured (find, then create)");
    } else if let Some((email, password)) = &cfg.admin {
        db.ensure_user(
            email,
            &hash(password).await?,
            &["ROLE_USER", "ROLE_ADMIN"],
            true,
        )
        .await
        .context("bootstrapping ADMIN_EMAIL")?;
        tracing::info!("[Bootstrap] admin user {email} ensured");
    }
    if let Some((email, password)) = &cfg.test_user {
        db.ensure_user(email, &hash(password).await?, &["ROLE_USER"], false)
            .await
            .context("seeding TEST_USER_EMAIL")?;
        tracing::info!("[Bootstrap] test user {email} ensured (APP_ENV=dev)");
    }
    Ok(())
}

async fn bind(port: u16) -> Result<TcpListener> {
    // Dual-stack where IPv6 exists (so `localhost` works either way), else IPv4 only.
    match TcpListener::bind(SocketAddr::from(([0u16; 8], port))).await {
        Ok(l) => Ok(l),
        Err(_) => TcpListener::bind(SocketAddr::from(([0, 0, 0, 0], port)))
            .await
            .with_context(|| format!("listening on port {port}")),
    }
}

pub async fn run(cfg: Config) -> Result<()> {
    raise_nofile_limit();
    let db = Db::connect(&cfg.db, DB_WAIT).await?;
    db.migrate().await?;
    tracing::info!("[DB] {:?} schema ready", cfg.db.dialect);
    bootstrap_users(&cfg, &db).await?;

    let mut relay = None;
    if let Some(rcfg) = &cfg.redis {
        match Relay::connect(rcfg).await {
            Ok(r) => {
                tracing::info!("[Redis] Pub/sub clients connected successfully");
                tracing::info!("[Redis] instanceId {}", r.0.instance_id());
                relay = Some(r);
            }
            Err(e) => {
                tracing::warn!(
                    "[Redis] Failed to connect, falling back to single-instance mode ({e:#})"
                );
            }
        }
    }
    let (relay, incoming) = match relay {
        Some((r, i)) => (Some(r), Some(i)),
        None => (None, None),
    };
    let rooms = Rooms::new(cfg.room_cleanup, relay.clone());
    crate::memory::spawn_trimmer(Arc::clone(&rooms), Duration::from_secs(1));
    if let (Some(relay), Some(incoming)) = (relay, incoming) {
        tokio::spawn(relay.deliver(incoming, Arc::clone(&rooms)));
        tracing::info!("[RoomManager] Cross-instance handler initialized");
    }

    let (shutdown_tx, shutdown) = watch::channel(false);
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let crash_once = crate::crash::CrashOnce::arm(&cfg);
    let state = AppState {
        tokens: Arc::new(Tokens::new(&cfg.jwt_secret)),
        sharing_tokens: Arc::new(Tokens::new(&cfg.sharing_secret)),
        cfg: Arc::new(cfg),
        db,
        rooms,
        bcrypt_slots: Arc::new(Semaphore::new(cores)),
        shutdown,
        crash_once,
        relay_lane: Arc::new(tokio::sync::Mutex::new(())),
    };
    let listener = bind(state.cfg.port).await?;
    tracing::info!(
        "exe-standin listening on {} (fault: {:?})",
        listener.local_addr()?,
        state.cfg.fault
    );

    let app = crate::routes::router(state);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            wait_for_signal().await;
            tracing::info!("shutting down");
            let _ = shutdown_tx.send(true);
            // Give sockets a moment to send their 1001 close frames.
            tokio::time::sleep(Duration::from_millis(300)).await;
        })
        .await
        .context("serving")?;
    Ok(())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
