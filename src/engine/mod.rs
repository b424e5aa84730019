//! The imperative shell around `plan`: read the stack's objects from the engine, create and remove them,
//! wait for health, read back limits. Nothing here decides what to do.

pub mod apply;
pub mod db_data;
pub use exectl_core::desired;
pub mod limits;
pub mod lock;
pub mod observe;
pub mod preflight;
pub mod probe;
pub mod remote_lock;
pub mod run_lock;
pub mod swarm;
pub mod teardown;
pub mod wait;

/// A `die` event's exit code (its actor's `exitCode` attribute), for whoever follows the engine's events.
pub fn exit_code(actor: &bollard::models::EventActor) -> Option<i64> {
    actor.attributes.as_ref()?.get("exitCode")?.parse().ok()
}
