//! `doctor`'s verdicts, as data: facts in, checks out.
use super::super::facts::{Container, EngineConfig};
use super::*;

fn host() -> Host {
    Host {
        file_max: Some(2_097_152),
        port_range: Some((1024, 65535)),
        somaxconn: Some(65535),
        syn_backlog: Some(65535),
        conntrack_count: None,
        conntrack_max: None,
        load1: Some(0.1),
        nproc: Some(8),
        swap_total_kb: Some(0),
        swap_free_kb: Some(0),
        root_statfs: Some("ext2/ext3".into()),
        root_real: Some("/var/lib/docker".into()),
        mounts: vec![("/".into(), "ext4".into())],
    }
}

pub(crate) fn facts() -> Facts {
    Facts {
        link: Link::Local,
        engine: Ok(Engine {
            version: "24.0.7".into(),
            api_version: "1.43".into(),
            ncpu: Some(8),
            mem_total: Some(16 << 30),
            docker_root_dir: Some("/var/lib/docker".into()),
        }),
        max_nofile: Some(1 << 20),
        engine_config: Some(EngineConfig {
            userland_proxy: false,
            proxy_set_by: "\"userland-proxy\": false in /etc/docker/daemon.json".into(),
            default_nofile: Some(1 << 20),
            config_file: "/etc/docker/daemon.json".into(),
        }),
        host: Ok(host()),
        containers: Ok(vec![Container {
            name: "exectl-exe-nginx".into(),
            stack: Some("exe".into()),
        }]),
    }
}

fn opts(n: Option<u64>) -> Options {
    Options {
        connections: n,
        limits: None,
    }
}

fn check(f: &Facts, o: &Options, name: &str) -> Check {
    assess(f, o)
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no check {name}"))
}

fn level(f: &Facts, o: &Options, name: &str) -> Level {
    check(f, o, name).level
}

fn with_host(edit: impl FnOnce(&mut Host)) -> Facts {
    let mut f = facts();
    if let Ok(h) = &mut f.host {
        edit(h);
    }
    f
}

#[test]
fn a_tuned_host_passes_everything_in_a_fixed_order() {
    let checks = assess(&facts(), &opts(Some(10_000)));
    let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "local-engine",
            "engine-version",
            "cpu-memory",
            "nofile",
            "userland-proxy",
            "default-ulimits",
            "file-max",
            "ephemeral-ports",
            "somaxconn",
            "syn-backlog",
            "conntrack",
            "foreign-containers",
            "load-average",
            "data-root-fs",
            "swap"
        ]
    );
    for c in &checks {
        assert_eq!(c.level, Level::Pass, "{c:?}");
        assert!(c.fix.is_empty(), "{c:?}");
    }
}

#[test]
fn remote_link_lists_every_ssh_stage() {
    let mut f = facts();
    f.link = Link::Remote {
        url: "ssh://root@10.0.0.2:22".into(),
        peer: "10.0.0.2:22".into(),
        user: "root".into(),
        known_hosts: "/root/.ssh/known_hosts".into(),
        docker_socket: "/var/run/docker.sock".into(),
    };
    let checks = assess(&f, &opts(None));
    let names: Vec<&str> = checks.iter().take(5).map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "ssh-tcp",
            "ssh-handshake",
            "ssh-host-key",
            "ssh-auth",
            "ssh-docker-socket"
        ]
    );
    assert!(checks.iter().all(|c| c.level == Level::Pass));
}

#[test]
fn a_failed_ssh_stage_fails_and_skips_the_rest() {
    let f = Facts::unreachable(Link::Failed {
        remote: true,
        stage: Stage::Auth,
        message: "ssh stage auth: root@h refused every key tried (a); fix: add your key".into(),
    });
    let checks = assess(&f, &opts(Some(10)));
    let got: Vec<(&str, Level)> = checks.iter().map(|c| (c.name.as_str(), c.level)).collect();
    assert_eq!(
        got,
        [
            ("ssh-tcp", Level::Pass),
            ("ssh-handshake", Level::Pass),
            ("ssh-host-key", Level::Pass),
            ("ssh-auth", Level::Fail)
        ]
    );
    assert!(checks[3]
        .detail
        .starts_with("ssh stage auth: root@h refused"));
    assert!(checks[3].detail.contains("skipped"));
    assert_eq!(checks[3].fix, "add your key");
}

