//! A remote target over SSH (ssh2): one session for host commands and uploads (SFTP, else exec), one driven by the tunnel
//! thread for the Docker API (the remote socket forwarded to a private local unix socket) and probes.

pub mod connect;
pub mod tunnel;
pub mod upload;
pub mod url;

pub use connect::{ConnectOptions, SshError};
pub use url::SshUrl;

use anyhow::{Context, Result};
use ssh2::Session;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use tunnel::{Dest, Listener, Tunnel};

pub struct Link {
    pub url: SshUrl,
    /// The address the SSH connection reached: where the SUT's published ports answer.
    pub peer: SocketAddr,
    pub docker_socket: String,
    control: Mutex<Session>,
    tunnel: Tunnel,
    /// Holds the local end of the Docker socket; removed with the link.
    _sock_dir: tempfile::TempDir,
    pub local_docker_socket: PathBuf,
    forwards: Mutex<HashMap<(String, u16), SocketAddr>>,
    /// The SUT's sshd refused the sftp subsystem once: files go up by exec from then on.
    no_sftp: AtomicBool,
}

pub use crate::shell::Output;
use crate::shell::{HostShell, ShellLoop};
use exectl_core::scripts::{self, Script};

impl Link {
    /// Connect (blocking: call from spawn_blocking), in stages, and prove the Docker socket forwards.
    pub fn connect(o: &ConnectOptions, docker_socket: &str) -> Result<Link, SshError> {
        // The tunnel's session is opened alongside: two handshakes in the time of one.
        // Only the first records a new host key; the second retries once it is recorded.
        let second = {
            let mut o = o.clone();
            o.accept_new_host_key = false;
            std::thread::spawn(move || connect::open_session(&o))
        };
        let first = connect::open_session(o);
        let second = second.join().map_err(|_| SshError::Handshake {
            addr: o.url.known_hosts_name(),
            reason: "the connecting thread panicked".into(),
        })?;
        let (control, peer, _) = first?;
        let (tun, _, fd) = match second {
            Err(SshError::UnknownHostKey { .. }) if o.accept_new_host_key => {
                connect::open_session(o)?
            }
            other => other?,
        };
        match tun.channel_direct_streamlocal(docker_socket, None) {
            Ok(mut ch) => {
                let _ = ch.close();
            }
            Err(e) => {
                let probe = run(
                    &control,
                    &scripts::files::socket_probe(docker_socket).command_line(),
                    None,
                )
                .map(|o| o.stdout)
                .unwrap_or_default();
                return Err(connect::classify_socket_failure(
                    &probe,
                    o,
                    docker_socket,
                    e.message().to_string(),
                ));
            }
        }
        let sock_dir = tempfile::Builder::new()
            .prefix("exectl-ssh-")
            .tempdir()
            .map_err(|e| forwarding(o, docker_socket, format!("a private local folder: {e}")))?;
        let local = sock_dir.path().join("docker.sock");
        let listener = UnixListener::bind(&local).map_err(|e| {
            forwarding(
                o,
                docker_socket,
                format!("binding {}: {e}", local.display()),
            )
        })?;
        let tunnel = Tunnel::start(tun, fd);
        tunnel
            .add(
                Listener::Unix(listener),
                Dest::Unix(docker_socket.to_string()),
            )
            .map_err(|e| forwarding(o, docker_socket, e.to_string()))?;
        Ok(Link {
            url: o.url.clone(),
            peer,
            docker_socket: docker_socket.to_string(),
            control: Mutex::new(control),
            tunnel,
            _sock_dir: sock_dir,
            local_docker_socket: local,
            forwards: Mutex::new(HashMap::new()),
            no_sftp: AtomicBool::new(false),
        })
    }

    /// Run a command line on the SUT's host (blocking), feeding `stdin`.
    pub fn exec(&self, command: &str, stdin: Option<&[u8]>) -> Result<Output> {
        let sess = self.control.lock().expect("ssh control session");
        run(&sess, command, stdin).with_context(|| format!("running a command on {}", self.url))
    }

