//! The front door knocked on before any load (`exectl load`, a bench before its level 1): a front door
//! that cannot be reached is no figure to measure.

use std::time::Duration;

use anyhow::Result;
use exectl_core::error::Unreachable;

use super::Endpoint;

/// How long the front door may take to accept a connection, and to answer its /healthcheck.
const DOOR_TIMEOUT: Duration = Duration::from_secs(5);

/// A TCP connect refused, or unanswered within 5 s, is unreachable (exit 3: every user would fail to
/// connect, and a failed connect is no figure), its fix naming `stack` when the front door is one's.
/// Then one GET /healthcheck: when it answers 404 its body, for the caller to say what led to a front
/// door no app answers behind (every login would 404); any other answer (a slow or failing server
/// included) is None: the run's to measure.
pub async fn knock(endpoint: &Endpoint, stack: Option<&str>) -> Result<Option<String>> {
    let addr = endpoint.addr;
    let connect = tokio::time::timeout(DOOR_TIMEOUT, tokio::net::TcpStream::connect(addr)).await;
    let unreachable = |why: String| {
        let fix = match stack {
            Some(s) => format!(
                "check that stack {s} runs (`exectl status --stack {s}`), or deploy it again"
            ),
            None => format!(
                "check the address and port of --url (nothing answers at {addr}), or give --stack \
                 NAME for a stack exectl deployed"
            ),
        };
        anyhow::Error::new(Unreachable {
            what: format!("the front door {} cannot be reached: {why}", endpoint.base),
            fix,
        })
    };
    match connect {
        Err(_) => {
            return Err(unreachable(format!(
                "no TCP connect to {addr} within {} s",
                DOOR_TIMEOUT.as_secs()
            )))
        }
        Ok(Err(e)) => return Err(unreachable(format!("connecting to {addr}: {e}"))),
        // Closed at once: the check below is a connection of its own.
        Ok(Ok(probe)) => drop(probe),
    }
    let http = crate::app::Client::new(1, super::TIMEOUTS);
    let answer = http
        .healthcheck(endpoint)
        .timeout(DOOR_TIMEOUT)
        .answer()
        .await;
    Ok(match answer {
        Ok(a) if a.status == reqwest::StatusCode::NOT_FOUND => Some(match a.body {
            serde_json::Value::String(text) => text,
            other => other.to_string(),
        }),
        _ => None,
    })
}
