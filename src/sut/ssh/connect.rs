//! One SSH session, established in named stages so that each way of failing says which stage and how to
//! fix it: TCP connect, handshake, host key (known_hosts), authentication.

use super::url::SshUrl;
use base64::Engine as _;
use ssh2::{CheckResult, HashType, HostKeyType, KnownHostFileKind, Session};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How to connect: what the target flags say.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ConnectOptions {
    pub url: SshUrl,
    /// `--identity FILE`: this key only; else the agent, then ~/.ssh/id_{ed25519,ecdsa,rsa}.
    pub identity: Option<PathBuf>,
    pub known_hosts: PathBuf,
    pub accept_new_host_key: bool,
    pub timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum SshError {
    #[error("ssh stage tcp: cannot connect to {addr}: {reason}; fix: check the address and port of the ssh:// URL (--target, --generators), that sshd listens there, and firewalls on the way")]
    Tcp { addr: String, reason: String },
    #[error("ssh stage handshake: {addr} did not complete an SSH handshake: {reason}; fix: check that the ssh:// URL (--target, --generators) names an SSH server (and its port)")]
    Handshake { addr: String, reason: String },
    #[error("ssh stage host key: {name} is unknown: its {kind} key {fingerprint} is not in {file}; fix: check that fingerprint on the SUT (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub) and re-run with --accept-new-host-key, or add it yourself (ssh-keyscan -p {port} {host} >> {file})")]
    UnknownHostKey {
        name: String,
        host: String,
        port: u16,
        kind: String,
        fingerprint: String,
        file: String,
    },
    #[error("ssh stage host key: the host key of {name} CHANGED: it offers {kind} {fingerprint}, {file} holds another one (a reinstalled SUT, or someone in the middle); fix: if the SUT was rebuilt, drop the old entry with ssh-keygen -R '{name}' -f {file} and connect again")]
    ChangedHostKey {
        name: String,
        kind: String,
        fingerprint: String,
        file: String,
    },
    #[error("ssh stage auth: {user}@{name} refused every key tried ({tried}); fix: add your public key to ~{user}/.ssh/authorized_keys on the SUT, or give --identity FILE (or load the key into ssh-agent)")]
    Auth {
        user: String,
        name: String,
        tried: String,
    },
    #[error("ssh stage auth: --identity {path}: {reason}; fix: give a readable private key file")]
    Identity { path: String, reason: String },
    #[error("ssh stage docker socket: sshd on {name} refused to forward {socket} although it exists and {user} may use it: stream-local forwarding is off for this login; fix: set `AllowStreamLocalForwarding yes` (and no `DisableForwarding yes` / `restrict` for this key) in the SUT's sshd_config, then reload sshd")]
    ForwardingRefused {
        name: String,
        user: String,
        socket: String,
    },
    #[error("ssh stage docker socket: there is no Docker socket at {socket} on {name}; fix: start the engine on the SUT, or give --docker-socket PATH (rootless engines: /run/user/UID/docker.sock)")]
    NoSocket { name: String, socket: String },
    #[error("ssh stage docker socket: {user} may not use {socket} on {name} (permission denied); fix: on the SUT, add {user} to the docker group (usermod -aG docker {user}), or connect as root")]
    SocketPermission {
        name: String,
        user: String,
        socket: String,
    },
    #[error("ssh stage docker socket: forwarding {socket} on {name} failed: {reason}")]
    Forwarding {
        name: String,
        socket: String,
        reason: String,
    },
    #[error("ssh stage engine api: the Docker engine at {socket} on {name} {problem}; fix: {fix}")]
    EngineApi {
        name: String,
        socket: String,
        problem: String,
        fix: String,
    },
}

/// TCP, handshake, host key, authentication: a ready session (blocking mode) or the failed stage.
pub fn open_session(
    o: &ConnectOptions,
) -> Result<(Session, SocketAddr, std::os::unix::io::RawFd), SshError> {
    let hostport = format!("{}:{}", o.url.host, o.url.port);
    let tcp_err = |reason: String| SshError::Tcp {
        addr: hostport.clone(),
        reason,
    };
    let addrs: Vec<SocketAddr> = (o.url.host.as_str(), o.url.port)
        .to_socket_addrs()
        .map_err(|e| tcp_err(format!("cannot resolve: {e}")))?
        .collect();
    let mut last = String::from("no address");
    let mut stream = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, o.timeout) {
            Ok(s) => {
                stream = Some((s, *a));
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                last = format!("no answer within {:?} (--connect-timeout)", o.timeout)
            }
            Err(e) => last = e.to_string(),
        }
    }
    let (tcp, peer) = stream.ok_or_else(|| tcp_err(last))?;
    let _ = tcp.set_nodelay(true);
    let fd = std::os::unix::io::AsRawFd::as_raw_fd(&tcp);
    let mut sess = Session::new().map_err(|e| SshError::Handshake {
        addr: hostport.clone(),
        reason: e.to_string(),
    })?;
    sess.set_tcp_stream(tcp);
    sess.set_timeout(o.timeout.as_millis() as u32);
    sess.handshake().map_err(|e| SshError::Handshake {
        addr: hostport.clone(),
        reason: e.message().to_string(),
    })?;
    check_host_key(&sess, o)?;
    authenticate(&sess, o)?;
    // Blocking calls after connect (exec, SFTP) may legitimately take long: no session timeout.
    sess.set_timeout(0);
    Ok((sess, peer, fd))
}