    /// Write a file on the SUT (blocking) with `mode`, creating its folders; replaced whole. By SFTP, or
    /// by exec when the SUT's sshd has no sftp subsystem (remembered for the rest of the link).
    pub fn write_file(&self, path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
        let sess = self.control.lock().expect("ssh control session");
        upload::put(
            &sess,
            &self.url.to_string(),
            path,
            bytes,
            mode,
            &self.no_sftp,
        )
    }

    /// A loopback address here whose connections reach `host:port` as seen from the SUT.
    pub fn forward_tcp(&self, host: &str, port: u16) -> Result<SocketAddr> {
        let mut map = self.forwards.lock().expect("forwards");
        if let Some(a) = map.get(&(host.to_string(), port)) {
            return Ok(*a);
        }
        let l =
            TcpListener::bind("127.0.0.1:0").context("binding a loopback port for a forward")?;
        let addr = l.local_addr()?;
        self.tunnel
            .add(Listener::Tcp(l), Dest::Tcp(host.to_string(), port))
            .context("the SSH tunnel has stopped")?;
        map.insert((host.to_string(), port), addr);
        Ok(addr)
    }

    /// Why the last forwarded connection could not be opened, if one failed.
    pub fn tunnel_error(&self) -> Option<String> {
        self.tunnel.last_error()
    }
}

/// The SUT's host as a host shell: scripts by exec of `sh -c`, files by SFTP (or exec).
impl HostShell for Link {
    fn run(&self, script: &Script, stdin: Option<&[u8]>) -> Result<Output> {
        self.exec(&script.command_line(), stdin)
    }

    fn put_file(&self, path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
        self.write_file(path, bytes, mode)
    }

    fn describe(&self) -> String {
        self.url.to_string()
    }

    /// One exec channel kept open on the control session: sshd starts the session and the shell once,
    /// not once a request.
    fn open_loop(&self, script: &Script) -> Result<Box<dyn ShellLoop>> {
        let sess = self.control.lock().expect("ssh control session");
        let mut ch = sess
            .channel_session()
            .with_context(|| format!("opening a channel on {}", self.url))?;
        ch.exec(&script.command_line())
            .with_context(|| format!("running a command on {}", self.url))?;
        Ok(Box::new(ChannelLoop {
            ch,
            buf: Vec::new(),
        }))
    }
}

/// A looping script on an exec channel. ssh2 serialises the channel's calls with the session's others.
struct ChannelLoop {
    ch: ssh2::Channel,
    buf: Vec<u8>,
}

impl ShellLoop for ChannelLoop {
    fn ask(&mut self, line: &str) -> Result<String> {
        self.ch
            .write_all(&crate::shell::request(line)?)
            .context("writing to the looping host script")?;
        self.ch.flush()?;
        crate::shell::read_answer(&mut self.ch, &mut self.buf)
    }
}

impl Drop for ChannelLoop {
    fn drop(&mut self) {
        let _ = self.ch.send_eof();
        let _ = self.ch.wait_close();
    }
}

fn forwarding(o: &ConnectOptions, socket: &str, reason: String) -> SshError {
    SshError::Forwarding {
        name: o.url.known_hosts_name(),
        socket: socket.to_string(),
        reason,
    }
}

/// Run a command line on `sess` (blocking), feeding `stdin`.
pub fn run(sess: &Session, command: &str, stdin: Option<&[u8]>) -> Result<Output> {
    let mut ch = sess.channel_session()?;
    ch.exec(command)?;
    if let Some(bytes) = stdin {
        ch.write_all(bytes)?;
    }
    ch.send_eof()?;
    let mut stdout = Vec::new();
    ch.read_to_end(&mut stdout)?;
    let mut stderr = Vec::new();
    ch.stderr().read_to_end(&mut stderr)?;
    ch.wait_close()?;
    Ok(Output {
        code: ch.exit_status()?,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}
