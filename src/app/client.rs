//! HTTP to the app: one client builder, one timeout policy, and each route the tools call written once
//! as a `Call` builder, run either `timed` (load: a status and a duration, no parsing) or as an
//! `answer` (status and prepare: the JSON body).

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderValue, CONTENT_TYPE, HOST};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde_json::{json, Value};
use tokio::time::Instant;

use super::Endpoint;

/// The timeout policy: TCP connect (and a WebSocket's connect plus handshake) within `connect`; a login
/// within `login` (bcrypt under a burst is slow: the seed saw 13 s medians); any other request, body
/// included, within `request`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    pub login: Duration,
    pub request: Duration,
}

impl Timeouts {
    /// One bound for everything (status's probes, prepare's calls).
    pub const fn all(d: Duration) -> Timeouts {
        Timeouts {
            connect: d,
            login: d,
            request: d,
        }
    }
}

/// The app's client: a reqwest pool (cheap to clone) and the timeouts every call is bounded by.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    timeouts: Timeouts,
}

/// What a login gave: the access token, and the users.id the answer names.
#[derive(Debug, Clone)]
pub struct Login {
    pub token: String,
    pub user_id: Option<i64>,
}

/// Why a login gave no token.
#[derive(Debug)]
pub enum LoginError {
    /// A non-2xx answer, with the start of its body (at most 200 characters).
    Refused { status: StatusCode, body: String },
    /// 2xx without an access_token.
    NoToken,
    /// No answer (timeout, connect) or an unreadable one.
    Transport(reqwest::Error),
}

impl LoginError {
    /// Load's failure kind: the status ("401"), "timeout", "connect_error", "error" or "no_token".
    pub fn kind(&self) -> String {
        match self {
            LoginError::Refused { status, .. } => status.as_u16().to_string(),
            LoginError::NoToken => "no_token".into(),
            LoginError::Transport(e) => classify(e),
        }
    }
}

impl fmt::Display for LoginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoginError::Refused { status, body } => write!(f, "answered {status}: {body}"),
            LoginError::NoToken => f.write_str("no access_token in the answer"),
            LoginError::Transport(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LoginError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoginError::Transport(e) => Some(e),
            _ => None,
        }
    }
}

/// A reqwest error as a failure kind.
pub fn classify(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        "timeout".into()
    } else if e.is_connect() {
        "connect_error".into()
    } else {
        "error".into()
    }
}

/// The start of a body, for messages.
fn excerpt(text: &str) -> String {
    text.chars().take(200).collect()
}

/// Outcome of a timed call: its status (or "timeout"/"connect_error"/"error") and how long it took.
pub struct HttpResult {
    pub status: String,
    pub ok: bool,
    pub took: Duration,
}

/// A JSON answer (a body that is not JSON is kept as a string).
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
}

impl Answer {
    /// "`what` answered STATUS: BODY…", for an answer the caller refuses.
    pub fn refused(&self, what: &str) -> anyhow::Error {
        anyhow::anyhow!(
            "{what} answered {}: {}",
            self.status,
            excerpt(&self.body.to_string())
        )
    }
}

/// One request, built and bounded, not yet sent.
pub struct Call {
    req: RequestBuilder,
    method: Method,
    path: String,
    ep_addr: std::net::SocketAddr,
}

impl Call {
    /// Another bound than the policy's for this one call (login-burst's probe).
    pub fn timeout(mut self, d: Duration) -> Call {
        self.req = self.req.timeout(d);
        self
    }

    /// Send it; the status and the time to the end of the body (read, so the pooled connection is
    /// reusable). Never parses: load's hot path.
    pub async fn timed(self) -> HttpResult {
        let start = Instant::now();
        let (status, ok) = match self.req.send().await {
            Ok(r) => {
                let s = r.status();
                let body_ok = r.bytes().await.is_ok();
                (s.as_u16().to_string(), s.is_success() && body_ok)
            }
            Err(e) => (classify(&e), false),
        };
        HttpResult {
            status,
            ok,
            took: start.elapsed(),
        }
    }

    /// Send it; the status and the JSON body. Err only when no answer came.
    pub async fn answer(self) -> anyhow::Result<Answer> {
        use anyhow::Context as _;
        let resp =
            self.req.send().await.with_context(|| {
                format!("{} {} through {}", self.method, self.path, self.ep_addr)
            })?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Ok(Answer { status, body })
    }
}

impl Client {
    /// The one builder. `pool`: idle connections kept per host (load: its dials in flight). No proxy:
    /// requests go only to the front door or instance they name.
    pub fn new(pool: usize, timeouts: Timeouts) -> Client {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(pool)
            .pool_idle_timeout(Duration::from_secs(30))
            .tcp_nodelay(true)
            .connect_timeout(timeouts.connect)
            .no_proxy()
            .build()
            .expect("a plain-http client always builds");
        Client { http, timeouts }
    }

    pub fn timeouts(&self) -> Timeouts {
        self.timeouts
    }

    /// `method path` at `ep`, with its Host header and the policy's request bound.
    fn call(&self, ep: &Endpoint, method: Method, path: String, bearer: Option<&str>) -> Call {
        let mut req = self
            .http
            .request(method.clone(), ep.http(&path))
            .timeout(self.timeouts.request);
        if let Some(Ok(h)) = ep.host_header.as_deref().map(HeaderValue::from_str) {
            req = req.header(HOST, h);
        }
        if let Some(t) = bearer {
            req = req.bearer_auth(t);
        }
        Call {
            req,
            method,
            path,
            ep_addr: ep.addr,
        }
    }

