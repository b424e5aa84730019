//! The forwarder: local endpoints (a private unix socket for the Docker API, loopback TCP ports for
//! probes) whose connections ride SSH channels (direct-streamlocal, direct-tcpip). One thread drives one
//! non-blocking session: a libssh2 session cannot be blocked on from several threads at once.

use ssh2::{Channel, Session};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

/// Where a forwarded connection goes on the SUT.
#[derive(Debug, Clone)]
pub enum Dest {
    Unix(String),
    Tcp(String, u16),
}

pub enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

enum Local {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Local {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Local::Unix(s) => s.read(buf),
            Local::Tcp(s) => s.read(buf),
        }
    }
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Local::Unix(s) => s.write(buf),
            Local::Tcp(s) => s.write(buf),
        }
    }
    fn shutdown_write(&self) {
        let _ = match self {
            Local::Unix(s) => s.shutdown(Shutdown::Write),
            Local::Tcp(s) => s.shutdown(Shutdown::Write),
        };
    }
    fn fd(&self) -> RawFd {
        match self {
            Local::Unix(s) => s.as_raw_fd(),
            Local::Tcp(s) => s.as_raw_fd(),
        }
    }
}

impl Listener {
    fn accept(&self) -> std::io::Result<Local> {
        let local = match self {
            Listener::Unix(l) => Local::Unix(l.accept()?.0),
            Listener::Tcp(l) => {
                let (s, _) = l.accept()?;
                let _ = s.set_nodelay(true);
                Local::Tcp(s)
            }
        };
        match &local {
            Local::Unix(s) => s.set_nonblocking(true)?,
            Local::Tcp(s) => s.set_nonblocking(true)?,
        }
        Ok(local)
    }
    fn fd(&self) -> RawFd {
        match self {
            Listener::Unix(l) => l.as_raw_fd(),
            Listener::Tcp(l) => l.as_raw_fd(),
        }
    }
}

const CHUNK: usize = 64 * 1024;

struct Conn {
    local: Local,
    chan: Channel,
    up: Vec<u8>,
    local_eof: bool,
    eof_sent: bool,
    down: Vec<u8>,
    remote_eof: bool,
    local_closed: bool,
    dead: bool,
}

fn would_block(e: &std::io::Error) -> bool {
    e.kind() == ErrorKind::WouldBlock
}

/// libssh2's EAGAIN: the non-blocking call must be repeated.
/// One non-blocking write of `buf`'s head; what was written leaves it. (moved, dead).
fn flush(buf: &mut Vec<u8>, write: impl FnOnce(&[u8]) -> std::io::Result<usize>) -> (bool, bool) {
    match write(buf) {
        Ok(n) if n > 0 => {
            buf.drain(..n);
            (true, false)
        }
        Ok(_) => (false, false),
        Err(e) if would_block(&e) => (false, false),
        Err(_) => (false, true),
    }
}

fn again(e: &ssh2::Error) -> bool {
    e.code() == ssh2::ErrorCode::Session(-37)
}

impl Conn {
    /// One step each way; true when any byte or state moved.
    fn pump(&mut self, buf: &mut [u8]) -> bool {
        let mut moved = false;
        if self.up.is_empty() && !self.local_eof {
            match self.local.read(buf) {
                Ok(0) => {
                    self.local_eof = true;
                    moved = true;
                }
                Ok(n) => {
                    self.up.extend_from_slice(&buf[..n]);
                    moved = true;
                }
                Err(e) if would_block(&e) => {}
                Err(_) => {
                    self.local_eof = true;
                    moved = true;
                }
            }
        }
        if !self.up.is_empty() {
            let (m, dead) = flush(&mut self.up, |b| self.chan.write(b));
            moved |= m;
            self.dead |= dead;
        }
        if self.local_eof && self.up.is_empty() && !self.eof_sent {
            match self.chan.send_eof() {
                Ok(()) => {
                    self.eof_sent = true;
                    moved = true;
                }
                Err(e) if again(&e) => {}
                Err(_) => self.dead = true,
            }
        }
        if self.down.is_empty() && !self.remote_eof {
            match self.chan.read(buf) {
                Ok(0) => {
                    if self.chan.eof() {
                        self.remote_eof = true;
                        moved = true;
                    }
                }
                Ok(n) => {
                    self.down.extend_from_slice(&buf[..n]);
                    moved = true;
                }
                Err(e) if would_block(&e) => {}
                Err(_) => self.dead = true,
            }
        }
        if !self.down.is_empty() {
            let (m, dead) = flush(&mut self.down, |b| self.local.write(b));
            moved |= m;
            self.dead |= dead;
        }
        if self.remote_eof && self.down.is_empty() && !self.local_closed {
            self.local.shutdown_write();
            self.local_closed = true;
            moved = true;
        }
        moved
    }

    fn done(&self) -> bool {
        self.dead || (self.local_closed && (self.eof_sent || self.local_eof))
    }
}

pub struct Tunnel {
    stop: Arc<AtomicBool>,
    add: Mutex<mpsc::Sender<(Listener, Dest)>>,
    thread: Option<JoinHandle<()>>,
    last_error: Arc<Mutex<Option<String>>>,
}

impl Tunnel {
    /// Drive `sess` (authenticated; `fd` is its TCP socket) from a thread of its own.
    pub fn start(sess: Session, fd: RawFd) -> Tunnel {
        let stop = Arc::new(AtomicBool::new(false));
        let last_error = Arc::new(Mutex::new(None));
        let (tx, rx) = mpsc::channel();
        let thread = {
            let stop = stop.clone();
            let last_error = last_error.clone();
            std::thread::Builder::new()
                .name("exectl-ssh-tunnel".into())
                .spawn(move || run(sess, fd, rx, &stop, &last_error))
                .expect("spawning the SSH tunnel thread")
        };
        Tunnel {
            stop,
            add: Mutex::new(tx),
            thread: Some(thread),
            last_error,
        }
    }