#[test]
fn a_failed_tcp_connect_is_the_only_check() {
    let f = Facts::unreachable(Link::Failed {
        remote: true,
        stage: Stage::Tcp,
        message: "ssh stage tcp: cannot connect".into(),
    });
    let checks = assess(&f, &opts(None));
    assert_eq!(checks.len(), 1);
    assert_eq!(
        (checks[0].name.as_str(), checks[0].level),
        ("ssh-tcp", Level::Fail)
    );
}

#[test]
fn an_engine_api_failure_passes_the_ssh_stages() {
    let f = Facts::unreachable(Link::Failed {
        remote: true,
        stage: Stage::EngineApi,
        message: "ssh stage engine api: old; fix: upgrade".into(),
    });
    let checks = assess(&f, &opts(None));
    assert_eq!(checks.len(), 6);
    assert!(checks[..5].iter().all(|c| c.level == Level::Pass));
    assert_eq!(
        (checks[5].name.as_str(), checks[5].level),
        ("engine-version", Level::Fail)
    );
}

#[test]
fn a_local_engine_that_does_not_answer_fails() {
    let f = Facts::unreachable(Link::Failed {
        remote: false,
        stage: Stage::EngineApi,
        message: "the Docker engine does not answer; fix: start it".into(),
    });
    let checks = assess(&f, &opts(None));
    assert_eq!(checks.len(), 1);
    assert_eq!(
        (checks[0].name.as_str(), checks[0].level),
        ("local-engine", Level::Fail)
    );
    assert_eq!(checks[0].fix, "start it");
    // An error without its own fix still gets one.
    let f = Facts::unreachable(Link::Failed {
        remote: false,
        stage: Stage::EngineApi,
        message: "Socket not found: /x.sock".into(),
    });
    assert!(assess(&f, &opts(None))[0].fix.contains("start the engine"));
}

#[test]
fn engine_version_thresholds() {
    let at = |v: &str, api: &str| {
        let mut f = facts();
        if let Ok(e) = &mut f.engine {
            e.version = v.into();
            e.api_version = api.into();
        }
        level(&f, &opts(None), "engine-version")
    };
    assert_eq!(at("20.10.24+dfsg1", "1.41"), Level::Pass);
    assert_eq!(at("20.10.0", "1.40"), Level::Warn);
    assert_eq!(at("19.03.15", "1.41"), Level::Warn);
    assert_eq!(at("29.0.1", "1.52"), Level::Pass);
    assert_eq!(at("dev", "1.41"), Level::Warn);
    let mut f = facts();
    f.engine = Err("connection refused".into());
    assert_eq!(level(&f, &opts(None), "engine-version"), Level::Fail);
}

fn limits(instances: u64, cpus: f64, memory_bytes: u64) -> Options {
    Options {
        connections: None,
        limits: Some(Limits {
            instances,
            cpus,
            memory_bytes,
            idle_mib: None,
            source: "flags".into(),
            defaulted: Default::default(),
        }),
    }
}

/// The same limits for the real app image, whose idle footprint is known.
fn real_app(instances: u64, memory_bytes: u64) -> Options {
    let mut o = limits(instances, 1.0, memory_bytes);
    o.limits.as_mut().unwrap().idle_mib =
        crate::footprint::idle_mib("ghcr.io/exelearning/exelearning:latest");
    o
}

#[test]
fn the_real_images_idle_footprint_is_in_the_memory_advice() {
    let f = facts(); // 8 CPUs, 16 GiB
    let c = check(&f, &real_app(4, 1 << 30), "cpu-memory");
    assert_eq!(c.level, Level::Pass);
    assert!(
        c.detail.contains("idles at 200–260 MiB per instance"),
        "{}",
        c.detail
    );
    // A limit the real app cannot idle in, and the same one for an image of unknown footprint.
    let c = check(&f, &real_app(1, 128 << 20), "cpu-memory");
    assert_eq!(c.level, Level::Fail, "{}", c.detail);
    assert!(c.fix.contains("--memory 640m or more"), "{}", c.fix);
    assert_eq!(
        level(&f, &limits(1, 1.0, 128 << 20), "cpu-memory"),
        Level::Pass
    );
    // 64 instances idle at about 16,640 MiB: more than the engine's 16 GiB.
    let c = check(&f, &real_app(64, 300 << 20), "cpu-memory");
    assert_eq!(c.level, Level::Fail, "{}", c.detail);
    assert!(c.fix.contains("--instances 63 or fewer"), "{}", c.fix);
}

