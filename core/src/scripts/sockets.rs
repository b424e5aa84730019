//! The TCP sockets established in a container's network namespace (`/proc/PID/net/tcp` and `tcp6`,
//! read on its host), and from them the client sockets open to a stack: what tells an app's ghosts (the
//! connections it still counts after their sockets closed: the real build's leak) from another client.
//!
//! A WebSocket the app counts needs a socket open to it. A client reaches the stack through its front
//! door (a container with a published port: nginx, Traefik) or, rarely, an instance directly; so the
//! client sockets are those established on a front door's published port from anywhere but another
//! container of the stack, plus those on an instance's own port from anywhere but the stack's
//! containers and the gateways of its networks (the host's side, where exectl's own probes come from).
//! The front door's connections to the instances (its upstream keepalive among them) are the stack's
//! own, not clients. When no client socket is open, whatever the instances still count is held by no
//! socket at all.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::Script;

/// Starts each PID's part of the output.
const MARK: &str = "@@exectl-netns ";

/// Said in a PID's part when its sockets could not be read (hidepid /proc, a PID that exited, one
/// the shell's /proc does not show: another PID namespace, another host).
const UNREADABLE: &str = "@@exectl-unreadable";

/// The established sockets of each PID's network namespace: only lines in state 01 (ESTABLISHED)
/// are printed, the host filters them (a stack with 10,000 sockets open would send 1.5 MB otherwise).
/// A PID whose `net/tcp` cannot be read says so (`UNREADABLE`), never nothing: no line would read as
/// no socket. Its `tcp6` may be missing (a kernel without IPv6).
pub fn established(pids: &[i64]) -> Script {
    Script::new(format!(
        "for p in \"$@\"; do echo \"{MARK}$p\"; {{ cat /proc/$p/net/tcp 2>/dev/null || echo {UNREADABLE}; cat /proc/$p/net/tcp6 2>/dev/null; }} | grep -E '^{UNREADABLE}$|^ *[0-9]+: [0-9A-F]+:[0-9A-F]+ [0-9A-F]+:[0-9A-F]+ 01 '; done; true\n"
    ))
    .args(pids.iter().map(|p| p.to_string()))
}

/// One established socket: its local port and its peer's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Socket {
    pub local_port: u16,
    pub peer: IpAddr,
}

/// Each PID's sockets from `established`'s output, in the order of `pids`: None for a PID whose
/// sockets could not be read, or that the output says nothing of (a read that failed is no socket
/// known, never none).
pub fn parse_established(text: &str, pids: &[i64]) -> Vec<Option<Vec<Socket>>> {
    let mut parts: std::collections::HashMap<i64, Option<Vec<Socket>>> = Default::default();
    for chunk in text.split(MARK).skip(1) {
        let (pid, body) = chunk.split_once('\n').unwrap_or((chunk, ""));
        let Ok(pid) = pid.trim().parse() else {
            continue;
        };
        let read = (!body.lines().any(|l| l.trim() == UNREADABLE))
            .then(|| body.lines().filter_map(socket).collect());
        parts.insert(pid, read);
    }
    pids.iter().map(|p| parts.remove(p).flatten()).collect()
}

/// "   2: 0000000000000000FFFF0000040013AC:1F90 0000000000000000FFFF0000050013AC:CFD2 01 …".
fn socket(line: &str) -> Option<Socket> {
    let mut w = line.split_whitespace();
    w.next()?;
    let (_, local_port) = w.next()?.split_once(':')?;
    let (peer, _) = w.next()?.split_once(':')?;
    (w.next()? == "01").then_some(())?;
    Some(Socket {
        local_port: u16::from_str_radix(local_port, 16).ok()?,
        peer: address(peer)?,
    })
}

/// The kernel's hex address: an IPv4 address as one 32-bit word, an IPv6 one as four, each word in
/// the host's byte order (little-endian here); an IPv4-mapped IPv6 address is its IPv4 address.
fn address(hex: &str) -> Option<IpAddr> {
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = u32::from_str_radix(hex.get(i * 8..i * 8 + 8)?, 16).ok()?;
        Some(w.to_le_bytes())
    };
    match hex.len() {
        8 => Some(IpAddr::V4(Ipv4Addr::from(word(0)?))),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            let v6 = Ipv6Addr::from(b);
            Some(match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => IpAddr::V6(v6),
            })
        }
        _ => None,
    }
}

