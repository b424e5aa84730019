//! The ports something listens on, from the host's /proc/net/tcp and tcp6.

use exectl_core::scripts::Script;

pub fn listening() -> Script {
    Script::new("cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; true")
}

/// The ports in LISTEN state (`local_address` is HEXADDR:HEXPORT, state 0A is LISTEN), sorted, once each.
pub fn parse_listening(proc_net_tcp: &str) -> Vec<u16> {
    let mut ports: Vec<u16> = proc_net_tcp
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let local = f.nth(1)?;
            let state = f.nth(1)?;
            (state == "0A")
                .then(|| local.rsplit_once(':'))
                .flatten()
                .and_then(|(_, port)| u16::from_str_radix(port, 16).ok())
        })
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_listen_lines_of_tcp_and_tcp6() {
        assert_eq!(
            listening().command_line(),
            "sh -c 'cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; true' sh"
        );
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 00000000:1F9A 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n\
   1: 0100007F:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1\n\
   2: 0100007F:9C40 0100007F:1F9A 01 00000000:00000000 00:00000000 00000000     0        0 3 1\n\
   0: 00000000000000000000000000000000:1F9A 00000000000000000000000000000000:0000 0A 0 0 0 0 0 4 1\n";
        assert_eq!(parse_listening(text), [22, 8090]);
        assert_eq!(parse_listening(""), Vec::<u16>::new());
    }
}
