//! `--source-addrs`: the local addresses the generator's dials bind to, user i on address i mod n. One
//! source address towards one server address and port has one ephemeral port range (28,232 ports here);
//! n addresses have n of them, so the run's connection capacity is n × the range.

use core::net::{IpAddr, Ipv4Addr};

use crate::error::UsageError;

/// More addresses than any client needs (1,024 × 28k ports is far past any file limit).
pub const MAX: usize = 1024;

const FIELD: &str = "--source-addrs";
const FIX: &str = "give a range (127.0.0.1-127.0.0.16), a CIDR block (127.0.0.0/28) or a list \
                   (10.0.0.5,10.0.0.6): addresses of this host";

/// The addresses of `text`: items separated by commas, each an address, an IPv4 range `A-B`
/// (inclusive) or a CIDR block `A/P` (its hosts: without the network and broadcast addresses below /31).
/// In the order given; a repeated address, an empty list or more than `MAX` are refused.
pub fn parse(text: &str) -> Result<Vec<IpAddr>, UsageError> {
    let bad = |problem: String| UsageError::new(FIELD, text, problem, FIX);
    let mut out: Vec<IpAddr> = Vec::new();
    for item in text.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(bad("an empty item".into()));
        }
        let (first, last) = if let Some((a, b)) = item.split_once('-') {
            let (a, b) = (v4(a.trim()), v4(b.trim()));
            match (a, b) {
                (Some(a), Some(b)) if a <= b => (u32::from(a), u32::from(b)),
                (Some(_), Some(_)) => return Err(bad(format!("{item}: the range runs backwards"))),
                _ => return Err(bad(format!("{item}: a range is of two IPv4 addresses"))),
            }
        } else if let Some((a, p)) = item.split_once('/') {
            let (Some(a), Ok(p)) = (v4(a.trim()), p.trim().parse::<u32>()) else {
                return Err(bad(format!(
                    "{item}: a CIDR block is an IPv4 address / 0..32"
                )));
            };
            if p > 32 {
                return Err(bad(format!("{item}: a prefix is at most 32")));
            }
            let mask = if p == 0 { 0 } else { u32::MAX << (32 - p) };
            let net = u32::from(a) & mask;
            let bcast = net | !mask;
            match p {
                31 | 32 => (net, bcast),
                _ => (net + 1, bcast - 1),
            }
        } else {
            match item.parse::<IpAddr>() {
                Ok(ip) => {
                    push(&mut out, ip).map_err(bad)?;
                    continue;
                }
                Err(_) => return Err(bad(format!("{item}: not an IP address"))),
            }
        };
        if (last - first) as usize >= MAX {
            return Err(bad(format!("more than {MAX} addresses")));
        }
        for n in first..=last {
            push(&mut out, IpAddr::V4(Ipv4Addr::from(n))).map_err(bad)?;
        }
    }
    Ok(out)
}

fn v4(s: &str) -> Option<Ipv4Addr> {
    s.parse().ok()
}

fn push(out: &mut Vec<IpAddr>, ip: IpAddr) -> Result<(), String> {
    if let Some(what) = not_a_source(ip) {
        return Err(format!("{ip} is {what}: not an address to dial from"));
    }
    if out.contains(&ip) {
        return Err(format!("{ip} is given twice"));
    }
    if out.len() == MAX {
        return Err(format!("more than {MAX} addresses"));
    }
    out.push(ip);
    Ok(())
}

/// What `ip` is when no socket can be bound to it to dial: the unspecified address (bound, it lets the
/// kernel choose: no source of its own), a multicast or the broadcast address.
fn not_a_source(ip: IpAddr) -> Option<&'static str> {
    match ip {
        _ if ip.is_unspecified() => {
            Some("the unspecified address (it leaves the kernel to choose)")
        }
        _ if ip.is_multicast() => Some("a multicast address"),
        IpAddr::V4(v4) if v4.is_broadcast() => Some("the broadcast address"),
        _ => None,
    }
}

fn family(ip: IpAddr) -> &'static str {
    match ip {
        IpAddr::V4(_) => "IPv4",
        IpAddr::V6(_) => "IPv6",
    }
}

/// Every source address is of the front door's family: a socket of one family cannot dial the other,
/// so each of its users would fail. `text` is the flag's value, for the error.
pub fn check_family(sources: &[IpAddr], door: IpAddr, text: &str) -> Result<(), UsageError> {
    let Some(other) = sources.iter().find(|s| s.is_ipv4() != door.is_ipv4()) else {
        return Ok(());
    };
    let example = match door {
        IpAddr::V4(_) => "127.0.0.1-127.0.0.16 on loopback",
        IpAddr::V6(_) => "::1 on loopback",
    };
    Err(UsageError::new(
        FIELD,
        text,
        format!(
            "{other} is {} and the front door's address {door} is {}: a socket cannot dial across \
             families, so every user dialling from it would fail",
            family(*other),
            family(door)
        ),
        format!(
            "give {} addresses of this host (e.g. --source-addrs {example}), or a front door of the \
             addresses' family",
            family(door)
        ),
    ))
}

/// The address user `i` dials from (None: the kernel chooses).
pub fn of_user(sources: &[IpAddr], i: usize) -> Option<IpAddr> {
    (!sources.is_empty()).then(|| sources[i % sources.len()])
}

