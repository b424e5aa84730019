//! The WebSocket dial: our own TCP connect to the endpoint's one address, then the handshake with small
//! buffers, all within the policy's connect bound. The upgrade always answers 101 (contract §2):
//! refusals come as close codes afterwards, which the callers watch for.
//!
//! The handshake is tungstenite's request and accept key, sent and checked here: tungstenite's own
//! handshake hands its 4 KiB response buffer on as the socket's read buffer for the socket's whole life
//! (`read_buffer_size` never applies), which was more than half of an idle socket's memory.

use std::net::{IpAddr, SocketAddr};

use reqwest::header::HOST;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::client::{generate_request, Request};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};
use tokio_tungstenite::WebSocketStream;

use super::{Client, Endpoint};

pub type Ws = WebSocketStream<TcpStream>;

/// Why a dial failed: "connect_timeout", "connect_refused", "connect_error_<kind>", "bad_request",
/// "handshake_<status>", "handshake_error".
pub type DialError = String;

/// Per-socket buffers sized for idle sockets and 50–450 B frames; they grow for bigger frames. The
/// default 128 KiB read buffer would cost 1.25 GiB at 10,000 sockets; 1 KiB against 2 KiB saves 1 KiB
/// of every socket's ~5 (BENCHMARKS.md, "Load generator").
pub fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(1024)
        .write_buffer_size(0)
        .max_write_buffer_size(1 << 20)
        .max_message_size(Some(8 << 20))
        .max_frame_size(Some(8 << 20))
}

impl Client {
    /// `ws://…/yjs/project-<uuid>?token=<jwt>`: TCP connect to the endpoint's address, then the
    /// handshake (with its Host header), bounded by the connect timeout.
    pub async fn dial(
        &self,
        ep: &Endpoint,
        project_uuid: &str,
        token: &str,
    ) -> Result<Ws, DialError> {
        self.dial_from(ep, None, project_uuid, token).await
    }

