//! The one front door type: where requests go (a base URL and the one socket address every connection
//! dials) and the Host header to send. Load builds it from checked flags (`load::endpoint`), prepare from
//! the stack's record, status from an instance's own address.

use std::net::SocketAddr;

use reqwest::Url;

/// A front door: the base URL (scheme http, host, port, optional base path) and the one socket address
/// every connection dials (resolved once, so 10,000 dials do not mean 10,000 lookups).
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub base: Url,
    pub addr: SocketAddr,
    /// Host header to send instead of the URL's host (a Traefik Host rule reached by IP).
    pub host_header: Option<String>,
}

impl Endpoint {
    /// `http://ADDR/`, sending `host` as the Host header when given. The caller vouches for `addr`
    /// (a stack's recorded front door, or an instance's address on its network).
    pub fn at(addr: SocketAddr, host: Option<String>) -> Endpoint {
        let base =
            Url::parse(&format!("http://{addr}/")).expect("a socket address is a URL authority");
        Endpoint {
            base,
            addr,
            host_header: host,
        }
    }

    /// `base` joined with an absolute API path, e.g. `/api/auth/login`.
    pub fn http(&self, path: &str) -> String {
        format!("{}{path}", self.base.as_str().trim_end_matches('/'))
    }

    /// `ws://HOST[:PORT][BASE_PATH]/yjs/project-<uuid>?token=<jwt>`.
    pub fn yjs(&self, project_uuid: &str, token: &str) -> String {
        let http = self.http(&format!("/yjs/project-{project_uuid}?token={token}"));
        format!("ws{}", http.strip_prefix("http").unwrap_or(&http))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_an_address() {
        let e = Endpoint::at(
            "127.0.0.1:8080".parse().unwrap(),
            Some("exe.localhost".into()),
        );
        assert_eq!(e.http("/healthcheck"), "http://127.0.0.1:8080/healthcheck");
        assert_eq!(e.yjs("u", "t"), "ws://127.0.0.1:8080/yjs/project-u?token=t");
        assert_eq!(e.host_header.as_deref(), Some("exe.localhost"));
        let v6 = Endpoint::at("[::1]:9".parse().unwrap(), None);
        assert_eq!(v6.http("/x"), "http://[::1]:9/x");
    }
}
