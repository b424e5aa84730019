//! `ssh://user@host[:port]`, parsed and checked (pure).

use exectl_core::error::UsageError;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SshUrl {
    pub user: String,
    pub host: String,
    pub port: u16,
}

impl SshUrl {
    /// known_hosts' name for the host: `host` on port 22, else `[host]:port` (as OpenSSH writes it).
    pub fn known_hosts_name(&self) -> String {
        if self.port == 22 {
            self.host.clone()
        } else {
            format!("[{}]:{}", self.host, self.port)
        }
    }

    /// A file-name-safe key for local state: `ssh-root@10.0.0.2-2222`.
    pub fn state_key(&self) -> String {
        let safe = |s: &str| {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "._-".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect::<String>()
        };
        format!(
            "ssh-{}@{}-{}",
            safe(&self.user),
            safe(&self.host),
            self.port
        )
    }
}

impl std::fmt::Display for SshUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ssh://{}@{}:{}", self.user, self.host, self.port)
    }
}

fn bad(field: &str, value: &str, problem: &str) -> UsageError {
    UsageError::new(
        field,
        value,
        problem,
        "write local, or ssh://user@host[:port] (e.g. ssh://root@10.0.0.2:22)",
    )
}

/// `None` for the local engine (`local` or empty), else the parsed URL. `field` names where the value
/// came from (--target, EXECTL_TARGET or exectl.yaml's target:).
pub fn parse(field: &str, value: &str) -> Result<Option<SshUrl>, UsageError> {
    let v = value.trim();
    if v.is_empty() || v == "local" {
        return Ok(None);
    }
    let rest = v
        .strip_prefix("ssh://")
        .ok_or_else(|| bad(field, value, "not local and not an ssh:// URL"))?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (user, hostport) = rest
        .split_once('@')
        .ok_or_else(|| bad(field, value, "no user (ssh://USER@host)"))?;
    if user.is_empty() || user.contains([':', '/']) {
        return Err(bad(
            field,
            value,
            "the user is empty or carries a password (keys and the agent only)",
        ));
    }
    let (host, port) = if let Some(inner) = hostport.strip_prefix('[') {
        // [v6]:port
        let (h, after) = inner
            .split_once(']')
            .ok_or_else(|| bad(field, value, "unclosed [ in the host"))?;
        (h.to_string(), after.strip_prefix(':'))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (hostport.to_string(), None),
        }
    };
    if host.is_empty() || host.contains(['/', '@', '?', '#', ' ']) {
        return Err(bad(field, value, "no valid host"));
    }
    let port = match port {
        None => 22,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(bad(field, value, "the port is not a number in 1..65535")),
        },
    };
    Ok(Some(SshUrl {
        user: user.to_string(),
        host,
        port,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_user_host_port() {
        let u = parse("--target", "ssh://root@10.199.0.2:2222")
            .unwrap()
            .unwrap();
        assert_eq!(
            (u.user.as_str(), u.host.as_str(), u.port),
            ("root", "10.199.0.2", 2222)
        );
        assert_eq!(u.known_hosts_name(), "[10.199.0.2]:2222");
        assert_eq!(u.state_key(), "ssh-root@10.199.0.2-2222");
        let u = parse("--target", "ssh://bench@sut.example/")
            .unwrap()
            .unwrap();
        assert_eq!((u.port, u.known_hosts_name().as_str()), (22, "sut.example"));
        let u = parse("--target", "ssh://root@[fd00::2]:2200")
            .unwrap()
            .unwrap();
        assert_eq!(u.host, "fd00::2");
        assert_eq!(parse("--target", "local").unwrap(), None);
        assert_eq!(parse("--target", "").unwrap(), None);
    }

    #[test]
    fn refuses_bad_urls_naming_the_field() {
        for bad in [
            "root@host",
            "ssh://host",
            "ssh://root:pw@host",
            "ssh://root@",
            "ssh://root@host:0",
            "ssh://root@host:99999",
            "ssh://root@host:x",
            "http://root@host",
        ] {
            let e = parse("EXECTL_TARGET", bad).unwrap_err();
            assert_eq!(e.field, "EXECTL_TARGET", "{bad}");
        }
    }
}
