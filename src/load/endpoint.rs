//! Where the load goes: the stack's front door or an explicit `--url`, and never anywhere else. A load
//! generator pointed at the wrong host is a denial-of-service tool, so every address is checked against
//! an allow-list: loopback, plus the addresses the caller adds (the deployed stack's target).

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use reqwest::Url;

use crate::error::UsageError;

/// Which addresses load may be sent to.
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    extra: Vec<IpAddr>,
}

impl AllowList {
    /// Loopback only: 127.0.0.0/8, ::1, `localhost`.
    pub fn loopback_only() -> AllowList {
        AllowList::default()
    }

    /// Also allow `ip` (the deployed stack's target address).
    pub fn allow(mut self, ip: IpAddr) -> AllowList {
        self.extra.push(ip);
        self
    }

    pub fn permits(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        ip.is_loopback() || self.extra.contains(&ip)
    }
}

/// A checked front door: the base URL (scheme http, host, port, optional base path) and the one socket
/// address every connection dials (resolved once, so 10,000 dials do not mean 10,000 lookups).
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub base: Url,
    pub addr: SocketAddr,
    /// Host header to send instead of the URL's host (a Traefik Host rule reached by IP).
    pub host_header: Option<String>,
}

impl Endpoint {
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

fn url_error(value: &str, problem: impl Into<String>) -> UsageError {
    UsageError::new(
        "--url",
        value,
        problem,
        "give the stack's front door on loopback, e.g. --url http://127.0.0.1:8080",
    )
}

/// Parse and check `--url` against `allow`. Hostnames other than `localhost` are refused unless they are
/// IP literals on the allow-list: no name resolution can then redirect load elsewhere.
pub fn from_url(value: &str, allow: &AllowList) -> Result<Endpoint, UsageError> {
    let url = Url::parse(value).map_err(|e| url_error(value, format!("not a URL: {e}")))?;
    match url.scheme() {
        "http" => {}
        "https" => return Err(url_error(
            value,
            "TLS front doors are not supported yet (the stack's nginx/Traefik serve plain http)",
        )),
        other => return Err(url_error(value, format!("scheme {other:?} is not http"))),
    }
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(url_error(
            value,
            "a base URL has no query, fragment or credentials",
        ));
    }
    let port = url.port_or_known_default().unwrap_or(80);
    let ip = match url.host() {
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
        Some(url::Host::Domain(d)) if d.eq_ignore_ascii_case("localhost") => {
            // Prefer IPv4, as the app's images listen on 0.0.0.0.
            let addrs: Vec<SocketAddr> = ("localhost", port)
                .to_socket_addrs()
                .map_err(|e| url_error(value, format!("cannot resolve localhost: {e}")))?
                .collect();
            addrs
                .iter()
                .find(|a| a.is_ipv4())
                .or(addrs.first())
                .map(|a| a.ip())
                .ok_or_else(|| url_error(value, "localhost resolves to nothing"))?
        }
        Some(url::Host::Domain(d)) => {
            return Err(url_error(
                value,
                format!("host {d:?} is not loopback: load goes only to loopback or the deployed stack's target"),
            ))
        }
        None => return Err(url_error(value, "no host")),
    };
    if !allow.permits(ip) {
        return Err(url_error(
            value,
            format!(
                "{ip} is not loopback: load goes only to loopback or the deployed stack's target"
            ),
        ));
    }
    Ok(Endpoint {
        base: url,
        addr: SocketAddr::new(ip, port),
        host_header: None,
    })
}

/// `--stack NAME` → the stack's front door, from its recorded deployment (`exectl.lock.json`'s spec): the
/// nginx LB for ha, Traefik with the stack's Host header for single. Pure: the caller reads the file.
/// `target` is where the stack's engine publishes: loopback for the local engine, the SUT's address for
/// a remote one.
pub fn from_stack(
    name: &str,
    lock: Option<&serde_json::Value>,
    target: IpAddr,
) -> Result<Endpoint, UsageError> {
    let spec = lock.map(|l| &l["spec"]).ok_or_else(|| {
        UsageError::new(
            "--stack",
            name,
            "no deployment of it is recorded on this target",
            "deploy it first (exectl deploy ...), or give --url",
        )
    })?;
    let port = |k: &str| spec[k].as_u64().unwrap_or(0);
    let (port, host) = if spec["topology"] == "ha" {
        (port("lb_port"), None)
    } else {
        (port("http_port"), spec["host"].as_str().map(String::from))
    };
    let mut e = from_url(
        &format!("http://{}", SocketAddr::new(target, port as u16)),
        &AllowList::loopback_only().allow(target),
    )?;
    e.host_header = host;
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_allowed() {
        let allow = AllowList::loopback_only();
        for ok in [
            "http://127.0.0.1:8080",
            "http://127.3.4.5",
            "http://[::1]:9/",
            "http://localhost:8090/base/",
        ] {
            let e = from_url(ok, &allow).unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert!(e.addr.ip().is_loopback(), "{ok}");
        }
        let e = from_url("http://127.0.0.1:8080", &allow).unwrap();
        assert_eq!(e.addr.port(), 8080);
        assert_eq!(e.http("/healthcheck"), "http://127.0.0.1:8080/healthcheck");
        assert_eq!(e.yjs("u", "t"), "ws://127.0.0.1:8080/yjs/project-u?token=t");
        let based = from_url("http://127.0.0.1/exe/", &allow).unwrap();
        assert_eq!(
            based.http("/api/auth/login"),
            "http://127.0.0.1/exe/api/auth/login"
        );
        assert_eq!(based.addr.port(), 80);
    }

    #[test]
    fn others_are_refused_naming_url() {
        let allow = AllowList::loopback_only();
        for bad in [
            "http://10.0.0.1:8080",
            "http://example.org",
            "http://[::ffff:10.0.0.1]/",
            "https://127.0.0.1",
            "ftp://127.0.0.1",
            "127.0.0.1:8080",
            "http://127.0.0.1/?x=1",
            "http://0.0.0.0:8080",
        ] {
            let err = from_url(bad, &allow).unwrap_err();
            assert_eq!(err.field, "--url", "{bad}");
        }
        let target: IpAddr = "10.0.0.1".parse().unwrap();
        let allow = AllowList::loopback_only().allow(target);
        assert_eq!(
            from_url("http://10.0.0.1:8090", &allow).unwrap().addr.ip(),
            target
        );
        assert!(from_url("http://10.0.0.2:8090", &allow).is_err());
    }

    #[test]
    fn stack_front_door_from_its_lock() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let err = from_stack("exe", None, lo).unwrap_err();
        assert_eq!(err.field, "--stack");
        let ha = serde_json::json!({"spec": {"topology": "ha", "lb_port": 8090, "http_port": 8080, "host": "x"}});
        let e = from_stack("exe", Some(&ha), lo).unwrap();
        assert_eq!((e.addr.port(), e.host_header), (8090, None));
        // A remote target's stack: its SUT address, allowed because it is the target.
        let sut: IpAddr = "10.199.0.2".parse().unwrap();
        let e = from_stack("exe", Some(&ha), sut).unwrap();
        assert_eq!(e.addr, SocketAddr::new(sut, 8090));
        let single = serde_json::json!({"spec": {"topology": "single", "lb_port": 8090, "http_port": 8080, "host": "exe.localhost"}});
        let e = from_stack("exe", Some(&single), lo).unwrap();
        assert_eq!(
            (e.addr.port(), e.host_header.as_deref()),
            (8080, Some("exe.localhost"))
        );
    }
}
