//! Where the load goes: the stack's front door or an explicit `--url`, and never anywhere else. A load
//! generator pointed at the wrong host is a denial-of-service tool, so every address is checked against
//! an allow-list: loopback, plus the addresses the caller adds (the deployed stack's target). A single
//! stack's Traefik routes by Host, so the endpoint carries the Host header to send: the stack's `host`
//! with `--stack`, the name of a `*.localhost` URL, or `--host-header`.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use reqwest::Url;

use exectl_core::error::UsageError;
use exectl_core::record::StackRecord;

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

/// The one front door type, checked here before load may use it.
pub use crate::app::Endpoint;

/// The fix for a missing or refused front door: forms that reach both topologies' front doors.
pub const FRONT_DOOR_FIX: &str =
    "give --stack NAME, or the front door on loopback: --url http://127.0.0.1:8090 for an ha \
stack's nginx, --url http://NAME.localhost:8080 for a single stack's Traefik (it routes by Host)";

fn url_error(value: &str, problem: impl Into<String>) -> UsageError {
    UsageError::new("--url", value, problem, FRONT_DOOR_FIX)
}

/// `localhost` or a name under it: loopback by definition (RFC 6761), never looked up.
fn is_localhost_name(d: &str) -> bool {
    let d = d.to_ascii_lowercase();
    d == "localhost" || (d.ends_with(".localhost") && valid_host_name(&d))
}

