//! The one reader of a deployed stack's record (`core::record`): read the file from the stack's bundle
//! folder and parse it. Thin: the checks are in `core::record::parse`.

use exectl_core::error::UsageError;
use exectl_core::record::{self, StackRecord};
use exectl_core::render::RECORD;
use std::path::Path;

/// The record of `stack` in its bundle folder: None when the stack has none (never deployed here, or
/// torn down). A record that cannot be read or used is bad input naming the file (exit 2): the fix
/// is a deploy, which writes a new one.
pub fn read(bundle_dir: &Path, stack: &str) -> Result<Option<StackRecord>, UsageError> {
    let path = bundle_dir.join(RECORD);
    let bad = |problem: String| {
        UsageError::new(
            "--stack",
            stack,
            problem,
            format!(
                "deploy it again with this exectl (deploy writes a new record), or remove it with \
                 `exectl teardown --stack {stack}`"
            ),
        )
    };
    let text = match crate::shell::user_file::read_text(&path, crate::shell::user_file::RECORD) {
        Ok(t) => t,
        Err(u) if u.missing => return Ok(None),
        Err(u) => return Err(bad(u.problem)),
    };
    record::parse(&path.display().to_string(), stack, &text)
        .map(Some)
        .map_err(|e| bad(format!("its record {e}")))
}

/// The record of a stack the command needs deployed: none is bad input, with `fix` (the caller's,
/// as each command has its own way out).
pub fn require(bundle_dir: &Path, stack: &str, fix: &str) -> Result<StackRecord, UsageError> {
    read(bundle_dir, stack)?.ok_or_else(|| {
        UsageError::new(
            "--stack",
            stack,
            format!(
                "not deployed: no deployment of it is recorded on this target ({} is missing)",
                bundle_dir.join(RECORD).display()
            ),
            fix,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::secrets::Secrets;
    use exectl_core::render::{self, Templates};
    use exectl_core::spec::{self, Raw, SpecInput, Topology};

    #[test]
    fn what_render_writes_reads_back() {
        for (topology, db) in [("single", "sqlite"), ("ha", "postgres"), ("ha", "mariadb")] {
            let spec = spec::resolve(SpecInput {
                topology: Some(Raw::flag("topology", topology)),
                stack: Some(Raw::flag("--stack", "rec")),
                db: Some(Raw::flag("--db", db)),
                ..Default::default()
            })
            .unwrap();
            let secrets = Secrets::parse(
                "APP_SECRET=a\nAPI_JWT_SECRET=b\nDB_PASSWORD=c\nDB_ROOT_PASSWORD=d\nADMIN_PASSWORD=e\n",
            );
            let bundle = render::render(&spec, &secrets, &Templates::embedded()).unwrap();
            let d = tempfile::tempdir().unwrap();
            crate::state::bundle::write(&bundle, d.path()).unwrap();
            let r = read(d.path(), "rec").unwrap().unwrap();
            assert_eq!(r.topology, spec.topology);
            assert_eq!(r.spec.topology, spec.topology);
            assert_eq!(r.spec.db, spec.db);
            assert_eq!(r.spec.instances, spec.instances);
            assert_eq!(r.spec.cpus, spec.cpus);
            assert_eq!(r.spec.memory_bytes, spec.memory_bytes);
            assert_eq!(r.spec.host, spec.host);
            assert_eq!(
                (r.spec.http_port, r.spec.lb_port),
                (spec.http_port, spec.lb_port)
            );
            assert_eq!(r.spec.images, spec.images);
            assert_eq!(
                r.spec.nginx.as_ref().map(|n| n.lb_algorithm),
                spec.nginx.as_ref().map(|n| n.lb_algorithm)
            );
            assert_eq!(r.exectl_version, env!("CARGO_PKG_VERSION"));
            // A hash of every other rendered file, and no secret.
            let others: Vec<&str> = bundle
                .files
                .iter()
                .map(|f| f.path)
                .filter(|p| *p != RECORD)
                .collect();
            assert_eq!(r.files.len(), others.len());
            assert!(others.iter().all(|p| r.files.contains_key(*p)));
            let text = bundle.get(RECORD).unwrap().text();
            assert!(!text.contains("ADMIN_PASSWORD"), "{text}");
        }
    }

    #[test]
    fn missing_is_none_broken_names_the_file() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(read(d.path(), "exe"), Ok(None));
        let e = require(d.path(), "exe", "deploy it").unwrap_err();
        assert!(
            e.problem.starts_with("not deployed") && e.fix == "deploy it",
            "{e}"
        );
        let r = record::example("exe", Topology::Ha);
        std::fs::write(d.path().join(RECORD), serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(read(d.path(), "exe"), Ok(Some(r)));
        std::fs::write(d.path().join(RECORD), r#"{"stack":"exe"}"#).unwrap();
        let e = read(d.path(), "exe").unwrap_err();
        assert_eq!((e.field.as_str(), e.value.as_str()), ("--stack", "exe"));
        let file = d.path().join("exectl.lock.json").display().to_string();
        assert!(e.problem.contains(&file), "{e}");
        assert!(e.fix.contains("deploy it again"), "{e}");
    }
}
