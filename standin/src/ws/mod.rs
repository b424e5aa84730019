//! The Yjs relay socket, `GET /yjs/:docName?token=<jwt>`: always upgrades, then authorises inside the
//! socket (so rejection is a close code, as in the app), joins the room and relays frames.

pub mod message;
pub mod outbox;
pub mod room;

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, State};
use axum::response::Response;
use tokio::time::Instant;

use crate::config::Fault;
use crate::db::Project;
use crate::state::AppState;
use message::Kind;
use outbox::Inbox;

/// The app's limit since newer upstream (Bun's default is 16 MiB).
const MAX_MESSAGE: usize = 8 << 20;

/// The cross-room fault sends every this many Yjs frames (counted per instance) into another room too.
const CROSS_ROOM_EVERY: u64 = 4;

pub async fn upgrade(
    ws: WebSocketUpgrade,
    Path(doc): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    State(st): State<AppState>,
) -> Response {
    let token = query.get("token").filter(|t| !t.is_empty()).cloned();
    // Small buffers: the defaults (128 KiB read buffer) would dominate the memory of idle sockets.
    ws.read_buffer_size(1024)
        .write_buffer_size(0)
        .max_message_size(MAX_MESSAGE)
        .max_frame_size(MAX_MESSAGE)
        .on_upgrade(move |socket| {
            let task = serve(socket, st, doc, token);
            tracing::trace!("socket task: {} bytes", std::mem::size_of_val(&task));
            task
        })
}

/// `project-<uuid>` → the uuid, as `^project-([0-9a-f-]{36})$` (case-insensitive).
pub fn project_uuid(doc: &str) -> Option<&str> {
    let rest = doc
        .get(..8)
        .filter(|p| p.eq_ignore_ascii_case("project-"))
        .map(|_| &doc[8..])?;
    (rest.len() == 36 && rest.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')).then_some(rest)
}

async fn close(mut socket: WebSocket, code: u16, reason: &str) {
    let frame = CloseFrame {
        code,
        reason: reason.into(),
    };
    if socket.send(Message::Close(Some(frame))).await.is_err() {
        return;
    }
    // Wait briefly for the client's reply: dropping the socket with unread input would reset the TCP
    // connection and the client could lose the close frame.
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Some(Ok(m)) = socket.recv().await {
            if matches!(m, Message::Close(_)) {
                break;
            }
        }
    })
    .await;
}

/// Who may join: the checks of the app's `open()`, in its order. Err is the close code and reason.
async fn authorize(
    st: &AppState,
    doc: &str,
    token: Option<&str>,
) -> Result<(String, i32, Project), (u16, &'static str)> {
    let uuid = project_uuid(doc).ok_or((4000, "Invalid document name"))?;
    let token = token.ok_or((4001, "Token required"))?;
    let caller = st.tokens.verify(token).ok_or((4001, "Invalid token"))?;
    let project = match st.db.project_by_uuid(uuid).await {
        Ok(Some(p)) => p,
        Ok(None) => return Err((4003, "PROJECT_NOT_FOUND")),
        Err(e) => {
            tracing::error!("[WebSocket] project lookup failed: {e:#}");
            return Err((1011, "Internal error"));
        }
    };
    if project.status == "inactive" {
        return Err((4003, "PROJECT_INACTIVE"));
    }
    let allowed = project.visibility == "public"
        || project.owner_id == caller.id
        || st
            .db
            .is_collaborator(project.id, caller.id)
            .await
            .unwrap_or(false);
    if !allowed {
        return Err((4003, "ACCESS_DENIED"));
    }
    Ok((uuid.to_string(), caller.id, project))
}

async fn serve(socket: WebSocket, st: AppState, doc: String, token: Option<String>) {
    // Boxed: the database futures are large, and inlined they would stay reserved in every idle
    // socket's task for its whole life (this alone is most of the memory of 10,000 idle sockets).
    let auth = Box::pin(authorize(&st, &doc, token.as_deref())).await;
    drop(token);
    let (uuid, user, project) = match auth {
        Ok(ok) => ok,
        Err((code, reason)) => return Box::pin(close(socket, code, reason)).await,
    };

    let (outbox, inbox) = outbox::outbox(st.cfg.backpressure);
    let (client, count) = st.rooms.join(&doc, &uuid, outbox).await;
    tracing::info!(
        "[WebSocket] client {client} (user {user}) connected to {doc} ({count} in room)"
    );
    if count >= 2 {
        resync(&st, &doc, count, project.saved_once == 0);
    }

    let close_with = relay_loop(socket, &st, &doc, &uuid, client, inbox).await;

    // The seed's leak: the app's delete never matched, so the closed socket stayed in its room.
    if !st.cfg.fault.has(Fault::LeakOnClose) {
        st.rooms.leave(&doc, client);
    }
    tracing::debug!("[WebSocket] client {client} left {doc}");
    if let Some((code, reason, socket)) = close_with {
        Box::pin(close(socket, code, reason)).await;
    }
}