    /// `dial`, from the local address `from` when given (`--source-addrs`).
    pub async fn dial_from(
        &self,
        ep: &Endpoint,
        from: Option<IpAddr>,
        project_uuid: &str,
        token: &str,
    ) -> Result<Ws, DialError> {
        let fut = async {
            let tcp = connect(ep.addr, from).await.map_err(|e| {
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
            handshake(tcp, req).await
        };
        match tokio::time::timeout(self.timeouts().connect, fut).await {
            Ok(r) => r,
            Err(_) => Err("connect_timeout".into()),
        }
    }
}

/// The longest upgrade answer read (the app's is about 150 B).
const MAX_ANSWER: usize = 8 << 10;

/// Send the upgrade request and check its answer as RFC 6455 §4.1 asks (101, `Upgrade: websocket`,
/// `Connection: upgrade`, the accept key); bytes read past the answer are the socket's first frames.
async fn handshake(mut tcp: TcpStream, req: Request) -> Result<Ws, DialError> {
    let failed = |_| "handshake_error".to_string();
    let (request, key) = generate_request(req).map_err(|_| "bad_request".to_string())?;
    tcp.write_all(&request).await.map_err(failed)?;
    let mut answer = Vec::new();
    let mut chunk = [0u8; 512];
    let head = loop {
        let n = tcp.read(&mut chunk).await.map_err(failed)?;
        if n == 0 || answer.len() + n > MAX_ANSWER {
            return Err("handshake_error".into());
        }
        answer.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut r = httparse::Response::new(&mut headers);
        match r.parse(&answer) {
            Ok(httparse::Status::Complete(head)) => {
                let status = r.code.unwrap_or(0);
                if status != 101 {
                    return Err(format!("handshake_{status}"));
                }
                let value = |name: &str| {
                    r.headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case(name))
                        .map_or("", |h| std::str::from_utf8(h.value).unwrap_or(""))
                };
                let lists = |name: &str, token: &str| {
                    value(name)
                        .split(',')
                        .any(|v| v.trim().eq_ignore_ascii_case(token))
                };
                if !lists("upgrade", "websocket")
                    || !lists("connection", "upgrade")
                    || value("sec-websocket-accept").trim() != derive_accept_key(key.as_bytes())
                {
                    return Err("handshake_error".into());
                }
                break head;
            }
            Ok(httparse::Status::Partial) => {}
            Err(_) => return Err("handshake_error".into()),
        }
    };
    let early = answer[head..].to_vec();
    Ok(WebSocketStream::from_partially_read(tcp, early, Role::Client, Some(ws_config())).await)
}

/// A TCP connect, bound first to `from` when given. IP_BIND_ADDRESS_NO_PORT defers the port to the
/// connect, so each source address has a port range per destination (not one shared by all).
async fn connect(to: SocketAddr, from: Option<IpAddr>) -> std::io::Result<TcpStream> {
    let Some(ip) = from else {
        return TcpStream::connect(to).await;
    };
    let socket = match ip {
        IpAddr::V4(_) => TcpSocket::new_v4()?,
        IpAddr::V6(_) => TcpSocket::new_v6()?,
    };
    if ip.is_ipv4() {
        use std::os::fd::AsRawFd;
        let one: libc::c_int = 1;
        // SAFETY: setsockopt on a socket this function owns, with a valid int and its size.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_BIND_ADDRESS_NO_PORT,
                &one as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
    socket.bind(SocketAddr::new(ip, 0))?;
    socket.connect(to).await
}

fn io_kind(e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EADDRNOTAVAIL) => "eaddrnotavail".into(),
        Some(libc::EADDRINUSE) => "eaddrinuse".into(),
        Some(libc::EMFILE) | Some(libc::ENFILE) => "emfile".into(),
        Some(libc::ECONNRESET) => "reset".into(),
        Some(libc::ETIMEDOUT) => "timeout".into(),
        _ => format!("{:?}", e.kind()).to_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use std::time::Duration;
    use tokio::net::TcpListener;
    use tokio_tungstenite::tungstenite::Message;

    /// A one-connection server on loopback that reads the upgrade request and answers `answer(key)`
    /// in one write.
    async fn server(answer: fn(&str) -> Vec<u8>) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut req = Vec::new();
            let mut b = [0u8; 1024];
            while !req.ends_with(b"\r\n\r\n") {
                let n = s.read(&mut b).await.unwrap();
                req.extend_from_slice(&b[..n]);
            }
            let text = String::from_utf8(req).unwrap();
            let key = text
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("sec-websocket-key")
                        .then(|| value.trim())
                })
                .unwrap()
                .to_string();
            s.write_all(&answer(&key)).await.unwrap();
            tokio::time::sleep(Duration::from_secs(2)).await;
        });
        addr
    }

    fn upgraded(accept: &str) -> Vec<u8> {
        format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n").into_bytes()
    }

    async fn dial(addr: SocketAddr) -> Result<Ws, DialError> {
        let c = Client::new(1, super::super::Timeouts::all(Duration::from_secs(5)));
        c.dial(&Endpoint::at(addr, None), "p", "t").await
    }

    #[tokio::test]
    async fn the_upgrade_is_checked_and_frames_sent_with_it_are_kept() {
        // The answer and a first binary frame [1, 2, 3] in one segment.
        let addr = server(|key| {
            let mut a = upgraded(&derive_accept_key(key.as_bytes()));
            a.extend_from_slice(&[0x82, 3, 1, 2, 3]);
            a
        })
        .await;
        let mut ws = dial(addr).await.unwrap();
        let first = tokio::time::timeout(Duration::from_secs(2), ws.next()).await;
        assert_eq!(
            first.unwrap().unwrap().unwrap(),
            Message::Binary(vec![1, 2, 3].into())
        );

        let addr = server(|_| upgraded("d3Jvbmcga2V5")).await;
        assert_eq!(dial(addr).await.unwrap_err(), "handshake_error");
        let addr =
            server(|_| b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n".to_vec()).await;
        assert_eq!(dial(addr).await.unwrap_err(), "handshake_403");
        let addr = server(|key| {
            format!("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n\r\n", derive_accept_key(key.as_bytes())).into_bytes()
        })
        .await;
        assert_eq!(dial(addr).await.unwrap_err(), "handshake_error");
    }
}
