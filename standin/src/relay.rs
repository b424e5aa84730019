//! Cross-instance relay over Redis pub/sub, as the app's `pubsub-manager.ts`: every relayed frame is
//! published on `exe:yjs:<docName>` in a JSON envelope carrying this process's random instanceId; frames
//! from other instances are delivered to the local members of that room; our own are skipped.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::extract::ws::Message;
use base64::Engine as _;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use crate::config::RedisConfig;
use crate::ws::message::{Kind, ASSET_PREFIX};
use crate::ws::room::Rooms;

pub const CHANNEL_PREFIX: &str = "exe:yjs:";

#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    #[serde(rename = "instanceId")]
    instance_id: String,
    timestamp: i64,
    #[serde(rename = "docName")]
    doc_name: String,
    #[serde(rename = "messageType")]
    message_type: String,
    payload: String,
    #[serde(rename = "clientId", default, skip_serializing_if = "Option::is_none")]
    client_id: Option<String>,
    #[serde(
        rename = "projectUuid",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    project_uuid: Option<String>,
}

enum Command {
    Subscribe(String, oneshot::Sender<()>),
    Unsubscribe(String),
}

/// A cheap handle; the Redis connections live in two background tasks.
#[derive(Clone)]
pub struct Relay {
    instance_id: Arc<str>,
    publish: mpsc::Sender<(String, String)>,
    commands: mpsc::UnboundedSender<Command>,
}

/// Messages arriving from Redis, to be handed to `deliver` once the rooms exist.
pub struct Incoming(redis::aio::PubSubStream);

fn url(cfg: &RedisConfig) -> String {
    let auth = match &cfg.password {
        // Percent-encode everything but unreserved characters, so any password survives the URL.
        Some(p) => {
            let enc: String = p
                .bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                        (b as char).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect();
            format!(":{enc}@")
        }
        None => String::new(),
    };
    format!("redis://{auth}{}:{}/", cfg.host, cfg.port)
}

impl Relay {
    /// Open the pub and sub connections (a few tries, like ioredis' retries, but quicker to give up).
    pub async fn connect(cfg: &RedisConfig) -> Result<(Relay, Incoming)> {
        let client = redis::Client::open(url(cfg)).context("Redis URL")?;
        let mut last = None;
        for attempt in 0..5 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            let connect = async {
                let publisher = client.get_multiplexed_async_connection().await?;
                let pubsub = client.get_async_pubsub().await?;
                Ok::<_, redis::RedisError>((publisher, pubsub))
            };
            match tokio::time::timeout(Duration::from_secs(3), connect).await {
                Ok(Ok((publisher, pubsub))) => return Ok(Relay::start(publisher, pubsub)),
                Ok(Err(e)) => last = Some(anyhow::Error::from(e)),
                Err(_) => last = Some(anyhow::anyhow!("timed out")),
            }
        }
        Err(last.unwrap_or_else(|| anyhow::anyhow!("no attempt")))
    }

    fn start(
        mut publisher: redis::aio::MultiplexedConnection,
        pubsub: redis::aio::PubSub,
    ) -> (Relay, Incoming) {
        let (mut sink, stream) = pubsub.split();
        let (publish, mut publish_rx) = mpsc::channel::<(String, String)>(4096);
        tokio::spawn(async move {
            while let Some((channel, json)) = publish_rx.recv().await {
                let r: redis::RedisResult<i64> = redis::cmd("PUBLISH")
                    .arg(&channel)
                    .arg(&json)
                    .query_async(&mut publisher)
                    .await;
                if let Err(e) = r {
                    tracing::warn!("[Redis] publish on {channel} failed: {e}");
                }
            }
        });
        // One task applies (un)subscriptions in order, so a room dropped and re-created stays subscribed.
        let (commands, mut command_rx) = mpsc::unbounded_channel::<Command>();
        tokio::spawn(async move {
            while let Some(cmd) = command_rx.recv().await {
                match cmd {
                    Command::Subscribe(doc, done) => {
                        if let Err(e) = sink.subscribe(format!("{CHANNEL_PREFIX}{doc}")).await {
                            tracing::warn!("[Redis] subscribe to {doc} failed: {e}");
                        }
                        let _ = done.send(());
                    }
                    Command::Unsubscribe(doc) => {
                        if let Err(e) = sink.unsubscribe(format!("{CHANNEL_PREFIX}{doc}")).await {
                            tracing::warn!("[Redis] unsubscribe from {doc} failed: {e}");
                        }
                    }
                }
            }
        });
        let instance_id: Arc<str> = uuid::Uuid::new_v4().to_string().into();
        (
            Relay {
                instance_id,
                publish,
                commands,
            },
            Incoming(stream),
        )
    }

    pub fn instance_id(&self) -> &str {
        &self.instance_id
    }

    pub async fn subscribe(&self, doc: &str) {
        let (done, wait) = oneshot::channel();
        if self
            .commands
            .send(Command::Subscribe(doc.to_string(), done))
            .is_ok()
        {
            let _ = tokio::time::timeout(Duration::from_secs(5), wait).await;
        }
    }

    pub fn unsubscribe(&self, doc: &str) {
        let _ = self.commands.send(Command::Unsubscribe(doc.to_string()));
    }

    /// Publish one relayed frame; never waits (a saturated Redis drops frames, with a warning).
    pub fn publish(&self, doc: &str, kind: Kind, data: &[u8], client: u64, project_uuid: &str) {
        let env = Envelope {
            instance_id: self.instance_id.to_string(),
            timestamp: crate::db::now_ms(),
            doc_name: doc.to_string(),
            message_type: kind.as_str().to_string(),
            payload: base64::engine::general_purpose::STANDARD.encode(data),
            client_id: Some(client.to_string()),
            project_uuid: Some(project_uuid.to_string()),
        };
        let json = serde_json::to_string(&env).expect("envelope serialises");
        if self
            .publish
            .try_send((format!("{CHANNEL_PREFIX}{doc}"), json))
            .is_err()
        {
            tracing::warn!("[Redis] publish queue full; dropping a frame for {doc}");
        }
    }

    /// Deliver other instances' frames to local room members, until the subscription ends.
    pub async fn deliver(self, incoming: Incoming, rooms: Arc<Rooms>) {
        let mut stream = incoming.0;
        while let Some(msg) = stream.next().await {
            let Ok(text) = msg.get_payload::<String>() else {
                continue;
            };
            let Ok(env) = serde_json::from_str::<Envelope>(&text) else {
                continue;
            };
            if env.instance_id == *self.instance_id {
                continue;
            }
            let Ok(data) = base64::engine::general_purpose::STANDARD.decode(&env.payload) else {
                continue;
            };
            // Asset messages arrived as text unless 0xFF-prefixed; Yjs frames are always binary.
            let frame = if env.message_type == "asset" && data.first() != Some(&ASSET_PREFIX) {
                match String::from_utf8(data) {
                    Ok(s) => Message::Text(s.into()),
                    Err(e) => Message::Binary(e.into_bytes().into()),
                }
            } else {
                Message::Binary(data.into())
            };
            rooms.send_local(&env.doc_name, None, &frame);
        }
        tracing::warn!("[Redis] subscription stream ended");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_encodes_password() {
        let cfg = RedisConfig {
            host: "redis".into(),
            port: 6379,
            password: Some("p@ss word".into()),
        };
        assert_eq!(url(&cfg), "redis://:p%40ss%20word@redis:6379/");
    }
}
