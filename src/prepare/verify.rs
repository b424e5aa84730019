//! Proof through the stack's front door (Traefik with the stack's Host, or the nginx LB): an account logs
//! in and holds a WebSocket to its project. "Held" means still open a while after the upgrade: the app
//! always answers 101 and refuses with a close code (4001 bad token, 4003 no access) right after.

use anyhow::{bail, Context, Result};
use futures_util::StreamExt;
use serde::Serialize;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

/// How long a socket must stay open to count as held.
pub const HOLD: Duration = Duration::from_millis(500);

#[derive(Debug, Clone)]
pub struct FrontDoor {
    /// `127.0.0.1:PORT`, where the TCP connections go.
    pub addr: String,
    /// Host header (Traefik routes by it), or None to use `addr`.
    pub host: Option<String>,
}

impl FrontDoor {
    fn authority(&self) -> &str {
        self.host.as_deref().unwrap_or(&self.addr)
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Hold {
    Held { ms: u64 },
    Closed { code: u16, reason: String },
    Dropped { detail: String },
}

/// `POST /api/auth/login` through the front door; the access token.
pub async fn login(
    client: &reqwest::Client,
    door: &FrontDoor,
    email: &str,
    password: &str,
) -> Result<String> {
    let mut req = client
        .post(format!("http://{}/api/auth/login", door.addr))
        .json(&serde_json::json!({"email": email, "password": password}));
    if let Some(h) = &door.host {
        req = req.header("Host", h);
    }
    let resp = req
        .send()
        .await
        .with_context(|| format!("login of {email} through {}", door.addr))?;
    let status = resp.status();
    if !status.is_success() {
        let body = resp.text().await.unwrap_or_default();
        bail!(
            "login of {email} through {} answered {status}: {}",
            door.addr,
            body.chars().take(200).collect::<String>()
        );
    }
    let body: serde_json::Value = resp.json().await.context("login answer")?;
    body["access_token"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("login of {email}: no access_token in the answer"))
}

/// Open `/yjs/project-<uuid>?token=` and watch it for `hold`.
pub async fn hold(door: &FrontDoor, uuid: &str, token: &str, hold: Duration) -> Result<Hold> {
    let url = format!("ws://{}/yjs/project-{uuid}?token={token}", door.authority());
    let tcp = tokio::net::TcpStream::connect(&door.addr)
        .await
        .with_context(|| format!("connecting to {}", door.addr))?;
    let (mut ws, _) = tokio_tungstenite::client_async(url, tcp)
        .await
        .with_context(|| format!("WebSocket upgrade through {}", door.addr))?;
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
    client: &reqwest::Client,
    door: &FrontDoor,
    email: &str,
    password: &str,
    uuid: &str,
    role: &str,
) -> Result<Check> {
    let t = Instant::now();
    let token = login(client, door, email, password).await?;
    let login_ms = t.elapsed().as_millis() as u64;
    let socket = hold(door, uuid, &token, HOLD).await?;
    Ok(Check {
        email: email.to_string(),
        project_uuid: uuid.to_string(),
        role: role.to_string(),
        login_ms,
        socket,
    })
}