    /// Forward every connection made to `listener` (set non-blocking here) to `dest`.
    pub fn add(&self, listener: Listener, dest: Dest) -> std::io::Result<()> {
        match &listener {
            Listener::Unix(l) => l.set_nonblocking(true)?,
            Listener::Tcp(l) => l.set_nonblocking(true)?,
        }
        self.add
            .lock()
            .expect("tunnel sender")
            .send((listener, dest))
            .map_err(|_| std::io::Error::other("the SSH tunnel has stopped"))
    }

    /// The last channel that could not be opened, and why.
    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok()?.clone()
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn open(sess: &Session, dest: &Dest) -> Result<Channel, ssh2::Error> {
    match dest {
        Dest::Unix(path) => sess.channel_direct_streamlocal(path, None),
        Dest::Tcp(host, port) => sess.channel_direct_tcpip(host, *port, None),
    }
}

fn run(
    sess: Session,
    ssh_fd: RawFd,
    rx: mpsc::Receiver<(Listener, Dest)>,
    stop: &AtomicBool,
    last_error: &Mutex<Option<String>>,
) {
    sess.set_blocking(false);
    let mut listeners: Vec<(Listener, Dest)> = Vec::new();
    // Channel opens go one at a time: libssh2 keeps a single open in progress per session.
    let mut pending: std::collections::VecDeque<(Local, Dest)> = Default::default();
    let mut conns: Vec<Conn> = Vec::new();
    let mut buf = vec![0u8; CHUNK];
    while !stop.load(Ordering::SeqCst) {
        let mut moved = false;
        while let Ok(l) = rx.try_recv() {
            listeners.push(l);
        }
        for (l, dest) in &listeners {
            while let Ok(local) = l.accept() {
                pending.push_back((local, dest.clone()));
                moved = true;
            }
        }
        if let Some((_, dest)) = pending.front() {
            match open(&sess, dest) {
                Ok(chan) => {
                    let (local, _) = pending.pop_front().expect("front");
                    conns.push(Conn {
                        local,
                        chan,
                        up: Vec::new(),
                        local_eof: false,
                        eof_sent: false,
                        down: Vec::new(),
                        remote_eof: false,
                        local_closed: false,
                        dead: false,
                    });
                    moved = true;
                }
                Err(e) if again(&e) => {}
                Err(e) => {
                    // The local client sees its connection closed; the reason is kept for the error.
                    let (_, dest) = pending.pop_front().expect("front");
                    if let Ok(mut slot) = last_error.lock() {
                        *slot = Some(format!("opening a channel to {dest:?}: {}", e.message()));
                    }
                    moved = true;
                }
            }
        }
        for c in conns.iter_mut() {
            moved |= c.pump(&mut buf);
        }
        conns.retain_mut(|c| {
            if c.done() {
                let _ = c.chan.close();
                false
            } else {
                true
            }
        });
        if !moved {
            wait(&sess, ssh_fd, &listeners, &conns);
        }
    }
}

/// Sleep until a socket is ready or 20 ms pass (libssh2 may hold data it has already read, and opens in
/// progress need retrying, so the wait stays short).
fn wait(sess: &Session, ssh_fd: RawFd, listeners: &[(Listener, Dest)], conns: &[Conn]) {
    let mut fds = Vec::with_capacity(1 + listeners.len() + conns.len());
    let mut ssh_events = libc::POLLIN;
    if sess.block_directions() == ssh2::BlockDirections::Outbound
        || sess.block_directions() == ssh2::BlockDirections::Both
    {
        ssh_events |= libc::POLLOUT;
    }
    fds.push(libc::pollfd {
        fd: ssh_fd,
        events: ssh_events,
        revents: 0,
    });
    for (l, _) in listeners {
        fds.push(libc::pollfd {
            fd: l.fd(),
            events: libc::POLLIN,
            revents: 0,
        });
    }
    for c in conns {
        let mut events = 0;
        if c.up.is_empty() && !c.local_eof {
            events |= libc::POLLIN;
        }
        if !c.down.is_empty() {
            events |= libc::POLLOUT;
        }
        if events != 0 {
            fds.push(libc::pollfd {
                fd: c.local.fd(),
                events,
                revents: 0,
            });
        }
    }
    // SAFETY: `fds` is a valid, exclusively borrowed array of pollfd for the call's duration.
    unsafe {
        libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 20);
    }
}

#[cfg(test)]
mod tests {
    use super::flush;
    use std::io::{Error, ErrorKind};

    #[test]
    fn flush_drains_what_was_written_and_tells_blocked_from_dead() {
        let mut buf = b"abcdef".to_vec();
        assert_eq!(flush(&mut buf, |b| Ok(b.len().min(4))), (true, false));
        assert_eq!(buf, b"ef");
        assert_eq!(flush(&mut buf, |_| Ok(0)), (false, false));
        let blocked = || Err(Error::from(ErrorKind::WouldBlock));
        assert_eq!(flush(&mut buf, |_| blocked()), (false, false));
        assert_eq!(buf, b"ef");
        let reset = || Err(Error::from(ErrorKind::ConnectionReset));
        assert_eq!(flush(&mut buf, |_| reset()), (false, true));
    }
}