#[test]
fn cpu_and_memory_limits_versus_the_engine() {
    let f = facts(); // 8 CPUs, 16 GiB
    assert_eq!(level(&f, &opts(None), "cpu-memory"), Level::Pass);
    assert_eq!(
        level(&f, &limits(4, 2.0, 4 << 30), "cpu-memory"),
        Level::Pass
    );
    let c = check(&f, &limits(5, 2.0, 1 << 30), "cpu-memory");
    assert_eq!(c.level, Level::Warn);
    assert!(
        c.detail.contains("5 app instances × 2 CPUs = 10 CPUs"),
        "{}",
        c.detail
    );
    assert_eq!(
        level(&f, &limits(4, 1.0, 5 << 30), "cpu-memory"),
        Level::Warn
    );
    assert_eq!(
        level(&f, &limits(1, 8.5, 1 << 30), "cpu-memory"),
        Level::Fail
    );
    assert_eq!(
        level(&f, &limits(1, 1.0, 17 << 30), "cpu-memory"),
        Level::Fail
    );
    let mut f = facts();
    if let Ok(e) = &mut f.engine {
        e.mem_total = None;
    }
    assert_eq!(level(&f, &opts(None), "cpu-memory"), Level::Warn);
}

#[test]
fn deploys_defaults_are_fitted_to_the_engine_as_deploy_fits_them() {
    // A 1-CPU, 1 GiB engine and `doctor --instances 1`: deploy would use --cpus 1 and --memory 1g.
    let mut f = facts();
    if let Ok(e) = &mut f.engine {
        (e.ncpu, e.mem_total) = (Some(1), Some(1 << 30));
    }
    let given = |cpus: Option<&'static str>| super::super::options::Given {
        instances: Some("1"),
        cpus,
        ..Default::default()
    };
    let o = super::super::options::options(&given(None)).unwrap();
    let c = check(&f, &o, "cpu-memory");
    assert_eq!(c.level, Level::Pass, "{}", c.detail);
    assert!(
        c.detail
            .contains("1 app instances × 1 CPUs and 1024 MiB fit")
            && c.detail
                .contains("deploy's defaults fitted to the engine: --cpus 1, --memory 1g"),
        "{}",
        c.detail
    );
    // A value given is judged as given: deploy refuses it.
    let o = super::super::options::options(&given(Some("2"))).unwrap();
    let c = check(&f, &o, "cpu-memory");
    assert_eq!(c.level, Level::Fail, "{}", c.detail);
    assert!(
        c.detail.contains("--cpus 2 exceeds the engine's 1 CPUs"),
        "{}",
        c.detail
    );
}

#[test]
fn nofile_versus_connections() {
    let mut f = facts();
    f.max_nofile = Some(20_000);
    assert_eq!(level(&f, &opts(Some(20_000)), "nofile"), Level::Pass);
    assert_eq!(level(&f, &opts(Some(20_001)), "nofile"), Level::Fail);
    assert_eq!(level(&f, &opts(None), "nofile"), Level::Pass);
    f.max_nofile = None;
    assert_eq!(level(&f, &opts(None), "nofile"), Level::Warn);
}

#[test]
fn file_max_versus_connections() {
    let f = with_host(|h| h.file_max = Some(20_000));
    assert_eq!(level(&f, &opts(Some(10_000)), "file-max"), Level::Pass);
    assert_eq!(level(&f, &opts(Some(10_001)), "file-max"), Level::Warn);
    assert_eq!(level(&f, &opts(Some(20_000)), "file-max"), Level::Warn);
    assert_eq!(level(&f, &opts(Some(20_001)), "file-max"), Level::Fail);
}

