//! DOCKER_HOST, read the way the docker CLI reads it: unset or empty means the default unix socket. Pure:
//! the variable's value in, the engine's address (or the problem, worded) out.

use super::DEFAULT_DOCKER_SOCKET;
use exectl_core::error::UsageError;

/// Where the local engine answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalEngine {
    /// A unix socket's path.
    Unix(String),
    /// A plain-HTTP engine address (tcp:// or http://), as bollard takes it.
    Http(String),
}

impl std::fmt::Display for LocalEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LocalEngine::Unix(p) => write!(f, "unix://{p}"),
            LocalEngine::Http(u) => f.write_str(u),
        }
    }
}

impl LocalEngine {
    /// The socket's path, when the engine is on this machine's unix socket (to find its dockerd).
    pub fn socket(&self) -> Option<&str> {
        match self {
            LocalEngine::Unix(p) => Some(p),
            LocalEngine::Http(_) => None,
        }
    }
}

/// DOCKER_HOST's value (None when unset) as the engine's address. An empty value is "unset", as for
/// docker (a `DOCKER_HOST=` left in a shell or a CI file must not break every command). The error
/// names the variable, its value and the fix.
pub fn parse(value: Option<&str>) -> Result<LocalEngine, UsageError> {
    let v = match value.map(str::trim) {
        None | Some("") => return Ok(LocalEngine::Unix(DEFAULT_DOCKER_SOCKET.into())),
        Some(v) => v,
    };
    let bad = |problem: &str, fix: &str| Err(UsageError::new("DOCKER_HOST", v, problem, fix));
    let unset = "unset DOCKER_HOST to use /var/run/docker.sock";
    if let Some(path) = v.strip_prefix("unix://") {
        if !path.starts_with('/') {
            return bad(
                "does not name an absolute socket path",
                &format!("write e.g. unix:///var/run/docker.sock, or {unset}"),
            );
        }
        return Ok(LocalEngine::Unix(path.to_string()));
    }
    if v.starts_with("tcp://") || v.starts_with("http://") {
        return Ok(LocalEngine::Http(v.to_string()));
    }
    if v.starts_with("ssh://") {
        return bad(
            "is an SSH address, which exectl does not read from DOCKER_HOST",
            &format!("give it as --target {v} (exectl's own SSH link), and {unset}"),
        );
    }
    if v.starts_with('/') {
        return bad("has no scheme", &format!("write unix://{v}, or {unset}"));
    }
    bad(
        "is not an engine address exectl can use (unix:// or tcp://)",
        &format!("write e.g. unix:///var/run/docker.sock or tcp://127.0.0.1:2375, or {unset}"),
    )
}

#[cfg(test)]
mod tests {
    use super::{parse, LocalEngine};

    #[test]
    fn unset_or_empty_is_the_default_socket() {
        let default = LocalEngine::Unix("/var/run/docker.sock".into());
        assert_eq!(parse(None).unwrap(), default);
        assert_eq!(parse(Some("")).unwrap(), default);
        assert_eq!(parse(Some("  ")).unwrap(), default);
    }

    #[test]
    fn unix_and_tcp_addresses() {
        assert_eq!(
            parse(Some("unix:///run/user/1000/docker.sock")).unwrap(),
            LocalEngine::Unix("/run/user/1000/docker.sock".into())
        );
        assert_eq!(
            parse(Some("unix:///x.sock")).unwrap().socket(),
            Some("/x.sock")
        );
        let tcp = parse(Some("tcp://127.0.0.1:2375")).unwrap();
        assert_eq!(tcp, LocalEngine::Http("tcp://127.0.0.1:2375".into()));
        assert_eq!(tcp.socket(), None);
        assert_eq!(tcp.to_string(), "tcp://127.0.0.1:2375");
        assert_eq!(
            parse(None).unwrap().to_string(),
            "unix:///var/run/docker.sock"
        );
    }

    #[test]
    fn bad_values_name_the_variable_the_value_and_the_fix() {
        for (value, fix) in [
            ("ftp://x", "unix:///var/run/docker.sock"),
            ("/var/run/docker.sock", "unix:///var/run/docker.sock"),
            ("unix://docker.sock", "absolute"),
            ("ssh://root@sut", "--target ssh://root@sut"),
        ] {
            let e = parse(Some(value)).unwrap_err();
            assert_eq!((e.field.as_str(), e.value.as_str()), ("DOCKER_HOST", value));
            assert!(e.to_string().contains(fix), "{value}: {e}");
            assert!(e.fix.contains("unset DOCKER_HOST"), "{value}: {e}");
        }
    }
}
