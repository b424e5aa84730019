//! Golden files: every variant renders exactly the reviewed bytes in tests/golden/<variant>/.
//! After an intended template change: `UPDATE_GOLDEN=1 cargo test --test suite golden::`, then review the diff.

use exectl::state::secrets::Secrets;
use exectl_core::render::{self, Templates};
use exectl_core::spec::{self, Raw, SpecInput};
use exectl_core::spec_settings::SETTINGS;
use std::path::Path;

/// Fixed secrets, so the golden .env and lock hashes are stable.
fn secrets() -> Secrets {
    Secrets::parse(
        "APP_SECRET=golden-app-secret\nAPI_JWT_SECRET=golden-jwt-secret\nDB_PASSWORD=golden-db\n\
         DB_ROOT_PASSWORD=golden-root\nADMIN_PASSWORD=golden-admin\n",
    )
}

fn variants() -> Vec<(String, Vec<(&'static str, &'static str)>)> {
    let mut v = Vec::new();
    for db in ["mariadb", "postgres", "sqlite"] {
        v.push((
            format!("single-{db}"),
            vec![("topology", "single"), ("--db", db)],
        ));
    }
    for nginx in ["baseline-default", "tuned-ip-hash", "tuned-least-conn"] {
        for n in ["2", "4"] {
            v.push((
                format!("ha-{nginx}-{n}"),
                vec![("topology", "ha"), ("--nginx", nginx), ("--instances", n)],
            ));
        }
    }
    v.push((
        "ha-traefik-mariadb".into(),
        vec![
            ("topology", "ha"),
            ("--traefik", "true"),
            ("--db", "mariadb"),
        ],
    ));
    v
}

fn input(flags: &[(&'static str, &'static str)]) -> SpecInput {
    let mut i = SpecInput::default();
    for (flag, value) in flags {
        let s = SETTINGS
            .iter()
            .find(|s| s.flag == *flag)
            .unwrap_or_else(|| panic!("no setting has the flag {flag}"));
        *(s.slot)(&mut i) = Some(Raw::flag(s.flag, *value));
    }
    i
}

#[test]
fn every_variant_matches_its_golden_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut mismatches = Vec::new();
    for (name, flags) in variants() {
        let spec = spec::resolve(input(&flags)).unwrap();
        let bundle = render::render(&spec, &secrets(), &Templates::embedded()).unwrap();
        let dir = root.join(&name);
        if update {
            let _ = std::fs::remove_dir_all(&dir);
            exectl::state::bundle::write(&bundle, &dir).unwrap();
            continue;
        }
        for f in &bundle.files {
            let want = std::fs::read(dir.join(f.path))
                .unwrap_or_else(|e| panic!("{name}/{}: {e} (UPDATE_GOLDEN=1 to create)", f.path));
            if want != f.bytes {
                mismatches.push(format!("{name}/{}", f.path));
            }
        }
        // No stale golden file for a file the variant no longer renders.
        for p in [
            "nginx/nginx.conf",
            "traefik/traefik.yaml",
            "traefik/dynamic.yaml",
        ] {
            if bundle.get(p).is_none() && dir.join(p).exists() {
                mismatches.push(format!("{name}/{p} (stale)"));
            }
        }
    }
    assert!(mismatches.is_empty(), "differ from golden: {mismatches:?}");
}

/// The app bootstraps its admin at every boot by find-then-create with no conflict handling: only the first
/// instance gets ADMIN_EMAIL/ADMIN_PASSWORD, so HA instances booting together cannot race on it.
#[test]
fn only_the_first_instance_bootstraps_the_admin() {
    for (flags, first) in [
        (vec![("topology", "ha"), ("--instances", "4")], "app-1"),
        (vec![("topology", "single")], "app"),
    ] {
        let spec = spec::resolve(input(&flags)).unwrap();
        let bundle = render::render(&spec, &secrets(), &Templates::embedded()).unwrap();
        let compose =
            exectl_core::compose::parse(bundle.get(render::COMPOSE).unwrap().text()).unwrap();
        for app in spec.app_services() {
            let env = &compose.services[&app].environment;
            let has = (
                env.contains_key("ADMIN_EMAIL"),
                env.contains_key("ADMIN_PASSWORD"),
            );
            assert_eq!(has, (app == first, app == first), "{app}");
        }
    }
}

/// `worker_processes` is `auto` unless given; a count is rendered as given and recorded as a knob.
#[test]
fn worker_processes_default_to_auto_and_render_as_given() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let golden =
        std::fs::read_to_string(root.join("ha-tuned-least-conn-2/nginx/nginx.conf")).unwrap();
    assert!(golden.contains("\nworker_processes auto;\n"), "{golden}");
    let spec = spec::resolve(input(&[("topology", "ha"), ("--worker-processes", "3")])).unwrap();
    let bundle = render::render(&spec, &secrets(), &Templates::embedded()).unwrap();
    let conf = bundle.get(render::NGINX).unwrap().text();
    assert!(conf.contains("\nworker_processes 3;\n"), "{conf}");
    let record: serde_json::Value =
        serde_json::from_str(bundle.get(render::RECORD).unwrap().text()).unwrap();
    assert_eq!(record["spec"]["nginx"]["worker_processes"], 3);
}
