//! Before any dial: can this client hold the run? Open files (one per socket) and ephemeral ports (one
//! per connection to the same front door; the MQTT seed hit 16,384) versus the number of users. A run
//! that cannot fit fails here with the fix, not halfway through with EMFILE or EADDRNOTAVAIL.

use std::net::IpAddr;

use exectl_core::error::UsageError;
use exectl_core::load::{slices, sources};

/// File descriptors the generator itself needs besides one per user socket: stdio, the runtime, the
/// HTTP pool, the probe, /proc reads.
pub const FD_SLACK: u64 = 64;

/// What the run needs of the client.
#[derive(Debug, Clone, Copy)]
pub struct Needs {
    /// Sockets held at once (one per user for WebSocket scenarios).
    pub sockets: u64,
    /// Extra HTTP connections at once (dials in flight, the probe).
    pub http: u64,
    /// `--source-addrs` given (0: the kernel's one choice); each has a port range of its own.
    pub sources: usize,
    /// `--processes` given (None: as many as the open-file hard limit requires).
    pub processes: Option<usize>,
}

impl Needs {
    /// What a run of `opts` needs (its dials in flight and the probe besides the sockets).
    pub fn of(opts: &super::LoadOptions) -> Needs {
        Needs {
            sockets: if opts.scenario.uses_socket() {
                opts.users_here() as u64
            } else {
                0
            },
            http: opts.dial_concurrency as u64 + 1,
            sources: opts.sources.len(),
            processes: opts.processes,
        }
    }

    /// Open files of one process running the whole run.
    pub fn fds(&self) -> u64 {
        self.sockets + self.http + FD_SLACK
    }
    /// `--processes`, or as many as a hard limit of `hard` open files requires.
    pub fn processes_under(&self, hard: u64) -> usize {
        self.processes
            .unwrap_or_else(|| slices::processes_needed(self.fds(), hard, FD_SLACK))
    }

    /// Open files of each of `p` processes sharing it.
    pub fn fds_each(&self, p: usize) -> u64 {
        (self.sockets + self.http).div_ceil(p.max(1) as u64) + FD_SLACK
    }
    pub fn ports(&self) -> u64 {
        self.sockets + self.http
    }
}

/// What preflight settled: the processes to run, and the soft limit each raises its own to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    pub processes: usize,
    pub raise_to: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub nofile_soft: u64,
    pub nofile_hard: u64,
    /// Size of net.ipv4.ip_local_port_range, when readable.
    pub ephemeral_ports: Option<u64>,
}

/// The verdict, pure: how many processes and what soft limit, or why the run cannot be held — every
/// limit it would pass, named at once with its fix (open files and ports both, when both are short).
pub fn check(needs: Needs, limits: Limits) -> Result<Fit, UsageError> {
    let hard = limits.nofile_hard;
    let auto = Needs {
        processes: None,
        ..needs
    }
    .processes_under(hard);
    let processes = needs.processes_under(hard);
    let fds = needs.fds_each(processes);
    let mut problems = Vec::new();
    let mut fixes = Vec::new();
    // One process over the hard limit: named whenever the run is refused, so the reader sees both walls.
    let files = match processes {
        1 => format!("needs about {} open files but RLIMIT_NOFILE's hard limit is {hard}", fds),
        p => format!(
            "needs about {} open files, {fds} in each of {p} processes, and RLIMIT_NOFILE's hard limit is {hard}",
            needs.fds()
        ),
    };
    let split = |p: usize| {
        format!("split the users over {p} processes (--processes {p}, the default when not given)")
    };
    if fds > hard {
        problems.push(files.clone());
        if auto <= slices::MAX_PROCESSES {
            fixes.push(split(auto));
        }
        fixes.push(format!(
            "raise the hard limit (e.g. `ulimit -Hn {}` as root, or LimitNOFILE= in the unit)",
            needs.fds()
        ));
    }
    if let Some(ports) = limits.ephemeral_ports {
        let fits = sources::capacity(needs.sources, ports);
        if needs.ports() > fits {
            let want = sources::needed(needs.ports(), ports);
            let given = match needs.sources {
                0 => "one source address".to_string(),
                n => format!("{n} source addresses"),
            };
            problems.push(format!(
                "needs about {} connections to one front door but {given} × {ports} ephemeral ports \
                 (/proc/sys/net/ipv4/ip_local_port_range) hold {fits}",
                needs.ports()
            ));
            fixes.push(format!(
                "dial from {want} or more source addresses (--source-addrs {} \
                 on loopback; on a real client, its NIC's addresses), or widen the range \
                 (sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\", or `exectl host tune`)",
                sources::loopback_range(want)
            ));
            if fds <= hard && needs.fds() > hard {
                problems.push(format!(
                    "(open files fit with --processes {processes}, its default here: {files})"
                ));
            }
        }
    }
    if !problems.is_empty() {
        fixes.push("or lower --users, or shard the manifest over several clients".into());
        return Err(UsageError::new(
            "--users",
            needs.sockets,
            problems.join("; and "),
            fixes.join("; "),
        ));
    }
    Ok(Fit {
        processes,
        raise_to: (fds > limits.nofile_soft).then_some(hard),
    })
}

