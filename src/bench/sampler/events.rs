//! The engine's event stream about the stack's containers (start, die, pause, unpause, destroy):
//! subscribed on the sampler's runtime, each event applied to the fleet as it comes, and said at once on
//! the progress while a level runs. A stream that ends (the engine or its tunnel went away) is subscribed
//! again at the next tick, from the second of the last event applied.

use bollard::models::EventMessage;
use tokio::sync::mpsc;

use super::{containers, Inner};

/// A stream that ended is subscribed again at a tick at most this often.
pub(super) const RESUBSCRIBE: std::time::Duration = std::time::Duration::from_secs(5);

impl Inner {
    /// Follow the engine's events about the stack's containers (from the second of the last one
    /// applied, so a gap between two subscriptions is replayed), then inspect each container once.
    pub(super) async fn subscribe(&mut self) {
        use bollard::query_parameters::EventsOptionsBuilder;
        use futures_util::StreamExt;
        let filters = std::collections::HashMap::from([
            ("type", vec!["container".to_string()]),
            (
                "label",
                vec![format!(
                    "{}={}",
                    crate::engine::desired::LABEL_STACK,
                    self.stack
                )],
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
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut stream = docker.events(Some(opts));
            while let Some(Ok(ev)) = stream.next().await {
                if tx.send(ev).is_err() {
                    break;
                }
            }
        });
        self.events = Some(rx);
        self.subscribed_at = Some(tokio::time::Instant::now());
        self.fleet.resync(&self.target.docker).await;
    }

    /// One engine event: the container's new state, said at once on the progress while a level runs.
    pub(super) async fn on_event(&mut self, ev: Option<EventMessage>) {
        let Some(ev) = ev else {
            // The stream ended (the engine or its tunnel went away): subscribed again at the next tick.
            self.events = None;
            return;
        };
        let at = (ev.time.unwrap_or(0), ev.time_nano.unwrap_or(0));
        if at.1 > 0 && at.1 <= self.last_event.1 {
            return;
        }
        self.last_event = at;
        let Some(service) = self.fleet.on_event(&self.target.docker, &ev).await else {
            return;
        };
        if let Some(label) = self.level.as_ref().and_then(|l| l.progress.as_ref()) {
            eprintln!(
                "[{:>5.0}s] {label}: {}",
                self.t0.elapsed().as_secs_f64(),
                self.incidents_line()
                    .unwrap_or_else(|| format!("{service} running again"))
            );
        }
    }
}

/// The next engine event (None: the stream ended); never ready while there is no subscription.
pub(super) async fn next_event(
    events: &mut Option<mpsc::UnboundedReceiver<EventMessage>>,
) -> Option<EventMessage> {
    match events {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
