//! The engines' event streams about the stack's containers (start, die, pause, unpause, destroy): each
//! node's subscribed on the sampler's runtime and forwarded into one channel, each event applied to its
//! node's fleet as it comes, and said at once on the progress while a level runs. A stream that ends
//! (the engine or its tunnel went away) is subscribed again at the next tick, from the second of the
//! last event applied.

use bollard::models::EventMessage;
use tokio::sync::mpsc;

use super::node::Node;
use super::{containers, Inner};

/// A stream that ended is subscribed again at a tick at most this often.
pub(super) const RESUBSCRIBE: std::time::Duration = std::time::Duration::from_secs(5);

/// One event of node `node`'s stream `generation` (None: that stream ended).
pub(super) struct NodeEvent {
    pub node: usize,
    pub generation: u64,
    pub event: Option<EventMessage>,
}

impl Node {
    /// Follow the engine's events about the stack's containers (from the second of the last one
    /// applied, so a gap between two subscriptions is replayed) into `tx` as node `index`, then
    /// inspect each container once.
    pub(super) async fn subscribe(
        &mut self,
        index: usize,
        stack: &str,
        tx: mpsc::UnboundedSender<NodeEvent>,
    ) {
        use bollard::query_parameters::EventsOptionsBuilder;
        use futures_util::StreamExt;
        let filters = std::collections::HashMap::from([
            ("type", vec!["container".to_string()]),
            (
                "label",
                vec![format!("{}={stack}", crate::engine::desired::LABEL_STACK)],
            ),
            (
                "event",
                containers::EVENTS.iter().map(|e| e.to_string()).collect(),
            ),
        ]);
        let mut opts = EventsOptionsBuilder::default().filters(&filters);
        if self.last_event.0 > 0 {
            opts = opts.since(&self.last_event.0.to_string());
        }
        let opts = opts.build();
        let docker = self.target.docker.clone();
        self.generation += 1;
        let generation = self.generation;
        tokio::spawn(async move {
            let mut stream = docker.events(Some(opts));
            while let Some(Ok(ev)) = stream.next().await {
                let ev = NodeEvent {
                    node: index,
                    generation,
                    event: Some(ev),
                };
                if tx.send(ev).is_err() {
                    return;
                }
            }
            let _ = tx.send(NodeEvent {
                node: index,
                generation,
                event: None,
            });
        });
        self.subscribed = true;
        self.subscribed_at = Some(tokio::time::Instant::now());
        self.fleet.resync(&self.target.docker).await;
    }
}

impl Inner {
    /// One engine event: the container's new state, said at once on the progress while a level runs.
    pub(super) async fn on_event(&mut self, ev: NodeEvent) {
        let Some(node) = self.nodes.get_mut(ev.node) else {
            return;
        };
        // An older stream's (a reconnect subscribed again): the new one replays what matters.
        if ev.generation != node.generation {
            return;
        }
        let Some(ev) = ev.event else {
            // The stream ended (the engine or its tunnel went away): subscribed again at the next tick.
            node.subscribed = false;
            return;
        };
        let at = (ev.time.unwrap_or(0), ev.time_nano.unwrap_or(0));
        if at.1 > 0 && at.1 <= node.last_event.1 {
            return;
        }
        node.last_event = at;
        let Some(service) = node.fleet.on_event(&node.target.docker, &ev).await else {
            return;
        };
        if let Some(label) = self.level.as_ref().and_then(|l| l.progress.as_ref()) {
            self.link.say(super::Said::Step(format!(
                "[{:>5.0}s] {label}: {}",
                self.t0.elapsed().as_secs_f64(),
                self.incidents_line()
                    .unwrap_or_else(|| format!("{service} running again"))
            )));
        }
    }
}