#[test]
fn ephemeral_ports_versus_connections() {
    // The default range: 28232 ports.
    let f = with_host(|h| h.port_range = Some((32768, 60999)));
    assert_eq!(level(&f, &opts(None), "ephemeral-ports"), Level::Pass);
    assert_eq!(level(&f, &opts(Some(100)), "ephemeral-ports"), Level::Pass);
    assert_eq!(
        level(&f, &opts(Some(22_585)), "ephemeral-ports"),
        Level::Pass
    );
    assert_eq!(
        level(&f, &opts(Some(22_586)), "ephemeral-ports"),
        Level::Warn
    );
    assert_eq!(
        level(&f, &opts(Some(28_232)), "ephemeral-ports"),
        Level::Warn
    );
    let c = check(&f, &opts(Some(28_233)), "ephemeral-ports");
    assert_eq!(c.level, Level::Fail);
    assert!(c.detail.contains("a single client address"), "{}", c.detail);
    assert!(
        c.fix.contains("exectl host tune --role client"),
        "{}",
        c.fix
    );
    assert!(c.fix.contains("several source addresses"), "{}", c.fix);
    let f = with_host(|h| h.port_range = None);
    assert_eq!(level(&f, &opts(Some(1)), "ephemeral-ports"), Level::Warn);
}

#[test]
fn accept_queue_and_syn_backlog() {
    let f = with_host(|h| {
        h.somaxconn = Some(4096);
        h.syn_backlog = Some(4096)
    });
    assert_eq!(level(&f, &opts(None), "somaxconn"), Level::Pass);
    assert_eq!(level(&f, &opts(None), "syn-backlog"), Level::Pass);
    let f = with_host(|h| {
        h.somaxconn = Some(4095);
        h.syn_backlog = Some(2048)
    });
    let c = check(&f, &opts(None), "somaxconn");
    assert_eq!(c.level, Level::Warn);
    assert!(c.fix.contains("exectl host tune --role sut"));
    assert_eq!(level(&f, &opts(None), "syn-backlog"), Level::Warn);
}

#[test]
fn conntrack_headroom() {
    let ct = |count, max| {
        with_host(|h| {
            h.conntrack_count = count;
            h.conntrack_max = max
        })
    };
    let c = check(&ct(None, None), &opts(Some(10)), "conntrack");
    assert_eq!(c.level, Level::Pass);
    assert!(c.detail.contains("conntrack not loaded"));
    assert_eq!(
        level(&ct(Some(800), Some(1000)), &opts(None), "conntrack"),
        Level::Pass
    );
    assert_eq!(
        level(&ct(Some(801), Some(1000)), &opts(None), "conntrack"),
        Level::Warn
    );
    let f = ct(Some(0), Some(20_000));
    assert_eq!(level(&f, &opts(Some(10_000)), "conntrack"), Level::Pass);
    assert_eq!(level(&f, &opts(Some(10_001)), "conntrack"), Level::Warn);
    assert_eq!(
        level(&ct(Some(1), None), &opts(None), "conntrack"),
        Level::Warn
    );
}

#[test]
fn foreign_containers_are_named() {
    let mut f = facts();
    assert_eq!(level(&f, &opts(None), "foreign-containers"), Level::Pass);
    let mut cs: Vec<Container> = (1..=7)
        .map(|i| Container {
            name: format!("other-{i}"),
            stack: None,
        })
        .collect();
    cs.push(Container {
        name: "exectl-exe-app-1".into(),
        stack: Some("exe".into()),
    });
    f.containers = Ok(cs);
    let c = check(&f, &opts(None), "foreign-containers");
    assert_eq!(c.level, Level::Warn);
    assert!(
        c.detail.starts_with("7 running container(s)"),
        "{}",
        c.detail
    );
    assert!(c
        .detail
        .contains("other-1, other-2, other-3, other-4, other-5 and 2 more"));
    assert!(!c.detail.contains("exectl-exe-app-1"));
    assert!(c.fix.contains("29 foreign containers"));
    f.containers = Err("denied".into());
    assert_eq!(level(&f, &opts(None), "foreign-containers"), Level::Warn);
}

