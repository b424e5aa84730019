//! In-process rooms, as the app's `room-manager.ts`: docName → members. Members are keyed by a numeric
//! client id (the upstream leak fix keys on `clientId`), and each holds an outbox counted in bytes as
//! Bun counts a socket's backpressure (`outbox.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::ws::Message;
use serde::Serialize;

use super::outbox::Outbox;
use crate::relay::Relay;

struct Room {
    project_uuid: String,
    members: Vec<(u64, Outbox)>,
    /// Bumped whenever the room empties, so a stale cleanup timer can tell the room was reused.
    generation: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RoomInfo {
    pub name: String,
    pub connections: usize,
    #[serde(rename = "projectUuid")]
    pub project_uuid: String,
}

pub struct Rooms {
    rooms: Mutex<HashMap<String, Room>>,
    next_client: AtomicU64,
    /// Yjs frames relayed so far (the cross-room fault picks every Nth).
    yjs_relayed: AtomicU64,
    cleanup_after: Duration,
    relay: Option<Relay>,
}

impl Rooms {
    pub fn new(cleanup_after: Duration, relay: Option<Relay>) -> Arc<Rooms> {
        Arc::new(Rooms {
            rooms: Mutex::new(HashMap::new()),
            next_client: AtomicU64::new(1),
            yjs_relayed: AtomicU64::new(0),
            cleanup_after,
            relay,
        })
    }

    pub fn relay(&self) -> Option<&Relay> {
        self.relay.as_ref()
    }

    /// Add a member; returns its client id and the room's member count after joining.
    pub async fn join(&self, doc: &str, project_uuid: &str, outbox: Outbox) -> (u64, usize) {
        let id = self.next_client.fetch_add(1, Ordering::Relaxed);
        let (count, created) = {
            let mut rooms = self.rooms.lock().unwrap();
            let created = !rooms.contains_key(doc);
            let room = rooms.entry(doc.to_string()).or_insert_with(|| Room {
                project_uuid: project_uuid.to_string(),
                members: Vec::new(),
                generation: 0,
            });
            room.members.push((id, outbox));
            (room.members.len(), created)
        };
        // Subscribe when the first local client joins, and wait for it: from then on, frames that other
        // instances publish for this room reach this member.
        if created {
            if let Some(relay) = &self.relay {
                relay.subscribe(doc).await;
            }
        }
        (id, count)
    }

    /// Remove a member; an emptied room is dropped after the cleanup delay unless someone rejoins.
    pub fn leave(self: &Arc<Self>, doc: &str, client: u64) {
        let generation = {
            let mut rooms = self.rooms.lock().unwrap();
            let Some(room) = rooms.get_mut(doc) else {
                return;
            };
            room.members.retain(|(id, _)| *id != client);
            if !room.members.is_empty() {
                return;
            }
            room.generation += 1;
            room.generation
        };
        let this = Arc::clone(self);
        let doc = doc.to_string();
        tokio::spawn(async move {
            tokio::time::sleep(this.cleanup_after).await;
            let removed = {
                let mut rooms = this.rooms.lock().unwrap();
                match rooms.get(&doc) {
                    Some(r) if r.members.is_empty() && r.generation == generation => {
                        rooms.remove(&doc);
                        true
                    }
                    _ => false,
                }
            };
            if removed {
                if let Some(relay) = &this.relay {
                    relay.unsubscribe(&doc);
                }
            }
        });
    }

    /// Queue a frame for every local member except `from` (None: from another instance, to all).
    /// Never waits: a member with more than its backpressure limit waiting loses the frame.
    pub fn send_local(&self, doc: &str, from: Option<u64>, msg: &Message) {
        let rooms = self.rooms.lock().unwrap();
        if let Some(room) = rooms.get(doc) {
            for (id, outbox) in &room.members {
                if Some(*id) != from {
                    outbox.send(msg.clone());
                }
            }
        }
    }

