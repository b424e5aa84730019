//! exectl's pure core: values in, values out. No I/O here — no tokio, bollard, reqwest, ssh2 in its
//! Cargo.toml, no std::fs, std::net or std::process in its files — so everything below is tested without
//! a daemon (tests/core_is_pure.rs checks the dependency tree and the imports). The `exectl` crate is the
//! shell around it: the engine, SSH, HTTP and files.

pub mod bench;
pub mod campaign;
pub mod capacity;
pub mod checks;
pub mod compose;
pub mod desired;
pub mod doctor;
pub mod error;
pub mod footprint;
pub mod frame;
pub mod load;
pub mod manifest;
pub mod median;
pub mod naming;
pub mod pipeline;
pub mod plan;
pub mod plateau;
pub mod readiness;
pub mod record;
pub mod render;
pub mod scripts;
pub mod seal;
pub mod secrets;
pub mod seed;
pub mod spec;
pub mod spec_settings;
pub mod status;
pub mod swarm;
pub mod sweep;
pub mod traefik;
pub mod units;
