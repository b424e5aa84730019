use std::collections::BTreeMap;
use std::path::Path;

use super::placement::{place, Node, ROLE_APP, ROLE_LABEL};
use super::service::{services, SwarmService, LABEL_NODE};
use super::stack;
use crate::desired::{Desired, LABEL_HASH};
use crate::render::Templates;
use crate::secrets::Secrets;
use crate::spec;

const BUNDLE: &str = "/opt/exectl/s/bundle";

fn rendered(flags: &[(&'static str, &str)]) -> (Desired, BTreeMap<String, Vec<u8>>) {
    let spec = spec::resolve(spec::ha_input(flags)).unwrap();
    let secrets = Secrets::parse(
        "APP_SECRET=a\nAPI_JWT_SECRET=b\nDB_PASSWORD=c\nDB_ROOT_PASSWORD=d\nADMIN_PASSWORD=e\n",
    );
    let r =
        crate::pipeline::desired_state(&spec, &secrets, &Templates::embedded(), Path::new(BUNDLE))
            .unwrap();
    let files = r
        .bundle
        .files
        .iter()
        .map(|f| (f.path.to_string(), f.bytes.clone()))
        .collect();
    (r.desired, files)
}

fn nodes() -> Vec<Node> {
    let node = |host: &str, leader: bool| Node {
        id: format!("id-{host}"),
        hostname: host.into(),
        addr: "10.0.0.1".into(),
        manager: leader,
        leader,
        ready: true,
        labels: if leader {
            BTreeMap::new()
        } else {
            BTreeMap::from([(ROLE_LABEL.to_string(), ROLE_APP.to_string())])
        },
    };
    vec![node("n1", true), node("n2", false), node("n3", false)]
}

fn swarm(flags: &[(&'static str, &str)]) -> (Desired, Vec<SwarmService>) {
    let (d, files) = rendered(flags);
    let names: Vec<String> = d.services.iter().map(|s| s.name.clone()).collect();
    let p = place(&names, &[], &nodes(), "n1").unwrap();
    let s = services(&d, &p, Path::new(BUNDLE), &files).unwrap();
    (d, s)
}

fn by_name<'a>(s: &'a [SwarmService], name: &str) -> &'a SwarmService {
    s.iter().find(|x| x.service == name).unwrap()
}

#[test]
fn every_service_is_pinned_and_nginx_conf_is_a_config() {
    let (d, s) = swarm(&[("--instances", "4")]);
    assert_eq!(s.len(), d.services.len());
    assert_eq!(by_name(&s, "app-1").node, "n2");
    assert_eq!(by_name(&s, "app-2").node, "n3");
    assert_eq!(by_name(&s, "nginx").node, "n1");
    assert_eq!(by_name(&s, "app-1").labels[LABEL_NODE], "n2");
    let nginx = by_name(&s, "nginx");
    assert_eq!(nginx.configs.len(), 1, "{:?}", nginx.configs);
    assert_eq!(nginx.configs[0].target, "/etc/nginx/nginx.conf");
    assert!(std::str::from_utf8(&nginx.configs[0].data)
        .unwrap()
        .contains("upstream"));
    assert!(nginx.configs[0].name.len() <= 64);
    assert!(!nginx.ports.is_empty(), "the LB publishes its port");
    let pg = by_name(&s, "postgres");
    assert!(pg.configs.is_empty() && pg.volumes.iter().any(|(v, _, _)| v.ends_with("db-data")));
}

#[test]
fn hashes_move_with_their_own_service_only() {
    let (_, four) = swarm(&[("--instances", "4")]);
    let (_, six) = swarm(&[("--instances", "6")]);
    let (_, ip) = swarm(&[("--instances", "4"), ("--nginx", "tuned-ip-hash")]);
    let hash = |s: &[SwarmService], n: &str| by_name(s, n).labels[LABEL_HASH].clone();
    for n in ["app-1", "app-2", "app-3", "app-4", "postgres", "redis"] {
        assert_eq!(hash(&four, n), hash(&six, n), "{n} with 6 instances");
        assert_eq!(hash(&four, n), hash(&ip, n), "{n} with ip_hash");
    }
    assert_ne!(hash(&four, "nginx"), hash(&ip, "nginx"));
    // nginx's upstream lists the new instances: its file, so its config and hash, change.
    assert_ne!(hash(&four, "nginx"), hash(&six, "nginx"));
    assert_ne!(
        by_name(&four, "nginx").configs[0].name,
        by_name(&ip, "nginx").configs[0].name
    );
}

#[test]
fn moving_a_service_changes_its_hash() {
    let (d, files) = rendered(&[]);
    let names: Vec<String> = d.services.iter().map(|s| s.name.clone()).collect();
    let a = place(&names, &[], &nodes(), "n1").unwrap();
    let b = place(&names, &["redis=n3".parse().unwrap()], &nodes(), "n1").unwrap();
    let sa = services(&d, &a, Path::new(BUNDLE), &files).unwrap();
    let sb = services(&d, &b, Path::new(BUNDLE), &files).unwrap();
    assert_ne!(by_name(&sa, "redis").hash, by_name(&sb, "redis").hash);
    assert_eq!(by_name(&sa, "postgres").hash, by_name(&sb, "postgres").hash);
}

#[test]
fn the_stack_file_is_dnsrr_host_ports_and_pinned() {
    let (d, s) = swarm(&[("--instances", "2")]);
    let text = stack::render(&d, &s);
    let v: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    assert_eq!(v["version"].as_str(), Some("3.8"));
    let services = v["services"].as_mapping().unwrap();
    assert_eq!(services.len(), s.len());
    for (name, svc) in services {
        let name = name.as_str().unwrap();
        assert_eq!(
            svc["deploy"]["endpoint_mode"].as_str(),
            Some("dnsrr"),
            "{name}"
        );
        let c = svc["deploy"]["placement"]["constraints"][0]
            .as_str()
            .unwrap();
        assert!(c.starts_with("node.hostname == n"), "{name}: {c}");
        assert_eq!(svc["networks"]["stack"]["aliases"][0].as_str(), Some(name));
    }
    let port = &v["services"]["nginx"]["ports"][0];
    assert_eq!(port["mode"].as_str(), Some("host"));
    assert_eq!(v["networks"]["stack"]["driver"].as_str(), Some("overlay"));
    assert_eq!(v["networks"]["stack"]["attachable"].as_bool(), Some(true));
    let config = v["configs"].as_mapping().unwrap().values().next().unwrap();
    assert_eq!(config["file"].as_str(), Some("./nginx/nginx.conf"));
    assert!(v["services"]["app-1"]["ulimits"]["nofile"]["hard"]
        .as_u64()
        .is_some());
}

#[test]
fn a_service_without_a_node_or_with_a_host_path_is_refused() {
    let (d, files) = rendered(&[]);
    let names: Vec<String> = d
        .services
        .iter()
        .filter(|s| s.name != "redis")
        .map(|s| s.name.clone())
        .collect();
    let p = place(&names, &[], &nodes(), "n1").unwrap();
    let e = services(&d, &p, Path::new(BUNDLE), &files).unwrap_err();
    assert!(e.to_string().contains("redis has no node"), "{e}");
    let all: Vec<String> = d.services.iter().map(|s| s.name.clone()).collect();
    let p = place(&all, &[], &nodes(), "n1").unwrap();
    let e = services(&d, &p, Path::new("/elsewhere"), &files).unwrap_err();
    assert!(e.to_string().contains("a path on one host"), "{e}");
}
