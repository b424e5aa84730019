use super::placement::*;
use std::collections::BTreeMap;

fn node(host: &str, manager: bool, app: bool) -> Node {
    let mut labels = BTreeMap::new();
    if app {
        labels.insert(ROLE_LABEL.to_string(), ROLE_APP.to_string());
    }
    Node {
        id: format!("id-{host}"),
        hostname: host.to_string(),
        addr: format!("10.0.0.{}", host.len()),
        manager,
        leader: manager,
        ready: true,
        labels,
    }
}

fn rig() -> Vec<Node> {
    vec![
        node("n1", true, false),
        node("n3", false, true),
        node("n2", false, true),
    ]
}

fn ha(n: u32) -> Vec<String> {
    let mut s: Vec<String> = (1..=n).map(|i| format!("app-{i}")).collect();
    s.extend(["postgres", "redis", "nginx"].map(String::from));
    s
}

fn rules(texts: &[&str]) -> Vec<PlaceRule> {
    texts.iter().map(|t| t.parse().unwrap()).collect()
}

#[test]
fn by_default_instances_go_round_robin_over_the_app_nodes_and_the_rest_to_the_leader() {
    let p = place(&ha(4), &[], &rig(), "n1").unwrap();
    assert_eq!(p.node_of("app-1"), Some("n2"));
    assert_eq!(p.node_of("app-2"), Some("n3"));
    assert_eq!(p.node_of("app-3"), Some("n2"));
    assert_eq!(p.node_of("app-4"), Some("n3"));
    for s in ["postgres", "redis", "nginx"] {
        assert_eq!(p.node_of(s), Some("n1"), "{s}");
    }
    assert_eq!(p.on("n2"), vec!["app-1", "app-3"]);
}

#[test]
fn adding_instances_keeps_the_first_ones_where_they_were() {
    let four = place(&ha(4), &[], &rig(), "n1").unwrap();
    let six = place(&ha(6), &[], &rig(), "n1").unwrap();
    for i in 1..=4 {
        let s = format!("app-{i}");
        assert_eq!(four.node_of(&s), six.node_of(&s), "{s}");
    }
}

#[test]
fn rules_place_by_hostname_or_id_and_one_instance_beats_the_group() {
    let p = place(
        &ha(3),
        &rules(&["app=n3", "app-2=id-n1", "postgres=n2"]),
        &rig(),
        "n1",
    )
    .unwrap();
    assert_eq!(p.node_of("app-1"), Some("n3"));
    assert_eq!(p.node_of("app-2"), Some("n1"));
    assert_eq!(p.node_of("app-3"), Some("n3"));
    assert_eq!(p.node_of("postgres"), Some("n2"));
    assert_eq!(p.node_of("nginx"), Some("n1"));
}

#[test]
fn bad_rules_name_the_value_and_the_fix() {
    for (text, problem) in [
        ("app", "no '='"),
        ("=n1", "no service"),
        ("app=n1,,n2", "empty node"),
        ("nginx=n1,n2", "one node"),
    ] {
        let e = text.parse::<PlaceRule>().unwrap_err();
        assert_eq!(e.field, "--place");
        assert!(e.problem.contains(problem), "{text}: {e}");
    }
    let e = place(&ha(2), &rules(&["app=n9"]), &rig(), "n1").unwrap_err();
    assert!(
        e.problem.contains("no node n9") && e.fix.contains("n1, n3, n2"),
        "{e}"
    );
    let e = place(&ha(2), &rules(&["mariadb=n1"]), &rig(), "n1").unwrap_err();
    assert!(
        e.problem.contains("no service mariadb") && e.fix.contains("postgres"),
        "{e}"
    );
    let e = place(&ha(2), &rules(&["redis=n1", "redis=n2"]), &rig(), "n1").unwrap_err();
    assert!(e.problem.contains("twice"), "{e}");
}

#[test]
fn a_node_that_is_down_takes_nothing() {
    let mut nodes = rig();
    nodes[2].ready = false; // n2
                            // By default its share goes to the other app node…
    let p = place(&ha(2), &[], &nodes, "n1").unwrap();
    assert_eq!(p.on("n3"), vec!["app-1", "app-2"]);
    // …and a rule naming it is refused.
    let e = place(&ha(2), &rules(&["app=n2,n3"]), &nodes, "n1").unwrap_err();
    assert!(e.problem.contains("n2 is not ready"), "{e}");
}

#[test]
fn without_app_nodes_or_a_ready_home_the_error_says_what_to_do() {
    let nodes = vec![node("n1", true, false)];
    let e = place(&ha(1), &[], &nodes, "n1").unwrap_err();
    assert!(e.fix.contains("--label-add exectl.role=app"), "{e}");
    let mut nodes = rig();
    nodes[0].ready = false;
    let e = place(&ha(1), &[], &nodes, "n1").unwrap_err();
    assert!(
        e.problem.contains("n1) by default, and it is not ready"),
        "{e}"
    );
}

#[test]
fn the_front_door_stays_on_the_targets_node() {
    let e = place(&ha(1), &rules(&["nginx=n2"]), &rig(), "n1").unwrap_err();
    assert!(
        e.problem.contains("front door (nginx)") && e.fix.contains("ADDRESS-OF-n2"),
        "{e}"
    );
    // Named from a worker's address, the rest goes there.
    let p = place(&ha(1), &[], &rig(), "n3").unwrap();
    assert_eq!(p.node_of("nginx"), Some("n3"));
}
