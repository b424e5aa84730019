//! Proof through the stack's front door (Traefik with the stack's Host, or the nginx LB): an account logs
//! in and holds a WebSocket to its project. "Held" means still open a while after the upgrade: the app
//! always answers 101 and refuses with a close code (4001 bad token, 4003 no access) right after.

use crate::app::{Client, Endpoint, LoginError, Timeouts};
use anyhow::{bail, Result};
use futures_util::StreamExt;
use serde::Serialize;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

/// How long a socket must stay open to count as held.
pub const HOLD: Duration = Duration::from_millis(500);

/// The timeout policy of prepare's checks.
pub const TIMEOUTS: Timeouts = Timeouts::all(Duration::from_secs(30));

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Hold {
    Held { ms: u64 },
    Closed { code: u16, reason: String },
    Dropped { detail: String },
}

/// Log in through the front door; the access token. The error names the account and the door.
pub async fn login(
    client: &Client,
    door: &Endpoint,
    email: &str,
    password: &str,
) -> Result<String> {
    match client.login(door, email, password).await {
        Ok(l) => Ok(l.token),
        Err(e @ LoginError::Transport(_)) => {
            Err(anyhow::Error::new(e).context(format!("login of {email} through {}", door.addr)))
        }
        Err(e @ LoginError::Refused { .. }) => bail!("login of {email} through {} {e}", door.addr),
        Err(e @ LoginError::NoToken) => bail!("login of {email}: {e}"),
    }
}

/// Open `/yjs/project-<uuid>?token=` and watch it for `hold`.
pub async fn hold(
    client: &Client,
    door: &Endpoint,
    uuid: &str,
    token: &str,
    hold: Duration,
) -> Result<Hold> {
    let mut ws = client.dial(door, uuid, token).await.map_err(|kind| {
        anyhow::anyhow!("WebSocket to project {uuid} through {}: {kind}", door.addr)
    })?;
    let opened = Instant::now();
    let deadline = tokio::time::Instant::now() + hold;
    let verdict = loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Err(_) => {
                break Hold::Held {
                    ms: opened.elapsed().as_millis() as u64,
                }
            }
            Ok(Some(Ok(Message::Close(frame)))) => {
                break match frame {
                    Some(f) => Hold::Closed {
                        code: f.code.into(),
                        reason: f.reason.to_string(),
                    },
                    None => Hold::Closed {
                        code: 1005,
                        reason: String::new(),
                    },
                }
            }
            // Text (trigger-resync), binary updates, pings (answered by the library): still open.
            Ok(Some(Ok(_))) => continue,
            Ok(Some(Err(e))) => {
                break Hold::Dropped {
                    detail: e.to_string(),
                }
            }
            Ok(None) => {
                break Hold::Dropped {
                    detail: "connection ended without a close frame".into(),
                }
            }
        }
    };
    let _ = ws.close(None).await;
    Ok(verdict)
}

/// One account's check: login, then hold its project's socket.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub email: String,
    pub project_uuid: String,
    pub role: String,
    pub login_ms: u64,
    pub socket: Hold,
}

impl Check {
    pub fn ok(&self) -> bool {
        matches!(self.socket, Hold::Held { .. })
    }
}

pub async fn check(
    client: &Client,
    door: &Endpoint,
    email: &str,
    password: &str,
    uuid: &str,
    role: &str,
) -> Result<Check> {
    let t = Instant::now();
    let token = login(client, door, email, password).await?;
    let login_ms = t.elapsed().as_millis() as u64;
    let socket = hold(client, door, uuid, &token, HOLD).await?;
    Ok(Check {
        email: email.to_string(),
        project_uuid: uuid.to_string(),
        role: role.to_string(),
        login_ms,
        socket,
    })
}