/// The processes a run of `opts` takes: `--processes`, or as many as the hard limit requires.
pub fn processes(opts: &super::LoadOptions) -> usize {
    if !opts.generators.local && !opts.generators.hosts.is_empty() {
        return 0;
    }
    Needs::of(opts).processes_under(read_limits().nofile_hard)
}

/// Ports in "LOW\tHIGH".
pub fn parse_port_range(text: &str) -> Option<u64> {
    let mut it = text.split_whitespace().map(|s| s.parse::<u64>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    (hi >= lo).then(|| hi - lo + 1)
}

pub fn read_limits() -> Limits {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into a valid local struct.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    let (soft, hard) = if ok {
        (lim.rlim_cur, lim.rlim_max)
    } else {
        (1024, 1024)
    };
    let ephemeral_ports = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| parse_port_range(&t));
    Limits {
        nofile_soft: soft,
        nofile_hard: hard,
        ephemeral_ports,
    }
}

/// Raise RLIMIT_NOFILE's soft limit to `to` (at most the hard limit).
pub fn raise_nofile(to: u64) -> std::io::Result<()> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        lim.rlim_cur = to.min(lim.rlim_max);
        if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Each source address is one of this host's: bound once (port 0, released at once), so that a typo
/// is refused here and not as every dial's failure.
pub fn check_sources(addrs: &[IpAddr]) -> Result<(), UsageError> {
    for ip in addrs {
        std::net::TcpListener::bind((*ip, 0)).map_err(|e| {
            UsageError::new(
                "--source-addrs",
                ip,
                format!("not an address of this host (bind: {e})"),
                "give addresses of this host's interfaces (`ip -br addr`); any 127.x.y.z is on loopback",
            )
        })?;
    }
    Ok(())
}