/// One container of the stack as the client count needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Netns {
    pub service: String,
    /// Its main process, whose `/proc/PID/net/tcp` was read.
    pub pid: i64,
    /// Ports clients reach it on: an instance's app port, a front door's published ports.
    pub client_ports: Vec<u16>,
    /// An app instance (its gateways' sockets are the host's: exectl's own probes).
    pub app: bool,
    /// It keeps sockets open for its whole life (an instance of a stack with Redis holds its relay's
    /// pub/sub connections): a read that finds none established was not of its namespace.
    pub always_connected: bool,
    /// Its networks' gateways.
    pub gateways: Vec<IpAddr>,
    /// None: they could not be read.
    pub sockets: Option<Vec<Socket>>,
}

/// The client sockets open to the stack: on each container's client ports, from any peer that is not
/// one of the stack's containers (`internal`), nor, for an instance, a gateway of its networks. Err
/// (why) when a container's sockets could not be read, or were read empty where it always holds some:
/// a count it leaves out would take a real client for none, and the app's connections for ghosts.
pub fn clients(containers: &[Netns], internal: &[IpAddr]) -> Result<u64, String> {
    let unread: Vec<String> = containers
        .iter()
        .filter_map(|c| match &c.sockets {
            None => Some(format!(
                "{}'s /proc/{}/net/tcp could not be read by the host's shell",
                c.service, c.pid
            )),
            Some(s) if s.is_empty() && c.always_connected => Some(format!(
                "{}'s /proc/{}/net/tcp shows no established socket where the instance holds its Redis connections: not its network namespace (another PID namespace?)",
                c.service, c.pid
            )),
            Some(_) => None,
        })
        .collect();
    if !unread.is_empty() {
        return Err(unread.join("; "));
    }
    Ok(containers
        .iter()
        .map(|c| {
            c.sockets
                .iter()
                .flatten()
                .filter(|s| c.client_ports.contains(&s.local_port))
                .filter(|s| !internal.contains(&s.peer))
                .filter(|s| !(c.app && c.gateways.contains(&s.peer)))
                .count() as u64
        })
        .sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Read on this machine after `prepare` on a leaking stand-in (ha ×1): app-1 at 172.19.0.4 holds
    /// its Redis and PostgreSQL connections and one socket on 8080 from nginx (172.19.0.5: its upstream
    /// keepalive); nginx has no client on port 80. The app counted 1 connection and 1 room.
    const APP: &str = "@@exectl-netns 1306
   1: 040013AC:A538 020013AC:18EB 01 00000000:00000000 00:00000000 00000000  1000        0 55560 1 000000009c14e9c5 20 4 30 11 -1
   3: 040013AC:A3C0 030013AC:1538 01 00000000:00000000 00:00000000 00000000  1000        0 55556 1 000000002d263069 20 4 24 29 -1
   2: 0000000000000000FFFF0000040013AC:1F90 0000000000000000FFFF0000050013AC:CFD2 01 00000000:00000000 00:00000000 00000000  1000        0 55784 1 00000000590381a6 20 4 31 11 -1
@@exectl-netns 1389
   4: 050013AC:CFD2 040013AC:1F90 01 00000000:00000000 00:00000000 00000000 65534        0 56379 1 00000000b524958f 20 4 32 11 -1
";

    fn v4(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn the_kernels_lines_are_read_as_ports_and_peers() {
        let parts = parse_established(APP, &[1306, 1389, 7]);
        let app = parts[0].as_ref().unwrap();
        assert_eq!(app.len(), 3);
        assert_eq!(
            app[2],
            Socket {
                local_port: 8080,
                peer: v4("172.19.0.5")
            }
        );
        assert_eq!(app[0].peer, v4("172.19.0.2"));
        assert_eq!(parts[1].as_ref().unwrap()[0].local_port, 0xCFD2);
        assert_eq!(parts[2], None, "a PID the host said nothing of is not read");
        assert_eq!(
            address("00000000000000000000000001000000"),
            Some("::1".parse().unwrap())
        );
        assert_eq!(
            socket("  0: 0B00007F:A799 00000000:0000 0A 0"),
            None,
            "listening"
        );
    }

    /// The ha stack of `APP`: app-1 and its front door, with these sockets.
    fn stack(app_sockets: Vec<Socket>, door_sockets: Vec<Socket>) -> Vec<Netns> {
        let gw = vec![v4("172.19.0.1")];
        vec![
            Netns {
                service: "app-1".into(),
                pid: 1306,
                client_ports: vec![8080],
                app: true,
                always_connected: false,
                gateways: gw.clone(),
                sockets: Some(app_sockets),
            },
            Netns {
                service: "nginx".into(),
                pid: 1389,
                client_ports: vec![80],
                app: false,
                always_connected: false,
                gateways: gw,
                sockets: Some(door_sockets),
            },
        ]
    }

    #[test]
    fn the_front_doors_upstream_and_our_probes_are_no_client() {
        let parts: Vec<Vec<Socket>> = parse_established(APP, &[1306, 1389])
            .into_iter()
            .map(Option::unwrap)
            .collect();
        let internal = [
            v4("172.19.0.2"),
            v4("172.19.0.3"),
            v4("172.19.0.4"),
            v4("172.19.0.5"),
        ];
        // The leaking stand-in after prepare: no client socket, its one connection a ghost.
        assert_eq!(
            clients(&stack(parts[0].clone(), parts[1].clone()), &internal),
            Ok(0)
        );
        // A probe of ours from the host (the gateway) to the instance is none either.
        let probe = Socket {
            local_port: 8080,
            peer: v4("172.19.0.1"),
        };
        assert_eq!(clients(&stack(vec![probe], vec![]), &internal), Ok(0));
        // Two clients at the front door (from the host through the published port, and from
        // another machine), and one dialling the instance from elsewhere: three.
        let door = |peer: &str| Socket {
            local_port: 80,
            peer: v4(peer),
        };
        let direct = Socket {
            local_port: 8080,
            peer: v4("10.0.0.9"),
        };
        assert_eq!(
            clients(
                &stack(vec![direct], vec![door("172.19.0.1"), door("10.0.0.7")]),
                &internal
            ),
            Ok(3)
        );
        // The door's own status port (the sampler's stub_status) is not a client port.
        let status = Socket {
            local_port: 8081,
            peer: v4("172.19.0.1"),
        };
        assert_eq!(clients(&stack(vec![], vec![status]), &internal), Ok(0));
    }

    /// Review of #36, H1: a PID whose files could not be read (hidepid, another PID namespace, a PID
    /// that exited) printed nothing but its mark, read as "no socket": the count was 0, a real client
    /// could pass for none and the app's connections for ghosts it leaked. A read that failed counts
    /// nothing: the count is unknown, naming why.
    #[test]
    fn a_read_that_failed_is_no_count_not_none() {
        let text = "@@exectl-netns 1306\n@@exectl-unreadable\n@@exectl-netns 1389\n";
        let parts = parse_established(text, &[1306, 1389]);
        assert_eq!(parts, [None, Some(vec![])]);
        let internal = [v4("172.19.0.4"), v4("172.19.0.5")];
        let mut s = stack(vec![], vec![]);
        s[0].sockets = None;
        assert_eq!(
            clients(&s, &internal),
            Err("app-1's /proc/1306/net/tcp could not be read by the host's shell".into())
        );
        // An instance that holds its Redis connections for its whole life, read with no established
        // socket at all: that read was of some other namespace.
        let mut s = stack(vec![], vec![]);
        s[0].always_connected = true;
        let why = clients(&s, &internal).unwrap_err();
        assert!(
            why.starts_with("app-1's /proc/1306/net/tcp shows no established socket"),
            "{why}"
        );
        // A front door with none is an idle one.
        assert_eq!(clients(&stack(vec![], vec![]), &internal), Ok(0));
    }

    #[test]
    fn the_script_filters_established_sockets_on_the_host() {
        let s = established(&[12, 34]);
        assert_eq!(s.args, ["12", "34"]);
        assert!(s
            .body
            .contains("cat /proc/$p/net/tcp 2>/dev/null || echo @@exectl-unreadable;"));
        assert!(s.body.contains(" 01 '"));
    }
}
