//! The wire: login over HTTP, the WebSocket dial (own TCP connect to the pre-resolved address, then the
//! handshake with small buffers), and the editing scenario's REST calls.

use std::time::Duration;

use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, HOST};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::WebSocketStream;

use super::endpoint::Endpoint;
use super::{CONNECT_TIMEOUT, HTTP_TIMEOUT, LOGIN_TIMEOUT};

pub type Ws = WebSocketStream<TcpStream>;

/// Per-socket buffers sized for idle sockets and 50–450 B frames; they grow for bigger frames. The
/// default 128 KiB read buffer would cost 1.25 GiB at 10,000 sockets.
pub fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(2048)
        .write_buffer_size(0)
        .max_write_buffer_size(1 << 20)
        .max_message_size(Some(8 << 20))
        .max_frame_size(Some(8 << 20))
}

/// One HTTP client for all users: a connection pool sized to the dials in flight.
pub fn http_client(pool: usize) -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(pool)
        .pool_idle_timeout(Duration::from_secs(30))
        .tcp_nodelay(true)
        .connect_timeout(CONNECT_TIMEOUT)
        .no_proxy()
        .build()
        .expect("a plain-http client always builds")
}

fn with_host(req: reqwest::RequestBuilder, ep: &Endpoint) -> reqwest::RequestBuilder {
    match ep.host_header.as_deref().map(HeaderValue::from_str) {
        Some(Ok(h)) => req.header(HOST, h),
        _ => req,
    }
}

/// Why a login did not give a token: an HTTP status ("401"), "timeout", "error", or "no_token".
pub type LoginError = String;

/// `POST /api/auth/login` → the access token.
pub async fn login(
    http: &reqwest::Client,
    ep: &Endpoint,
    email: &str,
    password: &str,
) -> Result<String, LoginError> {
    #[derive(serde::Deserialize)]
    struct Body {
        access_token: Option<String>,
    }
    let req = http
        .post(ep.http("/api/auth/login"))
        .json(&serde_json::json!({"email": email, "password": password}))
        .timeout(LOGIN_TIMEOUT);
    let resp = with_host(req, ep).send().await.map_err(classify)?;
    let status = resp.status();
    if !status.is_success() {
        return Err(status.as_u16().to_string());
    }
    match resp.json::<Body>().await {
        Ok(Body {
            access_token: Some(t),
        }) if !t.is_empty() => Ok(t),
        Ok(_) => Err("no_token".into()),
        Err(e) => Err(classify(e)),
    }
}

fn classify(e: reqwest::Error) -> String {
    if e.is_timeout() {
        "timeout".into()
    } else if e.is_connect() {
        "connect_error".into()
    } else {
        "error".into()
    }
}

/// Why a dial failed: "connect_timeout", "connect_refused", "connect_error", "handshake_<status>",
/// "handshake_error".
pub type DialError = String;

/// TCP connect to the resolved address, then the WebSocket handshake (bounded by CONNECT_TIMEOUT).
pub async fn dial(ep: &Endpoint, project_uuid: &str, token: &str) -> Result<Ws, DialError> {
    let fut = async {
        let tcp = TcpStream::connect(ep.addr).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::ConnectionRefused {
                "connect_refused".to_string()
            } else {
                format!("connect_error_{}", io_kind(&e))
            }
        })?;
        let _ = tcp.set_nodelay(true);
        let mut req = ep
            .yjs(project_uuid, token)
            .into_client_request()
            .map_err(|_| "bad_request".to_string())?;
        if let Some(h) = ep.host_header.as_deref().and_then(|h| h.parse().ok()) {
            req.headers_mut().insert(HOST, h);
        }
        match tokio_tungstenite::client_async_with_config(req, tcp, Some(ws_config())).await {
            Ok((ws, _resp)) => Ok(ws),
            Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
                Err(format!("handshake_{}", resp.status().as_u16()))
            }
            Err(_) => Err("handshake_error".to_string()),
        }
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, fut).await {
        Ok(r) => r,
        Err(_) => Err("connect_timeout".into()),
    }
}

fn io_kind(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EADDRNOTAVAIL) => "eaddrnotavail".into(),
        Some(libc::EMFILE) | Some(libc::ENFILE) => "emfile".into(),
        Some(libc::ECONNRESET) => "reset".into(),
        Some(libc::ETIMEDOUT) => "timeout".into(),
        _ => format!("{:?}", e.kind()).to_lowercase(),
    }
}

/// Outcome of one REST action: its status (or "timeout"/"error") and how long it took.
pub struct HttpResult {
    pub status: String,
    pub ok: bool,
    pub took: Duration,
}

async fn finish(req: reqwest::RequestBuilder, ep: &Endpoint, timeout: Duration) -> HttpResult {
    let start = Instant::now();
    let res = with_host(req.timeout(timeout), ep).send().await;
    let (status, ok) = match res {
        Ok(r) => {
            let s = r.status();
            // Read the body so the pooled connection is reusable.
            let body_ok = r.bytes().await.is_ok();
            (s.as_u16().to_string(), s.is_success() && body_ok)
        }
        Err(e) => (classify(e), false),
    };
    HttpResult {
        status,
        ok,
        took: start.elapsed(),
    }
}

/// `GET /api/v1/projects/:uuid` with Bearer (owner or admin only: collaborators get 403).
pub async fn metadata(
    http: &reqwest::Client,
    ep: &Endpoint,
    uuid: &str,
    token: &str,
) -> HttpResult {
    let req = http
        .get(ep.http(&format!("/api/v1/projects/{uuid}")))
        .header(AUTHORIZATION, format!("Bearer {token}"));
    finish(req, ep, HTTP_TIMEOUT).await
}

/// `POST /api/projects/uuid/:uuid/yjs-document` with a binary body: the editor's autosave.
pub async fn autosave(
    http: &reqwest::Client,
    ep: &Endpoint,
    uuid: &str,
    token: &str,
    body: Vec<u8>,
) -> HttpResult {
    let req = http
        .post(ep.http(&format!("/api/projects/uuid/{uuid}/yjs-document")))
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .header(CONTENT_TYPE, "application/octet-stream")
        .body(body);
    finish(req, ep, HTTP_TIMEOUT).await
}

/// `GET /healthcheck`, for login-burst's probe.
pub async fn healthcheck(http: &reqwest::Client, ep: &Endpoint, timeout: Duration) -> HttpResult {
    finish(http.get(ep.http("/healthcheck")), ep, timeout).await
}
