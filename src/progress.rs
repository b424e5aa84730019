//! What an operation reports while it runs (`Event`) and where it goes (`Progress`): human lines, `--json`
//! events, or nowhere. Below every layer, so that what an operation calls reports through its sink too;
//! `ops` hands them on.

/// Something an operation reports while it runs.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A step of a long operation, for a human ("deploying stack s (ha ×2) on the local engine").
    Step(&'a str),
    /// What happened to one service of the stack during a deploy or teardown.
    Service { service: &'a str, what: &'a str },
    /// How far a counted step is (rows seeded, requests sent).
    Count { done: u64, total: u64 },
    /// Something a human should read and the outcome does not carry (a `note:` or `warning:` line).
    Note(&'a str),
}

/// Where an operation's events go: human lines, `--json` events, or nowhere (`Silent`). Shared by the
/// tasks of one operation, hence `&self` and `Sync`.
pub trait Progress: Sync {
    fn event(&self, event: Event<'_>);
}

/// Every line on stderr: for a process with no other way to say them (a load slice, whose stdout is
/// its messages to the process that started it).
pub struct Stderr;

impl Progress for Stderr {
    fn event(&self, e: Event<'_>) {
        match e {
            Event::Step(line) | Event::Note(line) => eprintln!("{line}"),
            Event::Service { service, what } => eprintln!("  {service}: {what}"),
            Event::Count { .. } => {}
        }
    }
}

/// Reports nothing: for programs that only want the outcome.
pub struct Silent;

impl Progress for Silent {
    fn event(&self, _: Event<'_>) {}
}
