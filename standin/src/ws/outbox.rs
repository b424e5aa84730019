//! A socket's unsent frames, counted in bytes as Bun's `ServerWebSocket` counts its buffered amount
//! (contract §2): the app sets no WebSocket options, so each socket may have `backpressureLimit` (16 MiB)
//! waiting. Bun's `send()` (uWS `WebSocket::send`) drops a frame when more than the limit is already
//! waiting — the check comes before the frame, so the frame that crosses the limit is kept — and with
//! `closeOnBackpressureLimit` it then shuts the socket. An empty outbox costs an idle socket nothing
//! more than a channel, so ten thousand idle sockets stay cheap.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use axum::extract::ws::Message;
use tokio::sync::{mpsc, Notify};

/// Bun's default `backpressureLimit`.
pub const DEFAULT_LIMIT: usize = 16 << 20;

/// What a socket may hold unsent (`STANDIN_BACKPRESSURE_LIMIT`, `STANDIN_CLOSE_ON_BACKPRESSURE_LIMIT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backpressure {
    /// Bytes that may wait before a frame is dropped; 0: no limit (as uWS reads 0).
    pub limit: usize,
    /// Close the socket when a frame is dropped (Bun's `closeOnBackpressureLimit`, false by default).
    pub close_on_limit: bool,
}

impl Default for Backpressure {
    fn default() -> Self {
        Backpressure {
            limit: DEFAULT_LIMIT,
            close_on_limit: false,
        }
    }
}

struct Waiting {
    bytes: AtomicUsize,
    /// Told when a frame was dropped and the rule says close.
    over: Notify,
}

/// The room's end: frames queued for one socket, never waiting.
pub struct Outbox {
    tx: mpsc::UnboundedSender<Message>,
    waiting: Arc<Waiting>,
    rule: Backpressure,
}

/// The socket's end: the frames to write, in order.
pub struct Inbox {
    rx: mpsc::UnboundedReceiver<Message>,
    waiting: Arc<Waiting>,
}

pub fn outbox(rule: Backpressure) -> (Outbox, Inbox) {
    let (tx, rx) = mpsc::unbounded_channel();
    let waiting = Arc::new(Waiting {
        bytes: AtomicUsize::new(0),
        over: Notify::new(),
    });
    (
        Outbox {
            tx,
            waiting: Arc::clone(&waiting),
            rule,
        },
        Inbox { rx, waiting },
    )
}

/// The bytes a server frame takes on the wire: its payload and an unmasked header.
pub fn wire_len(msg: &Message) -> usize {
    let payload = match msg {
        Message::Text(t) => t.len(),
        Message::Binary(b) | Message::Ping(b) | Message::Pong(b) => b.len(),
        Message::Close(c) => c.as_ref().map_or(0, |c| 2 + c.reason.len()),
    };
    let extended = match payload {
        0..=125 => 0,
        126..=65535 => 2,
        _ => 8,
    };
    2 + extended + payload
}

impl Outbox {
    /// Queue `msg`, or drop it when more than the limit already waits. Returns whether it was queued.
    pub fn send(&self, msg: Message) -> bool {
        let rule = self.rule;
        if rule.limit > 0 && self.waiting.bytes.load(Ordering::Relaxed) > rule.limit {
            if rule.close_on_limit {
                self.waiting.over.notify_one();
            }
            return false;
        }
        let size = wire_len(&msg);
        self.waiting.bytes.fetch_add(size, Ordering::Relaxed);
        if self.tx.send(msg).is_err() {
            // The socket is gone: nothing waits for it.
            self.waiting.bytes.fetch_sub(size, Ordering::Relaxed);
            return false;
        }
        true
    }
}

impl Inbox {
    /// The next frame to write; None once the room let go of this socket.
    pub async fn recv(&mut self) -> Option<Message> {
        self.rx.recv().await
    }

    #[cfg(test)]
    pub fn try_recv(&mut self) -> Result<Message, mpsc::error::TryRecvError> {
        self.rx.try_recv()
    }

    /// A frame of `size` bytes was written to the socket: it waits no more.
    pub fn written(&self, size: usize) {
        self.waiting.bytes.fetch_sub(size, Ordering::Relaxed);
    }

    /// Resolves once a frame was dropped under `close_on_limit` (owned, so that a `select!` can wait
    /// on it beside `recv`).
    pub fn over_limit(&self) -> impl std::future::Future<Output = ()> + 'static {
        let waiting = Arc::clone(&self.waiting);
        async move { waiting.over.notified().await }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(len: usize) -> Message {
        Message::Binary(vec![0u8; len].into())
    }

    #[test]
    fn frames_are_counted_in_bytes_and_dropped_only_once_more_than_the_limit_waits() {
        let (out, mut inbox) = outbox(Backpressure {
            limit: 1000,
            close_on_limit: false,
        });
        // 4 + 300 bytes each: the fourth crosses the limit and is kept, the fifth is dropped.
        let queued: Vec<bool> = (0..5).map(|_| out.send(frame(300))).collect();
        assert_eq!(queued, [true, true, true, true, false]);
        assert_eq!(inbox.waiting.bytes.load(Ordering::Relaxed), 4 * 304);
        // Written, the bytes no longer wait, and the next frame is queued again.
        for _ in 0..2 {
            let m = inbox.try_recv().unwrap();
            inbox.written(wire_len(&m));
        }
        assert!(out.send(frame(300)));
        // A thousand small frames pass where a count of 64 would have dropped most.
        let (out, _inbox) = outbox(Backpressure::default());
        assert!((0..1000).all(|_| out.send(frame(100))));
    }

    #[tokio::test]
    async fn a_drop_tells_the_socket_to_close_only_when_the_rule_says_so() {
        for close_on_limit in [false, true] {
            let (out, inbox) = outbox(Backpressure {
                limit: 10,
                close_on_limit,
            });
            assert!(out.send(frame(20)));
            assert!(!out.send(frame(20)));
            let told =
                tokio::time::timeout(std::time::Duration::from_millis(50), inbox.over_limit())
                    .await
                    .is_ok();
            assert_eq!(told, close_on_limit);
        }
    }

    #[test]
    fn the_wire_length_has_the_header_of_the_payload_length() {
        assert_eq!(wire_len(&frame(125)), 127);
        assert_eq!(wire_len(&frame(126)), 130);
        assert_eq!(wire_len(&frame(65536)), 65546);
    }
}