    /// Local members of `doc`'s room (0 when it has none).
    pub fn members(&self, doc: &str) -> usize {
        let rooms = self.rooms.lock().unwrap();
        rooms.get(doc).map_or(0, |r| r.members.len())
    }

    /// Count one relayed Yjs frame; returns the count including it (1, 2, …).
    pub fn count_yjs_relayed(&self) -> u64 {
        self.yjs_relayed.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The cross-room fault: queue a frame for every member of another local room (the next one with
    /// members, in name order, after `doc`). Returns that room's name; None when `doc` is the only one.
    pub fn send_to_another_room(&self, doc: &str, msg: &Message) -> Option<String> {
        let rooms = self.rooms.lock().unwrap();
        let mut names: Vec<&String> = rooms
            .iter()
            .filter(|(name, r)| *name != doc && !r.members.is_empty())
            .map(|(name, _)| name)
            .collect();
        names.sort();
        let other = names
            .iter()
            .find(|n| n.as_str() > doc)
            .or(names.first())?
            .to_string();
        for (_, outbox) in &rooms[&other].members {
            outbox.send(msg.clone());
        }
        Some(other)
    }

    /// Sockets that ever joined (a counter, never decreases).
    pub fn joined_total(&self) -> u64 {
        self.next_client.load(Ordering::Relaxed) - 1
    }

    /// (roomsCount, totalConnections) of this instance.
    pub fn counts(&self) -> (usize, usize) {
        let rooms = self.rooms.lock().unwrap();
        (rooms.len(), rooms.values().map(|r| r.members.len()).sum())
    }

    pub fn list(&self) -> Vec<RoomInfo> {
        let rooms = self.rooms.lock().unwrap();
        let mut v: Vec<RoomInfo> = rooms
            .iter()
            .map(|(name, r)| RoomInfo {
                name: name.clone(),
                connections: r.members.len(),
                project_uuid: r.project_uuid.clone(),
            })
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::super::outbox::{outbox, Backpressure};
    use super::*;

    #[tokio::test]
    async fn relay_skips_sender_and_cleanup_drops_room() {
        let rooms = Rooms::new(Duration::from_millis(20), None);
        let (tx1, mut rx1) = outbox(Backpressure::default());
        let (tx2, mut rx2) = outbox(Backpressure::default());
        let (a, n1) = rooms.join("d", "u", tx1).await;
        let (b, n2) = rooms.join("d", "u", tx2).await;
        assert_eq!((n1, n2), (1, 2));
        rooms.send_local("d", Some(a), &Message::Binary(vec![1u8].into()));
        assert!(rx1.try_recv().is_err());
        assert!(matches!(rx2.try_recv(), Ok(Message::Binary(_))));
        assert_eq!(rooms.counts(), (1, 2));
        rooms.leave("d", a);
        rooms.leave("d", b);
        assert_eq!(rooms.counts(), (1, 0));
        for _ in 0..100 {
            if rooms.counts().0 == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(rooms.counts(), (0, 0));
    }

    #[tokio::test]
    async fn another_room_is_the_next_by_name() {
        let rooms = Rooms::new(Duration::from_secs(30), None);
        let (txa, mut rxa) = outbox(Backpressure::default());
        let (txb, mut rxb) = outbox(Backpressure::default());
        rooms.join("a", "u", txa).await;
        assert_eq!(
            rooms.send_to_another_room("a", &Message::Binary(vec![1u8].into())),
            None
        );
        rooms.join("b", "u", txb).await;
        let m = Message::Binary(vec![1u8].into());
        assert_eq!(rooms.send_to_another_room("a", &m).as_deref(), Some("b"));
        assert!(rxb.try_recv().is_ok() && rxa.try_recv().is_err());
        assert_eq!(rooms.send_to_another_room("b", &m).as_deref(), Some("a"));
        assert!(rxa.try_recv().is_ok());
        assert_eq!(
            (rooms.count_yjs_relayed(), rooms.count_yjs_relayed()),
            (1, 2)
        );
    }
}