    /// `POST /api/auth/login` → the access token (and the user's id).
    pub async fn login(
        &self,
        ep: &Endpoint,
        email: &str,
        password: &str,
    ) -> Result<Login, LoginError> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Id {
            N(i64),
            S(String),
        }
        #[derive(serde::Deserialize)]
        struct User {
            id: Option<Id>,
        }
        #[derive(serde::Deserialize)]
        struct Body {
            access_token: Option<String>,
            user: Option<User>,
        }
        let call = self
            .call(ep, Method::POST, "/api/auth/login".into(), None)
            .timeout(self.timeouts.login);
        let resp = call
            .req
            .json(&json!({"email": email, "password": password}))
            .send()
            .await
            .map_err(LoginError::Transport)?;
        let status = resp.status();
        if !status.is_success() {
            let body = resp.text().await.unwrap_or_default();
            return Err(LoginError::Refused {
                status,
                body: excerpt(&body),
            });
        }
        match resp.json::<Body>().await {
            Ok(Body {
                access_token: Some(token),
                user,
            }) if !token.is_empty() => Ok(Login {
                token,
                user_id: user.and_then(|u| match u.id? {
                    Id::N(n) => Some(n),
                    Id::S(s) => s.trim().parse().ok(),
                }),
            }),
            Ok(_) => Err(LoginError::NoToken),
            Err(e) => Err(LoginError::Transport(e)),
        }
    }

    /// `GET /healthcheck`.
    pub fn healthcheck(&self, ep: &Endpoint) -> Call {
        self.call(ep, Method::GET, "/healthcheck".into(), None)
    }

    /// `GET /nginx_status` on the LB's internal status port (not the app: nginx's stub_status text).
    pub fn nginx_status(&self, ep: &Endpoint) -> Call {
        self.call(ep, Method::GET, "/nginx_status".into(), None)
    }

    /// `GET /health` on the nginx LB: its own answer (`healthy`), not proxied.
    pub fn lb_health(&self, ep: &Endpoint) -> Call {
        self.call(ep, Method::GET, "/health".into(), None)
    }

    /// `GET /api/websocket/info`: one instance's rooms and connections (newer images require an admin).
    pub fn websocket_info(&self, ep: &Endpoint, bearer: Option<&str>) -> Call {
        self.call(ep, Method::GET, "/api/websocket/info".into(), bearer)
    }

    /// `POST /api/v1/users` as the admin: a ROLE_USER account (201, or 409 when the email exists).
    pub fn create_user(&self, ep: &Endpoint, admin: &str, email: &str, password: &str) -> Call {
        let c = self.call(ep, Method::POST, "/api/v1/users".into(), Some(admin));
        let body = json!({"email": email, "password": password, "roles": ["ROLE_USER"]});
        Call {
            req: c.req.json(&body),
            ..c
        }
    }

    /// `GET /api/v1/projects`: the caller's own and shared projects.
    pub fn list_projects(&self, ep: &Endpoint, token: &str) -> Call {
        self.call(ep, Method::GET, "/api/v1/projects".into(), Some(token))
    }

    /// `POST /api/v1/projects` with a title; the app picks the uuid.
    pub fn create_project(&self, ep: &Endpoint, token: &str, title: &str) -> Call {
        let c = self.call(ep, Method::POST, "/api/v1/projects".into(), Some(token));
        Call {
            req: c.req.json(&json!({"title": title})),
            ..c
        }
    }

    /// `POST /api/project/create-quick` with a title (Bearer or cookie): the editor's "new project", a
    /// project and its empty Yjs document → `{success, uuid, projectUuid, projectId, sessionId, ...}`.
    /// It works on builds whose v1 create has the uuid bug (contract §1).
    pub fn create_quick(&self, ep: &Endpoint, token: &str, title: &str) -> Call {
        let c = self.call(
            ep,
            Method::POST,
            "/api/project/create-quick".into(),
            Some(token),
        );
        Call {
            req: c.req.json(&json!({"title": title})),
            ..c
        }
    }

    /// `GET /api/v1/projects/:uuid` (owner or admin only: collaborators get 403).
    pub fn project_metadata(&self, ep: &Endpoint, uuid: &str, token: &str) -> Call {
        self.call(
            ep,
            Method::GET,
            format!("/api/v1/projects/{uuid}"),
            Some(token),
        )
    }

    /// `PATCH /api/projects/uuid/:uuid/visibility` ("public" or "private"; owner only).
    pub fn set_visibility(&self, ep: &Endpoint, token: &str, uuid: &str, visibility: &str) -> Call {
        let c = self.call(
            ep,
            Method::PATCH,
            format!("/api/projects/uuid/{uuid}/visibility"),
            Some(token),
        );
        Call {
            req: c.req.json(&json!({"visibility": visibility})),
            ..c
        }
    }

    /// `POST /api/projects/uuid/:uuid/collaborators` with the member's email (owner only).
    pub fn add_collaborator(&self, ep: &Endpoint, token: &str, uuid: &str, email: &str) -> Call {
        let c = self.call(
            ep,
            Method::POST,
            format!("/api/projects/uuid/{uuid}/collaborators"),
            Some(token),
        );
        Call {
            req: c.req.json(&json!({"email": email})),
            ..c
        }
    }

    /// `POST /api/projects/uuid/:uuid/yjs-document` with a binary Yjs body: the editor's autosave;
    /// `mark_saved` also sets saved_once = 1.
    pub fn save_document(
        &self,
        ep: &Endpoint,
        token: &str,
        uuid: &str,
        body: Vec<u8>,
        mark_saved: bool,
    ) -> Call {
        let query = if mark_saved { "?markSaved=true" } else { "" };
        let c = self.call(
            ep,
            Method::POST,
            format!("/api/projects/uuid/{uuid}/yjs-document{query}"),
            Some(token),
        );
        Call {
            req: c
                .req
                .header(CONTENT_TYPE, "application/octet-stream")
                .body(body),
            ..c
        }
    }
}