/// Ask every member to resync when someone joins an occupied room (and to push state if never saved).
fn resync(st: &AppState, doc: &str, count: usize, unsaved: bool) {
    let now = crate::db::now_ms();
    let msg = serde_json::json!({
        "type": "trigger-resync", "docName": doc, "reason": "client-joined",
        "clientCount": count, "timestamp": now,
    });
    st.rooms
        .send_local(doc, None, &Message::Text(msg.to_string().into()));
    if unsaved {
        let msg =
            serde_json::json!({"type": "request-sync-state", "docName": doc, "timestamp": now});
        st.rooms
            .send_local(doc, None, &Message::Text(msg.to_string().into()));
    }
}

/// Pump frames until the socket ends. Returns the close code to send, with the socket, when the server
/// is the one closing (heartbeat timeout, shutdown); None when the client went away.
async fn relay_loop(
    mut socket: WebSocket,
    st: &AppState,
    doc: &str,
    uuid: &str,
    client: u64,
    mut inbox: Inbox,
) -> Option<(u16, &'static str, WebSocket)> {
    // No heartbeat at all (`STANDIN_PING_INTERVAL_MS=0`): a server that never pings, and never closes
    // a silent client; its timers then never fire.
    let heartbeat = st.cfg.ping_interval.is_some();
    let interval = st.cfg.ping_interval.unwrap_or(Duration::from_secs(3600));
    let pong_timeout = st.cfg.pong_timeout;
    let mut ping = tokio::time::interval_at(Instant::now() + interval, interval);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let pong_deadline = tokio::time::sleep(pong_timeout);
    tokio::pin!(pong_deadline);
    let mut shutdown = st.shutdown.clone();

    loop {
        let over_limit = inbox.over_limit();
        tokio::select! {
            incoming = socket.recv() => {
                let msg = match incoming {
                    Some(Ok(m)) => m,
                    _ => return None,
                };
                match msg {
                    Message::Binary(data) => {
                        let kind = message::classify_binary(&data);
                        slow_relay(st, doc, kind).await;
                        forward(st, doc, uuid, client, kind, &data, Message::Binary(data.clone()))
                    }
                    Message::Text(text) => {
                        let kind = message::classify_text(&text);
                        slow_relay(st, doc, kind).await;
                        forward(st, doc, uuid, client, kind, text.as_bytes(), Message::Text(text.clone()))
                    }
                    Message::Pong(_) => pong_deadline.as_mut().reset(Instant::now() + pong_timeout),
                    Message::Ping(_) => {} // answered by the WebSocket layer
                    Message::Close(_) => return None,
                }
            }
            Some(out) = inbox.recv() => {
                let size = outbox::wire_len(&out);
                let sent = socket.send(out).await;
                inbox.written(size);
                if sent.is_err() {
                    return None;
                }
            }
            // Bun shuts the socket's reading side and the socket ends with no close frame (1006).
            _ = over_limit => return None,
            _ = ping.tick(), if heartbeat => {
                if socket.send(Message::Ping(Bytes::new())).await.is_err() {
                    return None;
                }
            }
            _ = &mut pong_deadline, if heartbeat => return Some((4008, "Heartbeat timeout", socket)),
            _ = shutdown.changed() => return Some((1001, "Server shutting down", socket)),
        }
    }
}

/// `STANDIN_FAULT=slow-relay`: the frame waits for the one relay lane, then pays its room's size
/// times `relay_cost` on it, before it is delivered.
async fn slow_relay(st: &AppState, doc: &str, kind: Kind) {
    if kind == Kind::Ignored || !st.cfg.fault.has(Fault::SlowRelay) {
        return;
    }
    let _lane = st.relay_lane.lock().await;
    let members = st.rooms.members(doc) as u32;
    tokio::time::sleep(st.cfg.relay_cost * members).await;
}

fn forward(
    st: &AppState,
    doc: &str,
    uuid: &str,
    client: u64,
    kind: Kind,
    raw: &[u8],
    frame: Message,
) {
    if kind == Kind::Ignored {
        return;
    }
    let faults = &st.cfg.fault;
    // The real build's echo: its skip-the-sender comparison never matches, so the sender gets it too.
    let skip = (!faults.has(Fault::EchoToSender)).then_some(client);
    st.rooms.send_local(doc, skip, &frame);
    if let Some(relay) = st.rooms.relay() {
        relay.publish(doc, kind, raw, client, uuid);
    }
    if kind == Kind::Yjs
        && faults.has(Fault::CrossRoom)
        && st
            .rooms
            .count_yjs_relayed()
            .is_multiple_of(CROSS_ROOM_EVERY)
    {
        // Into another of this instance's rooms, and through Redis to that room's members elsewhere.
        if let Some(other) = st.rooms.send_to_another_room(doc, &frame) {
            if let Some(relay) = st.rooms.relay() {
                relay.publish(&other, kind, raw, client, uuid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::project_uuid;

    #[test]
    fn doc_names() {
        let u = "0f8fad5b-d9cb-469f-a165-70867728950e";
        assert_eq!(project_uuid(&format!("project-{u}")), Some(u));
        assert_eq!(
            project_uuid(&format!("PROJECT-{}", u.to_uppercase())).map(str::len),
            Some(36)
        );
        assert_eq!(project_uuid("project-123"), None);
        assert_eq!(project_uuid(&format!("doc-{u}")), None);
        assert_eq!(project_uuid(&format!("project-{u}x")), None);
        assert_eq!(
            project_uuid("pröject-0f8fad5b-d9cb-469f-a165-70867728950e"),
            None
        );
    }
}