/// Connections the run may hold to one server address and port: one port range per source address
/// (the kernel's own choice of source counts as one).
pub fn capacity(sources: usize, ports_per_source: u64) -> u64 {
    sources.max(1) as u64 * ports_per_source
}

/// Source addresses a run of `connections` needs with `ports_per_source` ports each.
pub fn needed(connections: u64, ports_per_source: u64) -> u64 {
    connections.div_ceil(ports_per_source.max(1))
}

/// `n` loopback addresses from 127.0.0.1 as a range (`127.0.0.1-127.0.1.4` past 254: it carries).
pub fn loopback_range(n: u64) -> String {
    let first = u32::from(Ipv4Addr::new(127, 0, 0, 1));
    let last = Ipv4Addr::from(first + n.clamp(1, MAX as u64) as u32 - 1);
    format!("127.0.0.1-{last}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_ranges_carry_past_one_octet() {
        assert_eq!(loopback_range(2), "127.0.0.1-127.0.0.2");
        assert_eq!(loopback_range(300), "127.0.0.1-127.0.1.44");
        assert_eq!(parse(&loopback_range(300)).unwrap().len(), 300);
    }

    fn ips(text: &str) -> Vec<String> {
        parse(text).unwrap().iter().map(|i| i.to_string()).collect()
    }

    #[test]
    fn ranges_blocks_and_lists() {
        assert_eq!(
            ips("127.0.0.1-127.0.0.3"),
            ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
        );
        assert_eq!(parse("127.0.0.1-127.0.0.16").unwrap().len(), 16);
        // A block's hosts: /28 has 14, /31 and /32 are all addresses.
        let b = ips("10.1.2.0/28");
        assert_eq!(
            (b.len(), b[0].as_str(), b[13].as_str()),
            (14, "10.1.2.1", "10.1.2.14")
        );
        assert_eq!(ips("10.0.0.4/31"), ["10.0.0.4", "10.0.0.5"]);
        assert_eq!(ips("10.0.0.4/32"), ["10.0.0.4"]);
        assert_eq!(
            ips("10.0.0.5, 10.0.0.7-10.0.0.8,::1"),
            ["10.0.0.5", "10.0.0.7", "10.0.0.8", "::1"]
        );
        let s = parse("127.0.0.1-127.0.0.4").unwrap();
        let who: Vec<_> = (0..6)
            .map(|i| of_user(&s, i).unwrap().to_string())
            .collect();
        assert_eq!(who[0], "127.0.0.1");
        assert_eq!(who[4], "127.0.0.1", "round-robin");
        assert_eq!(of_user(&[], 3), None);
    }

    #[test]
    fn bad_lists_name_the_flag_the_item_and_the_fix() {
        for (text, says) in [
            ("", "empty"),
            ("127.0.0.1,", "empty"),
            ("127.0.0.9-127.0.0.1", "backwards"),
            ("::1-::2", "two IPv4"),
            ("10.0.0.0/33", "at most 32"),
            ("10.0.0.0/x", "CIDR"),
            ("localhost", "not an IP"),
            ("127.0.0.1,127.0.0.1", "twice"),
            ("10.0.0.0/8", "more than 1024"),
            ("10.0.0.0-10.1.0.0", "more than 1024"),
            ("0.0.0.0", "unspecified address"),
            ("::", "unspecified address"),
            ("127.0.0.1,0.0.0.0", "not an address to dial from"),
            ("0.0.0.0/31", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("ff02::1", "multicast"),
            ("255.255.255.254-255.255.255.255", "broadcast"),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.field, "--source-addrs", "{text}");
            assert!(e.problem.contains(says), "{text:?}: {e}");
            assert!(e.fix.contains("127.0.0.1-127.0.0.16"), "{e}");
        }
    }

    #[test]
    fn sources_of_the_other_family_than_the_front_door_are_refused() {
        let v4: IpAddr = "127.0.0.1".parse().unwrap();
        let v6: IpAddr = "::1".parse().unwrap();
        let lo4 = parse("127.0.0.1-127.0.0.2").unwrap();
        assert!(check_family(&lo4, v4, "x").is_ok());
        assert!(check_family(&[], v6, "x").is_ok());
        let e = check_family(&parse("::1").unwrap(), v4, "::1").unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.value.as_str()),
            ("--source-addrs", "::1")
        );
        assert!(
            e.problem
                .contains("::1 is IPv6 and the front door's address 127.0.0.1 is IPv4"),
            "{e}"
        );
        assert!(e.fix.contains("give IPv4 addresses"), "{e}");
        let e = check_family(&lo4, v6, "127.0.0.1-127.0.0.2").unwrap_err();
        assert!(e.problem.contains("127.0.0.1 is IPv4"), "{e}");
        assert!(e.fix.contains("--source-addrs ::1"), "{e}");
    }

    #[test]
    fn capacity_is_a_port_range_per_address() {
        assert_eq!(capacity(0, 28_232), 28_232);
        assert_eq!(capacity(16, 28_232), 451_712);
        assert_eq!(needed(50_000, 28_232), 2);
        assert_eq!(needed(28_232, 28_232), 1);
    }
}