/// A DNS name as a Host header: labels of letters, digits and '-', dot-separated, at most 253 bytes.
pub fn valid_host_name(d: &str) -> bool {
    !d.is_empty()
        && d.len() <= 253
        && d.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

/// `--host-header NAME`: the Host to send instead of the URL's (a Host-routed front door reached by
/// address, e.g. a remote single stack's Traefik).
pub fn with_host_header(mut e: Endpoint, value: &str) -> Result<Endpoint, UsageError> {
    if !valid_host_name(value) {
        return Err(UsageError::new(
            "--host-header",
            value,
            "not a host name (letters, digits, '-' and '.', no port)",
            "give the Host the front door routes, e.g. --host-header exe.localhost",
        ));
    }
    e.host_header = Some(value.to_ascii_lowercase());
    Ok(e)
}

/// Parse and check `--url` against `allow`. Host names are refused unless they are `localhost` or under
/// it (dialled on 127.0.0.1, sending the name as Host) or IP literals on the allow-list: no name
/// resolution can then redirect load elsewhere.
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
    let mut url = url;
    let mut host_header = None;
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
        Some(url::Host::Domain(d)) if is_localhost_name(d) => {
            // No resolver knows NAME.localhost: dial loopback, and send the name (Traefik's Host rule).
            host_header = Some(d.to_ascii_lowercase());
            IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
        }
        Some(url::Host::Domain(d)) => {
            return Err(url_error(
                value,
                format!("host {d:?} is not loopback: load goes only to loopback (localhost, *.localhost) or the deployed stack's target"),
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
    if host_header.is_some() {
        // Every request dials `addr`; the base then names it too, so nothing resolves the name.
        let _ = url.set_ip_host(ip);
    }
    Ok(Endpoint {
        base: url,
        addr: SocketAddr::new(ip, port),
        host_header,
    })
}

/// A deployed stack's front door, as its record says: the published port, and the Host to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontDoor {
    pub stack: String,
    pub port: u16,
    pub host: Option<String>,
}

impl FrontDoor {
    /// Whether `e` is this door: its port on loopback or the target's address `target`, with its Host
    /// when both name one.
    pub fn fronts(&self, e: &Endpoint, target: IpAddr) -> bool {
        let ip = e.addr.ip();
        e.addr.port() == self.port
            && (ip.is_loopback() || ip == target)
            && match (&self.host, &e.host_header) {
                (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                _ => true,
            }
    }

    /// From the stack's record: nginx's port for ha, Traefik's with the stack's Host for single.
    pub fn from_record(record: &StackRecord) -> FrontDoor {
        let (port, host) = record.front_door();
        FrontDoor {
            stack: record.stack.clone(),
            port,
            host: host.map(String::from),
        }
    }
}

/// Traefik's own answer to a Host it does not route (Go's `http.NotFound`).
pub const TRAEFIK_NOT_FOUND: &str = "404 page not found";

/// The front door answered 404 (its body `body`) on /healthcheck, which the app answers. When the front
/// door is Traefik (a recorded stack's Traefik publishes that port, or the 404 is Traefik's own), it
/// routes by Host and this one is not routed: the fix names the recorded stack publishing that port
/// when there is one (a fix that works), else the forms that send a Host. Otherwise (nginx, or not an
/// exectl stack) Traefik is not named. `field`/`value` are the flag that chose the endpoint.
pub fn not_routed(
    field: &str,
    value: &str,
    e: &Endpoint,
    recorded: &[FrontDoor],
    body: &str,
) -> UsageError {
    let door = recorded.iter().find(|d| d.port == e.addr.port());
    let traefik_said = body.trim() == TRAEFIK_NOT_FOUND;
    let path = e.base.path().trim_end_matches('/');
    if !path.is_empty() && !traefik_said {
        // The app answered (or the proxy passed it on): the URL's path is the app's BASE_PATH only when
        // the app was started with that one.
        let origin = e.base.origin().ascii_serialization();
        return UsageError::new(
            field,
            value,
            format!(
                "{} answers 404 on {}: no app answers under the path {path} (an app serves its routes \
                 under a path only when its BASE_PATH is that path)",
                e.addr,
                e.http("/healthcheck")
            ),
            format!(
                "give the front door without the path (--url {origin}), or deploy the app with \
                 --set BASE_PATH={path}"
            ),
        );
    }
    let traefik = door.is_some_and(|d| d.host.is_some()) || traefik_said;
    if !traefik {
        let (whose, fix) = match door {
            Some(d) => (
                format!(" (port {} is stack {}'s nginx)", d.port, d.stack),
                format!(
                    "see what its app answers with `exectl status --stack {}`, or give --stack {}",
                    d.stack, d.stack
                ),
            ),
            None => (String::new(), FRONT_DOOR_FIX.to_string()),
        };
        return UsageError::new(
            field,
            value,
            format!(
                "{} answers 404 on /healthcheck{whose}, which the app answers: no app is behind that front door",
                e.addr
            ),
            fix,
        );
    }
    let sent = e.host_header.as_deref().unwrap_or("(the address)");
    let problem = format!(
        "{} answers 404 on /healthcheck with Host {sent}: a Host-routed front door (Traefik) that does \
         not route that Host",
        e.addr
    );
    let fix = match door {
        Some(FrontDoor {
            stack,
            host: Some(h),
            ..
        }) if h.ends_with(".localhost") && e.addr.ip().is_loopback() => format!(
            "port {} is stack {stack}'s front door, routed for Host {h}: use --stack {stack}, or \
             --url http://{h}:{}",
            e.addr.port(),
            e.addr.port()
        ),
        Some(FrontDoor {
            stack,
            host: Some(h),
            ..
        }) => format!(
            "port {} is stack {stack}'s front door, routed for Host {h}: use --stack {stack}, or \
             add --host-header {h}",
            e.addr.port()
        ),
        _ => format!(
            "send the Host the front door routes: --url http://NAME.localhost:{} on loopback, or \
             --host-header NAME (or --stack NAME for a stack exectl deployed)",
            e.addr.port()
        ),
    };
    UsageError::new(field, value, problem, fix)
}

/// `--stack NAME` → the stack's front door, from its record (None: not deployed here): the nginx LB
/// for ha, Traefik with the stack's Host header for single. Pure: the caller reads the record.
/// `target` is where the stack's engine publishes: loopback for the local engine, the SUT's address for
/// a remote one.
pub fn from_stack(
    name: &str,
    record: Option<&StackRecord>,
    target: IpAddr,
) -> Result<Endpoint, UsageError> {
    let door = record.map(FrontDoor::from_record).ok_or_else(|| {
        UsageError::new(
            "--stack",
            name,
            "no deployment of it is recorded on this target",
            "deploy it first (exectl deploy ...), or give --url",
        )
    })?;
    let mut e = from_url(
        &format!("http://{}", SocketAddr::new(target, door.port)),
        &AllowList::loopback_only().allow(target),
    )?;
    e.host_header = door.host;
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use exectl_core::record;
    use exectl_core::spec::Topology;

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
        // A path is the app's BASE_PATH: every route goes under it.
        let based = from_url("http://127.0.0.1/exe/", &allow).unwrap();
        assert_eq!(
            based.http("/healthcheck"),
            "http://127.0.0.1/exe/healthcheck"
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
    fn localhost_names_dial_loopback_and_send_their_name() {
        let allow = AllowList::loopback_only();
        let e = from_url("http://Exe.localhost:8080/", &allow).unwrap();
        assert_eq!(e.addr, "127.0.0.1:8080".parse().unwrap());
        assert_eq!(e.host_header.as_deref(), Some("exe.localhost"));
        // Nothing resolves the name: every URL names the address it dials.
        assert_eq!(e.http("/healthcheck"), "http://127.0.0.1:8080/healthcheck");
        assert_eq!(e.yjs("u", "t"), "ws://127.0.0.1:8080/yjs/project-u?token=t");
        let e = from_url("http://a.b.localhost", &allow).unwrap();
        assert_eq!(
            (e.addr.port(), e.host_header.as_deref()),
            (80, Some("a.b.localhost"))
        );
        assert_eq!(
            from_url("http://localhost:9", &allow).unwrap().host_header,
            None
        );
        for bad in [
            "http://localhost.example.org",
            "http://exe.localhost.example.org",
            "http://-x.localhost",
            "http://exelocalhost",
        ] {
            assert_eq!(from_url(bad, &allow).unwrap_err().field, "--url", "{bad}");
        }
    }

    #[test]
    fn host_header_flag_is_checked() {
        let e = from_url("http://127.0.0.1:8080", &AllowList::loopback_only()).unwrap();
        let h = with_host_header(e.clone(), "Exe.Example.org").unwrap();
        assert_eq!(h.host_header.as_deref(), Some("exe.example.org"));
        assert_eq!(h.addr, e.addr, "the Host never changes where load goes");
        for bad in ["", "exe.localhost:8080", "a b", "a..b", "-a", "a/b"] {
            let err = with_host_header(e.clone(), bad).unwrap_err();
            assert_eq!(
                (err.field.as_str(), err.value.as_str()),
                ("--host-header", bad)
            );
        }
    }

    #[test]
    fn a_404_names_the_stack_that_publishes_the_port() {
        let lo = AllowList::loopback_only();
        let single = FrontDoor::from_record(&record::example("exe", Topology::Single));
        let remote = FrontDoor {
            stack: "far".into(),
            port: 8081,
            host: Some("far.example.org".into()),
        };
        let doors = [single, remote];
        let e = from_url("http://127.0.0.1:8080", &lo).unwrap();
        let err = not_routed("--url", "http://127.0.0.1:8080", &e, &doors, "");
        assert_eq!(err.field, "--url");
        assert!(err.problem.contains("404"), "{err}");
        assert!(
            err.fix.contains("--stack exe") && err.fix.contains("--url http://exe.localhost:8080"),
            "{err}"
        );
        let e = from_url("http://127.0.0.1:8081", &lo).unwrap();
        let err = not_routed("--url", "u", &e, &doors, "");
        assert!(err.fix.contains("--host-header far.example.org"), "{err}");
        let e = from_url("http://127.0.0.1:9999", &lo).unwrap();
        let err = not_routed("--url", "u", &e, &doors, "404 page not found\n");
        assert!(err.fix.contains("http://NAME.localhost:9999"), "{err}");
        // An ha record: nginx's port, no Host.
        assert_eq!(
            FrontDoor::from_record(&record::example("h", Topology::Ha)),
            FrontDoor {
                stack: "h".into(),
                port: 8090,
                host: None
            }
        );
        // Which door a URL is: its port, on loopback or the target, with its Host when both have one.
        let exe = &doors[0];
        let at = |url: &str| from_url(url, &AllowList::loopback_only()).unwrap();
        let here: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(exe.fronts(&at("http://exe.localhost:8080"), here));
        assert!(exe.fronts(&at("http://127.0.0.1:8080"), here));
        assert!(!exe.fronts(&at("http://other.localhost:8080"), here));
        assert!(!exe.fronts(&at("http://127.0.0.1:8081"), here));
        // A record without its ports is no front door: the reader refuses it, naming the file.
        assert!(record::parse("f", "x", "{}").is_err());
    }

    #[test]
    fn traefik_is_named_only_when_the_front_door_is_traefik() {
        let lo = AllowList::loopback_only();
        let doors = [FrontDoor::from_record(&record::example("h", Topology::Ha))];
        // An ha stack's nginx (no Host routing): not blamed on Traefik, the stack named.
        let e = from_url("http://127.0.0.1:8090", &lo).unwrap();
        let err = not_routed("--url", "http://127.0.0.1:8090", &e, &doors, "Not Found");
        assert!(!err.to_string().contains("Traefik"), "{err}");
        assert!(
            err.problem.contains("no app is behind that front door"),
            "{err}"
        );
        assert!(
            err.problem.contains("stack h's nginx") && err.fix.contains("--stack h"),
            "{err}"
        );
        // Nothing recorded there and not Traefik's own 404: neither.
        let e = from_url("http://127.0.0.1:9999", &lo).unwrap();
        let err = not_routed("--url", "u", &e, &doors, "{\"error\":\"nope\"}");
        assert!(!err.problem.contains("Traefik"), "{err}");
        assert!(
            err.problem.contains("no app is behind that front door"),
            "{err}"
        );
    }

    #[test]
    fn a_404_under_a_path_names_the_path_not_the_front_door() {
        let lo = AllowList::loopback_only();
        let doors = [FrontDoor::from_record(&record::example("h", Topology::Ha))];
        // nginx passed /some/path/healthcheck to an app without that BASE_PATH: the path is named.
        let e = from_url("http://127.0.0.1:8090/some/path", &lo).unwrap();
        let err = not_routed(
            "--url",
            "http://127.0.0.1:8090/some/path",
            &e,
            &doors,
            "Not Found",
        );
        assert!(
            err.problem
                .contains("404 on http://127.0.0.1:8090/some/path/healthcheck")
                && err
                    .problem
                    .contains("no app answers under the path /some/path"),
            "{err}"
        );
        assert!(!err.to_string().contains("Traefik"), "{err}");
        assert!(
            err.fix.contains("--url http://127.0.0.1:8090")
                && err.fix.contains("--set BASE_PATH=/some/path"),
            "{err}"
        );
        // Traefik's own 404 is still Traefik not routing the Host, path or not.
        let err = not_routed("--url", "u", &e, &doors, "404 page not found\n");
        assert!(err.problem.contains("Traefik"), "{err}");
    }

    #[test]
    fn stack_front_door_from_its_record() {
        let lo: IpAddr = "127.0.0.1".parse().unwrap();
        let err = from_stack("exe", None, lo).unwrap_err();
        assert_eq!(err.field, "--stack");
        let mut ha = record::example("exe", Topology::Ha);
        ha.spec.host = "x".into();
        let e = from_stack("exe", Some(&ha), lo).unwrap();
        assert_eq!((e.addr.port(), e.host_header), (8090, None));
        // A remote target's stack: its SUT address, allowed because it is the target.
        let sut: IpAddr = "10.199.0.2".parse().unwrap();
        let e = from_stack("exe", Some(&ha), sut).unwrap();
        assert_eq!(e.addr, SocketAddr::new(sut, 8090));
        let single = record::example("exe", Topology::Single);
        let e = from_stack("exe", Some(&single), lo).unwrap();
        assert_eq!(
            (e.addr.port(), e.host_header.as_deref()),
            (8080, Some("exe.localhost"))
        );
    }
}
