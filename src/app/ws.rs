//! The WebSocket dial: our own TCP connect to the endpoint's one address, then the handshake with small
//! buffers, all within the policy's connect bound. The upgrade always answers 101 (contract §2):
//! refusals come as close codes afterwards, which the callers watch for.

use std::net::{IpAddr, SocketAddr};

use reqwest::header::HOST;
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::WebSocketStream;

use super::{Client, Endpoint};

pub type Ws = WebSocketStream<TcpStream>;

/// Why a dial failed: "connect_timeout", "connect_refused", "connect_error_<kind>", "bad_request",
/// "handshake_<status>", "handshake_error".
pub type DialError = String;

/// Per-socket buffers sized for idle sockets and 50–450 B frames; they grow for bigger frames. The
/// default 128 KiB read buffer would cost 1.25 GiB at 10,000 sockets.
pub fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(2048)
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
            match tokio_tungstenite::client_async_with_config(req, tcp, Some(ws_config())).await {
                Ok((ws, _resp)) => Ok(ws),
                Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
                    Err(format!("handshake_{}", resp.status().as_u16()))
                }
                Err(_) => Err("handshake_error".to_string()),
            }
        };
        match tokio::time::timeout(self.timeouts().connect, fut).await {
            Ok(r) => r,
            Err(_) => Err("connect_timeout".into()),
        }
    }
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
