//! Plan as data: a rendered spec and an observed engine state in, actions out. No daemon.

use exectl::engine::desired::Desired;
use exectl::state::secrets::Secrets;
use exectl_core::plan::{plan, Action, Observed, ObservedContainer};
use exectl_core::render::Templates;
use exectl_core::spec;
use std::path::Path;

fn desired_for(flags: &[(&'static str, &str)]) -> Desired {
    let spec = spec::resolve(spec::ha_input(flags)).unwrap();
    let secrets = Secrets::parse(
        "APP_SECRET=a\nAPI_JWT_SECRET=b\nDB_PASSWORD=c\nDB_ROOT_PASSWORD=d\nADMIN_PASSWORD=e\n",
    );
    exectl_core::pipeline::desired_state(
        &spec,
        &secrets,
        &Templates::embedded(),
        Path::new("/srv/exe"),
    )
    .unwrap()
    .desired
}

/// The engine after a successful deploy of `d`.
fn deployed(d: &Desired) -> Observed {
    Observed {
        containers: d
            .services
            .iter()
            .map(|s| ObservedContainer {
                name: s.container_name.clone(),
                service: s.name.clone(),
                hash: s.hash.clone(),
                parts: s.parts.clone(),
                state: "running".into(),
            })
            .collect(),
        networks: vec![d.network.clone()],
        volumes: d.volumes.clone(),
    }
}

fn changed(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter(|a| a.changes())
        .map(|a| a.describe())
        .collect()
}

#[test]
fn fresh_engine_creates_everything_in_dependency_order() {
    let d = desired_for(&[]);
    let p = plan(&d, &Observed::default()).unwrap();
    assert_eq!(p.create_network.as_deref(), Some("exectl-exe"));
    assert_eq!(p.create_volumes.len(), 3);
    let order: Vec<&str> = p.actions.iter().map(|a| a.service()).collect();
    let pos = |s: &str| order.iter().position(|o| *o == s).unwrap();
    assert!(pos("postgres") < pos("app-1") && pos("redis") < pos("app-1"));
    assert!(pos("app-2") < pos("nginx"));
    assert!(p.actions.iter().all(|a| matches!(a, Action::Create { .. })));
}

#[test]
fn same_spec_is_a_noop() {
    let d = desired_for(&[]);
    let p = plan(&d, &deployed(&d)).unwrap();
    assert!(p.is_noop(), "{:?}", changed(&p.actions));
}

#[test]
fn changing_the_nginx_variant_recreates_nginx_alone() {
    let before = desired_for(&[("--nginx", "tuned-least-conn")]);
    let after = desired_for(&[("--nginx", "tuned-ip-hash")]);
    let p = plan(&after, &deployed(&before)).unwrap();
    assert_eq!(changed(&p.actions), ["recreate nginx (files changed)"]);
}

#[test]
fn scaling_two_to_four_adds_two_apps_and_rewrites_the_lb() {
    let before = desired_for(&[("--instances", "2")]);
    let after = desired_for(&[("--instances", "4")]);
    let p = plan(&after, &deployed(&before)).unwrap();
    let mut c = changed(&p.actions);
    c.sort();
    assert_eq!(
        c,
        [
            "create   app-3",
            "create   app-4",
            "recreate nginx (files changed)"
        ]
    );
}

#[test]
fn scaling_down_removes_the_extra_apps() {
    let before = desired_for(&[("--instances", "4")]);
    let after = desired_for(&[("--instances", "2")]);
    let mut c = changed(&plan(&after, &deployed(&before)).unwrap().actions);
    c.sort();
    assert_eq!(c.len(), 3, "{c:?}");
    assert!(c[0].starts_with("recreate nginx"));
    assert!(c[1].starts_with("remove   app-3") && c[2].starts_with("remove   app-4"));
}

#[test]
fn an_app_setting_recreates_every_app_and_the_lb_that_read_their_addresses() {
    let before = desired_for(&[]);
    let after = desired_for(&[("--set", "DB_POOL_MAX=50")]);
    let p = plan(&after, &deployed(&before)).unwrap();
    assert_eq!(
        changed(&p.actions),
        [
            "recreate app-1 (environment changed)",
            "recreate app-2 (environment changed)",
            "recreate nginx (app-1, app-2 recreated: nginx reads their addresses only when it starts)"
        ]
    );
    // After them: nginx's wave waits for the new instances.
    let wave = |s: &str| {
        p.waves
            .iter()
            .position(|w| w.services.iter().any(|n| n == s))
    };
    assert!(wave("app-2") < wave("nginx"));
}

#[test]
fn a_database_recreated_leaves_the_apps_which_connect_by_name_each_time() {
    let before = desired_for(&[]);
    let mut o = deployed(&before);
    let pg = o
        .containers
        .iter_mut()
        .find(|c| c.service == "postgres")
        .unwrap();
    pg.hash = "older".into();
    assert_eq!(
        changed(&plan(&before, &o).unwrap().actions),
        ["recreate postgres (config changed)"]
    );
}

#[test]
fn stopped_container_with_same_config_is_started_not_recreated() {
    let d = desired_for(&[]);
    let mut o = deployed(&d);
    o.containers[0].state = "created".into();
    let service = o.containers[0].service.clone();
    let p = plan(&d, &o).unwrap();
    assert_eq!(
        changed(&p.actions),
        [format!(
            "start    {service} (config unchanged, not running)"
        )]
    );
}

/// Preflight's conflicts, as data: names and ports held by something that is not this stack.
mod conflicts {
    use super::desired_for;
    use exectl::engine::preflight::{check_conflicts, parse_listening, Existing};

    fn container(name: &str, stack: Option<&str>, published: &[u16]) -> Existing {
        Existing {
            name: name.into(),
            stack: stack.map(String::from),
            published: published.to_vec(),
        }
    }

    /// The one conflict found.
    fn one(mut v: Vec<exectl_core::error::UsageError>) -> exectl_core::error::UsageError {
        assert_eq!(v.len(), 1, "{v:?}");
        v.remove(0)
    }

    #[test]
    fn a_foreign_container_under_one_of_the_stacks_names_is_refused() {
        let d = desired_for(&[]);
        let e = one(check_conflicts(
            &d,
            &[container("exectl-exe-app-1", None, &[])],
            &[],
        ));
        assert_eq!(e.field, "--stack");
        assert!(
            e.problem.contains("exectl-exe-app-1") && e.problem.contains("did not create"),
            "{e}"
        );
        let e = one(check_conflicts(
            &d,
            &[container("exectl-exe-nginx", Some("other"), &[])],
            &[],
        ));
        assert!(e.problem.contains("belongs to stack other"), "{e}");
        // The stack's own containers are no conflict (a re-deploy).
        assert!(
            check_conflicts(&d, &[container("exectl-exe-app-1", Some("exe"), &[])], &[]).is_empty()
        );
    }

    #[test]
    fn a_port_held_elsewhere_is_refused_with_its_flag() {
        let d = desired_for(&[]);
        let e = one(check_conflicts(
            &d,
            &[container("web", None, &[8090])],
            &[8090],
        ));
        assert_eq!((e.field.as_str(), e.value.as_str()), ("--lb-port", "8090"));
        assert!(e.problem.contains("container web"), "{e}");
        let e = one(check_conflicts(&d, &[], &[22, 8090]));
        assert!(e.problem.contains("already in use"), "{e}");
        // Our own nginx publishing it (its proxy listens) is the re-deploy case.
        assert!(check_conflicts(
            &d,
            &[container("exectl-exe-nginx", Some("exe"), &[8090])],
            &[8090],
        )
        .is_empty());
        assert!(check_conflicts(&d, &[], &[22, 8080]).is_empty());
    }

    #[test]
    fn every_conflict_is_named() {
        let d = desired_for(&[]);
        let found = check_conflicts(
            &d,
            &[
                container("exectl-exe-app-1", None, &[]),
                container("exectl-exe-app-2", Some("other"), &[]),
            ],
            &[8090],
        );
        let named: Vec<(&str, &str)> = found
            .iter()
            .map(|e| (e.field.as_str(), e.value.as_str()))
            .collect();
        assert_eq!(
            named,
            [
                ("--stack", "exe"),
                ("--stack", "exe"),
                ("--lb-port", "8090")
            ],
            "{found:?}"
        );
    }

    #[test]
    fn listening_ports_from_proc_net_tcp() {
        let text = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F9A 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 0100007F:0CEA 0100007F:1F9A 01 00000000:00000000 00:00000000 00000000     0        0 2 1
   0: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1
";
        assert_eq!(parse_listening(text), [22, 8090]);
    }
}

/// The start order is the plan's, as data: apply only walks it.
#[test]
fn waves_start_each_service_after_what_it_depends_on() {
    let d = desired_for(&[]);
    let p = plan(&d, &Observed::default()).unwrap();
    let waves: Vec<(Vec<String>, Vec<String>)> = p
        .waves
        .iter()
        .map(|w| {
            (
                w.wait_for
                    .iter()
                    .map(|(s, h)| format!("{s}{}", if *h { "+healthy" } else { "" }))
                    .collect(),
                w.services.clone(),
            )
        })
        .collect();
    eprintln!("{waves:?} then {:?}", p.wait_at_end);
    // Every service in exactly one wave, and after everything it waits for.
    let mut seen: Vec<String> = Vec::new();
    for w in &p.waves {
        for (dep, _) in &w.wait_for {
            assert!(
                seen.contains(dep),
                "{dep} waited for before it was started: {waves:?}"
            );
        }
        seen.extend(w.services.iter().cloned());
    }
    seen.sort();
    let mut all: Vec<String> = d.services.iter().map(|s| s.name.clone()).collect();
    all.sort();
    assert_eq!(seen, all);
    assert_eq!(p.waves[0].services, ["postgres", "redis"], "{waves:?}");
    assert!(p.waves[0].wait_for.is_empty());
    assert_eq!(p.waves[1].services, ["app-1", "app-2"], "{waves:?}");
    assert!(
        p.waves[1].wait_for.iter().all(|(_, healthy)| *healthy),
        "{waves:?}"
    );
    assert_eq!(p.waves.last().unwrap().services, ["nginx"]);
    assert_eq!(
        p.wait_at_end,
        ["nginx"],
        "nothing waits for the front door but the end"
    );
}

/// The compose template names volumes and the network by naming's one rule.
#[test]
fn the_template_names_objects_by_the_same_rule() {
    use exectl_core::naming;
    let d = desired_for(&[]);
    for v in ["app-data", "db-data", "redis-data"] {
        assert!(
            d.volumes.contains(&naming::volume("exe", v)),
            "{:?}",
            d.volumes
        );
    }
    assert!(naming::is_db_volume("exe", "exectl-exe-db-data"));
    assert!(!naming::is_db_volume("exe", "exectl-exe2-db-data"));
    assert_eq!(d.network, naming::prefix("exe"));
    for s in &d.services {
        assert_eq!(s.container_name, naming::container("exe", &s.name));
    }
}

/// The limits read back say what an absent limit means, never Rust's `None`.
#[test]
fn limits_mismatches_read_as_words() {
    let d = desired_for(&[("--cpus", "1")]);
    let app = d.services.iter().find(|s| s.name == "app-1").unwrap();
    let e = exectl::engine::limits::compare(exectl::engine::limits::parse("app-1", ""), app);
    let all = e.mismatches.join("; ");
    assert!(all.contains("cpus is unlimited, asked 1"), "{all}");
    assert!(all.contains("memory is unlimited"), "{all}");
    assert!(all.contains("nofile is unknown/unknown"), "{all}");
    assert!(!all.contains("None") && !all.contains("Some("), "{all}");
}

/// The app signs tokens with API_JWT_SECRET || JWT_SECRET and verifies its sharing, admin and pages routes
/// with JWT_SECRET || APP_SECRET: every instance gets one value under both names (contract §8).
#[test]
fn every_instance_has_jwt_secret_equal_to_api_jwt_secret() {
    let d = desired_for(&[("--instances", "3")]);
    let apps: Vec<_> = d
        .services
        .iter()
        .filter(|s| s.name.starts_with("app-"))
        .collect();
    assert_eq!(apps.len(), 3);
    for s in apps {
        let env = &s.service.environment;
        assert_eq!(
            env.get("API_JWT_SECRET").map(String::as_str),
            Some("b"),
            "{}",
            s.name
        );
        assert_eq!(
            env.get("JWT_SECRET"),
            env.get("API_JWT_SECRET"),
            "{}",
            s.name
        );
        assert_ne!(env.get("JWT_SECRET"), env.get("APP_SECRET"), "{}", s.name);
    }
}