#[test]
fn load_average_versus_cpus() {
    // 8 CPUs from the engine: the limit is 4.
    assert_eq!(
        level(
            &with_host(|h| h.load1 = Some(4.0)),
            &opts(None),
            "load-average"
        ),
        Level::Pass
    );
    assert_eq!(
        level(
            &with_host(|h| h.load1 = Some(4.01)),
            &opts(None),
            "load-average"
        ),
        Level::Warn
    );
    // Without the engine's count, the host's.
    let mut f = with_host(|h| {
        h.load1 = Some(1.5);
        h.nproc = Some(2)
    });
    if let Ok(e) = &mut f.engine {
        e.ncpu = None;
    }
    assert_eq!(level(&f, &opts(None), "load-average"), Level::Warn);
}

#[test]
fn data_root_filesystem() {
    let on = |fs: &str| {
        with_host(|h| {
            h.mounts = vec![
                ("/".into(), "ext4".into()),
                ("/var/lib/docker".into(), fs.into()),
            ]
        })
    };
    for fs in ["ext4", "xfs", "btrfs", "overlay", "zfs"] {
        assert_eq!(
            level(&on(fs), &opts(None), "data-root-fs"),
            Level::Pass,
            "{fs}"
        );
    }
    for fs in [
        "tmpfs",
        "9p",
        "nfs",
        "nfs4",
        "cifs",
        "fuse.sshfs",
        "fuseblk",
        "virtiofs",
    ] {
        assert_eq!(
            level(&on(fs), &opts(None), "data-root-fs"),
            Level::Warn,
            "{fs}"
        );
    }
    assert!(check(&on("9p"), &opts(None), "data-root-fs")
        .detail
        .contains("586 of 1,000 writes"));
    // A symlinked data root is judged where it really lives.
    let f = with_host(|h| {
        h.root_real = Some("/mnt/share/docker".into());
        h.mounts = vec![
            ("/".into(), "ext4".into()),
            ("/mnt/share".into(), "9p".into()),
        ]
    });
    assert_eq!(level(&f, &opts(None), "data-root-fs"), Level::Warn);
    // No mount table: stat -f's answer.
    let f = with_host(|h| {
        h.mounts.clear();
        h.root_statfs = Some("tmpfs".into())
    });
    assert_eq!(level(&f, &opts(None), "data-root-fs"), Level::Warn);
}

#[test]
fn swap_enabled_warns() {
    assert_eq!(level(&facts(), &opts(None), "swap"), Level::Pass);
    let f = with_host(|h| {
        h.swap_total_kb = Some(2 << 20);
        h.swap_free_kb = Some(1 << 20)
    });
    let c = check(&f, &opts(None), "swap");
    assert_eq!(c.level, Level::Warn);
    assert!(
        c.detail.contains("2048 MiB, 1024 MiB in use"),
        "{}",
        c.detail
    );
    assert!(c.detail.contains("swap can hide memory limits"));
}

#[test]
fn an_unreadable_host_warns_on_each_host_check() {
    let mut f = facts();
    f.host = Err("host script failed".into());
    let checks = assess(&f, &opts(Some(10)));
    for name in [
        "file-max",
        "ephemeral-ports",
        "somaxconn",
        "syn-backlog",
        "conntrack",
        "swap",
    ] {
        let c = checks.iter().find(|c| c.name == name).unwrap();
        assert_eq!(c.level, Level::Warn, "{name}");
        assert!(
            c.detail.contains("host script failed"),
            "{name}: {}",
            c.detail
        );
    }
}

#[test]
fn splits_fix_and_reads_versions() {
    assert_eq!(
        split_fix("a b; fix: c"),
        ("a b".to_string(), "c".to_string())
    );
    assert_eq!(split_fix("a b"), ("a b".to_string(), String::new()));
    assert_eq!(major_minor("20.10.24+dfsg1"), Some((20, 10)));
    assert_eq!(major_minor("1.41"), Some((1, 41)));
    assert_eq!(major_minor("v25.0"), Some((25, 0)));
    assert_eq!(major_minor("dev"), None);
}
