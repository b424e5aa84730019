//! The app's client: every request exectl sends to eXeLearning (or the stand-in) goes through here —
//! login, the WebSocket dial, `/api/websocket/info`, the admin user and project calls, and load's
//! editing actions. One reqwest client builder and one timeout policy (`Timeouts`); status, prepare
//! (verify and `--via api`) and load all use it. Contract: ../shared/contract/exelearning.md §1–2.

pub mod client;
pub mod endpoint;
pub mod ws;

pub use client::{Answer, Call, Client, HttpResult, Login, LoginError, Timeouts};
pub use endpoint::Endpoint;
pub use ws::{DialError, Ws};
