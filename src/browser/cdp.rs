//! The two DevTools calls the probe makes, on the page target's WebSocket: a command is
//! `{id, method, params}`, its answer the message with the same id (events, which have none, are skipped).

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::time::{timeout_at, Instant};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

pub struct Page {
    ws: WebSocketStream<TcpStream>,
    next_id: u64,
}

impl Page {
    /// The first page target's WebSocket (`GET /json/list` on the DevTools port).
    pub async fn connect(port: u16, deadline: Instant) -> Result<Page, String> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|e| format!("no HTTP client: {e}"))?;
        let list_url = format!("http://127.0.0.1:{port}/json/list");
        let url = loop {
            let targets: Vec<Value> = match timeout_at(deadline, async {
                http.get(&list_url).send().await?.json().await
            })
            .await
            {
                Ok(Ok(t)) => t,
                Ok(Err(e)) => return Err(format!("DevTools' target list: {e}")),
                Err(_) => return Err("DevTools' target list: no answer within the timeout".into()),
            };
            let page = targets.iter().find(|t| t["type"] == "page");
            if let Some(u) = page.and_then(|t| t["webSocketDebuggerUrl"].as_str()) {
                break u.to_string();
            }
            if Instant::now() >= deadline {
                return Err("DevTools lists no page within the timeout".into());
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        };
        let dial = async {
            let tcp = TcpStream::connect(("127.0.0.1", port))
                .await
                .map_err(|e| format!("DevTools' socket: {e}"))?;
            tokio_tungstenite::client_async(url.as_str(), tcp)
                .await
                .map_err(|e| format!("DevTools' socket: {e}"))
        };
        match timeout_at(deadline, dial).await {
            Ok(Ok((ws, _))) => Ok(Page { ws, next_id: 0 }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("DevTools' socket: no handshake within the timeout".into()),
        }
    }

    /// Send `method` and wait (until `deadline`) for its answer: the result, or the protocol's error.
    async fn call(
        &mut self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({"id": id, "method": method, "params": params}).to_string();
        let exchange = async {
            self.ws
                .send(Message::Text(msg.into()))
                .await
                .map_err(|e| format!("{method}: {e}"))?;
            while let Some(m) = self.ws.next().await {
                let text = match m {
                    Ok(Message::Text(t)) => t,
                    Ok(Message::Close(_)) => break,
                    Ok(_) => continue,
                    Err(e) => return Err(format!("{method}: {e}")),
                };
                let Ok(v) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                if v["id"].as_u64() != Some(id) {
                    continue;
                }
                if let Some(err) = v.get("error") {
                    // Only the protocol's code and message: never the params (the probe's holds secrets).
                    return Err(format!("{method}: {} {}", err["code"], err["message"]));
                }
                return Ok(v["result"].clone());
            }
            Err(format!("{method}: DevTools closed its socket"))
        };
        timeout_at(deadline, exchange)
            .await
            .unwrap_or_else(|_| Err(format!("{method}: no answer within the timeout")))
    }

    /// Navigate to `url` and wait until the page's document is of `origin`'s (by `deadline`).
    pub async fn open(&mut self, url: &str, origin: &str, deadline: Instant) -> Result<(), String> {
        let r = self
            .call("Page.navigate", json!({"url": url}), deadline)
            .await?;
        if let Some(e) = r["errorText"].as_str().filter(|e| !e.is_empty()) {
            return Err(format!("{url}: {e}"));
        }
        let want = origin_of(origin);
        loop {
            let v = self.evaluate("location.origin", deadline).await?;
            if v.as_str() == Some(want.as_str()) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!("{url}: the page is still at {v} at the timeout"));
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// `Runtime.evaluate` of `expression`, its promise awaited: the value, or why there is none.
    pub async fn evaluate(&mut self, expression: &str, deadline: Instant) -> Result<Value, String> {
        let r = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
                deadline,
            )
            .await?;
        if let Some(ex) = r.get("exceptionDetails") {
            let what = ex["exception"]["description"]
                .as_str()
                .or(ex["text"].as_str())
                .unwrap_or("an exception");
            let first = what.lines().next().unwrap_or(what);
            return Err(format!("the script threw: {first}"));
        }
        Ok(r["result"]["value"].clone())
    }
}

/// `scheme://host[:port]` of a URL, as `location.origin` spells it (a default port dropped).
fn origin_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => u.origin().ascii_serialization(),
        Err(_) => url.trim_end_matches('/').to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn origins_as_the_page_spells_them() {
        assert_eq!(
            super::origin_of("http://t-x.localhost:8080/base"),
            "http://t-x.localhost:8080"
        );
        assert_eq!(super::origin_of("http://127.0.0.1:80"), "http://127.0.0.1");
    }
}