fn key_kind(t: HostKeyType) -> &'static str {
    match t {
        HostKeyType::Rsa => "ssh-rsa",
        HostKeyType::Dss => "ssh-dss",
        HostKeyType::Ecdsa256 => "ecdsa-sha2-nistp256",
        HostKeyType::Ecdsa384 => "ecdsa-sha2-nistp384",
        HostKeyType::Ecdsa521 => "ecdsa-sha2-nistp521",
        HostKeyType::Ed25519 => "ssh-ed25519",
        HostKeyType::Unknown => "unknown",
    }
}

fn check_host_key(sess: &Session, o: &ConnectOptions) -> Result<(), SshError> {
    let name = o.url.known_hosts_name();
    let (key, kind) = sess.host_key().ok_or_else(|| SshError::Handshake {
        addr: name.clone(),
        reason: "the server sent no host key".into(),
    })?;
    let kind = key_kind(kind);
    let fingerprint = sess
        .host_key_hash(HashType::Sha256)
        .map(|h| {
            format!(
                "SHA256:{}",
                base64::engine::general_purpose::STANDARD_NO_PAD.encode(h)
            )
        })
        .unwrap_or_default();
    let file = o.known_hosts.display().to_string();
    let mut known = sess.known_hosts().map_err(|e| SshError::Handshake {
        addr: name.clone(),
        reason: e.to_string(),
    })?;
    if o.known_hosts.exists() {
        // Lines libssh2 cannot parse (e.g. unsupported key types) make the whole read fail; treat the
        // file as holding nothing for us rather than refusing every host.
        let _ = known.read_file(&o.known_hosts, KnownHostFileKind::OpenSSH);
    }
    match known.check_port(&o.url.host, o.url.port, key) {
        CheckResult::Match => Ok(()),
        CheckResult::Mismatch => Err(SshError::ChangedHostKey {
            name,
            kind: kind.into(),
            fingerprint,
            file,
        }),
        CheckResult::NotFound | CheckResult::Failure if o.accept_new_host_key => {
            append_known_host(&o.known_hosts, &name, kind, key).map_err(|e| {
                SshError::Handshake {
                    addr: name.clone(),
                    reason: format!("cannot record the host key in {file}: {e}"),
                }
            })?;
            eprintln!("ssh: trusted the new host key of {name} ({kind} {fingerprint}), recorded in {file}");
            Ok(())
        }
        CheckResult::NotFound | CheckResult::Failure => Err(SshError::UnknownHostKey {
            name,
            host: o.url.host.clone(),
            port: o.url.port,
            kind: kind.into(),
            fingerprint,
            file,
        }),
    }
}

