//! The pure core: values in, values out. No I/O here — no tokio, bollard, reqwest, ssh2, std::fs,
//! std::net or std::process — so everything below is tested without a daemon (tests/core_is_pure.rs
//! checks the imports).
pub mod manifest;
pub mod record;
