//! A stack on Docker Swarm, pure: where each service goes (`placement`), and each service as a swarm
//! service (`service`): pinned to its node, endpoint mode dnsrr, the LB's port published in host mode, no
//! VIP and no ingress mesh (shared/swarm.md: the mesh is absent or broken on the SUTs exectl meets, and
//! IPVS drops sockets idle for 900 s, moby#31208).

pub mod placement;
pub mod service;
pub mod stack;

pub use placement::{place, Node, PlaceRule, Placement};
pub use service::{services, ConfigMount, SwarmService};

#[cfg(test)]
mod placement_tests;
#[cfg(test)]
mod service_tests;