/// One OpenSSH known_hosts line appended (the file and its folder made private if new).
fn append_known_host(file: &Path, name: &str, kind: &str, key: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(dir) = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty() && !d.exists())
    {
        // A new ~/.ssh is private, as ssh itself makes it.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let line = format!(
        "{name} {kind} {}\n",
        base64::engine::general_purpose::STANDARD.encode(key)
    );
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(file)?;
    f.write_all(line.as_bytes())
}

fn authenticate(sess: &Session, o: &ConnectOptions) -> Result<(), SshError> {
    let user = &o.url.user;
    let mut tried = Vec::new();
    if let Some(path) = &o.identity {
        if let Err(e) = std::fs::metadata(path) {
            return Err(SshError::Identity {
                path: path.display().to_string(),
                reason: e.to_string(),
            });
        }
        let _ = sess.userauth_pubkey_file(user, None, path, None);
        tried.push(path.display().to_string());
    } else {
        if std::env::var_os("SSH_AUTH_SOCK").is_some() {
            if let Ok(mut agent) = sess.agent() {
                if agent.connect().is_ok() && agent.list_identities().is_ok() {
                    for id in agent.identities().unwrap_or_default() {
                        if agent.userauth(user, &id).is_ok() {
                            break;
                        }
                    }
                    tried.push("ssh-agent".to_string());
                }
            }
        }
        if !sess.authenticated() {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default();
            for name in ["id_ed25519", "id_ecdsa", "id_rsa"] {
                let path = home.join(".ssh").join(name);
                if path.exists() {
                    tried.push(path.display().to_string());
                    if sess.userauth_pubkey_file(user, None, &path, None).is_ok() {
                        break;
                    }
                }
            }
        }
    }
    if sess.authenticated() {
        return Ok(());
    }
    Err(SshError::Auth {
        user: user.clone(),
        name: o.url.known_hosts_name(),
        tried: if tried.is_empty() {
            "no key found: no --identity, no agent, no ~/.ssh/id_*".to_string()
        } else {
            tried.join(", ")
        },
    })
}

/// Why a direct-streamlocal channel to the socket was refused, from what a shell on the SUT saw:
/// `missing`, `denied` or `ok` (the socket is there and usable, so sshd itself refused).
pub fn classify_socket_failure(
    probe: &str,
    o: &ConnectOptions,
    socket: &str,
    reason: String,
) -> SshError {
    let name = o.url.known_hosts_name();
    use exectl_core::scripts::files::{parse_socket_probe, Socket};
    match parse_socket_probe(probe) {
        Socket::Missing => SshError::NoSocket {
            name,
            socket: socket.into(),
        },
        Socket::Denied => SshError::SocketPermission {
            name,
            user: o.url.user.clone(),
            socket: socket.into(),
        },
        Socket::Usable => SshError::ForwardingRefused {
            name,
            user: o.url.user.clone(),
            socket: socket.into(),
        },
        Socket::Unknown => SshError::Forwarding {
            name,
            socket: socket.into(),
            reason,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> ConnectOptions {
        ConnectOptions {
            url: super::super::url::parse("--target", "ssh://bench@10.0.0.2:2222")
                .unwrap()
                .unwrap(),
            identity: None,
            known_hosts: PathBuf::from("/k"),
            accept_new_host_key: false,
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn socket_failures_name_their_cause() {
        let o = opts();
        let s = "/var/run/docker.sock";
        let msg = |p: &str| classify_socket_failure(p, &o, s, "x".into()).to_string();
        assert!(msg("missing\n").contains("no Docker socket at /var/run/docker.sock"));
        assert!(msg("denied").contains("bench may not use /var/run/docker.sock"));
        assert!(msg("ok").contains("AllowStreamLocalForwarding"));
        assert!(msg("").contains("failed: x"));
    }
}