/// Check the source addresses and the limits, and raise the soft limit if needed (each slice of a run
/// over processes raises its own). Returns the limits in force afterwards and the processes to run.
pub fn ensure(needs: Needs, addrs: &[IpAddr]) -> Result<(Limits, usize), UsageError> {
    check_sources(addrs)?;
    let mut limits = read_limits();
    let fit = check(needs, limits)?;
    if let Some(to) = fit.raise_to {
        raise_nofile(to).map_err(|e| {
            UsageError::new(
                "--users",
                needs.sockets,
                format!("cannot raise RLIMIT_NOFILE's soft limit to {to}: {e}"),
                format!("run `ulimit -n {to}` first"),
            )
        })?;
        limits = read_limits();
    }
    Ok((limits, fit.processes))
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: Limits = Limits {
        nofile_soft: 1024,
        nofile_hard: 20_000,
        ephemeral_ports: Some(28_232),
    };

    #[test]
    fn fits_raises_or_refuses() {
        let small = Needs {
            sockets: 100,
            http: 10,
            sources: 0,
            processes: None,
        };
        let one = |raise_to| Fit {
            processes: 1,
            raise_to,
        };
        assert_eq!(check(small, L).unwrap(), one(None));
        let big = Needs {
            sockets: 10_000,
            http: 64,
            sources: 0,
            processes: None,
        };
        assert_eq!(check(big, L).unwrap(), one(Some(20_000)));
        // 20,000 sockets do not fit one process: two by default, refused with one asked.
        let two = Needs {
            sockets: 20_000,
            http: 64,
            sources: 0,
            processes: None,
        };
        assert_eq!(check(two, L).unwrap().processes, 2);
        let e = check(
            Needs {
                processes: Some(1),
                ..two
            },
            L,
        )
        .unwrap_err();
        assert!(e.problem.contains("RLIMIT_NOFILE"), "{e}");
        assert!(e.fix.contains("--processes 2"), "{e}");
        let ports = Limits {
            nofile_hard: 100_000,
            ephemeral_ports: Some(16_384),
            ..L
        };
        let e = check(
            Needs {
                sockets: 20_000,
                http: 0,
                sources: 0,
                processes: None,
            },
            ports,
        )
        .unwrap_err();
        assert!(e.fix.contains("ip_local_port_range"), "{e}");
    }

    #[test]
    fn source_addresses_multiply_the_ports_not_the_files() {
        let wide = Limits {
            nofile_hard: 100_000,
            ..L
        };
        let users = |sources| Needs {
            sockets: 50_000,
            http: 65,
            sources,
            processes: Some(1),
        };
        // One address: 28,232 ports hold fewer than 50,065 connections; the fix says how many addresses.
        let e = check(users(0), wide).unwrap_err();
        assert!(e.problem.contains("one source address × 28232"), "{e}");
        assert!(e.fix.contains("--source-addrs 127.0.0.1-127.0.0.2 "), "{e}");
        assert!(check(users(2), wide).is_ok());
        // The addresses do nothing for the open files: the hard limit still refuses, alone.
        let e = check(users(16), L).unwrap_err();
        assert!(e.problem.contains("RLIMIT_NOFILE"), "{e}");
        assert!(!e.problem.contains("ephemeral"), "{e}");
        // Both short: both named, each with its fix.
        let e = check(users(0), L).unwrap_err();
        assert!(
            e.problem.contains("RLIMIT_NOFILE") && e.problem.contains("ephemeral"),
            "{e}"
        );
        assert!(
            e.fix.contains("ulimit -Hn") && e.fix.contains("--source-addrs"),
            "{e}"
        );
        // No --processes: three processes hold the files, and a refusal for the ports still names
        // the file limit and the split that fits it.
        let auto = |sources| Needs {
            processes: None,
            ..users(sources)
        };
        assert_eq!(check(auto(2), L).unwrap().processes, 3);
        let e = check(auto(0), L).unwrap_err();
        assert!(
            e.problem.contains("ephemeral")
                && e.problem.contains("open files fit")
                && e.problem
                    .contains("each of 3 processes, and RLIMIT_NOFILE's hard limit is 20000"),
            "{e}"
        );
    }

    #[test]
    fn a_source_address_not_of_this_host_is_refused() {
        check_sources(&["127.0.0.9".parse().unwrap()]).unwrap();
        // TEST-NET-3: documentation only, on no interface.
        let e = check_sources(&["203.0.113.9".parse().unwrap()]).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.value.as_str()),
            ("--source-addrs", "203.0.113.9")
        );
    }

    #[test]
    fn port_range() {
        assert_eq!(parse_port_range("32768\t60999\n"), Some(28_232));
        assert_eq!(parse_port_range("1024 65535"), Some(64_512));
        assert_eq!(parse_port_range("x"), None);
        assert_eq!(parse_port_range("10 5"), None);
    }
}
